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
type journeyWalk struct{ st *actorpb.SessionState }

// walkStepOf is the step of a session event, ok false for events the journey ignores.
func walkStepOf(e *actorpb.SessionEvent) (*actorpb.WalkStep, bool) {
	switch {
	case e.Screen != "":
		return &actorpb.WalkStep{Timestamp: e.Timestamp, Id: e.Id, Screen: e.Screen, Version: e.Version}, true
	case e.GroupId != "" && model.JourneyKind(model.IssueClass(e.Class)) != "":
		d := displayOf(e.Issue)
		return &actorpb.WalkStep{Timestamp: e.Timestamp, Id: e.Id, GroupId: e.GroupId, Class: e.Class,
			Title: d.Title(), Version: e.Version}, true
	}
	return nil, false
}

func stepCmp(a, b *actorpb.WalkStep) int {
	switch {
	case a.Timestamp < b.Timestamp:
		return -1
	case a.Timestamp > b.Timestamp:
		return 1
	}
	return bytes.Compare(a.Id, b.Id)
}

// add takes a batch's events (in time order) and returns what to tell the app actor.
func (w journeyWalk) add(events []*actorpb.SessionEvent) *actorpb.SessionUpdate {
	upd := &actorpb.SessionUpdate{}
	var fresh []*actorpb.WalkStep
	for _, e := range events {
		s, ok := walkStepOf(e)
		if !ok {
			continue
		}
		if _, dup := slices.BinarySearchFunc(w.st.Steps, s, stepCmp); dup && len(s.Id) > 0 {
			continue // a replayed or resent event already walked
		}
		fresh = append(fresh, s)
	}
	if len(fresh) == 0 {
		return upd
	}
	slices.SortFunc(fresh, stepCmp)
	n := len(w.st.Steps)
	inOrder := n == 0 || stepCmp(w.st.Steps[n-1], fresh[0]) < 0
	if inOrder || n+len(fresh) > maxWalkSteps {
		// The common case: walk on from where the session is.
		walk := model.Walk{Screen: w.st.WalkScreen, Edges: w.st.Edges}
		for _, s := range fresh {
			w.step(&walk, s, upd)
		}
		w.st.WalkScreen, w.st.Edges = walk.Screen, walk.Edges
		w.st.ToldMoves = append(w.st.ToldMoves, upd.Moves...)
		w.st.ToldIssues = append(w.st.ToldIssues, upd.Issues...)
		if room := maxWalkSteps - n; room > 0 {
			w.st.Steps = append(w.st.Steps, fresh[:min(room, len(fresh))]...)
		}
		return upd
	}
	// Out of order: merge and walk the whole session again, then tell the difference.
	w.st.Steps = append(w.st.Steps, fresh...)
	slices.SortFunc(w.st.Steps, stepCmp)
	var walk model.Walk
	again := &actorpb.SessionUpdate{}
	for _, s := range w.st.Steps {
		w.step(&walk, s, again)
	}
	upd.Moves = diffMoves(w.st.ToldMoves, again.Moves)
	upd.Issues = diffIssues(w.st.ToldIssues, again.Issues)
	w.st.WalkScreen, w.st.Edges = walk.Screen, walk.Edges
	w.st.ToldMoves, w.st.ToldIssues = again.Moves, again.Issues
	return upd
}

// step walks one step, adding a first move or an issue to upd.
func (w journeyWalk) step(walk *model.Walk, s *actorpb.WalkStep, upd *actorpb.SessionUpdate) {
	if s.Screen != "" {
		if from, first := walk.Step(s.Screen); first {
			upd.Moves = append(upd.Moves, &actorpb.JourneyMove{From: from, To: s.Screen, Timestamp: s.Timestamp, Version: s.Version})
		}
		return
	}
	upd.Issues = append(upd.Issues, &actorpb.JourneyIssue{Screen: walk.Screen, GroupId: s.GroupId, Class: s.Class,
		Title: s.Title, Timestamp: s.Timestamp, Version: s.Version})
}

// diffMoves is what turns told into now: retractions of moves no longer made as told, then
// the new ones.
func diffMoves(told, now []*actorpb.JourneyMove) []*actorpb.JourneyMove {
	var out []*actorpb.JourneyMove
	for _, m := range told {
		if !slices.ContainsFunc(now, func(x *actorpb.JourneyMove) bool { return proto.Equal(x, m) }) {
			r := proto.Clone(m).(*actorpb.JourneyMove)
			r.Retract = true
			out = append(out, r)
		}
	}
	for _, m := range now {
		if !slices.ContainsFunc(told, func(x *actorpb.JourneyMove) bool { return proto.Equal(x, m) }) {
			out = append(out, m)
		}
	}
	return out
}

// diffIssues is diffMoves for issues; an issue event appears once, so sets suffice.
func diffIssues(told, now []*actorpb.JourneyIssue) []*actorpb.JourneyIssue {
	var out []*actorpb.JourneyIssue
	for _, m := range told {
		if !slices.ContainsFunc(now, func(x *actorpb.JourneyIssue) bool { return proto.Equal(x, m) }) {
			r := proto.Clone(m).(*actorpb.JourneyIssue)
			r.Retract = true
			out = append(out, r)
		}
	}
	for _, m := range now {
		if !slices.ContainsFunc(told, func(x *actorpb.JourneyIssue) bool { return proto.Equal(x, m) }) {
			out = append(out, m)
		}
	}
	return out
}
