package actors

import (
	"bytes"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
)

// maxWalkSteps bounds the journey steps a session actor keeps in time order. A session with
// more is walked on in arrival order: a later batch with older events is then not reordered,
// and a screen event sent again is recognised only among the steps kept (its live journey may
// differ from the store's, which always follows event time and holds each row once).
const maxWalkSteps = 2000

// journeyWalk follows a session's journey in event time, as the store's SessionWalks does, so
// live journeys equal stored ones even when batches arrive out of time order (SDK retries) or
// are replayed: steps are kept sorted by (timestamp, id) and deduplicated by event id; a batch
// that lands before the last step is walked again from the start, and the moves and issues
// told to the app actor are corrected by retractions.
//
// The walk's screen and its moves so far (model.Walk) live in the session's state
// (st.WalkScreen, st.Edges); the steps live here, as values in one array: a node keeps one walk
// per live session, and a message per step (actorpb.WalkStep, 144 bytes and seven pointers for the
// collector) cost three times the room. What was told is not kept: while every step is kept it
// is what walking them tells, and once one is not (maxWalkSteps), no batch is walked again.
// The steps are sorted by stepCmp, and at most maxWalkSteps are kept.
type journeyWalk struct {
	steps []walkStep
}

// walkStep is one step of a journey: a screen shown, or a crash or ANR (issue set).
type walkStep struct {
	ts      int64
	id      [16]byte
	hasID   bool
	screen  string
	version *actorpb.Version // shared with the batch's other events: never changed
	issue   *stepIssue
}

// stepIssue is what a journey step of a crash or ANR names.
type stepIssue struct {
	group string
	class uint32
	title string
}

// walkStepOf is the step of a session event, ok false for events the journey ignores.
func walkStepOf(e *actorpb.SessionEvent) (walkStep, bool) {
	s := walkStep{ts: e.Timestamp, version: e.Version}
	if len(e.Id) == len(s.id) {
		s.id, s.hasID = [16]byte(e.Id), true
	}
	switch {
	case e.Screen != "":
		s.screen = e.Screen
	case e.GroupId != "" && model.JourneyKind(model.IssueClass(e.Class)) != "":
		d := displayOf(e.Issue)
		s.issue = &stepIssue{group: e.GroupId, class: e.Class, title: d.Title()}
	default:
		return walkStep{}, false
	}
	return s, true
}

// stepCmp orders steps by time, then id (a step without one first), as bytes.Compare orders
// the ids the store sorts by.
func stepCmp(a, b walkStep) int {
	switch {
	case a.ts < b.ts:
		return -1
	case a.ts > b.ts:
		return 1
	case a.hasID != b.hasID:
		if a.hasID {
			return 1
		}
		return -1
	}
	return bytes.Compare(a.id[:], b.id[:])
}

// add takes a batch's events (in time order) and returns what to tell the app actor; st holds
// the walk's screen and moves.
func (w *journeyWalk) add(st *actorpb.SessionState, events []*actorpb.SessionEvent) *actorpb.SessionUpdate {
	upd := &actorpb.SessionUpdate{}
	add := 0
	for _, e := range events {
		if e.Screen != "" || e.GroupId != "" {
			add++
		}
	}
	if add == 0 {
		return upd
	}
	// The batch's new steps (fresh) are written after the kept ones, in room reserved for as
	// many as it may add (a session's first batch gets an array of about its size); a walk that
	// keeps maxWalkSteps already takes them in an array of their own, which it does not keep.
	n := len(w.steps)
	var fresh []walkStep
	if n < maxWalkSteps {
		w.steps = slices.Grow(w.steps, add)
		fresh = w.steps[n:n]
	} else {
		fresh = make([]walkStep, 0, add)
	}
	for _, e := range events {
		s, ok := walkStepOf(e)
		if !ok {
			continue
		}
		if _, dup := slices.BinarySearchFunc(w.steps[:n], s, stepCmp); dup && s.hasID {
			continue // a replayed or resent event already walked
		}
		fresh = append(fresh, s) // within the room reserved: never moves
	}
	if len(fresh) == 0 {
		return upd
	}
	slices.SortFunc(fresh, stepCmp)
	inOrder := n == 0 || stepCmp(w.steps[n-1], fresh[0]) < 0
	if inOrder || n+len(fresh) > maxWalkSteps {
		// The common case: walk on from where the session is.
		walk := model.Walk{Screen: st.WalkScreen, Edges: st.Edges}
		for i := range fresh {
			step(&walk, &fresh[i], upd)
		}
		st.WalkScreen, st.Edges = walk.Screen, walk.Edges
		if n < maxWalkSteps {
			// The steps kept so far stay, and as many of the batch's first ones as there is
			// room for; sorted, so that an event sent again is found among them.
			keep := min(n+len(fresh), maxWalkSteps)
			clear(w.steps[keep : n+len(fresh)])
			w.steps = w.steps[:keep]
			if !inOrder {
				slices.SortFunc(w.steps, stepCmp)
			}
			w.trim()
		}
		return upd
	}
	// Out of order: every step so far was kept (n+len(fresh) ≤ maxWalkSteps), so walking them
	// tells what was told. Merge, walk the whole session again, and tell the difference.
	w.steps = w.steps[:n+len(fresh)]
	told := walkAll(w.steps[:n], nil)
	slices.SortFunc(w.steps, stepCmp)
	again := walkAll(w.steps, st)
	upd.Moves = diffMoves(told.Moves, again.Moves)
	upd.Issues = diffIssues(told.Issues, again.Issues)
	w.trim()
	return upd
}

// trim lets go of the room a walk that holds maxWalkSteps has beyond them (a batch reserves
// room for all it may add): it is full for good. The runtime rounds an array of 2,000 steps up
// to whole pages (2,048), so only more room than that is let go.
func (w *journeyWalk) trim() {
	if len(w.steps) == maxWalkSteps && cap(w.steps) > maxWalkSteps+maxWalkSteps/16 {
		w.steps = slices.Clone(w.steps)
	}
}

// step walks one step, adding a first move or an issue to upd.
func step(walk *model.Walk, s *walkStep, upd *actorpb.SessionUpdate) {
	if s.issue == nil {
		if from, first := walk.Step(s.screen); first {
			upd.Moves = append(upd.Moves, &actorpb.JourneyMove{From: from, To: s.screen, Timestamp: s.ts, Version: s.version})
		}
		return
	}
	upd.Issues = append(upd.Issues, &actorpb.JourneyIssue{Screen: walk.Screen, GroupId: s.issue.group, Class: s.issue.class,
		Title: s.issue.title, Timestamp: s.ts, Version: s.version})
}

// walkAll walks steps from the start of a session and returns what that tells; when st is not
// nil, it takes the walk's screen and moves.
func walkAll(steps []walkStep, st *actorpb.SessionState) *actorpb.SessionUpdate {
	var walk model.Walk
	told := &actorpb.SessionUpdate{}
	for i := range steps {
		step(&walk, &steps[i], told)
	}
	if st != nil {
		st.WalkScreen, st.Edges = walk.Screen, walk.Edges
	}
	return told
}

// state puts the steps into st.Steps, as a snapshot and the debug state hold them, for f (which
// encodes st); they are taken out again after it. It also puts in what walking them tells
// (st.ToldMoves, st.ToldIssues), which this release does not read: a node of the release
// before, which does, may load the snapshot during a cluster's upgrade.
func (w *journeyWalk) state(st *actorpb.SessionState, f func()) {
	if len(w.steps) == 0 {
		f()
		return
	}
	msgs := make([]actorpb.WalkStep, len(w.steps))
	st.Steps = make([]*actorpb.WalkStep, len(w.steps))
	for i := range w.steps {
		s, m := &w.steps[i], &msgs[i]
		m.Timestamp, m.Screen, m.Version = s.ts, s.screen, s.version
		if s.hasID {
			m.Id = s.id[:]
		}
		if s.issue != nil {
			m.GroupId, m.Class, m.Title = s.issue.group, s.issue.class, s.issue.title
		}
		st.Steps[i] = m
	}
	told := walkAll(w.steps, nil)
	st.ToldMoves, st.ToldIssues = told.Moves, told.Issues
	f()
	st.Steps, st.ToldMoves, st.ToldIssues = nil, nil, nil
}

// restore takes the steps of a loaded snapshot out of st. What it says was told is dropped:
// walking the steps tells it again when needed.
func (w *journeyWalk) restore(st *actorpb.SessionState) {
	w.steps = make([]walkStep, 0, len(st.Steps))
	var version *actorpb.Version
	var screens screenNames
	for _, m := range st.Steps {
		s := walkStep{ts: m.Timestamp, screen: screens.of(m.Screen)}
		if len(m.Id) == len(s.id) {
			s.id, s.hasID = [16]byte(m.Id), true
		}
		if m.Screen == "" {
			s.issue = &stepIssue{group: m.GroupId, class: m.Class, title: m.Title}
		}
		if m.Version != nil {
			if version == nil || !proto.Equal(version, m.Version) {
				version = m.Version
			}
			s.version = version // consecutive steps of one version share its message
		}
		w.steps = append(w.steps, s)
	}
	if len(w.steps) == 0 {
		w.steps = nil
	}
	// The release before kept a full walk's steps out of order when the batch that filled it
	// was: sorted, an event sent again is found among them.
	slices.SortFunc(w.steps, stepCmp)
	st.Steps, st.ToldMoves, st.ToldIssues = nil, nil, nil
}

// diffMoves is what turns told into now: retractions of moves no longer made as told, then
// the new ones.
func diffMoves(told, now []*actorpb.JourneyMove) []*actorpb.JourneyMove {
	return diffTold(told, now, func(m *actorpb.JourneyMove) *actorpb.JourneyMove {
		r := proto.Clone(m).(*actorpb.JourneyMove)
		r.Retract = true
		return r
	})
}

// diffIssues is diffMoves for issues.
func diffIssues(told, now []*actorpb.JourneyIssue) []*actorpb.JourneyIssue {
	return diffTold(told, now, func(m *actorpb.JourneyIssue) *actorpb.JourneyIssue {
		r := proto.Clone(m).(*actorpb.JourneyIssue)
		r.Retract = true
		return r
	})
}

// diffTold is what turns the list told into now, counting repeats: two issues alike in every
// field (two events of one group at one time, on one screen) are two, as the store counts them.
func diffTold[M proto.Message](told, now []M, retraction func(M) M) []M {
	var out []M
	matched := make([]bool, len(now))
	for _, m := range told {
		found := false
		for j, x := range now {
			if !matched[j] && proto.Equal(x, m) {
				matched[j], found = true, true
				break
			}
		}
		if !found {
			out = append(out, retraction(m))
		}
	}
	for j, x := range now {
		if !matched[j] {
			out = append(out, x)
		}
	}
	return out
}
