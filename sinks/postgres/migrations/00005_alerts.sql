-- Alerts app actors raise, and the outbox of their chat deliveries (sinks.Alerts).
-- 00004 is left to the bug reports.

-- +goose Up
CREATE TABLE alerts (
    -- model.AlertID: derived from what raised the alert, so a repeated raise finds it taken.
    id         uuid        PRIMARY KEY,
    team_id    uuid        NOT NULL,
    app_id     uuid        NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    entity_id  text        NOT NULL,
    type       text        NOT NULL,
    message    text        NOT NULL,
    url        text        NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
-- AppAlerts lists an app's alerts newest first; LatestAlerts reads those since a time.
CREATE INDEX alerts_app_created_idx ON alerts (app_id, created_at DESC, id DESC);

-- One row per pending delivery; a posted or abandoned one is deleted.
CREATE TABLE alert_deliveries (
    alert_id     uuid        PRIMARY KEY REFERENCES alerts (id) ON DELETE CASCADE,
    attempts     bigint      NOT NULL,
    next_attempt timestamptz NOT NULL,
    last_error   text        NOT NULL
);
-- DueDeliveries takes the earliest due first.
CREATE INDEX alert_deliveries_due_idx ON alert_deliveries (next_attempt, alert_id);

-- +goose Down
DROP TABLE alert_deliveries;
DROP TABLE alerts;
