package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/uuid"

	svcnode "github.com/svc-dev/svc/cmd/svc/node"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
	chstore "github.com/svc-dev/svc/sinks/clickhouse"
	"github.com/svc-dev/svc/sinks/spool"
)

// appendCost is the durable append part: spool appends of the corpus's request bodies.
type appendCost struct {
	Appends     int64
	Writers     int
	Wall, CPU   time.Duration
	ItemsPerReq float64 // mean items of a corpus request, to turn per-append into per-item
}

// insertCost is one store's insert part: rows written in batches of Batch rows, the CPU of
// this process and, for a server store, the server's CPU over the same time.
type insertCost struct {
	Rows      int64
	Batch     int
	Wall, CPU time.Duration
	ServerCPU time.Duration // 0 for an embedded store
	Server    bool          // ServerCPU was measured (a server store)
	Layout    string        // how the rows were kept, when the store has a choice ("" otherwise)
}

// tempSpool opens a spool in a fresh temporary directory; done removes the directory.
func tempSpool() (sp *spool.Spool, done func(), err error) {
	dir, err := os.MkdirTemp("", "svc-bench-spool-")
	if err != nil {
		return nil, nil, err
	}
	if sp, _, err = spool.Open(dir, spool.Options{}); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return sp, func() { os.RemoveAll(dir) }, nil
}

// record makes rec writer w's i-th append: the corpus's bodies round-robin, a request id of
// its own.
func (c *corpus) record(rec *spool.Record, w, i int) {
	rec.RequestID, rec.Body = uuid.UUID{byte(w), byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}, c.bodies[i%len(c.bodies)]
}

// measureAppend appends the corpus's bodies round-robin to a fresh spool in a temporary
// directory with writers concurrent writers for d, acknowledging each record once written (as
// the flushers do, so segments are deleted as they would be), and returns the process's CPU
// time over it. The fdatasync's wait is not CPU; the syscalls' kernel time is.
func measureAppend(c *corpus, d time.Duration, writers int) (*appendCost, error) {
	sp, done, err := tempSpool()
	if err != nil {
		return nil, err
	}
	defer done()
	app := uuid.New()
	var appends atomic.Int64
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	runtime.GC()
	cpu0, start := cpuTime(), time.Now()
	deadline := start.Add(d)
	for w := range writers {
		wg.Add(1)
		go func() { // ends at the deadline or on the first error
			defer wg.Done()
			rec := spool.Record{AppID: app, Kind: 1}
			for i := w; time.Now().Before(deadline); i++ {
				c.record(&rec, w, i)
				if err := sp.Append(&rec); err != nil {
					errs <- err
					return
				}
				sp.Ack(rec.Seq, len(rec.Body))
				appends.Add(1)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	closeErr := sp.Close()
	cpu := cpuTime() - cpu0
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("spool append: %w", err)
	}
	if closeErr != nil {
		return nil, closeErr
	}
	return &appendCost{Appends: appends.Load(), Writers: writers, Wall: wall, CPU: cpu, ItemsPerReq: c.itemsPerRequest()}, nil
}

// pacedAppend is the spool alone at a request rate: what a durable acknowledgement waits for
// at least, with no decode, no store and no other request next to it.
type pacedAppend struct {
	Rate          float64 // appends started per second
	Writers       int
	Appends       int
	P50, P90, P99 time.Duration // of one Append, from its start to its return
	Wall          time.Duration // from the first append started to the last one done
	Settle        settleRun     // how the other processes were before it
}

// measurePacedAppend starts rate appends a second of the corpus's bodies on a fresh spool in a
// temporary directory for d, each taken by the first of writers goroutines that is free (as
// request goroutines are), and returns the percentiles of the appends' latencies. An append
// waits for the group sync in flight, if any, then for its own.
func measurePacedAppend(ctx context.Context, c *corpus, rate float64, d time.Duration, writers int) (*pacedAppend, error) {
	if rate <= 0 {
		return nil, errors.New("paced append: no rate")
	}
	sp, done, err := tempSpool()
	if err != nil {
		return nil, err
	}
	defer done()
	app := uuid.New()
	jobs := make(chan int, writers)
	lat := make([][]time.Duration, writers)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() { // ends when jobs is closed or on the first error
			defer wg.Done()
			rec := spool.Record{AppID: app, Kind: 1}
			for i := range jobs {
				c.record(&rec, w, i)
				t0 := time.Now()
				if err := sp.Append(&rec); err != nil {
					errs <- err
					for range jobs { // let the sender finish
					}
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
				sp.Ack(rec.Seq, len(rec.Body))
			}
		}()
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	start := time.Now()
	deadline := start.Add(d)
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		<-tick.C
		jobs <- i
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
	wall := time.Since(start)
	closeErr := sp.Close()
	close(errs)
	if err := errors.Join(<-errs, closeErr, ctx.Err()); err != nil {
		return nil, fmt.Errorf("paced append: %w", err)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return &pacedAppend{Rate: rate, Writers: writers, Appends: len(all), Wall: wall,
		P50: Percentile(all, 0.5), P90: Percentile(all, 0.9), P99: Percentile(all, 0.99)}, nil
}

// rowWriter is the part of sinks.EventStore an insert measurement uses.
type rowWriter interface {
	WriteEvents(ctx context.Context, events []model.Event) error
	WriteSpans(ctx context.Context, spans []model.Span) error
}

// insertLoop writes batches of corpus rows (events and spans in the corpus's mix, fresh ids
// each time) for at least d and two batches, and returns the rows written and the wall time.
func insertLoop(ctx context.Context, w rowWriter, src *rows, d time.Duration) (n int64, wall time.Duration, err error) {
	start := time.Now()
	for i := 0; i < 2 || time.Since(start) < d; i++ {
		if err := ctx.Err(); err != nil {
			return n, time.Since(start), err
		}
		ev, sp := src.next()
		if err := w.WriteEvents(ctx, ev); err != nil {
			return n, time.Since(start), err
		}
		if err := w.WriteSpans(ctx, sp); err != nil {
			return n, time.Since(start), err
		}
		n += int64(len(ev) + len(sp))
	}
	return n, time.Since(start), nil
}

// quiet is a logger for stores opened by the bench: warnings and errors only.
var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// measureBadgerInsert writes corpus rows in 10k-row batches into sinks/badgerevents over a
// fresh on-disk Badger database in a temporary directory, for d, and returns the process's CPU
// time from the first write to the database's close (Badger's flushes and compactions run in
// this process, so they count).
func measureBadgerInsert(ctx context.Context, c *corpus, d time.Duration) (*insertCost, error) {
	const batch = 10_000
	dir, err := os.MkdirTemp("", "svc-bench-badger-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	db, err := badgerdb.OpenEvents(dir, quiet)
	if err != nil {
		return nil, err
	}
	src := newRows(c, uuid.New(), batch, time.Now().UnixNano())
	runtime.GC()
	cpu0 := cpuTime()
	st := badgerevents.New(db)
	layout := "a key per event row"
	if nodeWritesBlocks() {
		layout = "event rows in blocks"
		if err := st.UseBlocks(); err != nil {
			return nil, errors.Join(err, st.Close(), db.Close())
		}
	}
	n, wall, err := insertLoop(ctx, st, src, d)
	if cerr := errors.Join(st.Close(), db.Close()); err == nil {
		err = cerr
	}
	cpu := cpuTime() - cpu0
	if err != nil {
		return nil, fmt.Errorf("badger insert: %w", err)
	}
	return &insertCost{Rows: n, Batch: batch, Wall: wall, CPU: cpu, Layout: layout}, nil
}

// nodeWritesBlocks says whether the bench's embedded nodes write event rows in blocks
// (docs/event-blocks.md): SVC_EVENT_BLOCKS in -node-env, else the node's default. The insert
// part measures the layout the node writes.
func nodeWritesBlocks() bool {
	v := ""
	for _, st := range svcnode.Settings {
		if st.Env == "SVC_EVENT_BLOCKS" {
			v = st.Default
		}
	}
	for _, kv := range nodeEnv {
		if k, val, _ := strings.Cut(kv, "="); k == "SVC_EVENT_BLOCKS" {
			v = val
		}
	}
	b, _ := strconv.ParseBool(v)
	return b
}

// settle is how long the ClickHouse measurement keeps counting the server's CPU after the
// last insert: merges of the parts just written start at once and belong to the insert cost.
const settle = time.Second

// measureClickHouseInsert writes corpus rows in 100k-row batches into a fresh database
// (bench_parts_<random>, migrated, dropped after) on dsn's server for d, and returns this
// process's CPU time and the server process's (its /proc stat, so the server must run on this
// machine: testenv starts it here).
func measureClickHouseInsert(ctx context.Context, c *corpus, dsn string, d time.Duration) (*insertCost, error) {
	const batch = 100_000
	pid, err := clickhouseServerPID(dsn)
	if err != nil {
		return nil, err
	}
	partsDSN, drop, err := freshClickHouseDB(ctx, dsn, "bench_parts_"+strings.ReplaceAll(uuid.NewString(), "-", "")[:12])
	if err != nil {
		return nil, err
	}
	defer drop()
	if err := chstore.Migrate(ctx, partsDSN); err != nil {
		return nil, err
	}
	st, err := chstore.Open(ctx, partsDSN)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	src := newRows(c, uuid.New(), batch, time.Now().UnixNano())
	runtime.GC()
	srv0, err := procCPU(pid)
	if err != nil {
		return nil, err
	}
	cpu0 := cpuTime()
	n, wall, err := insertLoop(ctx, st, src, d)
	if err != nil {
		return nil, fmt.Errorf("clickhouse insert: %w", err)
	}
	cpu := cpuTime() - cpu0
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	srv1, err := procCPU(pid)
	if err != nil {
		return nil, err
	}
	return &insertCost{Rows: n, Batch: batch, Wall: wall, CPU: cpu, ServerCPU: srv1 - srv0, Server: true}, nil
}

// freshClickHouseDB creates database name on dsn's server and returns a DSN naming it and a
// function that drops it.
func freshClickHouseDB(ctx context.Context, dsn, name string) (string, func(), error) {
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return "", nil, err
	}
	opts.ReadTimeout = 30 * time.Second
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return "", nil, err
	}
	if err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close()
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := conn.Exec(dctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", name, err)
		}
		conn.Close()
	}
	u, err := url.Parse(dsn)
	if err != nil {
		drop()
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

// clkTck is the unit of /proc/<pid>/stat's CPU times: USER_HZ, 100 on every Linux platform Go
// supports.
const clkTck = 100

// procCPU is a process's user + system CPU time from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	ticks, err := procTicks(pid)
	return time.Duration(ticks) * time.Second / clkTck, err
}

// procTicks is a process's user + system CPU time from /proc/<pid>/stat, in clock ticks.
func procTicks(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	ticks, err := ParseProcStatCPU(string(b))
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return ticks, nil
}

// clickhouseServerPID finds the clickhouse-server process that listens on dsn's port: among
// the processes named clickhouse-server (or `clickhouse server`), the one holding the listening
// socket; when sockets cannot be matched, the only such process.
func clickhouseServerPID(dsn string) (int, error) {
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil || len(opts.Addr) == 0 {
		return 0, fmt.Errorf("clickhouse DSN: %v", err)
	}
	_, portText, err := net.SplitHostPort(opts.Addr[0])
	if err != nil {
		return 0, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return 0, err
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if b, err := os.ReadFile(table); err == nil {
			for _, ino := range ListenInodes(string(b), port) {
				inodes[ino] = true
			}
		}
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var named []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(d + "/comm")
		cmdline, _ := os.ReadFile(d + "/cmdline")
		if !IsClickHouseServer(strings.TrimSpace(string(comm)), strings.Split(string(cmdline), "\x00")) {
			continue
		}
		named = append(named, pid)
		fds, _ := os.ReadDir(d + "/fd")
		for _, fd := range fds {
			link, err := os.Readlink(d + "/fd/" + fd.Name())
			if err == nil && strings.HasPrefix(link, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				return pid, nil
			}
		}
	}
	switch len(named) {
	case 0:
		return 0, errors.New("no clickhouse-server process on this machine (its CPU is part of the insert cost)")
	case 1:
		return named[0], nil
	}
	return 0, fmt.Errorf("%d clickhouse-server processes and none found listening on port %d", len(named), port)
}

// IsClickHouseServer says whether a process (its /proc comm and cmdline arguments) is a
// ClickHouse server: clickhouse-server (comm is cut to 15 bytes) or `clickhouse server`.
func IsClickHouseServer(comm string, args []string) bool {
	if len(args) == 0 {
		return false
	}
	base := filepath.Base(args[0])
	switch {
	case comm == "clickhouse-serv" || base == "clickhouse-server":
		return true
	case base == "clickhouse" && len(args) > 1 && args[1] == "server":
		return true
	}
	return false
}

// ParseProcStatCPU returns utime + stime, in clock ticks, of a /proc/<pid>/stat line.
func ParseProcStatCPU(stat string) (int64, error) {
	p, err := parseProcStatLine(stat)
	return p.ticks, err
}

// pfKthread is the flags bit (field 9 of /proc/<pid>/stat) of a kernel thread.
const pfKthread = 0x00200000

// parseProcStatLine reads a /proc/<pid>/stat line. The command name (field 2) is in
// parentheses and may hold spaces, so fields count from the last ')'.
func parseProcStatLine(stat string) (procStat, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return procStat{}, errors.New("no ')' after the command name")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); flags is field 9, utime and stime are fields 14 and 15, the
	// start time field 22.
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var n [3]int64
	for j, k := range [...]int{11, 12, 6} {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("field %d: %w", k+3, err)
		}
		n[j] = v
	}
	p := procStat{ticks: n[0] + n[1], kthread: n[2]&pfKthread != 0}
	if len(f) > 19 {
		p.start, _ = strconv.ParseInt(f[19], 10, 64)
	}
	return p, nil
}

// procStat is one process's CPU ticks so far, as scanProcs read them.
type procStat struct {
	ticks   int64
	kthread bool
	start   int64 // when it started, in ticks since boot: a pid reused is another process
}

// scanProcs reads the CPU ticks of every process in /proc. A process that ends while it is read
// is left out, as are lines that cannot be read: the scan attributes time, and what it misses
// stays with the share it could not attribute.
func scanProcs() (map[int]procStat, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	procs := make(map[int]procStat, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if p, err := parseProcStatLine(string(b)); err == nil {
			procs[pid] = p
		}
	}
	return procs, nil
}

// procsSince sums what the processes present at both scans used between them, skipping those in
// skip: kernel threads apart from the others.
func procsSince(before, after map[int]procStat, skip ...int) (kernel, others int64) {
	for pid, a := range after {
		b, ok := before[pid]
		if !ok || slices.Contains(skip, pid) || a.start != b.start || a.ticks < b.ticks {
			continue // new, skipped, or another process under a reused pid
		}
		if a.kthread {
			kernel += a.ticks - b.ticks
		} else {
			others += a.ticks - b.ticks
		}
	}
	return kernel, others
}

// ListenInodes returns the socket inodes of a /proc/net/tcp (or tcp6) table's sockets that
// listen on port.
func ListenInodes(table string, port int) []string {
	var out []string
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		_, p, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		if v, err := strconv.ParseUint(p, 16, 16); err == nil && int(v) == port {
			out = append(out, f[9])
		}
	}
	return out
}
