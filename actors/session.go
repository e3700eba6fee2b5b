package actors

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// maxScreens bounds the journey steps a session keeps, so a runaway session cannot grow an
// actor without limit.
const maxScreens = 200

// maxIssueIDs bounds the issue event ids a session remembers (16 bytes each): an issue event
// beyond them that is sent again counts again in the live aggregates (the store holds it once,
// so the next rebuild is right again).
const maxIssueIDs = 1024

// snapshotTTL is how long a passivated session's state is kept: a session idle for longer is
// over.
const snapshotTTL = 7 * 24 * time.Hour

// snapshotTimeout bounds one snapshot load or save: a shared store that does not answer must
// not hold a session actor (and the requests waiting on it) for longer.
const snapshotTimeout = 5 * time.Second

// loadSnapshot reads the actor's saved state into m; found is false when there is none.
func loadSnapshot(snaps sinks.Snapshots, kind Kind, identity string, m proto.Message) (found bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	b, found, err := snaps.LoadSnapshot(ctx, string(kind), identity)
	if err != nil || !found {
		return false, err
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return false, fmt.Errorf("decode %s snapshot: %w", kind, err)
	}
	return true, nil
}

// saveSnapshot writes the actor's state, to expire after ttl.
func saveSnapshot(snaps sinks.Snapshots, kind Kind, identity string, m proto.Message, ttl time.Duration) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s snapshot: %w", kind, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	return snaps.SaveSnapshot(ctx, string(kind), identity, b, ttl)
}

// identityIDs are the app and session ids in a session identity (zero where one does not parse).
func identityIDs(identity string) (app, session uuid.UUID) {
	a, s, _ := strings.Cut(identity, "/")
	app, _ = uuid.Parse(a)
	session, _ = uuid.Parse(s)
	return app, session
}

// appID is the session's app id: the snapshot's, else its identity's.
func (a *sessionActor) appID() uuid.UUID {
	if a.st.AppId != nil {
		return uuid.UUID(a.st.AppId)
	}
	app, _ := identityIDs(a.identity)
	return app
}

// whole runs f (which encodes the state) with the state whole, as a snapshot and the debug
// state hold it: st.AppId and st.SessionId set (they are not kept between messages unless a
// snapshot brought them) and the journey's steps in st.Steps.
func (a *sessionActor) whole(f func()) {
	if a.st.AppId == nil {
		app, sess := identityIDs(a.identity)
		a.st.AppId, a.st.SessionId = app[:], sess[:]
		defer func() { a.st.AppId, a.st.SessionId = nil, nil }()
	}
	a.walk.state(&a.st, f)
}

// SessionIdentity is the directory identity of a session actor. Sessions are addressed within
// their app, so two apps can never share a session actor.
func SessionIdentity(app, session uuid.UUID) string {
	return app.String() + "/" + session.String()
}

// sessionActor keeps one live session: when it started, its journey steps and its crash, ANR
// and foreground flags; it enforces that nothing lands before the session's session_start.
// It tells the app actor what the session's batches add to its aggregates: journey moves and
// issues, and issue cells. An event may come again in another request (an SDK retry the
// request gate does not recognise): the actor counts each issue event once, by the ids it
// keeps, and walks each screen event once (journeyWalk), so live answers count an event once
// as the store does. It passivates after Idle without messages, saving its state to
// Snapshots, so this holds across passivation and clean restarts (up to snapshotTTL idle).
//
// A node holds one per live mobile session (100k and more), so what each holds is kept small:
// what all of a producer's actors share is one sessionConfig, the app and session ids are
// not kept apart from the identity (st.AppId and st.SessionId are set only while the state is
// encoded, unless a snapshot brought them), the journey's steps are values in one array
// (journeyWalk), and reservations release their array when the last ends (docs/benchmarks.md,
// "Session actor memory").
type sessionActor struct {
	*sessionConfig
	identity  string
	passivate func()

	st   actorpb.SessionState // its Steps are in walk while the actor lives (journeyWalk)
	walk journeyWalk
	// reserved are the places SessionCheck gave requests still in flight (not in snapshots: a
	// request does not outlive its node, and reservations expire after reserveTTL).
	reserved []reservation
	dirty    bool
}

// sessionConfig is what every session actor of a producer shares.
type sessionConfig struct {
	dir      func() Directory
	snaps    sinks.Snapshots
	idle     time.Duration
	log      *slog.Logger
	now      func() time.Time
	saveEach bool // save after every batch (SessionProducerSaving)
}

// reservation is one request's place in the session between its SessionCheck and its events.
type reservation struct {
	request         string // request id bytes
	start, earliest int64  // as in SessionCheck
	at              time.Time
}

// reserveTTL bounds a reservation whose request never ended it: after SessionCheck, a request
// only appends to the spool and records its id (milliseconds), so one older than this belongs
// to a node that died mid-request.
const reserveTTL = time.Minute

// SessionProducer makes session actors for a Directory.
func SessionProducer(dir func() Directory, snaps sinks.Snapshots, idle time.Duration, log *slog.Logger) Producer {
	return SessionProducerSaving(dir, snaps, idle, log, false)
}

// SessionProducerSaving is SessionProducer whose actors, with eachBatch, save their state after
// every batch: in a cluster a node may die with SIGKILL, and its sessions go on on another
// node, which must find them as they were (a single node saves at passivation and shutdown).
func SessionProducerSaving(dir func() Directory, snaps sinks.Snapshots, idle time.Duration, log *slog.Logger, eachBatch bool) Producer {
	cfg := &sessionConfig{dir: dir, snaps: snaps, idle: idle, log: log, now: time.Now, saveEach: eachBatch}
	return func(identity string, passivate func()) actor.Actor {
		return &sessionActor{sessionConfig: cfg, identity: identity, passivate: passivate}
	}
}

func (a *sessionActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if _, err := loadSnapshot(a.snaps, KindSession, a.identity, &a.st); err != nil {
			a.log.Warn("session state lost", "session", a.identity, "error", err.Error())
		}
		a.walk.restore(&a.st)
		ctx.SetReceiveTimeout(a.idle)
	case *actorpb.SessionCheck:
		ctx.Respond(a.check(m))
	case *actorpb.SessionEvents:
		a.release(m.RequestId)
		a.apply(m)
		if a.saveEach {
			a.save()
		}
	case *actorpb.SessionRelease:
		a.release(m.RequestId)
	case *actorpb.StateRequest:
		var js []byte
		a.whole(func() { js, _ = protojson.Marshal(&a.st) })
		ctx.Respond(&actorpb.StateReply{Kind: string(KindSession), Identity: a.identity, StateJson: js})
	case *actor.ReceiveTimeout:
		a.save()
		a.passivate()
	case *actor.Stopping:
		a.save()
	}
}

// check answers SessionCheck: against what the session accepted (a refusal is final), then
// against the reservations of requests in flight (a refusal asks for a retry), and reserves the
// request's place when it passes.
func (a *sessionActor) check(m *actorpb.SessionCheck) *actorpb.SessionCheckReply {
	if reason := orderBreak(a.st.SessionStart, a.st.FirstEvent, m); reason != "" {
		return &actorpb.SessionCheckReply{Reason: reason}
	}
	now := a.now()
	live := a.reserved[:0]
	for _, r := range a.reserved {
		if now.Sub(r.at) < reserveTTL {
			live = append(live, r)
		}
	}
	a.reserved = live
	if len(live) == 0 {
		a.reserved = nil // the array goes with the last reservation
	}
	again := false // the same request checks again (it holds its place already)
	for _, r := range a.reserved {
		if r.request == string(m.RequestId) {
			again = true
			continue
		}
		// The rules are symmetric in effect: checking m against r as if r were accepted finds
		// every pair that cannot both join, whichever is accepted first.
		if reason := orderBreak(r.start, r.earliest, m); reason != "" {
			return &actorpb.SessionCheckReply{Retry: true,
				Reason: "another request for this session is being accepted, and if it is: " + reason}
		}
	}
	if len(m.RequestId) > 0 && !again {
		a.reserved = append(a.reserved, reservation{request: string(m.RequestId), start: m.SessionStart, earliest: m.EarliestEvent, at: now})
	}
	return &actorpb.SessionCheckReply{Ok: true}
}

// release ends a request's reservation, if it has one.
func (a *sessionActor) release(request []byte) {
	if len(request) == 0 {
		return
	}
	for i, r := range a.reserved {
		if r.request == string(request) {
			a.reserved = append(a.reserved[:i], a.reserved[i+1:]...)
			if len(a.reserved) == 0 {
				a.reserved = nil // the array goes with the last reservation
			}
			return
		}
	}
}

// orderBreak says which session order rule a batch (m) breaks when it joins a session whose
// session_start is start and whose first event is first (0: none); "" when it breaks none.
func orderBreak(start, first int64, m *actorpb.SessionCheck) string {
	if start != 0 && m.EarliestEvent != 0 && m.EarliestEvent < start {
		return fmt.Sprintf("an event at %s is earlier than its session's session_start at %s",
			model.FormatNanos(m.EarliestEvent), model.FormatNanos(start))
	}
	if m.SessionStart != 0 && start != 0 && m.SessionStart != start {
		return fmt.Sprintf("the session has a session_start at %s already", model.FormatNanos(start))
	}
	if m.SessionStart != 0 && first != 0 && first < m.SessionStart {
		return fmt.Sprintf("session_start at %s is not the first event of its session: one at %s was accepted before",
			model.FormatNanos(m.SessionStart), model.FormatNanos(first))
	}
	return ""
}

// apply counts a batch's events of the session and follows its journey (journeyWalk), telling
// the app actor the session's first moves, the screens of its crashes and ANRs, and the cells
// of its issue events not counted before.
func (a *sessionActor) apply(m *actorpb.SessionEvents) {
	a.dirty = true
	a.growScreens(m.Events)
	var cells []model.IssueCell
	// walk is nil unless an issue event was seen before: then it holds the batch's other
	// events, which the journey walks (a batch without such an event is not copied).
	var walk []*actorpb.SessionEvent
	for i, e := range m.Events {
		again := false
		if e.GroupId != "" && e.Class != 0 {
			if again = !a.firstIssue(e.Id); !again {
				cells = addIssueCell(cells, e)
			}
		}
		switch {
		case again && walk == nil:
			walk = append(make([]*actorpb.SessionEvent, 0, len(m.Events)), m.Events[:i]...)
		case !again && walk != nil:
			walk = append(walk, e)
		}
		a.st.Events++
		if a.st.FirstEvent == 0 || e.Timestamp < a.st.FirstEvent {
			a.st.FirstEvent = e.Timestamp
		}
		if e.Timestamp > a.st.LastEvent {
			a.st.LastEvent = e.Timestamp
		}
		if e.Type == "session_start" && a.st.SessionStart == 0 {
			a.st.SessionStart = e.Timestamp
		}
		a.st.Crashed = a.st.Crashed || e.Fatal
		a.st.Anr = a.st.Anr || e.Anr
		switch e.Foreground {
		case 1:
			a.st.Foreground = true
		case 2:
			a.st.Foreground = false
		}
		if e.Screen != "" {
			n := len(a.st.Screens)
			if n > 0 && a.st.Screens[n-1] == e.Screen {
				continue
			}
			if n == maxScreens {
				a.st.Screens = append(a.st.Screens[:0], a.st.Screens[1:]...)
			}
			a.st.Screens = append(a.st.Screens, e.Screen)
		}
	}
	if walk == nil {
		walk = m.Events
	}
	upd := a.walk.add(&a.st, walk)
	for i := range cells {
		upd.Cells = append(upd.Cells, CellProto(&cells[i]))
	}
	if len(upd.Moves)+len(upd.Issues)+len(upd.Cells) > 0 {
		upd.Replay, upd.Origin = m.Replay, m.Origin
		a.dir().Tell(KindApp, a.appID().String(), upd)
	}
}

// growScreens makes room in st.Screens for the screens events add, in one allocation of the
// size they need (append doubling leaves a quarter of a live session's array unused on
// average), so the loop in apply appends without allocating.
func (a *sessionActor) growScreens(events []*actorpb.SessionEvent) {
	n := len(a.st.Screens)
	last, add := "", 0
	if n > 0 {
		last = a.st.Screens[n-1]
	}
	for _, e := range events {
		if e.Screen != "" && e.Screen != last {
			last = e.Screen
			add++
		}
	}
	if want := min(n+add, maxScreens); want > cap(a.st.Screens) {
		screens := make([]string, n, want)
		copy(screens, a.st.Screens)
		a.st.Screens = screens
	}
}

// firstIssue records the id of an issue event and says whether the session sees it for the
// first time. The ids are one sorted byte string (16 bytes each): no allocation per id, and
// a snapshot stores them as they are. Past maxIssueIDs every new id counts, unrecorded.
func (a *sessionActor) firstIssue(id []byte) bool {
	const n = len(uuid.UUID{})
	if len(id) != n {
		return true // nothing to recognise it by (accepted events always have an id)
	}
	ids := a.st.IssueIds
	i, found := sort.Find(len(ids)/n, func(k int) int { return bytes.Compare(id, ids[k*n:k*n+n]) })
	if found {
		return false
	}
	if len(ids) >= maxIssueIDs*n {
		return true
	}
	ids = append(ids, id...) // room for one more, then make way at i
	copy(ids[i*n+n:], ids[i*n:len(ids)-n])
	copy(ids[i*n:], id)
	a.st.IssueIds = ids
	return true
}

// addIssueCell counts an issue event into the batch's day cells (a batch holds few issue
// events of a session, so a linear search beats a map).
func addIssueCell(cells []model.IssueCell, e *actorpb.SessionEvent) []model.IssueCell {
	one := model.IssueCell{GroupID: e.GroupId, Class: model.IssueClass(e.Class), Version: versionOf(e.Version),
		Bucket: model.DayStart(e.Timestamp), Count: 1, FirstTime: e.Timestamp, LastTime: e.Timestamp, Last: displayOf(e.Issue)}
	copy(one.LastID[:], e.Id)
	for i := range cells {
		c := &cells[i]
		if c.GroupID == one.GroupID && c.Class == one.Class && c.Version == one.Version && c.Bucket == one.Bucket {
			c.Merge(&one)
			return cells
		}
	}
	return append(cells, one)
}

// displayOf is the model form of an issue display message (empty for nil).
func displayOf(d *actorpb.IssueDisplay) model.IssueDisplay {
	if d == nil {
		return model.IssueDisplay{}
	}
	return model.IssueDisplay{Type: d.Type, Message: d.Message, MethodName: d.MethodName,
		FileName: d.FileName, LineNumber: d.LineNumber, Severity: d.Severity}
}

func (a *sessionActor) save() {
	if !a.dirty {
		return
	}
	var err error
	a.whole(func() { err = saveSnapshot(a.snaps, KindSession, a.identity, &a.st, snapshotTTL) })
	if err != nil {
		a.log.Warn("session state not saved", "session", a.identity, "error", err.Error())
		return
	}
	a.dirty = false
}
