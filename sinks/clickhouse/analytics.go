package clickhouse

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/ext"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Analytics: every method aggregates in ClickHouse and reads back aggregates, or pages of rows
// picked by key first and fetched whole after (so that the wide columns of rows that are not
// returned are never read).
//
// Replays: a row written twice is two physical rows until a merge collapses them, and the two
// are the same event (same id, same values). Distinct counts (sessions, values) and max are
// unaffected; counts of events count distinct ids, and the rest dedupe by id (GROUP BY id,
// DISTINCT, or in Go). FINAL is not used: measured on 18.16 it costs more than counting
// distinct ids.
//
// Distinct UUIDs are counted as text (uniqExact(toString(x))): uniqExact of the UUID type hashes
// only its first 8 bytes in 18.16, which makes it quadratic on ids that share them (measured:
// 100k ids with a common first half take 11 s, as text 0.04 s).

var _ sinks.Analytics = (*Store)(nil)

// distinctSQL counts the distinct values of a UUID column (see above).
func distinctSQL(col string) string { return "uniqExact(toString(" + col + "))" }

func distinctIfSQL(col, cond string) string {
	return "uniqExactIf(toString(" + col + "), " + cond + ")"
}

// cellKey identifies an issue cell.
type cellKey struct {
	group  string
	class  model.IssueClass
	v      model.AppVersion
	bucket int64
}

// IssueCells aggregates the matching issue events per group, class, version and bucket; see
// sinks.Analytics.
//
// Two queries: the cells with their count and latest timestamp, then the rows at those
// timestamps, of which each cell takes its own with the greatest id (byte order) for LastID and
// the display. A max over a (timestamp, id, display) tuple does it in one pass, but 18.16
// compares tuples as generic values: measured, it costs more than the whole second query.
func (s *Store) IssueCells(ctx context.Context, iq *model.IssueQuery, by model.Cells) ([]model.IssueCell, error) {
	fail := func(err error) ([]model.IssueCell, error) {
		return nil, fmt.Errorf("clickhouse: issue cells of app %s: %w", iq.App, err)
	}
	bucket, bucketArgs := "toInt64(0)", []any(nil)
	if by.Bucketed {
		bucket, bucketArgs = bucketsSQL(by.By, "timestamp", "b_")
	}
	keySQL := "group_id, toUInt8(" + classSQL + ") AS class, app_version, app_build, " + bucket + " AS bucket"
	var q query
	q.sql("SELECT "+keySQL+", "+distinctSQL("id")+", min(timestamp), max(timestamp) FROM events WHERE ", bucketArgs...)
	issueFilter(&q, iq)
	q.sql(" GROUP BY group_id, class, app_version, app_build, bucket")
	out := []model.IssueCell{}
	index := map[cellKey]int{}
	latest := map[int64]struct{}{}
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var c model.IssueCell
		var class uint8
		if err := scan(&c.GroupID, &class, &c.Version.Name, &c.Version.Code, &c.Bucket, &c.Count, &c.FirstTime, &c.LastTime); err != nil {
			return err
		}
		c.Class = model.IssueClass(class)
		index[cellKey{c.GroupID, c.Class, c.Version, c.Bucket}] = len(out)
		out = append(out, c)
		latest[c.LastTime] = struct{}{}
		return nil
	})
	if err != nil || len(out) == 0 {
		if err != nil {
			return fail(err)
		}
		return out, nil
	}

	// The latest rows: those of the filter at one of the cells' latest timestamps. The set of
	// timestamps goes as an external table (no limit on the query's length), and PREWHERE reads
	// the display columns only of the rows in it.
	times, err := ext.NewTable("latest", ext.Column("ts", "Int64"))
	if err != nil {
		return fail(err)
	}
	for ts := range latest {
		if err := times.Append(ts); err != nil {
			return fail(err)
		}
	}
	q = query{}
	q.sql("SELECT "+keySQL+", timestamp, id, issue_type, issue_message, issue_method, issue_file, issue_line, severity"+
		" FROM events PREWHERE timestamp IN latest WHERE ", bucketArgs...)
	issueFilter(&q, iq)
	found := make([]bool, len(out))
	err = s.each(ch.Context(ctx, ch.WithExternalTable(times)), &q, func(scan func(...any) error) error {
		var k cellKey
		var class uint8
		var ts int64
		var id uuid.UUID
		var d model.IssueDisplay
		if err := scan(&k.group, &class, &k.v.Name, &k.v.Code, &k.bucket, &ts, &id, &d.Type, &d.Message,
			&d.MethodName, &d.FileName, &d.LineNumber, &d.Severity); err != nil {
			return err
		}
		k.class = model.IssueClass(class)
		i, ok := index[k]
		if !ok || out[i].LastTime != ts {
			return nil // another cell's latest time
		}
		c := &out[i]
		if !found[i] || bytes.Compare(id[:], c.LastID[:]) > 0 {
			c.LastID, c.Last, found[i] = id, d, true
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	for i, ok := range found {
		if !ok { // its latest row was deleted (retention) between the two queries
			return fail(fmt.Errorf("the latest event of group %q at %d is gone; try again", out[i].GroupID, out[i].LastTime))
		}
	}
	return out, nil
}

// IssueEvents returns a page of the matching issue events in the instance order; see
// sinks.Analytics. The page's keys are picked first from the key columns only, then its rows
// are read whole.
func (s *Store) IssueEvents(ctx context.Context, iq *model.IssueQuery, page model.EventPage) ([]model.Event, error) {
	if page.Limit < 1 {
		return nil, fmt.Errorf("clickhouse: issue events: %w: limit %d, want at least 1", sinks.ErrInvalid, page.Limit)
	}
	keys, err := s.pageKeys(ctx, iq, page)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: issue events of app %s: %w", iq.App, err)
	}
	events, err := s.eventsByKey(ctx, iq.App, keys)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: issue events of app %s: %w", iq.App, err)
	}
	if len(events) != len(keys) {
		return nil, fmt.Errorf("clickhouse: issue events of app %s: %d of the page's %d events are gone; try again", iq.App, len(keys)-len(events), len(keys))
	}
	slices.SortFunc(events, func(a, b model.Event) int { return -compareKey(&a, &b) })
	if events == nil {
		events = []model.Event{}
	}
	return events, nil
}

// pageKeys picks the keys of a page, in no order. ClickHouse sorts only by timestamp (a top-m
// sort of Int64 is cheap; sorting by the id as text, the byte order, is not), so the id order
// among equal timestamps is settled here: a query fetches the m rows nearest the key by
// timestamp, at or beyond the key's timestamp; rows at the key's own timestamp that are not
// beyond the key, and copies of replayed rows, are dropped; when the query was cut at m rows,
// the rows at its last timestamp may be incomplete and are dropped too. If fewer than Limit
// rows remain of a cut query, it runs again with a larger m.
func (s *Store) pageKeys(ctx context.Context, iq *model.IssueQuery, page model.EventPage) ([]eventKey, error) {
	k, backward := page.Key, page.Backward && page.Key != nil
	beyond := func(ts int64, id uuid.UUID) bool { // strictly after k in the page's direction
		switch {
		case k == nil:
			return true
		case backward:
			return ts > k.Timestamp || ts == k.Timestamp && bytes.Compare(id[:], k.ID[:]) > 0
		}
		return k.Before(ts, id)
	}
	for m := page.Limit + 16; ; m *= 4 {
		var q query
		q.sql("SELECT timestamp, id FROM events WHERE ")
		issueFilter(&q, iq)
		order := "DESC"
		switch {
		case backward:
			q.sql(" AND timestamp >= ? AND time >= toDateTime(?)", k.Timestamp, dateTime(k.Timestamp))
			order = "ASC"
		case k != nil:
			q.sql(" AND timestamp <= ? AND time <= toDateTime(?)", k.Timestamp, dateTime(k.Timestamp))
		}
		q.sql(" ORDER BY timestamp " + order + " LIMIT " + strconv.Itoa(m))
		var raw []eventKey
		err := s.each(ctx, &q, func(scan func(...any) error) error {
			var r eventKey
			if err := scan(&r.ts, &r.id); err != nil {
				return err
			}
			raw = append(raw, r)
			return nil
		})
		if err != nil {
			return nil, err
		}
		cut := len(raw) == m
		var edge int64
		if cut {
			edge = raw[len(raw)-1].ts
		}
		seen := make(map[uuid.UUID]bool, len(raw))
		keys := raw[:0]
		for _, r := range raw {
			if seen[r.id] || !beyond(r.ts, r.id) || cut && r.ts == edge {
				continue
			}
			seen[r.id] = true
			keys = append(keys, r)
		}
		if cut && len(keys) < page.Limit {
			continue
		}
		slices.SortFunc(keys, func(a, b eventKey) int {
			c := cmp.Compare(a.ts, b.ts)
			if c == 0 {
				c = bytes.Compare(a.id[:], b.id[:])
			}
			if backward {
				return c
			}
			return -c
		})
		return keys[:min(len(keys), page.Limit)], nil
	}
}

// eventKey is an event's position: its time and id.
type eventKey struct {
	ts int64
	id uuid.UUID
}

// eventKeys runs a query whose first two columns are timestamp and the id as text.
func (s *Store) eventKeys(ctx context.Context, q *query) ([]eventKey, error) {
	var keys []eventKey
	err := s.each(ctx, q, func(scan func(...any) error) error {
		var k eventKey
		var sid string
		if err := scan(&k.ts, &sid); err != nil {
			return err
		}
		var err error
		if k.id, err = uuid.Parse(sid); err != nil {
			return fmt.Errorf("event id %q: %w", sid, err)
		}
		keys = append(keys, k)
		return nil
	})
	return keys, err
}

// eventsByKey reads the app's events with the given keys whole, each once, in no order. The
// ids go as an external table, and PREWHERE on them reads the wide columns only of those rows;
// the keys' time range bounds the scan.
func (s *Store) eventsByKey(ctx context.Context, app uuid.UUID, keys []eventKey) ([]model.Event, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	ids, err := ext.NewTable("ids", ext.Column("id", "UUID"))
	if err != nil {
		return nil, err
	}
	lo, hi := keys[0].ts, keys[0].ts
	for _, k := range keys {
		lo, hi = min(lo, k.ts), max(hi, k.ts)
		if err := ids.Append(k.id); err != nil {
			return nil, err
		}
	}
	c := newEventCols(1, 0, 0)
	cols := c.cols()
	var q query
	q.sql("SELECT "+names(cols, false)+" FROM events PREWHERE id IN ids WHERE app_id = toUUID(?)"+
		" AND timestamp >= ? AND timestamp <= ? AND time >= toDateTime(?) AND time <= toDateTime(?)",
		app, lo, hi, dateTime(lo), dateTime(hi))
	out := make([]model.Event, 0, len(keys))
	seen := make(map[uuid.UUID]bool, len(keys))
	ptrs := scanPtrs(cols)
	err = s.each(ch.Context(ctx, ch.WithExternalTable(ids)), &q, func(scan func(...any) error) error {
		if err := scan(ptrs...); err != nil {
			return err
		}
		if !seen[c.id[0]] { // a replayed row's copies are the same event
			seen[c.id[0]] = true
			out = append(out, c.get(0))
		}
		return nil
	})
	return out, err
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
func (s *Store) SessionBuckets(ctx context.Context, f *model.EventFilter, by model.Buckets) ([]model.SessionBucket, error) {
	bucket, bucketArgs := bucketsSQL(by, "timestamp", "b_")
	var q query
	q.sql("SELECT app_version, app_build, "+bucket+" AS bucket, "+distinctSQL("session_id")+", "+
		distinctIfSQL("session_id", crashSQL)+", "+distinctIfSQL("session_id", anrSQL)+" FROM events WHERE ", bucketArgs...)
	eventFilter(&q, f)
	q.sql(" GROUP BY app_version, app_build, bucket")
	out := []model.SessionBucket{}
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var b model.SessionBucket
		if err := scan(&b.Version.Name, &b.Version.Code, &b.Bucket, &b.Sessions, &b.Crashed, &b.WithANR); err != nil {
			return err
		}
		out = append(out, b)
		return nil
	})
	if err != nil {
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
			q.sql(", "+distinctIfSQL("session_id", cond+" AND "+flag), selArgs...)
		}
	}
	var q query
	q.sql("SELECT " + distinctSQL("session_id"))
	side(&q, selSQL)
	side(&q, "NOT "+selSQL)
	q.sql(" FROM events WHERE app_id = toUUID(?)", app)
	timeWindow(&q, from, to)
	S, O := &in.Selected, &in.Others
	err := s.conn.QueryRow(ctx, q.String(), q.args...).Scan(&in.AllSessions,
		&S.Sessions, &S.Crashed, &S.CrashedForeground, &S.ANR, &S.ANRForeground,
		&O.Sessions, &O.Crashed, &O.CrashedForeground, &O.ANR, &O.ANRForeground)
	if err != nil {
		return model.MetricsInput{}, fmt.Errorf("clickhouse: metrics of app %s: %w", app, err)
	}

	// Launches: one row per event id, then count and quantileExact per side and kind.
	q = query{}
	q.sql("SELECT selected, kind, count(), quantileExact(0.95)(ms) FROM (SELECT any(toUInt8("+selSQL+")) AS selected,"+
		" any(launch_kind) AS kind, any(launch_ms) AS ms FROM events WHERE app_id = toUUID(?)", append(selArgs, app)...)
	timeWindow(&q, from, to)
	q.sql(" AND launch_kind IN (?, ?, ?) GROUP BY id) GROUP BY selected, kind", model.LaunchCold, model.LaunchWarm, model.LaunchHot)
	err = s.each(ctx, &q, func(scan func(...any) error) error {
		var selected uint8
		var kind string
		var sum model.LaunchSummary
		if err := scan(&selected, &kind, &sum.Count, &sum.P95); err != nil {
			return err
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
		return nil
	})
	if err != nil {
		return model.MetricsInput{}, fmt.Errorf("clickhouse: launches of app %s: %w", app, err)
	}
	return in, nil
}

// FilterValues lists the distinct attribute values of the app's events; see sinks.Analytics.
// Four queries (versions, OS versions, the other attributes, user-defined keys); the lists are
// sorted here, in Go's byte order.
func (s *Store) FilterValues(ctx context.Context, app uuid.UUID, classes []model.IssueClass) (model.FilterValues, error) {
	var fv model.FilterValues
	in := make([]string, len(classes))
	for i, c := range classes {
		in[i] = strconv.Itoa(int(c))
	}
	classesSQL := ""
	if len(classes) > 0 {
		classesSQL = " AND " + issueRowsSQL + " AND " + classSQL + " IN (" + strings.Join(in, ", ") + ")"
	}
	where := func(q *query) {
		q.sql(" FROM events WHERE app_id = toUUID(?)"+classesSQL, app)
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
			return -cmp.Compare(a.first, b.first)
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
	}

	// User-defined keys and types.
	// ARRAY JOIN comes before WHERE.
	q = query{}
	q.sql("SELECT DISTINCT k, t FROM events ARRAY JOIN ud_keys AS k, ud_types AS t WHERE app_id = toUUID(?)", app)
	q.sql(classesSQL + " AND k != ''")
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
	// Empty lists are empty, not null, in the JSON the dashboard gets (as the other backend).
	for _, l := range lists {
		if *l == nil {
			*l = []string{}
		}
	}
	if fv.Versions == nil {
		fv.Versions = []model.AppVersion{}
	}
	if fv.OSVersions == nil {
		fv.OSVersions = []model.OSVersion{}
	}
	if fv.UDKeys == nil {
		fv.UDKeys = []model.UDKey{}
	}
	return fv, nil
}

// each runs q and calls fn for every row with the row's Scan. When fn or a scan fails, the
// query is cancelled: closing the driver's rows would otherwise read the rest of the result.
func (s *Store) each(ctx context.Context, q *query, fn func(scan func(...any) error) error) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rows, err := s.conn.Query(ctx, q.String(), q.args...)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			cancel()
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}()
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// walkSQL selects walk events: screen events, and crash and ANR events with a group. The types
// that can have either come first: type is second in the sorting key, so ClickHouse skips the
// granules of every other type (samples, gestures, requests: 40 % of a typical app's rows).
var walkSQL = "(type IN ('" + strings.Join(append(slices.Clone(model.ScreenTypes), "exception", "anr"), "', '") + "')" +
	" AND (screen != '' OR group_id != '' AND " + classSQL + " IN (1, 2)))"

// SessionWalks streams the walk events of the selected sessions; see sinks.Analytics.
//
// One query: the sessions chosen by a subquery over the window, and of them every walk event
// (at any time), plus the events that chose them, ordered by session, timestamp and id, so each
// session's rows arrive together and a replayed row right after its first copy.
func (s *Store) SessionWalks(ctx context.Context, wq *model.WalkQuery, fn func(session uuid.UUID, events []model.WalkEvent) error) error {
	return s.sessionWalks(ctx, wq, math.MaxInt64, fn)
}

// sessionWalks is SessionWalks that leaves out the walk events at or after until: the facts of
// a walk before until do not depend on them, and the time bound lets the sorting key skip the
// rows after it.
func (s *Store) sessionWalks(ctx context.Context, wq *model.WalkQuery, until int64, fn func(session uuid.UUID, events []model.WalkEvent) error) error {
	selSQL, selArgs := walkSQL, []any(nil)
	if wq.GroupID != "" {
		selSQL = "(" + issueRowsSQL + " AND group_id = ? AND " + classSQL + " = " + strconv.Itoa(int(wq.Class)) + ")"
		selArgs = []any{wq.GroupID}
	}
	var q query
	q.sql("SELECT session_id, timestamp, "+idSQL+" AS sid, app_version, app_build, screen, group_id,"+
		" toUInt8("+classSQL+") AS class, issue_type, issue_file, toUInt8("+walkSQL+") AS walk"+
		" FROM events WHERE app_id = toUUID(?) AND ", wq.App)
	if until != math.MaxInt64 {
		q.sql("timestamp < ? AND time <= toDateTime(?) AND ", until, dateTime(until))
	}
	q.sql("(" + walkSQL + " OR ")
	q.sql(selSQL, selArgs...)
	q.sql(") AND session_id IN (SELECT session_id FROM events WHERE app_id = toUUID(?)", wq.App)
	timeWindow(&q, wq.From, wq.To)
	q.sql(" AND ")
	q.sql(selSQL, selArgs...)
	q.sql(") ORDER BY session_id, timestamp, sid")
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
		fnErr   error // fn's own error, returned as it is
	)
	flush := func() error {
		if !have {
			return nil
		}
		fnErr = fn(cur, events)
		events = events[:0]
		return fnErr
	}
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		if err := scan(&session, &e.Timestamp, &sid, &e.Version.Name, &e.Version.Code, &e.Screen,
			&e.GroupID, &class, &d.Type, &d.FileName, &walk); err != nil {
			return err
		}
		if !have || session != cur {
			if err := flush(); err != nil {
				return err
			}
			cur, have, lastID = session, true, ""
		}
		if walk == 0 || sid == lastID { // a selecting event only, or a replayed copy
			return nil
		}
		lastID = sid
		e.Class, e.Title = 0, ""
		if c := model.IssueClass(class); c == model.ClassCrash || c == model.ClassANR {
			e.Class, e.Title = c, d.Title()
		} else {
			e.GroupID = ""
		}
		events = append(events, e)
		return nil
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return fmt.Errorf("clickhouse: session walks of app %s: %w", wq.App, err)
	}
	return flush()
}

// PathSessions returns the recent sessions' events up to the issue; see sinks.Analytics. Three
// steps: the n sessions by their latest event of the group and class, the keys of each
// session's last steps events up to it, then those events whole.
func (s *Store) PathSessions(ctx context.Context, app uuid.UUID, class model.IssueClass, groupID string, n, steps int) ([][]model.Event, error) {
	if n <= 0 || steps <= 0 {
		return [][]model.Event{}, nil
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
	// Each session's bound, looked up per row by its position in an array of the sessions.
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
	q.sql(") AND type NOT IN ('cpu_usage', 'memory_usage', 'memory_usage_absolute')"+ // model.IsSample
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
