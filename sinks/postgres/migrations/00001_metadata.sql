-- Metadata: users, teams, memberships, apps, API keys and dashboard sessions.
-- Times are timestamptz (microseconds); a NULL time is a zero time.Time in Go.

-- +goose Up
CREATE TABLE teams (
    id         uuid        PRIMARY KEY,
    name       text        NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

CREATE TABLE users (
    id              uuid        PRIMARY KEY,
    name            text        NOT NULL,
    email           text        NOT NULL,
    -- The team created with the user (OwnTeam).
    own_team_id     uuid        NOT NULL UNIQUE REFERENCES teams (id),
    confirmed_at    timestamptz,
    last_sign_in_at timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
-- Emails are unique whatever their case.
CREATE UNIQUE INDEX users_email_lower_key ON users (lower(email));

CREATE TABLE team_members (
    team_id    uuid        NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    user_id    uuid        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text        NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (team_id, user_id)
);
CREATE INDEX team_members_user_idx ON team_members (user_id);

CREATE TABLE apps (
    id             uuid        PRIMARY KEY,
    team_id        uuid        NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name           text        NOT NULL,
    unique_id      text        NOT NULL DEFAULT '',
    platform       text        NOT NULL DEFAULT '',
    retention_days integer     NOT NULL DEFAULT 30 CHECK (retention_days BETWEEN 30 AND 365),
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);
CREATE INDEX apps_team_idx ON apps (team_id, created_at, id);

CREATE TABLE api_keys (
    key        text        PRIMARY KEY,
    app_id     uuid        NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    last_seen  timestamptz,
    revoked    boolean     NOT NULL DEFAULT false
);
CREATE INDEX api_keys_app_idx ON api_keys (app_id);
-- At most one key of an app is not revoked.
CREATE UNIQUE INDEX api_keys_one_active_key ON api_keys (app_id) WHERE NOT revoked;

CREATE TABLE auth_sessions (
    id         uuid        PRIMARY KEY,
    user_id    uuid        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    refresh_id uuid        NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX auth_sessions_user_idx ON auth_sessions (user_id);
CREATE INDEX auth_sessions_expires_idx ON auth_sessions (expires_at);

-- +goose Down
DROP TABLE auth_sessions;
DROP TABLE api_keys;
DROP TABLE apps;
DROP TABLE team_members;
DROP TABLE users;
DROP TABLE teams;
