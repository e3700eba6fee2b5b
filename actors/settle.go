package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"

	"github.com/svc-dev/svc/actors/actorpb"
)

// Settle is how an app actor in a cluster makes its aggregates exact. It may be activated on
// any node at any time (its node died, the cluster grew), while other nodes hold rows of its
// app not yet in the store and keep accepting batches; a rebuild that reads the store then may
// miss rows or count them twice. So the actor starts unready (the store answers its queries)
// and rebuilds at a quiet moment: when no batch of its app arrived for Quiet, it asks every
// member to flush (Flush), reads the store, and becomes ready only if no batch arrived while it
// read. An app that never pauses for Quiet is answered from the store.
type Settle struct {
	// Flush makes every member of the cluster write the rows it holds to the event store.
	Flush func(ctx context.Context) error
	// Quiet is how long no batch of the app may arrive before a rebuild is tried.
	Quiet time.Duration
}

// settleTick asks an unready app actor to try to settle; settleMarker follows a rebuild
// through the mailbox: batches that arrived during the rebuild are processed before it.
// Both are sent by the actor to itself only, so they need not be protobuf.
type (
	settleTick   struct{}
	settleMarker struct{}
)

// settling is an app actor's state for Settle.
type settling struct {
	cfg       *Settle
	lastBatch time.Time
	verifying bool // rebuilt; ready at the marker unless a batch comes first
	stopTick  scheduler.CancelFunc
	counted   originSet // origins of batches counted live since activation
}

// start begins the ticks that try to settle, every half Quiet.
func (s *settling) start(ctx actor.Context) {
	every := max(s.cfg.Quiet/2, 10*time.Millisecond)
	s.lastBatch = time.Now()
	s.stopTick = scheduler.NewTimerScheduler(ctx).SendRepeatedly(every, every, ctx.Self(), settleTick{})
}

func (s *settling) stop() {
	if s.stopTick != nil {
		s.stopTick()
	}
}

// batch notes a batch (summary or session update) of the app. Replayed batches are never
// applied: one counted live before needs nothing; one not counted (its node died before the
// actor heard of it, or the actor is newer) makes the actor unready until it settles again,
// when the store holds it.
func (s *settling) batch(a *appActor, origin *actorpb.Origin, replay, summary bool) {
	s.lastBatch = time.Now()
	s.verifying = false
	switch {
	case !replay && summary && origin != nil:
		s.counted.add(origin)
	case replay && (origin == nil || !s.counted.has(origin)):
		a.ready = false
	}
}

// tick tries to settle an unready actor.
func (s *settling) tick(ctx actor.Context, a *appActor, log *slog.Logger) {
	if a.ready || s.verifying || time.Since(s.lastBatch) < s.cfg.Quiet {
		return
	}
	fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := s.cfg.Flush(fctx)
	cancel()
	if err != nil {
		log.Info("app actor not settled: the cluster did not flush; its queries go to the store", "app", a.identity, "error", err.Error())
		return
	}
	if r := a.rebuild(true); r.Error != "" {
		log.Warn("app actor not settled; its queries go to the store", "app", a.identity, "error", r.Error)
		return
	}
	a.ready, s.verifying = false, true
	ctx.Send(ctx.Self(), settleMarker{})
}

// marker ends a rebuild: the actor is ready unless a batch arrived meanwhile.
func (s *settling) marker(a *appActor, log *slog.Logger) {
	if s.verifying {
		s.verifying, a.ready = false, true
		log.Info("app aggregates rebuilt at a quiet moment; live answers on", "app", a.identity, "cells", a.ncells)
	}
}

// originSet holds the origins of recent batches in two generations: when the newer reaches
// originGeneration entries, the older is dropped. A node's replay after a restart comes within
// minutes, well inside two generations at any realistic rate.
type originSet struct{ cur, old map[originKey]struct{} }

type originKey struct {
	node string
	seq  uint64
}

const originGeneration = 100_000

func (o *originSet) add(or *actorpb.Origin) {
	if o.cur == nil || len(o.cur) >= originGeneration {
		o.old, o.cur = o.cur, make(map[originKey]struct{}, 1024)
	}
	o.cur[originKey{or.Node, or.Seq}] = struct{}{}
}

func (o *originSet) has(or *actorpb.Origin) bool {
	k := originKey{or.Node, or.Seq}
	_, in := o.cur[k]
	if !in {
		_, in = o.old[k]
	}
	return in
}
