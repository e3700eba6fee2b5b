-- Mapping files' sizes (sinks.BuildFiles): unknown (NULL) when recorded, since the build tool
-- uploads the file to the blob store afterwards; set once the dashboard has measured it.

-- +goose Up
ALTER TABLE mappings ADD COLUMN size bigint CHECK (size >= 0);
-- The builds page reads an app's mappings in a window of their upload times.
CREATE INDEX mappings_app_created_idx ON mappings (app_id, created_at);

-- +goose Down
DROP INDEX mappings_app_created_idx;
ALTER TABLE mappings DROP COLUMN size;
