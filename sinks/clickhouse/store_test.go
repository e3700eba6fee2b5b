package clickhouse_test

import (
	"context"
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
}

func TestAnalytics(t *testing.T) {
	t.Run("clickhouse", func(t *testing.T) {
		eventstest.RunAnalytics(t, func(t *testing.T) eventstest.AnalyticsStore {
			s, _ := openFresh(t)
			return s
		})
	})
}
