package clickhouse

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/svc-dev/svc/sinks"
)

// ctxRecorder is the driver's connection, remembering the context of the last PrepareBatch.
type ctxRecorder struct {
	driver.Conn
	got context.Context
}

func (r *ctxRecorder) PrepareBatch(ctx context.Context, query string, opts ...driver.PrepareBatchOption) (driver.Batch, error) {
	r.got = ctx
	return r.Conn.PrepareBatch(ctx, query, opts...)
}

// driverDone waits until the context rec's last batch got has ended.
func driverDone(t *testing.T, rec *ctxRecorder) {
	t.Helper()
	select {
	case <-rec.got.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the driver's context did not end within 30 s")
	}
}

// zzTable creates a small table of its own for the batch tests.
func zzTable(t *testing.T, s *Store) string {
	t.Helper()
	if err := s.conn.Exec(ctxT(t), "CREATE TABLE batch_ctx (x UInt64) ENGINE = Memory"); err != nil {
		t.Fatal(err)
	}
	return "INSERT INTO batch_ctx (x)"
}

// The context a batch gives the driver stays live once Send has returned, whatever happens to
// the caller's context and the deadline afterwards: the driver's Send leaves behind a goroutine
// that closes the connection, by then back in the pool, when that context ends. Until Send
// returns, the caller's end and the deadline both end it.
func TestBatchContextOutlivesSend(t *testing.T) {
	s := migrated(t)
	insert := zzTable(t, s)
	s.opts.Timeout = 2 * time.Second // long enough for a loaded machine's insert of one row
	rec := &ctxRecorder{Conn: s.raw}
	c := timedConn{Conn: rec, s: s}

	tests := []struct {
		name    string
		before  func(t *testing.T, cancel context.CancelFunc) // between PrepareBatch and Send
		sendErr bool
	}{
		{"sent, then the caller's context ends and the deadline passes", func(*testing.T, context.CancelFunc) {}, false},
		{"the caller's context ends before Send", func(t *testing.T, cancel context.CancelFunc) { cancel(); driverDone(t, rec) }, true},
		{"the deadline passes before Send", func(t *testing.T, _ context.CancelFunc) { driverDone(t, rec) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b, err := c.PrepareBatch(ctx, insert)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.Append(uint64(1)); err != nil {
				t.Fatal(err)
			}
			tc.before(t, cancel)
			err = b.Send()
			if tc.sendErr {
				if err == nil || !errors.Is(err, sinks.ErrUnavailable) {
					t.Fatalf("Send = %v, want the event store unavailable", err)
				}
				if rec.got.Err() == nil {
					t.Fatal("the driver's context is live after the caller's end or the deadline, before Send")
				}
				return
			}
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			cancel()
			time.Sleep(2 * s.opts.Timeout)
			if err := rec.got.Err(); err != nil {
				t.Fatalf("the driver's context ended after Send returned: %v", err)
			}
		})
	}
}

// Many small inserts and queries at once on a busy machine: no call may fail because an
// earlier batch's Send closed the connection it was handed from the pool (before the fix, 7 %
// of calls in 20 s of this load failed with "use of closed network connection").
func TestBatchesUnderLoadKeepConnections(t *testing.T) {
	s := migrated(t)
	insert := zzTable(t, s)
	ctx := ctxT(t)
	var ops, failed atomic.Int64
	var first atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	run := func(call func() error) {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := call(); err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err.Error())
				}
				ops.Add(1)
			}
		})
	}
	for range 4 {
		run(func() error {
			b, err := s.conn.PrepareBatch(ctx, insert)
			if err != nil {
				return err
			}
			defer b.Close()
			if err := b.Append(uint64(1)); err != nil {
				return err
			}
			return b.Send()
		})
		run(func() error {
			var n uint64
			return s.conn.QueryRow(ctx, "SELECT count() FROM batch_ctx").Scan(&n)
		})
		run(func() error { // keeps the cores busy, so goroutines wait to be scheduled
			x := 0
			for i := range 1_000_000 {
				x += i
			}
			if x < 0 {
				return errors.New("overflow")
			}
			return nil
		})
	}
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		msg, _ := first.Load().(string)
		t.Fatalf("%d of %d calls failed; the first: %s (closed connection: %v)", n, ops.Load(), msg,
			strings.Contains(msg, "closed network connection"))
	}
}
