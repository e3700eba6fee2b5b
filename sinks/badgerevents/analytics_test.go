package badgerevents

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/eventstest"
)

// The tests here aim at what can go wrong in this backend: the bounds of its forward and
// reverse scans (From, To, paging keys, equal timestamps), other apps' rows next to the app's
// in key order, rows retention deleted, and the in-place decoder. Expected answers come from
// the contract's one brute-force reference, eventstest.Reference, over the written events.

const genBase = int64(1_780_000_000_123_456_789) // 2026-05-28, odd nanoseconds

var (
	genTypes = []string{"exception", "exception", "exception", "anr", "screen_view", "lifecycle_activity",
		"cold_launch", "warm_launch", "custom", "cpu_usage", "memory_usage", "http"}
	genVersions = []model.AppVersion{{Name: "1.0", Code: "1"}, {Name: "1.0", Code: "2"}, {Name: "2.0", Code: "3"}, {}}
	genStrings  = []string{"a", "b", ""}
	genGroups   = []string{"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "00000000000000000000000000000001", ""}
	genScreens  = []string{"Home", "Cart", "Pay", "Done"}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// genEvents makes n events of app over sessions with many equal timestamps (40 distinct
// seconds from base), every attribute the filters read, user-defined attributes and facts.
func genEvents(seed uint64, app uuid.UUID, n int, base int64, sessions []uuid.UUID) []model.Event {
	src := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 1})
	r := rand.New(src)
	out := make([]model.Event, n)
	for i := range out {
		v := pick(r, genVersions)
		e := model.Event{
			AppID:     app,
			SessionID: pick(r, sessions),
			Type:      pick(r, genTypes),
			Timestamp: base + int64(r.IntN(40))*int64(time.Second),
			Attribute: model.Attributes{
				AppVersion: v.Name, AppBuild: v.Code,
				DeviceName: pick(r, genStrings), DeviceManufacturer: pick(r, genStrings),
				DeviceLocale: pick(r, genStrings), NetworkProvider: pick(r, genStrings),
				NetworkType: pick(r, genStrings), NetworkGeneration: pick(r, genStrings),
				OSName: pick(r, []string{"android", "ios", ""}), OSVersion: pick(r, []string{"33", "17.1", ""}),
				ThreadName: "main",
			},
		}
		_, _ = src.Read(e.ID[:])
		switch r.IntN(3) {
		case 0:
			e.UserDefined = []model.UDAttr{{Key: "plan", Type: model.UDString, Value: pick(r, []string{"pro", "free"})}}
		case 1:
			e.UserDefined = []model.UDAttr{{Key: "n", Type: model.UDInt64, Value: "7"}, {Key: "plan", Type: model.UDBool, Value: "true"}}
		}
		f := &e.Facts
		switch e.Type {
		case "exception", "anr":
			f.GroupID = pick(r, genGroups)
			f.Foreground = r.IntN(2) == 0
			if f.GroupID != "" {
				f.Issue = model.IssueDisplay{Type: "java.lang.E" + f.GroupID[:2], Message: fmt.Sprint("m", i),
					MethodName: "run", FileName: pick(r, []string{"A.kt", ""}), LineNumber: int32(i)}
				if e.Type == "exception" {
					f.Fatal = r.IntN(2) == 0
					f.Issue.Severity = map[bool]string{true: "fatal", false: "handled"}[f.Fatal]
				} else {
					f.Issue.Type = "ANR"
				}
			}
		case "screen_view", "lifecycle_activity":
			f.Screen = pick(r, genScreens)
		case "cold_launch", "warm_launch":
			if r.IntN(4) > 0 {
				f.LaunchKind = pick(r, []string{"cold", "warm", "hot"})
				f.LaunchMs = float64(r.IntN(3000)) + 0.5
			}
		}
		out[i] = e
	}
	return out
}

// neighbours returns app ids sorting just before and just after app, so their rows are next to
// the app's in key order on both sides.
func neighbours(app uuid.UUID) (before, after uuid.UUID) {
	before, after = app, app
	before[15]--
	after[15]++
	return before, after
}

func mustUD(t testing.TB, s string) *model.UDExpr {
	t.Helper()
	x, err := model.ParseUDExpr(s)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// checkAll compares every Analytics method over app with the reference over evs (the app's
// stored events).
func checkAll(t *testing.T, s *Store, app uuid.UUID, evs []model.Event) {
	t.Helper()
	ctx := context.Background()
	ref := eventstest.NewReference(evs)
	// Windows whose ends are event timestamps: rows exactly at From count, at To do not.
	lo, hi := genBase+5*int64(time.Second), genBase+31*int64(time.Second)
	windows := [][2]int64{{math.MinInt64, math.MaxInt64}, {lo, hi}, {lo, lo + 1}, {lo, lo}, {hi, lo}}
	v10 := model.AppVersion{Name: "1.0", Code: "1"}
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	queries := []struct {
		name string
		q    model.IssueQuery
	}{
		{"all", model.IssueQuery{}},
		{"crashes", model.IssueQuery{Classes: []model.IssueClass{model.ClassCrash}}},
		{"anr and handled", model.IssueQuery{Classes: []model.IssueClass{model.ClassANR, model.ClassHandled}}},
		{"group", model.IssueQuery{GroupID: genGroups[0]}},
		{"severity", model.IssueQuery{Severities: []string{"fatal"}}},
		{"version", model.IssueQuery{EventFilter: model.EventFilter{Versions: []model.AppVersion{v10, {Name: "2.0", Code: "3"}}}}},
		{"attributes", model.IssueQuery{EventFilter: model.EventFilter{DeviceNames: []string{"a"}, Locales: []string{"b", ""},
			NetworkTypes: []string{"a"}}}},
		{"countries", model.IssueQuery{EventFilter: model.EventFilter{Countries: []string{"DE"}}}},
		{"ud", model.IssueQuery{EventFilter: model.EventFilter{UD: mustUD(t, `{"cmp":{"key":"plan","type":"string","op":"eq","value":"pro"}}`)}}},
	}
	for _, w := range windows {
		for _, qc := range queries {
			q := qc.q
			q.App, q.From, q.To = app, w[0], w[1]
			name := fmt.Sprintf("%s [%d, %d)", qc.name, w[0], w[1])
			for _, by := range []model.Cells{{}, {Bucketed: true, By: model.Buckets{Group: model.PlotMinutes}}, {Bucketed: true, By: model.Buckets{Group: model.PlotDays}}} {
				got, err := s.IssueCells(ctx, &q, by)
				if err != nil {
					t.Fatalf("IssueCells %s: %v", name, err)
				}
				if want := ref.IssueCells(&q, by); !reflect.DeepEqual(eventstest.SortCells(got), want) {
					t.Fatalf("IssueCells %s by %+v:\n got %d cells %+v\nwant %d cells %+v", name, by, len(got), got, len(want), want)
				}
			}
			checkPages(t, s, &q, ref.IssueList(&q), 7)
			f := q.EventFilter
			for _, by := range []model.Buckets{{Group: model.PlotMinutes}, {Group: model.PlotHours}, {Group: model.PlotDays, Loc: newYork}} {
				got, err := s.SessionBuckets(ctx, &f, by)
				if err != nil {
					t.Fatalf("SessionBuckets %s: %v", name, err)
				}
				if want := ref.SessionBuckets(&f, by); !reflect.DeepEqual(eventstest.SortBuckets(got), want) {
					t.Fatalf("SessionBuckets %s by %v:\n got %+v\nwant %+v", name, by, got, want)
				}
			}
		}
		for _, sel := range []*model.AppVersion{nil, &v10, {Name: "9.9", Code: "9"}} {
			got, err := s.Metrics(ctx, app, w[0], w[1], sel)
			if err != nil {
				t.Fatal(err)
			}
			if want := ref.Metrics(app, w[0], w[1], sel); !reflect.DeepEqual(got, want) {
				t.Fatalf("Metrics [%d, %d) sel %v:\n got %+v\nwant %+v", w[0], w[1], sel, got, want)
			}
		}
		for _, wq := range []model.WalkQuery{{}, {GroupID: genGroups[0], Class: model.ClassCrash},
			{GroupID: genGroups[1], Class: model.ClassHandled}, {GroupID: genGroups[2], Class: model.ClassANR}} {
			wq.App, wq.From, wq.To = app, w[0], w[1]
			got := map[uuid.UUID][]model.WalkEvent{}
			err := s.SessionWalks(ctx, &wq, func(session uuid.UUID, events []model.WalkEvent) error {
				if _, dup := got[session]; dup {
					return fmt.Errorf("session %s walked twice", session)
				}
				got[session] = append([]model.WalkEvent{}, events...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := ref.SessionWalks(&wq); !reflect.DeepEqual(got, want) {
				t.Fatalf("SessionWalks %+v: got %d sessions, want %d\n got %+v\nwant %+v", wq, len(got), len(want), got, want)
			}
		}
	}
	for _, class := range eventstest.FilterClassSets {
		got, err := s.FilterValues(ctx, app, class)
		if err != nil {
			t.Fatal(err)
		}
		if want := ref.FilterValues(app, class); !reflect.DeepEqual(eventstest.NormFilterValues(got), want) {
			t.Fatalf("FilterValues class %v:\n got %+v\nwant %+v", class, got, want)
		}
	}
	for _, c := range []struct {
		class    model.IssueClass
		group    string
		n, steps int
	}{
		{model.ClassCrash, genGroups[0], 3, 5}, {model.ClassCrash, genGroups[0], 50, 50}, {model.ClassANR, genGroups[1], 2, 1},
		{model.ClassHandled, genGroups[2], 100, 1000}, {model.ClassCrash, "nope", 5, 5}, {model.ClassCrash, genGroups[0], 0, 5},
	} {
		got, err := s.PathSessions(ctx, app, c.class, c.group, c.n, c.steps)
		if err != nil {
			t.Fatal(err)
		}
		if want := ref.PathSessions(app, c.class, c.group, c.n, c.steps); !reflect.DeepEqual(got, want) {
			t.Fatalf("PathSessions %+v: got %d sessions, want %d", c, len(got), len(want))
		}
	}
}

// checkPages pages through q forward from the start and backward from the end with limit,
// and from keys that are no stored event, against the reference list all.
func checkPages(t *testing.T, s *Store, q *model.IssueQuery, all []model.Event, limit int) {
	t.Helper()
	ctx := context.Background()
	get := func(p model.EventPage) []model.Event {
		t.Helper()
		got, err := s.IssueEvents(ctx, q, p)
		if err != nil {
			t.Fatalf("IssueEvents %+v: %v", p, err)
		}
		if want := eventstest.PageOf(all, p); !reflect.DeepEqual(got, want) {
			t.Fatalf("IssueEvents page %+v (key %v) over %d events: got %d, want %d", p, p.Key, len(all), len(got), len(want))
		}
		return got
	}
	// Forward from the start to the end.
	var seen []model.Event
	p := model.EventPage{Limit: limit}
	for {
		page := get(p)
		if len(page) == 0 {
			break
		}
		seen = append(seen, page...)
		last := page[len(page)-1]
		p.Key = &model.EventKey{Timestamp: last.Timestamp, ID: last.ID}
	}
	if len(seen) != len(all) {
		t.Fatalf("forward pages gave %d events, want %d", len(seen), len(all))
	}
	// Backward from the oldest to the start.
	if len(all) > 0 {
		last := all[len(all)-1]
		p := model.EventPage{Limit: limit, Backward: true, Key: &model.EventKey{Timestamp: last.Timestamp, ID: last.ID}}
		n := 1
		for {
			page := get(p)
			if len(page) == 0 {
				break
			}
			n += len(page)
			p.Key = &model.EventKey{Timestamp: page[0].Timestamp, ID: page[0].ID}
		}
		if n != len(all) {
			t.Fatalf("backward pages gave %d events, want %d", n, len(all))
		}
	}
	// Keys that are no event: between two ids of one timestamp, and the window's ends.
	keys := []model.EventKey{{Timestamp: q.From}, {Timestamp: q.To}, {Timestamp: q.From - 1}, {Timestamp: math.MaxInt64, ID: uuid.Max}}
	for _, e := range all[:min(len(all), 5)] {
		k := model.EventKey{Timestamp: e.Timestamp, ID: e.ID}
		k.ID[15] ^= 1
		keys = append(keys, k)
	}
	for _, k := range keys {
		for _, back := range []bool{false, true} {
			get(model.EventPage{Key: &k, Limit: limit, Backward: back})
		}
	}
	// Backward without Key is the first page.
	if got := get(model.EventPage{Limit: limit, Backward: true}); !reflect.DeepEqual(got, eventstest.PageOf(all, model.EventPage{Limit: limit})) {
		t.Fatal("Backward without Key is not the first page")
	}
}

func writeEvents(t testing.TB, s *Store, evs []model.Event) {
	t.Helper()
	if err := s.WriteEvents(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

// TestAnalyticsReference checks every method against the reference with the app's rows between
// two other apps' rows, then again after retention deleted half of them.
func TestAnalyticsReference(t *testing.T) {
	for _, disk := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "disk"}[disk], func(t *testing.T) {
			db := memDB(t)
			if disk {
				var err error
				if db, err = badgerdb.OpenEvents(t.TempDir(), nil); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = db.Close() })
			}
			s := New(db)
			app := uuid.MustParse("6f1c2d3e-4a5b-4c6d-8e7f-00112233447f")
			before, after := neighbours(app)
			sessions := make([]uuid.UUID, 9)
			for i := range sessions {
				sessions[i] = uuid.New()
			}
			evs := genEvents(1, app, 1500, genBase, sessions)
			// Other apps share sessions and times: only the app id keeps them apart.
			for i, other := range []uuid.UUID{before, after} {
				writeEvents(t, s, genEvents(uint64(10+i), other, 700, genBase, sessions))
			}
			writeEvents(t, s, evs)
			writeEvents(t, s, evs[:300]) // replayed: counts once
			// Spans never count.
			spans := eventstest.RealisticSpans(t, app, 20)
			if err := s.WriteSpans(context.Background(), spans); err != nil {
				t.Fatal(err)
			}
			checkAll(t, s, app, evs)

			cut := genBase + 12*int64(time.Second)
			if err := s.DeleteBefore(context.Background(), app, time.Unix(0, cut)); err != nil {
				t.Fatal(err)
			}
			kept := slices.DeleteFunc(slices.Clone(evs), func(e model.Event) bool { return e.Timestamp < cut })
			if len(kept) == len(evs) || len(kept) == 0 {
				t.Fatalf("retention kept %d of %d events: the test needs some of each", len(kept), len(evs))
			}
			checkAll(t, s, app, kept)
		})
	}
}

// Many issue events share a handful of timestamps: only the id orders them, and pages must
// neither skip nor repeat one at a page edge.
func TestIssueEventsEqualTimestamps(t *testing.T) {
	s := New(memDB(t))
	app := uuid.New()
	evs := make([]model.Event, 400)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range evs {
		e := model.Event{AppID: app, SessionID: uuid.New(), Type: "exception", Timestamp: genBase + int64(i%3),
			Facts: model.EventFacts{GroupID: genGroups[0], Fatal: true, Issue: model.IssueDisplay{Type: "E"}}}
		e.ID = uuid.New()
		if i%4 == 0 { // ids alike but for their last byte
			e.ID = evs[0].ID
			e.ID[15] = byte(r.IntN(256))
			e.ID[14] = byte(i)
		}
		evs[i] = e
	}
	writeEvents(t, s, evs)
	q := model.IssueQuery{EventFilter: model.EventFilter{App: app, From: genBase, To: genBase + 3}}
	ref := eventstest.NewReference(evs)
	all := ref.IssueList(&q)
	for _, limit := range []int{1, 2, 7, 133, 400, 1000} {
		checkPages(t, s, &q, all, limit)
	}
	// Pages over part of the window: To cuts at the last timestamp, From at the first.
	for _, w := range [][2]int64{{genBase + 1, genBase + 2}, {genBase, genBase + 1}, {genBase + 2, math.MaxInt64}} {
		q.From, q.To = w[0], w[1]
		checkPages(t, s, &q, ref.IssueList(&q), 9)
	}
	if _, err := s.IssueEvents(context.Background(), &q, model.EventPage{Limit: 0}); !errors.Is(err, sinks.ErrInvalid) {
		t.Fatalf("Limit 0: %v, want ErrInvalid", err)
	}
}

// Rows at the extremes of the time range: scans over all rows (FilterValues, walks, paths)
// must see the first and last possible times; windowed scans end before To even at MaxInt64.
func TestExtremeTimes(t *testing.T) {
	s := New(memDB(t))
	app := uuid.New()
	before, after := neighbours(app)
	sess := uuid.New()
	mk := func(app uuid.UUID, ts int64, ver, screen string) model.Event {
		return model.Event{ID: uuid.New(), AppID: app, SessionID: sess, Type: "exception", Timestamp: ts,
			Attribute: model.Attributes{AppVersion: ver, AppBuild: "1"},
			Facts:     model.EventFacts{GroupID: genGroups[0], Fatal: true, Screen: screen, Issue: model.IssueDisplay{Type: "E"}}}
	}
	evs := []model.Event{mk(app, math.MinInt64, "min", ""), mk(app, 0, "zero", ""), mk(app, math.MaxInt64, "max", "")}
	writeEvents(t, s, evs)
	writeEvents(t, s, []model.Event{mk(before, math.MaxInt64, "other", ""), mk(after, math.MinInt64, "other", "")})
	ctx := context.Background()
	fv, err := s.FilterValues(ctx, app, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.AppVersion{{Name: "max", Code: "1"}, {Name: "zero", Code: "1"}, {Name: "min", Code: "1"}}
	if !reflect.DeepEqual(fv.Versions, want) {
		t.Fatalf("Versions = %v, want %v", fv.Versions, want)
	}
	paths, err := s.PathSessions(ctx, app, model.ClassCrash, genGroups[0], 5, 5)
	if err != nil || len(paths) != 1 || !reflect.DeepEqual(paths[0], evs) {
		t.Fatalf("PathSessions = %v, %v; want the three events", paths, err)
	}
	q := model.IssueQuery{EventFilter: model.EventFilter{App: app, From: math.MinInt64, To: math.MaxInt64}}
	got, err := s.IssueEvents(ctx, &q, model.EventPage{Limit: 10})
	if err != nil || len(got) != 2 || got[0].Timestamp != 0 || got[1].Timestamp != math.MinInt64 {
		t.Fatalf("IssueEvents over [MinInt64, MaxInt64) = %d events, %v; want the ones at 0 and MinInt64", len(got), err)
	}
	var walked []model.WalkEvent
	err = s.SessionWalks(ctx, &model.WalkQuery{App: app, From: -1, To: 1}, func(_ uuid.UUID, evs []model.WalkEvent) error {
		walked = slices.Clone(evs)
		return nil
	})
	if err != nil || len(walked) != 3 || walked[0].Timestamp != math.MinInt64 || walked[2].Timestamp != math.MaxInt64 {
		t.Fatalf("SessionWalks = %+v, %v; want the session's three crashes at any time", walked, err)
	}
}

// An error from fn ends the walk and comes back as it is; a cancelled context stops scans.
func TestAnalyticsErrors(t *testing.T) {
	s := New(memDB(t))
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	writeEvents(t, s, genEvents(7, app, 300, genBase, sessions))
	stop := errors.New("stop")
	calls := 0
	err := s.SessionWalks(context.Background(), &model.WalkQuery{App: app, From: math.MinInt64, To: math.MaxInt64},
		func(uuid.UUID, []model.WalkEvent) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("SessionWalks with failing fn: %v after %d calls, want stop after 1", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q := model.IssueQuery{EventFilter: model.EventFilter{App: app, From: math.MinInt64, To: math.MaxInt64}}
	if _, err := s.IssueCells(ctx, &q, model.Cells{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("IssueCells with a cancelled context: %v", err)
	}
	if _, err := s.FilterValues(ctx, app, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("FilterValues with a cancelled context: %v", err)
	}
}

// The in-place decoder reads what decodeEvent reads (but attachments, payload and Extra, which
// it skips) from rows of every layout, and rejects damaged rows as decodeEvent does.
func TestRowViewMatchesDecode(t *testing.T) {
	app := uuid.New()
	var vals [][]byte
	for _, e := range eventstest.RealisticEvents(t, app, 40) {
		vals = append(vals, appendEvent(nil, &e))
	}
	for _, e := range genEvents(5, app, 40, genBase, []uuid.UUID{uuid.New()}) {
		e.Attachments = []model.Attachment{{ID: uuid.New(), Name: "n", Size: 5, Path: "p"}}
		e.Payload = []byte(`{"x":1}`)
		vals = append(vals, appendEvent(nil, &e))
	}
	vals = append(vals, unhex(t, layoutV1EventHex), unhex(t, layoutV2EventHex))
	id := uuid.New()
	var v rowView
	for i, val := range vals {
		want := model.Event{Timestamp: 42, ID: id}
		if err := decodeEvent(val, &want); err != nil {
			t.Fatal(err)
		}
		want.Attachments, want.Payload, want.Attribute.Extra = nil, nil, nil
		if err := v.head(42, id[:], val); err != nil {
			t.Fatal(err)
		}
		if err := v.rest(true); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		got := v.e
		if len(got.UserDefined) == 0 {
			got.UserDefined = nil
		} else {
			got.UserDefined = slices.Clone(got.UserDefined)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("row %d: view\n%+v\nwant\n%+v", i, got, want)
		}
		for n := 0; n < len(val); n++ {
			if v.head(42, id[:], val[:n]) == nil && v.rest(n%2 == 0) == nil {
				t.Fatalf("row %d cut to %d of %d bytes decoded without error", i, n, len(val))
			}
		}
		long := append(slices.Clone(val), 0)
		if v.head(42, id[:], long) == nil && !errors.Is(v.rest(false), errCorrupt) {
			t.Fatalf("row %d with a trailing byte decoded without errCorrupt", i)
		}
	}
}

// bucketer must agree with model.Buckets.Start wherever it reuses a bucket: in UTC (an unknown
// group is days), and in zones across DST changes (New York, Lord Howe's half hour), a
// fractional offset (Kolkata) and a day that starts at 01:00 (São Paulo, 2018-11-04).
func TestBucketerMatchesBucketStart(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var zones []*time.Location
	for _, z := range []string{"America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "America/Sao_Paulo"} {
		loc, err := time.LoadLocation(z)
		if err != nil {
			t.Fatal(err)
		}
		zones = append(zones, loc)
	}
	var all []model.Buckets
	for _, g := range []model.PlotTimeGroup{model.PlotMinutes, model.PlotHours, model.PlotDays, model.PlotMonths, 9} {
		all = append(all, model.Buckets{Group: g})
		if g != 9 {
			for _, loc := range zones {
				all = append(all, model.Buckets{Group: g, Loc: loc})
			}
		}
	}
	starts := []time.Time{
		time.Date(2023, 12, 31, 23, 58, 0, 0, time.UTC), time.Date(2024, 11, 3, 4, 0, 0, 0, time.UTC),
		time.Date(2024, 3, 10, 5, 0, 0, 0, time.UTC), time.Date(2024, 10, 5, 14, 0, 0, 0, time.UTC),
		time.Date(2018, 11, 3, 23, 0, 0, 0, time.UTC),
	}
	for _, by := range all {
		b := bucketer{by: by}
		for _, from := range starts {
			ts := from.UnixNano() - 1
			for range 5000 {
				ts += r.Int64N(int64(45 * time.Second))
				if want := by.Start(time.Unix(0, ts)).UnixNano(); b.start(ts) != want {
					t.Fatalf("%s, %s: bucket %s, want %s", by, time.Unix(0, ts), time.Unix(0, b.start(ts)), time.Unix(0, want))
				}
			}
		}
		for _, ts := range []int64{-1, 0, 1, math.MinInt64, math.MaxInt64, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()} {
			if want := by.Start(time.Unix(0, ts)); b.start(ts) != nanos(want) {
				t.Fatalf("%s, %d: bucket %d, want %d", by, ts, b.start(ts), nanos(want))
			}
		}
	}
}

// BenchmarkBadgerIssueCells asks 200k realistic events (the large iOS fixture repeated: 2% are
// issue events, rows average ~410 bytes) on disk for the cells of a group list, the query the
// crash and ANR overviews run most. events/s counts the app's events in the window, issue or
// not (the issue index spares reading the others).
func BenchmarkBadgerIssueCells(b *testing.B) {
	const n = 200_000
	_, s, app, evs := realisticStore(b, n)
	issues := 0
	for i := range evs {
		if model.ClassOf(evs[i].Type, &evs[i].Facts) != 0 {
			issues++
		}
	}
	var err error
	warmUp(b, s, app)
	for _, c := range []struct {
		name string
		q    model.IssueQuery
		by   model.Cells
	}{
		{"all", model.IssueQuery{}, model.Cells{}},
		{"bucketed-hours", model.IssueQuery{}, model.Cells{Bucketed: true, By: model.Buckets{Group: model.PlotHours}}},
		{"ud-filter", model.IssueQuery{EventFilter: model.EventFilter{UD: mustUD(b, `{"cmp":{"key":"plan","type":"string","op":"eq","value":"pro"}}`)}}, model.Cells{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := c.q
			q.App, q.From, q.To = app, math.MinInt64, math.MaxInt64
			var cells []model.IssueCell
			b.ReportAllocs()
			for b.Loop() {
				if cells, err = s.IssueCells(context.Background(), &q, c.by); err != nil {
					b.Fatal(err)
				}
			}
			var count uint64
			for _, c := range cells {
				count += c.Count
			}
			if c.name != "ud-filter" && count != uint64(issues) {
				b.Fatalf("cells count %d issue events, want %d", count, issues)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// realisticStore is a store on disk (closed with the benchmark) of n realistic events of one
// app, written 10,000 at a time and flattened, as the read benchmarks use it.
func realisticStore(b *testing.B, n int) (*badger.DB, *Store, uuid.UUID, []model.Event) {
	db, err := badgerdb.OpenEvents(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	s := New(db)
	app := uuid.New()
	evs := eventstest.RealisticEvents(b, app, n)
	for i := 0; i < n; i += 10_000 {
		writeEvents(b, s, evs[i:min(i+10_000, n)])
	}
	if err := db.Flatten(2); err != nil {
		b.Fatal(err)
	}
	return db, s, app, evs
}

// BenchmarkBadgerIssueCells1M is the group list over a store the size the issue index is for:
// 1M realistic events of one app spread over 30 days, 1% of them issue events (the share of
// real SDK traffic: every other issue event of the fixture becomes a custom one), on disk. It
// asks for the last 7 and the last 30 days; events/s counts the app's events in the window.
func BenchmarkBadgerIssueCells1M(b *testing.B) {
	const n, chunk = 1_000_000, 10_000
	const span = 30 * 24 * time.Hour
	db, err := badgerdb.OpenEvents(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s := New(db)
	app := uuid.New()
	base := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	step := int64(span) / n
	issues, seen := 0, 0
	for i := 0; i < n; i += chunk {
		evs := eventstest.RealisticEvents(b, app, chunk)
		for j := range evs {
			e := &evs[j]
			e.Timestamp = base + int64(i+j)*step
			if e.Type == "exception" || e.Type == "anr" {
				if seen++; seen%2 == 0 {
					e.Type = "custom"
				} else {
					issues++
				}
			}
		}
		writeEvents(b, s, evs)
	}
	if err := db.Flatten(2); err != nil {
		b.Fatal(err)
	}
	if share := float64(issues) / n; share < 0.008 || share > 0.012 {
		b.Fatalf("%.2f%% issue events, want about 1%%", 100*share)
	}
	warmUp(b, s, app)
	end := base + n*step
	for _, c := range []struct {
		name string
		days int64
		by   model.Cells
	}{
		{"7d", 7, model.Cells{}},
		{"30d", 30, model.Cells{}},
		{"30d-bucketed-days", 30, model.Cells{Bucketed: true, By: model.Buckets{Group: model.PlotDays}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var q model.IssueQuery
			q.App, q.From, q.To = app, end-c.days*int64(24*time.Hour), end
			var cells []model.IssueCell
			b.ReportAllocs()
			for b.Loop() {
				if cells, err = s.IssueCells(context.Background(), &q, c.by); err != nil {
					b.Fatal(err)
				}
			}
			if len(cells) == 0 {
				b.Fatal("no cells")
			}
			b.ReportMetric(float64(n*c.days/30)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// warmUp runs one issue query before a benchmark's timings: a store's first one checks the
// issue index, and builds it where the marker is missing (here: one scan of the rows, which
// already have their copies, then the marker).
func warmUp(b *testing.B, s *Store, app uuid.UUID) {
	var q model.IssueQuery
	q.App, q.From, q.To = app, math.MinInt64, math.MaxInt64
	if _, err := s.IssueCells(context.Background(), &q, model.Cells{}); err != nil {
		b.Fatal(err)
	}
}
