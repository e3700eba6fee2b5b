package badgerevents

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// The contract's suite (eventstest) covers writes out of order, replays and retention; these
// tests cover what only this backend does: rows rewritten with other fields (last write wins,
// so a step moves between sessions, times and screens), transactions too big for a session's
// journey writes, and the build for stores written before journey facts.

type factsFunc func(ctx context.Context, app uuid.UUID, from, to int64, fn func(*model.JourneyFact) error) error

// factSet lists the facts facts gives, as sorted text.
func factSet(t *testing.T, facts factsFunc, app uuid.UUID, from, to int64) []string {
	t.Helper()
	var out []string
	if err := facts(context.Background(), app, from, to, func(f *model.JourneyFact) error {
		out = append(out, fmt.Sprintf("%d %v %q→%q %s/%d %q", f.Event.Timestamp, f.Event.Version, f.From, f.Event.Screen, f.Event.GroupID, f.Event.Class, f.Event.Title))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// walked is JourneyFacts by its definition: SessionWalks, each session walked whole.
func walked(s *Store) factsFunc {
	return func(ctx context.Context, app uuid.UUID, from, to int64, fn func(*model.JourneyFact) error) error {
		return sinks.WalkJourneyFacts(ctx, s.SessionWalks, app, from, to, fn)
	}
}

func checkJourney(t *testing.T, s *Store, app uuid.UUID, what string) {
	t.Helper()
	for _, w := range [][2]int64{{minTime, 1 << 62}, {genBase + 5*int64(time.Second), genBase + 31*int64(time.Second) + 1}} {
		got, want := factSet(t, s.JourneyFacts, app, w[0], w[1]), factSet(t, walked(s), app, w[0], w[1])
		if len(want) == 0 {
			t.Fatalf("%s: no facts in [%d, %d): the test checks nothing", what, w[0], w[1])
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: [%d, %d): %d facts, the walk of the stored rows has %d\n got  %q\n want %q", what, w[0], w[1], len(got), len(want), got, want)
		}
	}
}

func openStore(t *testing.T, db *badger.DB) *Store {
	t.Helper()
	s, err := Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJourneyRewrites(t *testing.T) {
	s := openStore(t, memDB(t))
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	evs := genEvents(5, app, 600, genBase, sessions)
	writeEvents(t, s, evs)
	checkJourney(t, s, app, "written")

	var screens []int
	for i := range evs {
		if evs[i].Facts.Screen != "" {
			screens = append(screens, i)
		}
	}
	edits := []struct {
		name   string
		change func(e *model.Event)
	}{
		{"to another session", func(e *model.Event) { e.SessionID = sessions[(slices.Index(sessions, e.SessionID)+1)%3] }},
		{"to another time", func(e *model.Event) { e.Timestamp += 17 * int64(time.Second) }},
		{"to another screen", func(e *model.Event) { e.Facts.Screen = "Elsewhere" }},
		{"to no walk event", func(e *model.Event) { e.Type, e.Facts = "custom", model.EventFacts{} }},
		{"to a crash", func(e *model.Event) {
			e.Type, e.Facts = "exception", model.EventFacts{GroupID: genGroups[0], Fatal: true,
				Issue: model.IssueDisplay{Type: "java.lang.X", Message: "m", Severity: "fatal"}}
		}},
	}
	for k, ed := range edits {
		var batch []model.Event
		for j, i := range screens {
			if j%len(edits) == k {
				e := evs[i]
				ed.change(&e)
				batch = append(batch, e)
			}
		}
		// The same ids again in one call, changed twice: the last write wins.
		again := slices.Clone(batch[:len(batch)/2])
		for i := range again {
			again[i].Attribute.AppVersion = "9.9"
		}
		writeEvents(t, s, append(batch, again...))
		checkJourney(t, s, app, ed.name)
	}
	writeEvents(t, s, evs) // back as first written
	checkJourney(t, s, app, "written again")
}

// A session whose journey writes do not fit one transaction with the rows: the write is split
// until they do, and every fact is kept.
func TestJourneyLongSession(t *testing.T) {
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).
		WithMemTableSize(2 << 20).WithValueThreshold(1 << 18).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s := openStore(t, db)
	app := uuid.New()
	evs := genEvents(9, app, 7000, genBase, []uuid.UUID{uuid.New()})
	for i := range evs {
		if i%50 != 0 { // mostly screens: a walk of thousands of steps
			evs[i].Type, evs[i].Facts = "screen_view", model.EventFacts{Screen: genScreens[i%len(genScreens)]}
		}
	}
	for i := 0; i < len(evs); i += 1000 {
		writeEvents(t, s, evs[i:i+1000])
	}
	checkJourney(t, s, app, "long session")
	if err := s.DeleteBefore(context.Background(), app, time.Unix(0, genBase+20*int64(time.Second))); err != nil {
		t.Fatal(err)
	}
	checkJourney(t, s, app, "long session after retention")
}

// dropJourney removes every step, fact and the marker: the store as written before them.
func dropJourney(t *testing.T, db *badger.DB) {
	t.Helper()
	err := db.Update(func(txn *badger.Txn) error {
		for _, tag := range []byte{tagWalk, tagFacts} {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: append([]byte(badgerdb.PrefixEvents), tag)})
			var keys [][]byte
			for it.Rewind(); it.Valid(); it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			it.Close()
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
		}
		return txn.Delete(journeyMarker)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestJourneyBuild(t *testing.T) {
	db := memDB(t)
	app := uuid.New()
	s := openStore(t, db)
	writeEvents(t, s, genEvents(3, app, 2000, genBase, []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New()}))
	want := factSet(t, s.JourneyFacts, app, minTime, 1<<62)
	dropJourney(t, db)

	// A build in small transactions, stopped half-way, then resumed by Open.
	old := New(db)
	head := append([]byte(badgerdb.PrefixEvents), tagRow)
	next, err := old.tryJourney(head, head, 700)
	if err != nil || next == nil {
		t.Fatalf("first build step: next %q, error %v", next, err)
	}
	if countKeys(t, db, append([]byte(badgerdb.PrefixEvents), tagWalk)) == 0 {
		t.Fatal("the first build step kept no step")
	}
	// While a build runs elsewhere, queries walk the sessions.
	busy := New(db)
	busy.journey.mu.Lock()
	if got := factSet(t, busy.JourneyFacts, app, minTime, 1<<62); !slices.Equal(got, want) {
		t.Errorf("during a build: %d facts, want %d", len(got), len(want))
	}
	busy.journey.mu.Unlock()
	if countKeys(t, db, journeyMarker) != 0 {
		t.Fatal("a query during a build set the marker")
	}
	s = openStore(t, db)
	if got := factSet(t, s.JourneyFacts, app, minTime, 1<<62); !slices.Equal(got, want) {
		t.Errorf("after the build: %d facts, want %d\n got  %q\n want %q", len(got), len(want), got, want)
	}
}

// BenchmarkJourney1M is the app journey over a store of 1M events shaped like the recorded SDK
// traffic (synthetic copies of every fixture batch, eventstest.Copies) spread over 30 days, on
// disk: the last 7 days read from journey facts, and walked from the rows (SessionWalks, what
// the journey did before facts). facts/s counts the facts of the window.
func BenchmarkJourney1M(b *testing.B) {
	const n, chunk = 1_000_000, 10_000
	db, err := badgerdb.OpenEvents(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := Open(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	app := uuid.New()
	bodies := eventstest.FixtureBodies(b, app)
	end := time.Date(2026, 7, 31, 0, 0, 0, 0, time.UTC)
	copies := eventstest.NewCopies(bodies, app, end, 30*24*time.Hour, rand.New(rand.NewPCG(3, 5)))
	var buf []model.Event
	for i := 0; i < n; i += chunk {
		buf = copies.Append(buf[:0], chunk)
		writeEvents(b, s, buf)
	}
	if err := db.Flatten(2); err != nil {
		b.Fatal(err)
	}
	from, to := end.Add(-7*24*time.Hour).UnixNano(), end.UnixNano()
	for _, c := range []struct {
		name  string
		facts factsFunc
	}{{"facts-7d", s.JourneyFacts}, {"walked-7d", walked(s)}} {
		b.Run(c.name, func(b *testing.B) {
			var count int
			b.ReportAllocs()
			for b.Loop() {
				count = 0
				if err := c.facts(context.Background(), app, from, to, func(*model.JourneyFact) error {
					count++
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
			if count == 0 {
				b.Fatal("no facts")
			}
			b.ReportMetric(float64(count), "facts")
		})
	}
}
