package clickhouse

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Analytics: every method aggregates in ClickHouse and reads back aggregates, or pages of rows
// picked by key first and fetched whole after (so that the wide columns of rows that are not
// returned are never read).
//
// Replays: a row written twice is two physical rows until a merge collapses them, and the two
// are the same event (same id, same values). Distinct counts (sessions, values) and max/argMax
// are unaffected; counts of events use uniqExact(id), and the rest dedupe by id (LIMIT 1 BY or
// GROUP BY id, or in Go on rows read in id order). FINAL is not used: it merges at read time on
// one thread per partition in 18.16.

var _ sinks.Analytics = (*Store)(nil)

// latestSQL is the greatest (timestamp, id in byte order) of a group of rows with the display
// of that row: one max over a tuple, so the display comes from the same row as the key.
const latestSQL = "max(tuple(timestamp, " + idSQL + ", issue_type, issue_message, issue_method, issue_file, issue_line, severity))"

// IssueCells aggregates the matching issue events per group, class, version and bucket; see
// sinks.Analytics.
func (s *Store) IssueCells(ctx context.Context, iq *model.IssueQuery, by model.Cells) ([]model.IssueCell, error) {
	bucket := "toInt64(0)"
	if by.Bucketed {
		bucket = bucketSQL(by.By, "b_")
	}
	var q query
	q.sql("SELECT group_id, toUInt8(" + classSQL + ") AS class, app_version, app_build, " + bucket + " AS bucket," +
		" uniqExact(id), " + latestSQL + " FROM events WHERE ")
	issueFilter(&q, iq)
	q.sql(" GROUP BY group_id, class, app_version, app_build, bucket")
	rows, err := s.conn.Query(ctx, q.String(), q.args...)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: issue cells of app %s: %w", iq.App, err)
	}
	defer rows.Close()
	var out []model.IssueCell
	for rows.Next() {
		var c model.IssueCell
		var class uint8
		var last latestTuple
		if err := rows.Scan(&c.GroupID, &class, &c.Version.Name, &c.Version.Code, &c.Bucket, &c.Count, &last.fields); err != nil {
			return nil, fmt.Errorf("clickhouse: issue cells of app %s: %w", iq.App, err)
		}
		c.Class = model.IssueClass(class)
		if c.LastTime, c.LastID, c.Last, err = last.decode(); err != nil {
			return nil, fmt.Errorf("clickhouse: issue cells of app %s: %w", iq.App, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("clickhouse: issue cells of app %s: %w", iq.App, err)
	}
	return out, nil
}

// latestTuple scans latestSQL's tuple.
type latestTuple struct {
	fields []any
}

func (l *latestTuple) decode() (int64, uuid.UUID, model.IssueDisplay, error) {
	var d model.IssueDisplay
	f := l.fields
	if len(f) != 8 {
		return 0, uuid.UUID{}, d, fmt.Errorf("latest event: %d fields, want 8", len(f))
	}
	ts, ok0 := f[0].(int64)
	sid, ok1 := f[1].(string)
	var ok [6]bool
	d.Type, ok[0] = f[2].(string)
	d.Message, ok[1] = f[3].(string)
	d.MethodName, ok[2] = f[4].(string)
	d.FileName, ok[3] = f[5].(string)
	d.LineNumber, ok[4] = f[6].(int32)
	d.Severity, ok[5] = f[7].(string)
	if !ok0 || !ok1 || slices.Contains(ok[:], false) {
		return 0, uuid.UUID{}, d, fmt.Errorf("latest event: unexpected field types %T", f)
	}
	id, err := uuid.Parse(sid)
	if err != nil {
		return 0, uuid.UUID{}, d, fmt.Errorf("latest event id %q: %w", sid, err)
	}
	return ts, id, d, nil
}

// IssueEvents returns a page of the matching issue events in the instance order; see
// sinks.Analytics. The page's keys are picked first from the key columns only, then its rows
// are read whole.
func (s *Store) IssueEvents(ctx context.Context, iq *model.IssueQuery, page model.EventPage) ([]model.Event, error) {
	if page.Limit < 1 {
		return nil, fmt.Errorf("clickhouse: issue events: %w: limit %d, want at least 1", sinks.ErrInvalid, page.Limit)
	}
	var q query
	q.sql("SELECT timestamp, " + idSQL + " AS sid FROM events WHERE ")
	issueFilter(&q, iq)
	order := "DESC"
	if k := page.Key; k != nil {
		if page.Backward {
			q.sql(" AND time >= toDateTime(?) AND (timestamp > ? OR timestamp = ? AND "+idSQL+" > ?)",
				dateTime(k.Timestamp), k.Timestamp, k.Timestamp, k.ID.String())
			order = "ASC"
		} else {
			q.sql(" AND time <= toDateTime(?) AND (timestamp < ? OR timestamp = ? AND "+idSQL+" < ?)",
				dateTime(k.Timestamp), k.Timestamp, k.Timestamp, k.ID.String())
		}
	}
	q.sql(" ORDER BY timestamp " + order + ", sid " + order + " LIMIT 1 BY sid LIMIT " + strconv.Itoa(page.Limit))
	keys, err := s.eventKeys(ctx, &q)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: issue events of app %s: %w", iq.App, err)
	}
	events, err := s.eventsByKey(ctx, iq.App, keys)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: issue events of app %s: %w", iq.App, err)
	}
	slices.SortFunc(events, func(a, b model.Event) int { return -compareKey(&a, &b) })
	return events, nil
}

// eventKey is an event's position: its time and id.
type eventKey struct {
	ts int64
	id uuid.UUID
}

// eventKeys runs a query whose first two columns are timestamp and the id as text.
func (s *Store) eventKeys(ctx context.Context, q *query) ([]eventKey, error) {
	rows, err := s.conn.Query(ctx, q.String(), q.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []eventKey
	for rows.Next() {
		var k eventKey
		var sid string
		if err := rows.Scan(&k.ts, &sid); err != nil {
			return nil, err
		}
		if k.id, err = uuid.Parse(sid); err != nil {
			return nil, fmt.Errorf("event id %q: %w", sid, err)
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// eventsByKey reads the app's events with the given keys whole, each once, in no order. The
// keys' time range bounds the scan; the id list picks the rows.
func (s *Store) eventsByKey(ctx context.Context, app uuid.UUID, keys []eventKey) ([]model.Event, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	lo, hi := keys[0].ts, keys[0].ts
	for _, k := range keys {
		lo, hi = min(lo, k.ts), max(hi, k.ts)
	}
	c := newEventCols(1, 0, 0)
	cols := c.cols()
	var q query
	q.sql("SELECT "+names(cols, false)+" FROM events WHERE app_id = toUUID(?)"+
		" AND timestamp >= ? AND timestamp <= ? AND time >= toDateTime(?) AND time <= toDateTime(?) AND id IN (",
		app, lo, hi, dateTime(lo), dateTime(hi))
	ids := make([]uuid.UUID, len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	list(&q, ids)
	q.sql(") LIMIT 1 BY id")
	rows, err := s.conn.Query(ctx, q.String(), q.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]model.Event, 0, len(keys))
	ptrs := scanPtrs(cols)
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, c.get(0))
	}
	return out, rows.Err()
}

// compareKey orders events by (timestamp, id bytes), the order of model.EventKey reversed.
func compareKey(a, b *model.Event) int {
	if a.Timestamp != b.Timestamp {
		if a.Timestamp < b.Timestamp {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.ID[:], b.ID[:])
}

// crashSQL and anrSQL are the session flags of SessionBuckets and Metrics: a fatal exception
// event, and an anr event.
const (
	crashSQL = "(type = 'exception' AND fatal != 0)"
	anrSQL   = "(type = 'anr')"
)

// SessionBuckets counts sessions per version and bucket; see sinks.Analytics.
func (s *Store) SessionBuckets(ctx context.Context, f *model.EventFilter, by model.PlotTimeGroup) ([]model.SessionBucket, error) {
	var q query
	q.sql("SELECT app_version, app_build, " + bucketSQL(by, "b_") + " AS bucket, uniqExact(session_id)," +
		" uniqExactIf(session_id, " + crashSQL + "), uniqExactIf(session_id, " + anrSQL + ") FROM events WHERE ")
	eventFilter(&q, f)
	q.sql(" GROUP BY app_version, app_build, bucket")
	rows, err := s.conn.Query(ctx, q.String(), q.args...)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: session buckets of app %s: %w", f.App, err)
	}
	defer rows.Close()
	var out []model.SessionBucket
	for rows.Next() {
		var b model.SessionBucket
		if err := rows.Scan(&b.Version.Name, &b.Version.Code, &b.Bucket, &b.Sessions, &b.Crashed, &b.WithANR); err != nil {
			return nil, fmt.Errorf("clickhouse: session buckets of app %s: %w", f.App, err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("clickhouse: session buckets of app %s: %w", f.App, err)
	}
	return out, nil
}

// Metrics fills the store's part of model.MetricsInput; see sinks.Analytics. Each side's
// session counts are distinct sessions with an event of the side's versions, and of those the
// sessions with a crash or ANR event of those versions: model.MetricsInput.AddSession per
// session, as counts.
func (s *Store) Metrics(ctx context.Context, app uuid.UUID, from, to int64, sel *model.AppVersion) (model.MetricsInput, error) {
	var in model.MetricsInput
	selSQL, selArgs := "1", []any(nil)
	if sel != nil {
		selSQL, selArgs = "(app_version = ? AND app_build = ?)", []any{sel.Name, sel.Code}
	}
	side := func(q *query, cond string) {
		for _, flag := range [...]string{"1", crashSQL, crashSQL + " AND foreground != 0", anrSQL, anrSQL + " AND foreground != 0"} {
			q.sql(", uniqExactIf(session_id, "+cond+" AND "+flag+")", selArgs...)
		}
	}
	var q query
	q.sql("SELECT uniqExact(session_id)")
	side(&q, selSQL)
	side(&q, "NOT "+selSQL)
	q.sql(" FROM events WHERE app_id = toUUID(?)", app)
	timeWindow(&q, from, to)
	S, O := &in.Selected, &in.Others
	err := s.conn.QueryRow(ctx, q.String(), q.args...).Scan(&in.AllSessions,
		&S.Sessions, &S.Crashed, &S.CrashedForeground, &S.ANR, &S.ANRForeground,
		&O.Sessions, &O.Crashed, &O.CrashedForeground, &O.ANR, &O.ANRForeground)
	if err != nil {
		return in, fmt.Errorf("clickhouse: metrics of app %s: %w", app, err)
	}

	// Launches: one row per event id, then count and quantileExact per side and kind.
	q = query{}
	q.sql("SELECT selected, kind, count(), quantileExact(0.95)(ms) FROM (SELECT any(toUInt8("+selSQL+")) AS selected,"+
		" any(launch_kind) AS kind, any(launch_ms) AS ms FROM events WHERE app_id = toUUID(?)", append(selArgs, app)...)
	timeWindow(&q, from, to)
	q.sql(" AND launch_kind IN (?, ?, ?) GROUP BY id) GROUP BY selected, kind", model.LaunchCold, model.LaunchWarm, model.LaunchHot)
	rows, err := s.conn.Query(ctx, q.String(), q.args...)
	if err != nil {
		return in, fmt.Errorf("clickhouse: launches of app %s: %w", app, err)
	}
	defer rows.Close()
	for rows.Next() {
		var selected uint8
		var kind string
		var sum model.LaunchSummary
		if err := rows.Scan(&selected, &kind, &sum.Count, &sum.P95); err != nil {
			return in, fmt.Errorf("clickhouse: launches of app %s: %w", app, err)
		}
		l := &in.OthersLaunch
		if selected != 0 {
			l = &in.SelectedLaunch
		}
		switch kind {
		case model.LaunchCold:
			l.Cold = sum
		case model.LaunchWarm:
			l.Warm = sum
		case model.LaunchHot:
			l.Hot = sum
		}
	}
	if err := rows.Err(); err != nil {
		return in, fmt.Errorf("clickhouse: launches of app %s: %w", app, err)
	}
	return in, nil
}

// FilterValues lists the distinct attribute values of the app's events; see sinks.Analytics.
// Each list is one distinct query; sorting happens here, in Go's byte order.
func (s *Store) FilterValues(ctx context.Context, app uuid.UUID, class model.IssueClass) (model.FilterValues, error) {
	var fv model.FilterValues
	where := func(q *query) {
		q.sql(" FROM events WHERE app_id = toUUID(?)", app)
		if class != 0 {
			q.sql(" AND " + issueRowsSQL + " AND " + classSQL + " = " + strconv.Itoa(int(class)))
		}
	}
	fail := func(what string, err error) (model.FilterValues, error) {
		return model.FilterValues{}, fmt.Errorf("clickhouse: filter values (%s) of app %s: %w", what, app, err)
	}

	// Versions with their first-seen time.
	var q query
	q.sql("SELECT app_version, app_build, min(timestamp)")
	where(&q)
	q.sql(" AND (app_version != '' OR app_build != '') GROUP BY app_version, app_build")
	type seen struct {
		v     model.AppVersion
		first int64
	}
	var versions []seen
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var v seen
		if err := scan(&v.v.Name, &v.v.Code, &v.first); err != nil {
			return err
		}
		versions = append(versions, v)
		return nil
	})
	if err != nil {
		return fail("versions", err)
	}
	slices.SortFunc(versions, func(a, b seen) int {
		if a.first != b.first {
			return -cmpInt(a.first, b.first)
		}
		if c := strings.Compare(a.v.Name, b.v.Name); c != 0 {
			return -c
		}
		return -strings.Compare(a.v.Code, b.v.Code)
	})
	for _, v := range versions {
		fv.Versions = append(fv.Versions, v.v)
	}

	// OS versions.
	q = query{}
	q.sql("SELECT DISTINCT os_name, os_version")
	where(&q)
	q.sql(" AND (os_name != '' OR os_version != '')")
	err = s.each(ctx, &q, func(scan func(...any) error) error {
		var o model.OSVersion
		if err := scan(&o.Name, &o.Version); err != nil {
			return err
		}
		fv.OSVersions = append(fv.OSVersions, o)
		return nil
	})
	if err != nil {
		return fail("os versions", err)
	}
	slices.SortFunc(fv.OSVersions, func(a, b model.OSVersion) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})

	// The single-column lists, in one scan.
	lists := [...]*[]string{&fv.DeviceNames, &fv.DeviceManufacturers, &fv.Locales,
		&fv.NetworkProviders, &fv.NetworkTypes, &fv.NetworkGenerations}
	q = query{}
	q.sql("SELECT groupUniqArray(device_name), groupUniqArray(device_manufacturer), groupUniqArray(device_locale)," +
		" groupUniqArray(network_provider), groupUniqArray(network_type), groupUniqArray(network_generation)")
	where(&q)
	err = s.each(ctx, &q, func(scan func(...any) error) error {
		ptrs := make([]any, len(lists))
		for i, l := range lists {
			ptrs[i] = l
		}
		return scan(ptrs...)
	})
	if err != nil {
		return fail("attributes", err)
	}
	for _, l := range lists {
		*l = slices.DeleteFunc(*l, func(v string) bool { return v == "" })
		slices.Sort(*l)
		if len(*l) == 0 {
			*l = nil
		}
	}

	// User-defined keys and types.
	// ARRAY JOIN comes before WHERE.
	q = query{}
	q.sql("SELECT DISTINCT k, t FROM events ARRAY JOIN ud_keys AS k, ud_types AS t WHERE app_id = toUUID(?)", app)
	if class != 0 {
		q.sql(" AND " + issueRowsSQL + " AND " + classSQL + " = " + strconv.Itoa(int(class)))
	}
	q.sql(" AND k != ''")
	err = s.each(ctx, &q, func(scan func(...any) error) error {
		var k model.UDKey
		var t uint8
		if err := scan(&k.Key, &t); err != nil {
			return err
		}
		k.Type = model.UDType(t).String()
		fv.UDKeys = append(fv.UDKeys, k)
		return nil
	})
	if err != nil {
		return fail("user-defined keys", err)
	}
	slices.SortFunc(fv.UDKeys, func(a, b model.UDKey) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	fv.UDKeys = slices.Compact(fv.UDKeys) // two unknown type codes have one name
	return fv, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// each runs q and calls fn for every row with the row's Scan.
func (s *Store) each(ctx context.Context, q *query, fn func(scan func(...any) error) error) error {
	rows, err := s.conn.Query(ctx, q.String(), q.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// walkSQL selects walk events: screen events, and crash and ANR events with a group.
const walkSQL = "(screen != '' OR " + issueRowsSQL + " AND " + classSQL + " IN (1, 2))"

// SessionWalks streams the walk events of the selected sessions; see sinks.Analytics.
//
// One query: the sessions chosen by a subquery over the window, and of them every walk event
// (at any time), plus the events that chose them, ordered by session, timestamp and id, so each
// session's rows arrive together and a replayed row right after its first copy.
func (s *Store) SessionWalks(ctx context.Context, wq *model.WalkQuery, fn func(session uuid.UUID, events []model.WalkEvent) error) error {
	selSQL, selArgs := walkSQL, []any(nil)
	if wq.GroupID != "" {
		selSQL = "(" + issueRowsSQL + " AND group_id = ? AND " + classSQL + " = " + strconv.Itoa(int(wq.Class)) + ")"
		selArgs = []any{wq.GroupID}
	}
	var q query
	q.sql("SELECT session_id, timestamp, "+idSQL+" AS sid, app_version, app_build, screen, group_id,"+
		" toUInt8("+classSQL+") AS class, issue_type, issue_file, toUInt8("+walkSQL+") AS walk"+
		" FROM events WHERE app_id = toUUID(?) AND (", wq.App)
	q.sql(walkSQL + " OR ")
	q.sql(selSQL, selArgs...)
	q.sql(") AND session_id IN (SELECT session_id FROM events WHERE app_id = toUUID(?)", wq.App)
	timeWindow(&q, wq.From, wq.To)
	q.sql(" AND ")
	q.sql(selSQL, selArgs...)
	q.sql(") ORDER BY session_id, timestamp, sid")
	rows, err := s.conn.Query(ctx, q.String(), q.args...)
	if err != nil {
		return fmt.Errorf("clickhouse: session walks of app %s: %w", wq.App, err)
	}
	defer rows.Close()
	var (
		cur     uuid.UUID
		have    bool
		lastID  string
		events  []model.WalkEvent
		session uuid.UUID
		e       model.WalkEvent
		sid     string
		class   uint8
		walk    uint8
		d       model.IssueDisplay
	)
	flush := func() error {
		if !have {
			return nil
		}
		err := fn(cur, events)
		events = events[:0]
		return err
	}
	for rows.Next() {
		if err := rows.Scan(&session, &e.Timestamp, &sid, &e.Version.Name, &e.Version.Code, &e.Screen,
			&e.GroupID, &class, &d.Type, &d.FileName, &walk); err != nil {
			return fmt.Errorf("clickhouse: session walks of app %s: %w", wq.App, err)
		}
		if !have || session != cur {
			if err := flush(); err != nil {
				return err
			}
			cur, have, lastID = session, true, ""
		}
		if walk == 0 || sid == lastID { // a selecting event only, or a replayed copy
			continue
		}
		lastID = sid
		e.Class, e.Title = 0, ""
		if c := model.IssueClass(class); c == model.ClassCrash || c == model.ClassANR {
			e.Class, e.Title = c, d.Title()
		} else {
			e.GroupID = ""
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("clickhouse: session walks of app %s: %w", wq.App, err)
	}
	return flush()
}

// PathSessions returns the recent sessions' events up to the issue; see sinks.Analytics. Three
// steps: the n sessions by their latest event of the group and class, the keys of each
// session's last steps events up to it, then those events whole.
func (s *Store) PathSessions(ctx context.Context, app uuid.UUID, class model.IssueClass, groupID string, n, steps int) ([][]model.Event, error) {
	if n <= 0 || steps <= 0 {
		return nil, nil
	}
	fail := func(err error) ([][]model.Event, error) {
		return nil, fmt.Errorf("clickhouse: path sessions of group %q of app %s: %w", groupID, app, err)
	}
	var q query
	q.sql("SELECT session_id, max(tuple(timestamp, "+idSQL+")) AS last FROM events WHERE app_id = toUUID(?) AND "+
		issueRowsSQL+" AND group_id = ? AND "+classSQL+" = "+strconv.Itoa(int(class))+
		" GROUP BY session_id ORDER BY last DESC LIMIT "+strconv.Itoa(n), app, groupID)
	type session struct {
		id   uuid.UUID
		last []any
	}
	var sessions []session
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var ss session
		if err := scan(&ss.id, &ss.last); err != nil {
			return err
		}
		sessions = append(sessions, ss)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	if len(sessions) == 0 {
		return [][]model.Event{}, nil
	}
	// Each session's bound, looked up per row with transform().
	// Times go as text: an array literal of negative and large positive numbers has no
	// common type in ClickHouse.
	sids := make([]string, len(sessions))
	lastTS := make([]string, len(sessions))
	lastID := make([]string, len(sessions))
	index := make(map[uuid.UUID]int, len(sessions))
	for i, ss := range sessions {
		ts, ok1 := ss.last[0].(int64)
		id, ok2 := ss.last[1].(string)
		if len(ss.last) != 2 || !ok1 || !ok2 {
			return fail(fmt.Errorf("latest event: unexpected fields %v", ss.last))
		}
		sids[i], lastTS[i], lastID[i] = ss.id.String(), strconv.FormatInt(ts, 10), id
		index[ss.id] = i
	}
	q = query{}
	q.sql("SELECT timestamp, sid FROM (SELECT DISTINCT session_id, timestamp, "+idSQL+" AS sid FROM events"+
		" WHERE app_id = toUUID(?) AND session_id IN (", app)
	list(&q, sids)
	q.sql(") AND type NOT IN ('cpu_usage', 'memory_usage')"+
		" AND (timestamp, sid) <= (toInt64(arrayElement(?, indexOf(?, toString(session_id)))), arrayElement(?, indexOf(?, toString(session_id))))",
		lastTS, sids, lastID, sids)
	q.sql(") ORDER BY session_id, timestamp DESC, sid DESC LIMIT " + strconv.Itoa(steps) + " BY session_id")
	keys, err := s.eventKeys(ctx, &q)
	if err != nil {
		return fail(err)
	}
	events, err := s.eventsByKey(ctx, app, keys)
	if err != nil {
		return fail(err)
	}
	out := make([][]model.Event, len(sessions))
	for i := range events {
		j := index[events[i].SessionID]
		out[j] = append(out[j], events[i])
	}
	for _, evs := range out {
		slices.SortFunc(evs, func(a, b model.Event) int { return compareKey(&a, &b) })
	}
	return out, nil
}
