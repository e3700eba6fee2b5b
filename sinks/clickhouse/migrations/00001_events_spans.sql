-- Events and spans: every field of model.Event and model.Span, one column each.
--
-- SQL here must run on ClickHouse 18.16 and current releases alike (docs/architecture.md, "Storage"): no DateTime64,
-- Map, Bool, LowCardinality, CODEC, TTL or skip indexes. Times are Int64 Unix nanoseconds;
-- `time` (DateTime, seconds, clamped to its range) exists for partitioning and index ranges.
-- Booleans are UInt8. User-defined attributes, attachments and checkpoints are parallel arrays.
-- Migrations must be safe to apply twice (IF NOT EXISTS): two nodes may migrate at once.
--
-- ReplacingMergeTree collapses rows with the same sorting key in background merges, so a
-- replayed row (same id, same time and type) eventually takes no space; reads never rely on
-- merges having happened (they dedupe with LIMIT 1 / uniqExact). The sorting keys start with
-- app_id and the columns dashboard queries filter on next (events: type, time; spans: name,
-- time) and end with the row's id.

-- +goose Up
CREATE TABLE IF NOT EXISTS events (
    app_id UUID,
    id UUID,
    session_id UUID,
    type String,
    timestamp Int64,
    time DateTime,
    user_triggered UInt8,
    installation_id String,
    app_version String,
    app_build String,
    app_unique_id String,
    platform String,
    sdk_version String,
    thread_name String,
    user_id String,
    device_name String,
    device_model String,
    device_manufacturer String,
    device_type String,
    device_is_foldable UInt8,
    device_is_physical UInt8,
    device_density_dpi UInt16,
    device_width_px UInt16,
    device_height_px UInt16,
    device_density Float32,
    device_locale String,
    device_low_power_mode UInt8,
    device_thermal_throttling_enabled UInt8,
    os_name String,
    os_version String,
    os_page_size UInt8,
    network_type String,
    network_provider String,
    network_generation String,
    device_cpu_arch String,
    session_start_time Int64,
    ud_keys Array(String),
    ud_types Array(UInt8),
    ud_values Array(String),
    attachment_ids Array(UUID),
    attachment_names Array(String),
    attachment_types Array(String),
    attachment_extensions Array(String),
    attachment_timestamps Array(String),
    attachment_blob_keys Array(String),
    payload String
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(time)
ORDER BY (app_id, type, time, id);

CREATE TABLE IF NOT EXISTS spans (
    app_id UUID,
    span_id String,
    trace_id String,
    parent_id String,
    session_id UUID,
    name String,
    status UInt8,
    start_time Int64,
    end_time Int64,
    time DateTime,
    duration UInt64,
    checkpoint_names Array(String),
    checkpoint_times Array(Int64),
    installation_id String,
    app_version String,
    app_build String,
    app_unique_id String,
    platform String,
    sdk_version String,
    thread_name String,
    user_id String,
    device_name String,
    device_model String,
    device_manufacturer String,
    device_type String,
    device_is_foldable UInt8,
    device_is_physical UInt8,
    device_density_dpi UInt16,
    device_width_px UInt16,
    device_height_px UInt16,
    device_density Float32,
    device_locale String,
    device_low_power_mode UInt8,
    device_thermal_throttling_enabled UInt8,
    os_name String,
    os_version String,
    os_page_size UInt8,
    network_type String,
    network_provider String,
    network_generation String,
    device_cpu_arch String,
    session_start_time Int64,
    ud_keys Array(String),
    ud_types Array(UInt8),
    ud_values Array(String)
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(time)
ORDER BY (app_id, name, time, span_id);

-- +goose Down
DROP TABLE IF EXISTS spans;
DROP TABLE IF EXISTS events;
