package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The efficiency target divides the rate a node reaches by 2 cores ÷ Σ parts, the parts being
// decode, the durable append and the store insert. On the bench's machine loadgen shares the
// cores, and any HTTP service must at least read each body off its socket and answer: neither is
// a part, both take CPU per item. The floor measures them with nothing else running: loadgen
// flat out against a receiver that reads each body and answers 202, so that the table can say
// what efficiency the parts leave room for once those two are paid.

// floorCost is the floor run: loadgen's summary and the CPU each side used.
type floorCost struct {
	Run      summary
	Workers  int           // loadgen's
	Loadgen  time.Duration // loadgen's user + system CPU (its rusage)
	Receiver time.Duration // this process's CPU during the run, the receiver's
	Bodies   int64         // request bodies the receiver read in full
	Bytes    int64
}

// loadgenPerItem and receiverPerItem are µs of CPU per acknowledged item.
func (f *floorCost) loadgenPerItem() float64 {
	if f == nil {
		return 0
	}
	return perItem(f.Loadgen, float64(f.Run.Items))
}

func (f *floorCost) receiverPerItem() float64 {
	if f == nil {
		return 0
	}
	return perItem(f.Receiver, float64(f.Run.Items))
}

// floorAnswer is the node's answer to an accepted batch, byte for byte (httpx.JSON of
// {"ok":"accepted"}), so that loadgen reads what it reads from a node.
const floorAnswer = `{"ok":"accepted"}` + "\n"

// receiver is the floor's HTTP handler: it reads each request body in full into a buffer it
// reuses and answers floorAnswer with 202, what any ingest service does at the least. It checks
// nothing and keeps nothing.
type receiver struct {
	bufs          sync.Pool
	bodies, bytes atomic.Int64
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bp, _ := rc.bufs.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 64<<10)
		bp = &b
	}
	defer rc.bufs.Put(bp)
	var n int64
	for {
		k, err := r.Body.Read(*bp)
		n += int64(k)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			http.Error(w, `{"error":"`+err.Error()+`"}`, http.StatusBadRequest)
			return
		}
	}
	rc.bodies.Add(1)
	rc.bytes.Add(n)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(floorAnswer)))
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, floorAnswer)
}

// measureFloor serves a receiver on a loopback port and runs loadgen flat out against it for d
// with the workers of the end-to-end runs.
func measureFloor(ctx context.Context, c config, root, lgBin string, d time.Duration) (*floorCost, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &receiver{}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }() // ends with Shutdown below
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-served
	}()
	secs := max(1, int(d.Round(time.Second)/time.Second))
	cpu0 := cpuTime()
	s, err := runLoadgen(ctx, root, lgBin, "-url", "http://"+ln.Addr().String(), "-key", "floor",
		"-concurrency", strconv.Itoa(c.concurrency), "-duration", strconv.Itoa(secs)+"s", "-json", "-progress", "0")
	cpu := cpuTime() - cpu0
	if err != nil {
		return nil, err
	}
	if s.Items == 0 || s.Failed > 0 {
		return nil, fmt.Errorf("floor: loadgen acknowledged %d items, %d requests failed", s.Items, s.Failed)
	}
	return &floorCost{Run: s, Workers: c.concurrency, Loadgen: s.CPU, Receiver: cpu, Bodies: rc.bodies.Load(), Bytes: rc.bytes.Load()}, nil
}

// machineCPU is where the machine's CPU went during a flat-out run: /proc/stat's ticks, the
// node's and a ClickHouse server's (/proc/<pid>/stat) and loadgen's rusage.
type machineCPU struct {
	Busy, Total  int64 // the machine's ticks (cpuSample's meaning)
	Node, Server int64 // ticks
	ServerKnown  bool  // a ClickHouse server on this machine was measured
	Loadgen      time.Duration
	Items        int64 // items loadgen had acknowledged
}

// machineSample reads the machine's and the processes' ticks; serverPID 0 leaves the server out.
func machineSample(nodePID, serverPID int) (cpuSample, int64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuSample{}, 0, err
	}
	s, err := ParseProcStat(string(b))
	if err != nil {
		return cpuSample{}, 0, err
	}
	if s.node, err = procTicks(nodePID); err != nil {
		return cpuSample{}, 0, err
	}
	var server int64
	if serverPID != 0 {
		if server, err = procTicks(serverPID); err != nil {
			return cpuSample{}, 0, err
		}
	}
	return s, server, nil
}

// cpuSplit is machineCPU in µs of CPU per acknowledged item.
type cpuSplit struct {
	Node, Loadgen, Server, Others, Idle float64
	Cores                               float64 // the machine's busy CPUs on average
}

func (m *machineCPU) split() (cpuSplit, bool) {
	if m == nil || m.Items <= 0 || m.Total <= 0 {
		return cpuSplit{}, false
	}
	tick := 1e6 / float64(clkTck) // µs per tick
	per := func(ticks float64) float64 { return ticks * tick / float64(m.Items) }
	lg := float64(m.Loadgen.Microseconds()) / tick // in ticks
	s := cpuSplit{Node: per(float64(m.Node)), Loadgen: per(lg), Server: per(float64(m.Server)),
		Idle: per(float64(m.Total - m.Busy)), Cores: float64(cores) * float64(m.Busy) / float64(m.Total)}
	// Loadgen's rusage is exact and the tick counts are not: what is left may round below 0.
	s.Others = max(0, per(float64(m.Busy-m.Node-m.Server)-lg))
	return s, true
}

func (s cpuSplit) String(serverKnown bool) string {
	v := fmt.Sprintf("node %.1f + loadgen %.1f", s.Node, s.Loadgen)
	if serverKnown {
		v += fmt.Sprintf(" + ClickHouse server %.1f", s.Server)
	}
	v += fmt.Sprintf(" + everything else (other processes, the kernel's own threads) %.1f = %.1f µs of CPU per item; idle %.1f (the machine %.2f of %d cores busy)",
		s.Others, s.Node+s.Loadgen+s.Server+s.Others, s.Idle, s.Cores, cores)
	return v
}

// EfficiencyCeiling is the highest pipeline efficiency a node can reach when, besides Σ parts,
// every item costs loadgen's CPU and the receiving floor's (µs per item): parts ÷ (parts +
// loadgen + receiver), since the efficiency is the rate × Σ parts ÷ the cores and the rate is at
// most the cores ÷ all three. It also returns that rate per core. 0 when a figure is missing.
func EfficiencyCeiling(parts, loadgen, receiver float64) (ratio, ratePerCore float64) {
	if parts <= 0 || loadgen <= 0 || receiver <= 0 {
		return 0, 0
	}
	all := parts + loadgen + receiver
	return parts / all, 1e6 / all
}
