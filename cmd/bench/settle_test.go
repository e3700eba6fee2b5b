package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	cases := []struct {
		name, stat string
		want       cpuTimes
		err        string
	}{
		{"kernel 6 (10 fields)", "cpu  100 5 50 800 20 3 2 10 7 0\ncpu0 50 2 25 400 10 1 1 5 3 0\nintr 1\n",
			cpuTimes{total: 100 + 5 + 50 + 800 + 20 + 3 + 2 + 10, idle: 820}, ""}, // guest (7) is in user already
		{"old kernel (4 fields)", "cpu 10 0 10 80\n", cpuTimes{total: 100, idle: 80}, ""},
		{"no cpu line", "intr 1\nctxt 2\n", cpuTimes{}, "no cpu line"},
		{"short line", "cpu 1 2 3\n", cpuTimes{}, "short cpu line"},
		{"not a number", "cpu 1 2 x 4 5\n", cpuTimes{}, "cpu field 3"},
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

func TestBusySince(t *testing.T) {
	cases := []struct {
		name      string
		prev, cur cpuTimes
		want      float64
	}{
		{"a quarter busy", cpuTimes{1000, 900}, cpuTimes{1200, 1050}, 0.25},
		{"idle", cpuTimes{1000, 900}, cpuTimes{1200, 1100}, 0},
		{"all busy", cpuTimes{1000, 900}, cpuTimes{1200, 900}, 1},
		{"no time passed", cpuTimes{1000, 900}, cpuTimes{1000, 900}, 0},
	}
	for _, tc := range cases {
		if got := tc.cur.busySince(tc.prev); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSettleRunString(t *testing.T) {
	cases := []struct {
		run  settleRun
		want string
	}{
		{settleRun{Waited: 12 * time.Second, First: 0.9, Last: 0.05, Settled: true}, "timed once the machine had settled: 12 s waited, 90 % of its CPUs busy at first, 5 % at the end"},
		{settleRun{Waited: 5 * time.Minute, First: 0.9, Last: 0.6}, "the machine still busy after 300 s (90 % of its CPUs at first, 60 % at the end), timed all the same"},
		{settleRun{Err: "open /proc/stat: no such file"}, "the machine's CPU use unknown (open /proc/stat: no such file)"},
	}
	for _, tc := range cases {
		if got := tc.run.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestWaitSettled reads this machine's /proc/stat with thresholds that any machine meets (or
// none does), so that it does not depend on what else runs.
func TestWaitSettled(t *testing.T) {
	if _, err := readCPUTimes(); err != nil {
		t.Skipf("no /proc/stat: %v", err)
	}
	cases := []struct {
		name    string
		o       settleOpts
		settled bool
		waited  time.Duration // at least
	}{
		{"always quiet", settleOpts{Busy: 1.01, For: 2 * time.Second, Max: time.Minute}, true, 2 * time.Second},
		{"never quiet", settleOpts{Busy: 0, For: 2 * time.Second, Max: 3 * time.Second}, false, 3 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := waitSettled(t.Context(), tc.o)
			if run.Err != "" || run.Settled != tc.settled || run.Waited < tc.waited || run.Waited > tc.waited+2*time.Second {
				t.Fatalf("%+v: want settled %v after about %s", run, tc.settled, tc.waited)
			}
		})
	}
}
