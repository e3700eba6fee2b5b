// Package badgerdb opens the Badger databases a node keeps in its data directory. The embedded
// backends use them under their own key prefixes: metadata (and, in data directories written
// before the split, events) in the main one; events and spans in their own, because the
// flusher's large synced commits make every read of the same database wait (Badger's read
// timestamps wait for commits in flight); the request gate and actor snapshots in an unsynced
// local one, read on every request.
package badgerdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Key prefixes of the embedded backends. A prefix is never a prefix of another.
const (
	PrefixEvents = "ev/"
	PrefixSpans  = "sp/"
	PrefixMeta   = "md/"
	PrefixGate   = "rq/"
	PrefixSpool  = "wal/"
	PrefixActor  = "ac/"
	PrefixBlob   = "bl/"
)

// Open opens (creating when needed) the database in dir; an empty dir opens an in-memory
// database, for unit tests. Options are tuned for a small footprint: the defaults take ~340 MB
// for a million small keys, these ~130 MB (docs/architecture.md, "Dependency traps").
//
// Writes are synced: a committed transaction is durable. Badger groups concurrent commits into
// one sync, and the bulk ingest path does not commit per request (it appends to the spool, a
// plain file with group fdatasync), so the ~750 µs a sync costs is paid per flush, not per event.
// Unsynced writes with db.Sync() would not be enough: Sync covers only the active memtable's log,
// not one that rotated out just before (docs/architecture.md, "Dependency traps").
func Open(dir string, logger *slog.Logger) (*badger.DB, error) {
	return open(dir, logger, tuning{sync: true, valueThreshold: 1 << 10})
}

// OpenEvents is Open for the embedded event store's database. Its values (event rows, their
// index copies, journey walks) go to the value log from EventsValueThreshold bytes on: written
// there once, while the LSM tree, which compactions rewrite several times over, keeps only keys
// and 12-byte pointers. It took the store's writes of 3M recorded-shape rows from 61k to 91-100k
// rows/s (docs/benchmarks.md). Deleted and overwritten values stay in the value log until
// CollectGarbage rewrites the files they fill.
//
// Its level 0 compacts into a base level of EventsBaseLevelSize rather than Badger's 10 MB.
// Every level 0 table spanned both the rows' keys and the id index's (when every row had an
// index entry; since 2026-11-30 only bug reports do), so each such compaction rewrote the whole
// base level; the smaller one overflowed at each of them, and the keys went through one more
// level at the sizes measured. Writing 2M recorded-shape rows took 20 % less
// of the process's CPU, flushes and compactions included, at 64 MB; 32, 128 and 256 MB saved
// less in the runs measured (docs/benchmarks.md). A database written with the smaller base
// keeps its extra level, now at the larger target: Badger compacts level 0 into the first level
// that holds tables.
func OpenEvents(dir string, logger *slog.Logger) (*badger.DB, error) {
	return open(dir, logger, tuning{sync: true, valueThreshold: EventsValueThreshold, baseLevelSize: EventsBaseLevelSize})
}

// EventsBaseLevelSize is the target size of the events database's base level (see OpenEvents).
const EventsBaseLevelSize = 64 << 20

// EventsValueThreshold is the longest value OpenEvents keeps in the LSM tree: index entries and
// small facts stay there, rows move to the value log.
const EventsValueThreshold = 128

// OpenLocal opens a database whose writes are not synced: a commit survives the process being
// killed (the kernel holds its pages) but not a power loss. It is for what svc can lose on a
// power loss: request ids of the gate (the spool replays its records and marks them again; the
// event stores deduplicate events by id) and passivated actors' snapshots (a cache). Reads then
// never wait for a disk sync of another request's commit.
func OpenLocal(dir string, logger *slog.Logger) (*badger.DB, error) {
	return open(dir, logger, tuning{valueThreshold: 1 << 10})
}

// valueLogFileSize bounds each value log file. Garbage collection rewrites a whole file and never
// the one being written, so smaller files free space sooner; Badger's default is 1 GiB. A
// variable so that a test can see files collected without writing hundreds of megabytes.
var valueLogFileSize int64 = 256 << 20

// tuning is what differs between the node's databases.
type tuning struct {
	sync           bool  // SyncWrites
	valueThreshold int64 // values from this size on go to the value log
	baseLevelSize  int64 // 0: Badger's default
}

func open(dir string, logger *slog.Logger, t tuning) (*badger.DB, error) {
	opts := badger.DefaultOptions(dir).
		WithMemTableSize(16 << 20).
		WithNumMemtables(3).
		WithBlockCacheSize(32 << 20).
		WithIndexCacheSize(16 << 20).
		WithValueThreshold(t.valueThreshold).
		WithValueLogFileSize(valueLogFileSize).
		WithNumCompactors(2).
		WithSyncWrites(t.sync).
		WithLogger(slogAdapter{logger})
	if t.baseLevelSize > 0 {
		opts = opts.WithBaseLevelSize(t.baseLevelSize)
	}
	if dir == "" {
		// In memory there is no value log: every value must fit in the LSM tree.
		opts = opts.WithInMemory(true).WithValueThreshold(1 << 20)
	}
	db, err := badger.Open(opts)
	if err != nil && dir != "" && strings.Contains(err.Error(), z.NewFile.Error()) {
		// A process killed between creating a memtable's log file and sizing it leaves the file
		// empty, and Badger (v4.9) then refuses to open: it reads the file as new and takes that
		// for an error. An empty log holds no entry, so it is removed and the open tried again.
		// The error comes after Badger took the directory lock, so no other process uses it.
		if n := removeEmptyMemtables(dir); n > 0 {
			if logger != nil {
				logger.Warn("removed empty memtable logs left by a killed process", "dir", dir, "files", n)
			}
			db, err = badger.Open(opts)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open badger in %q: %w", dir, err)
	}
	return db, nil
}

// LogDirs are the directories of dbs' logs as the kernel names mapped files (absolute, symbolic
// links resolved), each once, for NewLogPager; in-memory databases have none. Badger keeps the
// directories it was given, and the node's default data directory is relative (./data).
func LogDirs(dbs ...*badger.DB) ([]string, error) {
	var dirs []string
	for _, db := range dbs {
		o := db.Opts()
		if o.InMemory {
			continue
		}
		for _, d := range []string{o.Dir, o.ValueDir} {
			abs, err := filepath.Abs(d)
			if err == nil {
				abs, err = filepath.EvalSymlinks(abs)
			}
			if err != nil {
				return nil, fmt.Errorf("log directory %q: %w", d, err)
			}
			dirs = append(dirs, abs)
		}
	}
	slices.Sort(dirs)
	return slices.Compact(dirs), nil
}

// removeEmptyMemtables deletes the zero-length memtable logs (*.mem) of dir and says how many.
func removeEmptyMemtables(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	n := 0
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Size() == 0 && os.Remove(f) == nil {
			n++
		}
	}
	return n
}

// CollectGarbage frees the space of deleted and overwritten values in db's value log: Badger
// rewrites the live values of each file at least half of whose bytes compactions found dropped,
// then removes the file. It returns how many files were rewritten, and stops early when ctx
// ends. Badger answers one collection at a time per database; one already running, or an
// in-memory database, is nothing to do.
func CollectGarbage(ctx context.Context, db *badger.DB) (int, error) {
	files := 0
	for {
		if err := ctx.Err(); err != nil {
			return files, err
		}
		err := db.RunValueLogGC(0.5)
		switch {
		case err == nil:
			files++
		case errors.Is(err, badger.ErrNoRewrite), errors.Is(err, badger.ErrRejected), errors.Is(err, badger.ErrGCInMemoryMode):
			return files, nil
		default:
			return files, fmt.Errorf("badger value log gc: %w", err)
		}
	}
}

// HasPrefix says whether db holds any key with the prefix (a data directory's layout check).
func HasPrefix(db *badger.DB, prefix string) (bool, error) {
	found := false
	err := db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues, opts.Prefix = false, []byte(prefix)
		it := txn.NewIterator(opts)
		defer it.Close()
		it.Rewind()
		found = it.Valid()
		return nil
	})
	return found, err
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

// Lookup returns a copy of key's value in db, and false (no error) when key is not there.
func Lookup(db *badger.DB, key []byte) (value []byte, ok bool, err error) {
	err = db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(key)
		if err != nil {
			return err
		}
		value, err = it.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	return value, err == nil, err
}
