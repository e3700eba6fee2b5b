package badgerevents

import (
	"context"
	"math/rand/v2"
	"runtime"
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
//
// cpu-µs/row is the process's CPU per row written, Badger's flushes and compactions included
// (they run in its own goroutines, outside the benchmark's timer); making the copies is left
// out. Compactions grow with the database: -benchtime 200x (2M rows) reaches the levels a few
// minutes of flat-out ingest do, and a short run shows little of them.
func BenchmarkWriteCopies(b *testing.B) { benchWriteCopies(b, false) }

// BenchmarkWriteCopiesCollected is BenchmarkWriteCopies with two collections between writes,
// left out of its time and CPU like making the copies: what a write allocates when the garbage
// collector ran since the last one, as it does flat out in the node (whose profile showed the
// write's pooled scratch made anew at each flush). Its B/op is the figure to read.
func BenchmarkWriteCopiesCollected(b *testing.B) { benchWriteCopies(b, true) }

func benchWriteCopies(b *testing.B, collect bool) {
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
	var making time.Duration
	b.ReportAllocs()
	cpu0 := eventstest.CPUTime(b)
	for b.Loop() {
		b.StopTimer()
		m := eventstest.CPUTime(b)
		buf = copies.Append(buf[:0], batch)
		if collect {
			runtime.GC()
			runtime.GC()
		}
		making += eventstest.CPUTime(b) - m
		b.StartTimer()
		if err := s.WriteEvents(context.Background(), buf); err != nil {
			b.Fatal(err)
		}
	}
	cpu := eventstest.CPUTime(b) - cpu0 - making
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*batch), "cpu-µs/row")
}
