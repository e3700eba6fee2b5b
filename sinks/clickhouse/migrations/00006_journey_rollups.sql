-- Journey rollups (sinks/clickhouse/journey.go): the journey facts of whole UTC days, summed,
-- so that a journey over days read from the store reads a few thousand rows instead of walking
-- every session of the window (3.4 s at 10M events over 7 days).
--
-- journey_days holds the facts of one build of a day: per fact without its time (the move or
-- issue, its version), how many (n) and the earliest and latest event time. Rows of a build
-- are written before its journey_builds row, which says which days the build covers (days of
-- the range with no journey_days row had no facts). journey_dirty says, per app and UTC day,
-- when events were last written whose walk starts there: a build older than that (with a
-- margin for clocks) no longer holds for that day and every later one. ReplacingMergeTree
-- keeps the latest mark of each day after merges; reads take max(at) and never rely on them.
--
-- Same SQL rules as 00001 (18.16 and current releases; IF NOT EXISTS, so applying it twice or
-- from two nodes at once is safe). Times and days are Int64 Unix nanoseconds; `at` is UInt64,
-- the version column type 18.16 accepts.

-- +goose Up
CREATE TABLE IF NOT EXISTS journey_days (
    app_id UUID,
    day Int64,
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
ORDER BY (app_id, day, built);

CREATE TABLE IF NOT EXISTS journey_builds (
    app_id UUID,
    from_day Int64,
    to_day Int64,
    built Int64
) ENGINE = MergeTree()
ORDER BY (app_id, built);

CREATE TABLE IF NOT EXISTS journey_dirty (
    app_id UUID,
    day Int64,
    at UInt64
) ENGINE = ReplacingMergeTree(at)
ORDER BY (app_id, day);

-- +goose Down
DROP TABLE IF EXISTS journey_dirty;
DROP TABLE IF EXISTS journey_builds;
DROP TABLE IF EXISTS journey_days;
