package badgerevents

import (
	"context"
	"fmt"
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
func BenchmarkWriteCopies(b *testing.B) { benchWriteCopies(b, false, 0, false) }

// BenchmarkWriteCopiesCollected is BenchmarkWriteCopies with two collections between writes,
// left out of its time and CPU like making the copies: what a write allocates when the garbage
// collector ran since the last one, as it does flat out in the node (whose profile showed the
// write's pooled scratch made anew at each flush). Its B/op is the figure to read.
func BenchmarkWriteCopiesCollected(b *testing.B) { benchWriteCopies(b, true, 0, false) }

// BenchmarkWriteCopiesAgain is BenchmarkWriteCopies with a share of each batch's rows taken
// from the batch before, unchanged, as the spool's replays and SDK retries send them: the
// write finds each of them stored and overwrites it (the key filter's "may hold", a point
// read, the walk step and issue copy compared). It prices finding a stored row, which any
// other layout of the rows must pay as well: in blocks (layout=blocks, docs/event-blocks.md)
// such a row is a suspect, settled in the background and by the Count that ends the run,
// whose CPU is counted too.
func BenchmarkWriteCopiesAgain(b *testing.B) {
	for _, layout := range []string{"rows", "blocks"} {
		for _, pct := range []int{0, 1, 10} {
			b.Run(fmt.Sprintf("layout=%s/again=%d%%", layout, pct), func(b *testing.B) {
				benchWriteCopies(b, false, pct, layout == "blocks")
			})
		}
	}
}

// benchWriteCopies writes batches of copies; againPct of each batch after the first are rows
// of the batch before, written again; with blocks the store writes blocks.
func benchWriteCopies(b *testing.B, collect bool, againPct int, blocks bool) {
	const batch = 10_000
	again := batch * againPct / 100
	db, err := badgerdb.OpenEvents(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	s, err := Open(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if blocks {
		if err := s.UseBlocks(); err != nil {
			b.Fatal(err)
		}
	}
	app := uuid.New()
	bodies := eventstest.FixtureBodies(b, app)
	copies := eventstest.NewCopies(bodies, app, time.Now(), 24*time.Hour, rand.New(rand.NewPCG(1, 2)))
	var buf, prev []model.Event
	var making time.Duration
	b.ReportAllocs()
	cpu0 := eventstest.CPUTime(b)
	for b.Loop() {
		b.StopTimer()
		m := eventstest.CPUTime(b)
		if again > 0 && len(prev) > 0 {
			buf = copies.Append(buf[:0], batch-again)
			buf = append(buf, prev...)
		} else {
			buf = copies.Append(buf[:0], batch)
		}
		if again > 0 {
			prev = append(prev[:0], buf[:again]...) // the next batch writes these again
		}
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
	b.StopTimer()
	if again > 0 { // every row written again was found stored, not counted twice
		n, _, err := s.Count(context.Background(), app)
		if want := int64(b.N*batch - (b.N-1)*again); err != nil || n != want {
			b.Fatalf("count %d, %v; want %d", n, err, want)
		}
	}
	cpu := eventstest.CPUTime(b) - cpu0 - making
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*batch), "cpu-µs/row")
}
