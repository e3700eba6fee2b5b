package badgerdb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/snaptest"
)

func TestSnapshotsConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, db *badger.DB) sinks.Snapshots
	}{
		{"badger", func(t *testing.T, db *badger.DB) sinks.Snapshots { return badgerdb.Snapshots{DB: db} }},
		{"badger with filter", func(t *testing.T, db *badger.DB) sinks.Snapshots {
			s, err := badgerdb.NewSnapshots(db)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snaptest.Run(t, func(t *testing.T) sinks.Snapshots {
				db, err := badgerdb.OpenLocal(t.TempDir(), nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = db.Close() })
				return tc.make(t, db)
			})
		})
	}
}

// TestSnapshotFilterAfterReopen: the filter NewSnapshots builds from the database knows every
// snapshot saved before it, so none is answered "not found" without a read.
func TestSnapshotFilterAfterReopen(t *testing.T) {
	dir, ctx := t.TempDir(), context.Background()
	db, err := badgerdb.OpenLocal(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	before := badgerdb.Snapshots{DB: db}
	for i := range n {
		if err := before.SaveSnapshot(ctx, "session", fmt.Sprint("id-", i), []byte{byte(i)}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = badgerdb.OpenLocal(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := badgerdb.NewSnapshots(db)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		b, found, err := s.LoadSnapshot(ctx, "session", fmt.Sprint("id-", i))
		if err != nil || !found || len(b) != 1 || b[0] != byte(i) {
			t.Fatalf("snapshot %d after reopen: %v %v %v", i, b, found, err)
		}
	}
	if _, found, err := s.LoadSnapshot(ctx, "session", "never-saved"); err != nil || found {
		t.Errorf("a snapshot never saved: found %v, %v", found, err)
	}
}
