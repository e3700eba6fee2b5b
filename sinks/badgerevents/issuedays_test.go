package badgerevents

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// TestIssueDaySums checks that IssueCells answers from day sums exactly what reading every row
// answers, for the query shapes sums serve and those they do not, after each change that must
// end a sum: writes, issue events sent again on another day, rows made no issue, a sum kept
// stale by a read that ran beside a write, damaged sums, today, and retention.
func TestIssueDaySums(t *testing.T) {
	s := New(memDB(t))
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	const day = int64(24 * time.Hour)
	d0 := model.DayStart(genBase)
	var written []model.Event
	for k := range int64(3) {
		evs := genEvents(uint64(30+k), app, 300, genBase+k*day, sessions)
		writeEvents(t, s, evs)
		written = append(written, evs...)
	}
	from, to := d0, d0+3*day
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	shapes := []struct {
		name string
		q    model.IssueQuery
		by   model.Cells
		cut  bool // the window starts and ends amid a day's events
	}{
		// A filtered shape first: the sums it makes must count every issue event all the same.
		{name: "crashes", q: model.IssueQuery{Classes: []model.IssueClass{model.ClassCrash}}},
		{name: "all"},
		{name: "one group's crashes and ANRs", q: model.IssueQuery{GroupID: genGroups[0], Classes: []model.IssueClass{model.ClassCrash, model.ClassANR}}},
		{name: "two versions", q: model.IssueQuery{EventFilter: model.EventFilter{Versions: []model.AppVersion{genVersions[0], genVersions[3]}}}},
		{name: "fatal", q: model.IssueQuery{Severities: []string{"fatal"}}},
		{name: "handled (rows)", q: model.IssueQuery{Severities: []string{"handled"}}},
		{name: "a device (rows)", q: model.IssueQuery{EventFilter: model.EventFilter{DeviceNames: []string{"a"}}}},
		{name: "by UTC day", by: model.Cells{Bucketed: true, By: model.Buckets{Group: model.PlotDays}}},
		{name: "by month", by: model.Cells{Bucketed: true, By: model.Buckets{Group: model.PlotMonths}}},
		{name: "by hour (rows)", by: model.Cells{Bucketed: true, By: model.Buckets{Group: model.PlotHours}}},
		{name: "by day in Kolkata (rows)", by: model.Cells{Bucketed: true, By: model.Buckets{Group: model.PlotDays, Loc: kolkata}}},
		{name: "cut window", cut: true},
	}
	cells := func(q *model.IssueQuery, by model.Cells, sums bool) []string {
		t.Helper()
		got, err := s.issueCells(context.Background(), q, by, sums)
		if err != nil {
			t.Fatal(err)
		}
		return cellStrings(got)
	}
	check := func(what string) {
		t.Helper()
		for _, sh := range shapes {
			q := sh.q
			q.App, q.From, q.To = app, from, to
			if sh.cut {
				q.From, q.To = from+genBase%day+20*int64(time.Second), to-day+genBase%day+20*int64(time.Second)
			}
			want := cells(&q, sh.by, false)
			if got := cells(&q, sh.by, true); len(want) == 0 || !slices.Equal(got, want) {
				t.Fatalf("%s, %s: IssueCells from day sums\n got  %q\n want %q", what, sh.name, got, want)
			}
		}
		settle(t, s)
	}
	kept := func() []int64 { return keptSums(t, s, issueDays, app) }
	readTs := func() uint64 {
		txn := s.db.NewTransaction(false)
		defer txn.Discard()
		return txn.ReadTs()
	}
	// fabricated is a sum of day 1 that holds as of ts and says what no row says.
	fabricated := func(ts uint64) {
		t.Helper()
		c := model.IssueCell{GroupID: "fabricated", Class: model.ClassCrash, Count: 7, FirstTime: d0 + day + 1, LastTime: d0 + day + 2,
			Last: model.IssueDisplay{Type: "T", Message: "m", LineNumber: 3, Severity: "fatal"}}
		s.writeSums(issueDays, app, []summed{{d0 + day, encodeIssueSum(ts, []model.IssueCell{c})}})
		settle(t, s)
	}
	answersFabricated := func() bool {
		q := model.IssueQuery{EventFilter: model.EventFilter{App: app, From: from, To: to}}
		return slices.ContainsFunc(cells(&q, model.Cells{}, true), func(c string) bool { return c[:len("{GroupID:fabricated")] == "{GroupID:fabricated" })
	}

	check("first read")
	if got := kept(); !slices.Equal(got, []int64{d0, d0 + day, d0 + 2*day}) {
		t.Fatalf("sums kept for days %v, want the three", got)
	}

	// A sum that holds is what answers its day.
	fabricated(readTs())
	if !answersFabricated() {
		t.Fatal("a sum of day 1 that holds is not read")
	}
	// A write to the day ends it, in a batch whose first rows are another app's of that day.
	other := uuid.New()
	writeEvents(t, s, append(genEvents(39, other, 60, genBase+day, sessions), genEvents(40, app, 60, genBase+day+int64(time.Hour), sessions)...))
	if answersFabricated() {
		t.Fatal("a sum of day 1 is read after a write to the day")
	}
	check("after a write to day 1")

	// A read's sum made before a write to the day, kept after it (as a read that ran beside the
	// write would), is not used.
	ts := readTs()
	writeEvents(t, s, genEvents(41, app, 60, genBase+day+2*int64(time.Hour), sessions))
	fabricated(ts)
	check("with a stale sum of day 1")
	// The same, by a read that sums day 1: a write commits after its snapshot, before its sums.
	writeEvents(t, s, genEvents(44, app, 10, genBase+day+10*int64(time.Minute), sessions))
	testHookBeforeSumsWritten = func() {
		testHookBeforeSumsWritten = nil
		writeEvents(t, s, genEvents(45, app, 60, genBase+day+20*int64(time.Minute), sessions))
	}
	t.Cleanup(func() { testHookBeforeSumsWritten = nil })
	q := model.IssueQuery{EventFilter: model.EventFilter{App: app, From: from, To: to}}
	cells(&q, model.Cells{}, true)
	if testHookBeforeSumsWritten != nil {
		t.Fatal("the read summed no day")
	}
	check("with a write between a read's snapshot and its sums")

	// An issue event sent again on another day (another row) ends that day's sums, and an
	// issue row rewritten at its time as no issue (its copy goes) ends its day's.
	var again, demoted model.Event
	for _, e := range written {
		if model.ClassOf(e.Type, &e.Facts) != 0 && e.Timestamp < d0+day && again.Type == "" {
			again = e
		}
		if model.ClassOf(e.Type, &e.Facts) != 0 && e.Timestamp >= d0+day && e.Timestamp < d0+2*day && demoted.Type == "" {
			demoted = e
		}
	}
	check("before the rewrites")
	again.Timestamp += 2 * day
	demoted.Type = "custom"
	writeEvents(t, s, []model.Event{again})
	check("after an issue event of day 0 sent again on day 2")
	writeEvents(t, s, []model.Event{demoted})
	check("after an issue row of day 1 made no issue")

	// Today's sum is kept too, and ended by each write to it.
	today := model.DayStart(time.Now().UnixNano())
	writeEvents(t, s, genEvents(42, app, 60, today, sessions))
	from, to = d0, today+day
	check("with today")
	if got := kept(); !slices.Contains(got, today) {
		t.Errorf("sums kept for days %v, want today's too", got)
	}
	writeEvents(t, s, genEvents(43, app, 60, today+int64(time.Minute), sessions))
	check("after a write to today")

	// A sum this release cannot read (another format, or damaged) is summed again, not failed.
	empty := encodeIssueSum(readTs(), []model.IssueCell{{GroupID: "g", Class: model.ClassCrash}})
	for _, bad := range [][]byte{{9, 1}, {issueDays.format, 0xff}, append(issueDays.begin(readTs()), 1, 'x'), empty} {
		if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(issueDays.key(tagIssueSum, app, d0+2*day), bad) }); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("a sum of day 2 that reads %v", bad))
	}

	// Retention cuts day 1 in half and empties day 0: day 0's sum goes, day 1's no longer holds.
	if err := s.DeleteBefore(context.Background(), app, time.Unix(0, genBase+day+20*int64(time.Second))); err != nil {
		t.Fatal(err)
	}
	if got := kept(); slices.Contains(got, d0) || !slices.Contains(got, d0+day) {
		t.Errorf("after retention, sums kept for days %v; want day 1's and none before", got)
	}
	check("after retention")
}

// cellStrings is cells printed and sorted, to compare answers in no particular order.
func cellStrings(cells []model.IssueCell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = fmt.Sprintf("%+v", c)
	}
	slices.Sort(out)
	return out
}

// TestIssueDaySumsAtTheEnds checks issue cells and journey facts from day sums against reading
// every row where days meet int64's ends and 1970: model.DayStart clamps the times of int64's
// first two days but one instant to its floor, and the day after its last overflows.
func TestIssueDaySumsAtTheEnds(t *testing.T) {
	s := New(memDB(t))
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New()}
	const day = int64(24 * time.Hour)
	first := int64(firstDay) // DayStart(first+1) is the floor
	y2100 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for i, base := range []int64{math.MinInt64, first - 50*int64(time.Second), first, first + day,
		-day + 7, -20 * int64(time.Second), y2100 - 20*int64(time.Second), math.MaxInt64 - 40*int64(time.Second)} {
		evs := genEvents(uint64(60+i), app, 80, base, sessions)
		issue, screen := false, false
		for j := range evs { // an issue event and a screen at base itself
			e := &evs[j]
			if !issue && model.ClassOf(e.Type, &e.Facts) != 0 || !screen && e.Facts.Screen != "" {
				issue, screen = issue || model.ClassOf(e.Type, &e.Facts) != 0, screen || e.Facts.Screen != ""
				e.Timestamp = base
			}
		}
		writeEvents(t, s, evs)
	}
	for _, w := range [][2]int64{{math.MinInt64, math.MaxInt64}, {0, y2100}, {math.MinInt64, 0}, {-day, math.MaxInt64},
		{first, first + 2*day}, {math.MinInt64, first + 10*int64(time.Second)}} {
		for read := range 2 {
			want := factSet(t, walked(s), app, w[0], w[1])
			if got := factSet(t, s.JourneyFacts, app, w[0], w[1]); len(want) == 0 || !slices.Equal(got, want) {
				t.Fatalf("window %v, read %d: JourneyFacts\n got  %q\n want %q", w, read, got, want)
			}
			settle(t, s)
		}
		for _, by := range []model.Cells{{}, {Bucketed: true, By: model.Buckets{Group: model.PlotDays}}} {
			q := model.IssueQuery{EventFilter: model.EventFilter{App: app, From: w[0], To: w[1]}}
			for read := range 2 { // the second reads the sums the first kept
				want, err := s.issueCells(context.Background(), &q, by, false)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.issueCells(context.Background(), &q, by, true)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := cellStrings(got), cellStrings(want); len(w) == 0 || !slices.Equal(g, w) {
					t.Fatalf("window %v, bucketed %v, read %d:\n got  %q\n want %q", q.From, by.Bucketed, read, g, w)
				}
				settle(t, s)
			}
		}
	}
}

// TestDaySumsAcrossOpen checks that Open keeps the day sums after a Close, with the database
// closed and opened again in between, and drops them after anything else: a process that ended
// without Close, or a write after Close (a node of an earlier release, which changes rows
// without marking their days).
func TestDaySumsAcrossOpen(t *testing.T) {
	dir := t.TempDir()
	db, err := badgerdb.OpenEvents(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	app := uuid.New()
	d0 := model.DayStart(genBase)
	open := func() *Store {
		t.Helper()
		s, err := Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sum := func(s *Store) {
		t.Helper()
		q := model.IssueQuery{EventFilter: model.EventFilter{App: app, From: d0, To: d0 + int64(24*time.Hour)}}
		if _, err := s.IssueCells(context.Background(), &q, model.Cells{}); err != nil {
			t.Fatal(err)
		}
		err := s.JourneyFacts(context.Background(), app, q.From, q.To, func(*model.JourneyFact) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	kept := func(s *Store) bool {
		t.Helper()
		issues, journeys := keptSums(t, s, issueDays, app), keptSums(t, s, journeyDays, app)
		if len(issues) != len(journeys) {
			t.Fatalf("issue sums of days %v, journey sums of days %v", issues, journeys)
		}
		return len(issues) > 0
	}
	s := open()
	writeEvents(t, s, genEvents(70, app, 300, genBase, []uuid.UUID{uuid.New()}))
	sum(s)
	if !kept(s) {
		t.Fatal("no sums kept")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s = open(); !kept(s) {
		t.Fatal("sums dropped after a Close")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = badgerdb.OpenEvents(dir, nil); err != nil {
		t.Fatal(err)
	}
	if s = open(); !kept(s) {
		t.Fatal("sums dropped after a Close and the database opened again")
	}
	// No Close: a crash.
	if s = open(); kept(s) {
		t.Fatal("sums kept after a store ended without Close")
	}
	sum(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("ev/ another release's row"), nil) }); err != nil {
		t.Fatal(err)
	}
	if s = open(); kept(s) {
		t.Fatal("sums kept after a write that followed Close")
	}
}

// TestWriteSumsOutgrowsATransaction checks that sums too many for one Badger transaction (a
// read of a long window, such as the app actor's rebuild) are all kept, in several.
func TestWriteSumsOutgrowsATransaction(t *testing.T) {
	s := New(memDB(t))
	app := uuid.New()
	const days = 64
	val := make([]byte, 256<<10)
	sums := make([]summed, days)
	for i := range sums {
		sums[i] = summed{int64(i) * int64(24*time.Hour), val}
	}
	if total := int64(days * len(val)); total < 2*s.db.MaxBatchSize() {
		t.Fatalf("%d bytes of sums fit in a transaction of %d", total, s.db.MaxBatchSize())
	}
	s.writeSums(issueDays, app, sums)
	if got := keptSums(t, s, issueDays, app); len(got) != days {
		t.Fatalf("%d of %d sums kept", len(got), days)
	}
}
