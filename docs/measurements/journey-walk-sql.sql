-- The journey's facts walked in SQL at query time, on a narrow table of walk events ordered by
-- session (docs/benchmarks.md, "The ClickHouse journey walked in SQL"). A measurement, not
-- part of svc: it shows what a query-time walk costs on ClickHouse 18.16, to compare with the
-- journey target (< 300 ms p95 at 10M events).
--
-- Run against a throwaway server (each statement's time is printed after it):
--   go run ./cmd/testenv -only clickhouse -- bash -c 'p=${SVC_TEST_CLICKHOUSE_DSN##*:}; \
--     clickhouse-client --port ${p%%/*} --multiquery --time < docs/measurements/journey-walk-sql.sql'

-- 164,592 sessions of 18 walk events each (2.96M rows, as many walk events as the 10M-event
-- `make bench` store holds): 98 % screen events over 30 screens, 2 % crash or ANR events of 50
-- groups, three versions.
CREATE TABLE walks (app_id UUID, session_id UUID, timestamp Int64, id UUID, screen String,
  group_id String, class UInt8, app_version String, app_build String)
ENGINE = ReplacingMergeTree() ORDER BY (app_id, session_id, timestamp, id);

INSERT INTO walks SELECT toUUID('00000000-0000-0000-0000-000000000001'),
  toUUID(concat('00000000-0000-0000-0000-', substring(toString(1000000000000 + s), 2, 12))),
  toInt64(1763000000000000000 + (s % 500000) * 1000000000 + j * 1000000000), generateUUIDv4(),
  if(r < 2, '', concat('Screen', toString(rand(2) % 30))), if(r < 2, concat('g', toString(rand(3) % 50)), ''),
  if(r < 2, 1 + rand(4) % 2, 0), concat('1.', toString(rand(5) % 3)), '12'
FROM (SELECT intDiv(number, 18) AS s, number % 18 AS j, rand(1) % 100 AS r FROM numbers(2962656));

-- Only grouping each session's walk rows into arrays, numeric columns (0.11-0.15 s) and the
-- screens as text (0.15 s).
SELECT sum(length(t)) FROM (SELECT groupArray(timestamp) AS t, groupArray(sipHash64(screen)) AS s
  FROM walks WHERE app_id = toUUID('00000000-0000-0000-0000-000000000001') GROUP BY session_id);
SELECT sum(length(a)) FROM (SELECT groupArray(screen) AS a FROM walks GROUP BY session_id);

-- The whole walk (model.Walk's rules: a move is a screen other than the current one, counted
-- the first time the session makes it, at most 500 moves; an issue counts on the current
-- screen), each session's events sorted by (timestamp, id) and replayed copies dropped, the
-- facts of the window summed by move or issue and version: 1.4-1.6 s. Its answer matched the
-- rows of a second form that carries hashes and parallel arrays instead of tuples (1.6 s).
SELECT f.2 AS from_screen, f.3 AS to_screen, f.4 AS grp, f.5 AS cls, f.6 AS ver, count() AS n
FROM (
 SELECT
  arraySort(groupArray((timestamp, id, screen, group_id, class, app_version, app_build))) AS ev0,
  arrayFilter((e, u) -> u = 1, ev0, arrayEnumerateUniq(arrayMap(e -> e.2, ev0))) AS ev,
  arrayFilter(e -> e.3 != '', ev) AS SE,
  arrayMap(e -> e.3, SE) AS S,
  arrayPushFront(arrayPopBack(S), '') AS P,
  arrayMap((a, b) -> a != '' AND a != b, P, S) AS V,
  arrayMap((a, b, v, i) -> if(v, concat(a, '\0', b), concat('\1', toString(i))), P, S, V, arrayEnumerate(S)) AS K,
  arrayMap((v, u) -> v AND u = 1, V, arrayEnumerateUniq(K)) AS F0,
  arrayMap((f, c) -> f AND c <= 500, F0, arrayCumSum(arrayMap(f -> toUInt32(f), F0))) AS F,
  arrayFilter((x, f) -> f, arrayMap((e, p) -> (e.1, p, e.3, '', toUInt8(0), e.6), SE, P), F) AS moves,
  arrayCumSum(arrayMap(e -> toUInt32(e.3 != ''), ev)) AS k,
  arrayFilter((x, e) -> e.4 != '' AND e.5 IN (1, 2) AND e.3 = '',
    arrayMap((e, j) -> (e.1, if(j = 0, '', S[j]), '', e.4, e.5, e.6), ev, k), ev) AS issues,
  arrayConcat(moves, issues) AS facts
 FROM walks WHERE app_id = toUUID('00000000-0000-0000-0000-000000000001')
   AND session_id IN (SELECT session_id FROM walks WHERE app_id = toUUID('00000000-0000-0000-0000-000000000001')
     AND timestamp >= 1763000000000000000 AND timestamp < 1764000000000000000)
 GROUP BY session_id
) ARRAY JOIN facts AS f
WHERE f.1 >= 1763000000000000000 AND f.1 < 1764000000000000000
GROUP BY from_screen, to_screen, grp, cls, ver;
