package node

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Memory that follows load. Go collects garbage when the program allocates; a node whose load
// stopped allocates almost nothing, so the garbage of the last burst (decoded batches, rows,
// passivated actors' state: measured at 750 MB after a 20 s burst) stays in the heap, and in
// RSS, until a collection that may not come for minutes. returnIdleMemory notices such a
// heap and collects it, returning the freed pages to the operating system.

// returnIdleMemory acts when no collection ran for a whole period (the node is idle, or nearly)
// and the heap holds idleMemorySlack more than after its own last collection: the live heap the
// runtime's last collection saw may have been taken while the burst's actors were still alive.
const (
	idleMemoryPeriod = 15 * time.Second
	idleMemorySlack  = 64 << 20
)

// returnIdleMemory looks every period until ctx ends.
func returnIdleMemory(ctx context.Context, period time.Duration, log *slog.Logger) {
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(period)
	defer t.Stop()
	var (
		cycles uint64
		floor  uint64 // heap objects after this function's last collection; 0 after the runtime's own
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(samples)
		c, heap := samples[0].Value.Uint64(), samples[1].Value.Uint64()
		if c != cycles {
			floor = 0 // the runtime collects by itself: the node is busy
		} else if heap > floor+idleMemorySlack {
			debug.FreeOSMemory() // a collection, then every free page back to the OS
			metrics.Read(samples)
			c, floor = samples[0].Value.Uint64(), samples[1].Value.Uint64()
			log.Debug("idle heap collected", "heap_before", heap, "heap_after", floor)
		}
		cycles = c
	}
}
