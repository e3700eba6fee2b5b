-- What a cluster's nodes share beyond the metadata: the request gate of PUT /events
-- (postgres.Gate, a gate.Store) and actor snapshots (postgres.Snapshots, a sinks.Snapshots).
-- Times are the database's clock (now()), so the nodes' clocks do not matter. Neither table
-- references apps: a row outlives nothing it needs, and the janitor deletes expired rows.

-- +goose Up
CREATE TABLE request_ids (
    app_id     uuid        NOT NULL,
    request_id uuid        NOT NULL,
    state      text        NOT NULL CHECK (state IN ('in_progress', 'accepted')),
    -- What Accept or Mark stored; empty while in progress.
    info       bytea       NOT NULL DEFAULT '',
    -- The gate (one per node) whose Begin started it, while in progress: Abort ends only its own.
    holder     uuid,
    -- When it began (in progress) or was accepted.
    since      timestamptz NOT NULL,
    -- In progress: since + the in-progress TTL, after which a Begin takes it over.
    -- Accepted: since + the gate's TTL, after which it is unseen again.
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (app_id, request_id),
    CONSTRAINT request_ids_holder CHECK ((state = 'in_progress') = (holder IS NOT NULL))
);
-- DeleteExpiredRequestIDs takes the expired rows.
CREATE INDEX request_ids_expires_idx ON request_ids (expires_at);

CREATE TABLE actor_snapshots (
    kind       text        NOT NULL,
    identity   text        NOT NULL,
    state      bytea       NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (kind, identity)
);
-- DeleteExpiredSnapshots takes the expired rows.
CREATE INDEX actor_snapshots_expires_idx ON actor_snapshots (expires_at);

-- +goose Down
DROP TABLE actor_snapshots;
DROP TABLE request_ids;
