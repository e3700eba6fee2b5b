// Package actors holds svc's actor kinds (app, session, request gate, flusher) and the actor
// system they run in. Actors are protoactor-go actors: a struct with one Receive switch, state
// touched only inside it. Messages that may cross nodes are protobuf (package actorpb).
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
