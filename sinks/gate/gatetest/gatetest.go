// Package gatetest is the conformance suite of gate.Store. A node-local store runs Run; a store
// shared by the nodes of a cluster runs RunShared, which also begins an id on one node and asks
// about it on another, and checks that an id whose holder never ends it is taken over after
// the in-progress TTL. Each backend's test calls it inside a subtest named after the backend:
//
//	t.Run("local", func(t *testing.T) { gatetest.Run(t, open) })
//
// Each group of subtests opens its own store; within a group every case uses fresh app and
// request ids, so cases do not see each other's.
//
// Beyond the doc comments of gate.Store the suite pins down these choices:
//   - info comes back byte for byte as Accept or Mark stored it; nil and empty are the same
//     (Begin may return either for both);
//   - right after a Mark of an id another request holds in progress, Begin may answer
//     InProgress (gate.Local: its in-progress set is asked first) or Accepted with the Mark's
//     info; once the holder ends it, with Accept or Abort, it is Accepted;
//   - Abort of an id nobody began, or that is accepted, changes nothing;
//   - with a context whose deadline passed, a call either does its work (a store that never
//     waits) or fails with sinks.ErrUnavailable, never with another error a caller would act
//     on;
//   - shared stores: an Abort by a node whose in-progress id another node took over after the
//     in-progress TTL does not end the other node's (it ends only what the caller's Begin
//     started).
package gatetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/gate"
)

// Open returns a Store over fresh backing data.
type Open func(t *testing.T) gate.Store

// Nodes returns two Stores over one fresh backing data, as two nodes of a cluster hold them
// (two connection pools, two node-local caches, …). inProgressTTL is the in-progress TTL both
// are configured with; 0 means gate.InProgressTTL.
type Nodes func(t *testing.T, inProgressTTL time.Duration) (a, b gate.Store)

// Run checks a node-local Store: the suite with one store in the place of both nodes.
func Run(t *testing.T, open Open) {
	run(t, func(t *testing.T) (gate.Store, gate.Store) {
		s := open(t)
		return s, s
	})
}

// RunShared checks a Store shared by nodes: the suite on one node's store alone, again with
// its steps spread over two nodes, and the in-progress TTL (InProgressTTL, which sleeps about
// 1.5 s).
func RunShared(t *testing.T, nodes Nodes) {
	t.Run("OneNode", func(t *testing.T) {
		run(t, func(t *testing.T) (gate.Store, gate.Store) {
			a, _ := nodes(t, 0)
			return a, a
		})
	})
	t.Run("TwoNodes", func(t *testing.T) {
		run(t, func(t *testing.T) (gate.Store, gate.Store) { return nodes(t, 0) })
	})
	t.Run("InProgressTTL", func(t *testing.T) { testInProgressTTL(t, nodes) })
}

type pair func(t *testing.T) (a, b gate.Store)

func run(t *testing.T, open pair) {
	t.Run("States", func(t *testing.T) { testStates(t, open) })
	t.Run("Info", func(t *testing.T) { testInfo(t, open) })
	t.Run("ConcurrentBegin", func(t *testing.T) { testConcurrentBegin(t, open) })
	t.Run("ConcurrentIDs", func(t *testing.T) { testConcurrentIDs(t, open) })
	t.Run("ExpiredDeadline", func(t *testing.T) { testExpiredDeadline(t, open) })
}

type op int

const (
	opBegin op = iota
	opAccept
	opMark
	opAbort
)

func (o op) String() string { return [...]string{"Begin", "Accept", "Mark", "Abort"}[o] }

// A step is one call on node A (0) or B (1) about the case's request id of app 0 or 1.
type step struct {
	node, app int
	op        op
	info      string       // Accept, Mark; Begin: the info wanted with Accepted
	want      []gate.State // Begin: the states allowed
}

func begin(node, app int, want ...gate.State) step {
	return step{node: node, app: app, op: opBegin, want: want}
}

func beginAccepted(node, app int, info string) step {
	return step{node: node, app: app, op: opBegin, want: []gate.State{gate.Accepted}, info: info}
}

func accept(node, app int, info string) step {
	return step{node: node, app: app, op: opAccept, info: info}
}
func mark(node, app int, info string) step { return step{node: node, app: app, op: opMark, info: info} }
func abort(node, app int) step             { return step{node: node, app: app, op: opAbort} }

const (
	nodeA, nodeB = 0, 1
)

var stateNames = map[gate.State]string{gate.Unseen: "Unseen", gate.InProgress: "InProgress", gate.Accepted: "Accepted"}

func stateName(s gate.State) string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// ids are one case's apps and request id.
type ids struct {
	apps [2]uuid.UUID
	req  uuid.UUID
}

func freshIDs() ids { return ids{apps: [2]uuid.UUID{uuid.New(), uuid.New()}, req: uuid.New()} }

// do runs the steps on the nodes, failing the test at the first answer not allowed.
func do(t *testing.T, nodes [2]gate.Store, id ids, steps []step) {
	t.Helper()
	ctx := t.Context()
	for i, st := range steps {
		s, app := nodes[st.node], id.apps[st.app]
		where := fmt.Sprintf("step %d: %s on node %c, app %d", i+1, st.op, 'A'+st.node, st.app)
		switch st.op {
		case opBegin:
			got, info, err := s.Begin(ctx, app, id.req)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if !slices.Contains(st.want, got) {
				var want []string
				for _, w := range st.want {
					want = append(want, stateName(w))
				}
				t.Fatalf("%s: %s, want %v", where, stateName(got), want)
			}
			if got == gate.Accepted && string(info) != st.info {
				t.Fatalf("%s: Accepted with info %q, want %q", where, info, st.info)
			}
			if got != gate.Accepted && len(info) != 0 {
				t.Fatalf("%s: %s with info %q, want none", where, stateName(got), info)
			}
		case opAccept:
			if err := s.Accept(ctx, app, id.req, []byte(st.info)); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		case opMark:
			if err := s.Mark(ctx, app, id.req, []byte(st.info)); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		case opAbort:
			s.Abort(ctx, app, id.req)
		}
	}
}

func testStates(t *testing.T, open pair) {
	a, b := open(t)
	nodes := [2]gate.Store{a, b}
	U, P, A := gate.Unseen, gate.InProgress, gate.Accepted
	cases := []struct {
		name  string
		steps []step
	}{
		{"unseen, then in progress", []step{begin(nodeA, 0, U), begin(nodeA, 0, P), begin(nodeB, 0, P)}},
		{"same id of another app is another id", []step{
			begin(nodeA, 0, U), begin(nodeB, 1, U), begin(nodeA, 1, P), begin(nodeB, 0, P)}},
		{"after abort", []step{begin(nodeA, 0, U), abort(nodeA, 0), begin(nodeB, 0, U), begin(nodeA, 0, P)}},
		{"abort of one app's id leaves the other's", []step{
			begin(nodeA, 0, U), begin(nodeA, 1, U), abort(nodeA, 1), begin(nodeB, 0, P), begin(nodeB, 1, U)}},
		{"after accept, with its info", []step{
			begin(nodeA, 0, U), accept(nodeA, 0, "info"),
			beginAccepted(nodeA, 0, "info"), beginAccepted(nodeB, 0, "info"), begin(nodeB, 1, U)}},
		{"accept with empty info", []step{begin(nodeA, 0, U), accept(nodeA, 0, ""), beginAccepted(nodeB, 0, "")}},
		{"abort does not undo accept", []step{
			begin(nodeA, 0, U), accept(nodeA, 0, "kept"), abort(nodeA, 0),
			beginAccepted(nodeB, 0, "kept"), abort(nodeB, 0), beginAccepted(nodeA, 0, "kept")}},
		{"mark of an unseen id", []step{mark(nodeB, 0, "marked"), beginAccepted(nodeA, 0, "marked"), beginAccepted(nodeB, 0, "marked")}},
		{"abort does not undo mark", []step{mark(nodeA, 0, "marked"), abort(nodeA, 0), beginAccepted(nodeB, 0, "marked")}},
		{"mark of an in-progress id, then its holder aborts", []step{
			begin(nodeA, 0, U), mark(nodeB, 0, "marked"),
			{node: nodeB, op: opBegin, want: []gate.State{P, A}, info: "marked"},
			abort(nodeA, 0), beginAccepted(nodeA, 0, "marked"), beginAccepted(nodeB, 0, "marked")}},
		{"mark of an in-progress id, then its holder accepts", []step{
			begin(nodeA, 0, U), mark(nodeA, 0, "marked"),
			{node: nodeA, op: opBegin, want: []gate.State{P, A}, info: "marked"},
			accept(nodeA, 0, "accepted"), beginAccepted(nodeB, 0, "accepted"), beginAccepted(nodeA, 0, "accepted")}},
		{"mark of an accepted id", []step{
			begin(nodeA, 0, U), accept(nodeA, 0, "same"), mark(nodeB, 0, "same"), mark(nodeA, 0, "same"),
			beginAccepted(nodeA, 0, "same"), beginAccepted(nodeB, 0, "same")}},
		{"abort of an id nobody began", []step{abort(nodeA, 0), begin(nodeB, 0, U), begin(nodeA, 0, P)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { do(t, nodes, freshIDs(), tc.steps) })
	}
}

// testInfo: info comes back byte for byte, from the node that stored it and the other, whether
// Accept or Mark stored it, and the caller may reuse its slice afterwards.
func testInfo(t *testing.T, open pair) {
	ctx := t.Context()
	a, b := open(t)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	large := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range large {
		large[i] = byte(rng.Uint32())
	}
	infos := []struct {
		name string
		info []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"NUL", []byte{0}},
		{"JSON", []byte(`{"attachments":[{"id":"x","key":"y"}]}`)},
		{"every byte", all},
		{"invalid UTF-8", []byte{0xff, 0xfe, 0xc3, 0x28}},
		{"64 KiB", large},
	}
	for _, in := range infos {
		for _, how := range []string{"Accept", "Mark"} {
			t.Run(in.name+"/"+how, func(t *testing.T) {
				app, req := uuid.New(), uuid.New()
				arg := bytes.Clone(in.info)
				var err error
				if how == "Accept" {
					if s, _, err := a.Begin(ctx, app, req); err != nil || s != gate.Unseen {
						t.Fatalf("Begin: %s %v, want Unseen", stateName(s), err)
					}
					err = a.Accept(ctx, app, req, arg)
				} else {
					err = a.Mark(ctx, app, req, arg)
				}
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				for i := range arg {
					arg[i] ^= 0xff // the caller's slice is the caller's again
				}
				for n, s := range []gate.Store{a, b} {
					st, got, err := s.Begin(ctx, app, req)
					if err != nil || st != gate.Accepted {
						t.Fatalf("Begin on node %c: %s %v, want Accepted", 'A'+n, stateName(st), err)
					}
					if !bytes.Equal(got, in.info) {
						t.Fatalf("Begin on node %c: info of %d bytes, want the %d stored (first difference at %d)",
							'A'+n, len(got), len(in.info), firstDiff(got, in.info))
					}
				}
			})
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// testConcurrentBegin: of 50 concurrent Begins of one id, alternately on both nodes, exactly
// one is Unseen; the others see it in progress or, once its holder accepted it, Accepted.
func testConcurrentBegin(t *testing.T, open pair) {
	ctx := t.Context()
	a, b := open(t)
	nodes := [2]gate.Store{a, b}
	app, req := uuid.New(), uuid.New()
	const n = 50
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		states = map[gate.State]int{}
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, info, err := nodes[i%2].Begin(ctx, app, req)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			states[s]++
			mu.Unlock()
			switch s {
			case gate.Unseen:
				time.Sleep(10 * time.Millisecond)
				if err := nodes[i%2].Accept(ctx, app, req, []byte("winner")); err != nil {
					t.Error(err)
				}
			case gate.Accepted:
				if string(info) != "winner" {
					t.Errorf("Accepted with info %q, want the winner's", info)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if states[gate.Unseen] != 1 {
		t.Fatalf("answers %v: %d Unseen, want exactly 1", states, states[gate.Unseen])
	}
	if states[gate.InProgress]+states[gate.Accepted] != n-1 {
		t.Fatalf("answers %v: want the others InProgress or Accepted", states)
	}
	do(t, nodes, ids{apps: [2]uuid.UUID{app}, req: req}, []step{beginAccepted(nodeA, 0, "winner"), beginAccepted(nodeB, 0, "winner")})
}

// testConcurrentIDs: 50 ids begun, accepted and asked about concurrently do not disturb each
// other.
func testConcurrentIDs(t *testing.T, open pair) {
	a, b := open(t)
	nodes := [2]gate.Store{a, b}
	app := uuid.New()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, req := t.Context(), uuid.New()
			s := nodes[i%2]
			info := []byte(fmt.Sprint("info ", i))
			if st, _, err := s.Begin(ctx, app, req); err != nil || st != gate.Unseen {
				t.Errorf("id %d: Begin %s %v, want Unseen", i, stateName(st), err)
				return
			}
			if err := s.Accept(ctx, app, req, info); err != nil {
				t.Errorf("id %d: Accept: %v", i, err)
				return
			}
			if st, got, err := nodes[(i+1)%2].Begin(ctx, app, req); err != nil || st != gate.Accepted || !bytes.Equal(got, info) {
				t.Errorf("id %d: Begin on the other node: %s %q %v, want Accepted %q", i, stateName(st), got, err, info)
			}
		}()
	}
	wg.Wait()
}

// testExpiredDeadline: with a context whose deadline passed, each call does its work or fails
// with ErrUnavailable; the store works afterwards.
func testExpiredDeadline(t *testing.T, open pair) {
	a, b := open(t)
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	app, req := uuid.New(), uuid.New()
	check := func(call string, err error) {
		t.Helper()
		if err != nil && !errors.Is(err, sinks.ErrUnavailable) {
			t.Errorf("%s with an expired deadline: %v, want nil or ErrUnavailable", call, err)
		}
	}
	s, _, err := a.Begin(ctx, app, req)
	check("Begin", err)
	if err == nil && s != gate.Unseen {
		t.Errorf("Begin with an expired deadline answered %s for a fresh id", stateName(s))
	}
	if err == nil {
		a.Abort(t.Context(), app, req)
	}
	check("Accept", a.Accept(ctx, app, uuid.New(), []byte("x")))
	check("Mark", a.Mark(ctx, app, uuid.New(), []byte("x")))
	a.Abort(ctx, app, uuid.New())
	do(t, [2]gate.Store{a, b}, freshIDs(), []step{
		begin(nodeA, 0, gate.Unseen), accept(nodeA, 0, "after"), beginAccepted(nodeB, 0, "after")})
}

// testInProgressTTL: an id whose holder never ends it is taken over after the in-progress TTL;
// the holder's late Abort does not end the new holder's; accepted ids stay accepted.
func testInProgressTTL(t *testing.T, nodes Nodes) {
	const ttl = time.Second
	a, b := nodes(t, ttl)
	both := [2]gate.Store{a, b}
	U, P := gate.Unseen, gate.InProgress
	abandoned, accepted := freshIDs(), freshIDs()
	do(t, both, abandoned, []step{begin(nodeA, 0, U), begin(nodeB, 0, P), begin(nodeA, 0, P)})
	do(t, both, accepted, []step{begin(nodeA, 0, U), accept(nodeA, 0, "before")})
	time.Sleep(ttl + 500*time.Millisecond)
	do(t, both, abandoned, []step{
		begin(nodeB, 0, U),             // taken over
		begin(nodeA, 0, P),             // now B's
		abort(nodeA, 0),                // A's late Abort of its own Begin
		begin(nodeA, 0, P),             // B still holds it
		accept(nodeB, 0, "taken over"), // B ends it
		beginAccepted(nodeA, 0, "taken over"),
	})
	do(t, both, accepted, []step{beginAccepted(nodeB, 0, "before"), beginAccepted(nodeA, 0, "before")})
}
