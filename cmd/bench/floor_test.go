package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestEfficiencyCeiling(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		parts, loadgen, receive float64
		ratio, perCore          float64
	}{
		{"ClickHouse's parts of a run", 19.1, 6.5, 2.4, 19.1 / 28, 1e6 / 28},
		{"free loadgen and receiving would allow 1", 20, 1e-9, 1e-9, 1, 50_000},
		{"a missing part", 0, 6.5, 2.4, 0, 0},
		{"no floor measured", 19.1, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, pc := EfficiencyCeiling(tc.parts, tc.loadgen, tc.receive)
			if math.Abs(r-tc.ratio) > 1e-6 || math.Abs(pc-tc.perCore) > 1e-3 {
				t.Errorf("EfficiencyCeiling(%v, %v, %v) = %v, %v; want %v, %v", tc.parts, tc.loadgen, tc.receive, r, pc, tc.ratio, tc.perCore)
			}
		})
	}
}

func TestCPUSplit(t *testing.T) {
	// 100k items in 10 s on 2 cores: 2,000 ticks, 1,900 busy.
	m := &machineCPU{Busy: 1_900, Total: 2_000, Node: 1_000, Server: 400, ServerKnown: true, Loadgen: 3 * time.Second, Items: 100_000}
	sp, ok := m.split()
	if !ok {
		t.Fatal("split not ok")
	}
	n := float64(runtime.NumCPU()) // the split counts the machine's CPUs, whatever they are
	want := cpuSplit{Node: 100, Loadgen: 30, Server: 40, Others: 20, Idle: 10, Cores: 0.95 * n, ServerKnown: true}
	if math.Abs(sp.Node-want.Node)+math.Abs(sp.Loadgen-want.Loadgen)+math.Abs(sp.Server-want.Server)+
		math.Abs(sp.Others-want.Others)+math.Abs(sp.Idle-want.Idle)+math.Abs(sp.Cores-want.Cores) > 1e-9 || !sp.ServerKnown {
		t.Errorf("split = %+v, want %+v", sp, want)
	}
	if got, want := sp.String(), fmt.Sprintf("node 100.0 + loadgen 30.0 + ClickHouse server 40.0 + everything else 20.0 (by their own counters, which overlap the processes' time in part: the hypervisor's steal 0.0, interrupts 0.0, the kernel's threads and other processes not read (/proc could not be scanned), the bench 0.0) = 190.0 µs of CPU per item; idle 10.0 (0.0 of it with a disk request outstanding) (the machine %.2f of %d CPUs busy)", 0.95*n, runtime.NumCPU()); got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	// Loadgen's exact rusage can exceed what the coarser ticks left for it: nothing negative.
	m.Loadgen = 6 * time.Second
	if sp, _ := m.split(); sp.Others != 0 {
		t.Errorf("others = %v, want 0 when the ticks round under loadgen's rusage", sp.Others)
	}
	for _, bad := range []*machineCPU{nil, {Busy: 1, Total: 2}, {Items: 5}} {
		if _, ok := bad.split(); ok {
			t.Errorf("split of %+v is ok", bad)
		}
	}
}

// TestCPUSplitDetail: everything else with what the machine's other counters say of it, and
// idle time spent waiting for the disk.
func TestCPUSplitDetail(t *testing.T) {
	// 100k items: a tick (10 ms) is 0.1 µs per item.
	m := &machineCPU{Busy: 1_900, Total: 2_000, Node: 1_000, Server: 400, ServerKnown: true, Loadgen: 3 * time.Second, Items: 100_000,
		Scanned: true, KernelSeen: true, Steal: 50, Irq: 300, Kernel: 40, Bench: 10, Procs: 20, IOWait: 60}
	sp, ok := m.split()
	if !ok {
		t.Fatal("split not ok")
	}
	n := runtime.NumCPU()
	// Interrupts (30.0) exceed everything else (20.0): they are partly the processes' own time.
	want := fmt.Sprintf("node 100.0 + loadgen 30.0 + ClickHouse server 40.0 + everything else 20.0 (by their own counters, which overlap the processes' time in part: "+
		"the hypervisor's steal 5.0, interrupts 30.0, the kernel's threads 4.0, other processes 2.0, the bench 1.0) = 190.0 µs of CPU per item; idle 10.0 "+
		"(6.0 of it with a disk request outstanding) (the machine %.2f of %d CPUs busy)", 0.95*float64(n), n)
	if got := sp.String(); got != want {
		t.Errorf("String = %q\nwant       %q", got, want)
	}
	// In a PID namespace no kernel thread shows in /proc: 0 would read as a measurement.
	m.KernelSeen, m.Kernel = false, 0
	if sp, _ := m.split(); !strings.Contains(sp.String(), "the kernel's threads not visible here, other processes 2.0, the bench 1.0)") {
		t.Errorf("without kernel threads in the scan: %q", sp.String())
	}
	// Without a scan, /proc/stat's counters are still given.
	m.Scanned = false
	if sp, _ := m.split(); !strings.Contains(sp.String(), "interrupts 30.0, the kernel's threads and other processes not read (/proc could not be scanned), the bench 1.0)") {
		t.Errorf("without a scan: %q", sp.String())
	}
}

// TestProcsSince: only processes alive at both scans count, each under its own kind, and a pid
// taken over by a new process is not read as the old one's growth.
func TestProcsSince(t *testing.T) {
	before := map[int]procStat{
		1:  {ticks: 100, start: 1},
		2:  {ticks: 50, kthread: true, start: 1},
		3:  {ticks: 10, start: 5},  // the node: skipped
		4:  {ticks: 500, start: 7}, // ends in the window
		5:  {ticks: 300, start: 9}, // its pid is reused
		12: {ticks: 8, kthread: true, start: 3},
	}
	after := map[int]procStat{
		1:  {ticks: 130, start: 1},
		2:  {ticks: 70, kthread: true, start: 1},
		3:  {ticks: 900, start: 5},
		5:  {ticks: 40, start: 400},
		6:  {ticks: 25, start: 450}, // started in the window
		12: {ticks: 13, kthread: true, start: 3},
	}
	kernel, others := procsSince(before, after, 3)
	if kernel != 20+5 || others != 30 {
		t.Errorf("kernel %d, others %d; want 25, 30", kernel, others)
	}
}

// TestScanProcs reads this machine's /proc: the test's own process is there, as a process.
func TestScanProcs(t *testing.T) {
	procs, err := scanProcs()
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	me, ok := procs[os.Getpid()]
	if !ok || me.kthread || me.start <= 0 {
		t.Fatalf("this process in the scan: %+v, %v", me, ok)
	}
}

// TestReceiver sends the floor's receiver bodies as loadgen does (sized and chunked) and checks
// that it read them whole and answered as a node does.
func TestReceiver(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	body := bytes.Repeat([]byte(`{"events":[]}`), 20_000) // past the receiver's 64 KiB buffer
	for _, chunked := range []bool{false, true} {
		req, err := http.NewRequest(http.MethodPut, srv.URL+"/events", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if chunked {
			req.ContentLength = -1
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || string(got) != floorAnswer {
			t.Errorf("chunked %v: %s %q, want 202 %q", chunked, resp.Status, got, floorAnswer)
		}
	}
	if b, n := rc.bodies.Load(), rc.bytes.Load(); b != 2 || n != 2*int64(len(body)) {
		t.Errorf("read %d bodies, %d bytes; want 2, %d", b, n, 2*len(body))
	}
}

// TestMeasurePacedAppend runs the spool alone at a rate on a real spool: every started append
// is timed, and a cancelled context fails the measurement rather than reporting a short run.
func TestMeasurePacedAppend(t *testing.T) {
	c := &corpus{bodies: [][]byte{bytes.Repeat([]byte("x"), 60<<10), []byte(`{"events":[]}`)}}
	pa, err := measurePacedAppend(context.Background(), c, 200, 500*time.Millisecond, 4)
	if err != nil {
		t.Fatal(err)
	}
	// A loaded machine's slow syncs may hold the sender back: at least one append, at most
	// what 200/s for 0.5 s starts.
	if pa.Appends < 1 || pa.Appends > 101 || pa.Writers != 4 || pa.Rate != 200 {
		t.Errorf("%d appends by %d writers at %v/s; want 1 to 101 by 4 at 200/s", pa.Appends, pa.Writers, pa.Rate)
	}
	if pa.P50 <= 0 || pa.P50 > pa.P90 || pa.P90 > pa.P99 {
		t.Errorf("percentiles out of order: %v %v %v", pa.P50, pa.P90, pa.P99)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := measurePacedAppend(ctx, c, 200, time.Second, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v, want context.Canceled", err)
	}
	if _, err := measurePacedAppend(context.Background(), c, 0, time.Second, 2); err == nil {
		t.Error("no rate: no error")
	}
}

// TestServeFloor runs the receiver process's loop in-process: it says where it listens, reads
// bodies whole, and counts them once its input closes.
func TestServeFloor(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveFloor(inR, outW); outW.Close() }()
	lines := bufio.NewScanner(outR)
	if !lines.Scan() {
		t.Fatal("no first line")
	}
	addr, ok := strings.CutPrefix(lines.Text(), "listening ")
	if !ok {
		t.Fatalf("first line %q", lines.Text())
	}
	body := strings.Repeat("y", 100_000)
	for range 2 {
		resp, err := http.Post("http://"+addr+"/events", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || string(got) != floorAnswer {
			t.Fatalf("%s %q", resp.Status, got)
		}
	}
	inW.Close()
	if !lines.Scan() || lines.Text() != "bodies 2 bytes 200000" {
		t.Errorf("last line %q, want %q", lines.Text(), "bodies 2 bytes 200000")
	}
	if err := <-done; err != nil {
		t.Error(err)
	}
}
