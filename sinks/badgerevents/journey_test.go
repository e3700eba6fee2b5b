package badgerevents

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

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

// factSet lists the facts facts gives, summed per fact and UTC day (as a day's sum gives them:
// how many, the earliest and the latest time), as sorted text.
func factSet(t *testing.T, facts factsFunc, app uuid.UUID, from, to int64) []string {
	t.Helper()
	type sum struct{ n, first, last int64 }
	sums := map[string]*sum{}
	if err := facts(context.Background(), app, from, to, func(f *model.JourneyFact) error {
		k := fmt.Sprintf("%d %v %q→%q %s/%d %q", model.DayStart(f.Event.Timestamp), f.Event.Version, f.From, f.Event.Screen, f.Event.GroupID, f.Event.Class, f.Event.Title)
		if model.DayStart(f.LastTime()) != model.DayStart(f.Event.Timestamp) {
			t.Errorf("a fact from %d to %d crosses a day", f.Event.Timestamp, f.LastTime())
		}
		if c := sums[k]; c != nil {
			c.n += int64(f.Count())
			c.first, c.last = min(c.first, f.Event.Timestamp), max(c.last, f.LastTime())
		} else {
			sums[k] = &sum{int64(f.Count()), f.Event.Timestamp, f.LastTime()}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k, c := range sums {
		out = append(out, fmt.Sprintf("%s ×%d %d..%d", k, c.n, c.first, c.last))
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

// checkJourney compares JourneyFacts with the walk over a window of whole days and one that
// cuts a day, asked twice: the first read of whole days sums them, the second reads the sums.
func checkJourney(t *testing.T, s *Store, app uuid.UUID, what string) {
	t.Helper()
	for _, w := range [][2]int64{{minTime, 1 << 62}, {genBase + 5*int64(time.Second), genBase + 31*int64(time.Second) + 1}} {
		want := factSet(t, walked(s), app, w[0], w[1])
		if len(want) == 0 {
			t.Fatalf("%s: no facts in [%d, %d): the test checks nothing", what, w[0], w[1])
		}
		for _, read := range []string{"first read", "second read"} {
			if got := factSet(t, s.JourneyFacts, app, w[0], w[1]); !slices.Equal(got, want) {
				t.Errorf("%s, %s: [%d, %d): %d facts, the walk of the stored rows has %d\n got  %q\n want %q", what, read, w[0], w[1], len(got), len(want), got, want)
			}
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
	journeyRewrites(t, openStore(t, memDB(t)), func() {})
}

// journeyRewrites writes rows and rewrites them with other fields, checking the journey after
// each write once settled has run.
func journeyRewrites(t *testing.T, s *Store, settled func()) {
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	evs := genEvents(5, app, 600, genBase, sessions)
	writeEvents(t, s, evs)
	settled()
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
		settled()
		checkJourney(t, s, app, ed.name)
	}
	writeEvents(t, s, evs) // as first written (the rows sent "to another time" stay: other rows)
	settled()
	checkJourney(t, s, app, "written again")
}

// A walk event sent again at another time is another row, and another step of its session:
// adding it keeps the first, and deleting the first (retention) keeps it.
func TestJourneyOneIdAtTwoTimes(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, memDB(t))
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	evs := genEvents(6, app, 600, genBase, sessions)
	writeEvents(t, s, evs)
	cut := genBase + 10*int64(time.Second)
	var again []model.Event
	for _, e := range evs {
		if e.Facts.Screen != "" && e.Timestamp < cut {
			e.Timestamp += 25 * int64(time.Second)
			again = append(again, e)
		}
	}
	if len(again) == 0 {
		t.Fatal("no walk event before the cut: the test checks nothing")
	}
	writeEvents(t, s, again)
	checkJourney(t, s, app, "walk events sent again 25 s later")
	if err := s.DeleteBefore(ctx, app, time.Unix(0, cut)); err != nil {
		t.Fatal(err)
	}
	checkJourney(t, s, app, "the first rows deleted")
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
	week, now := end.Add(-7*24*time.Hour).UnixNano(), end.UnixNano()
	// half-day: the part of a day a dashboard window's start cuts (12:00 five days ago): no
	// day sum covers it, so its sessions' facts are read.
	halfFrom := end.Add(-5*24*time.Hour - 12*time.Hour).UnixNano()
	for _, c := range []struct {
		name     string
		facts    factsFunc
		from, to int64
	}{{"facts-7d", s.JourneyFacts, week, now}, {"walked-7d", walked(s), week, now},
		{"facts-half-day", s.JourneyFacts, halfFrom, halfFrom + int64(12*time.Hour)}} {
		from, to := c.from, c.to
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

// TestJourneyDaySums: a window's whole days are summed by the first read, read from their sums
// after it, and summed again once a write changes their facts; a sum made by a read older than
// the day's latest change is not used; retention deletes the sums of the days it empties.
func TestJourneyDaySums(t *testing.T) {
	s := openStore(t, memDB(t))
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New()}
	const day = int64(24 * time.Hour)
	d0 := model.DayStart(genBase)
	for k := range int64(3) {
		writeEvents(t, s, genEvents(uint64(10+k), app, 300, genBase+k*day, sessions))
	}
	from, to := d0, d0+3*day
	kept := func() []int64 { return keptSums(t, s, journeyDays, app) }
	calls := func() (n int) {
		if err := s.JourneyFacts(context.Background(), app, from, to, func(*model.JourneyFact) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	check := func(what string) {
		t.Helper()
		want := factSet(t, walked(s), app, from, to)
		if got := factSet(t, s.JourneyFacts, app, from, to); len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("%s: JourneyFacts\n got  %q\n want %q", what, got, want)
		}
	}

	check("first read")
	if got := kept(); !slices.Equal(got, []int64{d0, d0 + day, d0 + 2*day}) {
		t.Fatalf("sums kept for days %v, want the three", got)
	}
	facts := len(factSet(t, walked(s), app, from, to))
	individual := 0
	if err := walked(s)(context.Background(), app, from, to, func(*model.JourneyFact) error { individual++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n := calls(); n != facts || individual <= facts {
		t.Fatalf("read from sums: %d facts passed, want %d (one per fact and day; %d unsummed)", n, facts, individual)
	}

	// A read's sum of day 1, made before a write changes the day's facts, is kept after it (as
	// a read that ran beside the write would): the day's mark is newer, so it is not used.
	txn := s.db.NewTransaction(false)
	stale := newDaySum(d0+day, txn.ReadTs())
	txn.Discard()
	writeEvents(t, s, genEvents(20, app, 50, genBase+day+int64(time.Hour), []uuid.UUID{uuid.New()}))
	s.writeDaySums(app, []*daySum{stale})
	settle(t, s)
	check("after a write to day 1, with a stale sum of it kept")
	check("day 1 summed again")

	// A day that still gets events (today) is kept too, and ended by each write to it.
	today := model.DayStart(time.Now().UnixNano())
	writeEvents(t, s, genEvents(21, app, 50, today, sessions))
	from, to = d0, today+day
	check("with today")
	if got := kept(); !slices.Contains(got, today) {
		t.Errorf("sums kept for days %v, want today's too", got)
	}
	writeEvents(t, s, genEvents(22, app, 50, today+int64(time.Minute), []uuid.UUID{uuid.New()}))
	check("after a write to today")

	// A sum this release cannot read (another format, or damaged) is summed again, not failed.
	for _, bad := range [][]byte{{9, 1}, {journeyDays.format, 0xff}} {
		if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(journeyDays.key(tagDaySum, app, d0+2*day), bad) }); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("a sum of day 2 that reads %v", bad))
	}

	// Retention empties days 0 and 1: their sums go, day 2's stays.
	if err := s.DeleteBefore(context.Background(), app, time.Unix(0, d0+2*day)); err != nil {
		t.Fatal(err)
	}
	if got := kept(); slices.Contains(got, d0) || slices.Contains(got, d0+day) || !slices.Contains(got, d0+2*day) {
		t.Errorf("after retention, sums kept for days %v; want day 2's and none before", got)
	}
	check("after retention")
}

// keptSums lists the days of the app's sums of kind k, once the sums reads wrote are committed.
func keptSums(t *testing.T, s *Store, k dayKind, app uuid.UUID) (days []int64) {
	t.Helper()
	settle(t, s)
	head := appendHead(nil, badgerdb.PrefixEvents, k.sum, app)
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: head})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			days = append(days, getTime(it.Item().Key()[len(head):]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return days
}

// settle returns once the sums that reads wrote without waiting are committed: Badger applies
// commits in the order they are sent, and this one is waited for.
func settle(t *testing.T, s *Store) {
	t.Helper()
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("test/settle"), []byte{}) }); err != nil {
		t.Fatal(err)
	}
}

// TestInternFact: every string of a journey fact, whatever fields it gains, is moved off the
// bytes it was read from. JourneyFacts reads facts in place from Badger's buffers, which Badger
// reuses; a string left pointing there would change under whoever kept it.
func TestInternFact(t *testing.T) {
	const text = "0123456789abcdefghijklmnopqrstuvwxyz"
	buf := []byte(text)
	var f model.JourneyFact
	var fields []reflect.Value
	var collect func(v reflect.Value)
	collect = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			fields = append(fields, v)
		case reflect.Struct:
			for i := range v.NumField() {
				collect(v.Field(i))
			}
		}
	}
	collect(reflect.ValueOf(&f).Elem())
	if len(fields) == 0 || len(fields) > len(buf) {
		t.Fatalf("%d string fields", len(fields))
	}
	for i, v := range fields {
		v.SetString(unsafe.String(&buf[i], 1)) // a string in buf's bytes
	}
	interner{}.fact(&f)
	for i := range buf {
		buf[i] = '!'
	}
	for i, v := range fields {
		if want := text[i : i+1]; v.String() != want {
			t.Errorf("string field %d still reads the buffer: %q, want %q", i, v.String(), want)
		}
	}
}
