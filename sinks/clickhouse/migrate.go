package clickhouse

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"strings"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// VersionTable records the applied migrations.
const VersionTable = "goose_db_version"

// Migrate applies the migrations in migrations/ that the database named by dsn has not had
// yet, with goose. Running it again is a no-op; two nodes running it at once is safe because
// every migration is idempotent (IF NOT EXISTS, or ADD COLUMN as migrationConn runs it) and the
// version table tolerates duplicate rows.
//
// goose runs the migration statements over database/sql (clickhouse.Connector), outside
// transactions (ClickHouse has none). Its built-in ClickHouse dialect records versions with
// `INSERT … VALUES`, which hangs on 18.16, and deletes them with a mutation setting 18.16 lacks,
// so versions are kept by versionStore below instead. 18.16 also lacks ADD COLUMN IF NOT EXISTS,
// so migrationConn gives a plain ADD COLUMN that meaning.
func Migrate(ctx context.Context, dsn string) error {
	p, closeAll, err := newProvider(dsn)
	if err != nil {
		return err
	}
	defer closeAll()
	// ClickHouse has no locks to serialise nodes that migrate at the same start: one can see
	// the version table created but not yet holding its first row ("missing zero version").
	// Every step tolerates being applied twice, so a few retries settle the race.
	const attempts = 5
	var upErr error
	for attempt := 1; attempt <= attempts; attempt++ {
		if _, upErr = p.Up(ctx); upErr == nil {
			return nil
		}
		if attempt == attempts {
			break // no wait after the last: the caller decides when to come back
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("clickhouse migrate: %w", upErr)
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	return fmt.Errorf("clickhouse migrate: %w", upErr)
}

// newProvider is the goose provider Migrate runs; closeAll closes its connections.
func newProvider(dsn string) (p *goose.Provider, closeAll func(), err error) {
	opts, err := options(dsn, DefaultQueryTimeout)
	if err != nil {
		return nil, nil, err
	}
	conn, err := ch.Open(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("clickhouse migrate: open: %w", err)
	}
	db := sql.OpenDB(migrationConnector{Connector: ch.Connector(opts), native: conn})
	closeAll = func() {
		_ = db.Close()
		_ = conn.Close()
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err == nil {
		p, err = goose.NewProvider(goose.DialectCustom, db, sub,
			goose.WithStore(versionStore{conn: conn}),
			goose.WithIsolateDDL(true), // no transactions: ClickHouse has none
			goose.WithDisableGlobalRegistry(true),
			goose.WithSlog(slog.Default()),
		)
	}
	if err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("clickhouse migrate: %w", err)
	}
	return p, closeAll, nil
}

// versionStore is goose's version table for ClickHouse 18.16 and later, written through the
// native connection with PrepareBatch. It is append-only: a down migration appends
// is_applied = 0 rather than deleting (mutations are asynchronous on 18.16), and a version's
// state is its latest row by tstamp (Unix nanoseconds).
type versionStore struct {
	conn driver.Conn
}

var _ database.Store = versionStore{}

func (versionStore) Tablename() string { return VersionTable }

func (v versionStore) CreateVersionTable(ctx context.Context, _ database.DBTxConn) error {
	return v.conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+VersionTable+` (
		version_id Int64,
		is_applied UInt8,
		tstamp Int64
	) ENGINE = MergeTree() ORDER BY (version_id, tstamp)`)
}

// TableExists lets goose skip creating the table (goose finds the method by interface check).
func (v versionStore) TableExists(ctx context.Context, _ database.DBTxConn) (bool, error) {
	var n uint64
	err := v.conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = ?",
		VersionTable).Scan(&n)
	return n > 0, err
}

func (v versionStore) record(ctx context.Context, version int64, applied uint8) error {
	b, err := v.conn.PrepareBatch(ctx, "INSERT INTO "+VersionTable+" (version_id, is_applied, tstamp)")
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.Append(version, applied, time.Now().UnixNano()); err != nil {
		return err
	}
	return b.Send()
}

func (v versionStore) Insert(ctx context.Context, _ database.DBTxConn, req database.InsertRequest) error {
	return v.record(ctx, req.Version, 1)
}

func (v versionStore) Delete(ctx context.Context, _ database.DBTxConn, version int64) error {
	return v.record(ctx, version, 0)
}

func (v versionStore) GetMigration(ctx context.Context, _ database.DBTxConn, version int64) (*database.GetMigrationResult, error) {
	var ts int64
	var applied uint8
	err := v.conn.QueryRow(ctx, "SELECT tstamp, is_applied FROM "+VersionTable+
		" WHERE version_id = ? ORDER BY tstamp DESC LIMIT 1", version).Scan(&ts, &applied)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && applied == 0) {
		return nil, fmt.Errorf("%w: %d", database.ErrVersionNotFound, version)
	}
	if err != nil {
		return nil, err
	}
	return &database.GetMigrationResult{Timestamp: time.Unix(0, ts).UTC(), IsApplied: true}, nil
}

// applied lists the versions whose latest row says applied, newest first.
const applied = "SELECT version_id FROM (SELECT version_id, argMax(is_applied, tstamp) AS applied FROM " +
	VersionTable + " GROUP BY version_id) WHERE applied = 1 ORDER BY version_id DESC"

func (v versionStore) GetLatestVersion(ctx context.Context, _ database.DBTxConn) (int64, error) {
	var version int64
	err := v.conn.QueryRow(ctx, applied+" LIMIT 1").Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, database.ErrVersionNotFound
	}
	return version, err
}

func (v versionStore) ListMigrations(ctx context.Context, _ database.DBTxConn) ([]*database.ListMigrationsResult, error) {
	rows, err := v.conn.Query(ctx, applied)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*database.ListMigrationsResult
	for rows.Next() {
		var version int64
		if err := rows.Scan(&version); err != nil {
			return nil, err
		}
		out = append(out, &database.ListMigrationsResult{Version: version, IsApplied: true})
	}
	return out, rows.Err()
}

// addColumnStmt matches the one ALTER form migrations use to add a column:
// ALTER TABLE <table> ADD COLUMN <column> <type> [AFTER <column>].
var addColumnStmt = regexp.MustCompile(`(?is)^\s*ALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(\w+)\s+(.+?)(?:\s+AFTER\s+\w+)?\s*;?\s*$`)

// migrationConnector opens migrationConns: database/sql connections for goose's statements.
type migrationConnector struct {
	sqldriver.Connector
	native driver.Conn // for looking columns up
}

// stdConn is what clickhouse-go's database/sql connection implements; migrationConn keeps all of
// it so database/sql treats the wrapped connection as it would the driver's own.
type stdConn interface {
	sqldriver.Conn
	sqldriver.ConnBeginTx
	sqldriver.ConnPrepareContext
	sqldriver.ExecerContext
	sqldriver.QueryerContext
	sqldriver.Pinger
	sqldriver.SessionResetter
	sqldriver.NamedValueChecker
}

func (c migrationConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(stdConn)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("clickhouse migrate: driver connection %T lacks the database/sql interfaces it had", conn)
	}
	return migrationConn{stdConn: sc, native: c.native}, nil
}

// migrationConn makes `ALTER TABLE t ADD COLUMN c T` idempotent, as IF NOT EXISTS would on
// current releases: when the ALTER fails and the column is there with type T, another node (or an
// earlier run that stopped half way) added it, and the statement has done its job. Two nodes
// migrating at once both run a new migration; without this the second fails on its first column.
type migrationConn struct {
	stdConn
	native driver.Conn
}

func (c migrationConn) ExecContext(ctx context.Context, query string, args []sqldriver.NamedValue) (sqldriver.Result, error) {
	res, err := c.stdConn.ExecContext(ctx, query, args)
	m := addColumnStmt.FindStringSubmatch(query)
	if err == nil || m == nil {
		return res, err
	}
	table, column, want := m[1], m[2], m[3]
	var have string
	qerr := c.native.QueryRow(ctx, "SELECT type FROM system.columns WHERE database = currentDatabase() AND table = ? AND name = ?",
		table, column).Scan(&have)
	switch {
	case errors.Is(qerr, sql.ErrNoRows):
		return nil, err
	case qerr != nil:
		return nil, fmt.Errorf("%w (and looking the column up failed: %v)", err, qerr)
	case !sameType(have, want):
		return nil, fmt.Errorf("%w: %s.%s exists as %s, the migration adds it as %s", err, table, column, have, want)
	}
	return sqldriver.RowsAffected(0), nil
}

// sameType compares type names as ClickHouse prints them and as a migration may space them.
func sameType(a, b string) bool {
	return strings.Join(strings.Fields(a), "") == strings.Join(strings.Fields(b), "")
}
