package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/trace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/spool"
)

// tracedHandler stands for PUT /events in TestAnalyzeTail: it reads the body, appends it to a
// real spool (a durable append, as the node's), and sleeps first when asked to.
type tracedHandler struct {
	sp *spool.Spool
}

func (h *tracedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Header.Get("Slow") != "" {
		time.Sleep(200 * time.Millisecond)
	}
	rec := spool.Record{AppID: uuid.New(), RequestID: uuid.New(), Kind: 1, Body: body}
	if err := h.sp.Append(&rec); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h.sp.Ack(rec.Seq, len(body))
	w.WriteHeader(http.StatusAccepted)
}

// TestAnalyzeTail traces a real HTTP server whose handler appends to a real spool, some of its
// requests sleeping past the slow mark, and checks that each request is found on its
// keep-alive connection and its time put where it went.
func TestAnalyzeTail(t *testing.T) {
	sp, done, err := tempSpool()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	defer sp.Close()
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skip("a trace is already running:", err)
	}
	// One processor, and a goroutine that spins on it all along: requests that wake wait for
	// it to be preempted, and the analysis must say it ran meanwhile.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var stop atomic.Bool
	spun := make(chan struct{})
	go spinForTest(&stop, spun)
	srv := httptest.NewServer(&tracedHandler{sp: sp})
	const requests, slow = 30, 5
	for i := range requests {
		req, err := http.NewRequest(http.MethodPut, srv.URL+"/events", strings.NewReader(strings.Repeat("x", 4096)))
		if err != nil {
			t.Fatal(err)
		}
		if i%(requests/slow) == 0 {
			req.Header.Set("Slow", "1")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("request %d: %s", i, resp.Status)
		}
	}
	srv.Close()
	stop.Store(true)
	<-spun
	trace.Stop()

	// Slow at 150 ms: far above a durable append's sync, even on a loaded machine, so only the
	// sleepers count.
	split, err := analyzeTail(bytes.NewReader(buf.Bytes()), "bench.(*tracedHandler).ServeHTTP", 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if split.Requests != requests || split.Slow.N != slow || split.Fast.N != requests-slow {
		t.Fatalf("%d requests, %d slow, %d fast; want %d, %d, %d", split.Requests, split.Slow.N, split.Fast.N, requests, slow, requests-slow)
	}
	if split.P99 < 200*time.Millisecond || split.Slow.Mean < 200*time.Millisecond {
		t.Errorf("p99 %v, slow mean %v; want both at least the 200 ms slept", split.P99, split.Slow.Mean)
	}
	blocked := func(p tailPart, what string) time.Duration {
		for _, b := range p.Blocked {
			if strings.HasPrefix(b.What, what) {
				return b.Mean
			}
		}
		return 0
	}
	if d := blocked(split.Slow, "sleep"); d < 199*time.Millisecond {
		t.Errorf("slow requests slept %v on average, want about 200 ms: %s", d, split.Slow)
	}
	if d := blocked(split.Fast, "the spool's group sync"); d <= 0 {
		t.Errorf("no time blocked on the spool's sync: %s", split.Fast)
	}
	read, err := requestSegments(bytes.NewReader(buf.Bytes()), "bench.(*tracedHandler).ServeHTTP")
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range read.segs {
		// Every moment of a request is in one state: the states add up to its length.
		sum := sg.running + sg.runnable + sg.syscalls
		for _, d := range sg.blocked {
			sum += d
		}
		if whole := time.Duration(sg.end - sg.start); sum != whole {
			t.Errorf("a request of %v has %v in its states (running %v, runnable %v, syscalls %v, blocked %v)",
				whole, sum, sg.running, sg.runnable, sg.syscalls, sg.blocked)
		}
		for what := range sg.blocked {
			if strings.Contains(what, "abortPendingRead") {
				t.Errorf("time after the answer was flushed counted as the request's: %v", sg.blocked)
			}
		}
	}
	// Each request is one group of the spool (they come one at a time): a write and an
	// fdatasync of the writer's, each a system call the trace shows.
	if n := len(split.Writer.Syscalls); n < 2*requests {
		t.Errorf("the spool's writer made %d system calls, want at least %d: %s", n, 2*requests, split.Writer)
	}
	if split.Fast.Running <= 0 || split.Fast.Mean >= 150*time.Millisecond {
		t.Errorf("fast requests: %s", split.Fast)
	}
	if len(split.RanMeanwhile) == 0 || split.RanMeanwhile[0].What != "other goroutines" || split.RanMeanwhile[0].Of < 0.5 {
		t.Errorf("while the slow requests waited for a CPU, the spinning goroutine ran: %+v", split.RanMeanwhile)
	}
	if _, err := analyzeTail(bytes.NewReader(buf.Bytes()), "no such handler", time.Millisecond); err == nil {
		t.Error("a trace without the requests asked for: no error")
	}
}

// spinForTest keeps a processor busy until stop, then closes done.
func spinForTest(stop *atomic.Bool, done chan<- struct{}) {
	defer close(done)
	for !stop.Load() {
	}
}
