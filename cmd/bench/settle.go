package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// settleOpts say when waitSettled takes the other processes as settled: once their share of
// the machine's CPUs has stayed under Busy for For (at least one sample), sampled Every,
// waiting at most Max.
type settleOpts struct {
	Busy            float64
	For, Max, Every time.Duration
}

// settleDefault is (d)'s: an idle ClickHouse and PostgreSQL use a few percent of a core.
// ClickHouse merges a load's parts in rounds with idle seconds between them: after 3 quiet
// seconds, a round was seen to start during the live rows at 50–110 % of a core.
var settleDefault = settleOpts{Busy: 0.15, For: 10 * time.Second, Max: 5 * time.Minute, Every: time.Second}

// cpuSample is the machine's CPU time from /proc/stat and, of it, the node's and the bench's
// own (their /proc/<pid>/stat), all in clock ticks (USER_HZ, both files' unit).
type cpuSample struct {
	busy, total int64 // the machine: busy = user+nice+system+irq+softirq+steal, total adds idle and iowait
	// Of the machine's: time in interrupts (irq+softirq), taken by the hypervisor (steal), and
	// idle with a disk request outstanding (iowait, in total, not in busy).
	irq, steal, iowait int64
	node, bench        int64
}

// cpuShares is what the processes used of the machine's CPUs between two samples.
type cpuShares struct {
	Node, Bench, Others float64
}

// sharesSince is the CPU shares from prev to s; not ok when the machine's counters did not
// move forward (no time passed, or counters that a sandbox freezes), which must not read as
// quiet. Busy ticks only grow; iowait, which total includes, may step back (proc(5)).
func (s cpuSample) sharesSince(prev cpuSample) (cpuShares, bool) {
	total := s.total - prev.total
	if total <= 0 {
		return cpuShares{}, false
	}
	share := func(n int64) float64 { return min(max(float64(n)/float64(total), 0), 1) }
	node, bench := s.node-prev.node, s.bench-prev.bench
	return cpuShares{Node: share(node), Bench: share(bench), Others: share(s.busy - prev.busy - node - bench)}, true
}

func (c cpuShares) String() string {
	return fmt.Sprintf("node %.0f %%, bench %.0f %%, other processes %.0f %% of the machine's CPUs", 100*c.Node, 100*c.Bench, 100*c.Others)
}

// settleRun is what waitSettled saw.
type settleRun struct {
	Waited      time.Duration
	First, Last cpuShares // in the first and the last interval sampled
	Settled     bool
	Err         string // the CPU times could not be read; nothing was waited for
}

func (s settleRun) String() string {
	switch {
	case s.Err != "":
		return "not waited for other processes to settle (" + s.Err + ")"
	case !s.Settled:
		return fmt.Sprintf("other processes still busy after %.0f s (first second: %s; last: %s), timed all the same",
			s.Waited.Seconds(), s.First, s.Last)
	}
	return fmt.Sprintf("timed once other processes had settled: %.0f s waited (first second: %s; last: %s)",
		s.Waited.Seconds(), s.First, s.Last)
}

// waitSettled waits until the processes other than the node and the bench use less than
// o.Busy of the machine's CPUs for o.For, at most o.Max, sampling every o.Every. The
// dashboard queries come right after a load: a ClickHouse next to the node is still merging
// what it took in, more so after the top-up's millions of copies, and on 2 cores that work, not
// the node's answer, then decides the live answers' tail (ClickHouse at 90–184 % of a core
// during the live rows, seen with top). A production ClickHouse on machines of its own takes
// none of the node's CPU. The node's own work (an embedded node's compactions after the top-up)
// is not waited for: it is part of what its answers cost.
func waitSettled(ctx context.Context, o settleOpts, sample func() (cpuSample, error)) settleRun {
	var run settleRun
	start := time.Now()
	prev, err := sample()
	if err != nil {
		run.Err = err.Error()
		return run
	}
	need := max(1, int(o.For/o.Every))
	quiet := 0 // samples in a row under o.Busy
	for first := true; ; first = false {
		select {
		case <-time.After(o.Every):
		case <-ctx.Done():
			run.Err = ctx.Err().Error()
			return run
		}
		cur, err := sample()
		if err != nil {
			run.Err = err.Error()
			return run
		}
		sh, ok := cur.sharesSince(prev)
		prev = cur
		if !ok {
			run.Err = "the machine's CPU counters did not move"
			return run
		}
		if first {
			run.First = sh
		}
		run.Last, run.Waited = sh, time.Since(start)
		quiet++
		if sh.Others >= o.Busy {
			quiet = 0
		}
		if quiet >= need {
			run.Settled = true
			return run
		}
		if run.Waited >= o.Max {
			return run
		}
	}
}

// cpuSampler samples the machine's CPU times and node()'s and this process's (node() is asked
// each time: a top-up restarts the node; 0 when there is no node, whose ticks are then 0).
func cpuSampler(node func() int) func() (cpuSample, error) {
	self := os.Getpid()
	return func() (cpuSample, error) {
		b, err := os.ReadFile("/proc/stat")
		if err != nil {
			return cpuSample{}, err
		}
		s, err := ParseProcStat(string(b))
		if err != nil {
			return cpuSample{}, err
		}
		if pid := node(); pid != 0 {
			s.node, err = procTicks(pid)
		}
		if err == nil {
			s.bench, err = procTicks(self)
		}
		if err != nil {
			return cpuSample{}, err
		}
		return s, nil
	}
}

// ParseProcStat reads the aggregate "cpu" line of /proc/stat: user nice system idle iowait irq
// softirq steal (guest time is already inside user and nice, so it is not added again).
func ParseProcStat(stat string) (cpuSample, error) {
	for line := range strings.Lines(stat) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 5 {
			return cpuSample{}, fmt.Errorf("/proc/stat: short cpu line %q", strings.TrimSpace(line))
		}
		var s cpuSample
		for i, v := range f[1:min(len(f), 9)] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return cpuSample{}, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			s.total += n
			if i != 3 && i != 4 { // not idle, not iowait
				s.busy += n
			}
			switch i {
			case 4:
				s.iowait = n
			case 5, 6:
				s.irq += n
			case 7:
				s.steal = n
			}
		}
		return s, nil
	}
	return cpuSample{}, errors.New("/proc/stat: no cpu line")
}
