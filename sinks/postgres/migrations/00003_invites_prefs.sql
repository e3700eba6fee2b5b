-- Team invites, apps' threshold preferences and short filters, teams' chat integrations.

-- +goose Up
CREATE TABLE invites (
    id         uuid        PRIMARY KEY,
    team_id    uuid        NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    email      text        NOT NULL CHECK (email <> ''),
    role       text        NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    invited_by uuid        NOT NULL REFERENCES users (id),
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
-- Invites lists a team's invites, oldest first.
CREATE INDEX invites_team_idx ON invites (team_id, created_at, id);
-- AcceptInvites finds an email's invites. lower() under "C" lowers A-Z only, whatever the
-- database's locale, as the Badger backend does; queries must use the same expression.
CREATE INDEX invites_email_lower_idx ON invites (lower(email COLLATE "C"));
CREATE INDEX invites_invited_by_idx ON invites (invited_by);

CREATE TABLE threshold_prefs (
    app_id                          uuid             PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
    error_good_threshold            double precision NOT NULL CHECK (error_good_threshold BETWEEN 0 AND 100),
    error_caution_threshold         double precision NOT NULL CHECK (error_caution_threshold BETWEEN 0 AND 100),
    error_spike_min_count_threshold bigint           NOT NULL CHECK (error_spike_min_count_threshold >= 0),
    error_spike_min_rate_threshold  double precision NOT NULL CHECK (error_spike_min_rate_threshold BETWEEN 0 AND 100),
    updated_at                      timestamptz      NOT NULL,
    CHECK (error_caution_threshold <= error_good_threshold)
);

CREATE TABLE short_filters (
    app_id     uuid        NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    -- Hex MD5 of the app id and the filters.
    code       text        NOT NULL CHECK (code ~ '^[0-9a-f]{32}$'),
    -- json, not jsonb: the filters come back byte for byte as written (jsonb would reorder
    -- keys and respace them), so the code stays the MD5 of what is read.
    filters    json        NOT NULL CHECK (json_typeof(filters) = 'object'),
    created_at timestamptz NOT NULL,
    PRIMARY KEY (app_id, code)
);

CREATE TABLE chat_apps (
    team_id     uuid        PRIMARY KEY REFERENCES teams (id) ON DELETE CASCADE,
    webhook_url text        NOT NULL CHECK (webhook_url ~* '^https?://[^/?#]'),
    enabled     boolean     NOT NULL,
    updated_at  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE chat_apps;
DROP TABLE short_filters;
DROP TABLE threshold_prefs;
DROP TABLE invites;
