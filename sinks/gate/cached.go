package gate

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/badgerdb"
)

// Cached is the gate of a node in a cluster: Shared (the PostgreSQL gate every node uses)
// decides, and Local (the node's Badger) remembers the ids this node knows are accepted.
//
// Repeats are common in real SDK traffic: an SDK that did not get the answer (its connection
// broke, it timed out, the app was killed) sends the batch again with the same svc-req-id. A
// retry that reaches the node that accepted the id needs no database round trip: Begin answers
// Accepted from Local, and asks Shared only about ids this node has not seen accepted. Accepted is final
// (only Mark or Accept, with the same batch's info, write it again), so the cache never answers
// wrong; an id accepted by another node is found in Shared and remembered here too.
//
// Local's in-progress set is not used: in-progress ids live in Shared, where every node sees
// them. Local's TTL should be at least Shared's (both default to DefaultTTL).
type Cached struct {
	Shared Store
	Local  *Local
}

var _ Store = Cached{}

// Begin implements Store: Accepted from Local when this node knows the id, else Shared's answer
// (an Accepted one is remembered in Local). A failed read of Local is ignored: Shared decides.
func (c Cached) Begin(ctx context.Context, app, req uuid.UUID) (State, []byte, error) {
	if info, ok, err := c.Local.lookupAccepted(makeKey(app, req)); err == nil && ok {
		return Accepted, info, nil
	}
	s, info, err := c.Shared.Begin(ctx, app, req)
	if err == nil && s == Accepted {
		_ = c.Local.Mark(ctx, app, req, info) // a cache: a failed write costs a round trip later
	}
	return s, info, err
}

// Accept implements Store: Shared, then Local. Local is written even when Shared fails, so
// this node answers a retry from the spooled batch; the error is Shared's (or Local's).
func (c Cached) Accept(ctx context.Context, app, req uuid.UUID, info []byte) error {
	err := c.Shared.Accept(ctx, app, req, info)
	return errors.Join(err, c.Local.Mark(ctx, app, req, info))
}

// Mark implements Store, writing as Accept does.
func (c Cached) Mark(ctx context.Context, app, req uuid.UUID, info []byte) error {
	err := c.Shared.Mark(ctx, app, req, info)
	return errors.Join(err, c.Local.Mark(ctx, app, req, info))
}

// Abort implements Store: only Shared holds the in-progress state.
func (c Cached) Abort(ctx context.Context, app, req uuid.UUID) {
	c.Shared.Abort(ctx, app, req)
}

// lookupAccepted reads the accepted id k from g's Badger, leaving its in-progress set alone.
// An id the filter has never seen is not read (see Local).
func (g *Local) lookupAccepted(k key) (info []byte, ok bool, err error) {
	dk := dbKey(k)
	g.ids.Ensure(g.db)
	if !g.ids.MayHold(dk) {
		return nil, false, nil
	}
	return badgerdb.Lookup(g.db, dk)
}
