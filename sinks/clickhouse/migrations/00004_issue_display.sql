-- The display of each issue event (model.IssueDisplay: GroupOf's type, message, method, file,
-- line and severity), derived once at ingest, so that group lists take the latest event's
-- display with argMax over small columns instead of reading payloads.
--
-- Same rules as 00003: no DEFAULT clauses (old rows read as zero facts), one ADD COLUMN per
-- statement in the form migrationConn recognises.

-- +goose Up
ALTER TABLE events ADD COLUMN issue_type String AFTER launch_ms;
ALTER TABLE events ADD COLUMN issue_message String AFTER issue_type;
ALTER TABLE events ADD COLUMN issue_method String AFTER issue_message;
ALTER TABLE events ADD COLUMN issue_file String AFTER issue_method;
ALTER TABLE events ADD COLUMN issue_line Int32 AFTER issue_file;
ALTER TABLE events ADD COLUMN severity String AFTER issue_line;

-- +goose Down
ALTER TABLE events DROP COLUMN severity;
ALTER TABLE events DROP COLUMN issue_line;
ALTER TABLE events DROP COLUMN issue_file;
ALTER TABLE events DROP COLUMN issue_method;
ALTER TABLE events DROP COLUMN issue_message;
ALTER TABLE events DROP COLUMN issue_type;
