package badgerevents

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/eventstest"
)

// BenchmarkWriteCopies writes 10k-event batches shaped like the recorded SDK traffic (synthetic
// copies of every fixture batch: short sessions, each in one batch or a few) on disk, the
// ingest path's store write; BenchmarkWriteEvents repeats one fixture session instead.
func BenchmarkWriteCopies(b *testing.B) {
	const batch = 10_000
	db, err := badgerdb.OpenEvents(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	s, err := Open(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	app := uuid.New()
	bodies := eventstest.FixtureBodies(b, app)
	copies := eventstest.NewCopies(bodies, app, time.Now(), 24*time.Hour, rand.New(rand.NewPCG(1, 2)))
	var buf []model.Event
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		buf = copies.Append(buf[:0], batch)
		b.StartTimer()
		if err := s.WriteEvents(context.Background(), buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
}
