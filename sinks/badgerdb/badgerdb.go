// Package badgerdb opens the one Badger database a node keeps in its data directory. Every
// embedded backend (events, metadata, request gate, spool, actor snapshots) shares it under its
// own key prefix, so a node pays for one set of memtables and caches.
package badgerdb

import (
	"fmt"
	"log/slog"

	"github.com/dgraph-io/badger/v4"
)

// Key prefixes of the embedded backends. A prefix is never a prefix of another.
const (
	PrefixEvents = "ev/"
	PrefixSpans  = "sp/"
	PrefixMeta   = "md/"
	PrefixGate   = "rq/"
	PrefixSpool  = "wal/"
	PrefixActor  = "ac/"
)

// Open opens (creating when needed) the database in dir; an empty dir opens an in-memory
// database, for unit tests. Options are tuned for a small footprint: the defaults take ~340 MB
// for a million small keys, these ~130 MB (DESIGN.md §8).
//
// Writes are synced: a committed transaction is durable. Badger groups concurrent commits into
// one sync, and the bulk ingest path does not commit per request (it appends to the spool, a
// plain file with group fdatasync), so the ~750 µs a sync costs is paid per flush, not per event.
// Unsynced writes with db.Sync() would not be enough: Sync covers only the active memtable's log,
// not one that rotated out just before (DESIGN.md §8).
func Open(dir string, logger *slog.Logger) (*badger.DB, error) {
	opts := badger.DefaultOptions(dir).
		WithMemTableSize(16 << 20).
		WithNumMemtables(3).
		WithBlockCacheSize(32 << 20).
		WithIndexCacheSize(16 << 20).
		WithValueThreshold(1 << 10).
		WithNumCompactors(2).
		WithSyncWrites(true).
		WithLogger(slogAdapter{logger})
	if dir == "" {
		// In memory there is no value log: every value must fit in the LSM tree.
		opts = opts.WithInMemory(true).WithValueThreshold(1 << 20)
	}
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open badger in %q: %w", dir, err)
	}
	return db, nil
}

// slogAdapter routes Badger's log lines to slog; Badger's info lines are debug for us.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) logger() *slog.Logger {
	if a.l == nil {
		return slog.Default()
	}
	return a.l
}

func (a slogAdapter) Errorf(f string, v ...any) {
	a.logger().Error(fmt.Sprintf(f, v...), "component", "badger")
}
func (a slogAdapter) Warningf(f string, v ...any) {
	a.logger().Warn(fmt.Sprintf(f, v...), "component", "badger")
}
func (a slogAdapter) Infof(f string, v ...any) {
	a.logger().Debug(fmt.Sprintf(f, v...), "component", "badger")
}
func (a slogAdapter) Debugf(f string, v ...any) {
	a.logger().Debug(fmt.Sprintf(f, v...), "component", "badger")
}
