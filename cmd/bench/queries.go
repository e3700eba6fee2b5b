package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// query is one dashboard request of (d): its path under /apps/{app}, whether it asks for the
// store (Svc-Answer-From: store), who must answer it (Svc-Answered-By) and its window in days:
// 7 is the dashboard's default one (or what covers loadgen's events, QueryWindow), 30 explicit
// from/to (LastDays), dashboardDays the window the reference dashboard sends (DashboardWindow).
type query struct {
	Name  string
	Path  string
	Store bool
	Want  string
	Days  int
}

// dashboardQueries are (d)'s requests: issue 17's crash group list (7 and 30 days) and journey
// (7 days), live and from the store, and the error group list from the store.
var dashboardQueries = []query{
	{"crashGroups, live, 7 days", "/crashGroups", false, "live", 7},
	{"crashGroups, from the store, 7 days", "/crashGroups", true, "store", 7},
	{"crashGroups, from the store, 30 days", "/crashGroups", true, "store", 30},
	{"journey, live, 7 days", "/journey", false, "live", 7},
	{"journey, from the store, 7 days", "/journey", true, "store", 7},
	{"errorGroups, from the store, 7 days", "/errorGroups", true, "store", 7},
	{"crashGroups, dashboard window (from cuts a day)", "/crashGroups", false, "live+store", dashboardDays},
	{"journey, dashboard window (from cuts a day)", "/journey", false, "live+store", dashboardDays},
}

// dashboardDays keys the dashboard-shaped window in dashboard.windows.
const dashboardDays = -5

// queryResult is one query's latencies, measured by the client (HTTP over loopback, sign-in
// checks and the JSON answer included).
type queryResult struct {
	query
	Requests      int // timed requests
	P50, P95, P99 time.Duration
	Bytes         int // size of the last answer
	// What the node's Go runtime did during the timed requests of a live query (its /metrics),
	// when Counted: garbage collections, and bytes allocated per request. The slowest live
	// answers are those that meet a collection, so these say why a p99 moved.
	// BenchGCs is this process's own collections meanwhile (the timing client's).
	Counted     bool
	GCs         int
	BenchGCs    int
	AllocPerReq float64
	// CPU is what the node, the bench and the other processes used of the machine's CPUs
	// during the timed requests, when CPUKnown.
	CPU      cpuShares
	CPUKnown bool
	By       string // who answered the last request (Svc-Answered-By)
	Err      string // why there are no figures
}

// queryRun is (d) on one node.
type queryRun struct {
	Events    int64    // events in the store when measured (the usage API)
	EventsErr string   // why Events is unknown
	Window    string   // the windows the requests asked for
	Fill      *fillRun // the synthetic copies written first; nil when none
	Settle    settleRun
	Queries   []queryResult
}

// queryOpts say how many requests each query gets.
type queryOpts struct {
	warmup, requests int
	// liveRequests is the timed requests of a live query: answers of a few hundred µs, so that
	// their p99 is the 30th slowest of 3,000 rather than the 3rd of 300, which one stall of the
	// machine decides.
	liveRequests int
	maxTime      time.Duration // timed requests stop early (fewer of them) past this; warm-up ones past a quarter of it
}

// dashboard is a signed-in client of one node's dashboard API.
type dashboard struct {
	base, token string
	team, app   string
	client      *http.Client
	windows     map[int][2]string                     // from and to by a query's days; none (or empty) = the default window
	metrics     func(context.Context) (string, error) // the node's /metrics; nil: not read
	cpu         func() (cpuSample, error)             // the machine's and the node's CPU times (cpuSampler); nil: not read
	conn        timingConn                            // get's
	// body holds the last answer. The timing client reads every answer into this one buffer:
	// growing a new one per request made this process collect garbage during the live runs,
	// and a collection's assists slow the very requests being timed.
	body bytes.Buffer
}

// runtimeCounts reads the node's garbage collections and bytes allocated so far.
func (d *dashboard) runtimeCounts(ctx context.Context) (gcs, alloc float64, ok bool) {
	if d.metrics == nil {
		return 0, 0, false
	}
	text, err := d.metrics(ctx)
	if err != nil {
		return 0, 0, false
	}
	gcs, ok1 := metricSum(text, "go_gc_duration_seconds_count")
	alloc, ok2 := metricSum(text, "go_memstats_alloc_bytes_total")
	return gcs, alloc, ok1 && ok2
}

// request is the GET of path (under the app) that get sends.
func (d *dashboard) request(ctx context.Context, path string, store bool, days int) (*http.Request, error) {
	u := d.base + "/apps/" + d.app + path
	if w := d.windows[days]; w[0] != "" {
		u += "?" + url.Values{"from": {w[0]}, "to": {w[1]}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	if store {
		req.Header.Set("Svc-Answer-From", "store")
	}
	return req, nil
}

// get sends req, which has no body and can be sent again once get returns, over d.conn; the
// answer's bytes are d.body's, good until the next get.
func (d *dashboard) get(req *http.Request) (*http.Response, []byte, error) {
	resp, err := d.conn.roundTrip(req, &d.body)
	if err != nil {
		return nil, nil, err
	}
	b := d.body.Bytes()
	if resp.StatusCode != http.StatusOK {
		return resp, b, fmt.Errorf("GET %s: %s: %.200s", req.URL.Path, resp.Status, strings.TrimSpace(string(b)))
	}
	return resp, b, nil
}

// timingConn is the timing client's one kept-alive HTTP/1.1 connection, used from the calling
// goroutine only: it writes a request and parses its answer with http.ReadResponse. An
// http.Client hands each request and answer between the caller and two goroutines of its
// connection; those hand-offs cost the timing client CPU on the 2 cores it shares with the
// node, and their wake-ups sit in every timed request.
type timingConn struct {
	conn net.Conn
	host string // conn's
	br   *bufio.Reader
	wire bytes.Buffer // the request as sent
	last *http.Request
}

// roundTrip sends req and reads the whole answer into body, dialing when there is no
// connection; a failed exchange closes the connection, and the next one dials again.
func (c *timingConn) roundTrip(req *http.Request, body *bytes.Buffer) (*http.Response, error) {
	if c.last != req {
		c.last = nil // until req is written whole
		c.wire.Reset()
		if err := req.Write(&c.wire); err != nil {
			return nil, err
		}
		c.last = req
	}
	if c.conn != nil && c.host != req.URL.Host { // a node restarted elsewhere
		c.close()
	}
	if c.conn == nil {
		conn, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(req.Context(), "tcp", req.URL.Host)
		if err != nil {
			return nil, err
		}
		c.conn, c.host, c.br = conn, req.URL.Host, bufio.NewReaderSize(conn, 64<<10)
	}
	resp, err := c.exchange(req, body)
	if err != nil || resp.Close {
		c.close()
	}
	return resp, err
}

func (c *timingConn) exchange(req *http.Request, body *bytes.Buffer) (*http.Response, error) {
	// As the dashboard client's timeout: a query from the store may take a while.
	if err := c.conn.SetDeadline(time.Now().Add(2 * time.Minute)); err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(c.wire.Bytes()); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return nil, err
	}
	body.Reset()
	_, err = body.ReadFrom(resp.Body)
	resp.Body.Close()
	return resp, err
}

// close closes the connection, if any.
func (c *timingConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// holdGC runs this process's garbage collector once and keeps it from running again until
// release, while it times requests: a collection in the timing client slows the requests it
// times, which makes the bench's own work look like the node's. (The client still allocates a
// few KB per request: the parsed answer and its headers.) A memory limit 512 MiB above the
// memory the Go runtime holds (what the limit is compared with) stays as a backstop: past it
// the collector runs anyway (a timed run of -live-requests in the millions), and the row's
// bench collections count it.
func holdGC() (release func()) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	pct := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(int64(ms.Sys-ms.HeapReleased) + 512<<20)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}

// storedEvents is the app's event count as the node's usage API reports it.
func (d *dashboard) storedEvents(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+"/teams/"+d.team+"/usage", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET usage: %s: %.200s", resp.Status, strings.TrimSpace(string(b)))
	}
	return UsageEvents(b, d.app)
}

// waitStored polls the usage API until two readings a second apart agree: the node has put
// into the store what it acknowledged (flushes run at least every second).
func (d *dashboard) waitStored(ctx context.Context, limit time.Duration) (int64, error) {
	deadline := time.Now().Add(limit)
	prev := int64(-1)
	for {
		n, err := d.storedEvents(ctx)
		if err != nil {
			return 0, err
		}
		if n == prev && n > 0 {
			return n, nil
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("the event count still changes after %s (%d)", limit, n)
		}
		prev = n
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// measure times sequential requests of q after o.warmup untimed ones (fewer when they take
// more than a quarter of o.maxTime: a 10-second answer would make 20 of them minutes).
func (d *dashboard) measure(ctx context.Context, q query, o queryOpts) queryResult {
	r := queryResult{query: q}
	check := func(resp *http.Response) error {
		r.By = resp.Header.Get("Svc-Answered-By")
		// A dashboard window that cuts no day of data (a store without the copies) is live.
		if r.By != q.Want && (q.Want != "live+store" || r.By != "live") {
			return fmt.Errorf("answered by %q, want %q", r.By, q.Want)
		}
		return nil
	}
	req, err := d.request(ctx, q.Path, q.Store, q.Days)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	w0 := time.Now()
	for i := 0; i < o.warmup && (i == 0 || time.Since(w0) < o.maxTime/4); i++ {
		resp, _, err := d.get(req)
		if err == nil {
			err = check(resp)
		}
		if err != nil {
			r.Err = err.Error()
			return r
		}
	}
	n := o.requests
	if !q.Store {
		n = o.liveRequests
	}
	lat := make([]time.Duration, 0, n)
	var gc0, alloc0 float64
	var counted bool
	var own runtime.MemStats
	if !q.Store {
		gc0, alloc0, counted = d.runtimeCounts(ctx)
	}
	release := holdGC()
	defer release()
	runtime.ReadMemStats(&own)
	ownGCs := own.NumGC
	var cpu0 cpuSample
	sampled := false
	if d.cpu != nil {
		cpu0, err = d.cpu()
		sampled = err == nil
	}
	start := time.Now()
	for len(lat) < n && (len(lat) == 0 || time.Since(start) < o.maxTime) {
		t0 := time.Now()
		resp, body, err := d.get(req)
		el := time.Since(t0)
		if err == nil {
			err = check(resp)
		}
		if err != nil {
			r.Err = err.Error()
			return r
		}
		lat = append(lat, el)
		r.Bytes = len(body)
	}
	if sampled {
		if cpu1, err := d.cpu(); err == nil {
			r.CPU, r.CPUKnown = cpu1.sharesSince(cpu0)
		}
	}
	r.Requests = len(lat)
	r.P50, r.P95, r.P99 = Percentile(lat, 0.50), Percentile(lat, 0.95), Percentile(lat, 0.99)
	if counted {
		runtime.ReadMemStats(&own)
		r.BenchGCs = int(own.NumGC - ownGCs)
		if gc1, alloc1, ok := d.runtimeCounts(ctx); ok {
			r.Counted, r.GCs, r.AllocPerReq = true, int(gc1-gc0), (alloc1-alloc0)/float64(len(lat))
		}
	}
	return r
}

// runQueries is (d) on a node that loadgen filled: it waits until the store holds what was
// acknowledged, tops the store up when asked (topUp, given the events stored; it may restart
// the node and point d at it), and times every dashboard query.
func runQueries(ctx context.Context, d *dashboard, o queryOpts, topUp func(have int64) (*fillRun, error)) *queryRun {
	run := &queryRun{Window: "7 days: " + windowText(d.windows[7])}
	if w, ok := d.windows[30]; ok {
		run.Window += "; 30 days: " + windowText(w)
	}
	// Usage walks every stored row on the embedded store: at 10M events a reading takes a while.
	const settle = 5 * time.Minute
	n, err := d.waitStored(ctx, settle)
	if err == nil && topUp != nil {
		if run.Fill, err = topUp(n); err != nil {
			// The node may be down, the store part-filled: no figure would mean anything.
			run.EventsErr = "top-up failed: " + err.Error()
			fmt.Fprintf(os.Stderr, "bench: %s\n", run.EventsErr)
			return run
		}
		n, err = d.waitStored(ctx, settle)
	}
	if err != nil {
		run.EventsErr = err.Error()
		fmt.Fprintf(os.Stderr, "bench: events in the store: %v\n", err)
	}
	run.Events = n
	// The dashboard's window ends when its page is opened: now, after every event written.
	from, to := DashboardWindow(time.Now(), -dashboardDays)
	d.windows[dashboardDays] = [2]string{from, to}
	run.Window += "; dashboard window: " + windowText(d.windows[dashboardDays])
	fmt.Printf("%s events in the store; window %s\n", thousands(float64(n)), run.Window)
	if d.cpu != nil {
		run.Settle = waitSettled(ctx, settleDefault, d.cpu)
	} else {
		run.Settle.Err = "CPU times not read"
	}
	fmt.Println(run.Settle)
	defer d.conn.close()
	for _, q := range dashboardQueries {
		r := d.measure(ctx, q, o)
		if r.Err != "" {
			fmt.Printf("  %-28s %s\n", q.Name, r.Err)
		} else {
			fmt.Printf("  %-28s p50 %s  p95 %s  p99 %s  (%d requests, %d B)\n", q.Name, ms(r.P50), ms(r.P95), ms(r.P99), r.Requests, r.Bytes)
		}
		run.Queries = append(run.Queries, r)
	}
	return run
}

func windowText(w [2]string) string {
	if w[0] == "" {
		return "default (the last 7 UTC days)"
	}
	return w[0] + " to " + w[1]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
