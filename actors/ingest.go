package actors

import (
	"context"
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
)

// Ingest hands accepted batches to the actors: session actors (ordering, journey steps,
// flags), the app actor, and the node's flusher.
type Ingest struct {
	Dir     Directory
	Root    *actor.RootContext
	Flusher *actor.PID
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

// CheckSessions asks each session actor of the batch whether its events may join the session.
// A *SessionOrderError means the batch must be refused (400); any other error is temporary.
func (in *Ingest) CheckSessions(ctx context.Context, app uuid.UUID, events []model.Event) error {
	for _, s := range groupSessions(events) {
		reply, err := in.Dir.Request(ctx, KindSession, SessionIdentity(app, s.id),
			&actorpb.SessionCheck{SessionStart: s.start, EarliestEvent: s.earliest})
		if err != nil {
			return fmt.Errorf("check session order: %w", err)
		}
		r, ok := reply.(*actorpb.SessionCheckReply)
		if !ok {
			return fmt.Errorf("check session order: unexpected reply %T", reply)
		}
		if !r.Ok {
			return &SessionOrderError{SessionID: s.id, Reason: r.Reason}
		}
	}
	return nil
}

// Distribute tells the actors about a batch that is durable in the spool record seq. replay
// says it comes from the spool at start-up (the app actor's rebuild counts it, not the batch).
func (in *Ingest) Distribute(app uuid.UUID, events []model.Event, spans []model.Span, seq uint64, bodyLen int, replay bool) {
	in.DistributeWithBlobs(app, events, spans, nil, seq, bodyLen, replay)
}

// DistributeWithBlobs is Distribute for a batch with inline attachment bytes, which the flusher
// writes to the blob store before the batch's rows.
//
// Each session's events go to its session actor, which counts the issue events it has not seen
// before into the app actor's cells and walks the journey (an event sent again in another
// request counts once); the app actor gets the batch's summary for its debug state; the
// flusher gets the rows.
func (in *Ingest) DistributeWithBlobs(app uuid.UUID, events []model.Event, spans []model.Span, blobs []Blob, seq uint64, bodyLen int, replay bool) {
	appID := app.String()
	summary := &actorpb.AppBatch{Events: uint32(len(events)), Spans: uint32(len(spans)), Types: map[string]uint32{}, Replay: replay}
	// The derived facts are computed here, once per event, and travel with the events to the
	// flusher and the stores; the session facts below are read from them.
	for i := range events {
		events[i].Facts = model.DeriveFacts(&events[i])
	}
	var versions versionCache
	for _, s := range groupSessions(events) {
		// A few allocations per session, none per event: its events' messages in one array,
		// and the ids of its screen and issue events in one block of their own (session actors
		// keep them, and must not keep the batch's rows alive with them).
		backing := make([]actorpb.SessionEvent, len(s.idx))
		msg := &actorpb.SessionEvents{AppId: app[:], Events: make([]*actorpb.SessionEvent, len(s.idx)), Replay: replay}
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
	in.Root.Send(in.Flusher, &FlushItem{Events: events, Spans: spans, Blobs: blobs, Seq: seq, BodyLen: bodyLen})
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
