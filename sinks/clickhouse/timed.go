package clickhouse

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/svc-dev/svc/sinks"
)

// timedConn is the connection every Store method uses. It gives each call a deadline
// (Options.Timeout for inserts, statements and pings, Options.QueryTimeout for queries; the
// caller's when it is earlier), refuses calls while the schema is not migrated yet, and
// turns every failure to reach the server into sinks.ErrUnavailable of the event store, so a
// frozen or stopped ClickHouse is an error in seconds that callers answer with 503.
//
// A call's deadline covers its whole life: a query's until its rows are closed, an insert's from
// PrepareBatch to Send (a block being sent when it passes ends at its write's deadline).
type timedConn struct {
	driver.Conn
	s *Store
}

// call starts one call with a deadline of d, or says why it may not run.
func (c timedConn) call(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc, error) {
	if err := c.s.schemaErr(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, nil
}

func (c timedConn) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	ctx, cancel, err := c.call(ctx, c.s.opts.QueryTimeout)
	if err != nil {
		return nil, err
	}
	rows, err := c.Conn.Query(ctx, query, args...)
	if err != nil {
		cancel()
		return nil, unavailable(err)
	}
	return timedRows{Rows: rows, cancel: cancel}, nil
}

func (c timedConn) QueryRow(ctx context.Context, query string, args ...any) driver.Row {
	ctx, cancel, err := c.call(ctx, c.s.opts.QueryTimeout)
	if err != nil {
		return errRow{err}
	}
	return timedRow{Row: c.Conn.QueryRow(ctx, query, args...), cancel: cancel}
}

func (c timedConn) Select(ctx context.Context, dest any, query string, args ...any) error {
	ctx, cancel, err := c.call(ctx, c.s.opts.QueryTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	return unavailable(c.Conn.Select(ctx, dest, query, args...))
}

func (c timedConn) Exec(ctx context.Context, query string, args ...any) error {
	ctx, cancel, err := c.call(ctx, c.s.opts.Timeout)
	if err != nil {
		return err
	}
	defer cancel()
	return unavailable(c.Conn.Exec(ctx, query, args...))
}

// PrepareBatch gives the driver a context that ends only while one of the batch's calls runs.
// The driver's Send watches its context in a goroutine that closes the connection's socket
// when the context ends, and returns without waiting for that goroutine. A context that ended
// right after Send (a deferred cancel, or the caller's context) could let that goroutine close
// the socket of a connection already back in the pool, and the next call on it failed with
// "use of closed network connection" (TestBatchContextOutlivesSend). So the batch's deadline
// and the caller's end cancel the driver's context only until Send, Abort or Close returns.
// Nothing else holds that context: it needs no cancel of its own afterwards. (One window is
// left, inside the driver: an end that comes after Send's last write but before it returns.)
// The driver's context has no deadline of its own, so the driver's socket deadlines are its
// ReadTimeout (Options.Timeout) rather than the caller's deadline.
func (c timedConn) PrepareBatch(ctx context.Context, query string, opts ...driver.PrepareBatchOption) (driver.Batch, error) {
	if err := c.s.schemaErr(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable(err)
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	until := c.s.opts.Timeout
	if d, ok := ctx.Deadline(); ok {
		until = min(until, time.Until(d))
	}
	w := &batchWatch{ctx: bctx, cancel: cancel}
	w.timer = time.AfterFunc(until, w.end)
	w.stopParent = context.AfterFunc(ctx, w.end)
	b, err := c.Conn.PrepareBatch(bctx, query, opts...)
	if err != nil {
		w.done()
		cancel() // no Send ran: nothing watches bctx
		return nil, unavailable(err)
	}
	return timedBatch{Batch: b, w: w}, nil
}

// batchWatch ends a batch's driver context on its deadline or the caller's end, until done
// (see PrepareBatch). A timer or AfterFunc callback already under way when done stops them
// finds finished set, so nothing ends the context once done has returned.
type batchWatch struct {
	ctx        context.Context // the driver's context, which end cancels
	mu         sync.Mutex
	finished   bool
	cancel     context.CancelFunc
	timer      *time.Timer
	stopParent func() bool
}

func (w *batchWatch) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.finished {
		w.cancel()
	}
}

func (w *batchWatch) done() {
	w.mu.Lock()
	w.finished = true
	w.mu.Unlock()
	w.timer.Stop()
	w.stopParent()
}

// Ping answers whether the server answers within the timeout, whatever the schema's state.
func (c timedConn) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.s.opts.Timeout)
	defer cancel()
	return unavailable(c.Conn.Ping(ctx))
}

type timedRows struct {
	driver.Rows
	cancel context.CancelFunc
}

func (r timedRows) Close() error {
	defer r.cancel()
	return unavailable(r.Rows.Close())
}

func (r timedRows) Err() error             { return unavailable(r.Rows.Err()) }
func (r timedRows) Scan(dest ...any) error { return unavailable(r.Rows.Scan(dest...)) }

type timedRow struct {
	driver.Row
	cancel context.CancelFunc
}

func (r timedRow) Err() error { return unavailable(r.Row.Err()) }

func (r timedRow) Scan(dest ...any) error {
	defer r.cancel()
	return unavailable(r.Row.Scan(dest...))
}

func (r timedRow) ScanStruct(dest any) error {
	defer r.cancel()
	return unavailable(r.Row.ScanStruct(dest))
}

// errRow is the row of a query that could not start.
type errRow struct{ err error }

func (r errRow) Err() error           { return r.err }
func (r errRow) Scan(...any) error    { return r.err }
func (r errRow) ScanStruct(any) error { return r.err }

type timedBatch struct {
	driver.Batch
	w *batchWatch
}

func (b timedBatch) Send() error {
	defer b.w.done()
	return unavailable(b.Batch.Send())
}

// Flush sends the block appended so far, unless the batch's deadline has passed or its caller
// has ended. The driver does not watch the batch's context while it sends the block: a frozen
// server is noticed by the connection's write deadline (dial.go), so an INSERT of several
// blocks ends at most one write's timeout past its own deadline.
func (b timedBatch) Flush() error {
	if err := b.w.ctx.Err(); err != nil {
		return unavailable(err)
	}
	return unavailable(b.Batch.Flush())
}

func (b timedBatch) Abort() error {
	defer b.w.done()
	return b.Batch.Abort()
}

func (b timedBatch) Close() error {
	defer b.w.done()
	return b.Batch.Close()
}

// unavailable wraps err as the event store's sinks.ErrUnavailable when it says the server could
// not be reached or did not answer in time (a refused or broken connection, a deadline). Errors
// the server answered with (exceptions) and sql.ErrNoRows stay as they are.
func unavailable(err error) error {
	if err == nil || errors.Is(err, sinks.ErrUnavailable) || errors.Is(err, sql.ErrNoRows) {
		return err
	}
	var ex *ch.Exception
	if errors.As(err, &ex) {
		return err
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled),
		errors.Is(err, ch.ErrAcquireConnTimeout),
		errors.Is(err, sqldriver.ErrBadConn),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE):
		return sinks.Unavailable(sinks.StoreEvents, err)
	}
	return err
}

// Default deadlines of calls to ClickHouse (Options). Measured on a 2-core machine running svc's
// tests and ClickHouse 18.16 (TestInsertTiming): one INSERT of 50,000 realistic events takes
// 0.4–1.3 s (the first into a new table the longest), 50,000 spans 0.4–0.6 s. 5 s leaves four
// times the slowest and still sees a frozen server in seconds. Dashboard queries scan more and
// get longer (a dashboard request ends sooner, with its own deadline; rebuilding an app's
// aggregates at start scans all its data).
const (
	DefaultTimeout      = 5 * time.Second
	DefaultQueryTimeout = 5 * time.Minute
)
