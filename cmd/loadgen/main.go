// Command loadgen replays the recorded SDK batches of testdata/sdk against a running svc
// node's PUT /events, with fresh ids on every replay so nothing is deduplicated, and reports
// throughput, latency percentiles and status counts.
//
//	go run ./cmd/loadgen -url http://127.0.0.1:8080 -key KEY -concurrency 8 -duration 30s
//	go run ./cmd/loadgen -url … -key … -rate 500 -batches 10000 -format multipart -json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/svc-dev/svc/cmd/internal/replay"
)

const usage = `usage: loadgen -url URL -key API_KEY [flags]

Replays the batch_*.json bodies of testdata/sdk (in the repository; -dir to choose) against
PUT /events, round-robin, each with a new svc-req-id and new event, session, attachment, span
and trace ids (consistent within the batch). Exits 1 when any request fails for
good or any 5xx other than a retried 503 came back, unless -allow-errors; 2 on bad usage.

flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	var (
		url          = fs.String("url", "http://localhost:8080", "svc base URL")
		key          = fs.String("key", os.Getenv("SVC_API_KEY"), "app API key (default $SVC_API_KEY)")
		dir          = fs.String("dir", "", "folder of batch_*.json bodies (default testdata/sdk of the repository)")
		match        = fs.String("match", "", "use only fixtures whose file name matches this regular expression")
		rate         = fs.Float64("rate", 0, "target requests per second; 0 = as fast as possible")
		concurrency  = fs.Int("concurrency", 8, "workers, each with one request in flight")
		duration     = fs.Duration("duration", 30*time.Second, "how long to send (not applied when only -batches is given)")
		batches      = fs.Int64("batches", 0, "how many requests to send; 0 = no limit")
		format       = fs.String("format", "json", "json or multipart (one event part per event, one span part per span)")
		now          = fs.Bool("now", true, "shift each batch's times so its latest event lands on the send time, keeping their order")
		chunked      = fs.Bool("chunked", false, "send bodies with chunked transfer encoding, as current SDKs do")
		asJSON       = fs.Bool("json", false, "print the summary as JSON on stdout")
		allowErrors  = fs.Bool("allow-errors", false, "exit 0 even when requests failed")
		maxRetries   = fs.Int("max-retries", 10, "retries of one request after 429/503")
		maxRetryWait = fs.Duration("max-retry-wait", time.Minute, "longest wait before a retry, whatever Retry-After says")
		timeout      = fs.Duration("timeout", time.Minute, "limit of one HTTP exchange")
		every        = fs.Duration("progress", 5*time.Second, "interval of progress lines when stderr is not a terminal; 0 = no progress")
		cpuProfile   = fs.String("cpuprofile", "", "write loadgen's own CPU profile to this file")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "loadgen: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "loadgen: "+format+"\n", a...)
		return 2
	}
	switch {
	case *key == "":
		return bad("-key (or SVC_API_KEY) is required: an app API key, e.g. from `svc admin create-app`")
	case *format != "json" && *format != "multipart":
		return bad("-format must be json or multipart, not %q", *format)
	case *rate < 0 || *concurrency < 1 || *batches < 0 || *duration < 0 || *maxRetries < 0:
		return bad("-rate, -batches, -duration and -max-retries must not be negative; -concurrency at least 1")
	}
	if *batches > 0 && !set["duration"] {
		*duration = 0
	}
	var re *regexp.Regexp
	if *match != "" {
		var err error
		if re, err = regexp.Compile(*match); err != nil {
			return bad("-match: %v", err)
		}
	}
	if *dir == "" {
		d, err := replay.FixturesDir()
		if err != nil {
			return bad("%v", err)
		}
		*dir = d
	}
	templates, err := replay.LoadTemplates(*dir, re, *format == "multipart")
	if err != nil {
		return bad("%v", err)
	}

	cfg := Config{URL: *url, Key: *key, Templates: templates, Multipart: *format == "multipart",
		Rate: *rate, Concurrency: *concurrency, Duration: *duration, Batches: *batches, Now: *now,
		Chunked: *chunked, MaxRetries: *maxRetries, MaxRetryWait: *maxRetryWait, Timeout: *timeout}

	// The first interrupt stops sending and waits for the requests in flight; with the handler
	// gone, a second one ends the process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }()

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return bad("-cpuprofile: %v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return bad("-cpuprofile: %v", err)
		}
		defer pprof.StopCPUProfile()
	}
	live := new(Live)
	progDone := make(chan struct{})
	stopProg := make(chan struct{})
	if *every > 0 {
		f, _ := stderr.(*os.File)
		p := Progress{W: stderr, TTY: f != nil && isTerminal(f), Every: *every, Duration: *duration, Batches: *batches}
		go func() { defer close(progDone); p.Run(live, stopProg) }()
	} else {
		close(progDone)
	}
	sum, err := Run(ctx, cfg, live)
	close(stopProg)
	<-progDone
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(sum)
	} else {
		sum.Print(stdout)
	}
	if n := sum.Failures(); n > 0 && !*allowErrors {
		fmt.Fprintf(stderr, "loadgen: %d failures (first: %s)\n", n, sum.FirstError)
		return 1
	}
	return 0
}
