// Package clickhouse is the production sinks.EventStore: events and spans in ClickHouse over the
// native protocol (clickhouse-go v2). The schema lives in migrations/ and is applied by Migrate.
//
// Idempotency: the tables are ReplacingMergeTree, whose background merges drop replayed copies
// eventually; until then a replay is a second physical row, so every read dedupes itself (point
// reads take one row, counts are uniqExact over the id). Inserts send every column of a batch
// column-wise in one INSERT, in blocks of blockRows rows (docs/architecture.md, "Dependency
// traps").
package clickhouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"sync/atomic"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// The dial timeout bounds connecting and the handshake, which the driver does not bound by the
// call's context: a frozen server accepts the TCP connection (the kernel does) and then never
// answers.
const defaultDialTimeout = 2 * time.Second

// Options tune a Store; zero values take the defaults.
type Options struct {
	// Timeout bounds every insert, statement and ping (DefaultTimeout).
	Timeout time.Duration
	// QueryTimeout bounds every query, its rows read included (DefaultQueryTimeout).
	QueryTimeout time.Duration
}

// Store is the ClickHouse EventStore. Every call has a deadline (Options), and every failure to
// reach the server is sinks.ErrUnavailable of sinks.StoreEvents.
type Store struct {
	conn driver.Conn // timedConn over raw
	raw  driver.Conn
	dsn  string
	opts Options

	// pending is the reason calls are refused while the schema is not migrated (nil once it is).
	pending atomic.Pointer[error]

	marks     journeyMarks     // the journey marks written lately (journey.go)
	rollups   atomic.Int32     // whether journey rollups are on: 0 not asked yet, rollupsYes, rollupsNo
	lastBuilt atomic.Int64     // the time of this store's latest journey build
	clock     func() time.Time // time.Now; tests move it on
	blockRows int              // rows per block of an INSERT (defaultBlockRows); tests make it small

	// The columns of the last write, kept for the next one: made anew at each flush they were
	// 17 % of the bytes a ClickHouse node allocated flat out (docs/benchmarks.md, "What the
	// embedded node waits on flat out"). Nil after Idle; see keepCols for which are kept.
	spareEvents atomic.Pointer[eventCols]
	spareSpans  atomic.Pointer[spanCols]
}

// spareMaxBytes bounds a column set a Store keeps between writes (its slices' capacity): a
// flat-out flush of the node's (tens of MB), not a bulk load's or one of many attributes per row.
const spareMaxBytes = 64 << 20

// shrinkAfter is how many writes in a row may use less than a quarter of a kept set's rows
// before it is let go, so that a node whose load fell does not keep a flat-out set.
const shrinkAfter = 8

// keepCols puts c back as the next write's set unless it is over spareMaxBytes or has been
// mostly unused for shrinkAfter writes in a row.
func keepCols[T any, P interface {
	*T
	held() (bytes int64, small int)
}](spare *atomic.Pointer[T], c P) {
	if b, small := c.held(); b <= spareMaxBytes && small < shrinkAfter {
		spare.Store(c)
	}
}

// defaultBlockRows is how many rows an INSERT sends per block. The driver builds a block's
// columns by appending to growing buffers, and Go grows a large buffer by a quarter at a time:
// one block of a whole 100k-row batch allocated 703 MiB, blocks of 5,000 rows 155 MiB, their
// buffers reused from block to block (BenchmarkWriteEvents: 617 → 469 ms per 100k rows). The
// server squashes the blocks of one INSERT back into one part (min_insert_block_size_rows and
// _bytes, 1M rows or 256 MiB by default; TestInsertBlocksOnePart), so the table sees one insert
// as before.
const defaultBlockRows = 5000

func (s *Store) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

var _ sinks.EventStore = (*Store)(nil)

// options parses dsn with clickhouse.ParseDSN and fills in our timeouts where it has none.
func options(dsn string, timeout time.Duration) (*ch.Options, error) {
	opts, err := ch.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: parse DSN: %w", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: parse DSN: %w", err)
	}
	q := u.Query()
	if !q.Has("dial_timeout") {
		opts.DialTimeout = min(defaultDialTimeout, timeout)
	}
	if !q.Has("read_timeout") {
		opts.ReadTimeout = timeout
	}
	opts.DialContext = dialer(opts, timeout)
	return opts, nil
}

// Open connects to the ClickHouse database the DSN names and pings it. The schema must have
// been applied with Migrate.
func Open(ctx context.Context, dsn string) (*Store, error) {
	s, err := New(dsn, Options{})
	if err != nil {
		return nil, err
	}
	s.pending.Store(nil)
	if err := s.Ping(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// New returns a store on the database the DSN names without connecting: it works whether or
// not the server answers now. Its calls are refused (sinks.ErrUnavailable) until MigrateOnce or
// MigrateUntilDone has applied the schema.
func New(dsn string, o Options) (*Store, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = DefaultQueryTimeout
	}
	opts, err := options(dsn, o.Timeout)
	if err != nil {
		return nil, err
	}
	raw, err := ch.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: open: %w", err)
	}
	s := &Store{raw: raw, dsn: dsn, opts: o, blockRows: defaultBlockRows}
	s.conn = timedConn{Conn: raw, s: s}
	notYet := errors.New("the schema is not migrated yet")
	s.pending.Store(&notYet)
	return s, nil
}

// schemaErr is why calls are refused now, or nil.
func (s *Store) schemaErr() error {
	if p := s.pending.Load(); p != nil {
		return sinks.Unavailable(sinks.StoreEvents, *p)
	}
	return nil
}

// MigrateOnce applies the migrations (Migrate) within the store's timeout per step and, when
// that succeeds, lets calls through.
func (s *Store) MigrateOnce(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*s.opts.Timeout)
	defer cancel()
	if err := Migrate(ctx, s.dsn); err != nil {
		err = unavailable(err)
		s.pending.Store(&err)
		return err
	}
	s.pending.Store(nil)
	return nil
}

// MigrateUntilDone retries MigrateOnce every retry until it succeeds or ctx ends, logging each
// failure; the node runs it in the background when ClickHouse is down at start.
func (s *Store) MigrateUntilDone(ctx context.Context, retry time.Duration, log *slog.Logger) error {
	for {
		err := s.MigrateOnce(ctx)
		if err == nil {
			log.Info("clickhouse migrated; the event store is available")
			return nil
		}
		log.Warn("clickhouse migrations not applied yet; retrying", "error", err.Error(), "retry_in", retry.String())
		select {
		case <-ctx.Done():
			return fmt.Errorf("clickhouse migrate: %w", ctx.Err())
		case <-time.After(retry):
		}
	}
}

// Conn is the underlying connection pool, for queries beyond this interface.
func (s *Store) Conn() driver.Conn { return s.raw }

// insert sends one INSERT of every column of cols, appended column-wise in blocks of
// s.blockRows rows. An INSERT that does not reach its end (an error, a panic) is aborted: Abort
// drops the connection without waiting for a server that may not answer. The blocks the server
// had received may still be stored (18.16 stored them in TestInsertFailedThenRetried), and the
// caller's retry stores them again: a replayed row is read once (see the package doc).
func (s *Store) insert(ctx context.Context, table string, cols []col) error {
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+table+" ("+names(cols, true)+")")
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	sent := false
	defer func() {
		if !sent {
			_ = batch.Abort() // after a failed Send a no-op
		}
	}()
	rows := reflect.ValueOf(cols[0].values).Len()
	for from := 0; from < rows; from += s.blockRows {
		to := min(from+s.blockRows, rows)
		for i, c := range cols {
			v := c.values
			if from > 0 || to < rows {
				v = reflect.ValueOf(v).Slice(from, to).Interface()
			}
			if err := appendColumn(batch.Column(i), v); err != nil {
				return fmt.Errorf("column %s: %w", c.name, err)
			}
		}
		if to < rows {
			if err := batch.Flush(); err != nil {
				return fmt.Errorf("send a block: %w", err)
			}
		}
	}
	err = batch.Send()
	sent = true
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// appendColumn appends a whole column. The driver's Append of an Array column walks the
// slice with reflection and boxes every element (measured: 11 allocations a row for 9 array
// columns); appending each row's typed slice takes its reflection-free path instead, at one
// allocation a row per array column (boxing the row's slice for AppendRow).
func appendColumn(bc driver.BatchColumn, values any) error {
	switch v := values.(type) {
	case [][]string:
		return appendRows(bc, v)
	case [][]uint8:
		return appendRows(bc, v)
	case [][]int64:
		return appendRows(bc, v)
	case [][]uuid.UUID:
		return appendRows(bc, v)
	case []json.RawMessage:
		// The driver's Append copies each value into a string first (an allocation per row, the
		// payload's size); AppendRow of a pointer copies it once, and boxes without allocating.
		for i := range v {
			if err := bc.AppendRow(&v[i]); err != nil {
				return err
			}
		}
		return nil
	}
	return bc.Append(values)
}

func appendRows[T any](bc driver.BatchColumn, rows [][]T) error {
	for _, r := range rows {
		if err := bc.AppendRow(r); err != nil {
			return err
		}
	}
	return nil
}

// WriteEvents stores events in one INSERT; see sinks.EventStore.
func (s *Store) WriteEvents(ctx context.Context, events []model.Event) error {
	if len(events) == 0 {
		return nil
	}
	c := s.spareEvents.Swap(nil) // nil, or no other write holds it
	if c == nil {
		c = new(eventCols)
	}
	err := s.insert(ctx, "events", c.fill(events).cols())
	c.release()
	keepCols(&s.spareEvents, c)
	if err != nil {
		return fmt.Errorf("clickhouse: write %d events: %w", len(events), err)
	}
	// After the insert: a journey build that starts after the mark reads the events.
	return s.markJourneys(ctx, events)
}

// WriteSpans stores spans in one INSERT; see sinks.EventStore.
func (s *Store) WriteSpans(ctx context.Context, spans []model.Span) error {
	if len(spans) == 0 {
		return nil
	}
	c := s.spareSpans.Swap(nil)
	if c == nil {
		c = new(spanCols)
	}
	err := s.insert(ctx, "spans", c.fill(spans).cols())
	c.release()
	keepCols(&s.spareSpans, c)
	if err != nil {
		return fmt.Errorf("clickhouse: write %d spans: %w", len(spans), err)
	}
	return nil
}

// Idle drops the column sets kept for the next write; see sinks.Idler.
func (s *Store) Idle() {
	s.spareEvents.Store(nil)
	s.spareSpans.Store(nil)
}

// queryOne scans the first row of query into cols, or returns sinks.ErrNotFound.
func (s *Store) queryOne(ctx context.Context, cols []col, query string, args ...any) error {
	rows, err := s.conn.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sinks.ErrNotFound
	}
	if err := rows.Scan(scanPtrs(cols)...); err != nil {
		return err
	}
	return rows.Err()
}

// Event returns one stored event; see sinks.EventStore. Copies of a replayed row are identical,
// so any one of them is the row. The filter uses only the sorting key's first column, so this
// reads the app's granules; it is meant for single lookups, not loops.
func (s *Store) Event(ctx context.Context, appID, eventID uuid.UUID) (model.Event, error) {
	c := newEventCols(1, 0, 0)
	cols := c.cols()
	err := s.queryOne(ctx, cols, "SELECT "+names(cols, false)+
		" FROM events WHERE app_id = toUUID(?) AND id = toUUID(?) LIMIT 1", appID, eventID)
	if err != nil {
		return model.Event{}, fmt.Errorf("clickhouse: event %s of app %s: %w", eventID, appID, err)
	}
	return c.get(0), nil
}

// BugReport returns the app's bug report with this id; see sinks.EventStore. The sorting key's
// first two columns (app, type) keep the read to the app's bug report granules.
func (s *Store) BugReport(ctx context.Context, appID, id uuid.UUID) (model.Event, error) {
	c := newEventCols(1, 0, 0)
	cols := c.cols()
	err := s.queryOne(ctx, cols, "SELECT "+names(cols, false)+
		" FROM events WHERE app_id = toUUID(?) AND type = ? AND id = toUUID(?) LIMIT 1", appID, model.BugReportType, id)
	if err != nil {
		return model.Event{}, fmt.Errorf("clickhouse: bug report %s of app %s: %w", id, appID, err)
	}
	return c.get(0), nil
}

// Span returns one stored span; see sinks.EventStore.
func (s *Store) Span(ctx context.Context, appID uuid.UUID, spanID string) (model.Span, error) {
	c := newSpanCols(1, 0, 0)
	cols := c.cols()
	err := s.queryOne(ctx, cols, "SELECT "+names(cols, false)+
		" FROM spans WHERE app_id = toUUID(?) AND span_id = ? LIMIT 1", appID, spanID)
	if err != nil {
		return model.Span{}, fmt.Errorf("clickhouse: span %q of app %s: %w", spanID, appID, err)
	}
	return c.get(0), nil
}

// Count returns how many distinct events and spans of the app are stored. uniqExact keeps it
// exact whether or not merges have dropped replayed copies yet; event ids are counted as text
// (distinctSQL: 18.16's uniqExact of a UUID is quadratic on ids sharing their first 8 bytes, as
// time-ordered UUIDs do).
func (s *Store) Count(ctx context.Context, appID uuid.UUID) (events, spans int64, err error) {
	var ev, sp uint64
	row := s.conn.QueryRow(ctx, "SELECT (SELECT "+distinctSQL("id")+" FROM events WHERE app_id = toUUID(?)),"+
		" (SELECT uniqExact(span_id) FROM spans WHERE app_id = toUUID(?))", appID, appID)
	if err := row.Scan(&ev, &sp); err != nil {
		return 0, 0, fmt.Errorf("clickhouse: count rows of app %s: %w", appID, err)
	}
	return int64(ev), int64(sp), nil
}

// Ping reports whether the server answers within the store's timeout and the schema is
// migrated; both failures are sinks.ErrUnavailable.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("clickhouse: ping: %w", err)
	}
	if err := s.schemaErr(); err != nil {
		return fmt.Errorf("clickhouse: %w", err)
	}
	return nil
}

// Close closes the connection pool.
func (s *Store) Close() error {
	if err := s.raw.Close(); err != nil {
		return fmt.Errorf("clickhouse: close: %w", err)
	}
	return nil
}
