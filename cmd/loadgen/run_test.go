package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/cmd/internal/replay"
	"github.com/svc-dev/svc/cmd/svc/node"
	"github.com/svc-dev/svc/model"
)

// startNode runs an embedded-store node on free loopback ports with the request rate limit out
// of the way; it is shut down when the test ends.
func startNode(t *testing.T) *node.Node {
	t.Helper()
	cfg, err := node.ParseConfig([]string{"--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--data-dir", t.TempDir(), "--flush-interval", "100ms", "--ingest-rate-limit", "1000000",
		"--max-event-age", "175200h"}, // -now=false replays the recorded times, months old
		func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := node.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	// The recorded times lie beyond the apps' retention: an app made before the janitor's
	// first round ends could lose what the test sends to it.
	select {
	case <-n.Swept():
	case <-time.After(time.Minute):
		t.Fatal("the janitor's first round did not end within a minute")
	}
	return n
}

// newApp creates a user, team and app through the metadata store and returns the app id and key.
func newApp(t *testing.T, n *node.Node) (uuid.UUID, string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	u := model.User{ID: uuid.New(), Name: "Load", Email: uuid.NewString() + "@example.com", CreatedAt: now, UpdatedAt: now}
	team := model.Team{ID: uuid.New(), Name: "Load team", CreatedAt: now, UpdatedAt: now}
	if err := n.Meta.CreateUser(ctx, u, team); err != nil {
		t.Fatal(err)
	}
	app := model.App{ID: uuid.New(), TeamID: team.ID, Name: "load", RetentionDays: 30, CreatedAt: now, UpdatedAt: now}
	key := model.APIKey{AppID: app.ID, Key: model.NewAPIKey(), CreatedAt: now}
	if err := n.Meta.CreateApp(ctx, app, key); err != nil {
		t.Fatal(err)
	}
	return app.ID, key.Key
}

// waitStored waits until the node's spool holds nothing the event store lacks, then returns
// what the store counts for app.
func waitStored(t *testing.T, n *node.Node, app uuid.UUID) (events, spans int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for n.Spool.PendingBytes() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("spool still holds %d bytes after a minute", n.Spool.PendingBytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
	events, spans, err := n.Events.Count(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	return events, spans
}

// runCLI runs loadgen as the command line would and decodes its -json summary.
func runCLI(t *testing.T, args ...string) (int, Summary, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append(args, "-json"), &out, &errb)
	var s Summary
	if code != 2 {
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatalf("summary is not JSON (exit %d): %v\nstdout: %s\nstderr: %s", code, err, out.String(), errb.String())
		}
	}
	return code, s, errb.String()
}

// expected counts the items of the first n round-robin replays, from the fixtures decoded
// independently of the templates.
func expected(t *testing.T, n int, multipartRules bool) (events, spans int64) {
	t.Helper()
	dir, err := replay.FixturesDir()
	if err != nil {
		t.Fatal(err)
	}
	ts, err := replay.LoadTemplates(dir, nil, multipartRules)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < n; k++ {
		b, err := model.DecodeBatch(ts[k%len(ts)].Body(), uuid.Nil, false)
		if err != nil {
			t.Fatal(err)
		}
		events += int64(len(b.Events))
		spans += int64(len(b.Spans))
	}
	return events, spans
}

// TestRunAgainstNode replays the corpus into a real node and checks every event and span sent
// was stored once: fresh ids mean nothing is deduplicated, and the summary counts what the
// store holds.
func TestRunAgainstNode(t *testing.T) {
	n := startNode(t)
	base := "http://" + n.Addr()
	tests := []struct {
		format  string
		batches int
		status  string
		extra   []string
	}{
		{"json", 200, "200", nil},
		{"multipart", 100, "202", nil},
		{"json", 60, "200", []string{"-chunked", "-now=false"}},
	}
	for _, tt := range tests {
		t.Run(tt.format+strconv.Itoa(tt.batches), func(t *testing.T) {
			app, key := newApp(t, n)
			args := append([]string{"-url", base, "-key", key, "-format", tt.format, "-batches", strconv.Itoa(tt.batches),
				"-concurrency", "4", "-progress", "200ms"}, tt.extra...)
			code, s, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			wantEv, wantSp := expected(t, tt.batches, tt.format == "multipart")
			if s.Requests != int64(tt.batches) || s.Status[tt.status] != int64(tt.batches) || len(s.Status) != 1 {
				t.Errorf("requests %d, status %v; want %d × %s", s.Requests, s.Status, tt.batches, tt.status)
			}
			if s.Events != wantEv || s.Spans != wantSp || s.Items != wantEv+wantSp {
				t.Errorf("summary: %d events, %d spans, %d items; want %d, %d", s.Events, s.Spans, s.Items, wantEv, wantSp)
			}
			if s.Failed != 0 || s.TransportErrors != 0 || s.Retries != 0 || s.Attempts != int64(tt.batches) {
				t.Errorf("failed %d, transport %d, retries %d, attempts %d", s.Failed, s.TransportErrors, s.Retries, s.Attempts)
			}
			if s.Latency.P50 <= 0 || s.Latency.P50 > s.Latency.P99 || s.Latency.P99 > s.Latency.Max || s.EventsPerSec <= 0 {
				t.Errorf("implausible figures: %+v, %.0f events/s", s.Latency, s.EventsPerSec)
			}
			var bySize int64
			for _, c := range s.BySize {
				bySize += int64(c.Requests)
				if c.Latency.P50 <= 0 || c.Latency.P99 > s.Latency.Max {
					t.Errorf("size class %s: implausible %+v", c.Items, c.Latency)
				}
			}
			if bySize != s.Requests {
				t.Errorf("size classes hold %d requests, want %d", bySize, s.Requests)
			}
			gotEv, gotSp := waitStored(t, n, app)
			if gotEv != s.Events || gotSp != s.Spans {
				t.Errorf("store holds %d events, %d spans; loadgen sent %d, %d", gotEv, gotSp, s.Events, s.Spans)
			}
		})
	}
}

// front stands between loadgen and the node and answers some attempts itself, to exercise the
// retry and failure paths against a real node. behave gets the index of the request id (in
// order of first arrival) and its attempt number and returns what to do: 0 forwards, a status
// answers it with Retry-After, -1 drops the connection.
type front struct {
	t          *testing.T
	proxy      *httputil.ReverseProxy
	retryAfter string
	behave     func(idx, attempt int) int

	mu    sync.Mutex
	ids   map[string]*idState
	order int
}

type idState struct {
	idx      int
	attempts []time.Time
}

func newFront(t *testing.T, nodeAddr, retryAfter string, behave func(idx, attempt int) int) (*front, string) {
	u, err := url.Parse("http://" + nodeAddr)
	if err != nil {
		t.Fatal(err)
	}
	f := &front{t: t, proxy: httputil.NewSingleHostReverseProxy(u), retryAfter: retryAfter, behave: behave, ids: map[string]*idState{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("svc-req-id")
	f.mu.Lock()
	st, ok := f.ids[id]
	if !ok {
		st = &idState{idx: f.order}
		f.order++
		f.ids[id] = st
	}
	attempt := len(st.attempts)
	st.attempts = append(st.attempts, time.Now())
	f.mu.Unlock()
	switch what := f.behave(st.idx, attempt); {
	case what == 0:
		f.proxy.ServeHTTP(w, r)
	case what < 0:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	default:
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Retry-After", f.retryAfter)
		w.WriteHeader(what)
	}
}

// attempts lists, per request index, when each attempt with that request id arrived.
func (f *front) attempts() map[int][]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[int][]time.Time{}
	for _, st := range f.ids {
		out[st.idx] = st.attempts
	}
	return out
}

// TestRunRetriesAndFailures checks what loadgen does with answers other than success: 429 and
// 503 are retried with the same request id after Retry-After (capped), other failures end the
// request and make the exit status 1 unless -allow-errors. Whatever happened, the summary
// counts exactly what the node stored.
func TestRunRetriesAndFailures(t *testing.T) {
	n := startNode(t)
	tests := []struct {
		name       string
		retryAfter string
		behave     func(idx, attempt int) int
		args       []string
		batches    int
		code       int
		failed     int64
		retries    int64
		transport  int64
		check      func(t *testing.T, s Summary, att map[int][]time.Time)
	}{
		{
			name: "429 then accepted, Retry-After capped", retryAfter: "60", batches: 30, retries: 10,
			behave: func(idx, attempt int) int { return when(idx%3 == 0 && attempt == 0, 429) },
			args:   []string{"-max-retry-wait", "20ms"},
			check: func(t *testing.T, s Summary, att map[int][]time.Time) {
				for idx := 0; idx < 30; idx += 3 {
					if len(att[idx]) != 2 {
						t.Errorf("request %d: %d attempts with its id, want 2", idx, len(att[idx]))
					}
				}
				if s.Status["429"] != 10 || s.Status["200"] != 30 || s.ElapsedSec > 20 {
					t.Errorf("status %v after %.1fs", s.Status, s.ElapsedSec)
				}
			},
		},
		{
			name: "503 waits for Retry-After", retryAfter: "1", batches: 5, retries: 1,
			behave: func(idx, attempt int) int { return when(idx == 2 && attempt == 0, 503) },
			check: func(t *testing.T, s Summary, att map[int][]time.Time) {
				if a := att[2]; len(a) != 2 || a[1].Sub(a[0]) < time.Second {
					t.Errorf("retry of request 2: attempts %v, want 2, one second apart", a)
				}
			},
		},
		{
			name: "500 fails the run", batches: 10, code: 1, failed: 1,
			behave: func(idx, attempt int) int { return when(idx == 4, 500) },
			check: func(t *testing.T, s Summary, att map[int][]time.Time) {
				if s.Status["500"] != 1 || s.Requests != 9 || len(att[4]) != 1 {
					t.Errorf("status %v, %d requests, %d attempts of the failing one", s.Status, s.Requests, len(att[4]))
				}
			},
		},
		{
			name: "500 allowed", batches: 10, failed: 1, args: []string{"-allow-errors"},
			behave: func(idx, attempt int) int { return when(idx == 4, 500) },
		},
		{
			name: "400 is not retried", batches: 6, code: 1, failed: 1,
			behave: func(idx, attempt int) int { return when(idx == 0, 400) },
			check: func(t *testing.T, s Summary, att map[int][]time.Time) {
				if len(att[0]) != 1 {
					t.Errorf("400 answered %d attempts, want 1", len(att[0]))
				}
			},
		},
		{
			name: "429 until the retries run out", retryAfter: "0", batches: 6, code: 1, failed: 1, retries: 2,
			behave: func(idx, attempt int) int { return when(idx == 1, 429) },
			args:   []string{"-max-retries", "2"},
			check: func(t *testing.T, s Summary, att map[int][]time.Time) {
				if len(att[1]) != 3 {
					t.Errorf("%d attempts, want 3", len(att[1]))
				}
			},
		},
		{
			name: "dropped connection is a transport error", batches: 10, code: 1, failed: 1, transport: 1,
			behave: func(idx, attempt int) int { return when(idx == 3, -1) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, key := newApp(t, n)
			f, base := newFront(t, n.Addr(), tt.retryAfter, tt.behave)
			args := append([]string{"-url", base, "-key", key, "-batches", strconv.Itoa(tt.batches),
				"-concurrency", "3", "-progress", "0"}, tt.args...)
			code, s, stderr := runCLI(t, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.code, stderr)
			}
			if s.Failed != tt.failed || s.Retries != tt.retries || s.TransportErrors != tt.transport {
				t.Errorf("failed %d, retries %d, transport errors %d; want %d, %d, %d (first error %q)",
					s.Failed, s.Retries, s.TransportErrors, tt.failed, tt.retries, tt.transport, s.FirstError)
			}
			if s.Requests+s.Failed != int64(tt.batches) {
				t.Errorf("%d acknowledged + %d failed, want %d requests", s.Requests, s.Failed, tt.batches)
			}
			att := f.attempts()
			if len(att) != tt.batches {
				t.Errorf("front saw %d request ids for %d requests: a retry changed its id", len(att), tt.batches)
			}
			if tt.check != nil {
				tt.check(t, s, att)
			}
			if ev, sp := waitStored(t, n, app); ev != s.Events || sp != s.Spans {
				t.Errorf("store holds %d events, %d spans; summary says %d, %d acknowledged", ev, sp, s.Events, s.Spans)
			}
		})
	}
}

func when(cond bool, what int) int {
	if cond {
		return what
	}
	return 0
}

// TestRunLimits checks the rate, the duration and the batch count bound a run.
func TestRunLimits(t *testing.T) {
	n := startNode(t)
	tests := []struct {
		name        string
		args        []string
		requests    int64 // exact; 0 = at least one
		minDuration time.Duration
	}{
		{"rate paces the requests", []string{"-rate", "40", "-batches", "21"}, 21, 500 * time.Millisecond},
		{"duration ends the run", []string{"-duration", "700ms", "-rate", "100"}, 0, 700 * time.Millisecond},
		{"batches end the run", []string{"-batches", "7"}, 7, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, key := newApp(t, n)
			code, s, stderr := runCLI(t, append([]string{"-url", "http://" + n.Addr(), "-key", key, "-concurrency", "2", "-progress", "0"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if tt.requests > 0 && s.Requests != tt.requests || s.Requests == 0 {
				t.Errorf("%d requests, want %d", s.Requests, tt.requests)
			}
			// A paced run that ends by its duration waits for the end even when its last slot came
			// earlier, so the whole duration counts.
			if el := time.Duration(s.ElapsedSec * float64(time.Second)); el < tt.minDuration {
				t.Errorf("run took %v, want at least %v", el, tt.minDuration)
			}
			if s.TargetRate > 0 && s.BatchesPerSec > s.TargetRate*1.1 {
				t.Errorf("%.1f batches/s over the target %.0f", s.BatchesPerSec, s.TargetRate)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := [][]string{
		{"-url", "http://127.0.0.1:1"},             // no key
		{"-key", "k", "-format", "xml"},            // bad format
		{"-key", "k", "-concurrency", "0"},         // no workers
		{"-key", "k", "-match", "("},               // bad regexp
		{"-key", "k", "-match", "no-such-fixture"}, // nothing to send
		{"-key", "k", "-dir", "/nonexistent"},      // no fixtures
		{"-key", "k", "extra"},                     // stray argument
	}
	for _, args := range tests {
		var out, errb bytes.Buffer
		t.Setenv("SVC_API_KEY", "")
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}

func TestPercentiles(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // unsorted on purpose
	}
	tests := []struct {
		name string
		in   []time.Duration
		want Latency
	}{
		{"none", nil, Latency{}},
		{"one", ms(7), Latency{P50: 7, P90: 7, P99: 7, Max: 7, Mean: 7}},
		{"1..100", ms(hundred...), Latency{P50: 50, P90: 90, P99: 99, Max: 100, Mean: 50.5}},
		{"two", ms(30, 10), Latency{P50: 10, P90: 30, P99: 30, Max: 30, Mean: 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentiles(tt.in); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
