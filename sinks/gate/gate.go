// Package gate is the request gate of PUT /events: it remembers, per app, which svc-req-id
// values were accepted (for at least the retention of request ids) and which are being processed
// right now, so a retried request is never processed twice. Store is its contract; Local keeps
// it for one node (Badger and memory), the PostgreSQL store (sinks/postgres) for a cluster, where
// a retry may reach another node. gatetest is the conformance suite every Store passes.
package gate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/badgerdb"
)

// State of a request id.
type State int

// The three states of the ingestion contract.
const (
	Unseen     State = iota // never seen: process it
	InProgress              // another request with this id is being processed
	Accepted                // processed before: answer from the stored info
)

// DefaultTTL is how long accepted ids are kept: the contract asks for at least 30 days.
const DefaultTTL = 31 * 24 * time.Hour

type key [32]byte

func makeKey(app, req uuid.UUID) key {
	var k key
	copy(k[:16], app[:])
	copy(k[16:], req[:])
	return k
}

// InProgressTTL bounds how long a request id stays in progress in a shared store when the node
// that began it never ends it (killed mid-request): a retry after it is processed. It is longer
// than any request may take (--body-timeout plus the spool append).
const InProgressTTL = 10 * time.Minute

// Store is the request gate. Every method is safe for concurrent use, by the nodes that share
// the store as by one node's requests.
type Store interface {
	// Begin classifies a request id of an app. Unseen: nobody began it, or its holder aborted
	// it or never ended it within InProgressTTL; the id is now in progress and the caller must
	// end it with Accept or Abort. InProgress: another request with the id is being processed
	// now. Accepted: a request with the id was accepted; info is what its Accept or Mark stored.
	Begin(ctx context.Context, app, req uuid.UUID) (State, []byte, error)
	// Accept records the id as accepted with info, durably, for at least the store's TTL
	// (DefaultTTL unless configured), and ends its in-progress state.
	Accept(ctx context.Context, app, req uuid.UUID, info []byte) error
	// Mark records the id as accepted with info whatever its state: spool replay marks the ids
	// of the batches it hands on, as the node may have died between the spool and Accept.
	Mark(ctx context.Context, app, req uuid.UUID, info []byte) error
	// Abort ends the in-progress state the caller's Begin started, so a retry is processed. It
	// does not undo an Accept or a Mark.
	Abort(ctx context.Context, app, req uuid.UUID)
}

const shards = 64

// Local is the gate of a single node: accepted ids in Badger, in-progress ids in memory.
type Local struct {
	db     *badger.DB
	ttl    time.Duration
	shards [shards]struct {
		mu       sync.Mutex
		inflight map[key]struct{}
	}
}

// New returns a node-local gate over a Badger DB (prefix badgerdb.PrefixGate).
func New(db *badger.DB, ttl time.Duration) *Local {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	g := &Local{db: db, ttl: ttl}
	for i := range g.shards {
		g.shards[i].inflight = map[key]struct{}{}
	}
	return g
}

func dbKey(k key) []byte {
	return append([]byte(badgerdb.PrefixGate), k[:]...)
}

// Begin implements Store.
func (g *Local) Begin(_ context.Context, app, req uuid.UUID) (State, []byte, error) {
	k := makeKey(app, req)
	sh := &g.shards[k[31]%shards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.inflight[k]; ok {
		return InProgress, nil, nil
	}
	var info []byte
	err := g.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(dbKey(k))
		if err != nil {
			return err
		}
		info, err = it.ValueCopy(nil)
		return err
	})
	switch {
	case err == nil:
		return Accepted, info, nil
	case errors.Is(err, badger.ErrKeyNotFound):
		sh.inflight[k] = struct{}{}
		return Unseen, nil, nil
	default:
		return Unseen, nil, fmt.Errorf("request gate: %w", err)
	}
}

// Accept implements Store.
func (g *Local) Accept(ctx context.Context, app, req uuid.UUID, info []byte) error {
	k := makeKey(app, req)
	err := g.Mark(ctx, app, req, info)
	sh := &g.shards[k[31]%shards]
	sh.mu.Lock()
	delete(sh.inflight, k)
	sh.mu.Unlock()
	return err
}

// Mark implements Store. It leaves the in-progress set alone.
func (g *Local) Mark(_ context.Context, app, req uuid.UUID, info []byte) error {
	k := makeKey(app, req)
	err := g.db.Update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry(dbKey(k), info).WithTTL(g.ttl))
	})
	if err != nil {
		return fmt.Errorf("request gate: record accepted id: %w", err)
	}
	return nil
}

// Abort implements Store.
func (g *Local) Abort(_ context.Context, app, req uuid.UUID) {
	k := makeKey(app, req)
	sh := &g.shards[k[31]%shards]
	sh.mu.Lock()
	delete(sh.inflight, k)
	sh.mu.Unlock()
}
