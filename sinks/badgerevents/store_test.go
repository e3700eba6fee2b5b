package badgerevents_test

import (
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
	"github.com/svc-dev/svc/sinks/eventstest"
)

// openDB opens the event store's database as a node does (badgerdb.OpenEvents), in dir or, when
// dir is empty, in memory.
func openDB(t testing.TB, dir string) *badger.DB {
	t.Helper()
	db, err := badgerdb.OpenEvents(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close badger: %v", err)
		}
	})
	return db
}

func TestConformance(t *testing.T) {
	t.Run("badger-memory", func(t *testing.T) {
		eventstest.Run(t, func(t *testing.T) sinks.EventStore {
			return badgerevents.New(openDB(t, ""))
		})
	})
	t.Run("badger-disk", func(t *testing.T) {
		eventstest.Run(t, func(t *testing.T) sinks.EventStore {
			return badgerevents.New(openDB(t, t.TempDir()))
		})
	})
	// The block layout (docs/event-blocks.md): the same promises, rows written in blocks.
	t.Run("badger-blocks", func(t *testing.T) {
		eventstest.Run(t, func(t *testing.T) sinks.EventStore { return blocksStore(t, t.TempDir()) })
	})
}

// blocksStore is a store that writes its event rows in blocks, on disk in dir (or in memory).
func blocksStore(t *testing.T, dir string) *badgerevents.Store {
	t.Helper()
	s := badgerevents.New(openDB(t, dir))
	if err := s.UseBlocks(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestAnalytics(t *testing.T) {
	t.Run("badger-memory", func(t *testing.T) {
		eventstest.RunAnalytics(t, func(t *testing.T) eventstest.AnalyticsStore {
			return badgerevents.New(openDB(t, ""))
		})
	})
	t.Run("badger-blocks", func(t *testing.T) {
		eventstest.RunAnalytics(t, func(t *testing.T) eventstest.AnalyticsStore { return blocksStore(t, t.TempDir()) })
	})
	// On disk the store is opened as the node opens it (Open): its issue index and journey
	// facts are kept by the writes from the start. In memory (New) they are built from the rows
	// by the first query that reads them.
	t.Run("badger-disk", func(t *testing.T) {
		eventstest.RunAnalytics(t, func(t *testing.T) eventstest.AnalyticsStore {
			s, err := badgerevents.Open(t.Context(), openDB(t, t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
}
