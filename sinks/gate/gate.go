// Package gate is the request gate of PUT /events: it remembers, per app, which svc-req-id
// values were accepted (for at least the retention of request ids) and which are being processed
// right now, so a retried request is never processed twice. Store is its contract; Local keeps
// it for one node (Badger and memory), the PostgreSQL store (sinks/postgres) for a cluster, where
// a retry may reach another node. gatetest is the conformance suite every Store passes.
package gate

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
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
	// Accept records the id as accepted with info, for at least the store's TTL (DefaultTTL
	// unless configured), and ends its in-progress state: Begin answers Accepted from then on.
	// Shared stores write it durably before returning; Local writes it to its database a moment
	// later (its spool's replay covers a node that dies in between).
	Accept(ctx context.Context, app, req uuid.UUID, info []byte) error
	// Mark records the id as accepted with info whatever its state: spool replay marks the ids
	// of the batches it hands on, as the node may have died between the spool and Accept.
	Mark(ctx context.Context, app, req uuid.UUID, info []byte) error
	// Abort ends the in-progress state the caller's Begin started, so a retry is processed. It
	// does not undo an Accept or a Mark.
	Abort(ctx context.Context, app, req uuid.UUID)
}

const shards = 64

// maxUnwritten bounds the accepted ids queued for the background write (a batch being written
// holds up to as many again); past it Accept writes its id itself, so a database that cannot
// keep up slows requests rather than growing memory.
const maxUnwritten = 16384

// Local is the gate of a single node: accepted ids in Badger, in-progress ids in memory.
//
// Accept does not write to Badger in the request: the id moves from the in-progress set to
// the unwritten set, which Begin reads too, and one background writer puts every id waiting
// into Badger with one batch. A Badger commit on a disk busy with the stores' writes can wait
// tens of milliseconds, and the request has nothing to wait for: the batch is already in the
// spool, whose replay marks the ids of the batches it hands on when the node died before the
// write. For that to hold, a spool record must not be dropped before its id is written: the
// node acknowledges spool records only after Sync. The writer runs while ids wait and ends
// when none do; Close waits for it.
type Local struct {
	db     *badger.DB
	ttl    time.Duration
	shards [shards]shard
	// ids knows which ids the database may hold: Begin reads Badger only for those, not for
	// nearly every new id. Such a read first waits for the commits before it to be applied, which
	// stall behind the disk (the half-rate tail in docs/benchmarks.md).
	ids *badgerdb.KeyFilter

	// Log, when set, is told of ids the background writer could not write.
	Log *slog.Logger

	wmu     sync.Mutex
	queue   []unwrittenID // in the order accepted
	queued  uint64        // ids ever queued
	done    uint64        // of those, written (or failed to be)
	writing bool          // the writer goroutine runs
	closed  bool
	changed *sync.Cond // on wmu: a batch was written, or the writer ended
}

// shard is the in-memory state of the ids whose last key byte falls in it.
type shard struct {
	mu        sync.Mutex
	inflight  map[key]struct{}
	unwritten map[key][]byte // accepted, not yet in Badger: info by id
}

// shard returns the shard of k.
func (g *Local) shard(k key) *shard { return &g.shards[k[31]%shards] }

// unwrittenID is an accepted id waiting for the background write, with its info.
type unwrittenID struct {
	k    key
	info []byte
}

// New returns a node-local gate over a Badger DB (prefix badgerdb.PrefixGate). Close it before
// the DB. While it is open it must be the only writer of the DB's request ids: it reads only
// ids that were there when it started or that it wrote itself (badgerdb.KeyFilter).
func New(db *badger.DB, ttl time.Duration) *Local {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	g := &Local{db: db, ttl: ttl, ids: badgerdb.NewKeyFilter(badgerdb.KeyFilterMinWords, []byte(badgerdb.PrefixGate))}
	g.changed = sync.NewCond(&g.wmu)
	for i := range g.shards {
		g.shards[i].inflight = map[key]struct{}{}
		g.shards[i].unwritten = map[key][]byte{}
	}
	// The filter's first build starts here, where waiting for its snapshot holds up no
	// request (Begin would wait under its shard's lock).
	g.ids.Ensure(db)
	return g
}

// Close writes the ids still waiting and ends the writer; later Accepts write their own id.
func (g *Local) Close() error {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	g.closed = true
	for g.writing {
		g.changed.Wait()
	}
	g.ids.Close()
	return nil
}

// Sync returns once every id Accept took before it is written to Badger (or its write failed
// and was logged): until then the spool's record of its batch is what would mark it again
// after a crash, so the node acknowledges spool records only after Sync. It returns at once
// when nothing waits.
func (g *Local) Sync() {
	g.wmu.Lock()
	for target := g.queued; g.done < target; {
		g.changed.Wait()
	}
	g.wmu.Unlock()
}

func dbKey(k key) []byte {
	return append([]byte(badgerdb.PrefixGate), k[:]...)
}

// Begin implements Store.
func (g *Local) Begin(_ context.Context, app, req uuid.UUID) (State, []byte, error) {
	k := makeKey(app, req)
	sh := g.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.inflight[k]; ok {
		return InProgress, nil, nil
	}
	if info, ok := sh.unwritten[k]; ok {
		return Accepted, bytes.Clone(info), nil // the writer may be handing it to Badger
	}
	info, ok, err := g.lookupAccepted(k)
	switch {
	case err != nil:
		return Unseen, nil, fmt.Errorf("request gate: %w", err)
	case ok:
		return Accepted, info, nil
	}
	sh.inflight[k] = struct{}{}
	return Unseen, nil, nil
}

// Accept implements Store: the id is accepted for Begin at once and written to Badger by the
// background writer (see Local). When the writer is behind by maxUnwritten ids, or the gate is
// closed, Accept writes the id itself and returns the write's error.
func (g *Local) Accept(ctx context.Context, app, req uuid.UUID, info []byte) error {
	k := makeKey(app, req)
	sh := g.shard(k)
	// Accepted for Begin first, so the writer finds the info of every id it takes. The two
	// locks are never held together: a Begin holds its shard's during a Badger read that can
	// stall, and that must not hold up every other Accept.
	info = bytes.Clone(info) // the caller may reuse its slice once Accept returns
	sh.mu.Lock()
	sh.unwritten[k] = info
	delete(sh.inflight, k)
	sh.mu.Unlock()
	g.wmu.Lock()
	queued := !g.closed && len(g.queue) < maxUnwritten
	if queued {
		g.queue = append(g.queue, unwrittenID{k, info})
		g.queued++
		if !g.writing {
			g.writing = true
			go g.write() // ends once no id waits (Close waits for it)
		}
	}
	g.wmu.Unlock()
	if queued {
		return nil
	}
	err := g.Mark(ctx, app, req, info)
	sh.mu.Lock()
	delete(sh.unwritten, k) // in Badger now, or failed as a synchronous write did before
	sh.mu.Unlock()
	return err
}

// write is the background writer: it writes the waiting ids in batches until none wait.
func (g *Local) write() {
	var batch []unwrittenID
	for {
		g.wmu.Lock()
		if len(g.queue) == 0 {
			g.writing = false
			g.changed.Broadcast()
			g.wmu.Unlock()
			return
		}
		batch, g.queue = g.queue, batch[:0]
		g.wmu.Unlock()

		err := g.writeIDs(batch)
		if err != nil && g.Log != nil {
			g.Log.Warn("request ids not recorded; retries of those requests after a restart may be processed again",
				"ids", len(batch), "error", err.Error())
		}
		// Written or not, they leave memory: a failed write loses what a failed synchronous
		// one did (the spool's replay still marks the ids of the batches it holds). An id is
		// accepted once (Begin answers Accepted while it waits), so nothing newer is dropped.
		for _, u := range batch {
			sh := g.shard(u.k)
			sh.mu.Lock()
			delete(sh.unwritten, u.k)
			sh.mu.Unlock()
		}
		g.wmu.Lock()
		g.done += uint64(len(batch))
		g.changed.Broadcast()
		g.wmu.Unlock()
	}
}

// writeIDs writes ids with their infos in one Badger write batch.
func (g *Local) writeIDs(ids []unwrittenID) error {
	g.ids.Hold()
	defer g.ids.Release()
	wb := g.db.NewWriteBatch()
	defer wb.Cancel() // after a Flush that failed too: it releases the batch's transaction
	for _, u := range ids {
		dk := dbKey(u.k)
		g.ids.Add(dk)
		if err := wb.SetEntry(badger.NewEntry(dk, u.info).WithTTL(g.ttl)); err != nil {
			return fmt.Errorf("request gate: record accepted ids: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("request gate: record accepted ids: %w", err)
	}
	return nil
}

// Mark implements Store. It leaves the in-progress set alone.
func (g *Local) Mark(_ context.Context, app, req uuid.UUID, info []byte) error {
	dk := dbKey(makeKey(app, req))
	g.ids.Hold()
	defer g.ids.Release()
	g.ids.Add(dk)
	err := g.db.Update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry(dk, info).WithTTL(g.ttl))
	})
	if err != nil {
		return fmt.Errorf("request gate: record accepted id: %w", err)
	}
	return nil
}

// Abort implements Store.
func (g *Local) Abort(_ context.Context, app, req uuid.UUID) {
	k := makeKey(app, req)
	sh := g.shard(k)
	sh.mu.Lock()
	delete(sh.inflight, k)
	sh.mu.Unlock()
}
