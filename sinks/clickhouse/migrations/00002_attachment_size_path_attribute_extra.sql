-- What real SDKs send beyond 00001's columns, so that nothing they sent is lost: an attachment's
-- size and device path (parallel to the other attachment arrays) and the attribute members
-- model.Attributes has no field for (Attributes.Extra, compact JSON), on events and spans.
--
-- Rows written before this migration read as "absent": their attachment_sizes is [] and every
-- size reads as model.SizeUnknown (-1), their paths as "", and attribute_extra '' as nil (a real
-- Extra is never empty: it is a JSON object).
--
-- Same SQL rules as 00001 (18.16 and current releases). 18.16 has no ADD COLUMN IF NOT EXISTS:
-- Migrate treats an ADD COLUMN of a column that is already there with the same type as done
-- (migrationConn), so this stays safe to apply twice and from two nodes at once. One column per
-- statement, in the form `ALTER TABLE t ADD COLUMN c Type [AFTER c2]` that it recognises.

-- +goose Up
ALTER TABLE events ADD COLUMN attribute_extra String AFTER session_start_time;
ALTER TABLE events ADD COLUMN attachment_sizes Array(Int64) AFTER attachment_blob_keys;
ALTER TABLE events ADD COLUMN attachment_paths Array(String) AFTER attachment_sizes;
ALTER TABLE spans ADD COLUMN attribute_extra String AFTER session_start_time;

-- +goose Down
ALTER TABLE spans DROP COLUMN attribute_extra;
ALTER TABLE events DROP COLUMN attachment_paths;
ALTER TABLE events DROP COLUMN attachment_sizes;
ALTER TABLE events DROP COLUMN attribute_extra;
