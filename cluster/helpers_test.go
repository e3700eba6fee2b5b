package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// Test messages are protobuf types every binary links (wrapperspb), as the cluster needs:
// Int64Value is told (a sequence number), StringValue is a command: "state" answers the
// actor's state, "passivate" answers and then passivates.

// state is what a test actor answers to "state".
type state struct {
	Node       string `json:"node"`       // member it lives on
	Activation int    `json:"activation"` // how many activations of the identity came before, + 1
	Count      int    `json:"count"`      // messages this activation received, this one included
}

// recorder sees every message every test actor of every member receives.
type recorder struct {
	mu          sync.Mutex
	told        map[string][]int64 // per identity, told values in arrival order
	activations map[string]int
}

func newRecorder() *recorder {
	return &recorder{told: map[string][]int64{}, activations: map[string]int{}}
}

func (r *recorder) activate(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.activations[id]++
	return r.activations[id]
}

func (r *recorder) record(id string, v int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.told[id] = append(r.told[id], v)
}

func (r *recorder) toldTo(id string) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.told[id]...)
}

type testActor struct {
	node, identity string
	activation     int
	count          int
	passivate      func()
	rec            *recorder
}

func (a *testActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *wrapperspb.Int64Value:
		a.count++
		a.rec.record(a.identity, m.Value)
	case *wrapperspb.BytesValue:
		a.count++
		a.rec.record(a.identity, int64(len(m.Value)))
	case *wrapperspb.StringValue:
		a.count++
		js, _ := json.Marshal(state{Node: a.node, Activation: a.activation, Count: a.count})
		ctx.Respond(wrapperspb.String(string(js)))
		if m.Value == "passivate" {
			a.passivate()
		}
	}
}

func producer(node string, rec *recorder) actors.Producer {
	return func(identity string, passivate func()) actor.Actor {
		return &testActor{node: node, identity: identity, activation: rec.activate(identity), passivate: passivate, rec: rec}
	}
}

// askState requests "state" (or another command) from identity through c.
func askState(ctx context.Context, c *Cluster, kind actors.Kind, id, cmd string) (state, error) {
	reply, err := c.Request(ctx, kind, id, wrapperspb.String(cmd))
	if err != nil {
		return state{}, err
	}
	s, ok := reply.(*wrapperspb.StringValue)
	if !ok {
		return state{}, fmt.Errorf("reply %T", reply)
	}
	var st state
	return st, json.Unmarshal([]byte(s.Value), &st)
}

func mustState(t *testing.T, c *Cluster, kind actors.Kind, id, cmd string) state {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := askState(ctx, c, kind, id, cmd)
	if err != nil {
		t.Fatalf("%s: %v", c.Addr(), err)
	}
	return st
}

// loggers: the cluster's own log at warn (SVC_TEST_CLUSTER_LOG=debug|info|warn|error changes it),
// protoactor's (the actor system's) silent unless SVC_TEST_PROTOACTOR_LOG sets a level. They
// write to stderr, not t.Log: protoactor's goroutines may log after a test ends.
func testLog(env string, def slog.Level, silent bool) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(os.Getenv(env))); err != nil {
		if silent {
			return slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		lvl = def
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

// checkOneActor asks every member of ms, in turn, for the session actor id's state: one
// activation on one member counts every ask, and that member is the one each member names as
// its owner.
func checkOneActor(t *testing.T, ms []*member, id string) {
	t.Helper()
	var first state
	for j, m := range ms {
		st := mustState(t, m.c, actors.KindSession, id, "state")
		if j == 0 {
			first = st
		}
		if st.Node != first.Node || st.Activation != first.Activation || st.Count != j+1 {
			t.Fatalf("%s asked from %s: %+v, want the actor on %s (activation %d) counting %d", id, m.c.Addr(), st, first.Node, first.Activation, j+1)
		}
		if owner, _ := m.c.Owner(actors.KindSession, id); owner != st.Node {
			t.Fatalf("%s lives on %s, but %s says %s owns it", id, st.Node, m.c.Addr(), owner)
		}
	}
}

// addrPair returns a loopback address whose port and port + 1 (the static provider's health
// port) were both free a moment ago.
func addrPair(t *testing.T) string {
	t.Helper()
	port, err := sinktest.FreePortPair()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// member is one node of a test cluster: its actor system and its cluster membership.
type member struct {
	sys *actors.System
	c   *Cluster
}

// startMembers starts one member per config at once (each Start takes over a second) and
// shuts them down at the end of the test. Each hook is called with a member's index and actor
// system before its Start.
func startMembers(t *testing.T, rec *recorder, cfgs []Config, hooks ...func(i int, sys *actors.System)) []*member {
	t.Helper()
	ms := make([]*member, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sys := actors.NewSystem(testLog("SVC_TEST_PROTOACTOR_LOG", slog.LevelError, true))
			for _, h := range hooks {
				h(i, sys)
			}
			cfg.Log = testLog("SVC_TEST_CLUSTER_LOG", slog.LevelWarn, false)
			c, err := Start(sys, cfg, map[actors.Kind]actors.Producer{
				actors.KindApp:     producer(cfg.Addr, rec),
				actors.KindSession: producer(cfg.Addr, rec),
			})
			if err != nil {
				sys.Shutdown()
				errs[i] = err
				return
			}
			ms[i] = &member{sys: sys, c: c}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, m := range ms {
			if m != nil {
				m.c.Shutdown(false)
				m.sys.Shutdown()
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return ms
}

// waitMembers waits until every cluster sees n members.
func waitMembers(t *testing.T, ms []*member, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, m := range ms {
		for len(m.c.view.Load().members) != n {
			if time.Now().After(deadline) {
				t.Fatalf("%s sees %d members, want %d", m.c.Addr(), len(m.c.view.Load().members), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// kill stops a member the way a crash does: remoting and gossip stop at once, nothing is told to
// the others, and (static) its health port closes with it. An etcd member's provider keeps
// running; the test cuts its connection to etcd, so its lease expires.
func (c *Cluster) kill() {
	c.shutOnce.Do(func() {
		c.closed.Store(true)
		c.sys.AS.EventStream.Unsubscribe(c.sub)
		c.pc.Remote.Shutdown(false)
		c.pc.Gossip.Shutdown()
		if c.cfg.Provider == ProviderStatic {
			_ = c.provider.Shutdown(false)
		}
	})
}

// checkOrder checks that vals holds, for each sender s in 0..senders-1, the values s*1e6+0 ..
// s*1e6+n-1 in that order.
func checkOrder(t *testing.T, id string, vals []int64, senders, n int) {
	t.Helper()
	next := make([]int64, senders)
	for _, v := range vals {
		s, i := v/1_000_000, v%1_000_000
		if s < 0 || int(s) >= senders || i != next[s] {
			t.Fatalf("%s: from sender %d got %d, want %d (out of order or repeated)", id, s, i, next[s])
		}
		next[s]++
	}
	for s, got := range next {
		if got != int64(n) {
			t.Fatalf("%s: sender %d: %d of %d told messages arrived", id, s, got, n)
		}
	}
}

func tell(c *Cluster, kind actors.Kind, id string, v int64) {
	c.Tell(kind, id, wrapperspb.Int64(v))
}

var _ proto.Message = (*wrapperspb.Int64Value)(nil)
