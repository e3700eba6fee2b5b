package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/ext"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Bug report queries (sinks.BugReports) over the events of type bug_report. No migration: the
// description is read from the payload column by visitParamExtractString, whose reading is the
// definition of model.BugReportDescription, so both stores match the same text. type comes
// second in the sorting key, so the queries read the bug report rows of the window only. SQL
// here runs on 18.16 and current releases.
//
// Replays: the list groups on (timestamp, id) before it pages, the counts keep one row per
// event id (LIMIT 1 BY id) before they count.
//
// Statuses: the closed ids of a status filter go as an external table (an app may have closed
// thousands of reports, more than a query's text should hold), tested with IN / NOT IN.
//
// Plot buckets: the counts are taken per UTC minute in SQL and added up per bucket in Go with
// model.Buckets.Start. Every time zone's offset has been a whole number of minutes since 1972,
// so a UTC minute lies in one bucket of any zone and this is exact for any time zone and plot
// time group, with no time zone arithmetic in SQL.

var _ sinks.BugReports = (*Store)(nil)

// descriptionSQL is model.BugReportDescription of the row's payload.
const descriptionSQL = "visitParamExtractString(payload, 'description')"

// closedTableName names the external table of model.BugReportQuery.Closed.
const closedTableName = "closed_reports"

// statusScope prepares q's status condition: the context carrying the external table of the
// closed ids and its name ("" when no table is needed), and whether the query can select
// anything at all (a filter on closed reports when none is closed selects none).
func statusScope(ctx context.Context, bq *model.BugReportQuery) (context.Context, string, bool, error) {
	st, ok := bq.StatusFilter()
	if !ok {
		return ctx, "", true, nil
	}
	if len(bq.Closed) == 0 {
		return ctx, "", st == model.BugReportOpen, nil
	}
	t, err := ext.NewTable(closedTableName, ext.Column("id", "UUID"))
	if err != nil {
		return nil, "", false, err
	}
	for id := range bq.Closed {
		if err := t.Append(id); err != nil {
			return nil, "", false, err
		}
	}
	return ch.Context(ctx, ch.WithExternalTable(t)), closedTableName, true, nil
}

// bugFilter appends the WHERE conditions of model.BugReportQuery.Match (app and window first);
// closed names the external table of the closed ids when the query filters by status.
func bugFilter(q *query, bq *model.BugReportQuery, closed string) {
	eventFilter(q, &bq.EventFilter)
	q.sql(" AND type = ?", model.BugReportType)
	if len(bq.OSVersions) > 0 {
		q.sql(" AND (os_name, os_version) IN (")
		for i, v := range bq.OSVersions {
			if i > 0 {
				q.sql(", ")
			}
			q.sql("(?, ?)", v.Name, v.Version)
		}
		q.sql(")")
	}
	if closed != "" {
		if st, _ := bq.StatusFilter(); st == model.BugReportClosed {
			q.sql(" AND id IN " + closed)
		} else {
			q.sql(" AND id NOT IN " + closed)
		}
	}
	if bq.FreeText != "" {
		// model.MatchFreeText: lower() folds ASCII letters only, as the model does; ids as
		// canonical lowercase text.
		low := asciiLower(bq.FreeText)
		q.sql(" AND ((user_id != '' AND lower(user_id) = ?) OR toString(id) = ? OR toString(session_id) = ?"+
			" OR position(lower("+descriptionSQL+"), ?) > 0)", low, low, low, low)
	}
}

// BugReports returns a page of the selected reports, newest first; see sinks.BugReports. Two
// queries: the page's keys (deduped by grouping on them), then those events whole.
func (s *Store) BugReports(ctx context.Context, bq *model.BugReportQuery, limit, offset int) ([]model.Event, error) {
	fail := func(err error) ([]model.Event, error) {
		return nil, fmt.Errorf("clickhouse: bug reports of app %s: %w", bq.App, err)
	}
	qctx, closed, some, err := statusScope(ctx, bq)
	if err != nil {
		return fail(err)
	}
	if !some || bq.From >= bq.To || limit < 1 {
		return nil, nil
	}
	var q query
	q.sql("SELECT timestamp, " + idSQL + " AS sid FROM events WHERE ")
	bugFilter(&q, bq, closed)
	q.sql(" GROUP BY timestamp, sid ORDER BY timestamp DESC, sid DESC LIMIT ?, ?", offset, limit)
	keys, err := s.eventKeys(qctx, &q)
	if err != nil {
		return fail(err)
	}
	events, err := s.eventsByKey(ctx, bq.App, keys)
	if err != nil {
		return fail(err)
	}
	if len(events) != len(keys) {
		return fail(fmt.Errorf("%d of the page's %d reports are gone; try again", len(keys)-len(events), len(keys)))
	}
	slices.SortFunc(events, func(a, b model.Event) int { return model.CompareBugReports(&a, &b) })
	return events, nil
}

// BugReportCounts counts the selected reports per version and bucket; see sinks.BugReports.
// The query counts per UTC minute (one row per event id); Go adds the minutes up per bucket.
func (s *Store) BugReportCounts(ctx context.Context, bq *model.BugReportQuery, b model.Buckets) ([]model.BugReportCount, error) {
	fail := func(err error) ([]model.BugReportCount, error) {
		return nil, fmt.Errorf("clickhouse: bug report counts of app %s: %w", bq.App, err)
	}
	out := []model.BugReportCount{}
	qctx, closed, some, err := statusScope(ctx, bq)
	if err != nil {
		return fail(err)
	}
	if !some || bq.From >= bq.To {
		return out, nil
	}
	var q query
	q.sql("SELECT r_v, r_c, r_m, count() FROM (SELECT app_version AS r_v, app_build AS r_c, " + floorDiv("timestamp", nsMinute) +
		" AS r_m FROM events WHERE ")
	bugFilter(&q, bq, closed)
	q.sql(" LIMIT 1 BY id) GROUP BY r_v, r_c, r_m")
	type key struct {
		v      model.AppVersion
		bucket int64
	}
	counts := map[key]uint64{}
	err = s.each(qctx, &q, func(scan func(...any) error) error {
		var k key
		var minute int64
		var n uint64
		if err := scan(&k.v.Name, &k.v.Code, &minute, &n); err != nil {
			return err
		}
		k.bucket = b.Start(time.Unix(minute*60, 0)).UnixNano()
		counts[k] += n
		return nil
	})
	if err != nil {
		return fail(err)
	}
	for k, n := range counts {
		out = append(out, model.BugReportCount{Version: k.v, Bucket: k.bucket, Count: n})
	}
	slices.SortFunc(out, func(a, b model.BugReportCount) int { return model.CompareBugReportCounts(&a, &b) })
	return out, nil
}
