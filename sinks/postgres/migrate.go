package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrations are the schema's versioned steps, applied in order of their number. A file once
// released is never edited; a change is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

// Migrate applies every migration the database at dsn has not applied yet and records each in
// goose's version table, so running it again changes nothing. Several nodes may start at once:
// a Postgres advisory lock lets one migrate while the others wait (up to 5 minutes).
func Migrate(ctx context.Context, dsn string) error {
	db, err := openSQL(dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := newProvider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return nil
}

// MigrateUntilDone retries Migrate every retry until it succeeds or ctx ends, logging each
// failure; the node runs it in the background when PostgreSQL is down at start.
func MigrateUntilDone(ctx context.Context, dsn string, retry time.Duration, log *slog.Logger) error {
	for {
		actx, cancel := context.WithTimeout(ctx, time.Minute) // a frozen server must not hold it forever
		err := Migrate(actx, dsn)
		cancel()
		if err == nil {
			log.Info("postgres migrated; the metadata store is available")
			return nil
		}
		log.Warn("postgres migrations not applied yet; retrying", "error", err.Error(), "retry_in", retry.String())
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres migrate: %w", ctx.Err())
		case <-time.After(retry):
		}
	}
}

// openSQL opens a database/sql handle through pgx's stdlib driver, which goose needs.
func openSQL(dsn string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse dsn: %w", err)
	}
	return stdlib.OpenDB(*cfg), nil
}

func newProvider(db *sql.DB) (*goose.Provider, error) {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, fmt.Errorf("postgres: migrations: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, fmt.Errorf("postgres: migration lock: %w", err)
	}
	// Our migrations are all SQL files; the global registry would pick up Go migrations other
	// packages register with goose.
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("postgres: migrations: %w", err)
	}
	return p, nil
}
