package badgerevents

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/eventstest"
)

// filterReady waits until s's key filter answers (its build has read the row keys).
func filterReady(t *testing.T, s *Store) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !s.ids.Ready(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the id filter was not built within 10 s")
		}
	}
}

func checkCount(t *testing.T, s *Store, app uuid.UUID, want int, when string) {
	t.Helper()
	if n, _, err := s.Count(context.Background(), app); err != nil || n != int64(want) {
		t.Fatalf("%s: Count = %d, %v; want %d", when, n, err, want)
	}
}

// Rows stored before a Store started, written again through it once its filter answers, are
// found (the filter's build read them), so they are not counted twice.
func TestIDFilterKnowsStoredRows(t *testing.T) {
	db := memDB(t)
	ctx := context.Background()
	app := uuid.New()
	events := eventstest.RealisticEvents(t, app, 3000)
	spans := eventstest.RealisticSpans(t, app, 500)
	first := New(db)
	if err := first.WriteEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := first.WriteSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	first.Close()

	s := New(db)
	defer s.Close()
	more := eventstest.RealisticEvents(t, app, 10)
	if err := s.WriteEvents(ctx, more); err != nil { // starts the build
		t.Fatal(err)
	}
	filterReady(t, s)
	for i := 0; i < len(events); i += 500 {
		if err := s.WriteEvents(ctx, events[i:i+500]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WriteSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	checkCount(t, s, app, len(events)+len(more), "events written again")
	if _, n, err := s.Count(ctx, app); err != nil || n != int64(len(spans)) {
		t.Fatalf("spans written again: %d spans counted, %v; want %d", n, err, len(spans))
	}
}

// A filter that fills up is replaced by a larger one built while writes go on; every id
// written before, during and after that build is found when written again.
func TestIDFilterGrows(t *testing.T) {
	old := idFilterMinWords
	idFilterMinWords = 16 // full at 128 ids
	t.Cleanup(func() { idFilterMinWords = old })
	db := memDB(t)
	ctx := context.Background()
	app := uuid.New()
	s := New(db)
	defer s.Close()
	events := eventstest.RealisticEvents(t, app, 6000)
	for i := 0; i < len(events); i += 50 {
		if err := s.WriteEvents(ctx, events[i:i+50]); err != nil {
			t.Fatal(err)
		}
	}
	filterReady(t, s)
	if n := s.ids.Words(); n <= 16 {
		t.Fatalf("the filter has %d words after 6,000 ids, want it grown past 16", n)
	}
	checkCount(t, s, app, len(events), "written once")
	rand.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	for i := 0; i < len(events); i += 300 {
		if err := s.WriteEvents(ctx, events[i:i+300]); err != nil {
			t.Fatal(err)
		}
	}
	checkCount(t, s, app, len(events), "written again")
}

// Writers racing through one Store on the same new ids store and count each once: one of two
// writers of an id skips the read, the other reads it and one of them retries at commit.
func TestIDFilterRacingWriters(t *testing.T) {
	db := memDB(t)
	ctx := context.Background()
	app := uuid.New()
	s := New(db)
	defer s.Close()
	if err := s.WriteEvents(ctx, eventstest.RealisticEvents(t, app, 1)); err != nil {
		t.Fatal(err)
	}
	filterReady(t, s)
	events := eventstest.RealisticEvents(t, app, 2000)
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 4 {
		mine := append([]model.Event(nil), events...)
		rand.Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
		wg.Go(func() {
			for i := 0; i < len(mine); i += 100 {
				if err := s.WriteEvents(ctx, mine[i:i+100]); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(err)
	}
	checkCount(t, s, app, len(events)+1, "four writers of the same ids")
}

// A database closed under a build (its owner did not close the Store first) ends the build;
// it must not take the process down.
func TestIDFilterDatabaseClosedUnderBuild(t *testing.T) {
	for range 20 {
		db := memDB(t)
		ctx := context.Background()
		app := uuid.New()
		if err := New(db).WriteEvents(ctx, eventstest.RealisticEvents(t, app, 2000)); err != nil {
			t.Fatal(err)
		}
		s := New(db)
		if err := s.WriteEvents(ctx, eventstest.RealisticEvents(t, app, 1)); err != nil { // starts the build
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		s.Close() // waits for the build
	}
}
