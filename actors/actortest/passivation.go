// Package actortest holds checks that every actors.Directory (the local one and the cluster's)
// must pass, for their tests.
package actortest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/svc-dev/svc/actors"
)

// Counter is a directory that counts its live actors of a kind.
type Counter interface {
	actors.Directory
	Count(kind actors.Kind) int
}

// PassivationDrainsFirst checks that an actor that passivates with messages still queued
// handles them and stops before the identity's next actor starts: messages told after the
// passivation, and a request, come after them, and the next actor starts after the old one's
// Stopping (where a session actor saves its state). start makes the directory with the given
// session producer, and registers the cleanups that stop it. Both directories
// once spawned the next actor at once, beside the stopping one, which then saw tells out of
// order and a snapshot read before it was saved.
func PassivationDrainsFirst(t *testing.T, start func(t *testing.T, session actors.Producer) Counter) {
	log := &eventLog{}
	entered, proceed, passivated := make(chan struct{}), make(chan struct{}), make(chan struct{})
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	var activations atomic.Int32
	dir := start(t, func(identity string, passivate func()) actor.Actor {
		return &gatedActor{n: int(activations.Add(1)), log: log, passivate: passivate,
			entered: entered, proceed: proceed, passivated: passivated, release: release}
	})
	t.Cleanup(open) // runs before start's cleanups, which stop the directory

	const id = "gated"
	timeout := func(what string) { t.Fatalf("timed out waiting for %s; log %q", what, log.get()) }
	dir.Tell(actors.KindSession, id, wrapperspb.Int64(0))
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		timeout("told 0")
	}
	dir.Tell(actors.KindSession, id, wrapperspb.Int64(1)) // queued behind 0, before the passivation
	close(proceed)
	select {
	case <-passivated:
	case <-time.After(5 * time.Second):
		timeout("the passivation")
	}
	dir.Tell(actors.KindSession, id, wrapperspb.Int64(2)) // after the passivation: for the next actor
	replied := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		reply, err := dir.Request(ctx, actors.KindSession, id, wrapperspb.String("state"))
		if err == nil && reply.(*wrapperspb.StringValue).Value != "2" {
			err = fmt.Errorf("answered by activation %s, want 2", reply.(*wrapperspb.StringValue).Value)
		}
		replied <- err
	}()
	// The old actor still handles 0. The bug showed here at once: a second actor started and
	// took 2 and the request.
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) && len(log.get()) < 4 {
		time.Sleep(5 * time.Millisecond)
	}
	if got, want := log.get(), []string{"start 1", "1: told 0"}; !slices.Equal(got, want) {
		t.Fatalf("while the passivated actor still works: %q, want %q", got, want)
	}
	if n := dir.Count(actors.KindSession); n != 0 {
		t.Fatalf("count %d while the passivated actor stops, want 0", n)
	}
	open()
	if err := <-replied; err != nil {
		t.Fatal(err)
	}
	want := []string{"start 1", "1: told 0", "1: told 1", "stopping 1", "stopped 1",
		"start 2", "2: told 2", "2: asked state"}
	if got := log.get(); !slices.Equal(got, want) {
		t.Fatalf("log %q, want %q", got, want)
	}
	if got := dir.Active(actors.KindSession); !slices.Equal(got, []string{id}) {
		t.Fatalf("active %q, want [%s]", got, id)
	}
}

// eventLog records what the actors do, in order.
type eventLog struct {
	mu  sync.Mutex
	evs []string
}

func (l *eventLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, fmt.Sprintf(format, args...))
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

// gatedActor logs its start, the values told to it, its stopping and stop. Told 0, the first
// activation says so on entered, waits for proceed, passivates, and waits for release before
// handling more: the messages told meanwhile stay queued behind its passivation.
type gatedActor struct {
	n          int // which activation
	log        *eventLog
	passivate  func()
	entered    chan<- struct{}
	proceed    <-chan struct{}
	passivated chan<- struct{}
	release    <-chan struct{}
}

func (a *gatedActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.log.add("start %d", a.n)
	case *actor.Stopping:
		a.log.add("stopping %d", a.n) // where a session actor saves its state
	case *actor.Stopped:
		a.log.add("stopped %d", a.n)
	case *wrapperspb.Int64Value:
		a.log.add("%d: told %d", a.n, m.Value)
		if m.Value == 0 && a.n == 1 {
			a.entered <- struct{}{}
			<-a.proceed
			a.passivate()
			a.passivated <- struct{}{}
			<-a.release
		}
	case *wrapperspb.StringValue:
		a.log.add("%d: asked %s", a.n, m.Value)
		ctx.Respond(wrapperspb.String(fmt.Sprint(a.n)))
	}
}
