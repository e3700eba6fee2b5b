package badgerevents

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/eventstest"
)

// smallDB has a 1 MB memtable, so one transaction holds about a thousand deletions: deleting
// a few thousand rows takes several.
func smallDB(t testing.TB) *badger.DB {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).
		WithMemTableSize(1 << 20).WithValueThreshold(100 << 10).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// checkConsistent fails unless the app's events have a point index entry for each bug report
// row and for no other, every entry points at its row, Count says how many rows there are, and
// the issue index is exact (in every app); it returns the number of rows.
func checkConsistent(t *testing.T, db *badger.DB, s *Store, app uuid.UUID) int {
	t.Helper()
	rows, reports, idx := 0, 0, 0
	err := db.View(func(txn *badger.Txn) error {
		head := appendHead(nil, badgerdb.PrefixEvents, tagRow, app)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: head})
		for it.Rewind(); it.Valid(); it.Next() {
			rows++
			var e model.Event
			if err := it.Item().Value(func(v []byte) error { return decodeEvent(v, &e) }); err != nil {
				it.Close()
				return err
			}
			if e.Type == model.BugReportType {
				reports++
			}
		}
		it.Close()
		head = appendHead(nil, badgerdb.PrefixEvents, tagIdx, app)
		it = txn.NewIterator(badger.IteratorOptions{Prefix: head})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			idx++
			id := it.Item().KeyCopy(nil)[len(head):]
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if _, err := txn.Get(appendRowKey(nil, badgerdb.PrefixEvents, app, getTime(v), id)); err != nil {
				return fmt.Errorf("index entry %x points at no row: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := s.Count(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	if reports != idx || int64(rows) != n {
		t.Fatalf("%d rows (%d bug reports), %d index entries, Count %d: want an entry per bug report and Count the rows", rows, reports, idx, n)
	}
	checkIssueIndex(t, db)
	return rows
}

// A deletion larger than one transaction commits in several, resumes where each stopped, and
// leaves Count exact.
func TestDeleteBeforeBoundedTransactions(t *testing.T) {
	db := smallDB(t)
	s := New(db)
	ctx := context.Background()
	app, other := uuid.New(), uuid.New()
	events := eventstest.RealisticEvents(t, app, 6000)
	if err := s.WriteEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteEvents(ctx, eventstest.RealisticEvents(t, other, 100)); err != nil {
		t.Fatal(err)
	}
	const keep = 1000
	cut := time.Unix(0, events[len(events)-keep].Timestamp) // RealisticEvents ascend in time
	if err := s.DeleteBefore(ctx, app, cut); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagDel, app)); n < 3 {
		t.Fatalf("%d deletion deltas: want one per transaction, several for %d rows", n, len(events)-keep)
	}
	if n := checkConsistent(t, db, s, app); n != keep {
		t.Fatalf("%d rows left, want %d", n, keep)
	}
	if n := checkConsistent(t, db, s, other); n != 100 {
		t.Fatalf("other app: %d rows, want 100", n)
	}
}

// Deletion deltas fold with the others and Count stays exact through folds; delta keys
// written as before deletions existed (uvarint under tagCount) still count.
func TestCountFoldsDeletions(t *testing.T) {
	db := memDB(t)
	s := New(db)
	ctx := context.Background()
	app := uuid.New()
	events := eventstest.RealisticEvents(t, app, foldAt+40)
	for i := range events {
		if err := s.WriteEvents(ctx, events[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	// One deletion delta per DeleteBefore: enough of them force a fold that includes them.
	for i := 1; i <= foldAt/2; i++ {
		if err := s.DeleteBefore(ctx, app, time.Unix(0, events[i].Timestamp)); err != nil {
			t.Fatal(err)
		}
	}
	want := int64(len(events) - foldAt/2)
	for round := 0; round < 2; round++ {
		if n, _, err := s.Count(ctx, app); err != nil || n != want {
			t.Fatalf("round %d: Count = %d, %v; want %d", round, n, err, want)
		}
	}
	if n := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagDel, app)); n != 0 {
		t.Fatalf("%d deletion deltas after the fold, want 0", n)
	}
	if n := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagCount, app)); n != 1 {
		t.Fatalf("%d count deltas after the fold, want 1", n)
	}
	checkConsistent(t, db, s, app)
	// A delta as layout 1 of the keys wrote it: a bare uvarint under a random tagCount key.
	if err := db.Update(func(txn *badger.Txn) error {
		return txn.Set(countKey(badgerdb.PrefixEvents, tagCount, app), binary.AppendUvarint(nil, 7))
	}); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.Count(ctx, app); err != nil || n != want+7 {
		t.Fatalf("with an old-style delta: Count = %d, %v; want %d", n, err, want+7)
	}
}

// Writers replaying and moving rows around the cut while DeleteBefore runs: the race must
// leave rows, index and Count agreeing, and a last DeleteBefore must leave exactly the rows
// at or after the cut.
func TestDeleteBeforeRacesWriters(t *testing.T) {
	db := smallDB(t)
	s := New(db)
	ctx := context.Background()
	app := uuid.New()
	events := eventstest.RealisticEvents(t, app, 3000)
	cutNs := events[len(events)/2].Timestamp
	cut := time.Unix(0, cutNs)
	// moved: the same ids under later times, some crossing the cut from before to after.
	moved := make([]model.Event, len(events))
	for i := range events {
		moved[i] = events[i]
		moved[i].Timestamp += int64(len(events)/4) * 1_000_003
	}
	if err := s.WriteEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	var wg, writers sync.WaitGroup
	errs := make(chan error, 8)
	stop := make(chan struct{})
	for w := 0; w < 3; w++ {
		wg.Add(1)
		writers.Add(1)
		go func(w int) {
			defer wg.Done()
			defer writers.Done()
			// The ids whose moved time crosses the cut, back and forth, in small batches.
			lo, hi := len(events)/4, len(events)/2
			for round := 0; round < 12; round++ {
				src := events
				if (w+round)%2 == 1 {
					src = moved
				}
				for k := lo; k < hi; k += 50 {
					if err := s.WriteEvents(ctx, src[k:k+50]); err != nil {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.DeleteBefore(ctx, app, cut); err != nil {
				errs <- err
				return
			}
		}
	}()
	writers.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkConsistent(t, db, s, app)
	if err := s.DeleteBefore(ctx, app, cut); err != nil {
		t.Fatal(err)
	}
	// Each id now sits at its events or moved time, whichever was written last; count the
	// ids whose stored time is at or after the cut.
	want := 0
	for i := range events {
		e, err := s.Event(ctx, app, events[i].ID)
		if err != nil {
			continue // deleted
		}
		if e.Timestamp < cutNs {
			t.Fatalf("event %d at %d survived a cut at %d", i, e.Timestamp, cutNs)
		}
		want++
	}
	if n := checkConsistent(t, db, s, app); n != want {
		t.Fatalf("%d rows, want %d", n, want)
	}
	if want < len(events)/2 {
		t.Fatalf("%d rows left, want at least the %d written at or after the cut", want, len(events)/2)
	}
}

// The session readers Usage relies on read both layouts and reject damage without panicking.
func TestSessionReaders(t *testing.T) {
	app := uuid.New()
	e := eventstest.RealisticEvents(t, app, 1)[0]
	sp := eventstest.RealisticSpans(t, app, 1)[0]
	var v1e model.Event
	if err := decodeEvent(unhex(t, layoutV1EventHex), &v1e); err != nil {
		t.Fatal(err)
	}
	var v1s model.Span
	if err := decodeSpan(unhex(t, layoutV1SpanHex), &v1s); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		val  []byte
		want uuid.UUID
		read func([]byte) (uuid.UUID, error)
	}{
		{"event", appendEvent(nil, &e), e.SessionID, eventSession},
		{"span", appendSpan(nil, &sp), sp.SessionID, spanSession},
		{"layout 1 event", unhex(t, layoutV1EventHex), v1e.SessionID, eventSession},
		{"layout 1 span", unhex(t, layoutV1SpanHex), v1s.SessionID, spanSession},
	}
	for _, c := range cases {
		if c.want == uuid.Nil {
			t.Fatalf("%s: test row without a session", c.name)
		}
		if got, err := c.read(c.val); err != nil || got != c.want {
			t.Fatalf("%s: session = %s, %v; want %s", c.name, got, err, c.want)
		}
		// Cut before the session id ends: an error, never a panic or a wrong id.
		end := 18
		if c.name == "span" || c.name == "layout 1 span" {
			end = 1 + 1 + len(sp.TraceID) + 1 + len(sp.ParentID) + 16
			if c.name == "layout 1 span" {
				end = 1 + 1 + len(v1s.TraceID) + 1 + len(v1s.ParentID) + 16
			}
		}
		for n := 0; n < end; n++ {
			if _, err := c.read(c.val[:n]); err == nil {
				t.Fatalf("%s: cut to %d bytes read without error", c.name, n)
			}
		}
		bad := append([]byte{99}, c.val[1:]...)
		if _, err := c.read(bad); err == nil {
			t.Fatalf("%s: unknown layout read without error", c.name)
		}
	}
}

func BenchmarkDeleteBefore(b *testing.B) {
	const n = 20_000
	db := memDB(b)
	s := New(db)
	ctx := context.Background()
	app := uuid.New()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		events := eventstest.RealisticEvents(b, app, n)
		if err := s.WriteEvents(ctx, events); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := s.DeleteBefore(ctx, app, time.Unix(0, events[n-1].Timestamp+1)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkUsage(b *testing.B) {
	const n = 20_000
	db := memDB(b)
	s := New(db)
	ctx := context.Background()
	app := uuid.New()
	events := eventstest.RealisticEvents(b, app, n)
	spans := eventstest.RealisticSpans(b, app, n)
	// Spread over three months.
	for i := range events {
		events[i].Timestamp += int64(i%3) * int64(31*24*time.Hour)
		spans[i].StartTime += int64(i%3) * int64(31*24*time.Hour)
	}
	if err := s.WriteEvents(ctx, events); err != nil {
		b.Fatal(err)
	}
	if err := s.WriteSpans(ctx, spans); err != nil {
		b.Fatal(err)
	}
	from, to := time.Unix(0, 0), time.Now().AddDate(10, 0, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u, err := s.Usage(ctx, app, from, to)
		if err != nil || len(u) != 3 {
			b.Fatalf("Usage = %v, %v", u, err)
		}
	}
	b.ReportMetric(float64(b.N*2*n)/b.Elapsed().Seconds(), "rows/s")
}

// A write that commits while a deletion is between its reads and its commit: a replay of a row
// the deletion read makes it conflict and retry, so the row is deleted, never left half; the
// same event at another time is another row, which the deletion did not read and leaves.
func TestDeleteBeforeConflictsWithWriter(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		shift    int64 // the racing write's time minus the row's
		wantKept int
	}{
		{"sent again past the cut", int64(time.Hour), 1},
		{"replayed in place", 0, 0},
		{"sent again within the deleted range", -int64(time.Hour), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := memDB(t)
			s := New(db)
			app := uuid.New()
			e := eventstest.RealisticEvents(t, app, 1)[0]
			if err := s.WriteEvents(ctx, []model.Event{e}); err != nil {
				t.Fatal(err)
			}
			racing := e
			racing.Timestamp += c.shift
			raced := 0
			testHookBeforeDeleteCommit = func() {
				if raced++; raced == 1 {
					if err := s.WriteEvents(ctx, []model.Event{racing}); err != nil {
						t.Error(err)
					}
				}
			}
			t.Cleanup(func() { testHookBeforeDeleteCommit = nil })
			if err := s.DeleteBefore(ctx, app, time.Unix(0, e.Timestamp+int64(time.Minute))); err != nil {
				t.Fatal(err)
			}
			if raced < 2 && c.wantKept == 0 {
				t.Fatalf("deletion committed %d times; want a conflict and a retry", raced)
			}
			if n := checkConsistent(t, db, s, app); n != c.wantKept {
				t.Fatalf("%d rows left, want %d", n, c.wantKept)
			}
		})
	}
}
