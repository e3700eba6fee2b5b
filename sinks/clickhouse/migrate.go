package clickhouse

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
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
// every migration is idempotent (IF NOT EXISTS) and the version table tolerates duplicate rows.
//
// goose runs the migration statements over database/sql (clickhouse.OpenDB), outside
// transactions (ClickHouse has none). Its built-in ClickHouse dialect records versions with
// `INSERT … VALUES`, which hangs on 18.16, and deletes them with a mutation setting 18.16 lacks,
// so versions are kept by versionStore below instead.
func Migrate(ctx context.Context, dsn string) error {
	opts, err := options(dsn)
	if err != nil {
		return err
	}
	conn, err := ch.Open(opts)
	if err != nil {
		return fmt.Errorf("clickhouse migrate: open: %w", err)
	}
	defer conn.Close()
	db := ch.OpenDB(opts)
	defer db.Close()
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("clickhouse migrate: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectCustom, db, sub,
		goose.WithStore(versionStore{conn: conn}),
		goose.WithIsolateDDL(true), // no transactions: ClickHouse has none
		goose.WithDisableGlobalRegistry(true),
		goose.WithSlog(slog.Default()),
	)
	if err != nil {
		return fmt.Errorf("clickhouse migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("clickhouse migrate: %w", err)
	}
	return nil
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
