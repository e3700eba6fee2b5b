package actors

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/gate"
	"github.com/svc-dev/svc/sinks/spool"
)

// newIngest is the ingest path over a real gate and spool, with a flusher that drops rows.
func newIngest(t *testing.T) *Ingest {
	t.Helper()
	sys, dir, _ := newDir(t, time.Minute)
	db, err := badgerdb.Open(t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	sp, _, err := spool.Open(filepath.Join(t.TempDir(), "spool"), spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := gate.New(db, 0)
	t.Cleanup(func() { sp.Close(); g.Close(); db.Close() })
	return &Ingest{Dir: dir, Root: sys.AS.Root, Flusher: sys.AS.Root.Spawn(noopFlusher()), Gate: g, Spool: sp, Node: "test", Log: quiet}
}

// accept runs a request through the ingest path as the handler does.
func accept(in *Ingest, app uuid.UUID, events []model.Event) error {
	ctx := context.Background()
	req := uuid.New()
	if _, _, err := in.Begin(ctx, app, req); err != nil {
		return err
	}
	err := in.Accept(ctx, &Batch{App: app, Request: req, Kind: 1, Record: []byte(`{}`), Events: events})
	if err != nil {
		in.Abort(ctx, app, req)
	}
	return err
}

// TestConcurrentRequestsOfOneSession sends two requests of one session at once that cannot
// both join it: one carries its session_start, the other an event before it. Checking and
// reserving in one message lets at most one through, whichever order the actor sees them in;
// with a check separate from the apply, both could pass.
func TestConcurrentRequestsOfOneSession(t *testing.T) {
	in := newIngest(t)
	app := uuid.New()
	const s = int64(time.Second)
	cases := []struct {
		name string
		a, b func(sess uuid.UUID) []model.Event
	}{
		{"session_start and an earlier event",
			func(sess uuid.UUID) []model.Event { return []model.Event{ev(sess, "session_start", 100*s, `{}`)} },
			func(sess uuid.UUID) []model.Event { return []model.Event{ev(sess, "custom", 50*s, `{"name":"x"}`)} }},
		{"two different session_starts",
			func(sess uuid.UUID) []model.Event { return []model.Event{ev(sess, "session_start", 100*s, `{}`)} },
			func(sess uuid.UUID) []model.Event { return []model.Event{ev(sess, "session_start", 200*s, `{}`)} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const rounds = 300
			outcomes := map[string]int{}
			for range rounds {
				sess := uuid.New()
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for i, batch := range [][]model.Event{c.a(sess), c.b(sess)} {
					wg.Add(1)
					go func() { defer wg.Done(); errs[i] = accept(in, app, batch) }()
				}
				wg.Wait()
				var oe *SessionOrderError
				for _, err := range errs {
					if err != nil && !errors.As(err, &oe) && !errors.Is(err, ErrSessionBusy) {
						t.Fatalf("unexpected error: %v", err)
					}
				}
				if errs[0] == nil && errs[1] == nil {
					t.Fatalf("both requests of session %s were accepted: they break its order together", sess)
				}
				switch {
				case errs[0] == nil || errs[1] == nil:
					if errors.Is(errs[0], ErrSessionBusy) || errors.Is(errs[1], ErrSessionBusy) {
						outcomes["one accepted, the other asked to retry"]++
					} else {
						outcomes["one accepted, the other refused"]++
					}
				default:
					outcomes["neither accepted"]++
				}
			}
			t.Logf("%d rounds: %v", rounds, outcomes)
		})
	}
}

// TestReservationReleased: a batch refused for one of its sessions releases the place it had
// reserved in its others, so a later request there meets no phantom.
func TestReservationReleased(t *testing.T) {
	in := newIngest(t)
	app, ok, bad := uuid.New(), uuid.New(), uuid.New()
	const s = int64(time.Second)
	if err := accept(in, app, []model.Event{ev(bad, "session_start", 100*s, `{}`)}); err != nil {
		t.Fatal(err)
	}
	// ok's session_start at 10 s reserves its place; bad's event at 50 s is before its start.
	var oe *SessionOrderError
	err := accept(in, app, []model.Event{ev(ok, "session_start", 10*s, `{}`), ev(bad, "custom", 50*s, `{"name":"x"}`)})
	if !errors.As(err, &oe) || oe.SessionID != bad {
		t.Fatalf("want the batch refused for session %s, got %v", bad, err)
	}
	// Without the release, this event before the reserved session_start would be asked to retry.
	if err := accept(in, app, []model.Event{ev(ok, "custom", 5*s, `{"name":"y"}`)}); err != nil {
		t.Fatalf("the refused batch's reservation is still held: %v", err)
	}
}

// TestReservationExpires: a reservation whose request never ended it (its node died between the
// check and the spool) stops holding the session after reserveTTL.
func TestReservationExpires(t *testing.T) {
	now := time.Unix(1000, 0)
	a := &sessionActor{sessionConfig: &sessionConfig{now: func() time.Time { return now }}}
	const s = int64(time.Second)
	steps := []struct {
		name  string
		after time.Duration
		m     *actorpb.SessionCheck
		ok    bool
		retry bool
	}{
		{"reserve a session_start", 0, &actorpb.SessionCheck{SessionStart: 100 * s, EarliestEvent: 100 * s, RequestId: []byte("a")}, true, false},
		{"the same request again", time.Second, &actorpb.SessionCheck{SessionStart: 100 * s, EarliestEvent: 100 * s, RequestId: []byte("a")}, true, false},
		{"an earlier event meanwhile", time.Second, &actorpb.SessionCheck{EarliestEvent: 50 * s, RequestId: []byte("b")}, false, true},
		{"the same after the bound", reserveTTL, &actorpb.SessionCheck{EarliestEvent: 50 * s, RequestId: []byte("c")}, true, false},
	}
	for _, st := range steps {
		now = now.Add(st.after)
		r := a.check(st.m)
		if r.Ok != st.ok || r.Retry != st.retry {
			t.Fatalf("%s: %+v", st.name, r)
		}
	}
}
