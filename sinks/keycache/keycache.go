// Package keycache keeps the API-key cache's last answers on the node's own disk (the local,
// unsynced Badger database), so that a node restarted while the metadata store is down still
// knows the keys it accepted before. Keys are stored as their SHA-256, never in clear. It is a
// node-local cache behind no storage interface, like the request gate: losing it costs only a
// store lookup.
package keycache

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// Key prefixes: the answer of a key, and an index of an app's keys (for DropApp).
var (
	answerPrefix = []byte("keycache/answer/")
	appPrefix    = []byte("keycache/app/")
)

// Cache is the saved answers of a node's API-key cache.
type Cache struct{ db *badger.DB }

// New keeps answers in db.
func New(db *badger.DB) *Cache { return &Cache{db: db} }

type saved struct {
	App model.App `json:"app"`
	At  time.Time `json:"at"`
}

func answerKey(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return append(append([]byte{}, answerPrefix...), sum[:]...)
}

func appKey(app uuid.UUID, key string) []byte {
	sum := sha256.Sum256([]byte(key))
	k := append(append([]byte{}, appPrefix...), app[:]...)
	return append(k, sum[:]...)
}

// Save records that the store said at time at that key belongs to app (an active key). The
// answer is dropped by itself after ttl.
func (c *Cache) Save(key string, app model.App, at time.Time, ttl time.Duration) error {
	v, err := json.Marshal(saved{App: app, At: at})
	if err != nil {
		return fmt.Errorf("keycache: %w", err)
	}
	err = c.db.Update(func(txn *badger.Txn) error {
		if err := txn.SetEntry(badger.NewEntry(answerKey(key), v).WithTTL(ttl)); err != nil {
			return err
		}
		return txn.SetEntry(badger.NewEntry(appKey(app.ID, key), nil).WithTTL(ttl))
	})
	if err != nil {
		return fmt.Errorf("keycache: save: %w", err)
	}
	return nil
}

// Load returns the saved answer of key and when the store gave it; ok is false when there is
// none.
func (c *Cache) Load(key string) (app model.App, at time.Time, ok bool, err error) {
	var s saved
	err = c.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(answerKey(key))
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) error { return json.Unmarshal(v, &s) })
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return model.App{}, time.Time{}, false, nil
	}
	if err != nil {
		return model.App{}, time.Time{}, false, fmt.Errorf("keycache: load: %w", err)
	}
	return s.App, s.At, true, nil
}

// Forget drops the saved answer of key (the store said it is revoked or unknown).
func (c *Cache) Forget(key string) error {
	err := c.db.Update(func(txn *badger.Txn) error { return txn.Delete(answerKey(key)) })
	if err != nil {
		return fmt.Errorf("keycache: forget: %w", err)
	}
	return nil
}

// DropApp drops the saved answers of every key of app (its key was rotated).
func (c *Cache) DropApp(app uuid.UUID) error {
	prefix := append(append([]byte{}, appPrefix...), app[:]...)
	err := c.db.Update(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		var index [][]byte
		for it.Rewind(); it.Valid(); it.Next() {
			index = append(index, it.Item().KeyCopy(nil))
		}
		it.Close()
		for _, k := range index {
			sum := k[len(prefix):]
			if err := txn.Delete(append(append([]byte{}, answerPrefix...), sum...)); err != nil {
				return err
			}
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("keycache: drop app: %w", err)
	}
	return nil
}
