package keycache

import (
	"bytes"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

func TestCache(t *testing.T) {
	dir := t.TempDir()
	db, err := badgerdb.OpenLocal(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := New(db)
	a, b := model.App{ID: uuid.New(), Name: "a", RetentionDays: 30}, model.App{ID: uuid.New(), Name: "b"}
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for key, app := range map[string]model.App{"svc_a1": a, "svc_a2": a, "svc_b": b} {
		if err := c.Save(key, app, at, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	load := func(key string) (model.App, bool) {
		t.Helper()
		app, got, ok, err := c.Load(key)
		if err != nil || ok && !got.Equal(at) {
			t.Fatalf("Load(%s): %v at %v", key, err, got)
		}
		return app, ok
	}
	if app, ok := load("svc_a1"); !ok || app.ID != a.ID || app.Name != "a" || app.RetentionDays != 30 {
		t.Fatalf("a1: %+v %v", app, ok)
	}
	if _, ok := load("svc_unknown"); ok {
		t.Fatal("an unknown key has an answer")
	}
	if err := c.Forget("svc_a2"); err != nil {
		t.Fatal(err)
	}
	if _, ok := load("svc_a2"); ok {
		t.Fatal("a forgotten key has an answer")
	}
	if err := c.DropApp(a.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := load("svc_a1"); ok {
		t.Fatal("a key of a dropped app has an answer")
	}
	if app, ok := load("svc_b"); !ok || app.ID != b.ID {
		t.Fatal("another app's key was dropped")
	}
	// Kept across a reopen, and never in clear.
	db.Close()
	if db, err = badgerdb.OpenLocal(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c = New(db)
	if app, ok := load("svc_b"); !ok || app.ID != b.ID {
		t.Fatal("lost across a reopen")
	}
	_ = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if bytes.Contains(it.Item().Key(), []byte("svc_")) {
				t.Errorf("a key in clear: %q", it.Item().Key())
			}
		}
		return nil
	})
}
