package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// day is the length of the app actor's buckets: live answers are exact for windows whose
// bounds are UTC day boundaries (or lie beyond the data).
const day = int64(24 * time.Hour)

// dayOf is the start of the UTC day holding ts, in Unix nanoseconds.
func dayOf(ts int64) int64 {
	d := ts % day
	if d < 0 {
		d += day
	}
	return ts - d
}

// RebuildWindow bounds the events a rebuild reads: from the epoch to 2100-01-01, inside what
// every store's time types hold. Events outside it are answered from the store only.
var RebuildWindow = [2]int64{0, 4102444800 * int64(time.Second)}

type cellKey struct {
	group   string
	class   model.IssueClass
	version model.AppVersion
	day     int64
}

type journeyKey struct {
	day     int64
	version model.AppVersion
}

// appActor is the one actor of an app. It keeps the app's issue groups as day cells
// (model.IssueCell per group, class, version and UTC day) and its journey graph per day and
// version, so that group lists and journeys over whole days are answered from memory
// (LiveQuery) exactly as the store would answer them. It is told every accepted batch's cells
// (AppBatch) and its sessions' first moves and issue screens (JourneyUpdate).
//
// Restart: the node sends Rebuild once the spool's replayed rows are in the store; the actor
// then drops what it has and reads its aggregates from the store. Replayed batches (replay
// set) are never applied: the rebuild counts them, so nothing counts twice. An actor that was
// not rebuilt (a new app, whose rows the store cannot have yet) is exact from its first batch.
type appActor struct {
	identity string
	app      uuid.UUID
	store    sinks.Analytics
	log      *slog.Logger
	ready    bool

	st       actorpb.AppState
	cells    map[cellKey]*model.IssueCell
	journeys map[journeyKey]*model.JourneyGraph
	// The earliest and latest event time counted (any says whether there is one): a window
	// bound beyond them needs no alignment.
	first, last int64
	any         bool
}

// AppProducer makes app actors for a Directory. App actors are not passivated: an app's
// aggregates are worth keeping while the node runs. store may be nil (no rebuild possible).
func AppProducer(store sinks.Analytics, log *slog.Logger) Producer {
	return func(identity string, _ func()) actor.Actor {
		app, _ := uuid.Parse(identity)
		return &appActor{identity: identity, app: app, store: store, log: log, ready: true,
			st:    actorpb.AppState{Types: map[string]uint64{}},
			cells: map[cellKey]*model.IssueCell{}, journeys: map[journeyKey]*model.JourneyGraph{}}
	}
}

func (a *appActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actorpb.AppBatch:
		a.st.Batches++
		a.st.Events += uint64(m.Events)
		a.st.Spans += uint64(m.Spans)
		for t, n := range m.Types {
			a.st.Types[t] += uint64(n)
		}
		a.st.First, a.st.Last = widenNonZero(a.st.First, a.st.Last, m.First, m.Last)
		if !m.Replay {
			for _, c := range m.Cells {
				a.addCell(cellOf(c))
			}
		}
	case *actorpb.JourneyUpdate:
		if !m.Replay {
			for _, mv := range m.Moves {
				a.journey(mv.Timestamp, mv.Version).AddTransition(mv.From, mv.To)
				a.st.Transitions++
				a.seen(mv.Timestamp)
			}
			for _, is := range m.Issues {
				a.journey(is.Timestamp, is.Version).AddIssue(is.Screen, model.JourneyKind(model.IssueClass(is.Class)), is.GroupId, is.Title)
				a.st.Issues++
				a.seen(is.Timestamp)
			}
		}
	case *actorpb.LiveQuery:
		ctx.Respond(a.answer(m))
	case *actorpb.Rebuild:
		ctx.Respond(a.rebuild(m.Ready))
	case *actorpb.StateRequest:
		a.st.AppId, a.st.Cells, a.st.JourneyCells, a.st.Ready = a.app[:], uint64(len(a.cells)), uint64(len(a.journeys)), a.ready
		js, _ := protojson.Marshal(&a.st)
		ctx.Respond(&actorpb.StateReply{Kind: string(KindApp), Identity: a.identity, StateJson: js})
	}
}

func widenNonZero(first, last, f, l int64) (int64, int64) {
	if f != 0 && (first == 0 || f < first) {
		first = f
	}
	if l > last {
		last = l
	}
	return first, last
}

func (a *appActor) seen(ts int64) {
	if !a.any {
		a.first, a.last, a.any = ts, ts, true
		return
	}
	a.first, a.last = min(a.first, ts), max(a.last, ts)
}

func (a *appActor) addCell(c model.IssueCell) {
	k := cellKey{c.GroupID, c.Class, c.Version, dayOf(c.Bucket)}
	a.seen(c.LastTime)
	cur := a.cells[k]
	if cur == nil {
		c.Bucket = k.day
		a.cells[k] = &c
		a.st.Issues += c.Count
		return
	}
	cur.Count += c.Count
	a.st.Issues += c.Count
	if cur.Later(c.LastTime, c.LastID) {
		cur.LastTime, cur.LastID, cur.Last = c.LastTime, c.LastID, c.Last
	}
}

func (a *appActor) journey(ts int64, v *actorpb.Version) *model.JourneyGraph {
	k := journeyKey{day: dayOf(ts), version: versionOf(v)}
	g := a.journeys[k]
	if g == nil {
		g = model.NewJourneyGraph()
		a.journeys[k] = g
	}
	return g
}

// exact says whether the actor's aggregates answer [from, to) exactly: each bound is a UTC day
// boundary, or lies beyond every event counted.
func (a *appActor) exact(from, to int64) (bool, string) {
	if !a.ready {
		return false, "aggregates not rebuilt"
	}
	if from != dayOf(from) && a.any && from > a.first {
		return false, "from is not a UTC day boundary"
	}
	if to != dayOf(to) && a.any && to <= a.last {
		return false, "to is not a UTC day boundary"
	}
	return true, ""
}

// inWindow says whether a day bucket lies in [from, to) for an exact window: an aligned bound
// compares with the day, a bound beyond the data with nothing.
func inWindow(d, from, to int64) bool {
	if from == dayOf(from) && d < from {
		return false
	}
	if to == dayOf(to) && d >= to {
		return false
	}
	return true
}

func (a *appActor) answer(q *actorpb.LiveQuery) *actorpb.LiveReply {
	if ok, why := a.exact(q.From, q.To); !ok {
		return &actorpb.LiveReply{Reason: why}
	}
	versions := make([]model.AppVersion, len(q.Versions))
	for i, v := range q.Versions {
		versions[i] = versionOf(v)
	}
	wanted := func(v model.AppVersion) bool {
		if len(versions) == 0 {
			return true
		}
		for _, w := range versions {
			if w == v {
				return true
			}
		}
		return false
	}
	if q.Journey {
		g := model.NewJourneyGraph()
		for k, jg := range a.journeys {
			if inWindow(k.day, q.From, q.To) && wanted(k.version) {
				g.Merge(jg)
			}
		}
		js, err := json.Marshal(g)
		if err != nil {
			return &actorpb.LiveReply{Reason: err.Error()}
		}
		return &actorpb.LiveReply{Ok: true, JourneyJson: js}
	}
	type mk struct {
		group   string
		class   model.IssueClass
		version model.AppVersion
	}
	merged := map[mk]*model.IssueCell{}
	for k, c := range a.cells {
		if !inWindow(k.day, q.From, q.To) || !wanted(k.version) || !hasClass(q.Classes, k.class) {
			continue
		}
		m := merged[mk{k.group, k.class, k.version}]
		if m == nil {
			cp := *c
			cp.Bucket = 0
			merged[mk{k.group, k.class, k.version}] = &cp
			continue
		}
		m.Count += c.Count
		if m.Later(c.LastTime, c.LastID) {
			m.LastTime, m.LastID, m.Last = c.LastTime, c.LastID, c.Last
		}
	}
	r := &actorpb.LiveReply{Ok: true, Cells: make([]*actorpb.IssueCell, 0, len(merged))}
	for _, c := range merged {
		r.Cells = append(r.Cells, CellProto(c))
	}
	return r
}

func hasClass(classes []uint32, c model.IssueClass) bool {
	if len(classes) == 0 {
		return true
	}
	for _, x := range classes {
		if model.IssueClass(x) == c {
			return true
		}
	}
	return false
}

// rebuild reads the aggregates from the store. With ready false it only drops them (the store
// may miss rows; live answers stay off until the next start).
func (a *appActor) rebuild(ready bool) *actorpb.RebuildReply {
	a.cells, a.journeys = map[cellKey]*model.IssueCell{}, map[journeyKey]*model.JourneyGraph{}
	a.first, a.last, a.any, a.st.Issues, a.st.Transitions = 0, 0, false, 0, 0
	a.ready = false
	if !ready || a.store == nil {
		return &actorpb.RebuildReply{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	q := &model.IssueQuery{EventFilter: model.EventFilter{App: a.app, From: RebuildWindow[0], To: RebuildWindow[1]}}
	cells, err := a.store.IssueCells(ctx, q, model.Cells{Bucketed: true, By: model.PlotDays})
	if err != nil {
		return &actorpb.RebuildReply{Error: fmt.Sprintf("rebuild issue cells of app %s: %v", a.identity, err)}
	}
	for i := range cells {
		a.addCell(cells[i])
	}
	var sessions uint64
	err = a.store.SessionWalks(ctx, &model.WalkQuery{App: a.app, From: RebuildWindow[0], To: RebuildWindow[1]},
		func(_ uuid.UUID, events []model.WalkEvent) error {
			sessions++
			model.WalkSession(events, func(from string, at *model.WalkEvent) {
				a.journeyOf(at).AddTransition(from, at.Screen)
				a.st.Transitions++
				a.seen(at.Timestamp)
			}, func(screen string, at *model.WalkEvent) {
				a.journeyOf(at).AddIssue(screen, model.JourneyKind(at.Class), at.GroupID, at.Title)
				a.seen(at.Timestamp)
			})
			return nil
		})
	if err != nil {
		a.cells, a.journeys = map[cellKey]*model.IssueCell{}, map[journeyKey]*model.JourneyGraph{}
		return &actorpb.RebuildReply{Error: fmt.Sprintf("rebuild journeys of app %s: %v", a.identity, err)}
	}
	a.ready = true
	return &actorpb.RebuildReply{Cells: uint64(len(a.cells)), Sessions: sessions}
}

func (a *appActor) journeyOf(e *model.WalkEvent) *model.JourneyGraph {
	k := journeyKey{day: dayOf(e.Timestamp), version: e.Version}
	g := a.journeys[k]
	if g == nil {
		g = model.NewJourneyGraph()
		a.journeys[k] = g
	}
	return g
}

func versionOf(v *actorpb.Version) model.AppVersion {
	if v == nil {
		return model.AppVersion{}
	}
	return model.AppVersion{Name: v.Name, Code: v.Code}
}

// VersionProto is the message form of a version.
func VersionProto(v model.AppVersion) *actorpb.Version {
	return &actorpb.Version{Name: v.Name, Code: v.Code}
}

// CellProto is the message form of a cell.
func CellProto(c *model.IssueCell) *actorpb.IssueCell {
	return &actorpb.IssueCell{GroupId: c.GroupID, Class: uint32(c.Class), Version: VersionProto(c.Version),
		Bucket: c.Bucket, Count: c.Count, LastTime: c.LastTime, LastId: c.LastID[:],
		Type: c.Last.Type, Message: c.Last.Message, MethodName: c.Last.MethodName,
		FileName: c.Last.FileName, LineNumber: c.Last.LineNumber, Severity: c.Last.Severity}
}

func cellOf(c *actorpb.IssueCell) model.IssueCell {
	id, _ := uuid.FromBytes(c.LastId)
	return model.IssueCell{GroupID: c.GroupId, Class: model.IssueClass(c.Class), Version: versionOf(c.Version),
		Bucket: c.Bucket, Count: c.Count, LastTime: c.LastTime, LastID: id,
		Last: model.IssueDisplay{Type: c.Type, Message: c.Message, MethodName: c.MethodName,
			FileName: c.FileName, LineNumber: c.LineNumber, Severity: c.Severity}}
}

// CellsOf is the inverse of CellProto over a reply's cells.
func CellsOf(cs []*actorpb.IssueCell) []model.IssueCell {
	out := make([]model.IssueCell, len(cs))
	for i, c := range cs {
		out[i] = cellOf(c)
	}
	return out
}

// Live asks app actors for their live answers (the dashboard's fast path).
type Live struct{ Dir Directory }

// Query sends q to the app's actor and returns its reply.
func (l Live) Query(ctx context.Context, app uuid.UUID, q *actorpb.LiveQuery) (*actorpb.LiveReply, error) {
	reply, err := l.Dir.Request(ctx, KindApp, app.String(), q)
	if err != nil {
		return nil, fmt.Errorf("ask app actor: %w", err)
	}
	r, ok := reply.(*actorpb.LiveReply)
	if !ok {
		return nil, fmt.Errorf("ask app actor: unexpected reply %T", reply)
	}
	return r, nil
}
