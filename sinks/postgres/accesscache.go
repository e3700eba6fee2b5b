package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/sinks"
)

// The access cache (sinks.AccessCache) keeps SessionAppRole's answers for requests the
// dashboard admits, so that a live dashboard answer does not wait for a PostgreSQL round trip:
// on this machine that round trip alone has a p99 above the live answers' 1 ms target
// (BenchmarkAppRoute, docs/benchmarks.md "Sign-in checks from memory").
//
// An answer is kept only while the store listens on the channel svc_access, on which triggers
// (migration 00011) announce every change to a session, an app or a membership, by any node.
// A notice drops the answers it concerns; losing the listening connection drops them all and
// keeps none until it listens again. A change this node makes drops them before its method
// returns, so a sign-out holds from this node's next request at once and from other nodes'
// once the notice arrives (milliseconds). Each answer is also kept for accessTTL at most, and
// the listener checks that notices reach it (listenOnce's probes).

// Tunables, variables for the tests.
var (
	accessTTL   = sinks.DefaultAccessTTL
	listenPing  = 5 * time.Second
	probeWait   = 5 * time.Second
	listenRetry = time.Second
)

// accessChannel is the channel the triggers of migration 00011 notify.
const accessChannel = "svc_access"

// listenerName is the listening connection's application_name, to tell it in pg_stat_activity.
const listenerName = "svc access listener"

// probePrefix starts the payload of a probe (listenOnce), which drops nothing.
const probePrefix = "p"

// testHookNotice, when set, sees each notice before it is applied and may lose it (false): a
// test holds notices back with it to see what the store's own changes drop.
var testHookNotice atomic.Pointer[func(payload string) bool]

// matcher reads a notice's payload into which answers it concerns; nil means all.
func matcher(payload string) func(sinks.AccessKey, sinks.SessionAccess) bool {
	if payload == "" {
		return nil
	}
	kind, rest := payload[0], payload[1:]
	switch kind {
	case 's':
		if id, err := uuid.Parse(rest); err == nil {
			return func(k sinks.AccessKey, _ sinks.SessionAccess) bool { return k.Session == id }
		}
	case 'a':
		if id, err := uuid.Parse(rest); err == nil {
			return func(k sinks.AccessKey, _ sinks.SessionAccess) bool { return k.App == id }
		}
	case 'm':
		t, u, ok := strings.Cut(rest, "/")
		team, err1 := uuid.Parse(t)
		user, err2 := uuid.Parse(u)
		if ok && err1 == nil && err2 == nil {
			return func(k sinks.AccessKey, acc sinks.SessionAccess) bool { return k.User == user && acc.App.TeamID == team }
		}
	}
	return nil
}

// AccessCacheListening says whether the access cache keeps answers now: its listener listens.
// False without Options.AccessCache.
func (s *Store) AccessCacheListening() bool { return s.access.On() }

// Changes this store makes drop what they concern at once; the notice follows for the others.
func (s *Store) accessChanged(payload string) { s.access.Drop(matcher(payload)) }

// listen keeps a connection listening on accessChannel until ctx ends, and tells the cache
// whether it hears. A failed connection or a schema without the triggers (migrations not yet
// applied) is retried every listenRetry.
//
// It logs once when it stops listening (or cannot start) and once when it listens again, not
// at every retry: PostgreSQL down for an hour is two lines.
func (s *Store) listen(ctx context.Context, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	warned := false
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() {
			if warned {
				log.Info("postgres: listening for access changes again; dashboard sign-in checks are kept in memory")
				warned = false
			}
		})
		s.access.SetOn(false)
		if ctx.Err() != nil {
			return
		}
		if !warned {
			log.Warn("postgres: not listening for access changes; dashboard sign-in checks read the database until it listens again",
				"error", err.Error(), "retry_every", listenRetry.String())
			warned = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(listenRetry):
		}
	}
}

// listenOnce connects, listens and drops answers as notices arrive, until the connection fails,
// a probe is not heard back, or ctx ends. A probe is a notice this store sends through its pool
// and must hear on the listening connection within probeWait: the first one heard turns the
// cache on, and one goes after every listenPing of quiet. So a connection that is cut without a
// word, or one through a proxy that does not pass notices on (a transaction-pooling PgBouncer),
// keeps nothing for longer than that.
func (s *Store) listenOnce(ctx context.Context, heardFirst func()) error {
	cctx, cancel := s.deadline(ctx)
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = listenerName
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		cancel()
		return fail("listen: connect", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var triggers bool
	err = conn.QueryRow(cctx, `SELECT EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'svc_access_changed')`).Scan(&triggers)
	if err == nil && !triggers {
		err = errors.New("migration 00011 (svc_access_changed) not applied yet")
	}
	if err == nil {
		_, err = conn.Exec(cctx, "LISTEN "+accessChannel)
	}
	cancel()
	if err != nil {
		return fail("listen", err)
	}
	var (
		probe string    // the probe awaited; "" when none is
		due   time.Time // when it must have arrived, or when the next one goes
		heard bool      // a probe came back: the cache is on
	)
	for {
		if probe == "" && !time.Now().Before(due) {
			probe = probePrefix + uuid.NewString()
			pctx, cancel := s.deadline(ctx)
			_, err := s.pool.Exec(pctx, `SELECT pg_notify($1, $2)`, accessChannel, probe)
			cancel()
			if err != nil {
				return fail("listen: probe", err)
			}
			due = time.Now().Add(probeWait)
		}
		wctx, cancel := context.WithDeadline(ctx, due)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if h := testHookNotice.Load(); h != nil && !(*h)(n.Payload) {
				continue
			}
			switch {
			case n.Payload == probe:
				probe, due = "", time.Now().Add(listenPing)
				if !heard {
					heard = true
					s.access.SetOn(true)
					heardFirst()
				}
			case strings.HasPrefix(n.Payload, probePrefix): // an earlier one, or another node's
			default:
				s.access.Drop(matcher(n.Payload))
			}
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			if probe != "" {
				return fmt.Errorf("postgres: listen: a probe notice did not come back within %s", probeWait)
			}
		default:
			return fmt.Errorf("postgres: listen: %w", err)
		}
	}
}
