-- Session starts (sinks/clickhouse/starts.go): per app and session, a time at or before the
-- session's earliest event, so that a journey walk, which needs each session of its window
-- from its first event, reads the events from the earliest start among those sessions rather
-- than every event of the app before the window's end.
--
-- A row is written before the events of a batch, with the earliest time among the batch's
-- events of that session; a session has one row or a few (one per node or restart that wrote
-- it first), and a reader takes the least. A session of the window with no row (written
-- before this migration, or its rows deleted by retention) makes the walk read every event
-- before the window's end, as before this migration; a session under way when the table was
-- made is walked from a day before that. Retention deletes a session's rows only all together,
-- so a session never keeps a later row without its earlier ones.
--
-- Same SQL rules as 00001 (18.16 and current releases; IF NOT EXISTS). Times are Int64 Unix
-- nanoseconds.

-- +goose Up
CREATE TABLE IF NOT EXISTS session_starts (
    app_id UUID,
    session_id UUID,
    first Int64
) ENGINE = MergeTree()
ORDER BY (app_id, session_id);

-- +goose Down
DROP TABLE IF EXISTS session_starts;
