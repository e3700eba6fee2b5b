-- Apps' SDK settings that GET /config does not serve (sinks.SDKConfigExtras): the dashboard's
-- HTTP and profile sampling rates and log collection. An app without a row has the defaults.

-- +goose Up
CREATE TABLE sdk_config_extras (
    app_id                  uuid             PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
    -- Percentages.
    http_sampling_rate      double precision NOT NULL CHECK (http_sampling_rate BETWEEN 0 AND 100),
    profile_sampling_rate   double precision NOT NULL CHECK (profile_sampling_rate BETWEEN 0 AND 100),
    log_autocollect_enabled boolean          NOT NULL,
    -- model.LogSeverities.
    log_min_severity        smallint         NOT NULL CHECK (log_min_severity IN (8, 12, 16, 20, 24)),
    -- Regular expressions, in the order given.
    log_ignore_patterns     text[]           NOT NULL,
    updated_at              timestamptz      NOT NULL
);

-- +goose Down
DROP TABLE sdk_config_extras;
