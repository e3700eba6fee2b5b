-- Dashboard users' notification preferences (sinks.NotifPrefs). A user without a row has every
-- notification on.

-- +goose Up
CREATE TABLE notif_prefs (
    user_id        uuid        PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    error_spike    boolean     NOT NULL,
    app_hang_spike boolean     NOT NULL,
    bug_report     boolean     NOT NULL,
    daily_summary  boolean     NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    CHECK (created_at <= updated_at)
);

-- +goose Down
DROP TABLE notif_prefs;
