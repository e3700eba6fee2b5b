package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/eventstest"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// The SQL-specific risks of the analytics queries, each checked against model's Go
// definitions on a real ClickHouse: the ud_expression translation (UDExpr.Eval), bucket starts
// (BucketStart), id order (uuidLess, not ClickHouse's UUID order), replayed rows counted once,
// and every method on a small dataset with every row stored twice against the contract's one
// brute-force reference (eventstest.Reference). The shared conformance suite
// (eventstest.RunAnalytics) covers both backends on its own dataset.

// migrated opens a store on a fresh, migrated database.
func migrated(t testing.TB) *Store {
	t.Helper()
	dsn := sinktest.ClickHouse(t)
	if err := Migrate(ctxT(t), dsn); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return openT(t, dsn)
}

// stopMerges keeps replayed rows as separate physical rows for the rest of the test, so that
// the reads really meet duplicates.
func stopMerges(t testing.TB, s *Store) {
	t.Helper()
	if err := s.conn.Exec(ctxT(t), "SYSTEM STOP MERGES events"); err != nil {
		t.Fatalf("stop merges: %v", err)
	}
}

func physicalRows(t testing.TB, s *Store, app uuid.UUID) uint64 {
	t.Helper()
	var n uint64
	if err := s.conn.QueryRow(ctxT(t), "SELECT count() FROM events WHERE app_id = toUUID(?)", app).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// ---- ud_expression ----

// udRows are the user-defined attributes of the test events: every type, absent keys, a key
// stored with another type, case and non-ASCII text, integer extremes, and floats one or two
// units in the last place apart (which ClickHouse 18.16 parses wrongly).
func udRows() [][]model.UDAttr {
	s := func(k, v string) model.UDAttr { return model.UDAttr{Key: k, Type: model.UDString, Value: v} }
	i := func(k string, v int64) model.UDAttr {
		return model.UDAttr{Key: k, Type: model.UDInt64, Value: strconv.FormatInt(v, 10)}
	}
	f := func(k string, v float64) model.UDAttr {
		return model.UDAttr{Key: k, Type: model.UDFloat64, Value: strconv.FormatFloat(v, 'g', -1, 64)}
	}
	b := func(k string, v bool) model.UDAttr {
		return model.UDAttr{Key: k, Type: model.UDBool, Value: strconv.FormatBool(v)}
	}
	bad := math.Float64frombits(13622389898429969693) // -1.2634751070237294e-14: 18.16 parses it 1 ulp off
	rows := [][]model.UDAttr{
		nil,
		{s("plan", "Pro")},
		{s("plan", "pro"), i("age", 30)},
		{s("plan", "PROFESSIONAL"), i("age", -5), f("score", 1.5), b("beta", true)},
		{s("plan", "Éclair pro"), i("age", math.MaxInt64), f("score", bad), b("beta", false)},
		{s("plan", ""), i("age", math.MinInt64), f("score", math.Nextafter(bad, 0))},
		{s("plan", "free"), s("age", "30"), f("score", math.Nextafter(math.Nextafter(bad, 0), 0))},
		{i("plan", 7), f("score", 0.1), f("x", 0)},
		{s("city", "Zürich"), f("score", math.Nextafter(0.1, 1)), f("x", math.Copysign(0, -1))},
		{s("a", "1"), s("city", "zürich"), f("score", 1e21), i("x", 0)},
		{f("score", 5e-324), s("zz", "%_\\'\"?")},
		{f("score", -1e-300), f("tiny", math.SmallestNonzeroFloat64)},
		{f("score", math.MaxFloat64), i("age", 0)},
		{f("score", 7.078406569534682e+64), i("age", 29)},
	}
	for _, r := range rows { // Event.UserDefined is sorted by key
		sort.Slice(r, func(a, b int) bool { return r[a].Key < r[b].Key })
	}
	return rows
}

// udExprs are expressions over udRows' keys: each operator of each type at and around the
// stored values, absent keys, wrong types, and/or nesting.
func udExprs(t *testing.T) []*model.UDExpr {
	t.Helper()
	bad := math.Float64frombits(13622389898429969693)
	cmp := func(key, typ, op, value string) string {
		return fmt.Sprintf(`{"cmp":{"key":%q,"type":%q,"op":%q,"value":%q}}`, key, typ, op, value)
	}
	var texts []string
	for _, op := range []string{"eq", "neq", "contains", "startsWith"} {
		for _, v := range []string{"pro", "Pro", "PRO", "", "éclair", "Éclair", "zürich", "ZÜRICH", "%_\\'\"?", "_", "fess"} {
			texts = append(texts, cmp("plan", "string", op, v), cmp("city", "string", op, v), cmp("zz", "string", op, v))
		}
		texts = append(texts, cmp("age", "string", op, "30"), cmp("nokey", "string", op, ""))
	}
	for _, op := range []string{"eq", "neq"} {
		texts = append(texts, cmp("beta", "bool", op, "true"), cmp("beta", "bool", op, "false"), cmp("plan", "bool", op, "true"))
	}
	for _, op := range []string{"eq", "neq", "gt", "lt", "gte", "lte"} {
		for _, v := range []string{"30", "29", "-5", "0", "9223372036854775807", "-9223372036854775808", "7"} {
			texts = append(texts, cmp("age", "int64", op, v), cmp("plan", "int64", op, v), cmp("x", "int64", op, v))
		}
		fs := []float64{1.5, 0.1, math.Nextafter(0.1, 1), 0, 1e21, 5e-324, -1e-300, math.MaxFloat64, 7.078406569534682e+64,
			bad, math.Nextafter(bad, 0), math.Nextafter(bad, -1), math.Nextafter(math.Nextafter(bad, 0), 0)}
		for _, v := range fs {
			text := strconv.FormatFloat(v, 'g', -1, 64)
			texts = append(texts, cmp("score", "float64", op, text), cmp("x", "float64", op, text), cmp("tiny", "float64", op, text))
		}
		texts = append(texts, cmp("x", "float64", op, "-0"), cmp("age", "float64", op, "30"))
	}
	texts = append(texts,
		`{"and":[`+cmp("plan", "string", "contains", "pro")+`,`+cmp("age", "int64", "gte", "0")+`]}`,
		`{"or":[`+cmp("plan", "string", "eq", "free")+`,`+cmp("score", "float64", "lt", "0")+`]}`,
		`{"or":[{"and":[`+cmp("beta", "bool", "eq", "true")+`,`+cmp("score", "float64", "gt", "1")+`]},{"and":[`+
			cmp("city", "string", "startsWith", "z")+`,`+cmp("nokey", "int64", "neq", "1")+`]}]}`,
		`{"and":[{"or":[`+cmp("age", "int64", "lt", "0")+`,`+cmp("age", "int64", "gt", "100")+`]},`+cmp("plan", "string", "neq", "x")+`]}`,
	)
	out := make([]*model.UDExpr, len(texts))
	for i, text := range texts {
		x, err := model.ParseUDExpr(text)
		if err != nil || x == nil {
			t.Fatalf("ParseUDExpr(%s) = %v, %v", text, x, err)
		}
		out[i] = x
	}
	return out
}

// checkUDExprSQL checks that the SQL of every expression selects exactly the stored events of
// app that UDExpr.Eval selects (events are all of the app's rows).
func checkUDExprSQL(t *testing.T, s *Store, app uuid.UUID, events []model.Event, exprs []*model.UDExpr) {
	t.Helper()
	const perQuery = 40 // expressions as columns of one query
	for lo := 0; lo < len(exprs); lo += perQuery {
		chunk := exprs[lo:min(lo+perQuery, len(exprs))]
		var q query
		q.sql("SELECT id")
		for _, x := range chunk {
			q.sql(", toUInt8(")
			udExpr(&q, x)
			q.sql(")")
		}
		q.sql(" FROM events WHERE app_id = toUUID(?)", app)
		got := map[uuid.UUID][]uint8{}
		err := s.each(ctxT(t), &q, func(scan func(...any) error) error {
			var id uuid.UUID
			vals := make([]uint8, len(chunk))
			ptrs := []any{&id}
			for i := range vals {
				ptrs = append(ptrs, &vals[i])
			}
			if err := scan(ptrs...); err != nil {
				return err
			}
			got[id] = vals
			return nil
		})
		if err != nil {
			t.Fatalf("query: %v\n%s", err, q.String())
		}
		if len(got) != len(events) {
			t.Fatalf("query returned %d events, want %d", len(got), len(events))
		}
		for j, x := range chunk {
			for i := range events {
				if g, want := got[events[i].ID][j] != 0, x.Eval(events[i].UserDefined); g != want {
					text, _ := x.MarshalJSON()
					t.Errorf("%s on %v: SQL %v, Eval %v", text, events[i].UserDefined, g, want)
				}
			}
		}
	}
}

// The SQL of every expression selects exactly the events Eval selects, on stored rows.
func TestUDExprSQL(t *testing.T) {
	s := migrated(t)
	app := uuid.New()
	rows := udRows()
	events := make([]model.Event, len(rows))
	for i, ud := range rows {
		events[i] = model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "custom",
			Timestamp: int64(i) * 1e9, UserDefined: ud}
	}
	if err := s.WriteEvents(ctxT(t), events); err != nil {
		t.Fatal(err)
	}
	checkUDExprSQL(t, s, app, events, udExprs(t))
	if t.Failed() {
		return
	}
	// Random floats: a constant and its neighbours against stored doubles near it.
	r := rand.New(rand.NewSource(7))
	var ev []model.Event
	var consts []float64
	for i := 0; i < 60; i++ {
		c := math.Float64frombits(r.Uint64())
		if math.IsNaN(c) || math.IsInf(c, 0) {
			continue
		}
		consts = append(consts, c)
		for d, k := c, 0; k < 4; k++ {
			ev = append(ev, model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "float",
				Timestamp: int64(len(ev)), UserDefined: []model.UDAttr{{Key: "f", Type: model.UDFloat64, Value: strconv.FormatFloat(d, 'g', -1, 64)}}})
			d = math.Nextafter(d, math.Inf(1-2*(k%2)))
		}
	}
	if err := s.WriteEvents(ctxT(t), ev); err != nil {
		t.Fatal(err)
	}
	for _, c := range consts {
		for _, op := range []model.UDOp{model.UDOpEq, model.UDOpGt, model.UDOpLte} {
			x := &model.UDExpr{Cmp: &model.UDCmp{Key: "f", Type: model.UDFloat64, Op: op, Float: c,
				Value: strconv.FormatFloat(c, 'g', -1, 64)}}
			var q query
			q.sql("SELECT id FROM events WHERE app_id = toUUID(?) AND type = 'float' AND ", app)
			udExpr(&q, x)
			got := map[uuid.UUID]bool{}
			if err := s.each(ctxT(t), &q, func(scan func(...any) error) error {
				var id uuid.UUID
				err := scan(&id)
				got[id] = true
				return err
			}); err != nil {
				t.Fatal(err)
			}
			for i := range ev {
				if want := x.Eval(ev[i].UserDefined); got[ev[i].ID] != want {
					t.Errorf("%s %s %v on %s: SQL %v, Eval %v", "f", op, c, ev[i].UserDefined[0].Value, got[ev[i].ID], want)
				}
			}
		}
	}
}

// ---- buckets ----

// bucketSQL gives model.BucketStart for every group, on times around month, year and leap day
// boundaries, before 1970 and after 2106 (where DateTime cannot go).
func TestBucketSQL(t *testing.T) {
	s := migrated(t)
	var ts []int64
	for _, d := range []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2023, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC), time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(1900, 2, 28, 1, 2, 3, 4, time.UTC),
		time.Date(2200, 7, 31, 23, 0, 0, 1, time.UTC), time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		for _, off := range []int64{-1, 0, 1} {
			ts = append(ts, d.UnixNano()+off)
		}
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		// Anywhere in the Int64 range, but for BucketStart's: two months from its ends.
		v := r.Int63n(math.MaxInt64 - int64(62*24*time.Hour))
		if i%2 == 0 {
			v = -v
		}
		ts = append(ts, v, v%int64(300*24*time.Hour)) // and within a year of 1970
	}
	for _, g := range []model.PlotTimeGroup{model.PlotMinutes, model.PlotHours, model.PlotDays, model.PlotMonths} {
		var q query
		texts := make([]string, len(ts))
		for i, v := range ts {
			texts[i] = strconv.FormatInt(v, 10)
		}
		q.sql("SELECT timestamp, "+utcBucketSQL(g, "timestamp", "x_")+" FROM (SELECT toInt64(arrayJoin(?)) AS timestamp)", texts)
		n := 0
		err := s.each(ctxT(t), &q, func(scan func(...any) error) error {
			var at, b int64
			if err := scan(&at, &b); err != nil {
				return err
			}
			n++
			if want := model.BucketStart(time.Unix(0, at), g).UnixNano(); b != want {
				t.Errorf("%s bucket of %s: SQL %s, want %s", g, time.Unix(0, at).UTC(), time.Unix(0, b).UTC(), time.Unix(0, want).UTC())
			}
			return nil
		})
		if err != nil || n != len(ts) {
			t.Fatalf("%s: %d rows, %v", g, n, err)
		}
	}
}

// bucketsSQL in a time zone gives model's Buckets.Start, for zones of every kind: without DST
// (+05:30, +05:45, +14), with DST on either side of UTC, with a DST change at midnight (São
// Paulo until 2019), +09:30 and −03:30 with whole-hour DST changes (Adelaide, St John's), a zone
// that skipped a whole day (Apia, 2011-12-30) and one with a two-hour DST change (Troll). Times:
// every 47 minutes and some seconds over 2010–2025, around every offset change of those years
// (an hour, a second and a nanosecond either side), and the ends of the rows ClickHouse
// buckets in the zone, beyond which rows get UTC buckets.
//
// Hours where the clock changes by half an hour (Lord Howe) or at a time that is not a whole
// hour of a fractional-hour offset (Chatham at 02:45 standard time, St John's at 00:01 until
// 2011) differ on 18.16 on those days: its toStartOfHour counts hours elapsed since the local
// midnight where the offset is not whole hours, while model (and current ClickHouse releases)
// cut the wall-clock hour at the change. Those zones are checked for days and months only.
func TestBucketsSQLZones(t *testing.T) {
	s := migrated(t)
	all := []model.PlotTimeGroup{model.PlotMinutes, model.PlotHours, model.PlotDays, model.PlotMonths}
	calendar := []model.PlotTimeGroup{model.PlotDays, model.PlotMonths}
	type zoneCase struct {
		name   string
		from   int // year
		groups []model.PlotTimeGroup
	}
	zones := []zoneCase{
		{"Asia/Kolkata", 2010, all}, {"Asia/Kathmandu", 2010, all}, {"America/New_York", 2010, all},
		{"Europe/Berlin", 2010, all}, {"America/Sao_Paulo", 2010, all}, {"Australia/Adelaide", 2010, all},
		{"America/St_Johns", 2012, all}, {"Pacific/Apia", 2010, all}, {"Antarctica/Troll", 2010, all},
		{"Etc/GMT-14", 2010, all}, {"Australia/Lord_Howe", 2010, calendar}, {"Pacific/Chatham", 2010, calendar},
	}
	to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	edges := []int64{
		time.Date(1971, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(), time.Date(2105, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
	}
	outside := func(ts int64) bool { return ts < edges[0] || ts >= edges[1] }
	for _, zc := range zones {
		z := zc.name
		from := time.Date(zc.from, 1, 1, 0, 0, 0, 0, time.UTC)
		loc, err := time.LoadLocation(z)
		if err != nil {
			t.Fatal(err)
		}
		step := int64(47*time.Minute + 13*time.Second)
		steps := (to.UnixNano() - from.UnixNano()) / step
		var ts []int64
		offset := func(sec int64) int { _, o := time.Unix(sec, 0).In(loc).Zone(); return o }
		for at := from.Unix(); at < to.Unix(); at += 1800 {
			if offset(at) == offset(at+1800) {
				continue
			}
			sec := at + 1
			for offset(sec) == offset(at) {
				sec++
			}
			for _, d := range []time.Duration{-time.Hour, -time.Second, -1, 0, 1, time.Second, time.Hour} {
				ts = append(ts, time.Unix(sec, 0).Add(d).UnixNano())
			}
		}
		for _, e := range edges {
			for _, d := range []time.Duration{-40 * 24 * time.Hour, -1, 0, 1, 40 * 24 * time.Hour} {
				ts = append(ts, e+int64(d))
			}
		}
		ts = append(ts, 0, -1, math.MinInt64, math.MaxInt64)
		texts := make([]string, len(ts))
		for i, v := range ts {
			texts[i] = strconv.FormatInt(v, 10)
		}
		for _, g := range zc.groups {
			b := model.Buckets{Group: g, Loc: loc}
			sql, args := bucketsSQL(b, "timestamp", "x_")
			var q query
			q.sql("SELECT timestamp, "+sql+" FROM (SELECT toInt64(arrayJoin(?)) AS timestamp"+
				" UNION ALL SELECT toInt64(?) + toInt64(number) * toInt64(?) AS timestamp FROM system.numbers LIMIT ?)",
				append(args, texts, from.UnixNano(), step, steps)...)
			n, bad := 0, 0
			err := s.each(ctxT(t), &q, func(scan func(...any) error) error {
				var at, got int64
				if err := scan(&at, &got); err != nil {
					return err
				}
				n++
				var want int64
				if outside(at) {
					want = model.BucketStart(time.Unix(0, at), g).UnixNano()
				} else {
					want = b.Start(time.Unix(0, at)).UnixNano()
				}
				if got != want && bad < 5 {
					bad++
					t.Errorf("%s bucket of %s (%s): SQL %s, want %s", b, time.Unix(0, at).UTC(), time.Unix(0, at).In(loc),
						time.Unix(0, got).In(loc), time.Unix(0, want).In(loc))
				}
				return nil
			})
			if err != nil || n != len(ts)+int(steps) {
				t.Fatalf("%s: %d rows of %d, %v", b, n, len(ts)+int(steps), err)
			}
		}
	}
}

// The zone reaches ClickHouse as a bound string, whatever its name.
func TestBucketsSQLZoneIsBound(t *testing.T) {
	for _, g := range []model.PlotTimeGroup{model.PlotHours, model.PlotDays, model.PlotMonths} {
		b := model.Buckets{Group: g, Loc: time.FixedZone("x') OR 1=1 --", 3600)}
		sql, args := bucketsSQL(b, "timestamp", "x_")
		if strings.Contains(sql, "OR 1=1") || len(args) == 0 || strings.Count(sql, "?") != len(args) {
			t.Errorf("%s: %s with %q", g, sql, args)
		}
		for _, a := range args {
			if a != b.Loc.String() {
				t.Errorf("%s: argument %q", g, a)
			}
		}
	}
	// UTC, and minutes anywhere, need no zone.
	for _, b := range []model.Buckets{{Group: model.PlotDays}, {Group: model.PlotMinutes, Loc: time.FixedZone("x", 3600)}} {
		if sql, args := bucketsSQL(b, "timestamp", "x_"); len(args) != 0 || strings.Contains(sql, "?") {
			t.Errorf("%s: %s with %q", b, sql, args)
		}
	}
}

// ---- the dataset ----

// anaData is a small dataset of two apps: sessions over three months with screens, issues of
// every class (some with tied timestamps), launches, attributes and user-defined attributes.
type anaData struct {
	app, other uuid.UUID
	events     []model.Event // app's
	all        []model.Event // both apps'
	base       int64
	groups     []string
	versions   []model.AppVersion
	ref        *eventstest.Reference // over what anaStore writes
}

// tiedIDs are ids that ClickHouse's UUID order and byte order sort differently: byte order
// puts a first, ClickHouse (on 18.16, second half first) b.
var tiedIDs = [...]uuid.UUID{
	uuid.MustParse("00000000-0000-0001-0000-000000000000"),
	uuid.MustParse("00000000-0000-0000-0000-000000000002"),
	uuid.MustParse("00000000-0000-0000-ffff-000000000001"),
	uuid.MustParse("ffffffff-0000-0000-0000-000000000000"),
}

func newAnaData() *anaData {
	r := rand.New(rand.NewSource(42))
	d := &anaData{app: uuid.New(), other: uuid.New(),
		base:     time.Date(2026, 1, 20, 8, 0, 0, 0, time.UTC).UnixNano(),
		groups:   []string{"g1aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "g2bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "g3cccccccccccccccccccccccccccccc", "g4dddddddddddddddddddddddddddddd"},
		versions: []model.AppVersion{{Name: "1.0", Code: "1"}, {Name: "1.0", Code: "2"}, {Name: "2.0", Code: "3"}, {}, {Name: "2.1"}},
	}
	pick := func(s []string) string { return s[r.Intn(len(s))] }
	newID := func() uuid.UUID {
		var id uuid.UUID
		r.Read(id[:])
		return id
	}
	for _, app := range []uuid.UUID{d.app, d.other} {
		for sess := 0; sess < 24; sess++ {
			sid := newID()
			v := d.versions[r.Intn(len(d.versions))]
			t := d.base + r.Int63n(int64(70*24*time.Hour))
			for k := 0; k < 8+r.Intn(20); k++ {
				if r.Intn(8) == 0 { // an app update within the session
					v = d.versions[r.Intn(len(d.versions))]
				}
				t += r.Int63n(int64(3*time.Hour)) + 1
				e := model.Event{ID: newID(), AppID: app, SessionID: sid, Timestamp: t}
				e.Attribute = model.Attributes{AppVersion: v.Name, AppBuild: v.Code,
					DeviceName: pick([]string{"pixel", "iphone", ""}), DeviceManufacturer: pick([]string{"google", "apple"}),
					DeviceLocale: pick([]string{"en_US", "de_CH", ""}), NetworkProvider: pick([]string{"swisscom", "", "att"}),
					NetworkType: pick([]string{"wifi", "cellular"}), NetworkGeneration: pick([]string{"4g", "5g", ""}),
					OSName: pick([]string{"android", "ios"}), OSVersion: pick([]string{"14", "17.2", ""}), ThreadName: "main"}
				if r.Intn(2) == 0 {
					e.UserDefined = []model.UDAttr{{Key: "plan", Type: model.UDString, Value: pick([]string{"Pro", "free"})}}
					if r.Intn(2) == 0 {
						e.UserDefined = append(e.UserDefined, model.UDAttr{Key: "tier", Type: model.UDInt64, Value: strconv.Itoa(r.Intn(5))})
					}
				}
				switch x := r.Intn(12); {
				case x < 3:
					e.Type = "screen_view"
					e.Facts.Screen = pick([]string{"Home", "Cart", "Pay"})
				case x < 4:
					e.Type = "lifecycle_activity"
					if r.Intn(2) == 0 {
						e.Facts.Screen = pick([]string{"MainActivity", "Home"})
					}
				case x < 6:
					e.Type = "exception"
					if r.Intn(6) > 0 {
						g := r.Intn(len(d.groups))
						e.Facts.GroupID = d.groups[g]
						e.Facts.Fatal = r.Intn(2) == 0
						e.Facts.Foreground = r.Intn(2) == 0
						sev := "error"
						if e.Facts.Fatal {
							sev = "fatal"
						}
						e.Facts.Issue = model.IssueDisplay{Type: "Err" + strconv.Itoa(g), Message: "m" + strconv.Itoa(r.Intn(50)),
							MethodName: "run", FileName: pick([]string{"A.kt", ""}), LineNumber: int32(r.Intn(300)), Severity: sev}
					}
				case x < 7:
					e.Type = "anr"
					e.Facts.Foreground = r.Intn(2) == 0
					if r.Intn(5) > 0 {
						e.Facts.GroupID = d.groups[r.Intn(2)]
						e.Facts.Issue = model.IssueDisplay{Type: "ANR", Message: "blocked", FileName: "Main.kt"}
					}
				case x < 9:
					e.Type = pick([]string{"cold_launch", "warm_launch", "hot_launch"})
					if r.Intn(5) > 0 {
						e.Facts.LaunchKind = strings.TrimSuffix(e.Type, "_launch")
						e.Facts.LaunchMs = float64(50 + r.Intn(2000))
					}
				case x < 10:
					e.Type = pick([]string{"cpu_usage", "memory_usage", "memory_usage_absolute"})
				default:
					e.Type = "custom"
				}
				d.all = append(d.all, e)
			}
		}
		// Tied issue events: one session, one timestamp, ids whose orders disagree.
		sid := newID()
		for i, id := range tiedIDs {
			e := model.Event{ID: id, AppID: app, SessionID: sid, Type: "exception", Timestamp: d.base + int64(40*24*time.Hour),
				Attribute: model.Attributes{AppVersion: "1.0", AppBuild: "1"},
				Facts:     model.EventFacts{GroupID: d.groups[0], Fatal: true, Issue: model.IssueDisplay{Type: "Tie" + strconv.Itoa(i), Severity: "fatal"}}}
			d.all = append(d.all, e)
		}
	}
	for _, e := range d.all {
		if e.AppID == d.app {
			d.events = append(d.events, e)
		}
	}
	d.ref = eventstest.NewReference(slices.Concat(d.all, d.all))
	return d
}

// anaStore writes the dataset twice (the second time as a replay in separate inserts), with
// merges stopped so that every read meets each row twice.
func anaStore(t *testing.T) (*Store, *anaData) {
	t.Helper()
	s := migrated(t)
	stopMerges(t, s)
	d := newAnaData()
	for i := 0; i < 2; i++ {
		if err := s.WriteEvents(ctxT(t), d.all); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := physicalRows(t, s, d.app), uint64(2*len(d.events)); got != want {
		t.Fatalf("%d physical rows, want %d: the replay is not stored twice", got, want)
	}
	return s, d
}

func queries(d *anaData) map[string]*model.IssueQuery {
	full := model.EventFilter{App: d.app, From: d.base, To: d.base + int64(90*24*time.Hour)}
	mid := full
	mid.From, mid.To = d.base+int64(20*24*time.Hour), d.base+int64(40*24*time.Hour)+1 // the tied events sit on To-1
	ud, err := model.ParseUDExpr(`{"or":[{"cmp":{"key":"plan","type":"string","op":"startsWith","value":"PR"}},{"cmp":{"key":"tier","type":"int64","op":"gte","value":"3"}}]}`)
	if err != nil {
		panic(err)
	}
	withUD := full
	withUD.UD = ud
	attrs := full
	attrs.DeviceNames, attrs.Locales, attrs.NetworkGenerations = []string{"pixel", ""}, []string{"de_CH"}, []string{"5g", "4g"}
	versions := mid
	versions.Versions = []model.AppVersion{d.versions[0], d.versions[3], {Name: "9.9", Code: "9"}}
	country := full
	country.Countries = []string{"CH"}
	return map[string]*model.IssueQuery{
		"all":         {EventFilter: full},
		"window":      {EventFilter: mid},
		"crashes":     {EventFilter: full, Classes: []model.IssueClass{model.ClassCrash}},
		"anr+handled": {EventFilter: full, Classes: []model.IssueClass{model.ClassANR, model.ClassHandled}},
		"group":       {EventFilter: full, GroupID: d.groups[0]},
		"severity":    {EventFilter: full, Severities: []string{"error"}},
		"ud":          {EventFilter: withUD},
		"attributes":  {EventFilter: attrs, Classes: []model.IssueClass{model.ClassCrash, model.ClassANR}},
		"versions":    {EventFilter: versions},
		"country":     {EventFilter: country},
		"empty":       {EventFilter: model.EventFilter{App: d.app, From: full.From, To: full.From}},
	}
}

func TestAnalyticsIssueCells(t *testing.T) {
	s, d := anaStore(t)
	shapes := []model.Cells{{}, {Bucketed: true, By: model.Buckets{Group: model.PlotMinutes}}, {Bucketed: true, By: model.Buckets{Group: model.PlotHours}},
		{Bucketed: true, By: model.Buckets{Group: model.PlotDays}}, {Bucketed: true, By: model.Buckets{Group: model.PlotMonths}}}
	for name, q := range queries(d) {
		for _, by := range shapes {
			got, err := s.IssueCells(ctxT(t), q, by)
			if err != nil {
				t.Fatalf("%s %+v: %v", name, by, err)
			}
			eventstest.SortCells(got)
			want := d.ref.IssueCells(q, by)
			if name != "country" && name != "empty" && len(want) == 0 {
				t.Fatalf("%s: no cells expected: no test", name)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %+v:\n got %+v\nwant %+v", name, by, got, want)
			}
		}
	}
	// The tied events: the latest is the greatest id in byte order, not in ClickHouse's.
	tie := model.IssueQuery{EventFilter: model.EventFilter{App: d.app, From: d.base, To: d.base + int64(90*24*time.Hour)}, GroupID: d.groups[0]}
	cells, err := s.IssueCells(ctxT(t), &tie, model.Cells{Bucketed: true, By: model.Buckets{Group: model.PlotMinutes}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cells {
		if c.LastTime == d.base+int64(40*24*time.Hour) {
			found = true
			if c.LastID != tiedIDs[3] || c.Last.Type != "Tie3" || c.Count != uint64(len(tiedIDs)) {
				t.Errorf("tied cell: last %s %q, count %d; want %s Tie3, %d", c.LastID, c.Last.Type, c.Count, tiedIDs[3], len(tiedIDs))
			}
		}
	}
	if !found {
		t.Error("no cell of the tied events")
	}
}

func TestAnalyticsIssueEvents(t *testing.T) {
	s, d := anaStore(t)
	for name, q := range queries(d) {
		want := d.ref.IssueList(q)
		limits := []int{3, 1000}
		if name == "all" || name == "window" { // one event a page: slow, so on two queries only
			limits = append(limits, 1)
		}
		for _, limit := range limits {
			// Forward through every page, then backward pages from older keys.
			var got []model.Event
			page := model.EventPage{Limit: limit}
			for {
				evs, err := s.IssueEvents(ctxT(t), q, page)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if len(evs) > limit {
					t.Fatalf("%s: page of %d events, limit %d", name, len(evs), limit)
				}
				got = append(got, evs...)
				if len(evs) < limit || len(got) > len(want) {
					break
				}
				last := evs[len(evs)-1]
				page.Key = &model.EventKey{Timestamp: last.Timestamp, ID: last.ID}
			}
			if d := eventsDiff(got, want); d != "" {
				t.Fatalf("%s, limit %d, forward: %s", name, limit, d)
			}
			if len(want) == 0 {
				continue
			}
			// Backward pages from the oldest event: each the limit events just newer.
			for i := len(want) - 1; i >= 0; i -= 7 {
				k := &model.EventKey{Timestamp: want[i].Timestamp, ID: want[i].ID}
				evs, err := s.IssueEvents(ctxT(t), q, model.EventPage{Key: k, Limit: limit, Backward: true})
				if err != nil {
					t.Fatal(err)
				}
				if d := eventsDiff(evs, want[max(0, i-limit):i]); d != "" {
					t.Fatalf("%s, limit %d, backward from %d: %s", name, limit, i, d)
				}
			}
		}
	}
}

// eventsDiff compares events in order by id, and the whole of each.
func eventsDiff(got, want []model.Event) string {
	ids := func(evs []model.Event) string {
		var s []string
		for _, e := range evs {
			s = append(s, fmt.Sprintf("%d/%s", e.Timestamp, e.ID))
		}
		return strings.Join(s, " ")
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d events, want %d\n got %s\nwant %s", len(got), len(want), ids(got), ids(want))
	}
	for i := range got {
		if !reflect.DeepEqual(normEvent(got[i]), normEvent(want[i])) {
			return fmt.Sprintf("event %d\n got %+v\nwant %+v\n(order got %s\nwant %s)", i, got[i], want[i], ids(got), ids(want))
		}
	}
	return ""
}

func TestAnalyticsSessionBuckets(t *testing.T) {
	s, d := anaStore(t)
	for name, q := range queries(d) {
		f := &q.EventFilter
		for _, g := range []model.PlotTimeGroup{model.PlotMinutes, model.PlotHours, model.PlotDays, model.PlotMonths} {
			for _, zone := range []string{"", "Asia/Kolkata", "America/New_York"} {
				by, err := model.ParseBuckets(g.String(), zone)
				if err != nil {
					t.Fatal(err)
				}
				want := d.ref.SessionBuckets(f, by)
				got, err := s.SessionBuckets(ctxT(t), f, by)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !reflect.DeepEqual(eventstest.SortBuckets(got), want) {
					t.Errorf("%s by %s:\n got %+v\nwant %+v", name, by, got, want)
				}
			}
		}
	}
}

func TestAnalyticsMetrics(t *testing.T) {
	s, d := anaStore(t)
	from, to := d.base+int64(10*24*time.Hour), d.base+int64(60*24*time.Hour)
	sels := []*model.AppVersion{nil, &d.versions[0], &d.versions[3], {Name: "9.9", Code: "9"}}
	for _, sel := range sels {
		want := d.ref.Metrics(d.app, from, to, sel)
		got, err := s.Metrics(ctxT(t), d.app, from, to, sel)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("selected %v:\n got %+v\nwant %+v", sel, got, want)
		}
		if want.Selected.Crashed == 0 && sel == nil || want.SelectedLaunch.Cold.Count == 0 && sel == nil {
			t.Errorf("selected %v: no crash or launch in the window: no test", sel)
		}
	}
}

func TestAnalyticsFilterValues(t *testing.T) {
	s, d := anaStore(t)
	for _, class := range eventstest.FilterClassSets {
		want := d.ref.FilterValues(d.app, class)
		got, err := s.FilterValues(ctxT(t), d.app, class)
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Versions) < 2 || len(want.UDKeys) == 0 {
			t.Fatalf("classes %v: too few values to test", class)
		}
		if !reflect.DeepEqual(eventstest.NormFilterValues(got), want) {
			t.Errorf("classes %v:\n got %+v\nwant %+v", class, got, want)
		}
	}
}

func TestAnalyticsSessionWalks(t *testing.T) {
	s, d := anaStore(t)
	from, to := d.base+int64(5*24*time.Hour), d.base+int64(50*24*time.Hour)
	qs := []model.WalkQuery{
		{App: d.app, From: from, To: to},
		{App: d.app, From: from, To: to, GroupID: d.groups[0], Class: model.ClassCrash},
		{App: d.app, From: from, To: to, GroupID: d.groups[1], Class: model.ClassANR},
		{App: d.app, From: from, To: to, GroupID: d.groups[2], Class: model.ClassHandled},
		{App: d.app, From: from, To: to, GroupID: d.groups[0]}, // class 0: no issue has it
		{App: d.app, From: to, To: from},
	}
	for _, q := range qs {
		want := d.ref.SessionWalks(&q)
		got := map[uuid.UUID][]model.WalkEvent{}
		err := s.SessionWalks(ctxT(t), &q, func(session uuid.UUID, events []model.WalkEvent) error {
			if _, ok := got[session]; ok {
				return fmt.Errorf("session %s twice", session)
			}
			got[session] = slices.Clone(events)
			if got[session] == nil {
				got[session] = []model.WalkEvent{}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if q.From < q.To && q.Class != 0 && len(want) == 0 {
			t.Fatalf("%+v: no session expected: no test", q)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v:\n got %v\nwant %v", q, got, want)
		}
	}
	// An error from fn stops the walk and comes back.
	stop := errors.New("stop")
	calls := 0
	err := s.SessionWalks(ctxT(t), &qs[0], func(uuid.UUID, []model.WalkEvent) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("fn error: SessionWalks = %v after %d calls, want stop after 1", err, calls)
	}
}

func TestAnalyticsPathSessions(t *testing.T) {
	s, d := anaStore(t)
	for _, c := range []struct {
		class    model.IssueClass
		group    string
		n, steps int
	}{
		{model.ClassCrash, d.groups[0], 3, 5},
		{model.ClassCrash, d.groups[0], 50, 50},
		{model.ClassANR, d.groups[1], 2, 1},
		{model.ClassHandled, d.groups[2], 50, 4},
		{model.ClassANR, d.groups[3], 5, 5}, // no ANR of that group
	} {
		want := d.ref.PathSessions(d.app, c.class, c.group, c.n, c.steps)
		got, err := s.PathSessions(ctxT(t), d.app, c.class, c.group, c.n, c.steps)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%+v: %d sessions, want %d", c, len(got), len(want))
		}
		for i := range got {
			if d := eventsDiff(got[i], want[i]); d != "" {
				t.Fatalf("%+v: session %d: %s", c, i, d)
			}
		}
	}
}

// Every method reads only its own app, and counts a replayed row once (anaStore writes
// everything twice); this checks the raw counts the others build on.
func TestAnalyticsReplaysCountOnce(t *testing.T) {
	s, d := anaStore(t)
	q := &model.IssueQuery{EventFilter: model.EventFilter{App: d.app, From: math.MinInt64, To: math.MaxInt64}}
	cells, err := s.IssueCells(ctxT(t), q, model.Cells{})
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range cells {
		n += c.Count
	}
	var want uint64
	for i := range d.events {
		if model.ClassOf(d.events[i].Type, &d.events[i].Facts) != 0 {
			want++
		}
	}
	if n != want || want == 0 {
		t.Errorf("cells count %d issue events, want %d", n, want)
	}
	evs, err := s.IssueEvents(ctxT(t), q, model.EventPage{Limit: 10000})
	if err != nil || uint64(len(evs)) != want {
		t.Errorf("IssueEvents: %d events, %v; want %d", len(evs), err, want)
	}
	if _, err := s.IssueEvents(ctxT(t), q, model.EventPage{}); !errors.Is(err, sinks.ErrInvalid) {
		t.Errorf("IssueEvents with limit 0: %v, want ErrInvalid", err)
	}
}

// ---- benchmark ----

// benchEvents are n synthetic events of one app over 30 days with random ids: 10% exceptions
// (500 groups, two thirds crashes) and 5% ANRs (50 groups) over 20 versions, the rest screens
// and custom events. Real apps send far fewer issue events; the group list's cost grows with
// the issue events in the window, not with the others (type is in the sorting key).
func benchEvents(app uuid.UUID, n int) []model.Event {
	r := rand.New(rand.NewSource(3))
	base := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	out := make([]model.Event, n)
	sessions := make([]uuid.UUID, n/50+1)
	for i := range sessions {
		sessions[i] = uuid.New()
	}
	for i := range out {
		e := &out[i]
		r.Read(e.ID[:])
		v := r.Intn(20)
		*e = model.Event{ID: e.ID, AppID: app, SessionID: sessions[r.Intn(len(sessions))],
			Timestamp: base + r.Int63n(int64(30*24*time.Hour)),
			Attribute: model.Attributes{AppVersion: "1." + strconv.Itoa(v), AppBuild: strconv.Itoa(100 + v),
				DeviceName: "device" + strconv.Itoa(r.Intn(50)), OSName: "android", OSVersion: strconv.Itoa(10 + r.Intn(5))}}
		switch x := r.Intn(20); {
		case x < 2:
			g := r.Intn(500)
			e.Type = "exception"
			e.Facts.GroupID = fmt.Sprintf("%032x", g)
			e.Facts.Fatal = g%3 != 0
			e.Facts.Issue = model.IssueDisplay{Type: "java.lang.IllegalStateException" + strconv.Itoa(g%40),
				Message: "something went wrong at step " + strconv.Itoa(r.Intn(1000)), MethodName: "onCreate",
				FileName: "MainActivity.kt", LineNumber: int32(r.Intn(500)), Severity: "fatal"}
		case x < 3:
			e.Type = "anr"
			e.Facts.GroupID = fmt.Sprintf("a%031x", r.Intn(50))
			e.Facts.Issue = model.IssueDisplay{Type: "ANR", Message: "Application Not Responding", FileName: "Looper.java"}
		case x < 9:
			e.Type = "screen_view"
			e.Facts.Screen = "Screen" + strconv.Itoa(r.Intn(30))
		default:
			e.Type = "custom"
		}
	}
	return out
}

// BenchmarkAnalyticsGroupList is the group list's query: IssueCells of the crash and ANR
// classes over the whole window, one cell per group, class and version, on 1M events.
func BenchmarkAnalyticsGroupList(b *testing.B) {
	const n = 1_000_000
	s := migrated(b)
	app := uuid.New()
	events := benchEvents(app, n)
	for lo := 0; lo < n; lo += 100_000 {
		if err := s.WriteEvents(context.Background(), events[lo:lo+100_000]); err != nil {
			b.Fatal(err)
		}
	}
	// Merged, as data some minutes old is: the benchmark measures the query, not merges.
	if err := s.conn.Exec(ctxT(b), "OPTIMIZE TABLE events FINAL"); err != nil {
		b.Fatal(err)
	}
	base := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	q := &model.IssueQuery{EventFilter: model.EventFilter{App: app, From: base, To: base + int64(30*24*time.Hour)},
		Classes: []model.IssueClass{model.ClassCrash, model.ClassANR}}
	for _, by := range []model.Cells{{}, {Bucketed: true, By: model.Buckets{Group: model.PlotDays}}} {
		name := "window"
		if by.Bucketed {
			name = "days"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cells, err := s.IssueCells(ctxT(b), q, by)
				if err != nil || len(cells) == 0 {
					b.Fatalf("IssueCells = %d cells, %v", len(cells), err)
				}
			}
		})
	}
}

// Pages over many events at one timestamp: ClickHouse sorts only by time, so a query cut in the
// middle of a tie must not decide the id order there (pageKeys drops the cut timestamp and asks
// for more). Every row is stored twice.
func TestAnalyticsIssueEventsTies(t *testing.T) {
	s := migrated(t)
	stopMerges(t, s)
	app := uuid.New()
	r := rand.New(rand.NewSource(9))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	var events []model.Event
	for i := 0; i < 120; i++ {
		e := model.Event{AppID: app, SessionID: uuid.New(), Type: "anr", Timestamp: base + int64(r.Intn(4))*int64(time.Second),
			Facts: model.EventFacts{GroupID: "g", Issue: model.IssueDisplay{Type: "ANR"}}}
		if i < 60 {
			e.Timestamp = base + int64(2*time.Second) // 60 events tied
		}
		r.Read(e.ID[:])
		events = append(events, e)
	}
	for i := 0; i < 2; i++ {
		if err := s.WriteEvents(ctxT(t), events); err != nil {
			t.Fatal(err)
		}
	}
	q := &model.IssueQuery{EventFilter: model.EventFilter{App: app, From: base, To: base + int64(time.Hour)}}
	want := eventstest.NewReference(events).IssueList(q)
	for _, limit := range []int{1, 7, 50} {
		var got []model.Event
		page := model.EventPage{Limit: limit}
		for len(got) < len(want)+1 {
			evs, err := s.IssueEvents(ctxT(t), q, page)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, evs...)
			if len(evs) < limit {
				break
			}
			page.Key = &model.EventKey{Timestamp: evs[len(evs)-1].Timestamp, ID: evs[len(evs)-1].ID}
		}
		if d := eventsDiff(got, want); d != "" {
			t.Fatalf("limit %d, forward: %s", limit, d)
		}
		for i := len(want) - 1; i > 0; i -= 13 {
			k := &model.EventKey{Timestamp: want[i].Timestamp, ID: want[i].ID}
			evs, err := s.IssueEvents(ctxT(t), q, model.EventPage{Key: k, Limit: limit, Backward: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := eventsDiff(evs, want[max(0, i-limit):i]); d != "" {
				t.Fatalf("limit %d, backward from %d: %s", limit, i, d)
			}
		}
	}
}
