package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/ext"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Network queries (sinks.Network) over the request facts of http events (migration 00005),
// which are columns: no payload is read. SQL here runs on 18.16 and current releases.
//
// Replays: HTTPPaths lists distinct values, which a second copy of a row does not change;
// HTTPStats keeps one row per event id (LIMIT 1 BY id) before it counts anything.
//
// Endpoint maps can hold thousands of paths: they go as an external table, never in the
// query's text (whose size the server limits: 256 KiB by default, which a few thousand paths
// with their patterns exceed). Its (domain, path) pairs select the rows (IN), and when the
// groups have patterns an ALL INNER JOIN on them gives each row its pattern. The table holds each
// pair once, so the join gives every row exactly one match. (ANY INNER JOIN would not do: since
// 20.x, without any_join_distinct_right_table_keys, it keeps one row per key of the left side
// too.)

var _ sinks.Network = (*Store)(nil)

// completedSQL selects the completed requests of http events (model.HTTPFacts.Completed). type
// comes second in the sorting key, so it also narrows the index range.
const completedSQL = "type = 'http' AND http_domain != '' AND http_status != 0"

// HTTPPaths lists the distinct (domain, path) of the app's completed requests, in byte order;
// see sinks.Network.
func (s *Store) HTTPPaths(ctx context.Context, app uuid.UUID) ([]model.HTTPPath, error) {
	var q query
	q.sql("SELECT http_domain, http_path FROM events WHERE app_id = toUUID(?) AND "+completedSQL+
		" GROUP BY http_domain, http_path", app)
	out := []model.HTTPPath{}
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var p model.HTTPPath
		if err := scan(&p.Domain, &p.Path); err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("clickhouse: http paths of app %s: %w", app, err)
	}
	slices.SortFunc(out, func(a, b model.HTTPPath) int {
		if c := strings.Compare(a.Domain, b.Domain); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, nil
}

// networkFilter appends the WHERE conditions of model.NetworkQuery.Match (app and window first);
// endpoints names the external table of q.Endpoints, when set.
func networkFilter(q *query, nq *model.NetworkQuery, endpoints string) {
	eventFilter(q, &nq.EventFilter)
	q.sql(" AND " + completedSQL)
	if nq.Domain != "" {
		q.sql(" AND http_domain = ?", nq.Domain)
	}
	if len(nq.Methods) > 0 {
		q.sql(" AND http_method IN (")
		list(q, nq.Methods)
		q.sql(")")
	}
	if len(nq.OSVersions) > 0 {
		q.sql(" AND (os_name, os_version) IN (")
		for i, v := range nq.OSVersions {
			if i > 0 {
				q.sql(", ")
			}
			q.sql("(?, ?)", v.Name, v.Version)
		}
		q.sql(")")
	}
	if endpoints != "" {
		q.sql(" AND (http_domain, http_path) IN (SELECT h_dom, h_path FROM " + endpoints + ")")
	}
}

// endpointsTable is the external table of an endpoint map: each (domain, path) once, with the
// pattern model.EndpointMap.Pattern gives it (the last one added).
func endpointsTable(m *model.EndpointMap) (*ext.Table, error) {
	t, err := ext.NewTable("endpoints", ext.Column("h_dom", "String"), ext.Column("h_path", "String"),
		ext.Column("h_pat", "String"))
	if err != nil {
		return nil, err
	}
	seen := make(map[[2]string]bool, m.Len())
	for i := m.Len() - 1; i >= 0; i-- {
		k := [2]string{m.Domains[i], m.Paths[i]}
		if seen[k] {
			continue
		}
		seen[k] = true
		if err := t.Append(k[0], k[1], m.Patterns[i]); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// HTTPStats aggregates the selected requests per group; see sinks.Network. One query: the
// inner one selects the requests, one row per event id, with the parts of their key that are
// grouped by (the bucket is bucketsSQL's Buckets.Start: integer arithmetic in UTC, the zone's
// functions in another); the outer one aggregates them per key, the latency percentiles by
// quantilesExactIf over the known latencies (model.DurationQuantile). Ungrouped parts of the
// key are constants, the zero values the contract gives them.
func (s *Store) HTTPStats(ctx context.Context, nq *model.NetworkQuery, by model.HTTPGroup, b model.Buckets) ([]model.HTTPStat, error) {
	fail := func(err error) ([]model.HTTPStat, error) {
		return nil, fmt.Errorf("clickhouse: http stats of app %s: %w", nq.App, err)
	}
	out := []model.HTTPStat{}
	if nq.From >= nq.To || (nq.Endpoints != nil && nq.Endpoints.Len() == 0) {
		return out, nil // selects nothing
	}
	endpoints := ""
	if nq.Endpoints != nil {
		t, err := endpointsTable(nq.Endpoints)
		if err != nil {
			return fail(err)
		}
		endpoints = t.Name()
		ctx = ch.Context(ctx, ch.WithExternalTable(t))
	}
	dom, pat, bk, st, el := "''", "''", "toInt64(0)", "toUInt16(0)", "toInt64(0)"
	if by&(model.ByDomain|model.ByPattern) != 0 {
		dom = "h_dom"
	}
	if by&model.ByPattern != 0 {
		pat = "h_path"
		if endpoints != "" {
			pat = "h_pat"
		}
	}
	if by&model.ByBucket != 0 {
		bk = "h_bk"
	}
	if by&model.ByStatus != 0 {
		st = "h_status"
	}
	if by&model.ByElapsed != 0 {
		el = "h_el"
	}
	step := strconv.Itoa(model.ElapsedStep)
	var q query
	q.sql("SELECT " + dom + " AS k_dom, " + pat + " AS k_pat, " + bk + " AS k_bk, " + st + " AS k_st, " + el + " AS k_el," +
		" count(), countIf(h_class = 2), countIf(h_class = 3), countIf(h_class = 4), countIf(h_class = 5), " +
		distinctSQL("h_sid") + ", countIf(h_lat >= 0), quantilesExactIf(0.5, 0.9, 0.95, 0.99)(h_lat, h_lat >= 0)" +
		" FROM (SELECT http_domain AS h_dom, http_path AS h_path, http_status AS h_status, intDiv(http_status, 100) AS h_class," +
		" http_latency_ms AS h_lat, session_id AS h_sid")
	if by&model.ByBucket != 0 {
		bucket, args := bucketsSQL(b, "timestamp", "b_")
		q.sql(", "+bucket+" AS h_bk", args...)
	}
	if by&model.ByElapsed != 0 {
		q.sql(", toInt64(intDiv(http_elapsed_ms, " + step + ") * " + step + ") AS h_el")
	}
	q.sql(" FROM events WHERE ")
	networkFilter(&q, nq, endpoints)
	if by&model.ByElapsed != 0 {
		q.sql(" AND http_elapsed_ms >= 0") // unknown elapsed times are left out (KeyOf)
	}
	q.sql(" LIMIT 1 BY id)")
	if by&model.ByPattern != 0 && endpoints != "" {
		q.sql(" ALL INNER JOIN " + endpoints + " USING (h_dom, h_path)")
	}
	q.sql(" GROUP BY k_dom, k_pat, k_bk, k_st, k_el")
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var h model.HTTPStat
		var qs []int64
		c := &h.Classes
		if err := scan(&h.Domain, &h.Pattern, &h.Bucket, &h.Status, &h.Elapsed, &h.Count, &c[0], &c[1], &c[2], &c[3],
			&h.Sessions, &h.LatencyCount, &qs); err != nil {
			return err
		}
		if h.Count == 0 {
			return nil // 18.16 answers constant keys over no rows with one empty group
		}
		if h.LatencyCount > 0 {
			if len(qs) != 4 {
				return fmt.Errorf("quantilesExactIf gave %d values", len(qs))
			}
			h.P50, h.P90, h.P95, h.P99 = uint64(qs[0]), uint64(qs[1]), uint64(qs[2]), uint64(qs[3])
		}
		out = append(out, h)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	slices.SortFunc(out, func(a, b model.HTTPStat) int { ka, kb := a.Key(), b.Key(); return model.CompareHTTPKeys(&ka, &kb) })
	return out, nil
}
