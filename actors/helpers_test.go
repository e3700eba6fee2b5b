package actors

import "github.com/asynkron/protoactor-go/actor"

// noopFlusher stands in for the flusher where a test looks only at session and app actors.
func noopFlusher() *actor.Props {
	return actor.PropsFromFunc(func(actor.Context) {})
}
