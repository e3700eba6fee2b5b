// Command bench measures svc on this machine in one go and checks it against issue 17's
// targets, writing the table (figure | value | target | met?) to docs/benchmarks.md:
//
//   - (a) decode + validate of the fixture corpus in-process, and the other irreducible parts of
//     the ingest path in isolation (durable append, store insert), whose sum gives the pipeline
//     efficiency (target ≥ 0.75);
//   - (b) end-to-end ingest into the embedded store with loadgen, flat out (≥ 60,000 items/s) and
//     at half that rate (p99 of 50–149-item batches < 10 ms), with CPU and heap profiles;
//   - (c) the same with ClickHouse + PostgreSQL (≥ 45,000 items/s) when testenv set
//     SVC_CLICKHOUSE_DSN / SVC_POSTGRES_DSN;
//   - (d) dashboard query latency on the nodes of (b) and (c) once their stores hold
//     -query-events events (loadgen's, then synthetic copies written with the node stopped):
//     crash groups from the store over 7 and 30 days < 150 ms p95, the journey over 7 days
//     < 300 ms p95, every live answer < 1 ms p99;
//   - (e) Go heap per live session actor;
//   - (f) peak RSS of an embedded node flat out once -sessions session actors are live (< 1 GB
//     with 100k).
//
// `make bench` runs it under testenv: 17 minutes on this 2-core machine, 25 with other work on
// its cores, a third of it filling the stores to 10M events (Badger takes ~30k events/s, slowing
// as it grows; ClickHouse ~200k). BENCH_FLAGS shortens it, e.g. -seconds 10 -query-events 1000000:
//
//	go run ./cmd/testenv -serve -only clickhouse,postgres -- go run ./cmd/bench [-seconds 30] [-query-events 10000000] [-sessions 100000] [-out bench-out/x.md]
//
// -memory-only runs (f) alone and says where the node's memory is; -node-env KEY=VALUE tries a
// setting on every node, e.g. `go run ./cmd/bench -memory-only -node-env GOMEMLIMIT=850MiB`.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/cmd/internal/adminapi"
	"github.com/svc-dev/svc/model"
)

func main() {
	os.Exit(run())
}

type config struct {
	seconds     int
	decodeSec   float64
	partsSec    float64
	concurrency int
	doc         string
	out         string
	write       bool
	skipMemory  bool
	skipQueries bool
	memoryOnly  bool
	queryEvents int64
	sessions    int
	halfRate    float64       // requests/s of the half-rate run; 0: half the flat-out rate
	retryWait   time.Duration // loadgen's -max-retry-wait
	query       queryOpts
}

func run() int {
	var c config
	flag.IntVar(&c.seconds, "seconds", 30, "length of each loadgen run")
	flag.Float64Var(&c.decodeSec, "decode-seconds", 5, "length of the in-process decode measurement")
	flag.Float64Var(&c.partsSec, "parts-seconds", 5, "length of each part measurement (durable append, each store's insert)")
	flag.IntVar(&c.concurrency, "concurrency", 8, "loadgen workers")
	flag.DurationVar(&c.retryWait, "max-retry-wait", 100*time.Millisecond, "loadgen's longest wait before retrying a 503 or 429, whatever its Retry-After says: short, so that a full spool's 503s (Retry-After 5 s) do not stop the flat-out load while the store drains the spool")
	flag.Float64Var(&c.halfRate, "half-rate", 0, "requests per second of the half-rate run instead of half the flat-out rate, to compare two settings at the same load (the verdict then is not the target's)")
	flag.StringVar(&c.doc, "doc", "docs/benchmarks.md", "file whose generated section gets the table (relative to the repository)")
	flag.StringVar(&c.out, "out", "", "write the table to this file instead, a Markdown file of its own replaced whole (relative to the repository); -doc is then left alone")
	flag.BoolVar(&c.write, "write", true, "write the table into -doc (or -out)")
	flag.BoolVar(&c.skipMemory, "skip-memory", false, "do not run the session actor memory benchmark")
	flag.BoolVar(&c.skipQueries, "skip-queries", false, "do not measure the dashboard queries (d)")
	flag.Var(&nodeEnv, "node-env", "KEY=VALUE added to the environment of every node the run starts (repeatable), to measure a setting, e.g. -node-env GOGC=50")
	flag.BoolVar(&c.memoryOnly, "memory-only", false, "run only the node RSS measurement (f), print its row and print the node's memory statistics after the load and keep its heap profile then (bench-out/memory-heap.pprof); no table is written")
	flag.Int64Var(&c.queryEvents, "query-events", targetEvents, "before each store's queries, top it up to this many events with synthetic copies of the corpus events, node stopped (0 = no top-up)")
	flag.IntVar(&c.sessions, "sessions", targetSessions, "live session actors (f) starts on its node before the flat-out load")
	flag.IntVar(&c.query.requests, "query-requests", 300, "timed requests per dashboard query from the store")
	flag.IntVar(&c.query.liveRequests, "live-requests", 3000, "timed requests per live dashboard query")
	flag.IntVar(&c.query.warmup, "query-warmup", 20, "untimed requests before them")
	flag.DurationVar(&c.query.maxTime, "query-max-time", 30*time.Second, "a dashboard query stops early, with fewer requests, past this (its untimed warm-up past a quarter of it)")
	floorReceiver := flag.Bool("floor-receiver", false, "serve the floor's receiver on a loopback port until stdin closes (the bench runs itself so, to count the receiver's CPU alone)")
	flag.Parse()
	if *floorReceiver {
		if err := serveFloor(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench: floor receiver:", err)
			return 1
		}
		return 0
	}
	if c.query.requests < 1 || c.query.liveRequests < 1 || c.query.warmup < 0 || c.queryEvents < 0 || c.partsSec <= 0 || c.sessions < 1 ||
		c.halfRate < 0 || c.retryWait <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -query-requests, -live-requests and -sessions must be at least 1, -parts-seconds and -max-retry-wait positive, -query-warmup, -query-events and -half-rate not negative")
		return 2
	}
	if c.seconds < 2 {
		fmt.Fprintln(os.Stderr, "bench: -seconds must be at least 2 (the CPU profile starts 1 s into the run)")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

// results holds every figure of one run.
type results struct {
	decodeItems    int64
	decodeWall     time.Duration
	decodeCPU      time.Duration
	appendPart     *appendCost
	appendWhy      string
	badgerPart     *insertCost
	badgerWhy      string
	chPart         *insertCost
	chWhy          string
	floor          *floorCost // loadgen against a receiver that only reads the bodies
	floorWhy       string
	embedded       *e2e
	production     *e2e
	productionWhy  string
	actorMem       map[int]float64
	recordedMem    float64 // heap per actor, sessions shaped like the recorded traffic
	recordedEvents float64
	memory         *memoryRun
	memoryWhy      string
	pprofTop       string
}

// e2e is one store's end-to-end result: flat out, then at half its request rate, then the
// dashboard queries (nil when skipped).
type e2e struct {
	full, half summary
	// halfFixed is the half-rate run's request rate when -half-rate set it, else 0.
	halfFixed float64
	queries   *queryRun
	// stored is the rows per second the node wrote into its event store during the flat-out
	// run, backlog the spool bytes acknowledged but not yet in the store at its end: the
	// acknowledged rate outruns the store by the backlog the spool lets build up
	// (--spool-max-bytes), so a short run overstates what the store sustains.
	stored, backlog float64
	// halfStages is where PUT /events spent its time during the half-rate run.
	halfStages []stageSummary
	// halfCPUWait is how long the node's goroutines waited for a CPU once ready to run,
	// during the half-rate run (one summary; none when the node does not export it).
	halfCPUWait []stageSummary
	// cpu is where the machine's CPU went during the flat-out run (nil when unread; cpuWhy
	// says why).
	cpu    *machineCPU
	cpuWhy string
	// spool is the spool alone at the half-rate run's request rate, once the node stopped
	// (nil when it failed; spoolWhy says why).
	spool    *pacedAppend
	spoolWhy string
	// tail is what the half-rate requests spent their time on, from an execution trace of
	// the node taken during a second, shorter run at that rate.
	tail    *tailSplit
	tailWhy string
}

// traceSeconds is the length of the half-rate execution trace; the run around it lasts
// 2 s longer on each side.
const traceSeconds = 6

// traceHalfRate runs loadgen at rate for traceSeconds + 4 s and takes an execution trace of the
// node (its admin /debug/pprof/trace) from 2 s in, then splits the time of the traced PUT
// /events requests. Tracing costs the node CPU, so the measured half-rate run is not traced.
func traceHalfRate(ctx context.Context, n *node, adminToken, out, label string, rate float64,
	loadgen func(rate float64, seconds int) (summary, error)) (*tailSplit, error) {
	fmt.Printf("half rate again for %d s, with an execution trace of %d s\n", traceSeconds+4, traceSeconds)
	path := filepath.Join(out, label+"-halfrate.trace")
	got := make(chan error, 1)
	go func() { // ends when the fetch does (bounded by the client's timeout)
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			got <- ctx.Err()
			return
		}
		got <- fetch(ctx, "http://"+n.admin+"/debug/pprof/trace?seconds="+strconv.Itoa(traceSeconds), adminToken, path)
	}()
	sum, lerr := loadgen(rate, traceSeconds+4)
	if err := errors.Join(<-got, lerr); err != nil {
		return nil, err
	}
	if sum.Failed > 0 {
		return nil, fmt.Errorf("%d of the traced run's requests failed", sum.Failed)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	split, err := analyzeTail(bufio.NewReader(f), "ingest.(*Events).ServeHTTP", targetP99ms*time.Millisecond)
	if err != nil {
		return nil, err
	}
	fmt.Printf("traced %d requests, p99 %.1f ms; slow ones: %s\n", split.Requests, msf(split.P99), split.Slow)
	return split, nil
}

// measureSpoolAlone fills e.spool: the spool alone at e's half rate, for d.
func measureSpoolAlone(ctx context.Context, c config, corp *corpus, e *e2e, d time.Duration) error {
	step(fmt.Sprintf("the spool alone at the half rate, %.1f appends/s", e.half.BatchesPerSec))
	// After the queries a ClickHouse still merges the top-up on the same disk: wait for the
	// other processes as (d) does, and say how they were.
	o := settleDefault
	o.Max = 2 * time.Minute
	settled := waitSettled(ctx, o, cpuSampler(func() int { return 0 })) // the node has stopped
	fmt.Println(settled)
	var err error
	if e.spool, err = measurePacedAppend(ctx, corp, e.half.BatchesPerSec, d, c.concurrency); err == nil {
		e.spool.Settle = settled
	} else {
		if ctx.Err() != nil {
			return err
		}
		e.spoolWhy = "failed: " + err.Error()
		fmt.Fprintln(os.Stderr, "bench:", err)
		return nil
	}
	fmt.Printf("%d appends: p50 %.2f p90 %.2f p99 %.2f ms\n", e.spool.Appends, msf(e.spool.P50), msf(e.spool.P90), msf(e.spool.P99))
	return nil
}

// retryArgs are loadgen's retry flags for a run of seconds: a wait of at most -max-retry-wait
// before each retry of a 503 or 429, and enough retries that a request keeps retrying for the
// whole run rather than failing after loadgen's default 10.
func (c *config) retryArgs(seconds int) []string {
	n := max(10, int(time.Duration(seconds)*time.Second/c.retryWait)+10)
	return []string{"-max-retry-wait", c.retryWait.String(), "-max-retries", strconv.Itoa(n)}
}

// summary is the part of loadgen's -json output the table uses.
type summary struct {
	Requests      int64            `json:"requests"`
	Failed        int64            `json:"failed"`
	Items         int64            `json:"items"`
	ItemsPerSec   float64          `json:"items_per_s"`
	BatchesPerSec float64          `json:"batches_per_s"`
	Latency       latency          `json:"latency_ms"`
	BySize        []sizeLatency    `json:"latency_by_size"`
	Status        map[string]int64 `json:"status"`
	// CPU is loadgen's own user + system time (its rusage), not part of its output.
	CPU time.Duration `json:"-"`
}

type latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

type sizeLatency struct {
	Items    string  `json:"items"`
	Requests int     `json:"requests"`
	Latency  latency `json:"latency_ms"`
}

func bench(ctx context.Context, c config) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	out := filepath.Join(root, "bench-out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	// Profiles and scratch data stay out of git without touching the repository's .gitignore.
	if err := os.WriteFile(filepath.Join(out, ".gitignore"), []byte("*\n"), 0o644); err != nil {
		return err
	}
	var r results
	if c.memoryOnly {
		return memoryOnly(ctx, c, root)
	}

	step("(a) decode + validate of the fixture corpus, in-process")
	corp, err := loadCorpus(filepath.Join(root, "testdata", "sdk"))
	if err != nil {
		return err
	}
	if r.decodeItems, r.decodeWall, r.decodeCPU, err = decodeRate(corp, time.Duration(c.decodeSec*float64(time.Second))); err != nil {
		return err
	}
	fmt.Printf("%s items in %.1f s wall, %.1f CPU-s: %s items per CPU-second\n", thousands(float64(r.decodeItems)),
		r.decodeWall.Seconds(), r.decodeCPU.Seconds(), thousands(perCPU(r)))

	chDSN, pgDSN := os.Getenv("SVC_CLICKHOUSE_DSN"), os.Getenv("SVC_POSTGRES_DSN")
	partsFor := time.Duration(c.partsSec * float64(time.Second))
	step(fmt.Sprintf("parts in isolation: durable append (%d writers)", c.concurrency))
	if r.appendPart, err = measureAppend(corp, partsFor, c.concurrency); err != nil {
		return err
	}
	fmt.Printf("%s appends in %.1f s, %.1f CPU-s: %.2f µs CPU per item (%.1f items per request)\n", thousands(float64(r.appendPart.Appends)),
		r.appendPart.Wall.Seconds(), r.appendPart.CPU.Seconds(), r.appendPart.perItem(), r.appendPart.ItemsPerReq)
	step("parts in isolation: store insert, embedded (Badger)")
	if r.badgerPart, err = measureBadgerInsert(ctx, corp, partsFor); err != nil {
		return err
	}
	fmt.Printf("%s rows in %.1f s, %.1f CPU-s: %.2f µs CPU per row\n", thousands(float64(r.badgerPart.Rows)),
		r.badgerPart.Wall.Seconds(), r.badgerPart.CPU.Seconds(), r.badgerPart.perItem())
	if chDSN == "" {
		r.chWhy = "skipped: run under make bench"
		step("parts in isolation: store insert, ClickHouse: " + r.chWhy)
	} else {
		step("parts in isolation: store insert, ClickHouse")
		if r.chPart, err = measureClickHouseInsert(ctx, corp, chDSN, partsFor); err != nil {
			if ctx.Err() != nil {
				return err
			}
			r.chWhy = "failed: " + err.Error()
			fmt.Fprintln(os.Stderr, "bench: clickhouse insert part:", err)
		} else {
			fmt.Printf("%s rows in %.1f s, %.1f CPU-s here + %.1f CPU-s server: %.2f µs CPU per row\n", thousands(float64(r.chPart.Rows)),
				r.chPart.Wall.Seconds(), r.chPart.CPU.Seconds(), r.chPart.ServerCPU.Seconds(), r.chPart.perItem())
		}
	}

	svcBin, lgBin, err := buildBins(ctx, root)
	if err != nil {
		return err
	}
	spoolFor := time.Duration(min(c.seconds, 20)) * time.Second // the spool alone at each half rate
	step("floor: loadgen flat out against a receiver that only reads each body and answers 202")
	if r.floor, err = measureFloor(ctx, c, root, lgBin, 2*partsFor); err != nil {
		if ctx.Err() != nil {
			return err
		}
		r.floorWhy = "failed: " + err.Error()
		fmt.Fprintln(os.Stderr, "bench: floor:", err)
	} else {
		fmt.Printf("%s items/s; loadgen %.2f µs and the receiver %.2f µs of CPU per item\n", thousands(r.floor.Run.ItemsPerSec),
			r.floor.loadgenPerItem(), r.floor.receiverPerItem())
	}

	step("(b) end to end, embedded store")
	if r.embedded, err = endToEnd(ctx, c, corp, root, svcBin, lgBin, out, "embedded", nil, openBadgerSink); err != nil {
		return err
	}
	if err := measureSpoolAlone(ctx, c, corp, r.embedded, spoolFor); err != nil {
		return err
	}
	cpuProf := filepath.Join(out, "embedded-cpu.pprof")
	top, err := output(ctx, root, os.Environ(), "go", "tool", "pprof", "-top", "-nodecount=15", svcBin, cpuProf)
	if err != nil {
		return err
	}
	r.pprofTop = strings.TrimSpace(string(top))
	fmt.Println(r.pprofTop)

	chVersion := "not used"
	if chDSN == "" || pgDSN == "" {
		r.productionWhy = "skipped: run under make bench"
		step("(c) ClickHouse + PostgreSQL: " + r.productionWhy)
	} else {
		step("(c) end to end, ClickHouse + PostgreSQL")
		chVersion = clickhouseVersion(ctx, chDSN)
		if r.production, err = endToEnd(ctx, c, corp, root, svcBin, lgBin, out, "production",
			[]string{"SVC_CLICKHOUSE_DSN=" + chDSN, "SVC_POSTGRES_DSN=" + pgDSN}, clickHouseSink(chDSN)); err != nil {
			return err
		}
		if err := measureSpoolAlone(ctx, c, corp, r.production, spoolFor); err != nil {
			return err
		}
	}

	if c.skipMemory {
		r.memoryWhy = "not run (-skip-memory)"
	} else {
		step(fmt.Sprintf("(f) node RSS flat out with %s live sessions, embedded", thousands(float64(c.sessions))))
		if r.memory, err = measureMemory(ctx, c, corp, root, svcBin, lgBin); err != nil {
			if ctx.Err() != nil {
				return err
			}
			r.memoryWhy = "failed: " + err.Error()
			fmt.Fprintln(os.Stderr, "bench: memory run:", err)
		} else {
			fmt.Println(memoryRows(r.memory, "")[0].Value)
		}
	}

	if !c.skipMemory {
		step("(e) heap per live session actor")
		b, err := output(ctx, root, os.Environ(), "go", "test", "-run", "^$", "-bench", "BenchmarkSessionActorMemory",
			"-benchtime", "1x", "-count=1", "./actors/")
		fmt.Print(string(b))
		if err != nil {
			return err
		}
		if r.actorMem, err = ParseActorMemory(string(b)); err != nil {
			return err
		}
		r.recordedMem, r.recordedEvents, _ = ParseRecordedActorMemory(string(b))
	}

	rows := buildRows(r)
	table := Table(rows)
	fmt.Println()
	fmt.Print(table)
	if !c.write {
		return nil
	}
	cmdline := "make bench"
	if len(os.Args) > 1 {
		cmdline += " BENCH_FLAGS='" + strings.Join(os.Args[1:], " ") + "'"
	}
	section := docSection(machine(ctx, chVersion), cmdline, c, table, r.pprofTop)
	path, whole := tableTarget(root, c)
	var next string
	if whole {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("-out: %w", err)
		}
		next = outFile(section)
	} else {
		doc, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if next, err = ReplaceSection(string(doc), section); err != nil {
			return err
		}
	}
	if err := os.WriteFile(path, []byte(next), 0o644); err != nil {
		return fmt.Errorf("write the table: %w", err)
	}
	if whole {
		fmt.Printf("wrote the table to %s (%s is unchanged: only make bench updates it)\n", path, c.doc)
	} else {
		fmt.Println("wrote", path)
	}
	return nil
}

func step(s string) { fmt.Printf("\n== %s\n", s) }

func perCPU(r results) float64 {
	if r.decodeCPU <= 0 {
		return 0
	}
	return float64(r.decodeItems) / r.decodeCPU.Seconds()
}

// decodeRate decodes and validates every corpus body round-robin for d and returns the items
// done, the wall time and the process's CPU time over it (GC included): on a shared machine CPU
// time, not wall, says what one core does.
func decodeRate(c *corpus, d time.Duration) (items int64, wall, cpu time.Duration, err error) {
	app := uuid.New()
	runtime.GC()
	cpu0, start := cpuTime(), time.Now()
	for time.Since(start) < d {
		for i, body := range c.bodies {
			if _, err := model.DecodeBatch(body, app, false); err != nil {
				return 0, 0, 0, err
			}
			items += c.items[i]
		}
	}
	return items, time.Since(start), cpuTime() - cpu0, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// endToEnd starts a fresh node, creates a user and an app, runs loadgen flat out (taking CPU and
// heap profiles of the node meanwhile), then at half the measured request rate, tops the store
// up to c.queryEvents with synthetic copies written through sink (fillStore: the node is
// restarted around it), times the dashboard queries, and stops the node.
func endToEnd(ctx context.Context, c config, corp *corpus, root, svcBin, lgBin, out, label string, storeEnv []string,
	sink func(context.Context, string) (*eventSink, error)) (*e2e, error) {
	dataDir, err := os.MkdirTemp("", "svc-bench-"+label+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)
	n, err := startNode(ctx, root, svcBin, dataDir, storeEnv)
	if err != nil {
		return nil, err
	}
	defer func() { _ = n.stop() }() // the node serving at the end: the top-up restarts it
	fmt.Printf("node on %s (admin %s), data in %s\n", n.addr, n.admin, dataDir)

	u, a, err := benchApp(ctx, root, svcBin, n, dataDir)
	if err != nil {
		return nil, err
	}

	loadgen := func(rate float64, seconds int) (summary, error) {
		args := []string{"-url", "http://" + n.addr, "-key", a["api_key"], "-concurrency", strconv.Itoa(c.concurrency),
			"-duration", strconv.Itoa(seconds) + "s", "-json", "-progress", "0"}
		args = append(args, c.retryArgs(seconds)...)
		if rate > 0 {
			args = append(args, "-rate", strconv.FormatFloat(rate, 'f', 1, 64))
		}
		s, err := runLoadgen(ctx, root, lgBin, args...)
		if err != nil {
			return s, err
		}
		fmt.Printf("%s items/s, %.1f batches/s, p50 %.1f p90 %.1f p99 %.1f ms, %d failed, status %v\n",
			thousands(s.ItemsPerSec), s.BatchesPerSec, s.Latency.P50, s.Latency.P90, s.Latency.P99, s.Failed, s.Status)
		return s, nil
	}

	// The node runs without our SVC_ variables (baseEnv), so its admin token is the one in its
	// data directory.
	tb, err := os.ReadFile(filepath.Join(dataDir, adminapi.TokenFile))
	if err != nil {
		return nil, err
	}
	adminToken := strings.TrimSpace(string(tb))

	// Profiles: the CPU one over 10 s (less in a shorter run) from 1 s into the flat-out run, the
	// heap one after it.
	profSec := min(10, c.seconds-1)
	profErr := make(chan error, 1)
	go func() { // ends when both fetches have (each bounded by the client's timeout)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			profErr <- ctx.Err()
			return
		}
		err := fetch(ctx, "http://"+n.admin+"/debug/pprof/profile?seconds="+strconv.Itoa(profSec), adminToken, filepath.Join(out, label+"-cpu.pprof"))
		if err == nil {
			err = fetch(ctx, "http://"+n.admin+"/debug/pprof/heap", adminToken, filepath.Join(out, label+"-heap.pprof"))
		}
		profErr <- err
	}()
	var e e2e
	before, err := nodeMetrics(ctx, n, adminToken)
	if err != nil {
		return nil, err
	}
	serverPID := 0 // a ClickHouse server on this machine, whose CPU the flat-out run counts
	for _, kv := range storeEnv {
		if dsn, ok := strings.CutPrefix(kv, "SVC_CLICKHOUSE_DSN="); ok {
			if pid, err := clickhouseServerPID(dsn); err == nil {
				serverPID = pid
			} else {
				fmt.Fprintln(os.Stderr, "bench: the ClickHouse server's CPU is not counted:", err)
			}
		}
	}
	m0, m0Err := machineSample(n.cmd.Process.Pid, serverPID)
	sendStart := time.Now()
	fmt.Printf("flat out, %d s, %d workers\n", c.seconds, c.concurrency)
	if e.full, err = loadgen(0, c.seconds); err != nil {
		<-profErr
		return nil, err
	}
	ran := time.Since(sendStart)
	var m1Node int64 // the node's ticks when loadgen stopped: what it spends after is the backlog's
	if m1, err := machineSample(n.cmd.Process.Pid, serverPID); err == nil && m0Err == nil {
		m1Node = m1.cpu.node
		e.cpu = machineSince(m0, m1, n.cmd.Process.Pid, serverPID)
		e.cpu.Loadgen, e.cpu.Items = e.full.CPU, e.full.Items
		if sp, ok := e.cpu.split(); ok {
			fmt.Println("CPU per item flat out:", sp.String())
		}
	} else {
		e.cpuWhy = "not measured: " + errors.Join(m0Err, err).Error()
		fmt.Fprintln(os.Stderr, "bench: the flat-out run's CPU is not counted:", errors.Join(m0Err, err))
	}
	after, err := nodeMetrics(ctx, n, adminToken)
	if err != nil {
		<-profErr
		return nil, err
	}
	r0, _ := metricSum(before, "svc_flush_rows_total")
	r1, _ := metricSum(after, "svc_flush_rows_total")
	e.stored = (r1 - r0) / ran.Seconds()
	e.backlog, _ = metricSum(after, "svc_spool_pending_bytes")
	fmt.Printf("the store took %s rows/s; %.0f MiB in the spool not yet stored at the end\n", thousands(e.stored), e.backlog/(1<<20))
	// The half-rate run starts once the store has caught up, so its latencies are not those of
	// a node still writing the flat-out run's backlog.
	after, drain, err := drained(ctx, n, adminToken)
	if err != nil {
		<-profErr
		return nil, err
	}
	if e.cpu != nil {
		if t, err := procTicks(n.cmd.Process.Pid); err == nil {
			e.cpu.DrainNode, e.cpu.Drain = t-m1Node, drain
		} else {
			e.cpu, e.cpuWhy = nil, "the node's CPU after the run could not be read: "+err.Error()
		}
	}
	r2, _ := metricSum(after, "svc_flush_rows_total")
	fmt.Printf("backlog stored in %.1f s; %s rows stored for %s items acknowledged\n", drain.Seconds(), thousands(r2-r0), thousands(float64(e.full.Items)))
	if int64(r2-r0) != e.full.Items {
		fmt.Fprintln(os.Stderr, "bench: warning: the store holds a different number of rows than the items the node acknowledged")
	}
	if err := <-profErr; err != nil {
		return nil, fmt.Errorf("profiles: %w", err)
	}
	fmt.Printf("profiles in %s/%s-{cpu,heap}.pprof\n", out, label)
	half := e.full.BatchesPerSec / 2
	if c.halfRate > 0 {
		half, e.halfFixed = c.halfRate, c.halfRate
	}
	if half < 1 {
		half = 1
	}
	fmt.Printf("half rate, %.1f requests/s\n", half)
	if before, err = nodeMetrics(ctx, n, adminToken); err != nil {
		return nil, err
	}
	if e.half, err = loadgen(half, c.seconds); err != nil {
		return nil, err
	}
	if after, err = nodeMetrics(ctx, n, adminToken); err != nil {
		return nil, err
	}
	e.halfStages = stagesBetween(parseStages(before), parseStages(after))
	e.halfCPUWait = stagesBetween(histograms(before, schedLatencies, ""), histograms(after, schedLatencies, ""))
	fmt.Printf("PUT /events stages, mean / p99 ms: %s\n", stagesValue(e.halfStages))
	if e.tail, err = traceHalfRate(ctx, n, adminToken, out, label, half, loadgen); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		e.tailWhy = "failed: " + err.Error()
		fmt.Fprintln(os.Stderr, "bench: half-rate trace:", err)
	}
	if c.skipQueries {
		return &e, nil
	}
	fmt.Println("dashboard queries")
	tok, err := adminCall(ctx, root, svcBin, n, dataDir, "token", "--email", "bench@example.com")
	if err != nil {
		return nil, err
	}
	d := &dashboard{base: "http://" + n.addr, token: tok["access_token"], team: u["own_team_id"], app: a["app_id"],
		client: &http.Client{Timeout: 2 * time.Minute}, windows: map[int][2]string{},
		metrics: func(ctx context.Context) (string, error) { return nodeMetrics(ctx, n, adminToken) },
		cpu:     cpuSampler(func() int { return n.cmd.Process.Pid })}
	now := time.Now()
	from7, to7 := QueryWindow(now, sendStart, corp.widest())
	from30, to30 := LastDays(now, 30)
	d.windows[7], d.windows[30] = [2]string{from7, to7}, [2]string{from30, to30}
	fmt.Printf("loadgen moved each replay's latest item to its send time; the widest body spans %s\n", corp.widest().Round(time.Second))
	var fill func(have int64) (*fillRun, error)
	if c.queryEvents > 0 {
		app, err := uuid.Parse(a["app_id"])
		if err != nil {
			return nil, fmt.Errorf("create-app answer: %w", err)
		}
		fill = func(have int64) (*fillRun, error) {
			if have >= c.queryEvents {
				return nil, nil
			}
			next, f, err := fillStore(ctx, n, root, svcBin, storeEnv, corp, app, have, c.queryEvents, sink)
			if err != nil {
				return nil, err
			}
			n, d.base = next, "http://"+next.addr
			return f, nil
		}
	}
	e.queries = runQueries(ctx, d, c.query, fill)
	return &e, nil
}

// runLoadgen runs loadgen with args (which ask for -json) against a node and returns its
// summary. Failed requests are reported in the table, not fatal: only a missing summary is.
func runLoadgen(ctx context.Context, root, lgBin string, args ...string) (summary, error) {
	b, cpu, runErr := outputCPU(ctx, root, baseEnv(), lgBin, args...)
	s := summary{CPU: cpu}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("loadgen summary: %w (run: %v)", err, runErr)
	}
	if runErr != nil {
		fmt.Fprintf(os.Stderr, "bench: loadgen: %v\n", runErr)
	}
	return s, nil
}

// adminCall runs `svc admin args…` against node n and returns its JSON answer.
func adminCall(ctx context.Context, root, svcBin string, n *node, dataDir string, args ...string) (map[string]string, error) {
	b, err := output(ctx, root, baseEnv(), svcBin, append([]string{"admin", "--admin-addr", n.admin, "--data-dir", dataDir}, args...)...)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	return m, json.Unmarshal(b, &m)
}

// buildBins builds bin/svc and bin/loadgen of the repository at root.
func buildBins(ctx context.Context, root string) (svcBin, lgBin string, err error) {
	step("building bin/svc and bin/loadgen")
	svcBin, lgBin = filepath.Join(root, "bin", "svc"), filepath.Join(root, "bin", "loadgen")
	if _, err := output(ctx, root, os.Environ(), "go", "build", "-o", svcBin, "./cmd/svc"); err != nil {
		return "", "", err
	}
	if _, err := output(ctx, root, os.Environ(), "go", "build", "-o", lgBin, "./cmd/loadgen"); err != nil {
		return "", "", err
	}
	return svcBin, lgBin, nil
}

// memoryOnly is -memory-only: the node RSS run (f) alone, its row printed, for tuning memory
// without the rest of make bench.
func memoryOnly(ctx context.Context, c config, root string) error {
	corp, err := loadCorpus(filepath.Join(root, "testdata", "sdk"))
	if err != nil {
		return err
	}
	svcBin, lgBin, err := buildBins(ctx, root)
	if err != nil {
		return err
	}
	step(fmt.Sprintf("(f) node RSS flat out with %s live sessions, embedded", thousands(float64(c.sessions))))
	m, err := measureMemory(ctx, c, corp, root, svcBin, lgBin)
	if err != nil {
		return err
	}
	fmt.Println(memoryRows(m, "")[0].Value)
	return nil
}

// benchApp creates the bench user and an app on node n: the create-user and create-app answers.
func benchApp(ctx context.Context, root, svcBin string, n *node, dataDir string) (user, app map[string]string, err error) {
	if user, err = adminCall(ctx, root, svcBin, n, dataDir, "create-user", "--email", "bench@example.com", "--name", "Bench"); err != nil {
		return nil, nil, err
	}
	app, err = adminCall(ctx, root, svcBin, n, dataDir, "create-app", "--team", user["own_team_id"], "--name", "Bench")
	return user, app, err
}

// fetch saves the answer of GET url (an admin listener path: token is the admin token) to path.
func fetch(ctx context.Context, url, token, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func clickhouseVersion(ctx context.Context, dsn string) string {
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	opts.ReadTimeout = 10 * time.Second
	db := clickhouse.OpenDB(opts)
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&v); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return v
}

// machine describes where the run happened, for the doc.
func machine(ctx context.Context, chVersion string) string {
	mem := "unknown"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
			}
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = ", load average at the end " + strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return fmt.Sprintf("Run %s on %d cores (nproc), %s memory, %s %s/%s, ClickHouse %s%s.",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), mem, runtime.Version(), runtime.GOOS, runtime.GOARCH, chVersion, load)
}
