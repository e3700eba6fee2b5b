-- Apps' onboarding (sinks.Onboarding): set by the first accepted batch; os_names grows with each
-- OS name the app's batches carry.

-- +goose Up
ALTER TABLE apps
    ADD COLUMN onboarded    boolean     NOT NULL DEFAULT false,
    ADD COLUMN onboarded_at timestamptz,
    ADD COLUMN os_names     text[]      NOT NULL DEFAULT '{}',
    ADD CONSTRAINT apps_onboarded_at CHECK (onboarded = (onboarded_at IS NOT NULL));

-- +goose Down
ALTER TABLE apps
    DROP CONSTRAINT apps_onboarded_at,
    DROP COLUMN os_names,
    DROP COLUMN onboarded_at,
    DROP COLUMN onboarded;
