package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// settleOpts say when waitSettled takes the machine as settled: once the share of its CPUs in
// use (all processes) has stayed under Busy for For (whole seconds), waiting at most Max.
type settleOpts struct {
	Busy     float64
	For, Max time.Duration
}

// settleDefault is (d)'s: an idle node, ClickHouse and PostgreSQL use a few percent of a core.
// ClickHouse merges a load's parts in rounds with idle seconds between them: after 3 quiet
// seconds, a round was seen to start during the live rows at 50–110 % of a core.
var settleDefault = settleOpts{Busy: 0.15, For: 10 * time.Second, Max: 5 * time.Minute}

// settleRun is what waitSettled saw.
type settleRun struct {
	Waited      time.Duration
	First, Last float64 // CPU busy share in the first and the last second sampled
	Settled     bool
	Err         string // /proc/stat could not be read; nothing was waited for
}

func (s settleRun) String() string {
	switch {
	case s.Err != "":
		return "the machine's CPU use unknown (" + s.Err + ")"
	case !s.Settled:
		return fmt.Sprintf("the machine still busy after %.0f s (%.0f %% of its CPUs at first, %.0f %% at the end), timed all the same",
			s.Waited.Seconds(), 100*s.First, 100*s.Last)
	}
	return fmt.Sprintf("timed once the machine had settled: %.0f s waited, %.0f %% of its CPUs busy at first, %.0f %% at the end",
		s.Waited.Seconds(), 100*s.First, 100*s.Last)
}

// waitSettled waits until the whole machine's CPU use stays under o.Busy for o.For, at most
// o.Max. The dashboard queries come right after a load: the store is still merging
// (ClickHouse) or compacting (Badger) what it took in, more so after the top-up's millions of
// copies, and on 2 cores that background work, not the node's answer, then decides the live
// answers' tail (a ClickHouse server at 90–180 % of a core during the live rows, seen with top).
// A store on machines of its own, as production runs ClickHouse, takes none of the node's CPU.
func waitSettled(ctx context.Context, o settleOpts) settleRun {
	var run settleRun
	start := time.Now()
	prev, err := readCPUTimes()
	if err != nil {
		run.Err = err.Error()
		return run
	}
	quiet := 0 // seconds in a row under settleBusy
	for first := true; ; first = false {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			run.Err = ctx.Err().Error()
			return run
		}
		cur, err := readCPUTimes()
		if err != nil {
			run.Err = err.Error()
			return run
		}
		busy := cur.busySince(prev)
		prev = cur
		if first {
			run.First = busy
		}
		run.Last, run.Waited = busy, time.Since(start)
		quiet++
		if busy >= o.Busy {
			quiet = 0
		}
		if quiet >= int(o.For/time.Second) {
			run.Settled = true
			return run
		}
		if run.Waited >= o.Max {
			return run
		}
	}
}

// cpuTimes are the machine's CPU times from /proc/stat's "cpu" line, in clock ticks.
type cpuTimes struct{ total, idle uint64 }

// busySince is the share of the CPU time from prev to t that was not idle (nor waiting for
// I/O); 0 when no time passed.
func (t cpuTimes) busySince(prev cpuTimes) float64 {
	total, idle := t.total-prev.total, t.idle-prev.idle
	if total == 0 || idle > total {
		return 0
	}
	return float64(total-idle) / float64(total)
}

func readCPUTimes() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	return ParseProcStat(string(b))
}

// ParseProcStat reads the aggregate "cpu" line of /proc/stat: user nice system idle iowait irq
// softirq steal (guest time is already inside user and nice). Idle counts idle and iowait.
func ParseProcStat(stat string) (cpuTimes, error) {
	for line := range strings.Lines(stat) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 5 {
			return cpuTimes{}, fmt.Errorf("/proc/stat: short cpu line %q", strings.TrimSpace(line))
		}
		var t cpuTimes
		for i, s := range f[1:min(len(f), 9)] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			t.total += v
			if i == 3 || i == 4 { // idle, iowait
				t.idle += v
			}
		}
		return t, nil
	}
	return cpuTimes{}, fmt.Errorf("/proc/stat: no cpu line")
}
