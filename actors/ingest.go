package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/gate"
	"github.com/svc-dev/svc/sinks/spool"
)

// Ingest is the request path of PUT /events below HTTP: the request gate, the session-order
// check that reserves each session's place, the spool append that makes a batch durable, and
// the hand-off to the actors (session actors for ordering, journeys and flags, the app actor,
// the node's flusher). The handler reads, decodes and answers; whether actors and the gate are
// on this node or across a cluster is decided here, by Dir and Gate.
type Ingest struct {
	Dir     Directory
	Root    *actor.RootContext
	Flusher *actor.PID
	Gate    gate.Store
	Spool   *spool.Spool
	// Node names this node in the origin of its batches (Origin): a replayed batch is told
	// apart by (node, spool sequence) wherever its actors run.
	Node string
	// Stages, when set, times each step (NewStageMetrics).
	Stages *prometheus.HistogramVec
	Log    *slog.Logger
}

// NewStageMetrics registers svc_ingest_stage_seconds{stage} on reg: the time PUT /events spends
// in each step of an accepted request (gate_begin, read_decode, check_sessions, spool_append,
// gate_accept, distribute, respond).
func NewStageMetrics(reg prometheus.Registerer) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "svc_ingest_stage_seconds",
		Help:    "Time PUT /events spends in each step of an accepted request.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"stage"})
	reg.MustRegister(h)
	return h
}

// Lap observes the time since *t under stage on h (nil: nothing) and moves *t to now.
func Lap(h *prometheus.HistogramVec, stage string, t *time.Time) {
	if h == nil {
		return
	}
	now := time.Now()
	h.WithLabelValues(stage).Observe(now.Sub(*t).Seconds())
	*t = now
}

// Batch is a decoded request as the ingest path takes it.
type Batch struct {
	App, Request uuid.UUID
	Kind         uint8  // spool record kind: how replay decodes Record
	Record       []byte // what the spool keeps (copied on append)
	Events       []model.Event
	Spans        []model.Span
	Blobs        []Blob // inline attachment bytes, written by the flusher
	// GateInfo is what a repeat of the request is answered from (the handler's format).
	GateInfo []byte
}

// ErrSessionBusy says a batch conflicts only with another request of its session still in
// flight: a temporary failure, so the retry meets the settled session.
var ErrSessionBusy = errors.New("another request for the same session is being accepted")

// Begin classifies the request id (gate.Store.Begin). For gate.Unseen the caller ends the
// request with Accept, or with Abort when it refuses it.
func (in *Ingest) Begin(ctx context.Context, app, req uuid.UUID) (gate.State, []byte, error) {
	t := time.Now()
	defer Lap(in.Stages, "gate_begin", &t)
	return in.Gate.Begin(ctx, app, req)
}

// Abort ends a request that Begin let through and that was not accepted, so a retry is
// processed. It runs even when ctx ended (a client that went away).
func (in *Ingest) Abort(ctx context.Context, app, req uuid.UUID) {
	in.Gate.Abort(context.WithoutCancel(ctx), app, req)
}

// Accept takes a decoded batch that Begin let through: each session's place is checked and
// reserved (a *SessionOrderError refuses the batch for good; an error wrapping ErrSessionBusy
// asks for a retry), the batch is appended to the spool (durable when Accept returns nil), its
// request id recorded as accepted, and the actors told. Any other error is temporary. On error
// nothing of the batch is kept and the caller must Abort.
func (in *Ingest) Accept(ctx context.Context, b *Batch) error {
	t := time.Now()
	reserved, err := in.reserveSessions(ctx, b.App, b.Request, b.Events)
	if err != nil {
		in.release(b.App, b.Request, reserved)
		return err
	}
	Lap(in.Stages, "check_sessions", &t)
	rec := &spool.Record{AppID: b.App, RequestID: b.Request, Kind: b.Kind, Body: b.Record}
	if err := in.Spool.Append(rec); err != nil {
		in.release(b.App, b.Request, reserved)
		return err
	}
	Lap(in.Stages, "spool_append", &t)
	if err := in.Gate.Accept(context.WithoutCancel(ctx), b.App, b.Request, b.GateInfo); err != nil {
		// The batch is durable in the spool; replay marks the id accepted if this node dies.
		in.Log.Warn("request id not recorded; a retry may be processed again", "error", err.Error())
	}
	Lap(in.Stages, "gate_accept", &t)
	in.distribute(b.App, b.Events, b.Spans, b.Blobs, b.Request, &actorpb.Origin{Node: in.Node, Seq: rec.Seq}, len(b.Record), false)
	Lap(in.Stages, "distribute", &t)
	return nil
}

// Replayed hands on a batch found in the spool at start: its request id is marked accepted
// (the node may have died between the spool append and the gate) and the actors are told,
// as a replay of the origin (Node, seq).
func (in *Ingest) Replayed(ctx context.Context, b *Batch, seq uint64) error {
	if err := in.Gate.Mark(ctx, b.App, b.Request, b.GateInfo); err != nil {
		return err
	}
	in.distribute(b.App, b.Events, b.Spans, b.Blobs, uuid.Nil, &actorpb.Origin{Node: in.Node, Seq: seq}, len(b.Record), true)
	return nil
}

// SessionOrderError says a batch breaks the session_start rule across batches.
type SessionOrderError struct {
	SessionID uuid.UUID
	Reason    string
}

func (e *SessionOrderError) Error() string {
	return fmt.Sprintf("session %s: %s", e.SessionID, e.Reason)
}

// sessionSpan is what one batch holds of one session.
type sessionSpan struct {
	id       uuid.UUID
	earliest int64
	start    int64 // session_start time, 0 when none
	idx      []int // indexes of its events in the batch
}

func groupSessions(events []model.Event) []sessionSpan {
	var out []sessionSpan
	for i := range events {
		e := &events[i]
		j := slices.IndexFunc(out, func(s sessionSpan) bool { return s.id == e.SessionID })
		if j < 0 {
			out = append(out, sessionSpan{id: e.SessionID, earliest: e.Timestamp})
			j = len(out) - 1
		}
		s := &out[j]
		s.idx = append(s.idx, i)
		if e.Timestamp < s.earliest {
			s.earliest = e.Timestamp
		}
		if e.Type == "session_start" && (s.start == 0 || e.Timestamp < s.start) {
			s.start = e.Timestamp
		}
	}
	return out
}

// reserveSessions asks each session actor of the batch whether its events may join the
// session, reserving their place in the same message; reserved lists the sessions that did
// (released by the caller when the batch is not accepted after all).
func (in *Ingest) reserveSessions(ctx context.Context, app, req uuid.UUID, events []model.Event) (reserved []uuid.UUID, err error) {
	var reqID []byte
	if req != uuid.Nil {
		reqID = req[:]
	}
	for _, s := range groupSessions(events) {
		reply, err := in.Dir.Request(ctx, KindSession, SessionIdentity(app, s.id),
			&actorpb.SessionCheck{SessionStart: s.start, EarliestEvent: s.earliest, RequestId: reqID})
		if err != nil {
			return reserved, fmt.Errorf("check session order: %w", err)
		}
		r, ok := reply.(*actorpb.SessionCheckReply)
		switch {
		case !ok:
			return reserved, fmt.Errorf("check session order: unexpected reply %T", reply)
		case r.Retry:
			return reserved, fmt.Errorf("session %s: %w (%s)", s.id, ErrSessionBusy, r.Reason)
		case !r.Ok:
			return reserved, &SessionOrderError{SessionID: s.id, Reason: r.Reason}
		}
		reserved = append(reserved, s.id)
	}
	return reserved, nil
}

// CheckSessions checks a batch's session order without reserving anything (tools and tests;
// requests go through Accept). A *SessionOrderError means the batch would be refused.
func (in *Ingest) CheckSessions(ctx context.Context, app uuid.UUID, events []model.Event) error {
	_, err := in.reserveSessions(ctx, app, uuid.Nil, events)
	return err
}

// release ends the reservations of a request that was not accepted.
func (in *Ingest) release(app, req uuid.UUID, sessions []uuid.UUID) {
	for _, s := range sessions {
		in.Dir.Tell(KindSession, SessionIdentity(app, s), &actorpb.SessionRelease{RequestId: req[:]})
	}
}

// Distribute tells the actors about a batch of this node's spool record seq without a request
// (tests and tools); replay says it comes from the spool at start-up.
func (in *Ingest) Distribute(app uuid.UUID, events []model.Event, spans []model.Span, seq uint64, bodyLen int, replay bool) {
	in.distribute(app, events, spans, nil, uuid.Nil, &actorpb.Origin{Node: in.Node, Seq: seq}, bodyLen, replay)
}

// distribute tells the actors about a batch that is durable in the spool at origin.
//
// Each session's events go to its session actor (ending the reservation of req), which counts
// the issue events it has not seen before into the app actor's cells and walks the journey (an
// event sent again in another request counts once); the app actor gets the batch's summary for
// its debug state; the flusher gets the rows.
func (in *Ingest) distribute(app uuid.UUID, events []model.Event, spans []model.Span, blobs []Blob, req uuid.UUID, origin *actorpb.Origin, bodyLen int, replay bool) {
	appID := app.String()
	summary := &actorpb.AppBatch{Events: uint32(len(events)), Spans: uint32(len(spans)), Types: map[string]uint32{}, Replay: replay, Origin: origin}
	var reqID []byte
	if req != uuid.Nil {
		reqID = req[:]
	}
	// The derived facts are computed here, once per event, and travel with the events to the
	// flusher and the stores; the session facts below are read from them.
	var screens screenNames
	for i := range events {
		f := &events[i].Facts
		*f = model.DeriveFacts(&events[i])
		f.Screen = screens.of(f.Screen)
	}
	var versions versionCache
	for _, s := range groupSessions(events) {
		// A few allocations per session, none per event: its events' messages in one array,
		// and the ids of its screen and issue events in one block of their own (session actors
		// keep them, and must not keep the batch's rows alive with them).
		backing := make([]actorpb.SessionEvent, len(s.idx))
		msg := &actorpb.SessionEvents{AppId: app[:], Events: make([]*actorpb.SessionEvent, len(s.idx)), Replay: replay,
			RequestId: reqID, Origin: origin}
		n := 0
		for _, i := range s.idx {
			if needsID(&events[i]) {
				n++
			}
		}
		ids := make([]byte, 0, n*len(uuid.UUID{}))
		for k, i := range s.idx {
			ids = sessionEvent(&backing[k], &events[i], &versions, ids)
			msg.Events[k] = &backing[k]
		}
		slices.SortStableFunc(msg.Events, func(a, b *actorpb.SessionEvent) int {
			switch {
			case a.Timestamp < b.Timestamp:
				return -1
			case a.Timestamp > b.Timestamp:
				return 1
			}
			return 0
		})
		in.Dir.Tell(KindSession, SessionIdentity(app, s.id), msg)
		sid := s.id
		summary.Sessions = append(summary.Sessions, sid[:])
	}
	var paths batchPaths
	for i := range events {
		e := &events[i]
		summary.Types[e.Type]++
		paths.add(e)
		if e.Type == "bug_report" {
			summary.BugReports = append(summary.BugReports, bugReportRef(e))
		}
		summary.First, summary.Last = widen(summary.First, summary.Last, e.Timestamp)
	}
	summary.HttpPaths = paths.out
	for i := range spans {
		summary.First, summary.Last = widen(summary.First, summary.Last, spans[i].StartTime)
	}
	in.Dir.Tell(KindApp, appID, summary)
	in.Root.Send(in.Flusher, &FlushItem{Events: events, Spans: spans, Blobs: blobs, Seq: origin.Seq, BodyLen: bodyLen})
}

// versionCache hands out one Version message per distinct version of a batch (a batch rarely
// holds more than one), so screen and issue events do not each allocate theirs. The messages
// are shared, so nobody may change them.
type versionCache struct{ last *actorpb.Version }

func (c *versionCache) of(a *model.Attributes) *actorpb.Version {
	if c.last == nil || c.last.Name != a.AppVersion || c.last.Code != a.AppBuild {
		c.last = &actorpb.Version{Name: a.AppVersion, Code: a.AppBuild}
	}
	return c.last
}

// screenNames shares one copy of each screen name of a batch among its events: session actors
// keep the names of their journey's steps, and a batch names the same few screens many times.
// It holds the first 32 names (a linear search, on the stack; batches name a handful).
type screenNames struct {
	seen [32]string
	n    int
}

func (c *screenNames) of(s string) string {
	if s == "" {
		return s
	}
	for _, k := range c.seen[:c.n] {
		if k == s {
			return k
		}
	}
	if c.n < len(c.seen) {
		c.seen[c.n] = s
		c.n++
	}
	return s
}

// needsID says whether a session actor is told e's id and version: screen and issue events.
func needsID(e *model.Event) bool { return e.Facts.Screen != "" || e.Facts.GroupID != "" }

// sessionEvent fills se with what a session actor is told of e, from its derived facts: only
// a foreground change (lifecycle_app, a small payload) still needs a parse of its own. Screen
// and issue events carry their id (appended to ids, whose room it takes) and version, issue
// events their group and display.
func sessionEvent(se *actorpb.SessionEvent, e *model.Event, versions *versionCache, ids []byte) []byte {
	*se = actorpb.SessionEvent{Timestamp: e.Timestamp, Type: e.Type, Screen: e.Facts.Screen,
		Fatal: e.Facts.Fatal && e.Type == "exception", Anr: e.Type == "anr"}
	if e.Type == "lifecycle_app" {
		se.Foreground = model.FactsOf(e).Foreground
	}
	if needsID(e) {
		se.Version = versions.of(&e.Attribute)
		n := len(ids)
		ids = append(ids, e.ID[:]...)
		se.Id = ids[n:len(ids):len(ids)]
	}
	if c := model.ClassOf(e.Type, &e.Facts); c != 0 {
		d := &e.Facts.Issue
		se.GroupId, se.Class = e.Facts.GroupID, uint32(c)
		se.Issue = &actorpb.IssueDisplay{Type: d.Type, Message: d.Message, MethodName: d.MethodName,
			FileName: d.FileName, LineNumber: d.LineNumber, Severity: d.Severity}
	}
	return ids
}

func widen(first, last, t int64) (int64, int64) {
	if first == 0 || t < first {
		first = t
	}
	if t > last {
		last = t
	}
	return first, last
}
