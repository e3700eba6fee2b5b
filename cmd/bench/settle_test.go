package main

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	cases := []struct {
		name, stat string
		want       cpuSample
		err        string
	}{
		{"kernel 6 (10 fields)", "cpu  100 5 50 800 20 3 2 10 7 0\ncpu0 50 2 25 400 10 1 1 5 3 0\nintr 1\n",
			cpuSample{busy: 100 + 5 + 50 + 3 + 2 + 10, total: 100 + 5 + 50 + 800 + 20 + 3 + 2 + 10, irq: 3 + 2, steal: 10, iowait: 20}, ""}, // guest (7) is in user already
		{"old kernel (4 fields)", "cpu 10 0 10 80\n", cpuSample{busy: 20, total: 100}, ""},
		{"no cpu line", "intr 1\nctxt 2\n", cpuSample{}, "no cpu line"},
		{"short line", "cpu 1 2 3\n", cpuSample{}, "short cpu line"},
		{"not a number", "cpu 1 2 x 4 5\n", cpuSample{}, "cpu field 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProcStat(tc.stat)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestSharesSince(t *testing.T) {
	prev := cpuSample{busy: 500, total: 1000, node: 100, bench: 50}
	cases := []struct {
		name string
		cur  cpuSample
		want cpuShares
		ok   bool
	}{
		{"others a quarter", cpuSample{busy: 600, total: 1200, node: 120, bench: 80}, cpuShares{Node: 0.1, Bench: 0.15, Others: 0.25}, true},
		{"idle", cpuSample{busy: 500, total: 1200, node: 100, bench: 50}, cpuShares{}, true},
		{"all the node's", cpuSample{busy: 700, total: 1200, node: 300, bench: 50}, cpuShares{Node: 1}, true},
		// iowait stepped back while every CPU was busy: still all busy, not quiet.
		{"iowait back", cpuSample{busy: 700, total: 1195, node: 100, bench: 50}, cpuShares{Others: 1}, true},
		{"counters did not move", prev, cpuShares{}, false},
		{"counters went back", cpuSample{busy: 400, total: 900}, cpuShares{}, false},
	}
	for _, tc := range cases {
		got, ok := tc.cur.sharesSince(prev)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestSettleRunString(t *testing.T) {
	busy, calm := cpuShares{Node: 0.5, Others: 0.9}, cpuShares{Node: 0.02, Bench: 0.01, Others: 0.05}
	cases := []struct {
		run  settleRun
		want string
	}{
		{settleRun{Waited: 12 * time.Second, First: busy, Last: calm, Settled: true},
			"timed once other processes had settled: 12 s waited (first second: node 50 %, bench 0 %, other processes 90 % of the machine's CPUs; last: node 2 %, bench 1 %, other processes 5 % of the machine's CPUs)"},
		{settleRun{Waited: 5 * time.Minute, First: busy, Last: busy},
			"other processes still busy after 300 s (first second: node 50 %, bench 0 %, other processes 90 % of the machine's CPUs; last: node 50 %, bench 0 %, other processes 90 % of the machine's CPUs), timed all the same"},
		{settleRun{Err: "open /proc/stat: no such file"}, "not waited for other processes to settle (open /proc/stat: no such file)"},
	}
	for _, tc := range cases {
		if got := tc.run.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestWaitSettled feeds waitSettled samples in which the other processes use the given
// shares of 100 ticks each, sampled every millisecond.
func TestWaitSettled(t *testing.T) {
	opts := settleOpts{Busy: 0.15, For: 3 * time.Millisecond, Max: time.Second, Every: time.Millisecond}
	cases := []struct {
		name    string
		others  []int64 // busy ticks of other processes per 100, one per sample after the first
		nodeCPU int64   // the node's busy ticks per 100 in every sample
		settled bool
		samples int // taken after the first
		err     string
	}{
		{"quiet at once", []int64{1, 2, 3}, 0, true, 3, ""},
		{"a merge, then quiet", []int64{90, 80, 10, 50, 5, 5, 5}, 0, true, 7, ""},
		{"the node's own work does not count", []int64{2, 2, 2}, 95, true, 3, ""},
		{"never quiet", nil, 0, false, -1, ""},
		{"frozen counters", []int64{-1}, 0, false, 1, "did not move"},
		{"unreadable", []int64{-2}, 0, false, 1, "boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s cpuSample
			n := 0
			sample := func() (cpuSample, error) {
				if n > 0 {
					o := int64(90) // past the list: busy
					if n-1 < len(tc.others) {
						o = tc.others[n-1]
					}
					switch o {
					case -1: // frozen: s as it was
					case -2:
						return cpuSample{}, errors.New("boom")
					default:
						s.total += 100
						s.busy += o + tc.nodeCPU
						s.node += tc.nodeCPU
					}
				}
				n++
				return s, nil
			}
			o := opts
			if tc.samples < 0 {
				o.Max = 20 * time.Millisecond
			}
			run := waitSettled(t.Context(), o, sample)
			if tc.err != "" {
				if !strings.Contains(run.Err, tc.err) || run.Settled {
					t.Fatalf("%+v: want error %q", run, tc.err)
				}
				return
			}
			if run.Err != "" || run.Settled != tc.settled {
				t.Fatalf("%+v: want settled %v", run, tc.settled)
			}
			if tc.samples >= 0 && n-1 != tc.samples {
				t.Fatalf("%d samples after the first, want %d", n-1, tc.samples)
			}
			if tc.samples < 0 && run.Waited < o.Max {
				t.Fatalf("gave up after %s, before %s", run.Waited, o.Max)
			}
		})
	}
}

// TestCPUSampler reads this machine's /proc: this process stands for the node too, so both
// counts are its own (the bench's read just after the node's), and the machine's busy time,
// since boot, holds far more.
func TestCPUSampler(t *testing.T) {
	s, err := cpuSampler(os.Getpid)()
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if s.bench < s.node || s.bench-s.node > clkTck || s.total <= 0 || s.busy < s.bench || s.busy > s.total {
		t.Fatalf("%+v", s)
	}
	// No node (it has stopped): its ticks are 0, not this process's counted twice.
	s, err = cpuSampler(func() int { return 0 })()
	if err != nil || s.node != 0 || s.total <= 0 || s.busy > s.total {
		t.Fatalf("without a node: %+v, %v", s, err)
	}
}
