package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync/atomic"
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

// RebuildWindow bounds the events a rebuild reads: from the epoch to 2100-01-01, inside what
// every store's time types hold. Events outside it are answered from the store only.
var RebuildWindow = [2]int64{0, 4102444800 * int64(time.Second)}

// names interns strings (group ids, screens) as small integers, so the aggregates are maps
// with integer keys: a live answer merges thousands of cells per millisecond.
type names struct {
	idx  map[string]int32
	list []string
}

func (n *names) id(s string) int32 {
	if i, ok := n.idx[s]; ok {
		return i
	}
	if n.idx == nil {
		n.idx = map[string]int32{}
	}
	i := int32(len(n.list))
	n.idx[s] = i
	n.list = append(n.list, s)
	return i
}

// dayAgg is what the app actor keeps of one UTC day.
type dayAgg struct {
	cells  []dayCell           // contiguous, so answers scan them fast
	cellAt map[uint64]int32    // index in cells by cellKey
	moves  map[uint64]uint64   // sessions per first move, by moveKey
	issues map[issueKey]uint64 // issue events per screen and group
	// The same over all versions (version 0 in the keys): what most journeys ask for.
	movesAll  map[uint64]uint64
	issuesAll map[issueKey]uint64
	// The earliest and latest event time counted in the day (first > last: none): a window
	// bound inside the day is exact when no event of the day lies on the other side of it.
	// Retractions leave them as they are, which can only refuse a bound that was exact.
	first, last int64
}

// seen widens the day's earliest and latest event time to ts.
func (g *dayAgg) seen(ts int64) { g.first, g.last = min(g.first, ts), max(g.last, ts) }

// bump adds n to m[k], or takes one away (retract, dropping the key at zero).
func bump[K comparable](m map[K]uint64, k K, n uint64, retract bool) {
	switch {
	case !retract:
		m[k] += n
	case m[k] <= 1:
		delete(m, k)
	default:
		m[k]--
	}
}

// cellKey packs a group, version and class; moveKey a version and two screens.
func cellKey(group, version int32, class model.IssueClass) uint64 {
	return uint64(group)<<32 | uint64(version)<<8 | uint64(class)
}

func moveKey(version, from, to int32) uint64 {
	return uint64(version)<<48 | uint64(from)<<24 | uint64(to)
}

type dayCell struct {
	group, version int32
	model.IssueCell
}

type issueKey struct {
	version, screen, group int32
	class                  model.IssueClass
}

// appActor is the one actor of an app. It keeps the app's issue groups as day cells
// (model.IssueCell per group, class, version and UTC day) and its journey graph per day and
// version, so that group lists and journeys over whole days are answered from memory
// (LiveQuery) exactly as the store would answer them. Its session actors tell it what each
// batch of theirs adds (SessionUpdate): the cells of issue events not counted before, first
// moves and issue screens, so an event sent again in another request counts once, as the store
// holds it once. It is also told each accepted batch's summary (AppBatch), for its debug state.
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
	days     map[int64]*dayAgg
	groups   names            // group ids
	screens  names            // screen names; "" is 0
	versions names            // "name\x00code"
	titles   map[int32]string // journey title per group
	ncells   int
	http     endpoints // request paths and patterns (endpoints.go)
	alerts   alerting  // what raises alerts (alerting.go); alerts.sink nil: none
	settle   *settling // in a cluster: how the actor becomes exact (settle.go); nil on one node
	// A live journey's sums, emptied and used again by the next one: they stay in the actor,
	// only the reply's arrays leave it.
	moves  map[uint64]uint64
	issues map[issueKey]uint64
	at     []uint32          // packJourney's index of each screen in the reply
	merged []model.IssueCell // a live group list's cells, one per group, emptied and used again
}

// AppProducer makes app actors for a Directory. App actors are not passivated: an app's
// aggregates are worth keeping while the node runs. store may be nil (no rebuild possible).
func AppProducer(store sinks.Analytics, log *slog.Logger) Producer {
	return AppProducerWith(store, log, nil)
}

// AppsUnknown is set by a node that could not learn its apps at start (the metadata store was
// down), so it could not rebuild their aggregates: an app actor started later may be an app the
// event store holds rows of, and must not count from an empty start as if it were new.
type AppsUnknown struct{ set atomic.Bool }

// Set marks the apps as unknown for the rest of the run.
func (u *AppsUnknown) Set() { u.set.Store(true) }

// AppProducerWith is AppProducer whose actors start unready (every live query goes to the
// store) once unknown is set; unknown may be nil.
func AppProducerWith(store sinks.Analytics, log *slog.Logger, unknown *AppsUnknown) Producer {
	return AppProducerAlerting(store, log, unknown, nil, nil)
}

// AppProducerAlerting is AppProducerWith whose actors raise alerts into sink (nil: none);
// now is their clock (nil: time.Now).
func AppProducerAlerting(store sinks.Analytics, log *slog.Logger, unknown *AppsUnknown, sink AlertSink, now func() time.Time) Producer {
	if now == nil {
		now = time.Now
	}
	return func(identity string, _ func()) actor.Actor {
		app, _ := uuid.Parse(identity)
		a := &appActor{identity: identity, app: app, store: store, log: log, ready: unknown == nil || !unknown.set.Load(),
			st: actorpb.AppState{Types: map[string]uint64{}}, alerts: alerting{sink: sink, now: now}}
		a.reset()
		return a
	}
}

// AppProducerSettling makes app actors for a cluster: they start unready and settle (Settle).
func AppProducerSettling(store sinks.Analytics, log *slog.Logger, sink AlertSink, settle *Settle) Producer {
	produce := AppProducerAlerting(store, log, nil, sink, nil)
	return func(identity string, passivate func()) actor.Actor {
		a := produce(identity, passivate).(*appActor)
		a.ready, a.settle = false, &settling{cfg: settle}
		return a
	}
}

func (a *appActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if a.settle != nil {
			a.settle.start(ctx)
		}
	case *actor.Stopping:
		if a.settle != nil {
			a.settle.stop()
		}
	case settleTick:
		a.settle.tick(ctx, a, a.log)
	case settleMarker:
		a.settle.marker(a, a.log)
	case *actorpb.AppBatch:
		if a.settle != nil {
			a.settle.batch(a, m.Origin, m.Replay, true)
		}
		a.st.Batches++
		a.st.Events += uint64(m.Events)
		a.st.Spans += uint64(m.Spans)
		for t, n := range m.Types {
			a.st.Types[t] += uint64(n)
		}
		a.st.First, a.st.Last = widenNonZero(a.st.First, a.st.Last, m.First, m.Last)
		// Paths are a set, so a replayed batch adds nothing twice.
		for _, p := range m.HttpPaths {
			a.http.add(p.Domain, p.Path)
		}
		if !m.Replay && a.ready && a.alerts.sink != nil {
			a.alerts.batch(a.app, m)
		}
	case *actorpb.EndpointsQuery:
		ctx.Respond(a.http.reply(a.ready))
	case *actorpb.SessionUpdate:
		if a.settle != nil {
			a.settle.batch(a, m.Origin, m.Replay, false)
		}
		if !m.Replay {
			cells := CellsOf(m.Cells)
			if a.ready && a.alerts.sink != nil {
				a.alerts.issues(a.app, cells)
			}
			for _, c := range cells {
				a.addCell(c)
			}
			for _, mv := range m.Moves {
				a.addMove(mv.From, mv.To, mv.Timestamp, mv.Timestamp, versionOf(mv.Version), 1, mv.Retract)
			}
			for _, is := range m.Issues {
				a.addIssue(is.Screen, is.GroupId, model.IssueClass(is.Class), is.Title, is.Timestamp, is.Timestamp, versionOf(is.Version), 1, is.Retract)
			}
		}
	case *actorpb.LiveQuery:
		ctx.Respond(a.answer(m))
	case *actorpb.Rebuild:
		ctx.Respond(a.rebuild(m.Ready))
	case *actorpb.StateRequest:
		a.st.AppId, a.st.Cells, a.st.JourneyCells, a.st.Ready = a.app[:], uint64(a.ncells), uint64(len(a.days)), a.ready
		a.st.HttpPaths, a.st.HttpPathsOverflow = uint64(len(a.http.paths)), a.http.overflow
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

func (a *appActor) reset() {
	a.days, a.titles, a.ncells = map[int64]*dayAgg{}, map[int32]string{}, 0
	a.groups, a.screens, a.versions = names{}, names{}, names{}
	a.screens.id("")
	a.http.reset()
	a.alerts.reset()
}

func (a *appActor) day(ts int64) *dayAgg {
	d := model.DayStart(ts)
	agg := a.days[d]
	if agg == nil {
		agg = &dayAgg{cellAt: map[uint64]int32{}, moves: map[uint64]uint64{}, issues: map[issueKey]uint64{},
			movesAll: map[uint64]uint64{}, issuesAll: map[issueKey]uint64{}, first: math.MaxInt64, last: math.MinInt64}
		a.days[d] = agg
	}
	return agg
}

func (a *appActor) version(v model.AppVersion) int32 { return a.versions.id(v.Name + "\x00" + v.Code) }

func (a *appActor) addCell(c model.IssueCell) {
	agg := a.day(c.Bucket)
	g, v := a.groups.id(c.GroupID), a.version(c.Version)
	k := cellKey(g, v, c.Class)
	agg.seen(c.FirstTime)
	agg.seen(c.LastTime)
	a.st.Issues += c.Count
	i, ok := agg.cellAt[k]
	if !ok {
		i = int32(len(agg.cells))
		agg.cellAt[k] = i
		agg.cells = append(agg.cells, dayCell{group: g, version: v,
			IssueCell: model.IssueCell{GroupID: c.GroupID, Class: c.Class, Version: c.Version, Bucket: model.DayStart(c.Bucket)}})
		a.ncells++
	}
	agg.cells[i].Merge(&c)
}

// addMove counts n sessions' first move, made from ts to last (one UTC day), or takes one back
// (retract) that a session actor told before and corrected after a batch arrived out of time
// order.
func (a *appActor) addMove(from, to string, ts, last int64, v model.AppVersion, n uint64, retract bool) {
	agg := a.day(ts)
	k := moveKey(a.version(v), a.screens.id(from), a.screens.id(to))
	bump(agg.moves, k, n, retract)
	bump(agg.movesAll, k&(1<<48-1), n, retract)
	if retract {
		a.st.Transitions--
		return
	}
	a.st.Transitions += n
	agg.seen(ts)
	agg.seen(last)
}

// addIssue counts n issues on a screen, or takes one back, as addMove does.
func (a *appActor) addIssue(screen, group string, class model.IssueClass, title string, ts, last int64, v model.AppVersion, n uint64, retract bool) {
	if model.JourneyKind(class) == "" {
		return
	}
	g := a.groups.id(group)
	if title != "" {
		a.titles[g] = title
	}
	agg := a.day(ts)
	k := issueKey{a.version(v), a.screens.id(screen), g, class}
	bump(agg.issues, k, n, retract)
	k.version = 0
	bump(agg.issuesAll, k, n, retract)
	if !retract {
		agg.seen(ts)
		agg.seen(last)
	}
}

// exact says whether the actor's aggregates answer [from, to) exactly: each bound is a UTC day
// boundary, or no event counted in its day lies on the other side of it (such as a window's end
// at the current time).
func (a *appActor) exact(from, to int64) (bool, string) {
	if !a.ready {
		return false, "aggregates not rebuilt"
	}
	if a.fromInside(from) {
		return false, "from cuts a UTC day's events in two"
	}
	if a.toInside(to) {
		return false, "to cuts a UTC day's events in two"
	}
	return true, ""
}

// fromInside and toInside say whether a window bound cuts its day's events in two, so that
// the window is not exact at it.
func (a *appActor) fromInside(from int64) bool {
	g := a.days[model.DayStart(from)]
	return from != model.DayStart(from) && g != nil && g.first < from
}

func (a *appActor) toInside(to int64) bool {
	g := a.days[model.DayStart(to)]
	return to != model.DayStart(to) && g != nil && g.last >= to
}

// exactPart is the largest part [lo, hi) of [from, to) that the aggregates answer exactly: a
// bound exact refuses moves inward to the nearest UTC day boundary. ok is false when that
// leaves no whole day (or the aggregates are not rebuilt).
func (a *appActor) exactPart(from, to int64) (lo, hi int64, ok bool) {
	if !a.ready {
		return 0, 0, false
	}
	lo, hi = from, to
	if a.fromInside(from) {
		if model.DayStart(from) > math.MaxInt64-day {
			return 0, 0, false
		}
		lo = model.DayStart(from) + day
	}
	if a.toInside(to) {
		hi = model.DayStart(to)
	}
	return lo, hi, lo < hi
}

// inWindow says whether the day bucket starting at d counts in an exact window [from, to): the
// day overlaps it (exact says the events of a day a bound cuts all lie inside).
func inWindow(d, from, to int64) bool { return d < to && d+day > from }

func (a *appActor) answer(q *actorpb.LiveQuery) *actorpb.LiveReply {
	from, to := q.From, q.To
	if ok, why := a.exact(from, to); !ok {
		if !q.Split || !a.ready {
			return &actorpb.LiveReply{Reason: why}
		}
		if from, to, ok = a.exactPart(from, to); !ok {
			return &actorpb.LiveReply{Reason: why + ", and no whole UTC day of the window is left"}
		}
	}
	r := a.answerExact(q, from, to)
	r.From, r.To = from, to
	return r
}

// answerExact answers q over [from, to), a window exact says the aggregates hold.
func (a *appActor) answerExact(q *actorpb.LiveQuery, from, to int64) *actorpb.LiveReply {
	// Versions asked for, as interned ids; nil means all.
	var wanted map[int32]bool
	if len(q.Versions) > 0 {
		wanted = map[int32]bool{}
		for _, v := range q.Versions {
			if i, ok := a.versions.idx[v.Name+"\x00"+v.Code]; ok {
				wanted[i] = true
			}
		}
	}
	want := func(v int32) bool { return wanted == nil || wanted[v] }
	if q.Journey {
		if a.moves == nil {
			a.moves, a.issues = make(map[uint64]uint64, 256), make(map[issueKey]uint64, 64)
		}
		moves, issues := a.moves, a.issues
		clear(moves)
		clear(issues)
		for d, agg := range a.days {
			if !inWindow(d, from, to) {
				continue
			}
			if wanted == nil {
				for k, n := range agg.movesAll {
					moves[k] += n
				}
				for k, n := range agg.issuesAll {
					issues[k] += n
				}
				continue
			}
			for k, n := range agg.moves {
				if want(int32(k >> 48)) {
					moves[k&(1<<48-1)] += n
				}
			}
			for k, n := range agg.issues {
				if want(k.version) {
					k.version = 0
					issues[k] += n
				}
			}
		}
		return a.packJourney(moves, issues)
	}
	// One merged cell per group (the caller's MergeGroups needs no more), indexed by group id;
	// version and bucket stay empty.
	a.merged = slices.Grow(a.merged[:0], len(a.groups.list))[:len(a.groups.list)]
	merged := a.merged
	clear(merged)
	var classes [4]bool
	for _, c := range q.Classes {
		if c < uint32(len(classes)) {
			classes[c] = true
		}
	}
	anyClass := len(q.Classes) == 0
	n := 0
	for d, agg := range a.days {
		if !inWindow(d, from, to) {
			continue
		}
		for i := range agg.cells {
			c := &agg.cells[i]
			if !want(c.version) || !anyClass && !classes[c.Class] {
				continue
			}
			m := &merged[c.group]
			if m.Count == 0 {
				m.GroupID = c.GroupID
				n++
			}
			m.Merge(&c.IssueCell)
		}
	}
	// One array for the messages the reply points to, not one allocation per group; a merged
	// cell's version is empty, so all of them point to one Version. Their ids are copied out of
	// merged, which the next answer uses again.
	r := &actorpb.LiveReply{Ok: true, Cells: make([]*actorpb.IssueCell, 0, n)}
	protos, none, ids := make([]actorpb.IssueCell, n), &actorpb.Version{}, make([]byte, 16*n)
	for i := range merged {
		if c := &merged[i]; c.Count > 0 {
			p := &protos[len(r.Cells)]
			setCellProto(p, c, none)
			p.LastId = ids[16*len(r.Cells) : 16*len(r.Cells)+16 : 16*len(r.Cells)+16]
			copy(p.LastId, c.LastID[:])
			r.Cells = append(r.Cells, p)
		}
	}
	clear(merged) // it holds no strings until the next answer
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
	a.reset()
	a.st.Issues, a.st.Transitions = 0, 0
	a.ready = false
	if !ready || a.store == nil {
		return &actorpb.RebuildReply{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	q := &model.IssueQuery{EventFilter: model.EventFilter{App: a.app, From: RebuildWindow[0], To: RebuildWindow[1]}}
	cells, err := a.store.IssueCells(ctx, q, model.Cells{Bucketed: true, By: model.Buckets{Group: model.PlotDays}})
	if err != nil {
		return &actorpb.RebuildReply{Error: fmt.Sprintf("rebuild issue cells of app %s: %v", a.identity, err)}
	}
	for i := range cells {
		a.addCell(cells[i])
		a.alerts.know(&cells[i])
	}
	err = a.store.JourneyFacts(ctx, a.app, RebuildWindow[0], RebuildWindow[1], func(f *model.JourneyFact) error {
		e := &f.Event
		if f.IsMove() {
			a.addMove(f.From, e.Screen, e.Timestamp, f.LastTime(), e.Version, f.Count(), false)
		} else {
			a.addIssue(f.From, e.GroupID, e.Class, e.Title, e.Timestamp, f.LastTime(), e.Version, f.Count(), false)
		}
		return nil
	})
	if err != nil {
		a.reset()
		return &actorpb.RebuildReply{Error: fmt.Sprintf("rebuild journeys of app %s: %v", a.identity, err)}
	}
	if err := a.http.rebuild(ctx, a.store, a); err != nil {
		a.reset()
		return &actorpb.RebuildReply{Error: err.Error()}
	}
	if a.alerts.sink != nil {
		if err := a.alerts.rebuild(ctx, a.app); err != nil {
			a.reset()
			return &actorpb.RebuildReply{Error: err.Error()}
		}
	}
	a.ready = true
	return &actorpb.RebuildReply{Cells: uint64(a.ncells)}
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
	p := &actorpb.IssueCell{}
	setCellProto(p, c, VersionProto(c.Version))
	return p
}

// setCellProto fills the zero message p with cell c, whose version's message is v. LastId
// shares c's bytes.
func setCellProto(p *actorpb.IssueCell, c *model.IssueCell, v *actorpb.Version) {
	p.GroupId, p.Class, p.Version, p.Bucket, p.Count = c.GroupID, uint32(c.Class), v, c.Bucket, c.Count
	p.FirstTime, p.LastTime, p.LastId = c.FirstTime, c.LastTime, c.LastID[:]
	p.Type, p.Message, p.MethodName = c.Last.Type, c.Last.Message, c.Last.MethodName
	p.FileName, p.LineNumber, p.Severity = c.Last.FileName, c.Last.LineNumber, c.Last.Severity
}

func cellOf(c *actorpb.IssueCell) model.IssueCell {
	id, _ := uuid.FromBytes(c.LastId)
	return model.IssueCell{GroupID: c.GroupId, Class: model.IssueClass(c.Class), Version: versionOf(c.Version),
		Bucket: c.Bucket, Count: c.Count, FirstTime: c.FirstTime, LastTime: c.LastTime, LastID: id,
		Last: model.IssueDisplay{Type: c.Type, Message: c.Message, MethodName: c.MethodName,
			FileName: c.FileName, LineNumber: c.LineNumber, Severity: c.Severity}}
}

// packJourney is the reply of a live journey's sums: LiveReply's packed journey, which names
// each screen once. The reply's arrays share three allocations; its strings are the actor's.
func (a *appActor) packJourney(moves map[uint64]uint64, issues map[issueKey]uint64) *actorpb.LiveReply {
	nl, ni := len(moves), len(issues)
	u32 := make([]uint32, 2*nl+2*ni)
	u64 := make([]uint64, nl+ni)
	strs := make([]string, 0, 2*ni+min(len(a.screens.list), 2*nl+ni))
	r := &actorpb.LiveReply{Ok: true,
		LinkFrom: u32[:0:nl], LinkTo: u32[nl : nl : 2*nl], LinkSessions: u64[:0:nl],
		IssueScreen: u32[2*nl : 2*nl : 2*nl+ni], IssueClass: u32[2*nl+ni : 2*nl+ni : 2*nl+2*ni], IssueCount: u64[nl : nl : nl+ni],
		IssueGroup: strs[:0:ni], IssueTitle: strs[ni : ni : 2*ni], Screens: strs[2*ni : 2*ni],
	}
	// at[s] is screen s's index in r.Screens plus one; 0 until the reply names it.
	a.at = slices.Grow(a.at[:0], len(a.screens.list))[:len(a.screens.list)]
	clear(a.at)
	screen := func(s uint64) uint32 {
		if a.at[s] == 0 {
			r.Screens = append(r.Screens, a.screens.list[s])
			a.at[s] = uint32(len(r.Screens))
		}
		return a.at[s] - 1
	}
	for k, n := range moves {
		r.LinkFrom = append(r.LinkFrom, screen(k>>24))
		r.LinkTo = append(r.LinkTo, screen(k&(1<<24-1)))
		r.LinkSessions = append(r.LinkSessions, n)
	}
	for k, n := range issues {
		r.IssueScreen = append(r.IssueScreen, screen(uint64(k.screen)))
		r.IssueGroup = append(r.IssueGroup, a.groups.list[k.group])
		r.IssueClass = append(r.IssueClass, uint32(k.class))
		r.IssueTitle = append(r.IssueTitle, a.titles[k.group])
		r.IssueCount = append(r.IssueCount, n)
	}
	return r
}

// JourneyAnswer is the journey of a live reply's links and issues, without building a
// model.JourneyGraph of them (model.JourneyCounts): the dashboard's live answer.
func JourneyAnswer(r *actorpb.LiveReply, bigraph bool) (model.JourneyJSON, error) {
	c := model.NewJourneyCounts(len(r.LinkFrom), len(r.IssueCount))
	if err := AddJourneyReply(c, r); err != nil {
		return model.JourneyJSON{}, err
	}
	return c.Graph(bigraph), nil
}

// AddJourneyReply adds a journey reply's counts to c, to which more (the store's facts of the
// parts of a window the reply does not cover) can be added before the graph is built. A reply
// whose packed arrays disagree in length or point past its screens adds nothing.
func AddJourneyReply(c *model.JourneyCounts, r *actorpb.LiveReply) error {
	if err := checkJourney(r); err != nil {
		return err
	}
	for i, n := range r.LinkSessions {
		c.AddLink(r.Screens[r.LinkFrom[i]], r.Screens[r.LinkTo[i]], n)
	}
	for i, n := range r.IssueCount {
		c.AddIssue(r.Screens[r.IssueScreen[i]], model.JourneyKind(model.IssueClass(r.IssueClass[i])), r.IssueGroup[i], r.IssueTitle[i], n)
	}
	return nil
}

// JourneyPack packs links and issues named by their screens into Reply's journey, as an app
// actor does: for replies built elsewhere (tests, benchmarks).
type JourneyPack struct {
	Reply *actorpb.LiveReply
	at    map[string]uint32
}

func (p *JourneyPack) screen(s string) uint32 {
	i, ok := p.at[s]
	if !ok {
		if p.at == nil {
			p.at = map[string]uint32{}
		}
		i = uint32(len(p.Reply.Screens))
		p.at[s] = i
		p.Reply.Screens = append(p.Reply.Screens, s)
	}
	return i
}

// Link adds n sessions that moved from one screen to another.
func (p *JourneyPack) Link(from, to string, n uint64) {
	r := p.Reply
	r.LinkFrom, r.LinkTo, r.LinkSessions = append(r.LinkFrom, p.screen(from)), append(r.LinkTo, p.screen(to)), append(r.LinkSessions, n)
}

// Issue adds n issue events of a group on a screen ("" for none).
func (p *JourneyPack) Issue(screen, group string, class uint32, title string, n uint64) {
	r := p.Reply
	r.IssueScreen, r.IssueGroup, r.IssueClass = append(r.IssueScreen, p.screen(screen)), append(r.IssueGroup, group), append(r.IssueClass, class)
	r.IssueTitle, r.IssueCount = append(r.IssueTitle, title), append(r.IssueCount, n)
}

// errJourneyReply is a live reply whose packed journey does not hold together.
var errJourneyReply = errors.New("malformed live journey reply")

func checkJourney(r *actorpb.LiveReply) error {
	if len(r.ProtoReflect().GetUnknown()) > 0 {
		// Fields this node does not know: the links and issues as messages, from a node
		// before the packed journey, would otherwise read as an empty journey.
		return fmt.Errorf("%w: fields unknown to this node (a node of another version)", errJourneyReply)
	}
	nl, ni := len(r.LinkSessions), len(r.IssueCount)
	if len(r.LinkFrom) != nl || len(r.LinkTo) != nl || len(r.IssueScreen) != ni || len(r.IssueGroup) != ni ||
		len(r.IssueClass) != ni || len(r.IssueTitle) != ni {
		return fmt.Errorf("%w: arrays of %d, %d, %d links and %d, %d, %d, %d, %d issues", errJourneyReply,
			len(r.LinkFrom), len(r.LinkTo), nl, len(r.IssueScreen), len(r.IssueGroup), len(r.IssueClass), len(r.IssueTitle), ni)
	}
	ns := uint32(len(r.Screens))
	for _, idx := range [][]uint32{r.LinkFrom, r.LinkTo, r.IssueScreen} {
		for _, s := range idx {
			if s >= ns {
				return fmt.Errorf("%w: screen %d of %d", errJourneyReply, s, ns)
			}
		}
	}
	return nil
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
