// Package gate is the request gate of PUT /events: it remembers, per app, which svc-req-id
// values were accepted (in Badger, for at least the retention of request ids) and which are being
// processed right now (in memory), so a retried request is never processed twice.
package gate

import (
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

const shards = 64

// Gate is safe for concurrent use.
type Gate struct {
	db     *badger.DB
	ttl    time.Duration
	shards [shards]struct {
		mu       sync.Mutex
		inflight map[key]struct{}
	}
}

// New returns a gate over the shared Badger DB (prefix badgerdb.PrefixGate).
func New(db *badger.DB, ttl time.Duration) *Gate {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	g := &Gate{db: db, ttl: ttl}
	for i := range g.shards {
		g.shards[i].inflight = map[key]struct{}{}
	}
	return g
}

func dbKey(k key) []byte {
	return append([]byte(badgerdb.PrefixGate), k[:]...)
}

// Begin classifies a request id. For Unseen, the id is now in progress and the caller must end with
// Accept or Abort. For Accepted, info is what Accept stored.
func (g *Gate) Begin(app, req uuid.UUID) (State, []byte, error) {
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

// Accept records the id as accepted with info (what a repeat is answered from), durably, and
// ends its in-progress state.
func (g *Gate) Accept(app, req uuid.UUID, info []byte) error {
	k := makeKey(app, req)
	err := g.Mark(app, req, info)
	sh := &g.shards[k[31]%shards]
	sh.mu.Lock()
	delete(sh.inflight, k)
	sh.mu.Unlock()
	return err
}

// Mark records the id as accepted without touching the in-progress set: spool replay uses it,
// so an id whose batch reached the spool is accepted even if the node died before Accept.
func (g *Gate) Mark(app, req uuid.UUID, info []byte) error {
	k := makeKey(app, req)
	err := g.db.Update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry(dbKey(k), info).WithTTL(g.ttl))
	})
	if err != nil {
		return fmt.Errorf("request gate: record accepted id: %w", err)
	}
	return nil
}

// Abort ends an id's in-progress state without accepting it, so a retry is processed.
func (g *Gate) Abort(app, req uuid.UUID) {
	k := makeKey(app, req)
	sh := &g.shards[k[31]%shards]
	sh.mu.Lock()
	delete(sh.inflight, k)
	sh.mu.Unlock()
}
