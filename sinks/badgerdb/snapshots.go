package badgerdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Snapshots is the embedded sinks.Snapshots: one key per actor under PrefixActor, expiring by
// Badger's TTL (one-second resolution).
type Snapshots struct{ DB *badger.DB }

func snapshotKey(kind, identity string) []byte {
	return []byte(PrefixActor + kind + "/" + identity)
}

// LoadSnapshot implements sinks.Snapshots.
func (s Snapshots) LoadSnapshot(_ context.Context, kind, identity string) (state []byte, found bool, err error) {
	err = s.DB.View(func(txn *badger.Txn) error {
		it, err := txn.Get(snapshotKey(kind, identity))
		if err != nil {
			return err
		}
		state, err = it.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("load %s snapshot: %w", kind, err)
	}
	return state, true, nil
}

// SaveSnapshot implements sinks.Snapshots.
func (s Snapshots) SaveSnapshot(_ context.Context, kind, identity string, state []byte, ttl time.Duration) error {
	err := s.DB.Update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry(snapshotKey(kind, identity), state).WithTTL(ttl))
	})
	if err != nil {
		return fmt.Errorf("save %s snapshot: %w", kind, err)
	}
	return nil
}
