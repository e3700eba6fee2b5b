package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/sinks"
)

// Snapshots is the sinks.Snapshots of a cluster, in the table actor_snapshots of migration
// 00010: one row per (kind, identity) with the state and the time it expires on the database's
// clock. LoadSnapshot does not see an expired row; DeleteExpiredSnapshots removes them.
type Snapshots struct{ s *Store }

var _ sinks.Snapshots = Snapshots{}

// Snapshots returns the actor snapshots in the store's database, sharing its pool and
// CallTimeout. The database needs migration 00010 (Migrate).
func (s *Store) Snapshots() Snapshots { return Snapshots{s: s} }

// checkSnapshotKey refuses what a text column cannot hold.
func checkSnapshotKey(kind, identity string) error {
	for _, v := range []string{kind, identity} {
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("postgres: snapshot %q/%q: a NUL byte or invalid UTF-8: %w", kind, identity, sinks.ErrInvalid)
		}
	}
	return nil
}

// LoadSnapshot implements sinks.Snapshots.
func (p Snapshots) LoadSnapshot(ctx context.Context, kind, identity string) ([]byte, bool, error) {
	if err := checkSnapshotKey(kind, identity); err != nil {
		return nil, false, nil // never saved
	}
	ctx, cancel := p.s.deadline(ctx)
	defer cancel()
	var state []byte
	err := p.s.pool.QueryRow(ctx,
		`SELECT state FROM actor_snapshots WHERE kind = $1 AND identity = $2 AND expires_at > now()`, kind, identity).
		Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fail("load "+kind+" snapshot", err)
	}
	return state, true, nil
}

// SaveSnapshot implements sinks.Snapshots. Kind and identity must be UTF-8 without NUL bytes
// (ErrInvalid otherwise), and ttl > 0 (ErrInvalid).
func (p Snapshots) SaveSnapshot(ctx context.Context, kind, identity string, state []byte, ttl time.Duration) error {
	if err := checkSnapshotKey(kind, identity); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("postgres: save %s snapshot with ttl %v: %w", kind, ttl, sinks.ErrInvalid)
	}
	if state == nil {
		state = []byte{} // NULL is not a value of the column
	}
	ctx, cancel := p.s.deadline(ctx)
	defer cancel()
	_, err := exec(ctx, p.s.pool, "save "+kind+" snapshot",
		`INSERT INTO actor_snapshots (kind, identity, state, expires_at)
		 VALUES ($1, $2, $3, now() + $4::bigint * interval '1 microsecond')
		 ON CONFLICT (kind, identity) DO UPDATE SET state = EXCLUDED.state, expires_at = EXCLUDED.expires_at`,
		kind, identity, state, micros(ttl))
	return err
}

// DeleteExpiredSnapshots deletes the snapshots whose expiry passed and returns how many; the
// janitor calls it. It deletes in batches, each within the CallTimeout.
func (p Snapshots) DeleteExpiredSnapshots(ctx context.Context) (int64, error) {
	return deleteExpired(ctx, p.s, "snapshots", `DELETE FROM actor_snapshots r
		USING (SELECT kind, identity FROM actor_snapshots WHERE expires_at < now()
		       LIMIT $1 FOR UPDATE SKIP LOCKED) d
		WHERE r.kind = d.kind AND r.identity = d.identity`)
}
