package badgerevents

import (
	"bytes"
	"cmp"
	"context"
	"errors"
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

func memDB(t testing.TB) *badger.DB {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).
		WithMemTableSize(16 << 20).WithValueThreshold(1 << 20).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func countKeys(t *testing.T, db *badger.DB, prefix []byte) int {
	t.Helper()
	n := 0
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Many small writes leave many count deltas; Count must fold them and stay exact after.
func TestCountFolds(t *testing.T) {
	db := memDB(t)
	s := New(db)
	ctx := context.Background()
	app := uuid.New()
	events := eventstest.RealisticEvents(t, app, foldAt+50)
	for i := range events {
		if err := s.WriteEvents(ctx, events[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	deltas := appendHead(nil, badgerdb.PrefixEvents, tagCount, app)
	if n := countKeys(t, db, deltas); n != len(events) {
		t.Fatalf("%d delta keys before Count, want one per write (%d)", n, len(events))
	}
	for round := 0; round < 2; round++ {
		if n, _, err := s.Count(ctx, app); err != nil || n != int64(len(events)) {
			t.Fatalf("round %d: Count = %d, %v; want %d", round, n, err, len(events))
		}
	}
	if n := countKeys(t, db, deltas); n != 1 {
		t.Fatalf("%d delta keys after Count, want 1 (folded)", n)
	}
	more := eventstest.RealisticEvents(t, app, 10)
	if err := s.WriteEvents(ctx, append(more, events[:5]...)); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.Count(ctx, app); err != nil || n != int64(len(events)+10) {
		t.Fatalf("after fold and more writes: Count = %d, %v; want %d", n, err, len(events)+10)
	}
}

// An event sent again under another timestamp is another row (the key holds the time), as in
// ClickHouse, whose sorting key holds it too; sent again at its own time it overwrites its row.
// Each row of an issue type has its issue index copy. Event finds the newest of an id's rows.
func TestRetimedEventIsAnotherRow(t *testing.T) {
	db := memDB(t)
	s := New(db)
	ctx := context.Background()
	app := uuid.New()
	e := eventstest.RealisticEvents(t, app, 1)[0]
	e.Type = "exception"
	later := e
	later.Timestamp += 1_000_000_007
	later.Type = "anr"
	for _, batch := range [][]model.Event{{e}, {later}, {e, later}} {
		if err := s.WriteEvents(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if n := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagRow, app)); n != 2 {
		t.Fatalf("%d rows stored for one id at two times, want 2", n)
	}
	if n := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagIssue, app)); n != 2 {
		t.Fatalf("%d issue index copies for two issue rows, want 2", n)
	}
	got, err := s.Event(ctx, app, e.ID)
	if err != nil || got.Timestamp != later.Timestamp || got.Type != "anr" {
		t.Fatalf("Event = %+v, %v; want the newest row (ts %d)", got.Timestamp, err, later.Timestamp)
	}
	if n := checkConsistent(t, db, s, app); n != 2 {
		t.Fatalf("Count = %d, want 2", n)
	}
}

// Event and Span find a row by its id alone: through its point index entry when it has one
// (naming the newest bug report row of the id; or the row of a store an earlier release wrote),
// else by a scan of its app's row keys, the newest row; BugReport only through an entry.
func TestPointReads(t *testing.T) {
	ctx := context.Background()
	db := memDB(t)
	s := New(db)
	// other sorts just before app: a reverse scan past app's first row would reach it.
	app := uuid.MustParse("80000000-0000-4000-8000-000000000000")
	other := uuid.MustParse("7fffffff-ffff-4fff-bfff-ffffffffffff")
	evs := eventstest.RealisticEvents(t, app, 4)
	evs[0].Type = model.BugReportType
	// Each id also at a later time, written first: a scan finds these (the newest), an entry
	// names the row it was set for.
	later := slices.Clone(evs)
	for i := range later {
		later[i].Timestamp += int64(time.Hour)
	}
	later[0].Type = "custom" // the id's newest row, but not a bug report: not its entry's
	writeEvents(t, s, later[:3])
	writeEvents(t, s, evs[:3])
	// evs[2] as an earlier release wrote it: an entry naming its row, not the later one.
	var ts [8]byte
	putTime(ts[:], evs[2].Timestamp)
	if err := db.Update(func(txn *badger.Txn) error {
		return txn.Set(appendIdxKey(nil, badgerdb.PrefixEvents, app, evs[2].ID[:]), ts[:])
	}); err != nil {
		t.Fatal(err)
	}
	// evs[3] only in another app.
	foreign := evs[3]
	foreign.AppID = other
	writeEvents(t, s, []model.Event{foreign})
	if n := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagIdx, app)); n != 2 {
		t.Fatalf("%d point index entries, want 2 (the bug report's and the earlier release's)", n)
	}
	cases := []struct {
		name      string
		app, id   uuid.UUID
		event     *model.Event // what Event returns; nil: ErrNotFound
		bugReport bool         // BugReport returns event too
	}{
		{"bug report, by its entry", app, evs[0].ID, &evs[0], true},
		{"other event, by a scan", app, evs[1].ID, &later[1], false},
		{"an earlier release's row, by its entry", app, evs[2].ID, &evs[2], false},
		{"another app's row", app, evs[3].ID, nil, false},
		{"no such id", app, uuid.New(), nil, false},
	}
	same := func(got model.Event, want *model.Event) bool {
		return got.ID == want.ID && got.Timestamp == want.Timestamp && got.Type == want.Type && got.SessionID == want.SessionID
	}
	for _, c := range cases {
		got, err := s.Event(ctx, c.app, c.id)
		switch {
		case c.event == nil && !errors.Is(err, sinks.ErrNotFound):
			t.Errorf("%s: Event = %v, %v; want ErrNotFound", c.name, got.ID, err)
		case c.event != nil && (err != nil || !same(got, c.event)):
			t.Errorf("%s: Event = %v at %d (%s), %v; want %v at %d (%s)", c.name, got.ID, got.Timestamp, got.Type, err,
				c.event.ID, c.event.Timestamp, c.event.Type)
		}
		got, err = s.BugReport(ctx, c.app, c.id)
		switch {
		case !c.bugReport && !errors.Is(err, sinks.ErrNotFound):
			t.Errorf("%s: BugReport = %v, %v; want ErrNotFound", c.name, got.ID, err)
		case c.bugReport && (err != nil || !same(got, c.event)):
			t.Errorf("%s: BugReport = %v at %d, %v; want %v at %d", c.name, got.ID, got.Timestamp, err, c.event.ID, c.event.Timestamp)
		}
	}
	checkConsistent(t, db, s, app)

	// BugReport reads entries only: with a bug report's entry gone, Event still finds its row
	// (by its scan) and BugReport does not.
	solo := eventstest.RealisticEvents(t, app, 1)[0]
	solo.Type, solo.Facts = model.BugReportType, model.EventFacts{}
	writeEvents(t, s, []model.Event{solo})
	if err := db.Update(func(txn *badger.Txn) error {
		return txn.Delete(appendIdxKey(nil, badgerdb.PrefixEvents, app, solo.ID[:]))
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.BugReport(ctx, app, solo.ID); !errors.Is(err, sinks.ErrNotFound) {
		t.Errorf("BugReport without an entry = %v at %d, %v; want ErrNotFound", got.ID, got.Timestamp, err)
	}
	if got, err := s.Event(ctx, app, solo.ID); err != nil || got.Timestamp != solo.Timestamp {
		t.Errorf("Event without an entry = %d, %v; want its row (%d)", got.Timestamp, err, solo.Timestamp)
	}
	// A scan stops when its context ends.
	done, cancel := context.WithCancel(ctx)
	cancel()
	many := eventstest.RealisticEvents(t, app, 5000)
	writeEvents(t, s, many)
	if _, err := s.Event(done, app, uuid.New()); !errors.Is(err, context.Canceled) {
		t.Errorf("Event with an ended context over %d rows: %v, want context.Canceled", len(many), err)
	}

	// Span ids are the end of their keys, of any length: one that begins another is not it.
	spans := eventstest.RealisticSpans(t, app, 2)
	spans[0].SpanID, spans[1].SpanID = "ab", "abc"
	if err := s.WriteSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ab", "abc", "a", "abcd", "b"} {
		got, err := s.Span(ctx, app, id)
		want := slices.IndexFunc(spans, func(sp model.Span) bool { return sp.SpanID == id })
		switch {
		case want < 0 && !errors.Is(err, sinks.ErrNotFound):
			t.Errorf("Span(%q) = %q, %v; want ErrNotFound", id, got.SpanID, err)
		case want >= 0 && (err != nil || got.SpanID != id || got.StartTime != spans[want].StartTime):
			t.Errorf("Span(%q) = %q at %d, %v; want it at %d", id, got.SpanID, got.StartTime, err, spans[want].StartTime)
		}
	}
}

// EventIDs lists each event row of the app once, oldest first: an id at two times twice, another
// app's rows never.
func TestEventIDs(t *testing.T) {
	ctx := context.Background()
	s := New(memDB(t))
	app := uuid.MustParse("80000000-0000-4000-8000-000000000000")
	other := uuid.MustParse("7fffffff-ffff-4fff-bfff-ffffffffffff")
	evs := eventstest.RealisticEvents(t, app, 50)
	again := evs[3]
	again.Timestamp += int64(time.Hour)
	foreign := evs[4]
	foreign.AppID, foreign.ID = other, uuid.New()
	writeEvents(t, s, append(slices.Clone(evs), again, foreign))
	type idAt struct {
		id uuid.UUID
		ts int64
	}
	var want []idAt
	for _, e := range append(slices.Clone(evs), again) {
		want = append(want, idAt{e.ID, e.Timestamp})
	}
	slices.SortFunc(want, func(a, b idAt) int {
		if a.ts != b.ts {
			return cmp.Compare(a.ts, b.ts)
		}
		return bytes.Compare(a.id[:], b.id[:])
	})
	var got []idAt
	if err := s.EventIDs(ctx, app, func(id uuid.UUID, ts int64) { got = append(got, idAt{id, ts}) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("EventIDs listed %d rows, want the %d written in time order:\n got %v\nwant %v", len(got), len(want), got, want)
	}
}

// A truncated or extended value must decode to an error, never a panic or a silent success.
func TestDecodeRejectsDamage(t *testing.T) {
	app := uuid.New()
	e := eventstest.RealisticEvents(t, app, 1)[0]
	e.UserDefined = []model.UDAttr{{Key: "k", Type: model.UDString, Value: "v"}}
	e.Attachments = []model.Attachment{{ID: uuid.New(), Name: "n", Size: 5, Path: "p"}}
	e.Attribute.Extra = []byte(`{"k":1}`)
	sp := eventstest.RealisticSpans(t, app, 1)[0]
	sp.Checkpoints = []model.Checkpoint{{Name: "c", Timestamp: 5}}
	sp.Attributes.Extra = []byte(`{"k":2}`)
	decEvent := func(b []byte) error { var x model.Event; return decodeEvent(b, &x) }
	decSpan := func(b []byte) error { var x model.Span; return decodeSpan(b, &x) }
	cases := []struct {
		name   string
		val    []byte
		decode func([]byte) error
	}{
		{"event", appendEvent(nil, &e), decEvent},
		{"span", appendSpan(nil, &sp), decSpan},
		{"layout 1 event", unhex(t, layoutV1EventHex), decEvent},
		{"layout 1 span", unhex(t, layoutV1SpanHex), decSpan},
		{"layout 2 event", unhex(t, layoutV2EventHex), decEvent},
	}
	for _, c := range cases {
		if err := c.decode(c.val); err != nil {
			t.Fatalf("%s: intact value: %v", c.name, err)
		}
		for n := 0; n < len(c.val); n++ {
			if err := c.decode(c.val[:n]); err == nil {
				t.Fatalf("%s: value cut to %d of %d bytes decoded without error", c.name, n, len(c.val))
			}
		}
		if err := c.decode(append(c.val[:len(c.val):len(c.val)], 0)); !errors.Is(err, errCorrupt) {
			t.Fatalf("%s: value with a trailing byte: %v, want errCorrupt", c.name, err)
		}
	}
}

func BenchmarkWriteEvents(b *testing.B) {
	for _, mode := range []string{"memory", "disk"} {
		b.Run(mode, func(b *testing.B) {
			var db *badger.DB
			if mode == "memory" {
				db = memDB(b)
			} else {
				var err error
				if db, err = badgerdb.OpenEvents(b.TempDir(), nil); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = db.Close() })
			}
			s := New(db)
			const batch = 10_000
			app := uuid.New()
			events := eventstest.RealisticEvents(b, app, batch*4)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Fresh ids each round: the benchmark measures inserts, not replays.
				if i > 0 && i%4 == 0 {
					b.StopTimer()
					events = eventstest.RealisticEvents(b, app, batch*4)
					b.StartTimer()
				}
				k := i % 4
				if err := s.WriteEvents(ctx, events[k*batch:(k+1)*batch]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkEvent reads events by id alone from an app of 10,000 rows (in memory): bug reports
// through their point index entries, other events by a keys-only scan of the app's rows, whose
// cost grows with them (half of them on average before it finds the id, newest first).
func BenchmarkEvent(b *testing.B) {
	for _, c := range []struct{ name, typ string }{{"bug_report", model.BugReportType}, {"scan", ""}} {
		b.Run(c.name, func(b *testing.B) {
			s := New(memDB(b))
			app := uuid.New()
			events := eventstest.RealisticEvents(b, app, 10_000)
			if c.typ != "" {
				for i := range events {
					events[i].Type = c.typ
				}
			}
			ctx := context.Background()
			if err := s.WriteEvents(ctx, events); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Event(ctx, app, events[i%len(events)].ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSpareScratch: a write leaves its scratch for the next one, small writes reuse it until
// shrinkAfter of them in a row shrink it, Idle drops it, and writes go on after it.
func TestSpareScratch(t *testing.T) {
	s := New(memDB(t))
	app := uuid.New()
	write := func(n int) {
		t.Helper()
		events := make([]model.Event, n)
		for i := range events {
			events[i] = model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "custom", Timestamp: int64(i + 1), Payload: []byte(`{}`)}
		}
		if err := s.WriteEvents(context.Background(), events); err != nil {
			t.Fatal(err)
		}
	}
	write(100)
	sc := s.spare.Load()
	if sc == nil || cap(sc.rows) < 100 || cap(sc.arena) < 100*arenaPerRow {
		t.Fatalf("after a write of 100 rows the spare is %+v", sc)
	}
	for _, r := range sc.rows[:cap(sc.rows)] {
		if r.val != nil || r.id != nil {
			t.Fatal("the spare's rows still point at the last write's values")
		}
	}
	for i := 1; i < shrinkAfter; i++ {
		write(10)
		if s.spare.Load() != sc {
			t.Fatalf("small write %d did not reuse the spare", i)
		}
	}
	write(10)
	if got := s.spare.Load(); got == sc || got == nil || cap(got.arena) >= 100*arenaPerRow {
		t.Fatalf("after %d small writes in a row the spare did not shrink: %p, was %p", shrinkAfter, got, sc)
	}
	s.Idle()
	if s.spare.Load() != nil {
		t.Fatal("Idle kept the spare")
	}
	write(10)
	want := int64(100 + 10*shrinkAfter + 10)
	if n, _, err := s.Count(context.Background(), app); err != nil || n != want {
		t.Fatalf("Count = %d, %v; want %d", n, err, want)
	}
}
