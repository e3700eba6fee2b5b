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
	if got, want := sp.String(), fmt.Sprintf("node 100.0 + loadgen 30.0 + ClickHouse server 40.0 + everything else (other processes, the bench, the kernel's threads and interrupts, the hypervisor's steal) 20.0 = 190.0 µs of CPU per item; idle 10.0 (the machine %.2f of %d CPUs busy)", 0.95*n, runtime.NumCPU()); got != want {
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
