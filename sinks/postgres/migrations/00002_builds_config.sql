-- Builds, mapping file records and SDK configurations of apps.
-- Versions and names compare as bytes (COLLATE "C" in the queries), as in the Badger backend.

-- +goose Up
CREATE TABLE builds (
    app_id       uuid        NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    version_name text        NOT NULL,
    version_code text        NOT NULL,
    build_type   text        NOT NULL CHECK (build_type IN ('aab', 'apk', 'ipa')),
    size         bigint      NOT NULL CHECK (size >= 0),
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (app_id, version_name, version_code, build_type)
);

CREATE TABLE mappings (
    id           uuid        PRIMARY KEY,
    app_id       uuid        NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    version_name text        NOT NULL,
    version_code text        NOT NULL,
    build_type   text        NOT NULL CHECK (build_type IN ('aab', 'apk', 'ipa')),
    -- model.MappingTypes.
    type         text        NOT NULL CHECK (type IN ('dsym', 'proguard', 'elf_debug', 'jsbundle')),
    filename     text        NOT NULL,
    blob_key     text        NOT NULL,
    created_at   timestamptz NOT NULL
);
-- Mappings lists one version of an app, oldest first.
CREATE INDEX mappings_version_idx ON mappings (app_id, version_name, version_code, created_at, id);

CREATE TABLE sdk_configs (
    app_id     uuid        PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
    -- model.SDKConfig as JSON, every field present.
    config     jsonb       NOT NULL,
    updated_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE sdk_configs;
DROP TABLE mappings;
DROP TABLE builds;
