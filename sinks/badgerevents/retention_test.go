package badgerevents

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
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

// checkConsistent fails unless every point index entry of the app's events names a stored row,
// every bug report row's id has an entry, Count says how many rows there are, and the issue
// index is exact (in every app); it returns the number of rows.
func checkConsistent(t *testing.T, db *badger.DB, s *Store, app uuid.UUID) int {
	t.Helper()
	rows := 0
	var reports [][]byte // ids of bug report rows
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
				reports = append(reports, it.Item().KeyCopy(nil)[len(head)+8:])
			}
		}
		it.Close()
		for _, id := range reports {
			if _, err := txn.Get(appendIdxKey(nil, badgerdb.PrefixEvents, app, id)); err != nil {
				return fmt.Errorf("bug report %x has no point index entry: %w", id, err)
			}
		}
		head = appendHead(nil, badgerdb.PrefixEvents, tagIdx, app)
		it = txn.NewIterator(badger.IteratorOptions{Prefix: head})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
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
	if int64(rows) != n {
		t.Fatalf("%d rows, Count %d: want equal", rows, n)
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

// Writers replaying rows, and sending their ids again at other times, around the cut while
// DeleteBefore runs: the race must leave rows, point index entries and Count agreeing, and a
// last DeleteBefore must leave exactly the rows written at or after the cut.
func TestDeleteBeforeRacesWriters(t *testing.T) {
	db := smallDB(t)
	s := New(db)
	ctx := context.Background()
	app := uuid.New()
	events := eventstest.RealisticEvents(t, app, 3000)
	for i := 0; i < len(events); i += 7 { // some bug reports: their entries race too
		events[i].Type, events[i].Facts = model.BugReportType, model.EventFacts{}
	}
	cutNs := events[len(events)/2].Timestamp
	cut := time.Unix(0, cutNs)
	// moved: the same ids at later times (other rows), at or after the cut for those written.
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
			// The quarter of ids before the cut: their rows again (which retention deletes
			// meanwhile) and their later rows, each in turn, in small batches.
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
	// Every row written at or after the cut is there (events, and the moved ones the writers
	// wrote: ids lo to hi), and no other.
	stored := map[string]bool{}
	head := appendHead(nil, badgerdb.PrefixEvents, tagRow, app)
	if err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: head, PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			stored[string(it.Item().Key())] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range events {
		for _, e := range []model.Event{events[i], moved[i]} {
			written := e.Timestamp == events[i].Timestamp || i >= len(events)/4 && i < len(events)/2
			if written && e.Timestamp >= cutNs {
				want++
				if !stored[string(appendRowKey(nil, badgerdb.PrefixEvents, app, e.Timestamp, e.ID[:]))] {
					t.Fatalf("event %d at %d (cut %d) is not stored", i, e.Timestamp, cutNs)
				}
			}
		}
	}
	if n := checkConsistent(t, db, s, app); n != want || len(stored) != want {
		t.Fatalf("%d rows (%d keys), want %d", n, len(stored), want)
	}
}

// A bug report sent at two times: its point index entry names the newer row whatever the order
// of the writes, and retention deletes the entry only with that row, so the row that stays is
// found by BugReport, which reads only entries.
func TestDeleteBeforePointEntries(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		order     [2]int // the writes: 0 the older row, 1 the newer
		cutAfter  int    // retention's cut just after this row
		wantFound bool   // BugReport finds the newer row after retention
	}{
		{"newer written first, older deleted", [2]int{1, 0}, 0, true},
		{"newer written last, older deleted", [2]int{0, 1}, 0, true},
		{"both deleted", [2]int{1, 0}, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := memDB(t)
			s := New(db)
			app := uuid.New()
			var at [2]model.Event
			at[0] = eventstest.RealisticEvents(t, app, 1)[0]
			at[0].Type, at[0].Facts = model.BugReportType, model.EventFacts{}
			at[1] = at[0]
			at[1].Timestamp += int64(time.Hour)
			for _, i := range c.order {
				if err := s.WriteEvents(ctx, []model.Event{at[i]}); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := s.BugReport(ctx, app, at[0].ID); err != nil || got.Timestamp != at[1].Timestamp {
				t.Fatalf("before retention: BugReport at %d, %v; want the newer row (%d)", got.Timestamp, err, at[1].Timestamp)
			}
			if err := s.DeleteBefore(ctx, app, time.Unix(0, at[c.cutAfter].Timestamp+1)); err != nil {
				t.Fatal(err)
			}
			got, err := s.BugReport(ctx, app, at[0].ID)
			switch {
			case c.wantFound && (err != nil || got.Timestamp != at[1].Timestamp):
				t.Fatalf("BugReport at %d, %v; want the newer row (%d)", got.Timestamp, err, at[1].Timestamp)
			case !c.wantFound && !errors.Is(err, sinks.ErrNotFound):
				t.Fatalf("BugReport at %d, %v; want ErrNotFound", got.Timestamp, err)
			}
			checkConsistent(t, db, s, app)
		})
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
// same event at another time is another row, which the deletion did not read and leaves, but
// for a bug report, whose point index entry both read: the deletion retries and leaves the
// entry, which names the new row.
func TestDeleteBeforeConflictsWithWriter(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		typ      string
		shift    int64 // the racing write's time minus the row's
		wantKept int
		conflict bool // the deletion must retry
	}{
		{"sent again past the cut", "custom", int64(time.Hour), 1, false},
		{"replayed in place", "custom", 0, 0, true},
		{"sent again within the deleted range", "custom", -int64(time.Hour), 1, false},
		{"bug report sent again past the cut", model.BugReportType, int64(time.Hour), 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// No walk event: the deletion and the write share no session walk to conflict on,
			// only the row itself (and a bug report's entry).
			db, s, e := storeOfOne(t, c.typ)
			app := e.AppID
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
			if c.conflict && raced < 2 {
				t.Fatalf("deletion committed %d times; want a conflict and a retry", raced)
			}
			if n := checkConsistent(t, db, s, app); n != c.wantKept {
				t.Fatalf("%d rows left, want %d", n, c.wantKept)
			}
			if c.typ == model.BugReportType {
				if got, err := s.BugReport(ctx, app, e.ID); err != nil || got.Timestamp != racing.Timestamp {
					t.Fatalf("BugReport at %d, %v; want the new row (%d)", got.Timestamp, err, racing.Timestamp)
				}
			}
		})
	}
}

// A damaged point index entry (not the 8 bytes of a time) is refused by BugReport, repaired by
// the next write of a bug report of its id, and deleted by retention with any row of its id.
func TestDamagedPointEntry(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		value []byte // the damaged entry
		// What comes after: retention past the bug report's row, or a write of it again, at its
		// time or an hour older (a replay: the entry must still name the newer row), with or
		// without a newer row of another type of the id (never the entry's).
		retention, older, newerOther bool
	}{
		{name: "short, then written", value: []byte{1, 2, 3}},
		{name: "empty, then written", value: []byte{}},
		{name: "long, then written", value: make([]byte, 9)},
		{name: "short, then an older row written", value: []byte{1, 2, 3}, older: true},
		{name: "short, then an older row written, a newer row of another type", value: []byte{1, 2, 3}, older: true, newerOther: true},
		{name: "long, then deleted", value: make([]byte, 9), retention: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, s, br := storeOfOne(t, model.BugReportType)
			app := br.AppID
			writeEvents(t, s, []model.Event{br})
			ik := appendIdxKey(nil, badgerdb.PrefixEvents, app, br.ID[:])
			if err := db.Update(func(txn *badger.Txn) error { return txn.Set(ik, c.value) }); err != nil {
				t.Fatal(err)
			}
			if got, err := s.BugReport(ctx, app, br.ID); !errors.Is(err, errCorrupt) {
				t.Fatalf("BugReport over a damaged entry = %v at %d, %v; want errCorrupt", got.ID, got.Timestamp, err)
			}
			if c.retention {
				if err := s.DeleteBefore(ctx, app, time.Unix(0, br.Timestamp+1)); err != nil {
					t.Fatal(err)
				}
				if n := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagIdx, app)); n != 0 {
					t.Fatalf("%d point index entries after retention deleted the only row, want 0", n)
				}
				return
			}
			rows := 1
			if c.newerOther {
				other := br
				other.Type, other.Timestamp = "custom", br.Timestamp+int64(time.Hour)
				writeEvents(t, s, []model.Event{other})
				rows++
			}
			again := br
			if c.older {
				again.Timestamp -= int64(time.Hour)
				rows++
			}
			if err := s.WriteEvents(ctx, []model.Event{again}); err != nil {
				t.Fatalf("writing the bug report again over its damaged entry: %v", err)
			}
			if got, err := s.BugReport(ctx, app, br.ID); err != nil || got.Timestamp != br.Timestamp {
				t.Fatalf("BugReport after the write = %d, %v; want the newest bug report row (%d)", got.Timestamp, err, br.Timestamp)
			}
			if n := checkConsistent(t, db, s, app); n != rows {
				t.Fatalf("%d rows of the app, want %d", n, rows)
			}
		})
	}
}

// storeOfOne is an empty store in memory and an event of type typ for it, without a walk.
func storeOfOne(t *testing.T, typ string) (*badger.DB, *Store, model.Event) {
	t.Helper()
	db := memDB(t)
	e := eventstest.RealisticEvents(t, uuid.New(), 1)[0]
	e.Type, e.Facts = typ, model.EventFacts{}
	return db, New(db), e
}
