package clickhouse_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/clickhouse"
	"github.com/svc-dev/svc/sinks/eventstest"
	"github.com/svc-dev/svc/sinks/sinktest"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// openFresh migrates a fresh database and opens a store on it.
func openFresh(t testing.TB) (*clickhouse.Store, string) {
	t.Helper()
	dsn := sinktest.ClickHouse(t)
	if err := clickhouse.Migrate(testCtx(t), dsn); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	s, err := clickhouse.Open(testCtx(t), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s, dsn
}

func TestConformance(t *testing.T) {
	t.Run("clickhouse", func(t *testing.T) {
		eventstest.Run(t, func(t *testing.T) sinks.EventStore {
			s, _ := openFresh(t)
			return s
		})
	})
	// Every write of more than 7 rows sends several blocks in its INSERT.
	t.Run("clickhouse-small-blocks", func(t *testing.T) {
		eventstest.Run(t, func(t *testing.T) sinks.EventStore {
			s, _ := openFresh(t)
			clickhouse.SetBlockRows(s, 7)
			return s
		})
	})
}

func TestAnalytics(t *testing.T) {
	t.Run("clickhouse", func(t *testing.T) {
		eventstest.RunAnalytics(t, func(t *testing.T) eventstest.AnalyticsStore {
			s, _ := openFresh(t)
			return s
		})
	})
	// With real time every build of journey rollups in the suite lies within the margin of a
	// write and is never read; a clock that moves a minute at every reading puts each write,
	// build and deletion beyond the margins of the ones before it, so the suite reads rollups
	// wherever they hold.
	t.Run("clickhouse-rollups", func(t *testing.T) {
		eventstest.RunAnalytics(t, func(t *testing.T) eventstest.AnalyticsStore {
			s, _ := openFresh(t)
			clickhouse.SetClock(s, jumpingClock())
			return s
		})
	})
}

// jumpingClock is a clock that moves a minute on at every reading.
func jumpingClock() func() time.Time {
	var mu sync.Mutex
	now := time.Now()
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Minute)
		return now
	}
}
