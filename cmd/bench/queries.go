package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	chstore "github.com/svc-dev/svc/sinks/clickhouse"
)

// query is one dashboard request of (d): its path under /apps/{app}, whether it asks for the
// store (Svc-Answer-From: store), and who must answer it (Svc-Answered-By).
type query struct {
	Name  string
	Path  string
	Store bool
	Want  string
}

// dashboardQueries are (d)'s requests: the group lists and the journey, live and from the
// store.
var dashboardQueries = []query{
	{"crashGroups, live", "/crashGroups", false, "live"},
	{"crashGroups, from the store", "/crashGroups", true, "store"},
	{"journey, live", "/journey", false, "live"},
	{"journey, from the store", "/journey", true, "store"},
	{"errorGroups, from the store", "/errorGroups", true, "store"},
}

// queryResult is one query's latencies, measured by the client (HTTP over loopback, sign-in
// checks and the JSON answer included).
type queryResult struct {
	query
	Requests      int // timed requests
	P50, P95, P99 time.Duration
	Bytes         int    // size of the last answer
	Err           string // why there are no figures
}

// queryRun is (d) on one node.
type queryRun struct {
	Events    int64  // events in the store when measured (the usage API)
	EventsErr string // why Events is unknown
	Window    string // the window the requests asked for
	Queries   []queryResult
}

// queryOpts say how many requests each query gets.
type queryOpts struct {
	warmup, requests int
	maxTime          time.Duration // a query stops early (with fewer requests) past this
}

// dashboard is a signed-in client of one node's dashboard API.
type dashboard struct {
	base, token string
	team, app   string
	client      *http.Client
	from, to    string // explicit window; empty = the default one
}

func (d *dashboard) get(ctx context.Context, path string, store bool) (*http.Response, []byte, error) {
	u := d.base + "/apps/" + d.app + path
	if d.from != "" {
		u += "?" + url.Values{"from": {d.from}, "to": {d.to}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	if store {
		req.Header.Set("Svc-Answer-From", "store")
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return resp, b, fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	return resp, b, nil
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

// measure times sequential requests of q after o.warmup untimed ones.
func (d *dashboard) measure(ctx context.Context, q query, o queryOpts) queryResult {
	r := queryResult{query: q}
	check := func(resp *http.Response) error {
		if by := resp.Header.Get("Svc-Answered-By"); by != q.Want {
			return fmt.Errorf("answered by %q, want %q", by, q.Want)
		}
		return nil
	}
	for range o.warmup {
		resp, _, err := d.get(ctx, q.Path, q.Store)
		if err == nil {
			err = check(resp)
		}
		if err != nil {
			r.Err = err.Error()
			return r
		}
	}
	lat := make([]time.Duration, 0, o.requests)
	start := time.Now()
	for len(lat) < o.requests && (len(lat) == 0 || time.Since(start) < o.maxTime) {
		t0 := time.Now()
		resp, body, err := d.get(ctx, q.Path, q.Store)
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
	r.Requests = len(lat)
	r.P50, r.P95, r.P99 = Percentile(lat, 0.50), Percentile(lat, 0.95), Percentile(lat, 0.99)
	return r
}

// runQueries is (d) on a node that loadgen filled: it waits until the store holds what was
// acknowledged, tops the store up when asked (topUp, given the events stored), and times every
// dashboard query.
func runQueries(ctx context.Context, d *dashboard, o queryOpts, topUp func(have int64) error) *queryRun {
	run := &queryRun{Window: "default (the last 7 UTC days)"}
	if d.from != "" {
		run.Window = d.from + " to " + d.to
	}
	n, err := d.waitStored(ctx, 2*time.Minute)
	if err == nil && topUp != nil {
		if err = topUp(n); err == nil {
			n, err = d.waitStored(ctx, 2*time.Minute)
		}
	}
	if err != nil {
		run.EventsErr = err.Error()
		fmt.Fprintf(os.Stderr, "bench: events in the store: %v\n", err)
	}
	run.Events = n
	fmt.Printf("%s events in the store; window %s\n", thousands(float64(n)), run.Window)
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

// topUpClickHouse writes synthetic copies of the corpus's events straight into the
// ClickHouse database of dsn until the app has want events (given it has have): whole bodies
// round-robin, each copy with fresh event and session ids, moved to a random time in the last
// 6 days (inside the default dashboard window), its Facts derived by model.DeriveFacts (at
// load; they do not depend on ids or times), in 100k-row inserts.
func topUpClickHouse(ctx context.Context, c *corpus, dsn string, app uuid.UUID, have, want int64) error {
	const batch = 100_000
	if have >= want {
		return nil
	}
	st, err := chstore.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	rng := rand.New(rand.NewChaCha8(seed()))
	src := &rows{rng: rand.NewChaCha8(seed())}
	buf := make([]model.Event, 0, batch)
	now := time.Now().UnixNano()
	const sixDays = int64(6 * 24 * time.Hour)
	sessions := map[uuid.UUID]uuid.UUID{}
	left, start, written := want-have, time.Now(), int64(0)
	fmt.Printf("writing %s synthetic events into ClickHouse\n", thousands(float64(left)))
	for k := 0; left > 0; k = (k + 1) % len(c.batches) {
		b := &c.batches[k]
		// The copy's latest item lands uniformly in [now-6d+span, now]: all its events in the
		// last 6 days.
		room := max(0, sixDays-c.span[k])
		delta := now - rng.Int64N(room+1) - c.latest[k]
		clear(sessions)
		for j := range b.Events {
			if left == 0 {
				break
			}
			e := b.Events[j]
			e.ID, e.AppID = src.uuid(), app
			if e.SessionID != uuid.Nil {
				s, ok := sessions[e.SessionID]
				if !ok {
					s = src.uuid()
					sessions[e.SessionID] = s
				}
				e.SessionID = s
			}
			e.Timestamp += delta
			if e.Attribute.SessionStartTime != 0 {
				e.Attribute.SessionStartTime += delta
			}
			buf = append(buf, e)
			left--
			if len(buf) == batch || left == 0 {
				if err := st.WriteEvents(ctx, buf); err != nil {
					return err
				}
				written += int64(len(buf))
				buf = buf[:0]
				if written%1_000_000 == 0 || left == 0 {
					fmt.Printf("  %s written, %.0f s\n", thousands(float64(written)), time.Since(start).Seconds())
				}
			}
		}
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
