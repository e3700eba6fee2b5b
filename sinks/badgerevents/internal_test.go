package badgerevents

import (
	"context"
	"errors"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
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

// Rewriting an event under another timestamp moves its row: the time-ordered scan an app's
// events will be read by must still hold one row per id.
func TestRetimedEventMovesRow(t *testing.T) {
	db := memDB(t)
	s := New(db)
	ctx := context.Background()
	app := uuid.New()
	e := eventstest.RealisticEvents(t, app, 1)[0]
	moved := e
	moved.Timestamp += 1_000_000_007
	moved.Type = "custom"
	for _, batch := range [][]model.Event{{e}, {moved}, {e, moved}} {
		if err := s.WriteEvents(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if n := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagRow, app)); n != 1 {
		t.Fatalf("%d rows stored for one id, want 1", n)
	}
	got, err := s.Event(ctx, app, e.ID)
	if err != nil || got.Timestamp != moved.Timestamp || got.Type != "custom" {
		t.Fatalf("Event = %+v, %v; want the last write (ts %d)", got.Timestamp, err, moved.Timestamp)
	}
	if n, _, _ := s.Count(ctx, app); n != 1 {
		t.Fatalf("Count = %d, want 1", n)
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

func BenchmarkEvent(b *testing.B) {
	db := memDB(b)
	s := New(db)
	app := uuid.New()
	events := eventstest.RealisticEvents(b, app, 10_000)
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
