-- The request of each http event (model.HTTPFacts: the URL's domain, the normalised path
-- pattern, the lowercase method, the status code, the latency and the time since the session's
-- start), derived once at ingest, so that the network pages (sinks.Network) select, group and
-- aggregate requests over small columns instead of parsing payloads.
--
-- Same rules as 00003: one ADD COLUMN per statement in the form migrationConn recognises (so
-- applying it twice or from two nodes at once is safe), and no DEFAULT clauses (one would also
-- defeat migrationConn's same-type check). Each column's implicit default is its type's zero
-- ('' and 0), so rows written before this migration read as events with zero HTTP facts: no
-- domain and status 0, which is not a completed request (model.HTTPFacts.Completed), so the
-- network queries leave them out rather than count them with a made-up latency (0 would read as
-- a known latency of 0 ms; a new row's facts say -1 for unknown). Old rows are not backfilled:
-- their requests stay off the network pages.

-- +goose Up
ALTER TABLE events ADD COLUMN http_domain String AFTER severity;
ALTER TABLE events ADD COLUMN http_path String AFTER http_domain;
ALTER TABLE events ADD COLUMN http_method String AFTER http_path;
ALTER TABLE events ADD COLUMN http_status UInt16 AFTER http_method;
ALTER TABLE events ADD COLUMN http_latency_ms Int64 AFTER http_status;
ALTER TABLE events ADD COLUMN http_elapsed_ms Int64 AFTER http_latency_ms;

-- +goose Down
ALTER TABLE events DROP COLUMN http_elapsed_ms;
ALTER TABLE events DROP COLUMN http_latency_ms;
ALTER TABLE events DROP COLUMN http_status;
ALTER TABLE events DROP COLUMN http_method;
ALTER TABLE events DROP COLUMN http_path;
ALTER TABLE events DROP COLUMN http_domain;
