package eventstest

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// refFacts is the contract's definition of JourneyFacts over the reference: each session of
// SessionWalks of the window walked whole (model.AppendJourneyFacts), its facts in the window
// kept; summed as factTally does, since JourneyFacts has no order and may sum a day's facts.
func refFacts(ref *Reference, app uuid.UUID, from, to int64) []string {
	var t factTally
	for _, ws := range ref.SessionWalks(&model.WalkQuery{App: app, From: from, To: to}) {
		for _, f := range model.AppendJourneyFacts(nil, ws) {
			if f.Event.Timestamp >= from && f.Event.Timestamp < to {
				t.add(&f)
			}
		}
	}
	return t.text()
}

// factTally sums facts as a store may (model.JourneyFact's N and Last): per UTC day and fact
// without its time, how many, the earliest time and the latest.
type factTally map[string]*[3]int64

func (t *factTally) add(f *model.JourneyFact) {
	if *t == nil {
		*t = factTally{}
	}
	e := &f.Event
	k := fmt.Sprintf("day %d %s@%s %q→%q %s/%d %q", model.DayStart(e.Timestamp), e.Version.Name, e.Version.Code, f.From, e.Screen, e.GroupID, e.Class, e.Title)
	c := (*t)[k]
	if c == nil {
		c = &[3]int64{0, math.MaxInt64, math.MinInt64}
		(*t)[k] = c
	}
	c[0] += int64(f.Count())
	c[1], c[2] = min(c[1], e.Timestamp), max(c[2], f.LastTime())
}

func (t factTally) text() []string {
	var out []string
	for k, c := range t {
		out = append(out, fmt.Sprintf("%s ×%d [%d, %d]", k, c[0], c[1], c[2]))
	}
	slices.Sort(out)
	return out
}

func storeFacts(t *testing.T, s AnalyticsStore, app uuid.UUID, from, to int64) []string {
	t.Helper()
	var tally factTally
	if err := s.JourneyFacts(ctx(t), app, from, to, func(f *model.JourneyFact) error {
		if f.N != 0 && (f.LastTime() < f.Event.Timestamp || f.LastTime()-f.Event.Timestamp >= day) {
			t.Errorf("JourneyFacts: %d facts summed from %d to %d: not in one day", f.N, f.Event.Timestamp, f.LastTime())
		}
		tally.add(f)
		return nil
	}); err != nil {
		t.Fatalf("JourneyFacts: %v", err)
	}
	return tally.text()
}

// checkFacts compares the store's facts of [from, to) with the reference's, asking twice: a
// store that keeps what a query read (ClickHouse's journey rollups) answers the second from it.
func checkFacts(t *testing.T, s AnalyticsStore, ref *Reference, app uuid.UUID, from, to int64) {
	t.Helper()
	want := refFacts(ref, app, from, to)
	for _, ask := range []string{"", " asked again"} {
		got := storeFacts(t, s, app, from, to)
		if slices.Equal(got, want) {
			continue
		}
		var missing, extra []string
		for _, w := range want {
			if !slices.Contains(got, w) {
				missing = append(missing, w)
			}
		}
		for _, g := range got {
			if !slices.Contains(want, g) {
				extra = append(extra, g)
			}
		}
		t.Errorf("JourneyFacts [%d, %d)%s: %d facts, want %d\n  missing %s\n  extra   %s", from, to, ask, len(got), len(want),
			strings.Join(first(missing, 5), "\n          "), strings.Join(first(extra, 5), "\n          "))
		return
	}
}

func first(xs []string, n int) []string { return xs[:min(n, len(xs))] }

// testJourneyFacts checks JourneyFacts over the dataset's windows (rows written out of order,
// some twice).
func testJourneyFacts(t *testing.T, s AnalyticsStore, d *anaData, w anaWindows) {
	type factsCase struct {
		name string
		app  uuid.UUID
		win  [2]int64
	}
	cases := []factsCase{
		{"all", d.A, w.full},
		{"window", d.A, w.mid},
		{"ties", d.A, w.tie},
		{"empty window", d.A, w.empty},
		{"app B", d.B, w.full},
		{"zone edges", d.Z, [2]int64{-1 << 62, 1 << 62}},
	}
	// A window that ends one nanosecond after its last fact: a store that reads the walks only
	// up to the window's end must still read that fact's event.
	last := int64(math.MinInt64)
	for _, ws := range d.ref.SessionWalks(&model.WalkQuery{App: d.A, From: w.mid[0], To: w.mid[1]}) {
		for _, f := range model.AppendJourneyFacts(nil, ws) {
			if ts := f.Event.Timestamp; ts >= w.mid[0] && ts < w.mid[1] {
				last = max(last, ts)
			}
		}
	}
	cases = append(cases, factsCase{"ends just after a fact", d.A, [2]int64{w.mid[0], last + 1}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name != "empty window" && len(refFacts(d.ref, c.app, c.win[0], c.win[1])) == 0 {
				t.Fatalf("dataset: the window has no facts")
			}
			checkFacts(t, s, d.ref, c.app, c.win[0], c.win[1])
		})
	}
	t.Run("fn error stops", func(t *testing.T) {
		stop := errors.New("stop here")
		calls := 0
		err := s.JourneyFacts(ctx(t), d.A, w.full[0], w.full[1], func(*model.JourneyFact) error {
			calls++
			return stop
		})
		if !errors.Is(err, stop) || calls != 1 {
			t.Errorf("JourneyFacts with fn failing: error %v after %d calls, want %v after 1", err, calls, stop)
		}
	})
}

// testJourneyChanges writes sessions of a new app over three UTC days in batches that go back in
// time, replays some, then deletes the first day and a half, checking JourneyFacts against the
// rows stored after each step.
func testJourneyChanges(t *testing.T, s AnalyticsStore) {
	g := &anaGen{r: rand.New(rand.NewPCG(11, 23))}
	app := g.uuid()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	versions := []model.AppVersion{{Name: "1.0", Code: "1"}, {Name: "2.0", Code: "2"}}
	var all []model.Event
	for range 6 {
		session := g.uuid()
		attr := model.Attributes{AppVersion: "1.0", AppBuild: "1"}
		if g.r.IntN(2) == 0 {
			attr.AppVersion, attr.AppBuild = versions[1].Name, versions[1].Code
		}
		for range 40 {
			ts := base + g.r.Int64N(3*day)
			typ, payload := "screen_view", ""
			switch g.r.IntN(6) {
			case 0:
				typ, payload = g.issuePayload([]string{ikJVMState, ikANRLock, ikJVMIO}[g.r.IntN(3)], true)
			case 1:
				typ, payload = "lifecycle_activity", g.otherPayload("lifecycle_activity")
			default:
				payload = g.otherPayload(typ)
			}
			all = append(all, anaEvent(app, session, g.uuid(), ts, typ, payload, attr, nil))
		}
	}
	// Newest first, in batches of 25: every batch but the first lands before what is stored.
	slices.SortFunc(all, func(a, b model.Event) int { return cmp.Compare(b.Timestamp, a.Timestamp) })
	var stored []model.Event
	window := [2]int64{base - 1, base + 4*day}
	for i := 0; i < len(all); i += 25 {
		batch := all[i:min(i+25, len(all))]
		if i >= 50 {
			batch = append(slices.Clone(batch), all[i-50:i-40]...) // a replay of earlier rows
		}
		if err := s.WriteEvents(ctx(t), batch); err != nil {
			t.Fatalf("WriteEvents: %v", err)
		}
		stored = append(stored, batch...)
		if i == 100 {
			// Asked halfway, so that what a store keeps of this answer must give way to the
			// older rows written after it.
			checkFacts(t, s, NewReference(stored), app, window[0], window[1])
		}
	}
	ref := NewReference(stored)
	if len(refFacts(ref, app, window[0], window[1])) < 20 {
		t.Fatalf("dataset: too few facts")
	}
	checkFacts(t, s, ref, app, window[0], window[1])
	checkFacts(t, s, ref, app, base+day/2, base+3*day/2+7)

	cut := base + 3*day/2
	if err := s.DeleteBefore(ctx(t), app, time.Unix(0, cut)); err != nil {
		t.Fatalf("DeleteBefore: %v", err)
	}
	kept := NewReference(slices.DeleteFunc(slices.Clone(stored), func(e model.Event) bool { return e.Timestamp < cut }))
	// A backend that deletes asynchronously shows the deletion once it completes.
	eventually(t, "JourneyFacts after DeleteBefore", func() string {
		got, want := storeFacts(t, s, app, window[0], window[1]), refFacts(kept, app, window[0], window[1])
		if !slices.Equal(got, want) {
			return fmt.Sprintf("%d facts, want %d", len(got), len(want))
		}
		return ""
	})
	checkFacts(t, s, kept, app, window[0], window[1])
}
