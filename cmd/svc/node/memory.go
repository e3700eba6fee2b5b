package node

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/svc-dev/svc/sinks/badgerdb"
)

// Memory that follows load. Go collects garbage when the program allocates; a node whose load
// stopped allocates almost nothing, so the garbage of the last burst (decoded batches, rows,
// passivated actors' state: measured at 750 MB after a 20 s burst) stays in the heap, and in
// RSS, until a collection that may not come for minutes. returnIdleMemory notices such a
// heap and collects it, returning the freed pages to the operating system.

// ApplyMemoryLimit sets the Go runtime's soft memory limit for --memory-limit (the process is
// the node's: svc serve calls it, tests that start nodes in their own process do not). It sets
// none for --memory-limit 0, nor when GOMEMLIMIT is in the environment: the runtime already
// applied it, and it wins.
//
// The runtime's limit is three quarters of the node's: Badger's memory-mapped files (about
// 0.1–0.16 GB flat out once their logs are paged out) and the runtime's own overhead take the
// rest. Under the limit nothing changes; near it the collector runs more often (a node with
// 100k live sessions flat out: peak RSS 1.77 → 0.87 GB, docs/benchmarks.md).
func ApplyMemoryLimit(limit int64, log *slog.Logger) {
	goLimit := runtimeMemoryLimit(limit, os.Getenv("GOMEMLIMIT"))
	if goLimit < 0 {
		if limit > 0 {
			log.Info("memory limit from GOMEMLIMIT", "go_limit_bytes", debug.SetMemoryLimit(-1))
		}
		return
	}
	debug.SetMemoryLimit(goLimit)
	log.Info("memory limit", "limit_bytes", limit, "go_limit_bytes", goLimit)
}

// runtimeMemoryLimit is the Go soft limit for a node limit of limit bytes, or -1 for none.
func runtimeMemoryLimit(limit int64, gomemlimit string) int64 {
	if limit <= 0 || gomemlimit != "" {
		return -1
	}
	return limit / 4 * 3
}

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
	var (
		cycles uint64
		floor  uint64 // heap objects after this function's last collection; 0 after the runtime's own
	)
	every(ctx, period, func() bool {
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
		return true
	})
}

// logPageOutPeriod is how often pageOutLogs runs: flat out, the event database's value log
// grows by about 35 MB a second, which stays resident until paged out.
const logPageOutPeriod = 2 * time.Second

// pageOutLogs takes the node's Badger log pages out of its memory every period until ctx ends
// (badgerdb.LogPager says which and why). It stops early on a kernel that cannot; it tells once of
// other failures, and of a pass that found no log to page out (Badger always maps some: dirs
// would not name them), and tries again each period.
func pageOutLogs(ctx context.Context, period time.Duration, dirs []string, log *slog.Logger) {
	if len(dirs) == 0 {
		return
	}
	pager := badgerdb.NewLogPager(dirs)
	warned, warnedNone := false, false
	every(ctx, period, func() bool {
		mapped, err := pager.PageOut()
		switch {
		case errors.Is(err, badgerdb.ErrPageOutUnsupported):
			log.Warn("Badger's log pages stay in memory", "err", err)
			return false
		case err != nil && !warned:
			log.Warn("paging out Badger's logs failed; trying again every "+period.String(), "err", err)
			warned = true
		case err == nil && mapped == 0 && !warnedNone:
			log.Warn("no mapped Badger log found to page out", "dirs", dirs)
			warnedNone = true
		}
		return true
	})
}

// every calls fn each period until ctx ends or fn answers false.
func every(ctx context.Context, period time.Duration, fn func() bool) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !fn() {
			return
		}
	}
}
