package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
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
	Run      summary       // loadgen's, its CPU included
	Workers  int           // loadgen's
	Receiver time.Duration // the receiver process's CPU during the run
}

// loadgenPerItem and receiverPerItem are µs of CPU per acknowledged item.
func (f *floorCost) loadgenPerItem() float64 {
	if f == nil {
		return 0
	}
	return perItem(f.Run.CPU, float64(f.Run.Items))
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

// serveFloor is the floor's receiver process (bench -floor-receiver): it serves a receiver on
// a loopback port, writes "listening ADDR" to out, and once in closes (its parent is done or
// gone) writes "bodies N bytes M" and returns.
func serveFloor(in io.Reader, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rc := &receiver{}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }() // ends with Shutdown below
	if _, err := fmt.Fprintf(out, "listening %s\n", ln.Addr()); err != nil {
		_ = srv.Close()
		return err
	}
	_, _ = io.Copy(io.Discard, in)
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if _, werr := fmt.Fprintf(out, "bodies %d bytes %d\n", rc.bodies.Load(), rc.bytes.Load()); werr != nil {
		err = errors.Join(err, werr)
	}
	return err
}

// measureFloor starts the receiver as a process of its own (this binary with -floor-receiver,
// so that its CPU is the receiver's alone: /proc/<pid>/stat) and runs loadgen flat out against
// it for d with the workers of the end-to-end runs.
func measureFloor(ctx context.Context, c config, root, lgBin string, d time.Duration) (*floorCost, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := command(ctx, root, os.Environ(), self, "-floor-receiver")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }() // an early return stops the receiver
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		return nil, fmt.Errorf("floor receiver: no address (%v)", lines.Err())
	}
	addr, ok := strings.CutPrefix(lines.Text(), "listening ")
	if !ok {
		return nil, fmt.Errorf("floor receiver: %q", lines.Text())
	}
	pid := cmd.Process.Pid
	t0, err := procTicks(pid)
	if err != nil {
		return nil, err
	}
	secs := max(1, int(d.Round(time.Second)/time.Second))
	s, err := runLoadgen(ctx, root, lgBin, "-url", "http://"+addr, "-key", "floor",
		"-concurrency", strconv.Itoa(c.concurrency), "-duration", strconv.Itoa(secs)+"s", "-json", "-progress", "0")
	if err != nil {
		return nil, err
	}
	t1, err := procTicks(pid)
	if err != nil {
		return nil, err
	}
	if err := stdin.Close(); err != nil {
		return nil, err
	}
	var bodies, bytes int64
	if !lines.Scan() {
		return nil, fmt.Errorf("floor receiver: no count (%v)", lines.Err())
	}
	if _, err := fmt.Sscanf(lines.Text(), "bodies %d bytes %d", &bodies, &bytes); err != nil {
		return nil, fmt.Errorf("floor receiver: %q: %w", lines.Text(), err)
	}
	switch {
	case s.Items == 0 || s.Failed > 0:
		return nil, fmt.Errorf("floor: loadgen acknowledged %d items, %d requests failed", s.Items, s.Failed)
	case bodies < s.Requests: // more when the client resent a request on a fresh connection
		return nil, fmt.Errorf("floor: loadgen sent %d requests, the receiver read %d bodies", s.Requests, bodies)
	}
	return &floorCost{Run: s, Workers: c.concurrency, Receiver: time.Duration(t1-t0) * time.Second / clkTck}, nil
}

// machineCPU is where the machine's CPU went during a flat-out run: /proc/stat's ticks, the
// node's and a ClickHouse server's (/proc/<pid>/stat) and loadgen's rusage.
type machineCPU struct {
	Busy, Total  int64 // the machine's ticks (cpuSample's meaning)
	Node, Server int64 // ticks
	ServerKnown  bool  // a ClickHouse server on this machine was measured
	Loadgen      time.Duration
	Items        int64 // items loadgen had acknowledged
	// DrainNode is the node's ticks from loadgen's end until the store had taken what the
	// spool still held then (Drain): work for the same items, outside the window above.
	DrainNode int64
	Drain     time.Duration
	// The machine's other counters beside the rest of its busy ticks, read on their own
	// (cpuSplit says why they are not its parts): the interrupts and the hypervisor's steal
	// (/proc/stat), the bench's own ticks, and IOWait, idle time with a disk request
	// outstanding. When Scanned, also the kernel's threads' ticks and the other processes'
	// that lived through the window (a scan of /proc, which leaves out loadgen, measured
	// apart, and whatever started or ended inside the window); KernelSeen says the scan saw a
	// kernel thread at all (in a PID namespace it sees none).
	Scanned, KernelSeen                      bool
	Irq, Steal, Bench, Kernel, Procs, IOWait int64
}

// machineSnap is one reading of the machine for machineCPU.
type machineSnap struct {
	cpu    cpuSample
	server int64
	procs  map[int]procStat // nil when /proc could not be scanned
}

// machineSample reads the machine's and the processes' ticks; serverPID 0 leaves the server out.
// The scan of /proc comes first, so that its own CPU falls outside the window when it starts
// one, and both ends are read in the same order.
func machineSample(nodePID, serverPID int) (machineSnap, error) {
	procs, _ := scanProcs() // without it the split names fewer counters, nothing worse
	s, err := cpuSampler(func() int { return nodePID })()
	if err != nil {
		return machineSnap{}, err
	}
	m := machineSnap{cpu: s, procs: procs}
	if serverPID != 0 {
		if m.server, err = procTicks(serverPID); err != nil {
			return machineSnap{}, err
		}
	}
	return m, nil
}

// machineSince is where the machine's CPU went from m0 to m1.
func machineSince(m0, m1 machineSnap, nodePID, serverPID int) *machineCPU {
	c := &machineCPU{Busy: m1.cpu.busy - m0.cpu.busy, Total: m1.cpu.total - m0.cpu.total, Node: m1.cpu.node - m0.cpu.node,
		Server: m1.server - m0.server, ServerKnown: serverPID != 0,
		Irq: m1.cpu.irq - m0.cpu.irq, Steal: m1.cpu.steal - m0.cpu.steal, IOWait: max(0, m1.cpu.iowait-m0.cpu.iowait),
		Bench: m1.cpu.bench - m0.cpu.bench}
	if m0.procs != nil && m1.procs != nil {
		c.Scanned = true
		c.Kernel, c.Procs = procsSince(m0.procs, m1.procs, nodePID, serverPID, os.Getpid())
		for _, p := range m1.procs {
			c.KernelSeen = c.KernelSeen || p.kthread
		}
	}
	return c
}

// cpuSplit is machineCPU in µs of CPU per acknowledged item.
type cpuSplit struct {
	Node, Loadgen, Server, Others, Idle float64
	NodeDrain                           float64 // the node's after loadgen stopped (DrainNode)
	DrainSeconds                        float64
	Cores                               float64 // the machine's busy CPUs on average
	ServerKnown                         bool    // a ClickHouse server was measured
	// What the machine's other counters say, each on its own: they are not a partition of
	// Others, which is a difference of larger figures (a few per cent of the node's ticks move
	// it by as much), and interrupts are partly inside the processes' own time (loopback
	// traffic's are handled in the sender's). IOWait is of Idle.
	Scanned, KernelSeen                      bool // as in machineCPU
	Steal, Irq, Kernel, Bench, Procs, IOWait float64
}

func (m *machineCPU) split() (cpuSplit, bool) {
	if m == nil || m.Items <= 0 || m.Total <= 0 {
		return cpuSplit{}, false
	}
	tick := 1e6 / float64(clkTck) // µs per tick
	per := func(ticks float64) float64 { return ticks * tick / float64(m.Items) }
	lg := float64(m.Loadgen.Microseconds()) / tick // in ticks
	s := cpuSplit{Node: per(float64(m.Node)), Loadgen: per(lg), Server: per(float64(m.Server)),
		Idle: per(float64(m.Total - m.Busy)), NodeDrain: per(float64(m.DrainNode)), DrainSeconds: m.Drain.Seconds(),
		Cores: float64(runtime.NumCPU()) * float64(m.Busy) / float64(m.Total), ServerKnown: m.ServerKnown}
	// Loadgen's rusage is exact and the tick counts are not: what is left may round below 0.
	s.Others = max(0, per(float64(m.Busy-m.Node-m.Server)-lg))
	s.Scanned, s.KernelSeen = m.Scanned, m.KernelSeen
	s.Steal, s.Irq, s.Kernel = per(float64(m.Steal)), per(float64(m.Irq)), per(float64(m.Kernel))
	s.Bench, s.Procs, s.IOWait = per(float64(m.Bench)), per(float64(m.Procs)), per(float64(m.IOWait))
	return s, true
}

func (s cpuSplit) String() string {
	v := fmt.Sprintf("node %.1f + loadgen %.1f", s.Node, s.Loadgen)
	if s.ServerKnown {
		v += fmt.Sprintf(" + ClickHouse server %.1f", s.Server)
	}
	v += fmt.Sprintf(" + everything else %.1f (by their own counters, which overlap the processes' time in part: the hypervisor's steal %.1f, interrupts %.1f",
		s.Others, s.Steal, s.Irq)
	switch {
	case !s.Scanned:
		v += ", the kernel's threads and other processes not read (/proc could not be scanned)"
	case !s.KernelSeen:
		v += fmt.Sprintf(", the kernel's threads not visible here, other processes %.1f", s.Procs)
	default:
		v += fmt.Sprintf(", the kernel's threads %.1f, other processes %.1f", s.Kernel, s.Procs)
	}
	v += fmt.Sprintf(", the bench %.1f) = %.1f µs of CPU per item; idle %.1f (%.1f of it with a disk request outstanding) (the machine %.2f of %d CPUs busy)",
		s.Bench, s.Node+s.Loadgen+s.Server+s.Others, s.Idle, s.IOWait, s.Cores, runtime.NumCPU())
	if s.NodeDrain > 0 {
		v += fmt.Sprintf("; once loadgen stopped, the node spent %.1f µs more per item in the %.1f s its store took for what the spool still held",
			s.NodeDrain, s.DrainSeconds)
	}
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
