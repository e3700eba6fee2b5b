package clickhouse

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/eventstest"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// activeParts counts the events table's active parts by partition.
func activeParts(t testing.TB, s *Store) map[string]uint64 {
	t.Helper()
	rows, err := s.conn.Query(ctxT(t), "SELECT partition, count() FROM system.parts "+
		"WHERE database = currentDatabase() AND table = 'events' AND active GROUP BY partition")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	parts := map[string]uint64{}
	for rows.Next() {
		var p string
		var n uint64
		if err := rows.Scan(&p, &n); err != nil {
			t.Fatal(err)
		}
		parts[p] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return parts
}

// An INSERT sent in several blocks stores every row, and the server squashes its blocks into
// one part per partition, as one block would have been: more parts would mean more merges.
func TestInsertBlocksOnePart(t *testing.T) {
	tests := []struct {
		name      string
		rows, per int
	}{
		{"one block, not full", 50, 100},
		{"one block, full", 100, 100},
		{"a row past one block", 101, 100},
		{"ten blocks, the last short", 950, 100},
		{"a row per block", 30, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := migrated(t)
			stopMerges(t, s)
			s.blockRows = tt.per
			app := uuid.New()
			events := eventstest.RealisticEvents(t, app, tt.rows)
			if err := s.WriteEvents(ctxT(t), events); err != nil {
				t.Fatalf("WriteEvents: %v", err)
			}
			if n := physicalRows(t, s, app); n != uint64(tt.rows) {
				t.Fatalf("%d rows stored, want %d", n, tt.rows)
			}
			parts := activeParts(t, s)
			if len(parts) == 0 {
				t.Fatal("no parts")
			}
			for p, n := range parts {
				if n != 1 {
					t.Errorf("partition %s: %d parts, want 1 (%d blocks of %d rows)", p, n, (tt.rows+tt.per-1)/tt.per, tt.per)
				}
			}
			// Every row as it was written, the last block's too.
			for _, i := range []int{0, tt.rows / 2, tt.rows - 1} {
				got, err := s.Event(ctxT(t), app, events[i].ID)
				if err != nil {
					t.Fatalf("Event %d: %v", i, err)
				}
				if got.ID != events[i].ID || got.Timestamp != events[i].Timestamp || got.SessionID != events[i].SessionID {
					t.Errorf("Event %d: %v at %d in session %v, want %v at %d in %v", i, got.ID, got.Timestamp, got.SessionID,
						events[i].ID, events[i].Timestamp, events[i].SessionID)
				}
			}
		})
	}
}

// blockHook is the driver's connection; before each block a batch it prepares sends with
// Flush, it calls before with the block's number (1 for the first), and sends the block only
// when before returns nil.
type blockHook struct {
	driver.Conn
	before func(n int) error
}

func (h blockHook) PrepareBatch(ctx context.Context, query string, opts ...driver.PrepareBatchOption) (driver.Batch, error) {
	b, err := h.Conn.PrepareBatch(ctx, query, opts...)
	if err != nil {
		return nil, err
	}
	return &hookedBatch{Batch: b, before: h.before}, nil
}

type hookedBatch struct {
	driver.Batch
	n      int
	before func(n int) error
}

func (b *hookedBatch) Flush() error {
	b.n++
	if err := b.before(b.n); err != nil {
		return err
	}
	return b.Batch.Flush()
}

// A server that freezes while an INSERT sends its blocks fails the write within the store's
// timeout: the driver does not watch the context while it sends a block before the last, and
// without the connection's write deadline the write waited for the server forever. Once it
// runs again, the retry stores every event once.
func TestInsertFrozenServer(t *testing.T) {
	srv, err := sinktest.StartClickHouse(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Thaw(); _ = srv.Stop() })
	s, err := New(srv.DSN, Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.MigrateOnce(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	s.blockRows = 500
	s.conn = timedConn{Conn: blockHook{Conn: s.raw, before: func(n int) error {
		if n == 2 {
			return srv.Freeze()
		}
		return nil
	}}, s: s}
	app := uuid.New()
	// 40 blocks, far more than the sockets' buffers hold: a block's write must wait for the
	// server.
	events := eventstest.RealisticEvents(t, app, 20_000)
	done := make(chan error, 1)
	go func() { done <- s.WriteEvents(ctxT(t), events) }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		_ = srv.Thaw() // lets the write end, so the test does too
		<-done
		t.Fatal("WriteEvents to a frozen server did not return within 20 s (timeout 2 s)")
	}
	if !errors.Is(err, sinks.ErrUnavailable) {
		t.Fatalf("WriteEvents to a frozen server: %v, want ErrUnavailable", err)
	}
	if err := srv.Thaw(); err != nil {
		t.Fatal(err)
	}
	s.conn = timedConn{Conn: s.raw, s: s}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := s.Ping(ctxT(t))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thawed server does not answer: %v", err)
		}
	}
	if err := s.WriteEvents(ctxT(t), events); err != nil {
		t.Fatalf("WriteEvents after the thaw: %v", err)
	}
	if n, _, err := s.Count(ctxT(t), app); err != nil || n != int64(len(events)) {
		t.Fatalf("Count after the thaw: %d, %v; want %d", n, err, len(events))
	}
}

// An INSERT that fails after some of its blocks reached the server, then retried, leaves each
// event stored and counted once, whatever the server kept of the failed one.
func TestInsertFailedThenRetried(t *testing.T) {
	s := migrated(t)
	s.blockRows = 100
	errBlock := errors.New("the third block fails")
	s.conn = timedConn{Conn: blockHook{Conn: s.raw, before: func(n int) error {
		if n == 3 {
			return errBlock
		}
		return nil
	}}, s: s}
	app := uuid.New()
	events := eventstest.RealisticEvents(t, app, 1000)
	if err := s.WriteEvents(ctxT(t), events); !errors.Is(err, errBlock) {
		t.Fatalf("WriteEvents: %v, want %v", err, errBlock)
	}
	s.conn = timedConn{Conn: s.raw, s: s}
	if err := s.WriteEvents(ctxT(t), events); err != nil {
		t.Fatalf("WriteEvents again: %v", err)
	}
	n, _, err := s.Count(ctxT(t), app)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(events)) {
		t.Fatalf("Count %d after the retry, want %d", n, len(events))
	}
	for _, i := range []int{0, 150, 250, len(events) - 1} { // blocks sent, not sent, and the last
		if got, err := s.Event(ctxT(t), app, events[i].ID); err != nil || got.ID != events[i].ID {
			t.Fatalf("Event %d: %v, %v", i, got.ID, err)
		}
	}
	t.Logf("%d physical rows (the failed INSERT's first two blocks are 200)", physicalRows(t, s, app))
}

// An INSERT whose deadline passes between two blocks sends no block after it: the driver
// watches the context only in Send, so without the check each block would go on, up to a
// write's timeout each.
func TestInsertDeadlineBetweenBlocks(t *testing.T) {
	s := migrated(t)
	s.blockRows = 100
	s.opts.Timeout = time.Second
	sent := 0
	s.conn = timedConn{Conn: blockHook{Conn: s.raw, before: func(n int) error {
		if sent = n; n == 2 {
			time.Sleep(1500 * time.Millisecond)
		}
		return nil
	}}, s: s}
	err := s.WriteEvents(ctxT(t), eventstest.RealisticEvents(t, uuid.New(), 1000))
	if !errors.Is(err, sinks.ErrUnavailable) {
		t.Fatalf("WriteEvents past its deadline: %v, want ErrUnavailable", err)
	}
	if n := sent; n != 2 {
		t.Fatalf("%d blocks sent with Flush, want 2 (the second began before the deadline)", n)
	}
}

// A connection the server closed while it sat in the pool is not handed out again: the driver
// peeks at its socket before reusing it, which the write-bound connection must let it do.
// Without that, the first call after a server restart failed on the dead connection.
func TestPooledConnectionAfterRestart(t *testing.T) {
	srv, err := sinktest.StartClickHouse(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	s, err := New(srv.DSN, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.MigrateOnce(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	app := uuid.New()
	events := eventstest.RealisticEvents(t, app, 50)
	if err := s.WriteEvents(ctxT(t), events[:25]); err != nil { // leaves connections in the pool
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteEvents(ctxT(t), events[25:]); err != nil {
		t.Fatalf("the first write after the restart: %v", err)
	}
	if n, _, err := s.Count(ctxT(t), app); err != nil || n != int64(len(events)) {
		t.Fatalf("Count: %d, %v; want %d", n, err, len(events))
	}
}
