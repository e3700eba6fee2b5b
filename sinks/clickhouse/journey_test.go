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

func TestDays(t *testing.T) {
	d := dayNanos
	for _, c := range []struct{ ts, floor, ceil int64 }{
		{0, 0, 0},
		{1, 0, d},
		{d - 1, 0, d},
		{d, d, d},
		{-1, -d, 0},
		{-d, -d, -d},
		// Clamped to ±dayLimit first: no overflow, and the ends of a window beyond them are walked.
		{math.MaxInt64, floorDay(dayLimit), floorDay(dayLimit) + d},
		{math.MinInt64, floorDay(-dayLimit), floorDay(-dayLimit)},
	} {
		if f, c2 := floorDay(c.ts), ceilDay(c.ts); f != c.floor || c2 != c.ceil {
			t.Errorf("floorDay, ceilDay(%d) = %d, %d; want %d, %d", c.ts, f, c2, c.floor, c.ceil)
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
		plan, err := s.journeyPlan(ctxT(t), app, from, to)
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
	for deadline := time.Now().Add(30 * time.Second); count("journey_builds") != 1 || count("journey_days") != 1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after pruning: %d builds, rows of %d builds; want 1, 1", count("journey_builds"), count("journey_days"))
		}
	}
	plan, err := s.journeyPlan(ctxT(t), app, from, to)
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
		builds []daySpan // newest first
		want   string
	}{
		{"none", nil, "[]"},
		{"one", []daySpan{{1, 9, 5}}, "[]"},
		{"covered by a newer", []daySpan{{1, 9, 5}, {2, 4, 3}, {1, 9, 2}}, "[3 2]"},
		{"covered by two newer together", []daySpan{{5, 9, 6}, {1, 5, 5}, {2, 8, 3}}, "[3]"},
		{"sticks out", []daySpan{{2, 9, 5}, {1, 3, 4}}, "[]"},
		// A build of two spans, one of them covered: kept whole.
		{"one span of two covered", []daySpan{{5, 9, 7}, {1, 3, 6}, {5, 8, 6}, {1, 3, 2}}, "[2]"},
		{"both spans covered", []daySpan{{1, 9, 7}, {1, 3, 6}, {5, 8, 6}}, "[6]"},
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
