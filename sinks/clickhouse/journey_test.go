package clickhouse

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

func TestHoursAndDays(t *testing.T) {
	d, h := dayNanos, hourNanos
	for _, c := range []struct{ ts, day, floor, ceil int64 }{
		{0, 0, 0, 0},
		{1, 0, 0, h},
		{h - 1, 0, 0, h},
		{h, 0, h, h},
		{d - 1, 0, d - h, d},
		{d, d, d, d},
		{-1, -d, -h, 0},
		{-h, -d, -h, -h},
		{-d, -d, -d, -d},
		// Clamped to ±timeLimit first: no overflow, and the ends of a window beyond them are walked.
		{math.MaxInt64, floorDay(timeLimit), floorHour(timeLimit), floorHour(timeLimit) + h},
		{math.MinInt64, floorDay(-timeLimit), floorHour(-timeLimit), floorHour(-timeLimit)},
	} {
		if dd, f, c2 := floorDay(c.ts), floorHour(c.ts), ceilHour(c.ts); dd != c.day || f != c.floor || c2 != c.ceil {
			t.Errorf("floorDay, floorHour, ceilHour(%d) = %d, %d, %d; want %d, %d, %d", c.ts, dd, f, c2, c.day, c.floor, c.ceil)
		}
	}
}

// TestJourneyRollups follows when a build of journey rollups holds, on a clock the test sets:
// each step writes or asks at a time, then checks the answer against a walk of the events and
// which days a build holds for.
func TestJourneyRollups(t *testing.T) {
	s := migrated(t)
	var now time.Time
	s.clock = func() time.Time { return now }
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	day0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	day := func(i int) int64 { return day0 + int64(i)*dayNanos }
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	screens := []string{"Home", "List", "Detail", "Settings"}
	n := 0
	// screenEvents makes k screen events of each session from ts on, a minute apart.
	screenEvents := func(ts int64, k int) []model.Event {
		var out []model.Event
		for si, s := range sessions {
			for i := range k {
				n++
				out = append(out, model.Event{ID: uuid.New(), AppID: app, SessionID: s, Type: "screen_view",
					Timestamp: ts + int64(i)*int64(time.Minute) + int64(si),
					Attribute: model.Attributes{AppVersion: "1.0", AppBuild: "1"},
					Facts:     model.EventFacts{Screen: screens[(n*7+si)%len(screens)]}})
			}
		}
		return out
	}
	from, to := day(0), day(3)
	type step struct {
		name   string
		at     time.Duration // after t0
		write  []model.Event
		held   [][2]int64 // the whole days a build holds for after the step, as spans
		marked bool       // a write's mark is written
	}
	all := [][2]int64{{from, to}}
	steps := []step{
		{name: "written", at: 0, write: append(screenEvents(day(0)+int64(time.Hour), 20), screenEvents(day(1)+int64(23*time.Hour), 90)...), marked: true},
		{name: "asked a minute later: built", at: time.Minute, held: all},
		{name: "asked again: read", at: 2 * time.Minute, held: all},
		{name: "late rows of day 2", at: 3 * time.Minute, write: screenEvents(day(2)+int64(time.Hour), 3), held: [][2]int64{{from, day(2)}}, marked: true},
		{name: "asked: day 2 built again", at: 4 * time.Minute, held: all},
		{name: "rows of day 1", at: 5 * time.Minute, write: screenEvents(day(1)+int64(time.Hour), 2), held: [][2]int64{{from, day(1)}}, marked: true},
		{name: "asked within the margin: its build is not used", at: 5*time.Minute + 8*time.Second, held: [][2]int64{{from, day(1)}}},
		{name: "rows of day 2 within 10 s of the mark of day 1: no mark", at: 5*time.Minute + 9*time.Second, write: screenEvents(day(2)+int64(2*time.Hour), 1), held: [][2]int64{{from, day(1)}}},
		{name: "rows of day 0 within 10 s: an earlier day, marked", at: 5*time.Minute + 9500*time.Millisecond, write: screenEvents(day(0)+int64(2*time.Hour), 1), marked: true},
		{name: "asked a minute later: built", at: 7 * time.Minute, held: all},
	}
	for _, st := range steps {
		now = t0.Add(st.at)
		if st.write != nil {
			if err := s.WriteEvents(ctxT(t), st.write); err != nil {
				t.Fatalf("%s: WriteEvents: %v", st.name, err)
			}
			var marks uint64
			if err := s.conn.QueryRow(ctxT(t), "SELECT count() FROM journey_dirty WHERE app_id = toUUID(?) AND at = ?",
				app, uint64(now.UnixNano())).Scan(&marks); err != nil {
				t.Fatal(err)
			}
			if (marks > 0) != st.marked {
				t.Errorf("%s: marked %v, want %v", st.name, marks > 0, st.marked)
			}
		} else {
			got, want := factCounts(t, s.JourneyFacts, app, from, to), factCounts(t, s.walkFacts, app, from, to)
			if len(want) == 0 || !maps.Equal(got, want) {
				t.Fatalf("%s: JourneyFacts\n got %v\nwant %v", st.name, got, want)
			}
		}
		plan, err := s.journeyPlan(ctxT(t), app, from, to, s.now().UnixNano())
		if err != nil {
			t.Fatal(err)
		}
		var held [][2]int64
		for _, sp := range plan {
			switch n := len(held); {
			case sp.built == 0:
			case n > 0 && held[n-1][1] == sp.from:
				held[n-1][1] = sp.to
			default:
				held = append(held, [2]int64{sp.from, sp.to})
			}
		}
		if fmt.Sprint(held) != fmt.Sprint(st.held) {
			t.Errorf("%s: a build holds for %v, want %v", st.name, held, st.held)
		}
	}

	// Retention with nothing to delete prunes the builds the last one covers: four were
	// written, one is left, and it still answers.
	now = t0.Add(8 * time.Minute)
	if err := s.DeleteBefore(ctxT(t), app, time.Unix(0, day(-10))); err != nil {
		t.Fatal(err)
	}
	count := func(table string) (n uint64) {
		if err := s.conn.QueryRow(ctxT(t), "SELECT uniqExact(built) FROM "+table+" WHERE app_id = toUUID(?)", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); count("journey_hour_builds") != 1 || count("journey_hours") != 1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after pruning: %d builds, rows of %d builds; want 1, 1", count("journey_hour_builds"), count("journey_hours"))
		}
	}
	plan, err := s.journeyPlan(ctxT(t), app, from, to, s.now().UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || plan[0].built == 0 {
		t.Errorf("after pruning: plan %v, want one build holding for all", plan)
	}
	got, want := factCounts(t, s.JourneyFacts, app, from, to), factCounts(t, s.walkFacts, app, from, to)
	if !maps.Equal(got, want) {
		t.Errorf("after pruning: JourneyFacts\n got %v\nwant %v", got, want)
	}

	// A window that cuts hours, as the dashboard's does: the parts of hours at its ends are
	// walked, the whole hours between them come from a build (the one above holds for them), and
	// a mark of a day ends every build's hold from that day's start on.
	cut0, cut1 := day(0)+int64(90*time.Minute), day(2)+int64(30*time.Minute)
	h0, h1 := day(0)+int64(2*time.Hour), day(2)
	builds := func() (n uint64) {
		if err := s.conn.QueryRow(ctxT(t), "SELECT uniqExact(built) FROM journey_hour_builds WHERE app_id = toUUID(?)", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	heldAfter := func(name string, want [][2]int64) {
		t.Helper()
		got, walked := factCounts(t, s.JourneyFacts, app, cut0, cut1), factCounts(t, s.walkFacts, app, cut0, cut1)
		if len(walked) == 0 || !maps.Equal(got, walked) {
			t.Fatalf("%s: JourneyFacts over a cut window\n got %v\nwant %v", name, got, walked)
		}
		// Facts summed by day start at their earliest: none may come from before the window.
		err := s.JourneyFacts(ctxT(t), app, cut0, cut1, func(f *model.JourneyFact) error {
			if f.Event.Timestamp < cut0 {
				t.Errorf("%s: a fact at %d, before the window's start %d", name, f.Event.Timestamp, cut0)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := s.journeyPlan(ctxT(t), app, h0, h1, s.now().UnixNano())
		if err != nil {
			t.Fatal(err)
		}
		var held [][2]int64
		for _, sp := range plan {
			if sp.built != 0 {
				held = addSpan(held, sp.from, sp.to)
			}
		}
		if fmt.Sprint(held) != fmt.Sprint(want) {
			t.Errorf("%s: a build holds for %v of the cut window's whole hours, want %v", name, held, want)
		}
	}
	now = t0.Add(9 * time.Minute)
	heldAfter("cut window", [][2]int64{{h0, h1}})
	now = t0.Add(10 * time.Minute)
	if err := s.WriteEvents(ctxT(t), screenEvents(day(1)+int64(5*time.Hour), 2)); err != nil {
		t.Fatal(err)
	}
	// Asked within the margin of the mark: the hours from day 1 on are walked, and not built
	// (the mark would end that build's hold at once).
	now = t0.Add(10*time.Minute + 5*time.Second)
	before := builds()
	heldAfter("cut window, rows of day 1", [][2]int64{{h0, day(1)}})
	if after := builds(); after != before {
		t.Errorf("asked within the margin of a mark: %d builds, was %d; want none written", after, before)
	}
	now = t0.Add(11 * time.Minute)
	heldAfter("cut window, rows of day 1, asked a minute later: built", [][2]int64{{h0, h1}})

	// A window from 2 ms into an hour with no walk event before it (the dashboard's 12:00:00.002)
	// is answered from that whole hour's build; once a row is written in those 2 ms, the rest of
	// the hour is walked again, and the row's facts stay out of the answer.
	cut0, h0 = day(1)+int64(2*time.Millisecond), day(1)
	for _, st := range []struct {
		name  string
		at    time.Duration
		write []model.Event
		held  [][2]int64
	}{
		// Rows later in day 1 end the builds' hold on all of it; the window's first hour is
		// then walked whole and built with the rest (a window not moved to the hour's start
		// would build from the next hour on).
		{name: "rows later in day 1", at: 12 * time.Minute, write: screenEvents(day(1)+int64(5*time.Hour), 1)},
		{name: "from 2 ms into an hour", at: 13 * time.Minute, held: [][2]int64{{h0, h1}}},
		{name: "asked again: the first hour from its build", at: 13*time.Minute + 40*time.Second, held: [][2]int64{{h0, h1}}},
		{name: "a row in those 2 ms", at: 14 * time.Minute, write: screenEvents(day(1)+int64(time.Millisecond), 1)},
		{name: "asked within the margin", at: 14*time.Minute + 5*time.Second, held: nil},
		// The hour with the row is no longer whole in the window: walked from cut0, not built.
		{name: "asked a minute later: built", at: 15 * time.Minute, held: [][2]int64{{h0 + int64(time.Hour), h1}}},
	} {
		now = t0.Add(st.at)
		if st.write != nil {
			if err := s.WriteEvents(ctxT(t), st.write); err != nil {
				t.Fatal(err)
			}
			continue
		}
		heldAfter(st.name, st.held)
	}
	// A window from the hour's start builds it with the row; the cut window a minute later
	// finds that build holding, and walks its first hour from cut0 all the same.
	now = t0.Add(16 * time.Minute)
	if got, want := factCounts(t, s.JourneyFacts, app, day(1), cut1), factCounts(t, s.walkFacts, app, day(1), cut1); !maps.Equal(got, want) {
		t.Fatalf("from the hour's start: JourneyFacts\n got %v\nwant %v", got, want)
	}
	now = t0.Add(17 * time.Minute)
	heldAfter("a build of the first hour holds facts before the window", [][2]int64{{h0, h1}})
}

func TestRollupsFor(t *testing.T) {
	for engine, want := range map[string]bool{
		"ReplacingMergeTree": true, "MergeTree": true,
		"ReplicatedReplacingMergeTree": false, "ReplicatedMergeTree": false, "Distributed": false,
	} {
		if got := rollupsFor(engine); got != want {
			t.Errorf("rollupsFor(%q) = %v, want %v", engine, got, want)
		}
	}
}

func TestSuperseded(t *testing.T) {
	for _, c := range []struct {
		name   string
		builds []hourSpan // newest first
		want   string
	}{
		{"none", nil, "[]"},
		{"one", []hourSpan{{1, 9, 5}}, "[]"},
		{"covered by a newer", []hourSpan{{1, 9, 5}, {2, 4, 3}, {1, 9, 2}}, "[3 2]"},
		{"covered by two newer together", []hourSpan{{5, 9, 6}, {1, 5, 5}, {2, 8, 3}}, "[3]"},
		{"sticks out", []hourSpan{{2, 9, 5}, {1, 3, 4}}, "[]"},
		// A build of two spans, one of them covered: kept whole.
		{"one span of two covered", []hourSpan{{5, 9, 7}, {1, 3, 6}, {5, 8, 6}, {1, 3, 2}}, "[2]"},
		{"both spans covered", []hourSpan{{1, 9, 7}, {1, 3, 6}, {5, 8, 6}}, "[6]"},
	} {
		if got := fmt.Sprint(superseded(c.builds)); got != c.want {
			t.Errorf("%s: superseded = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestAddSpan(t *testing.T) {
	for _, c := range []struct {
		spans    [][2]int64
		from, to int64
		want     string
	}{
		{nil, 1, 2, "[[1 2]]"},
		{[][2]int64{{5, 7}}, 1, 2, "[[1 2] [5 7]]"},
		{[][2]int64{{1, 2}}, 2, 4, "[[1 4]]"},
		{[][2]int64{{1, 2}, {5, 7}}, 2, 5, "[[1 7]]"},
		{[][2]int64{{1, 9}}, 3, 4, "[[1 9]]"},
	} {
		if got := fmt.Sprint(addSpan(slices.Clone(c.spans), c.from, c.to)); got != c.want {
			t.Errorf("addSpan(%v, %d, %d) = %s, want %s", c.spans, c.from, c.to, got, c.want)
		}
	}
}

type factsFunc func(ctx context.Context, app uuid.UUID, from, to int64, fn func(*model.JourneyFact) error) error

// factCounts counts facts by their move or issue and version.
func factCounts(t *testing.T, facts factsFunc, app uuid.UUID, from, to int64) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	err := facts(ctxT(t), app, from, to, func(f *model.JourneyFact) error {
		out[fmt.Sprintf("%s %q→%q %s/%d", f.Event.Version, f.From, f.Event.Screen, f.Event.GroupID, f.Event.Class)] += f.Count()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRecent: a mark covers later ones for journeyMarkEvery, and none when the clock went back.
func TestRecent(t *testing.T) {
	t0 := time.Now()
	for _, c := range []struct {
		d    time.Duration
		want bool
	}{{0, true}, {journeyMarkEvery - 1, true}, {journeyMarkEvery, false}, {-time.Second, false}} {
		if got := recent(t0, t0.Add(c.d)); got != c.want {
			t.Errorf("recent after %v = %v, want %v", c.d, got, c.want)
		}
	}
}

// TestJourneyRollupsByDay: facts read from rollups come one per fact and UTC day, whatever hours
// and builds the day's facts were kept in, with their first and last time inside the day; on
// both sides of midnight of a normal date and of 1970-01-01, where a day is a floor division of
// negative times.
func TestJourneyRollupsByDay(t *testing.T) {
	for _, c := range []struct {
		name     string
		midnight int64
	}{{"2026-03-02", time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).UnixNano()}, {"1970-01-01", 0}} {
		t.Run(c.name, func(t *testing.T) {
			s := migrated(t)
			var now time.Time
			s.clock = func() time.Time { return now }
			t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
			app := uuid.New()
			// A session every 30 minutes from 3 h before midnight to 3 h after, each moving from
			// one screen to another (a session counts a move once), so each hour has the same
			// facts.
			var events []model.Event
			for i := range 12 {
				session := uuid.New()
				for j, screen := range []string{"Home", "List"} {
					events = append(events, model.Event{ID: uuid.New(), AppID: app, SessionID: session, Type: "screen_view",
						Timestamp: c.midnight - int64(3*time.Hour) + int64(i)*int64(30*time.Minute) + int64(j)*int64(5*time.Minute),
						Attribute: model.Attributes{AppVersion: "1.0", AppBuild: "1"},
						Facts:     model.EventFacts{Screen: screen}})
				}
			}
			now = t0
			if err := s.WriteEvents(ctxT(t), events); err != nil {
				t.Fatal(err)
			}
			from, to := c.midnight-int64(5*time.Hour), c.midnight+int64(5*time.Hour)
			walked := factCounts(t, s.walkFacts, app, from, to)
			// The hours are built in two builds, split two hours before midnight, so that the
			// day before midnight is summed across both: the hours up to the split first, then
			// the rest of the window.
			split := c.midnight - int64(2*time.Hour)
			for i, step := range []struct {
				at       time.Duration
				from, to int64
			}{{time.Minute, from, split}, {2 * time.Minute, from, to}, {3 * time.Minute, from, to}} {
				now = t0.Add(step.at)
				type key struct {
					fact string
					day  int64
				}
				seen := map[key]bool{}
				err := s.JourneyFacts(ctxT(t), app, step.from, step.to, func(f *model.JourneyFact) error {
					d := floorDay(f.Event.Timestamp)
					if floorDay(f.LastTime()) != d {
						t.Errorf("step %d: fact %q→%q from %d to %d crosses a day", i, f.From, f.Event.Screen, f.Event.Timestamp, f.LastTime())
					}
					k := key{f.From + "→" + f.Event.Screen, d}
					if i == 2 && seen[k] {
						t.Errorf("step %d: fact %s twice in day %d", i, k.fact, d)
					}
					seen[k] = true
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := factCounts(t, s.JourneyFacts, app, from, to); len(walked) == 0 || !maps.Equal(got, walked) {
				t.Errorf("JourneyFacts\n got %v\nwant %v", got, walked)
			}
			plan, err := s.journeyPlan(ctxT(t), app, from, to, s.now().UnixNano())
			if err != nil {
				t.Fatal(err)
			}
			if len(plan) != 2 || plan[0].built == 0 || plan[1].built == 0 || plan[0].to != split {
				t.Errorf("plan %v, want two builds, split at %d, holding for the window", plan, split)
			}
		})
	}
}

// TestRetentionDeletesDayRollups: retention that deletes events also deletes the app's rows of
// 00006's day rollups, which the release before wrote and this one leaves in place; another
// app's rows stay.
func TestRetentionDeletesDayRollups(t *testing.T) {
	s := migrated(t)
	app, other := uuid.New(), uuid.New()
	old := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, a := range []uuid.UUID{app, other} {
		if err := s.WriteEvents(ctxT(t), []model.Event{{ID: uuid.New(), AppID: a, SessionID: uuid.New(), Type: "screen_view",
			Timestamp: old.UnixNano(), Attribute: model.Attributes{AppVersion: "1.0", AppBuild: "1"},
			Facts: model.EventFacts{Screen: "Home"}}}); err != nil {
			t.Fatal(err)
		}
		// Written as the release before wrote them (s.insert: INSERT … VALUES hangs the driver
		// on 18.16).
		day, one := []int64{floorDay(old.UnixNano())}, []int64{1}
		if err := s.insert(ctxT(t), "journey_builds", []col{{name: "app_id", values: []uuid.UUID{a}}, {name: "from_day", values: day},
			{name: "to_day", values: []int64{day[0] + dayNanos}}, {name: "built", values: one}}); err != nil {
			t.Fatal(err)
		}
		if err := s.insert(ctxT(t), "journey_days", []col{{name: "app_id", values: []uuid.UUID{a}}, {name: "day", values: day},
			{name: "built", values: one}, {name: "screen", values: []string{"Home"}}, {name: "n", values: []uint64{1}},
			{name: "first", values: []int64{old.UnixNano()}}, {name: "last", values: []int64{old.UnixNano()}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteBefore(ctxT(t), app, old.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	count := func(table string, a uuid.UUID) (n uint64) {
		if err := s.conn.QueryRow(ctxT(t), "SELECT count() FROM "+table+" WHERE app_id = toUUID(?)", a).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, table := range []string{"journey_builds", "journey_days"} {
		for deadline := time.Now().Add(30 * time.Second); count(table, app) != 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d rows of the app left after retention, want 0", table, count(table, app))
			}
		}
		if n := count(table, other); n != 1 {
			t.Errorf("%s: %d rows of another app, want 1", table, n)
		}
	}
}
