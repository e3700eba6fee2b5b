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

// Session queries (sinks.Sessions) over the events and spans tables; SQL here runs on 18.16
// and current releases.
//
// The list and its plot are one aggregation per session over the window's rows (sessionsSQL):
// an inner query computes, per row, whether it is a matching event
// (model.SessionQuery.MatchEvent), the session kinds it shows (KindsOf) and the free-text field
// it holds (MatchText); the outer one groups by session and keeps those
// model.SessionAcc.Selected accepts, with the summary's first and last times, the first event's
// device and the first user id (argMin by (timestamp, id as text), the byte order of ids) and
// the first match (min of (timestamp, id, label, value)). A replayed row is a second copy of
// the same values, which none of min, max, argMin and countIf(…) > 0 notices, so no row is
// deduped.
//
// Payloads are read only when the query needs them, by visitParamExtractString(payload, key),
// which model.PayloadString follows.
//
// Events and root spans of one session: session_id is not in either sorting key, so they read
// the session_id column of the app's rows (PREWHERE) and the wide columns only of the
// session's.

var _ sinks.Sessions = (*Store)(nil)

// inList is " IN ('a', 'b')" of our own constant strings (model's event types).
func inList(vals []string) string {
	var b strings.Builder
	b.WriteString(" IN (")
	for i, v := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(sqlString(v))
	}
	b.WriteString(")")
	return b.String()
}

// sqlString is a constant string of ours (plain ASCII, no quote or backslash) as a ClickHouse
// literal.
func sqlString(s string) string { return "'" + s + "'" }

// textValueSQL is the value of a free-text field (model.TextField.Value) for rows of its types.
func textValueSQL(q *query, f *model.TextField) {
	switch f.Source {
	case model.TextSessionID:
		q.sql("toString(session_id)")
	case model.TextUserID:
		q.sql("user_id")
	case model.TextType:
		q.sql("type")
	case model.TextIssueType:
		q.sql("issue_type")
	case model.TextIssueMessage:
		q.sql("issue_message")
	case model.TextIssueMethod:
		q.sql("issue_method")
	case model.TextIssueFile:
		q.sql("issue_file")
	case model.TextPayload:
		q.sql("visitParamExtractString(payload, ?)", f.Key)
	default:
		q.sql("''")
	}
}

// textMatchSQL appends the condition that the row holds the (folded) needle in field f, as
// model.MatchText decides it.
func textMatchSQL(q *query, f *model.TextField, needle string) {
	q.sql("(")
	if f.Types != nil {
		q.sql("type" + inList(f.Types) + " AND ")
	}
	if f.Exact {
		q.sql("lower(")
		textValueSQL(q, f)
		q.sql(") = ?", needle)
	} else {
		q.sql("position(lower(")
		textValueSQL(q, f)
		q.sql("), ?) > 0", needle)
	}
	q.sql(")")
}

// foregroundSQL is model.ForegroundEvidence of a row.
var foregroundSQL = "(type" + inList(model.ForegroundTypes) +
	" OR (type = 'lifecycle_app' AND visitParamExtractString(payload, 'type') = 'foreground')" +
	" OR (type IN ('exception', 'anr') AND foreground != 0))"

// The aggregates of a selected session sessionsSQL can compute (beyond what selects it).
const (
	// aggFirst: s_first, the time of its first event in the window.
	aggFirst = "min(timestamp) AS s_first"
	// aggVersion: s_first, and s_ver, the (app_version, app_build) tuple of its first event.
	aggVersion = aggFirst + ", argMin(tuple(app_version, app_build), tuple(timestamp, r_id)) AS s_ver"
	// aggSummary: s_first, s_last, s_dev (the tuple of SessionDevice's fields, in order, of
	// its first event), s_user (the first user id) and s_text (the first free-text match as
	// (timestamp, id, label, value)).
	aggSummary = aggFirst + ", max(timestamp) AS s_last," +
		" argMin(tuple(app_version, app_build, os_name, os_version, device_name, device_model, device_manufacturer), tuple(timestamp, r_id)) AS s_dev," +
		" argMinIf(user_id, tuple(timestamp, r_id), user_id != '') AS s_user," +
		" minIf(tuple(timestamp, r_id, r_label, r_value), r_m AND r_label != '') AS s_text"
)

// sessionsSQL appends a query with one row per session sq selects: session_id and the
// aggregates aggs. With only, just the sessions in that external table (of a UUID column id)
// are read. The aggregates by (timestamp, id) cost most (argMin over tuples: about half a
// second per million rows on 18.16), so a page computes them for its own sessions only.
func sessionsSQL(q *query, sq *model.SessionQuery, aggs, only string) {
	needle := model.FoldASCII(sq.FreeText)
	q.sql("SELECT session_id, " + aggs + "," +
		" countIf(r_m) AS s_m, countIf(r_m AND r_issue) AS s_issue, countIf(r_m AND r_bug) AS s_bug," +
		" countIf(r_m AND r_ui) AS s_ui, countIf(r_m AND r_fg) AS s_fg, countIf(r_m AND r_label != '') AS s_texts" +
		" FROM (SELECT session_id, timestamp, toString(id) AS r_id, app_version, app_build, os_name, os_version," +
		" device_name, device_model, device_manufacturer, user_id, (type != 'session_start'")
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
	q.sql(") AS r_m, ")
	// Kinds: only those asked for are computed (foreground reads lifecycle_app payloads).
	if sq.Issue {
		q.sql("(" + issueRowsSQL)
		if len(sq.Classes) > 0 {
			q.sql(" AND " + classSQL + " IN (")
			for i, c := range sq.Classes {
				if i > 0 {
					q.sql(", ")
				}
				q.sql(strconv.Itoa(int(c)))
			}
			q.sql(")")
		}
		if len(sq.Severities) > 0 {
			q.sql(" AND (type = 'anr' OR severity IN (") // severities narrow exceptions only
			list(q, sq.Severities)
			q.sql("))")
		}
		q.sql(") AS r_issue, ")
	} else {
		q.sql("0 AS r_issue, ")
	}
	q.sql("(type = 'bug_report') AS r_bug, (type" + inList([]string{"gesture_click", "gesture_long_click", "gesture_scroll"}) + ") AS r_ui, ")
	if sq.Foreground || sq.Background {
		q.sql(foregroundSQL + " AS r_fg, ")
	} else {
		q.sql("0 AS r_fg, ")
	}
	if sq.FreeText == "" {
		q.sql("'' AS r_label, '' AS r_value")
	} else {
		fields := model.SessionTextFields
		q.sql("multiIf(")
		for i := range fields {
			textMatchSQL(q, &fields[i], needle)
			q.sql(", " + sqlString(fields[i].Label) + ", ")
		}
		q.sql("'') AS r_label, multiIf(")
		for i := range fields {
			textMatchSQL(q, &fields[i], needle)
			q.sql(", ")
			textValueSQL(q, &fields[i])
			q.sql(", ")
		}
		q.sql("'') AS r_value")
	}
	q.sql(" FROM events WHERE app_id = toUUID(?)", sq.App)
	timeWindow(q, sq.From, sq.To)
	if only != "" {
		q.sql(" AND session_id IN " + only)
	}
	q.sql(") GROUP BY session_id HAVING s_m > 0")
	if sq.HasKinds() {
		var alts []string
		if sq.Issue {
			alts = append(alts, "s_issue > 0")
		}
		if sq.BugReport {
			alts = append(alts, "s_bug > 0")
		}
		if sq.UserInteraction {
			alts = append(alts, "s_ui > 0")
		}
		if sq.Foreground {
			alts = append(alts, "s_fg > 0")
		}
		if sq.Background {
			alts = append(alts, "s_fg = 0")
		}
		q.sql(" AND (" + strings.Join(alts, " OR ") + ")")
	}
	if sq.FreeText != "" {
		q.sql(" AND s_texts > 0")
	}
}

// SessionPage returns a page of the selected sessions, newest first; see sinks.Sessions. Two
// queries: the page's sessions (their first times only), then their summaries.
func (s *Store) SessionPage(ctx context.Context, sq *model.SessionQuery, limit, offset int) ([]model.SessionSummary, error) {
	if limit < 1 || offset < 0 {
		return nil, fmt.Errorf("clickhouse: sessions: %w: limit %d, offset %d", sinks.ErrInvalid, limit, offset)
	}
	fail := func(err error) ([]model.SessionSummary, error) {
		return nil, fmt.Errorf("clickhouse: sessions of app %s: %w", sq.App, err)
	}
	out := []model.SessionSummary{}
	if sq.From >= sq.To {
		return out, nil
	}
	var q query
	q.sql("SELECT session_id FROM (")
	sessionsSQL(&q, sq, aggFirst, "")
	q.sql(") ORDER BY s_first DESC, toString(session_id) DESC LIMIT ?, ?", offset, limit)
	ids, err := ext.NewTable("page_sessions", ext.Column("id", "UUID"))
	if err != nil {
		return fail(err)
	}
	n := 0
	err = s.each(ctx, &q, func(scan func(...any) error) error {
		var id uuid.UUID
		if err := scan(&id); err != nil {
			return err
		}
		n++
		return ids.Append(id)
	})
	if err != nil || n == 0 {
		if err != nil {
			return fail(err)
		}
		return out, nil
	}

	// The summaries, with the excerpt of the match's value (model.Excerpt; position() is
	// 1-based, 0 when absent).
	needle := model.FoldASCII(sq.FreeText)
	pos := "toInt64(position(lower(s_value), ?))"
	lo := "greatest(1, " + pos + " - " + strconv.Itoa(model.ExcerptLead) + ")"
	size := model.ExcerptBytes + len(needle)
	long := "length(s_value) > " + strconv.Itoa(size)
	q = query{}
	q.sql("SELECT session_id, s_first, s_last, s_dev, s_user, tupleElement(s_text, 3) AS s_label,"+
		" if("+long+", substring(s_value, "+lo+", "+strconv.Itoa(size)+"), s_value) AS s_excerpt,"+
		" "+long+" AND "+lo+" > 1 AS s_before, "+long+" AND "+lo+" + "+strconv.Itoa(size-1)+" < length(s_value) AS s_after"+
		" FROM (SELECT *, tupleElement(s_text, 4) AS s_value FROM (", needle, needle, needle)
	sessionsSQL(&q, sq, aggSummary, ids.Name())
	q.sql("))")
	err = s.each(ch.Context(ctx, ch.WithExternalTable(ids)), &q, func(scan func(...any) error) error {
		var m model.SessionSummary
		var dev []any
		var before, after uint8
		if err := scan(&m.SessionID, &m.First, &m.Last, &dev, &m.UserID, &m.Match.Label, &m.Match.Value, &before, &after); err != nil {
			return err
		}
		m.Match.Before, m.Match.After = before != 0, after != 0
		d := &m.Device
		ptrs := []*string{&d.AppVersion, &d.AppBuild, &d.OSName, &d.OSVersion, &d.DeviceName, &d.DeviceModel, &d.DeviceManufacturer}
		if len(dev) != len(ptrs) {
			return fmt.Errorf("device tuple of %d fields", len(dev))
		}
		for i, p := range ptrs {
			v, ok := dev[i].(string)
			if !ok {
				return fmt.Errorf("device tuple field %d is %T", i, dev[i])
			}
			*p = v
		}
		out = append(out, m)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	// Rows written or deleted between the two queries may change a summary; the page keeps
	// the sessions it picked, in the list's order.
	slices.SortFunc(out, func(a, b model.SessionSummary) int { return model.CompareSessionsNewest(&a, &b) })
	return out, nil
}

// SessionPlot counts the selected sessions per version and bucket of their first event; see
// sinks.Sessions.
func (s *Store) SessionPlot(ctx context.Context, sq *model.SessionQuery, b model.Buckets) ([]model.SessionPlotCell, error) {
	out := []model.SessionPlotCell{}
	if sq.From >= sq.To {
		return out, nil
	}
	bucket, bargs := bucketsSQL(b, "s_first", "b_")
	var q query
	q.sql("SELECT tupleElement(s_ver, 1) AS v, tupleElement(s_ver, 2) AS c, "+bucket+" AS bk, count() FROM (", bargs...)
	sessionsSQL(&q, sq, aggVersion, "")
	q.sql(") GROUP BY v, c, bk")
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var c model.SessionPlotCell
		if err := scan(&c.Version.Name, &c.Version.Code, &c.Bucket, &c.Count); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("clickhouse: session plot of app %s: %w", sq.App, err)
	}
	model.SortSessionPlot(out)
	return out, nil
}

// SessionEvents returns every event of the session in time order; see sinks.Sessions.
func (s *Store) SessionEvents(ctx context.Context, app, session uuid.UUID) ([]model.Event, error) {
	c := newEventCols(1, 0, 0)
	cols := c.cols()
	var q query
	q.sql("SELECT "+names(cols, false)+" FROM events PREWHERE session_id = toUUID(?) WHERE app_id = toUUID(?)", session, app)
	out := []model.Event{}
	seen := map[uuid.UUID]bool{}
	ptrs := scanPtrs(cols)
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		if err := scan(ptrs...); err != nil {
			return err
		}
		if !seen[c.id[0]] { // a replayed row's copies are the same event
			seen[c.id[0]] = true
			out = append(out, c.get(0))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("clickhouse: events of session %s of app %s: %w", session, app, err)
	}
	slices.SortFunc(out, func(a, b model.Event) int { return compareKey(&a, &b) })
	return out, nil
}

// SessionRootSpans returns the session's root spans, newest first; see sinks.Sessions.
func (s *Store) SessionRootSpans(ctx context.Context, app, session uuid.UUID) ([]model.Span, error) {
	var q query
	q.sql("SELECT "+spanColNames()+" FROM spans PREWHERE session_id = toUUID(?) WHERE app_id = toUUID(?) AND parent_id = ''", session, app)
	spans, err := s.spansOf(ctx, &q)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: root spans of session %s of app %s: %w", session, app, err)
	}
	if spans == nil {
		spans = []model.Span{}
	}
	return spans, nil
}
