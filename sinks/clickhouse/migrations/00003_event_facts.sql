-- The facts derived from each event once at ingest (model.EventFacts, model.DeriveFacts), one
-- column each, so that crash, ANR, journey and launch analytics aggregate over columns instead of
-- parsing payloads: the group id of an exception or anr (GroupOf), whether it is a crash, its own
-- foreground flag, the screen an event shows, and a launch's kind and duration.
--
-- No DEFAULT clauses: each column's implicit default is its type's zero ('' and 0), so rows
-- written before this migration read as events with zero facts, exactly what model.Event holds
-- for them. (An explicit DEFAULT would also defeat migrationConn's same-type check.)
--
-- Same SQL rules as 00001 and 00002 (18.16 and current releases, one ADD COLUMN per statement in
-- the form migrationConn recognises, so applying it twice or from two nodes at once is safe).

-- +goose Up
ALTER TABLE events ADD COLUMN group_id String AFTER payload;
ALTER TABLE events ADD COLUMN fatal UInt8 AFTER group_id;
ALTER TABLE events ADD COLUMN foreground UInt8 AFTER fatal;
ALTER TABLE events ADD COLUMN screen String AFTER foreground;
ALTER TABLE events ADD COLUMN launch_kind String AFTER screen;
ALTER TABLE events ADD COLUMN launch_ms Float64 AFTER launch_kind;

-- +goose Down
ALTER TABLE events DROP COLUMN launch_ms;
ALTER TABLE events DROP COLUMN launch_kind;
ALTER TABLE events DROP COLUMN screen;
ALTER TABLE events DROP COLUMN foreground;
ALTER TABLE events DROP COLUMN fatal;
ALTER TABLE events DROP COLUMN group_id;
