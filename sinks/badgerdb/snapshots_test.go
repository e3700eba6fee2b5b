package badgerdb_test

import (
	"testing"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/snaptest"
)

func TestSnapshotsConformance(t *testing.T) {
	t.Run("badger", func(t *testing.T) {
		snaptest.Run(t, func(t *testing.T) sinks.Snapshots {
			db, err := badgerdb.OpenLocal(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return badgerdb.Snapshots{DB: db}
		})
	})
}
