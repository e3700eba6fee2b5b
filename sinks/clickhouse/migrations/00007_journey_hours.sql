-- Journey rollups by the hour (sinks/clickhouse/journey.go). 00006 kept the facts of whole UTC
-- days, so a window that cuts a day (the reference dashboard's default starts at 12:00 five days
-- ago) walked the cut part, up to a day of sessions: 0.3-0.7 s at 10M events. Kept by the hour,
-- the walked parts are at most an hour at each end.
--
-- journey_hours is journey_days with hour (the start of a UTC hour) in place of day, and
-- journey_hour_builds is journey_builds with spans of whole hours. Marks stay in journey_dirty,
-- still one per UTC day: nodes of this release and of the one before share them, and a mark of a
-- day's start covers each of its hours. journey_days and journey_builds are no longer read or
-- written by this release; they are left so that a node of the release before keeps answering
-- during an upgrade.
--
-- Same SQL rules as 00001 (18.16 and current releases; IF NOT EXISTS).

-- +goose Up
CREATE TABLE IF NOT EXISTS journey_hours (
    app_id UUID,
    hour Int64,
    built Int64,
    from_screen String,
    screen String,
    group_id String,
    class UInt8,
    title String,
    app_version String,
    app_build String,
    n UInt64,
    first Int64,
    last Int64
) ENGINE = MergeTree()
ORDER BY (app_id, hour, built);

CREATE TABLE IF NOT EXISTS journey_hour_builds (
    app_id UUID,
    from_hour Int64,
    to_hour Int64,
    built Int64
) ENGINE = MergeTree()
ORDER BY (app_id, built);

-- +goose Down
DROP TABLE IF EXISTS journey_hour_builds;
DROP TABLE IF EXISTS journey_hours;
