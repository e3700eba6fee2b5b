package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// maxScreens bounds the journey steps a session keeps, so a runaway session cannot grow an
// actor without limit.
const maxScreens = 200

// snapshotTTL is how long a passivated session's state is kept: a session idle for longer is
// over.
const snapshotTTL = 7 * 24 * time.Hour

// Snapshots keeps actor state while an actor is passivated, in the node's Badger DB.
type Snapshots struct{ DB *badger.DB }

func snapshotKey(kind Kind, identity string) []byte {
	return []byte(badgerdb.PrefixActor + string(kind) + "/" + identity)
}

// Load reads a snapshot into m; found is false when there is none.
func (s Snapshots) Load(kind Kind, identity string, m proto.Message) (found bool, err error) {
	err = s.DB.View(func(txn *badger.Txn) error {
		it, err := txn.Get(snapshotKey(kind, identity))
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) error { return proto.Unmarshal(v, m) })
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("load %s snapshot: %w", kind, err)
	}
	return true, nil
}

// Save writes a snapshot that expires after ttl.
func (s Snapshots) Save(kind Kind, identity string, m proto.Message, ttl time.Duration) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s snapshot: %w", kind, err)
	}
	return s.DB.Update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry(snapshotKey(kind, identity), b).WithTTL(ttl))
	})
}

// SessionIdentity is the directory identity of a session actor. Sessions are addressed within
// their app, so two apps can never share a session actor.
func SessionIdentity(app, session uuid.UUID) string {
	return app.String() + "/" + session.String()
}

// sessionActor keeps one live session: when it started, its journey steps and its crash, ANR
// and foreground flags; it enforces that nothing lands before the session's session_start.
// It passivates after Idle without messages, saving its state to Snapshots.
type sessionActor struct {
	identity  string
	dir       Directory
	snaps     Snapshots
	idle      time.Duration
	passivate func()
	log       *slog.Logger

	st    actorpb.SessionState
	dirty bool
}

// SessionProducer makes session actors for a Directory.
func SessionProducer(dir func() Directory, snaps Snapshots, idle time.Duration, log *slog.Logger) Producer {
	return func(identity string, passivate func()) actor.Actor {
		return &sessionActor{identity: identity, dir: dir(), snaps: snaps, idle: idle, passivate: passivate, log: log}
	}
}

func (a *sessionActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if _, err := a.snaps.Load(KindSession, a.identity, &a.st); err != nil {
			a.log.Warn("session state lost", "session", a.identity, "error", err.Error())
		}
		if a.st.AppId == nil {
			app, sess, _ := strings.Cut(a.identity, "/")
			au, _ := uuid.Parse(app)
			su, _ := uuid.Parse(sess)
			a.st.AppId, a.st.SessionId = au[:], su[:]
		}
		ctx.SetReceiveTimeout(a.idle)
	case *actorpb.SessionCheck:
		ctx.Respond(a.check(m))
	case *actorpb.SessionEvents:
		a.apply(m)
	case *actorpb.StateRequest:
		js, _ := protojson.Marshal(&a.st)
		ctx.Respond(&actorpb.StateReply{Kind: string(KindSession), Identity: a.identity, StateJson: js})
	case *actor.ReceiveTimeout:
		a.save()
		a.passivate()
	case *actor.Stopping:
		a.save()
	}
}

func (a *sessionActor) check(m *actorpb.SessionCheck) *actorpb.SessionCheckReply {
	if a.st.SessionStart != 0 && m.EarliestEvent != 0 && m.EarliestEvent < a.st.SessionStart {
		return &actorpb.SessionCheckReply{Reason: fmt.Sprintf("an event at %s is earlier than its session's session_start at %s",
			fmtNanos(m.EarliestEvent), fmtNanos(a.st.SessionStart))}
	}
	if m.SessionStart != 0 && a.st.SessionStart != 0 && m.SessionStart != a.st.SessionStart {
		return &actorpb.SessionCheckReply{Reason: fmt.Sprintf("the session has a session_start at %s already", fmtNanos(a.st.SessionStart))}
	}
	if m.SessionStart != 0 && a.st.FirstEvent != 0 && a.st.FirstEvent < m.SessionStart {
		return &actorpb.SessionCheckReply{Reason: fmt.Sprintf("session_start at %s is not the first event of its session: one at %s was accepted before",
			fmtNanos(m.SessionStart), fmtNanos(a.st.FirstEvent))}
	}
	return &actorpb.SessionCheckReply{Ok: true}
}

func fmtNanos(ns int64) string {
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

// apply counts a batch's events of the session and follows its journey (journeyWalk), telling
// the app actor the session's first moves and the screens of its crashes and ANRs.
func (a *sessionActor) apply(m *actorpb.SessionEvents) {
	a.dirty = true
	for _, e := range m.Events {
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
	upd := journeyWalk{&a.st}.add(m.Events)
	if len(upd.Moves)+len(upd.Issues) > 0 {
		upd.Replay = m.Replay
		a.dir.Tell(KindApp, uuid.UUID(a.st.AppId).String(), upd)
	}
}

func (a *sessionActor) save() {
	if !a.dirty {
		return
	}
	if err := a.snaps.Save(KindSession, a.identity, &a.st, snapshotTTL); err != nil {
		a.log.Warn("session state not saved", "session", a.identity, "error", err.Error())
		return
	}
	a.dirty = false
}
