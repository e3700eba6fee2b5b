package badgerevents

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// TestIssueDaySums checks that IssueCells answers from day sums exactly what reading every row
// answers, for the query shapes sums serve and those they do not, after each change that must
// end a sum: writes, rows moved to another day or made no issue, a sum kept stale by a read
// that ran beside a write, damaged sums, today, and retention.
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
		{name: "all"},
		{name: "crashes", q: model.IssueQuery{Classes: []model.IssueClass{model.ClassCrash}}},
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
		out := make([]string, len(got))
		for i, c := range got {
			out[i] = fmt.Sprintf("%+v", c)
		}
		slices.Sort(out)
		return out
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
	// A write to the day ends it.
	writeEvents(t, s, genEvents(40, app, 60, genBase+day+int64(time.Hour), sessions))
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

	// An issue row moved to another day ends the sums of both days, and so does an issue row
	// rewritten as no issue (its copy goes).
	var moved, demoted model.Event
	for _, e := range written {
		if model.ClassOf(e.Type, &e.Facts) != 0 && e.Timestamp < d0+day && moved.Type == "" {
			moved = e
		}
		if model.ClassOf(e.Type, &e.Facts) != 0 && e.Timestamp >= d0+day && e.Timestamp < d0+2*day && demoted.Type == "" {
			demoted = e
		}
	}
	check("before the moves")
	moved.Timestamp += 2 * day
	demoted.Type = "custom"
	writeEvents(t, s, []model.Event{moved})
	check("after an issue row moved from day 0 to day 2")
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
