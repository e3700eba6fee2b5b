package gate_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/gate"
	"github.com/svc-dev/svc/sinks/gate/gatetest"
	"github.com/svc-dev/svc/sinks/postgres"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// migratedDSN returns the DSN of a fresh PostgreSQL database with svc's schema.
func migratedDSN(t testing.TB) string {
	t.Helper()
	dsn := sinktest.Postgres(t)
	if err := postgres.Migrate(context.Background(), dsn); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return dsn
}

// sharedGate opens a store (a node's pool) on dsn and returns its gate.
func sharedGate(t testing.TB, dsn string, o postgres.GateOptions) *postgres.Gate {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.Gate(o)
}

func TestCachedConformance(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		gatetest.RunShared(t, func(t *testing.T, inProgressTTL time.Duration) (gate.Store, gate.Store) {
			dsn := migratedDSN(t)
			o := postgres.GateOptions{InProgressTTL: inProgressTTL}
			return gate.Cached{Shared: sharedGate(t, dsn, o), Local: openLocal(t)},
				gate.Cached{Shared: sharedGate(t, dsn, o), Local: openLocal(t)}
		})
	})
}

// counted counts the Begins that reach a real shared gate.
type counted struct {
	gate.Store
	begins atomic.Int64
}

func (c *counted) Begin(ctx context.Context, app, req uuid.UUID) (gate.State, []byte, error) {
	c.begins.Add(1)
	return c.Store.Begin(ctx, app, req)
}

// TestCachedRepeats: a repeat reaching the node that accepted it is answered without asking
// the shared gate; one reaching another node asks it once, then that node knows too.
func TestCachedRepeats(t *testing.T) {
	ctx := t.Context()
	dsn := migratedDSN(t)
	sa, sb := &counted{Store: sharedGate(t, dsn, postgres.GateOptions{})}, &counted{Store: sharedGate(t, dsn, postgres.GateOptions{})}
	a, b := gate.Cached{Shared: sa, Local: openLocal(t)}, gate.Cached{Shared: sb, Local: openLocal(t)}
	app, req := uuid.New(), uuid.New()
	if s, _, err := a.Begin(ctx, app, req); err != nil || s != gate.Unseen {
		t.Fatalf("Begin: %v %v", s, err)
	}
	if err := a.Accept(ctx, app, req, []byte("info")); err != nil {
		t.Fatal(err)
	}
	check := func(g gate.Cached, sh *counted, name string, wantBegins int64) {
		t.Helper()
		s, info, err := g.Begin(ctx, app, req)
		if err != nil || s != gate.Accepted || string(info) != "info" {
			t.Fatalf("Begin on %s: %v %q %v, want Accepted \"info\"", name, s, info, err)
		}
		if n := sh.begins.Load(); n != wantBegins {
			t.Fatalf("after a repeat on %s its shared gate saw %d Begins, want %d", name, n, wantBegins)
		}
	}
	check(a, sa, "the accepting node", 1) // its own first Begin only
	check(a, sa, "the accepting node", 1)
	check(b, sb, "another node", 1) // asked once
	check(b, sb, "another node", 1) // then known
}

// TestCachedSharedDown: with PostgreSQL unreachable, a node still answers repeats of ids it
// accepted, fails the others with ErrUnavailable, and remembers an id it accepts meanwhile
// (its batch is in the spool) while reporting the shared gate's error.
func TestCachedSharedDown(t *testing.T) {
	ctx := t.Context()
	local := openLocal(t)
	up := gate.Cached{Shared: sharedGate(t, migratedDSN(t), postgres.GateOptions{}), Local: local}
	app, known := uuid.New(), uuid.New()
	if err := up.Mark(ctx, app, known, []byte("known")); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.New("postgres://nobody@127.0.0.1:1/none", postgres.Options{CallTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	down := gate.Cached{Shared: s.Gate(postgres.GateOptions{}), Local: local}
	if st, info, err := down.Begin(ctx, app, known); err != nil || st != gate.Accepted || string(info) != "known" {
		t.Fatalf("Begin of a known id, shared gate down: %v %q %v, want Accepted \"known\"", st, info, err)
	}
	other := uuid.New()
	if _, _, err := down.Begin(ctx, app, other); !errors.Is(err, sinks.ErrUnavailable) {
		t.Fatalf("Begin of an unknown id, shared gate down: %v, want ErrUnavailable", err)
	}
	if err := down.Accept(ctx, app, other, []byte("spooled")); !errors.Is(err, sinks.ErrUnavailable) {
		t.Fatalf("Accept, shared gate down: %v, want ErrUnavailable", err)
	}
	if st, info, err := down.Begin(ctx, app, other); err != nil || st != gate.Accepted || string(info) != "spooled" {
		t.Fatalf("Begin of an id accepted while the shared gate was down: %v %q %v, want Accepted \"spooled\"", st, info, err)
	}
}

// BenchmarkCached measures a repeat's Begin answered by the node that accepted it, and an
// unseen id's Begin and Accept through the cache (PostgreSQL, then the node's Badger).
func BenchmarkCached(b *testing.B) {
	dsn := migratedDSN(b)
	s, err := postgres.Open(b.Context(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := b.Context()
	_, local := diskLocal(b)
	c := gate.Cached{Shared: s.Gate(postgres.GateOptions{}), Local: local}
	app := uuid.New()
	b.Run("BeginUnseen+Accept", func(b *testing.B) {
		for b.Loop() {
			req := uuid.New()
			if st, _, err := c.Begin(ctx, app, req); err != nil || st != gate.Unseen {
				b.Fatal(st, err)
			}
			if err := c.Accept(ctx, app, req, []byte(`{"attachments":[]}`)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("BeginRepeat", func(b *testing.B) {
		req := uuid.New()
		if err := c.Mark(ctx, app, req, []byte(`{"attachments":[]}`)); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if st, _, err := c.Begin(ctx, app, req); err != nil || st != gate.Accepted {
				b.Fatal(st, err)
			}
		}
	})
}

// diskLocal returns a Local over an unsynced Badger in a temporary directory, as a node's,
// and that database.
func diskLocal(b *testing.B) (*badger.DB, *gate.Local) {
	db, err := badgerdb.OpenLocal(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	g := gate.New(db, 0)
	b.Cleanup(func() { _ = g.Close() }) // before the DB's
	return db, g
}
