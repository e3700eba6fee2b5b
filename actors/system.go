// Package actors holds svc's actor kinds and the actor system they run in: the app actor (live
// issue day cells and journeys, app.go), session actors (ordering, journey walks, each event
// counted once; session.go, walk.go), the flusher (rows to the event store, flusher.go), the
// ingest step that hands accepted batches to them (ingest.go), and the directory that reaches
// actors by identity (directory.go). The request gate that absorbs repeated request ids is not
// an actor; it is package sinks/gate. Actors are protoactor-go actors: a struct with one Receive
// switch, state touched only inside it. Messages that may cross nodes are protobuf (package
// actorpb).
package actors

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// System is the node's actor system. It wraps protoactor so the rest of svc depends on this
// package, not on protoactor, whose upstream is quiet (docs/architecture.md, "Dependency traps").
type System struct {
	AS  *actor.ActorSystem
	log *slog.Logger
}

// NewSystem starts an actor system that logs through log (protoactor's own logger is noisy).
func NewSystem(log *slog.Logger) *System {
	l := log.With("component", "actors")
	as := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return l }))
	return &System{AS: as, log: l}
}

// Shutdown stops every actor of the system.
func (s *System) Shutdown() {
	s.AS.Shutdown()
}
