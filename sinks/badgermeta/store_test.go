package badgermeta_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgermeta"
	"github.com/svc-dev/svc/sinks/metatest"
)

func openDB(t *testing.T, dir string) *badger.DB {
	t.Helper()
	db, err := badgerdb.Open(dir, nil)
	if err != nil {
		t.Fatalf("open badger: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close badger: %v", err)
		}
	})
	return db
}

func open(dir func(t *testing.T) string) func(t *testing.T) sinks.MetaStore {
	return func(t *testing.T) sinks.MetaStore {
		s := badgermeta.New(openDB(t, dir(t)))
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	}
}

func TestConformance(t *testing.T) {
	t.Run("badger-memory", func(t *testing.T) {
		metatest.Run(t, open(func(*testing.T) string { return "" }))
	})
	t.Run("badger-disk", func(t *testing.T) {
		metatest.Run(t, open(func(t *testing.T) string { return t.TempDir() }))
	})
}

// TestSharedDB checks what the shared DB needs: Close leaves it open, every key is under
// badgerdb.PrefixMeta, and an on-disk store keeps its rows across a reopen.
func TestSharedDB(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db, err := badgerdb.Open(dir, nil)
	if err != nil {
		t.Fatalf("open badger: %v", err)
	}
	s := badgermeta.New(db)
	u := model.User{ID: uuid.New(), Name: "Ada", Email: "ada@example.com", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	own := model.Team{ID: uuid.New(), Name: "Ada's team", CreatedAt: u.CreatedAt, UpdatedAt: u.CreatedAt}
	if err := s.CreateUser(ctx, u, own); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	a := model.App{ID: uuid.New(), TeamID: own.ID, Name: "app", CreatedAt: u.CreatedAt, UpdatedAt: u.CreatedAt}
	if err := s.CreateApp(ctx, a, model.APIKey{AppID: a.ID, Key: "k", CreatedAt: u.CreatedAt}); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	if err := s.CreateAuthSession(ctx, model.AuthSession{ID: uuid.New(), UserID: u.ID, RefreshID: uuid.New(), ExpiresAt: time.Now()}); err != nil {
		t.Fatalf("CreateAuthSession: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if db.IsClosed() {
		t.Fatal("Close closed the shared DB")
	}

	keys := 0
	err = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			keys++
			if k := it.Item().Key(); !bytes.HasPrefix(k, []byte(badgerdb.PrefixMeta)) {
				t.Errorf("key %q is outside %q", k, badgerdb.PrefixMeta)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if keys == 0 {
		t.Fatal("no keys stored")
	}

	if err := db.Close(); err != nil {
		t.Fatalf("close badger: %v", err)
	}
	if err := s.Ping(ctx); err == nil {
		t.Error("Ping with the shared DB closed = nil, want an error")
	}
	s2 := badgermeta.New(openDB(t, dir))
	got, err := s2.UserByEmail(ctx, "ADA@example.com")
	if err != nil {
		t.Fatalf("UserByEmail after reopen: %v", err)
	}
	if got.ID != u.ID || got.Name != u.Name {
		t.Errorf("UserByEmail after reopen = %+v, want %+v", got, u)
	}
	if err := s2.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

func BenchmarkMeta(b *testing.B) {
	db, err := badgerdb.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatalf("open badger: %v", err)
	}
	defer db.Close()
	metatest.Bench(b, badgermeta.New(db))
}
