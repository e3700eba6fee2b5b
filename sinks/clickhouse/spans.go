package clickhouse

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Span queries (sinks.Spans) over the spans table, whose sorting key is (app_id, name, time,
// span_id): the root-span queries name the span, so they read one name's index range. SQL here
// runs on 18.16. Replayed spans are identical rows with the same span id and start time, so
// every query dedupes on span_id (GROUP BY, or in Go) before it counts, pages or fetches.

var _ sinks.Spans = (*Store)(nil)

// spanFilter appends the WHERE conditions of model.SpanQuery.Match (app and name first).
func spanFilter(q *query, sq *model.SpanQuery) {
	q.sql("app_id = toUUID(?) AND name = ? AND parent_id = ''", sq.App, sq.Name)
	q.sql(" AND start_time >= ? AND start_time < ? AND time >= toDateTime(?) AND time <= toDateTime(?)",
		sq.From, sq.To, dateTime(sq.From), dateTime(sq.To))
	attrFilter(q, &sq.EventFilter)
	if len(sq.OSVersions) > 0 {
		q.sql(" AND (os_name, os_version) IN (")
		for i, v := range sq.OSVersions {
			if i > 0 {
				q.sql(", ")
			}
			q.sql("(?, ?)", v.Name, v.Version)
		}
		q.sql(")")
	}
	if len(sq.Statuses) > 0 {
		q.sql(" AND status IN (")
		list(q, sq.Statuses)
		q.sql(")")
	}
}

// RootSpanNames lists root span names, most recently seen first; see sinks.Spans.
func (s *Store) RootSpanNames(ctx context.Context, app uuid.UUID, limit int) ([]string, error) {
	var q query
	q.sql("SELECT name, max(start_time) AS latest FROM spans WHERE app_id = toUUID(?) AND parent_id = ''"+
		" GROUP BY name ORDER BY latest DESC, name ASC LIMIT ?", app, limit)
	out := []string{}
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var name string
		var latest int64
		if err := scan(&name, &latest); err != nil {
			return err
		}
		out = append(out, name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("clickhouse: root span names of app %s: %w", app, err)
	}
	return out, nil
}

// RootSpans returns a page of the selected root spans, newest first; see sinks.Spans. Two
// queries: the page's keys (deduped by grouping on them), then those spans whole.
func (s *Store) RootSpans(ctx context.Context, sq *model.SpanQuery, limit, offset int) ([]model.Span, error) {
	fail := func(err error) ([]model.Span, error) {
		return nil, fmt.Errorf("clickhouse: root spans %q of app %s: %w", sq.Name, sq.App, err)
	}
	var q query
	q.sql("SELECT start_time, span_id FROM spans WHERE ")
	spanFilter(&q, sq)
	q.sql(" GROUP BY start_time, span_id ORDER BY start_time DESC, span_id DESC LIMIT ?, ?", offset, limit)
	var ids []string
	var lo, hi int64
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var ts int64
		var id string
		if err := scan(&ts, &id); err != nil {
			return err
		}
		if len(ids) == 0 {
			lo, hi = ts, ts
		}
		lo, hi = min(lo, ts), max(hi, ts)
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var fq query
	fq.sql("SELECT "+spanColNames()+" FROM spans WHERE app_id = toUUID(?) AND name = ?"+
		" AND start_time >= ? AND start_time <= ? AND time >= toDateTime(?) AND time <= toDateTime(?) AND span_id IN (",
		sq.App, sq.Name, lo, hi, dateTime(lo), dateTime(hi))
	list(&fq, ids)
	fq.sql(")")
	spans, err := s.spansOf(ctx, &fq)
	if err != nil {
		return fail(err)
	}
	return spans, nil
}

func spanColNames() string { return names(newSpanCols(1, 0, 0).cols(), false) }

// spansOf runs a query selecting spanColNames and returns its spans, each span id once, newest
// first (model.CompareSpansNewest).
func (s *Store) spansOf(ctx context.Context, q *query) ([]model.Span, error) {
	c := newSpanCols(1, 0, 0)
	ptrs := scanPtrs(c.cols())
	var out []model.Span
	seen := map[string]bool{}
	err := s.each(ctx, q, func(scan func(...any) error) error {
		if err := scan(ptrs...); err != nil {
			return err
		}
		if !seen[c.spanID[0]] { // a replayed span's copies are the same span
			seen[c.spanID[0]] = true
			out = append(out, c.get(0))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b model.Span) int { return model.CompareSpansNewest(&a, &b) })
	return out, nil
}

// RootSpanDurations aggregates the selected root spans per version and bucket with
// quantilesExact, the definition of model.SpanDurationsOf; see sinks.Spans. The inner query
// keeps one row per span id.
func (s *Store) RootSpanDurations(ctx context.Context, sq *model.SpanQuery, by model.Buckets) ([]model.SpanDurations, error) {
	bucket, bucketArgs := bucketsSQL(by, "start_time", "b_")
	var q query
	q.sql("SELECT v, c, bk, count(), quantilesExact(0.5, 0.9, 0.95, 0.99)(d) FROM (SELECT span_id, "+bucket+
		" AS bk, any(app_version) AS v, any(app_build) AS c, any(duration) AS d FROM spans WHERE ", bucketArgs...)
	spanFilter(&q, sq)
	q.sql(" GROUP BY span_id, bk) GROUP BY v, c, bk")
	out := []model.SpanDurations{}
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var d model.SpanDurations
		var qs []uint64
		if err := scan(&d.Version.Name, &d.Version.Code, &d.Bucket, &d.Count, &qs); err != nil {
			return err
		}
		if len(qs) != 4 {
			return fmt.Errorf("quantilesExact gave %d values", len(qs))
		}
		d.P50, d.P90, d.P95, d.P99 = qs[0], qs[1], qs[2], qs[3]
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("clickhouse: durations of root spans %q of app %s: %w", sq.Name, sq.App, err)
	}
	return out, nil
}

// Trace returns every span of a trace, newest first; see sinks.Spans. trace_id is not in the
// sorting key, so this reads the trace_id column of the app's rows (PREWHERE) and the wide
// columns only of the trace's.
func (s *Store) Trace(ctx context.Context, app uuid.UUID, traceID string) ([]model.Span, error) {
	var q query
	q.sql("SELECT "+spanColNames()+" FROM spans PREWHERE trace_id = ? WHERE app_id = toUUID(?)", traceID, app)
	spans, err := s.spansOf(ctx, &q)
	if err == nil && len(spans) == 0 {
		err = sinks.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse: trace %q of app %s: %w", traceID, app, err)
	}
	return spans, nil
}
