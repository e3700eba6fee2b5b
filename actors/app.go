package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/svc-dev/svc/actors/actorpb"
)

// appActor is the one actor of an app. It receives every accepted batch of the app and every
// screen transition of its sessions; the analytics it keeps from them (groups, journeys,
// metrics) grow here.
type appActor struct {
	identity string
	st       actorpb.AppState
}

// AppProducer makes app actors for a Directory. App actors are not passivated: an app's
// aggregates are worth keeping while the node runs.
func AppProducer() Producer {
	return func(identity string, _ func()) actor.Actor {
		return &appActor{identity: identity, st: actorpb.AppState{Types: map[string]uint64{}}}
	}
}

func (a *appActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actorpb.AppBatch:
		a.st.Batches++
		a.st.Events += uint64(m.Events)
		a.st.Spans += uint64(m.Spans)
		for t, n := range m.Types {
			a.st.Types[t] += uint64(n)
		}
		if m.First != 0 && (a.st.First == 0 || m.First < a.st.First) {
			a.st.First = m.First
		}
		if m.Last > a.st.Last {
			a.st.Last = m.Last
		}
	case *actorpb.ScreenTransition:
		a.st.Transitions++
	case *actorpb.StateRequest:
		js, _ := protojson.Marshal(&a.st)
		ctx.Respond(&actorpb.StateReply{Kind: string(KindApp), Identity: a.identity, StateJson: js})
	}
}
