package postgres

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/gate"
	"github.com/svc-dev/svc/sinks/gate/gatetest"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// gateNodes opens two stores (two pools, as two nodes hold) on one fresh migrated database and
// returns a Gate of each.
func gateNodes(t *testing.T, o GateOptions) (a, b *Gate) {
	t.Helper()
	dsn := migrated(t)
	return openStore(t, dsn).Gate(o), openStore(t, dsn).Gate(o)
}

func TestGateConformance(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		gatetest.RunShared(t, func(t *testing.T, inProgressTTL time.Duration) (gate.Store, gate.Store) {
			a, b := gateNodes(t, GateOptions{InProgressTTL: inProgressTTL})
			return a, b
		})
	})
}

// TestGateExpiry: an accepted id is unseen again after the gate's TTL, and
// DeleteExpiredRequestIDs removes it and abandoned in-progress ids, and nothing else.
func TestGateExpiry(t *testing.T) {
	ctx := t.Context()
	short, _ := gateNodes(t, GateOptions{TTL: time.Second, InProgressTTL: time.Second})
	long := short.s.Gate(GateOptions{})
	app := uuid.New()
	expired, abandoned, kept, held := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	if err := short.Mark(ctx, app, expired, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if s, _, err := short.Begin(ctx, app, abandoned); err != nil || s != gate.Unseen {
		t.Fatalf("Begin: %v %v", s, err)
	}
	if err := long.Mark(ctx, app, kept, []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if s, _, err := long.Begin(ctx, app, held); err != nil || s != gate.Unseen {
		t.Fatalf("Begin: %v %v", s, err)
	}
	time.Sleep(1500 * time.Millisecond)
	n, err := long.DeleteExpiredRequestIDs(ctx)
	if err != nil || n != 2 {
		t.Fatalf("DeleteExpiredRequestIDs = %d, %v; want 2 (the expired accepted id and the abandoned one)", n, err)
	}
	if n, err := long.DeleteExpiredRequestIDs(ctx); err != nil || n != 0 {
		t.Fatalf("DeleteExpiredRequestIDs again = %d, %v; want 0", n, err)
	}
	for _, c := range []struct {
		req  uuid.UUID
		want gate.State
		info string
	}{{expired, gate.Unseen, ""}, {abandoned, gate.Unseen, ""}, {kept, gate.Accepted, "kept"}, {held, gate.InProgress, ""}} {
		if s, info, err := long.Begin(ctx, app, c.req); err != nil || s != c.want || string(info) != c.info {
			t.Errorf("Begin: %v %q %v, want %v %q", s, info, err, c.want, c.info)
		}
	}
	// An expired accepted row the janitor has not deleted yet is unseen too.
	if err := short.Mark(ctx, app, expired, []byte("old again")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if s, _, err := long.Begin(ctx, app, expired); err != nil || s != gate.Unseen {
		t.Fatalf("Begin of an expired accepted id: %v %v, want Unseen", s, err)
	}
}

// TestGateBatches: DeleteExpiredRequestIDs goes on past one batch.
func TestGateBatches(t *testing.T) {
	ctx := t.Context()
	g, _ := gateNodes(t, GateOptions{})
	const n = expiredBatch + 123
	if _, err := g.s.pool.Exec(ctx, `INSERT INTO request_ids (app_id, request_id, state, since, expires_at)
		SELECT gen_random_uuid(), gen_random_uuid(), 'accepted', now() - interval '1 day', now() - interval '1 second'
		FROM generate_series(1, $1)`, n); err != nil {
		t.Fatal(err)
	}
	if got, err := g.DeleteExpiredRequestIDs(ctx); err != nil || got != n {
		t.Fatalf("DeleteExpiredRequestIDs = %d, %v; want %d", got, err, n)
	}
}

// TestGateUnavailable: against a server that is not there every call that returns an error
// returns ErrUnavailable of the metadata store, within the CallTimeout.
func TestGateUnavailable(t *testing.T) {
	s, err := New("postgres://nobody@127.0.0.1:1/none", Options{CallTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := s.Gate(GateOptions{})
	ctx := t.Context()
	app, req := uuid.New(), uuid.New()
	start := time.Now()
	_, _, errBegin := g.Begin(ctx, app, req)
	errs := map[string]error{
		"Begin":  errBegin,
		"Accept": g.Accept(ctx, app, req, nil),
		"Mark":   g.Mark(ctx, app, req, nil),
	}
	_, errs["DeleteExpiredRequestIDs"] = g.DeleteExpiredRequestIDs(ctx)
	_, _, errs["LoadSnapshot"] = s.Snapshots().LoadSnapshot(ctx, "k", "i")
	errs["SaveSnapshot"] = s.Snapshots().SaveSnapshot(ctx, "k", "i", nil, time.Minute)
	_, errs["DeleteExpiredSnapshots"] = s.Snapshots().DeleteExpiredSnapshots(ctx)
	g.Abort(ctx, app, req) // returns nothing; must not hang
	for name, err := range errs {
		var ue *sinks.UnavailableError
		if !errors.Is(err, sinks.ErrUnavailable) || !errors.As(err, &ue) || ue.Store != sinks.StoreMeta {
			t.Errorf("%s without a server: %v, want ErrUnavailable of the metadata store", name, err)
		}
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the calls took %v", took)
	}
}

// TestGateMigration: migration 00010 goes down and up again cleanly on a database in use.
func TestGateMigration(t *testing.T) {
	dsn := migrated(t)
	g := openStore(t, dsn).Gate(GateOptions{})
	if err := g.Mark(t.Context(), uuid.New(), uuid.New(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	migrateDown(t, dsn, 9)
	for _, table := range []string{"request_ids", "actor_snapshots"} {
		if tableExists(t, g.s, table) {
			t.Errorf("table %s exists after down", table)
		}
	}
	// A node whose database lost the table reports it unavailable, as for the other tables.
	if _, _, err := g.Begin(t.Context(), uuid.New(), uuid.New()); !errors.Is(err, sinks.ErrUnavailable) {
		t.Errorf("Begin without the table: %v, want ErrUnavailable", err)
	}
	if err := Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	if s, _, err := g.Begin(t.Context(), uuid.New(), uuid.New()); err != nil || s != gate.Unseen {
		t.Fatalf("Begin after up: %v %v", s, err)
	}
}

// BenchmarkGate measures the calls of one request: Begin of a new id and its Accept, and a
// repeat's Begin.
func BenchmarkGate(b *testing.B) {
	dsn := migratedB(b)
	s, err := Open(b.Context(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	g := s.Gate(GateOptions{})
	ctx := b.Context()
	app := uuid.New()
	b.Run("BeginUnseen+Accept", func(b *testing.B) {
		for b.Loop() {
			req := uuid.New()
			if st, _, err := g.Begin(ctx, app, req); err != nil || st != gate.Unseen {
				b.Fatal(st, err)
			}
			if err := g.Accept(ctx, app, req, []byte(`{"attachments":[]}`)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("BeginAccepted", func(b *testing.B) {
		req := uuid.New()
		if err := g.Mark(ctx, app, req, []byte(`{"attachments":[]}`)); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if st, _, err := g.Begin(ctx, app, req); err != nil || st != gate.Accepted {
				b.Fatal(st, err)
			}
		}
	})
}

func migratedB(b *testing.B) string {
	b.Helper()
	dsn := sinktest.Postgres(b)
	if err := Migrate(b.Context(), dsn); err != nil {
		b.Fatalf("Migrate: %v", err)
	}
	return dsn
}

// countingConn counts the writes a client connection makes: one per round trip, as pgx
// flushes its buffer once per request it waits on.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestGateRoundTrips: Begin is one round trip whatever the id's state, as are Accept, Mark
// and Abort (once the connection has prepared the statements).
func TestGateRoundTrips(t *testing.T) {
	dsn := migrated(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	var writes atomic.Int64
	dialer := &net.Dialer{}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		return countingConn{Conn: c, writes: &writes}, err
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	g := (&Store{pool: pool, callTimeout: DefaultCallTimeout}).Gate(GateOptions{})
	ctx, app := t.Context(), uuid.New()
	// Warm up: connect, prepare every statement.
	warm := uuid.New()
	g.Begin(ctx, app, warm)
	g.Begin(ctx, app, warm)
	g.Abort(ctx, app, warm)
	g.Accept(ctx, app, warm, nil)
	g.Begin(ctx, app, warm)
	held, accepted := uuid.New(), uuid.New()
	calls := []struct {
		name string
		call func() error
	}{
		{"Begin of an unseen id", func() error { _, _, err := g.Begin(ctx, app, held); return err }},
		{"Begin of an id in progress", func() error { _, _, err := g.Begin(ctx, app, held); return err }},
		{"Accept", func() error { return g.Accept(ctx, app, accepted, []byte("x")) }},
		{"Mark", func() error { return g.Mark(ctx, app, accepted, []byte("x")) }},
		{"Begin of an accepted id", func() error { _, _, err := g.Begin(ctx, app, accepted); return err }},
		{"Abort", func() error { g.Abort(ctx, app, held); return nil }},
	}
	for _, c := range calls {
		before := writes.Load()
		if err := c.call(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n := writes.Load() - before; n != 1 {
			t.Errorf("%s: %d round trips, want 1", c.name, n)
		}
	}
}

// TestGateReleaseHeld: a node that starts again under the same holder ends the ids its killed
// run held in progress, and only those: another node's stay in progress, accepted ids stay
// accepted.
func TestGateReleaseHeld(t *testing.T) {
	ctx := t.Context()
	node := uuid.New()
	killed, other := gateNodes(t, GateOptions{Holder: node})
	otherNode := other.s.Gate(GateOptions{})
	app, held, theirs, done := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	for _, b := range []struct {
		g   *Gate
		req uuid.UUID
	}{{killed, held}, {otherNode, theirs}, {killed, done}} {
		if s, _, err := b.g.Begin(ctx, app, b.req); err != nil || s != gate.Unseen {
			t.Fatalf("Begin: %v %v", s, err)
		}
	}
	if err := killed.Accept(ctx, app, done, []byte("info")); err != nil {
		t.Fatal(err)
	}
	restarted := killed.s.Gate(GateOptions{Holder: node})
	if n, err := restarted.ReleaseHeld(ctx); err != nil || n != 1 {
		t.Fatalf("ReleaseHeld = %d, %v; want the one id the killed run held", n, err)
	}
	steps := []struct {
		req  uuid.UUID
		want gate.State
	}{{held, gate.Unseen}, {theirs, gate.InProgress}, {done, gate.Accepted}}
	for _, st := range steps {
		if s, _, err := other.Begin(ctx, app, st.req); err != nil || s != st.want {
			t.Errorf("Begin(%s) after the release = %v, %v; want %v", st.req, s, err, st.want)
		}
	}
}
