package badgerdb

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Snapshots is the embedded sinks.Snapshots: one key per actor under PrefixActor, expiring by
// Badger's TTL (one-second resolution).
//
// Made by NewSnapshots, it keeps a bloom filter of the identities that may have a snapshot, so
// that loading one that was never saved (every new session's actor) answers without a Badger
// read: a read transaction waits for the database's commits in flight, which put these loads
// among the waits of PUT /events under load (docs/benchmarks.md). A literal Snapshots{DB: db}
// has no filter and always reads.
type Snapshots struct {
	DB     *badger.DB
	filter *snapshotFilter
}

// snapshotFilter is a bloom filter of kind/identity keys saved, safe for concurrent use. A key
// stays in it after its snapshot expires (a false positive costs a read, nothing else).
type snapshotFilter struct {
	mu    sync.Mutex
	bloom *z.Bloom
}

// snapshotFilterKeys sizes the filter: 1% false positives up to this many keys, 1.2 MB; past
// it the rate grows and loads read more often, never wrongly.
const snapshotFilterKeys = 1 << 20

func (f *snapshotFilter) add(key []byte) {
	f.mu.Lock()
	f.bloom.Add(z.MemHash(key))
	f.mu.Unlock()
}

func (f *snapshotFilter) mayHave(key []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bloom.Has(z.MemHash(key))
}

// NewSnapshots returns Snapshots over db with its filter filled from the snapshots db holds (a
// key-only scan of PrefixActor).
func NewSnapshots(db *badger.DB) (Snapshots, error) {
	f := &snapshotFilter{bloom: z.NewBloomFilter(snapshotFilterKeys, 0.01)}
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(PrefixActor)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			f.bloom.Add(z.MemHash(it.Item().Key()))
		}
		return nil
	})
	if err != nil {
		return Snapshots{}, fmt.Errorf("list snapshots: %w", err)
	}
	return Snapshots{DB: db, filter: f}, nil
}

func snapshotKey(kind, identity string) []byte {
	return []byte(PrefixActor + kind + "/" + identity)
}

// LoadSnapshot implements sinks.Snapshots.
func (s Snapshots) LoadSnapshot(_ context.Context, kind, identity string) (state []byte, found bool, err error) {
	key := snapshotKey(kind, identity)
	if s.filter != nil && !s.filter.mayHave(key) {
		return nil, false, nil
	}
	state, found, err = Lookup(s.DB, key)
	if err != nil {
		return nil, false, fmt.Errorf("load %s snapshot: %w", kind, err)
	}
	return state, found, nil
}

// SaveSnapshot implements sinks.Snapshots.
func (s Snapshots) SaveSnapshot(_ context.Context, kind, identity string, state []byte, ttl time.Duration) error {
	key := snapshotKey(kind, identity)
	if s.filter != nil {
		s.filter.add(key) // before the commit: a load racing with it reads the store
	}
	err := s.DB.Update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry(key, state).WithTTL(ttl))
	})
	if err != nil {
		return fmt.Errorf("save %s snapshot: %w", kind, err)
	}
	return nil
}
