package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/sinks/gate"
)

// Gate is the request gate shared by the nodes of a cluster (gate.Store), in the table
// request_ids of migration 00010: one row per (app id, request id), in progress or accepted,
// with the time it expires on the database's clock. An in-progress row whose expiry passed (its
// node died mid-request) is taken over by the next Begin; an accepted one whose expiry passed is
// unseen again until DeleteExpiredRequestIDs removes it.
//
// Begin is one round trip: the insert (or takeover) and the read of the row it conflicted with
// go to the server as one pipelined batch, which PostgreSQL runs as one implicit transaction.
// Accept, Mark and Abort are one statement each. Errors of a server that does not answer wrap
// sinks.ErrUnavailable (of the metadata store) like the Store's other calls.
type Gate struct {
	s          *Store
	ttl        time.Duration
	inProgress time.Duration
	// holder names this gate in the rows it begins, so that its Abort never ends a row another
	// node took over after the in-progress TTL.
	holder uuid.UUID
}

var _ gate.Store = (*Gate)(nil)

// GateOptions tune a Gate.
type GateOptions struct {
	// TTL is how long accepted ids are kept; 0 means gate.DefaultTTL.
	TTL time.Duration
	// InProgressTTL is how long an id begun by a node that never ends it stays in progress; 0
	// means gate.InProgressTTL. Tests shorten it.
	InProgressTTL time.Duration
	// Holder names the node in the rows it begins; zero means a new random one. A node that
	// keeps it across restarts can end, with ReleaseHeld, what it held when it was killed.
	Holder uuid.UUID
}

// Gate returns the request gate in the store's database, sharing its pool and CallTimeout.
// Each node calls it once; the database needs migration 00010 (Migrate).
func (s *Store) Gate(o GateOptions) *Gate {
	if o.TTL <= 0 {
		o.TTL = gate.DefaultTTL
	}
	if o.InProgressTTL <= 0 {
		o.InProgressTTL = gate.InProgressTTL
	}
	if o.Holder == uuid.Nil {
		o.Holder = uuid.New()
	}
	return &Gate{s: s, ttl: o.TTL, inProgress: o.InProgressTTL, holder: o.Holder}
}

// ReleaseHeld ends every id still in progress under this gate's holder: a node calls it when it
// starts, so the requests its previous run was handling when it died are processed on their
// retry at once rather than after the in-progress TTL.
func (g *Gate) ReleaseHeld(ctx context.Context) (int64, error) {
	ctx, cancel := g.s.deadline(ctx)
	defer cancel()
	return exec(ctx, g.s.pool, "request gate: release ids in progress", `DELETE FROM request_ids WHERE holder = $1 AND state = 'in_progress'`, g.holder)
}

// micros is d in whole microseconds, the resolution of timestamptz, for `$n * interval '1
// microsecond'`.
func micros(d time.Duration) int64 { return d.Microseconds() }

// gateBegin inserts the id in progress, or takes over a row whose expiry passed (an in-progress
// id of a dead node, an accepted id past the TTL). On a live row it returns nothing, and it
// locks that row (ON CONFLICT DO UPDATE locks the rows its WHERE refuses), so gateRead, in the
// same implicit transaction, reads it as it is while nobody changes it.
const gateBegin = `INSERT INTO request_ids AS r (app_id, request_id, state, holder, since, expires_at)
VALUES ($1, $2, 'in_progress', $3, now(), now() + $4::bigint * interval '1 microsecond')
ON CONFLICT (app_id, request_id) DO UPDATE
SET state = 'in_progress', info = '', holder = EXCLUDED.holder, since = EXCLUDED.since, expires_at = EXCLUDED.expires_at
WHERE r.expires_at <= now()
RETURNING true`

const gateRead = `SELECT state = 'accepted', info FROM request_ids WHERE app_id = $1 AND request_id = $2`

// Begin implements gate.Store.
func (g *Gate) Begin(ctx context.Context, app, req uuid.UUID) (gate.State, []byte, error) {
	ctx, cancel := g.s.deadline(ctx)
	defer cancel()
	what := "request gate: begin " + req.String()
	// The read cannot miss the row it conflicted with (it is locked); two tries cover what a
	// future change of that reasoning would break.
	for range 2 {
		b := &pgx.Batch{}
		b.Queue(gateBegin, app, req, g.holder, micros(g.inProgress))
		b.Queue(gateRead, app, req)
		br := g.s.pool.SendBatch(ctx, b)
		var (
			began, accepted bool
			info            []byte
		)
		errBegin := br.QueryRow().Scan(&began)
		errRead := br.QueryRow().Scan(&accepted, &info)
		errClose := br.Close()
		if errBegin == nil { // inserted or taken over, if the implicit transaction committed
			if err := firstErr(errRead, errClose); err != nil {
				return gate.Unseen, nil, fail(what, err)
			}
			return gate.Unseen, nil, nil
		}
		if !errors.Is(errBegin, pgx.ErrNoRows) {
			return gate.Unseen, nil, fail(what, firstErr(errBegin, errClose))
		}
		// A live row: the read says what it is.
		if errRead != nil && !errors.Is(errRead, pgx.ErrNoRows) {
			return gate.Unseen, nil, fail(what, errRead)
		}
		if errClose != nil {
			return gate.Unseen, nil, fail(what, errClose)
		}
		if errRead == nil {
			if accepted {
				return gate.Accepted, info, nil
			}
			return gate.InProgress, nil, nil
		}
	}
	return gate.Unseen, nil, fmt.Errorf("postgres: %s: the row it conflicted with vanished twice", what)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

const gateAccept = `INSERT INTO request_ids AS r (app_id, request_id, state, info, since, expires_at)
VALUES ($1, $2, 'accepted', $3, now(), now() + $4::bigint * interval '1 microsecond')
ON CONFLICT (app_id, request_id) DO UPDATE
SET state = 'accepted', info = EXCLUDED.info, holder = NULL, since = EXCLUDED.since, expires_at = EXCLUDED.expires_at`

// Accept implements gate.Store: the row becomes accepted whoever holds it.
func (g *Gate) Accept(ctx context.Context, app, req uuid.UUID, info []byte) error {
	return g.accept(ctx, "accept", app, req, info)
}

// Mark implements gate.Store; in this store it is Accept.
func (g *Gate) Mark(ctx context.Context, app, req uuid.UUID, info []byte) error {
	return g.accept(ctx, "mark", app, req, info)
}

func (g *Gate) accept(ctx context.Context, verb string, app, req uuid.UUID, info []byte) error {
	ctx, cancel := g.s.deadline(ctx)
	defer cancel()
	if info == nil {
		info = []byte{} // NULL is not a value of the column
	}
	_, err := exec(ctx, g.s.pool, "request gate: "+verb+" "+req.String(), gateAccept, app, req, info, micros(g.ttl))
	return err
}

// Abort implements gate.Store: it deletes the row if it is still in progress and this gate
// began it. When the server does not answer the row stays in progress until the in-progress
// TTL passes (a retry meanwhile is told to wait).
func (g *Gate) Abort(ctx context.Context, app, req uuid.UUID) {
	ctx, cancel := g.s.deadline(ctx)
	defer cancel()
	_, _ = g.s.pool.Exec(ctx, `DELETE FROM request_ids
		WHERE app_id = $1 AND request_id = $2 AND state = 'in_progress' AND holder = $3`, app, req, g.holder)
}

// DeleteExpiredRequestIDs deletes the rows whose expiry passed (accepted ids older than the
// TTL, in-progress ids of nodes that died) and returns how many; the janitor calls it. It
// deletes in batches, each within the CallTimeout, so a large backlog neither holds locks long
// nor runs out of time; rows a concurrent Begin is taking over are left to it.
func (g *Gate) DeleteExpiredRequestIDs(ctx context.Context) (int64, error) {
	return deleteExpired(ctx, g.s, "request ids", `DELETE FROM request_ids r
		USING (SELECT app_id, request_id FROM request_ids WHERE expires_at < now()
		       LIMIT $1 FOR UPDATE SKIP LOCKED) d
		WHERE r.app_id = d.app_id AND r.request_id = d.request_id`)
}

// expiredBatch is how many rows one statement of deleteExpired deletes at most.
const expiredBatch = 10000

// deleteExpired runs sql (a DELETE of at most $1 expired rows) until a run deletes fewer than
// $1 rows or ctx ends, and returns the total.
func deleteExpired(ctx context.Context, s *Store, what, sql string) (int64, error) {
	var total int64
	for {
		cctx, cancel := s.deadline(ctx)
		n, err := exec(cctx, s.pool, "delete expired "+what, sql, expiredBatch)
		cancel()
		total += n
		if err != nil || n < expiredBatch {
			return total, err
		}
	}
}
