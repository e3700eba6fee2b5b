// Package postgres is the production sinks.MetaStore on PostgreSQL (pgx v5). The schema lives
// in versioned migrations (Migrate); the database enforces uniqueness, references and the rule
// of one active API key per app. Methods that check before they change (last owner, key
// rotation, refresh-token rotation) lock the row they depend on with SELECT … FOR UPDATE in a
// transaction, so concurrent calls queue behind each other and each sees the other's result.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Store is the Postgres MetaStore.
type Store struct {
	pool        *pgxpool.Pool
	callTimeout time.Duration
	// access keeps SessionAppRole's admitted answers (accesscache.go); nil unless
	// Options.AccessCache. stopListen ends its listener, listened says it has ended.
	access     *sinks.AccessCache
	stopListen context.CancelFunc
	listened   chan struct{}
}

// Options tune a Store.
type Options struct {
	// CallTimeout bounds every method call (waiting for a pooled connection, connecting, the
	// queries and the commit), so a frozen server is noticed in seconds rather than when the
	// kernel gives up on the connection; 0 means DefaultCallTimeout. A call that runs out of it
	// returns sinks.ErrUnavailable.
	CallTimeout time.Duration
	// AccessCache keeps the answers of SessionAppRole that admit a request in memory while a
	// connection of its own listens for changes to them (accesscache.go): the dashboard's sign-in
	// check then costs no round trip. Close ends the listener.
	AccessCache bool
	// Logger says when the access cache's listener loses its connection; nil logs nothing.
	Logger *slog.Logger
}

// DefaultCallTimeout is the CallTimeout of Open.
const DefaultCallTimeout = 5 * time.Second

var _ sinks.MetaStore = (*Store)(nil)

// Open connects to the database at dsn (a postgres:// URL or key=value string) and checks it
// answers. It does not migrate: call Migrate first.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenWith(ctx, dsn, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, dsn string, o Options) (*Store, error) {
	s, err := New(dsn, o)
	if err != nil {
		return nil, err
	}
	if err := s.Ping(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	return s, nil
}

// New is OpenWith without the check that the server answers: the pool connects on first use,
// so a node can start while PostgreSQL is down (its calls fail as unavailable until it answers).
func New(dsn string, o Options) (*Store, error) {
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err) // pgx leaves the password out
	}
	// A connection attempt to a frozen server must not outlast a call.
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > o.CallTimeout {
		cfg.ConnConfig.ConnectTimeout = o.CallTimeout
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s := &Store{pool: pool, callTimeout: o.CallTimeout}
	if o.AccessCache {
		ctx, stop := context.WithCancel(context.Background())
		s.access, s.stopListen, s.listened = sinks.NewAccessCache(accessTTL, false), stop, make(chan struct{})
		go func() { // ends when Close cancels ctx
			defer close(s.listened)
			s.listen(ctx, o.Logger)
		}()
	}
	return s, nil
}

// deadline bounds one method call by the store's CallTimeout (a shorter deadline of ctx wins).
func (s *Store) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.callTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.callTimeout)
}

// Pool is the store's connection pool, for other Postgres-backed stores sharing the database.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return fail("ping", err)
	}
	return nil
}

// Close ends the access cache's listener and closes the pool, waiting for connections in use
// to be returned.
func (s *Store) Close() error {
	if s.stopListen != nil {
		s.stopListen()
		<-s.listened
	}
	s.pool.Close()
	return nil
}

// SQLSTATE codes mapped to the sinks errors.
const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
	checkViolation      = "23514"
)

// fail wraps err with what failed, adding the sinks sentinel it stands for.
func fail(what string, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case unavailable(err):
		return fmt.Errorf("postgres: %s: %w", what, sinks.Unavailable(sinks.StoreMeta, err))
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("postgres: %s: %w", what, sinks.ErrNotFound)
	case errors.As(err, &pgErr) && pgErr.Code == uniqueViolation:
		return fmt.Errorf("postgres: %s: %w: %w", what, sinks.ErrConflict, err)
	case errors.As(err, &pgErr) && pgErr.Code == foreignKeyViolation:
		// Every reference we insert points at a parent that must exist first.
		return fmt.Errorf("postgres: %s: %w: %w", what, sinks.ErrNotFound, err)
	case errors.As(err, &pgErr) && pgErr.Code == checkViolation:
		return fmt.Errorf("postgres: %s: %w: %w", what, sinks.ErrInvalid, err)
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

// unavailable tells "the server did not answer" (it could not be reached, the connection broke,
// the call's deadline passed, or the server is shutting down or out of connections) from every
// answer the server gave.
func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08 connection exceptions, 57P01-57P03 admin/crash shutdown and cannot connect
		// now, 53300 too many connections, 42P01 no such table (a node that started while the
		// server was down has not migrated it yet).
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P") || pgErr.Code == "53300" ||
			pgErr.Code == "42P01"
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	var opErr *net.OpError
	return errors.As(err, &connErr) || errors.As(err, &netErr) || errors.As(err, &opErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err)
}

// notFound is ErrNotFound naming what.
func notFound(what string) error { return fmt.Errorf("postgres: %s: %w", what, sinks.ErrNotFound) }

// inTx runs fn in a transaction that commits when fn returns nil. Errors of fn come back as
// they are; errors of begin and commit are wrapped with what.
func (s *Store) inTx(ctx context.Context, what string, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fail(what, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fail(what, err)
	}
	return nil
}

// exec runs one statement and returns the rows it touched.
func exec(ctx context.Context, q querier, what, sql string, args ...any) (int64, error) {
	tag, err := q.Exec(ctx, sql, args...)
	if err != nil {
		return 0, fail(what, err)
	}
	return tag.RowsAffected(), nil
}

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// exists reports whether the query returns a row.
func exists(ctx context.Context, q querier, what, sql string, args ...any) (bool, error) {
	var ok bool
	if err := q.QueryRow(ctx, "SELECT EXISTS ("+sql+")", args...).Scan(&ok); err != nil {
		return false, fail(what, err)
	}
	return ok, nil
}

// nullTime stores a zero time as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// utcOrZero turns a scanned nullable time into a UTC time, zero for NULL.
func utcOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// retention returns the days to store for an app; 0 means the default when allowZero.
func retention(days int, allowZero bool) (int, error) {
	if days == 0 && allowZero {
		return model.DefaultRetentionDays, nil
	}
	if days < 30 || days > 365 {
		return 0, fmt.Errorf("postgres: retention of %d days is outside 30..365: %w", days, sinks.ErrInvalid)
	}
	return days, nil
}
