package actors

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/model/corpus"
)

// walkEvents is a session of screens and issues, in time order, each with its own id; with ties,
// pairs of events share a time, and with noIDs, some have no id (each at a time of its own,
// one sharing it with an event that has an id).
func walkEvents(rng *rand.Rand, n int, ties, noIDs bool) []*actorpb.SessionEvent {
	v1, v2 := &actorpb.Version{Name: "1.0", Code: "1"}, &actorpb.Version{Name: "1.1", Code: "2"}
	screens := []string{"Home", "List", "Detail", "Settings"}
	evs := make([]*actorpb.SessionEvent, n)
	for i := range evs {
		id := uuid.New()
		e := &actorpb.SessionEvent{Timestamp: int64(1000 + i*10), Id: id[:], Version: v1}
		if ties {
			e.Timestamp = int64(1000 + i/2*10)
		}
		if noIDs && i%5 == 3 {
			e.Id = nil
			if i%10 == 3 {
				e.Timestamp = evs[i-1].Timestamp // before the one with an id
			}
		}
		if i >= n/2 {
			e.Version = v2
		}
		switch r := rng.IntN(10); {
		case r < 7:
			e.Screen = screens[rng.IntN(len(screens))]
		case r < 8:
			e.Type, e.GroupId, e.Class = "exception", "g1", uint32(model.ClassCrash)
			e.Issue = &actorpb.IssueDisplay{Type: "NPE", FileName: "A.kt"}
		case r < 9:
			e.Type, e.GroupId, e.Class = "anr", "g2", uint32(model.ClassANR)
			e.Issue = &actorpb.IssueDisplay{Type: "ANR"}
		default:
			e.Type = "http" // not a step
		}
		evs[i] = e
	}
	return evs
}

// told is what the app actor holds of a session's walk: each update applied, retractions
// taking back what they name.
type told struct{ moves, issues map[string]int }

func (t *told) apply(u *actorpb.SessionUpdate) {
	for _, m := range u.Moves {
		c := proto.Clone(m).(*actorpb.JourneyMove)
		c.Retract = false
		t.moves[c.String()] += map[bool]int{false: 1, true: -1}[m.Retract]
	}
	for _, m := range u.Issues {
		c := proto.Clone(m).(*actorpb.JourneyIssue)
		c.Retract = false
		t.issues[c.String()] += map[bool]int{false: 1, true: -1}[m.Retract]
	}
}

func (t *told) clean() {
	for k, n := range t.moves {
		if n == 0 {
			delete(t.moves, k)
		}
	}
	for k, n := range t.issues {
		if n == 0 {
			delete(t.issues, k)
		}
	}
}

// TestJourneyWalkAnyOrder: however a session's events are split into batches, in whatever order
// the batches come, sent again or not, and with the walk saved and restored between batches (a
// passivation), what the app actor was told adds up to the walk of the events in time order.
func TestJourneyWalkAnyOrder(t *testing.T) {
	for _, c := range []struct {
		name                  string
		events, batches       int
		shuffle, resend, save bool
		ties, noIDs           bool
	}{
		{"one batch", 30, 1, false, false, false, false, false},
		{"in order", 30, 5, false, false, false, false, false},
		{"out of order", 30, 5, true, false, false, false, false},
		{"out of order, sent again", 30, 6, true, true, false, false, false},
		{"out of order, saved between batches", 40, 8, true, false, true, false, false},
		{"out of order, sent again, saved", 40, 8, true, true, true, false, false},
		{"out of order, times shared", 40, 8, true, true, false, true, false},
		// Steps without an id cannot be recognised when sent again: none are.
		{"out of order, some without an id", 40, 8, true, false, true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(0); seed < 20; seed++ {
				rng := rand.New(rand.NewPCG(seed, 17))
				evs := walkEvents(rng, c.events, c.ties, c.noIDs)
				// The reference: one batch in time order, on a fresh walk.
				var ref journeyWalk
				refSt := &actorpb.SessionState{}
				want := told{map[string]int{}, map[string]int{}}
				want.apply(ref.add(refSt, evs))

				var batches [][]*actorpb.SessionEvent
				cuts := []int{0, c.events}
				for len(cuts) < c.batches+1 {
					cuts = append(cuts, 1+rng.IntN(c.events-1))
				}
				slices.Sort(cuts)
				for i := 1; i < len(cuts); i++ {
					batches = append(batches, evs[cuts[i-1]:cuts[i]])
				}
				if c.shuffle {
					rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
				}
				if c.resend {
					batches = append(batches, batches[rng.IntN(len(batches))], batches[0])
				}
				var w journeyWalk
				st := &actorpb.SessionState{}
				got := told{map[string]int{}, map[string]int{}}
				for _, b := range batches {
					got.apply(w.add(st, b))
					if c.save {
						var snap []byte
						w.state(st, func() {
							var err error
							if snap, err = proto.Marshal(st); err != nil {
								t.Fatal(err)
							}
						})
						if st.Steps != nil {
							t.Fatal("the steps stayed in the state after it was encoded")
						}
						w, st = journeyWalk{}, &actorpb.SessionState{}
						if err := proto.Unmarshal(snap, st); err != nil {
							t.Fatal(err)
						}
						w.restore(st)
					}
				}
				got.clean()
				if fmt.Sprint(got.moves) != fmt.Sprint(want.moves) || fmt.Sprint(got.issues) != fmt.Sprint(want.issues) {
					t.Fatalf("seed %d: told\nmoves  %v\nissues %v\nwant\nmoves  %v\nissues %v", seed, got.moves, got.issues, want.moves, want.issues)
				}
				if st.WalkScreen != refSt.WalkScreen || !slices.Equal(st.Edges, refSt.Edges) {
					t.Fatalf("seed %d: on %q with moves %q, want %q with %q", seed, st.WalkScreen, st.Edges, refSt.WalkScreen, refSt.Edges)
				}
				if len(w.steps) != len(ref.steps) {
					t.Fatalf("seed %d: %d steps kept, want %d", seed, len(w.steps), len(ref.steps))
				}
				for i := range w.steps {
					if stepCmp(w.steps[i], ref.steps[i]) != 0 || w.steps[i].screen != ref.steps[i].screen {
						t.Fatalf("seed %d: step %d is %+v, want %+v", seed, i, w.steps[i], ref.steps[i])
					}
				}
			}
		})
	}
}

// TestJourneyWalkFull: a batch out of time order that fills the walk keeps the steps kept
// before it and its own first ones, sorted, in an array of about that size (also when it fills
// it exactly); past maxWalkSteps a walk goes on in arrival order without keeping more steps or
// a new array, and an event sent again among the kept ones is still recognised. A snapshot of
// the release before, whose full walk could hold its steps out of order, is sorted on restore.
func TestJourneyWalkFull(t *testing.T) {
	evs := make([]*actorpb.SessionEvent, maxWalkSteps+300) // every one a step
	for i := range evs {
		id := uuid.New()
		evs[i] = &actorpb.SessionEvent{Timestamp: int64(1000 + i), Id: id[:], Screen: []string{"A", "B", "C"}[i%3]}
	}
	kept := func(t *testing.T, w *journeyWalk, want []*actorpb.SessionEvent) {
		t.Helper()
		// The runtime rounds a large array up to whole pages: 2,000 steps get room for 2,048.
		if len(w.steps) != len(want) || cap(w.steps) > maxWalkSteps+maxWalkSteps/16 {
			t.Fatalf("%d steps kept in room for %d, want %d in about as many", len(w.steps), cap(w.steps), len(want))
		}
		for i, s := range w.steps {
			if s.ts != want[i].Timestamp {
				t.Fatalf("step %d is at %d, want %d", i, s.ts, want[i].Timestamp)
			}
		}
	}
	t.Run("filled out of order", func(t *testing.T) {
		var w journeyWalk
		st := &actorpb.SessionState{}
		w.add(st, evs[300:2100])
		w.add(st, evs[:300]) // 1,800 kept, room for 200 more: the batch's first
		kept(t, &w, slices.Concat(evs[:200], evs[300:2100]))
		array := &w.steps[0]
		w.add(st, evs[2100:]) // past the limit
		w.add(st, evs[250:260])
		if &w.steps[0] != array {
			t.Error("a full walk took another array")
		}
		kept(t, &w, slices.Concat(evs[:200], evs[300:2100]))
		if u := w.add(st, evs[1900:2100]); len(u.Moves)+len(u.Issues) != 0 {
			t.Errorf("events sent again told %d moves and %d issues", len(u.Moves), len(u.Issues))
		}
	})
	t.Run("filled exactly, out of order", func(t *testing.T) {
		var w journeyWalk
		st := &actorpb.SessionState{}
		w.add(st, evs[10:2000])
		w.add(st, slices.Concat(evs[10:2000], evs[:10])) // sent again, and 10 earlier ones
		kept(t, &w, evs[:2000])
	})
	t.Run("restored out of order", func(t *testing.T) {
		st := &actorpb.SessionState{}
		for _, i := range []int{0, 1, 5, 2, 3, 4} {
			st.Steps = append(st.Steps, &actorpb.WalkStep{Timestamp: evs[i].Timestamp, Id: evs[i].Id, Screen: evs[i].Screen})
		}
		var w journeyWalk
		w.restore(st)
		kept(t, &w, evs[:6])
		if u := w.add(st, evs[2:4]); len(u.Moves)+len(u.Issues) != 0 {
			t.Errorf("events sent again told %d moves and %d issues", len(u.Moves), len(u.Issues))
		}
	})
}

// TestJourneyWalkSnapshotTellsReleaseBefore: a snapshot holds, besides the steps, what walking
// them told, as the release before kept it and reads it; the state holds neither afterwards.
func TestJourneyWalkSnapshotTellsReleaseBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	evs := walkEvents(rng, 40, false, false)
	var w journeyWalk
	st := &actorpb.SessionState{}
	want := told{map[string]int{}, map[string]int{}}
	want.apply(w.add(st, evs[20:]))
	want.apply(w.add(st, evs[:20]))
	want.clean()
	var snap []byte
	w.state(st, func() { snap, _ = proto.Marshal(st) })
	if st.Steps != nil || st.ToldMoves != nil || st.ToldIssues != nil {
		t.Fatal("the state kept what was encoded")
	}
	var old actorpb.SessionState
	if err := proto.Unmarshal(snap, &old); err != nil {
		t.Fatal(err)
	}
	got := told{map[string]int{}, map[string]int{}}
	got.apply(&actorpb.SessionUpdate{Moves: old.ToldMoves, Issues: old.ToldIssues})
	if len(old.Steps) != len(w.steps) || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("snapshot of %d steps told %v, want %d steps and %v", len(old.Steps), got, len(w.steps), want)
	}
}

// TestJourneyWalkRestoresEarlierSnapshot: a snapshot of an earlier release holds what the
// actor told; it is dropped on restore, and a batch out of time order after it is still
// corrected against the steps.
func TestJourneyWalkRestoresEarlierSnapshot(t *testing.T) {
	v := &actorpb.Version{Name: "1", Code: "1"}
	id := func(b byte) []byte { return []byte{b, 15: 0} }
	st := &actorpb.SessionState{
		Steps: []*actorpb.WalkStep{{Timestamp: 10, Id: id(1), Screen: "A", Version: v},
			{Timestamp: 30, Id: id(3), Screen: "C", Version: proto.Clone(v).(*actorpb.Version)}},
		WalkScreen: "C", Edges: []string{model.MoveKey("A", "C")},
		// Not what walking the steps tells: a restored walk goes by its steps.
		ToldMoves: []*actorpb.JourneyMove{{From: "A", To: "C", Timestamp: 30, Version: v}, {From: "X", To: "Y", Timestamp: 5}},
	}
	var w journeyWalk
	w.restore(st)
	if st.Steps != nil || st.ToldMoves != nil || len(w.steps) != 2 || !w.steps[0].hasID || w.steps[0].version != w.steps[1].version {
		t.Fatalf("restored %+v from %v", w.steps, st)
	}
	u := w.add(st, []*actorpb.SessionEvent{{Timestamp: 20, Id: id(2), Screen: "B", Version: v}})
	var got []string
	for _, m := range u.Moves {
		got = append(got, fmt.Sprintf("%s>%s %v", m.From, m.To, m.Retract))
	}
	if want := []string{"A>C true", "A>B false", "B>C false"}; !slices.Equal(got, want) {
		t.Errorf("moves %v, want %v", got, want)
	}
}

// BenchmarkJourneyWalk walks the recorded batches of testdata/sdk, each as one new session's
// first batch, as a session actor does for each batch it is sent.
func BenchmarkJourneyWalk(b *testing.B) {
	dir, err := corpus.Dir()
	if err != nil {
		b.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "batch_*.json"))
	var sessions [][]*actorpb.SessionEvent
	steps := 0
	for _, n := range names {
		body, err := os.ReadFile(n)
		if err != nil {
			b.Fatal(err)
		}
		batch, err := model.DecodeBatch(body, uuid.New(), false)
		if err != nil {
			b.Fatal(err)
		}
		var versions versionCache
		var ids []byte
		evs := make([]*actorpb.SessionEvent, len(batch.Events))
		for i := range batch.Events {
			batch.Events[i].Facts = model.DeriveFacts(&batch.Events[i])
			evs[i] = &actorpb.SessionEvent{}
			ids = sessionEvent(evs[i], &batch.Events[i], &versions, ids)
		}
		slices.SortStableFunc(evs, func(x, y *actorpb.SessionEvent) int { return int(x.Timestamp - y.Timestamp) })
		for _, e := range evs {
			if _, ok := walkStepOf(e); ok {
				steps++
			}
		}
		sessions = append(sessions, evs)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, evs := range sessions {
			var w journeyWalk
			w.add(&actorpb.SessionState{}, evs)
		}
	}
	b.ReportMetric(float64(steps)/float64(len(sessions)), "steps/session")
}
