package badgerevents

import (
	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/eventstest"
)

// checkIssueIndex fails unless the issue index holds exactly one copy of each event row of an
// issue type, with the row's value, in every app of db.
func checkIssueIndex(t *testing.T, db *badger.DB) {
	t.Helper()
	want := map[string][]byte{} // key suffix (app, time, id) → value
	rows := append([]byte(badgerdb.PrefixEvents), tagRow)
	eachKey(t, db, rows, func(k, v []byte) {
		var rv rowView
		issue, err := rv.issueRow(v)
		if err != nil {
			t.Fatalf("row %x: %v", k, err)
		}
		if issue {
			want[string(k[len(rows):])] = v
		}
	})
	checkIssueCopies(t, db, append([]byte(badgerdb.PrefixEvents), tagIssue), want)
}

// checkIssueCopies fails unless the issue index copies under prefix are exactly want: their
// keys past prefix, each with its row's value.
func checkIssueCopies(t *testing.T, db *badger.DB, prefix []byte, want map[string][]byte) {
	t.Helper()
	got := 0
	eachKey(t, db, prefix, func(k, v []byte) {
		got++
		w, ok := want[string(k[len(prefix):])]
		if !ok {
			t.Fatalf("index copy %x has no issue row", k)
		}
		if !bytes.Equal(v, w) {
			t.Fatalf("index copy %x differs from its row's newest copy", k)
		}
	})
	if got != len(want) {
		t.Fatalf("%d index copies, want one per issue row (%d)", got, len(want))
	}
}

// eachKey calls fn with every key under prefix and its value (copies).
func eachKey(t *testing.T, db *badger.DB, prefix []byte, fn func(k, v []byte)) {
	t.Helper()
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			fn(it.Item().KeyCopy(nil), v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dropIssueIndex makes db look written before the issue index: no copies, no marker. It
// deletes in transactions (DropPrefix would block concurrent writers) and retries conflicts.
func dropIssueIndex(t *testing.T, db *badger.DB) {
	t.Helper()
	prefix := append([]byte(badgerdb.PrefixEvents), tagIssue)
	for more := true; more; {
		err := db.Update(func(txn *badger.Txn) error {
			if err := txn.Delete(issueMarker); err != nil {
				return err
			}
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			defer it.Close()
			n := 0
			for it.Rewind(); it.Valid() && n < 1000; it.Next() {
				if err := txn.Delete(it.Item().KeyCopy(nil)); err != nil {
					return err
				}
				n++
			}
			more = n == 1000
			return nil
		})
		if errors.Is(err, badger.ErrConflict) {
			more = true
		} else if err != nil {
			t.Error(err) // from goroutines too
			return
		}
	}
}

// issueAnswers are the answers of every reader the issue index serves.
type issueAnswers struct {
	Cells        []model.IssueCell
	Events       []model.Event
	Distribution model.Distribution
	Values       model.FilterValues
	Walks        map[uuid.UUID][]model.WalkEvent
	Paths        [][]model.Event
}

func answersOf(t *testing.T, s *Store, app uuid.UUID) issueAnswers {
	t.Helper()
	ctx := context.Background()
	q := model.IssueQuery{Classes: []model.IssueClass{model.ClassCrash, model.ClassANR}}
	q.App, q.From, q.To = app, math.MinInt64, math.MaxInt64
	var a issueAnswers
	var err error
	if a.Cells, err = s.IssueCells(ctx, &q, model.Cells{}); err != nil {
		t.Fatal(err)
	}
	if a.Events, err = s.IssueEvents(ctx, &q, model.EventPage{Limit: 1000}); err != nil {
		t.Fatal(err)
	}
	if a.Distribution, err = s.IssueDistribution(ctx, &q); err != nil {
		t.Fatal(err)
	}
	if a.Values, err = s.FilterValues(ctx, app, q.Classes); err != nil {
		t.Fatal(err)
	}
	a.Walks = map[uuid.UUID][]model.WalkEvent{}
	wq := model.WalkQuery{App: app, From: math.MinInt64, To: math.MaxInt64, GroupID: genGroups[0], Class: model.ClassCrash}
	if err := s.SessionWalks(ctx, &wq, func(session uuid.UUID, evs []model.WalkEvent) error {
		a.Walks[session] = evs
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if a.Paths, err = s.PathSessions(ctx, app, model.ClassCrash, genGroups[0], 3, 5); err != nil {
		t.Fatal(err)
	}
	if len(a.Cells) == 0 || len(a.Events) == 0 || len(a.Walks) == 0 || len(a.Paths) == 0 {
		t.Fatalf("answers without issues: %d cells, %d events, %d walks, %d paths: the test needs some",
			len(a.Cells), len(a.Events), len(a.Walks), len(a.Paths))
	}
	return a
}

// TestIssueIndex: the index holds exactly the issue rows through every kind of write and
// deletion, a store written before it gets it built, and the readers answer the same from it
// as from all rows.
func TestIssueIndex(t *testing.T) {
	ctx := context.Background()
	app := uuid.MustParse("6f1c2d3e-4a5b-4c6d-8e7f-00112233447f")
	sessions := []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New()}
	issueAt := func(evs []model.Event, typ string) int {
		return slices.IndexFunc(evs, func(e model.Event) bool { return e.Type == typ })
	}
	cases := []struct {
		name string
		// change acts on a store holding evs and returns the app's events it holds after.
		change func(t *testing.T, s *Store, evs []model.Event) []model.Event
	}{
		{"written", func(t *testing.T, s *Store, evs []model.Event) []model.Event { return evs }},
		{"written twice", func(t *testing.T, s *Store, evs []model.Event) []model.Event {
			writeEvents(t, s, evs)
			return evs
		}},
		{"issue rewritten as another type, same time", func(t *testing.T, s *Store, evs []model.Event) []model.Event {
			i := issueAt(evs, "anr")
			evs[i].Type, evs[i].Facts = "custom", model.EventFacts{}
			writeEvents(t, s, evs[i:i+1])
			return evs
		}},
		{"other type rewritten as an issue, same time", func(t *testing.T, s *Store, evs []model.Event) []model.Event {
			i := issueAt(evs, "custom")
			evs[i].Type = "exception"
			evs[i].Facts = model.EventFacts{GroupID: genGroups[0], Fatal: true, Issue: model.IssueDisplay{Type: "E", Severity: "fatal"}}
			writeEvents(t, s, evs[i:i+1])
			return evs
		}},
		{"retention", func(t *testing.T, s *Store, evs []model.Event) []model.Event {
			cut := genBase + 12*int64(time.Second)
			if err := s.DeleteBefore(ctx, app, time.Unix(0, cut)); err != nil {
				t.Fatal(err)
			}
			kept := slices.DeleteFunc(evs, func(e model.Event) bool { return e.Timestamp < cut })
			n := 0
			for _, e := range kept {
				if isIssueType(e.Type) {
					n++
				}
			}
			if got := countKeys(t, s.db, appendHead(nil, badgerdb.PrefixEvents, tagIssue, app)); got != n {
				t.Fatalf("%d index copies after retention, want %d", got, n)
			}
			return kept
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := memDB(t)
			s := New(db)
			evs := genEvents(7, app, 1200, genBase, sessions)
			writeEvents(t, s, genEvents(8, uuid.New(), 300, genBase, sessions)) // another app
			writeEvents(t, s, evs)
			evs = c.change(t, s, evs)
			checkIssueIndex(t, db)
			checkConsistent(t, db, s, app)
			checkAll(t, s, app, evs)
			want := answersOf(t, s, app)

			// The same rows written before the index: the first issue query builds it...
			dropIssueIndex(t, db)
			if got := answersOf(t, New(db), app); !reflect.DeepEqual(got, want) {
				t.Fatal("answers differ after the index was built by a query")
			}
			checkIssueIndex(t, db)
			// ...and so does Open.
			dropIssueIndex(t, db)
			opened, err := Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			checkIssueIndex(t, db)
			if got := answersOf(t, opened, app); !reflect.DeepEqual(got, want) {
				t.Fatal("answers differ after Open built the index")
			}
		})
	}
}

// While one query builds the index, the others read all rows and answer the same; a build that
// stopped half-way resumes, or starts again in a new Store, and completes the index.
func TestIssueIndexBuild(t *testing.T) {
	ctx := context.Background()
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	db := smallDB(t) // several build transactions
	s := New(db)
	writeEvents(t, s, genEvents(3, app, 3000, genBase, sessions))
	want := answersOf(t, s, app)
	dropIssueIndex(t, db)

	cases := []struct {
		name  string
		setup func(t *testing.T) *Store
	}{
		{"building elsewhere: read all rows", func(t *testing.T) *Store {
			s := New(db)
			s.index.mu.Lock() // a build in progress
			t.Cleanup(s.index.mu.Unlock)
			return s
		}},
		{"stopped half-way, same store", func(t *testing.T) *Store {
			s := New(db)
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := s.issuesIndexed(cctx); err == nil {
				t.Fatal("a build under a cancelled context succeeded")
			}
			head := append([]byte(badgerdb.PrefixEvents), tagRow)
			next, err := s.tryIndexIssues(head, head, 500)
			if err != nil || next == nil {
				t.Fatalf("first build transaction: next %x, %v", next, err)
			}
			s.index.resume = next
			return s
		}},
		{"stopped half-way, new store", func(t *testing.T) *Store {
			head := append([]byte(badgerdb.PrefixEvents), tagRow)
			if _, err := New(db).tryIndexIssues(head, head, 500); err != nil {
				t.Fatal(err)
			}
			return New(db)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dropIssueIndex(t, db)
			s := c.setup(t)
			if got := answersOf(t, s, app); !reflect.DeepEqual(got, want) {
				t.Fatal("answers differ")
			}
			if s.index.ready.Load() {
				checkIssueIndex(t, db)
			}
		})
	}
	if n := countKeys(t, db, append([]byte(badgerdb.PrefixEvents), tagIssue)); n == 0 {
		t.Fatal("no index copies after the builds")
	}
}

// A build racing writers that write issue rows again (at their times, and an hour later: other
// rows) and retention that deletes them leaves the index exact.
func TestIssueIndexBuildRaces(t *testing.T) {
	ctx := context.Background()
	db := smallDB(t)
	s := New(db)
	app := uuid.New()
	evs := eventstest.RealisticEvents(t, app, 3000)
	writeEvents(t, s, evs)
	dropIssueIndex(t, db)
	moved := slices.Clone(evs)
	for i := range moved {
		moved[i].Timestamp += int64(time.Hour)
	}
	done := make(chan error, 2)
	go func() {
		// Each time in turn, then retention at the middle of the later times.
		for round := 0; round < 4; round++ {
			src := [2][]model.Event{moved, evs}[round%2]
			for k := 0; k < len(evs); k += 100 {
				if err := s.WriteEvents(ctx, src[k:k+100]); err != nil {
					done <- err
					return
				}
			}
		}
		done <- s.DeleteBefore(ctx, app, time.Unix(0, evs[len(evs)/2].Timestamp+int64(time.Hour)))
	}()
	go func() {
		for i := 0; i < 20; i++ {
			dropIssueIndex(t, db)
			if _, err := New(db).issuesIndexed(ctx); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := New(db).issuesIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	checkIssueIndex(t, db)
	checkConsistent(t, db, s, app)
}
