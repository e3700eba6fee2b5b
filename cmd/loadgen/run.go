package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/cmd/internal/replay"
)

// Config is one load run.
type Config struct {
	URL         string // svc base URL; requests go to URL + "/events"
	Key         string // app API key
	Templates   []*replay.Template
	Multipart   bool
	Rate        float64       // target requests per second; 0 = as fast as the workers go
	Concurrency int           // workers, each with at most one request in flight
	Duration    time.Duration // stop starting requests after this long; 0 = no limit
	Batches     int64         // stop after this many requests; 0 = no limit
	Now         bool          // shift times so each batch's latest lands on the send time
	Chunked     bool          // send without Content-Length, as current SDKs do

	// 429 and 503 are retried with the same request id and body after Retry-After (1 s when
	// absent), at most MaxRetries times, each wait capped at MaxRetryWait.
	MaxRetries   int
	MaxRetryWait time.Duration

	Client *http.Client // nil: a client with Timeout and one idle connection per worker
	// Timeout bounds one HTTP attempt when Client is nil (0: 60 s).
	Timeout time.Duration
}

// Live counters, read by the progress display while a run goes.
type Live struct {
	Requests atomic.Int64 // acknowledged requests
	Events   atomic.Int64 // events of acknowledged requests
	Items    atomic.Int64 // events + spans of acknowledged requests
	Errors   atomic.Int64 // requests that ended without acknowledgement, transport errors included
	Retries  atomic.Int64
	Started  atomic.Int64 // requests begun (scheduled)
}

// workerStats is what one worker gathered; merged after the run, so no locks on the hot path.
type workerStats struct {
	latencies       []time.Duration // of acknowledged attempts
	bySize          [len(sizeClasses)][]time.Duration
	status          map[int]int64
	requests        int64
	failed          int64
	attempts        int64
	retries         int64
	events, spans   int64
	bytes           int64
	transportErrors int64
	abandoned       int64
	firstErr        string
}

// Run sends batches until the duration or batch count is reached or ctx is cancelled, then
// waits for the requests in flight. Cancelling ctx also abandons requests waiting to be
// retried. live may be nil.
func Run(ctx context.Context, cfg Config, live *Live) (Summary, error) {
	if len(cfg.Templates) == 0 {
		return Summary{}, errors.New("no templates")
	}
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if live == nil {
		live = new(Live)
	}
	client := cfg.Client
	if client == nil {
		timeout := cfg.Timeout
		if timeout <= 0 {
			timeout = 60 * time.Second
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = cfg.Concurrency * 2
		tr.MaxIdleConnsPerHost = cfg.Concurrency * 2
		tr.DisableCompression = true
		// Bodies average ~60 KB: bigger writes mean fewer syscalls, the generator's main cost.
		tr.WriteBufferSize = 64 << 10
		client = &http.Client{Timeout: timeout, Transport: tr}
		defer tr.CloseIdleConnections()
	}
	endpoint := strings.TrimRight(cfg.URL, "/") + "/events"

	start := time.Now()
	var deadline time.Time
	if cfg.Duration > 0 {
		deadline = start.Add(cfg.Duration)
	}
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) / cfg.Rate)
	}
	var next atomic.Int64
	stats := make([]*workerStats, cfg.Concurrency)
	var wg sync.WaitGroup
	for w := range stats {
		ws := &workerStats{status: map[int]int64{}}
		stats[w] = ws
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk := worker{cfg: &cfg, client: client, endpoint: endpoint, rw: replay.NewRewriter(), ws: ws, live: live}
			for {
				k := next.Add(1) - 1
				if cfg.Batches > 0 && k >= cfg.Batches {
					return
				}
				if interval > 0 {
					// Slot k is due at start + k·interval: an open schedule, so a slow answer
					// delays only the worker that waits for it.
					if !sleepUntil(ctx, start.Add(time.Duration(k)*interval), deadline) {
						return
					}
				} else if ctx.Err() != nil || (!deadline.IsZero() && !time.Now().Before(deadline)) {
					return
				}
				live.Started.Add(1)
				wk.one(ctx, cfg.Templates[k%int64(len(cfg.Templates))])
			}
		}()
	}
	wg.Wait()
	return summarize(cfg, stats, time.Since(start)), nil
}

// sleepUntil waits for t; false when the deadline or ctx comes first. A t at or past the
// deadline waits for the deadline itself, so a paced run lasts its whole duration and its rates
// are measured over it.
func sleepUntil(ctx context.Context, t, deadline time.Time) bool {
	ok := true
	if !deadline.IsZero() && !t.Before(deadline) {
		t, ok = deadline, false
	}
	d := time.Until(t)
	if d <= 0 {
		return ok && ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return ok
	}
}

type worker struct {
	cfg      *Config
	client   *http.Client
	endpoint string
	rw       *replay.Rewriter
	ws       *workerStats
	live     *Live
	buf      []byte
}

// one renders a fresh replay of t and sends it until it is acknowledged or fails for good.
func (w *worker) one(ctx context.Context, t *replay.Template) {
	var now int64
	if w.cfg.Now {
		now = time.Now().UnixNano()
	}
	if w.cfg.Multipart {
		w.buf = w.rw.RenderMultipart(w.buf[:0], t, now)
	} else {
		w.buf = w.rw.Render(w.buf[:0], t, now)
	}
	reqID := uuid.NewString()
	ws := w.ws
	for attempt := 0; ; attempt++ {
		status, retryAfter, lat, err := w.send(reqID)
		ws.attempts++
		if err != nil {
			ws.transportErrors++
			w.fail(fmt.Sprintf("transport error: %v", err))
			return
		}
		ws.status[status]++
		if status >= 200 && status < 300 {
			ws.requests++
			ws.events += int64(t.Events)
			ws.spans += int64(t.Spans)
			ws.bytes += int64(len(w.buf))
			ws.latencies = append(ws.latencies, lat)
			c := sizeClass(t.Items())
			ws.bySize[c] = append(ws.bySize[c], lat)
			w.live.Requests.Add(1)
			w.live.Events.Add(int64(t.Events))
			w.live.Items.Add(int64(t.Items()))
			return
		}
		if (status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable) || attempt >= w.cfg.MaxRetries {
			w.fail(fmt.Sprintf("%s: HTTP %d", t.Name, status))
			return
		}
		ws.retries++
		w.live.Retries.Add(1)
		if w.cfg.MaxRetryWait > 0 && retryAfter > w.cfg.MaxRetryWait {
			retryAfter = w.cfg.MaxRetryWait
		}
		if !sleepUntil(ctx, time.Now().Add(retryAfter), time.Time{}) {
			ws.abandoned++
			w.fail(fmt.Sprintf("%s: abandoned while waiting to retry after HTTP %d", t.Name, status))
			return
		}
	}
}

func (w *worker) fail(msg string) {
	w.ws.failed++
	w.live.Errors.Add(1)
	if w.ws.firstErr == "" {
		w.ws.firstErr = msg
	}
}

// doneBody is a request body that reports when the transport has closed it: only then may the
// buffer it reads from be reused (http.RoundTripper may close it after Do returns).
type doneBody struct {
	bytes.Reader
	once sync.Once
	done chan struct{}
}

func newDoneBody(b []byte) *doneBody {
	d := &doneBody{done: make(chan struct{})}
	d.Reset(b)
	return d
}

func (b *doneBody) Close() error {
	b.once.Do(func() { close(b.done) })
	return nil
}

// send makes one attempt. retryAfter is what the answer asked for (1 s when it did not say).
func (w *worker) send(reqID string) (status int, retryAfter, lat time.Duration, err error) {
	var (
		mu     sync.Mutex
		bodies = []*doneBody{newDoneBody(w.buf)}
	)
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bodies {
			<-b.done
		}
	}()
	req, err := http.NewRequest(http.MethodPut, w.endpoint, bodies[0])
	if err != nil {
		bodies[0].Close()
		return 0, 0, 0, err
	}
	// The transport may resend on a fresh connection when a kept-alive one was closed under it;
	// it needs a way to read the body again, and the request is idempotent by its request id.
	req.GetBody = func() (io.ReadCloser, error) {
		mu.Lock()
		defer mu.Unlock()
		b := newDoneBody(w.buf)
		bodies = append(bodies, b)
		return b, nil
	}
	req.Header.Set("Idempotency-Key", reqID)
	if w.cfg.Chunked {
		req.ContentLength = -1 // chunked transfer encoding
	} else {
		req.ContentLength = int64(len(w.buf))
	}
	req.Header.Set("Authorization", "Bearer "+w.cfg.Key)
	req.Header.Set("svc-req-id", reqID)
	if w.cfg.Multipart {
		req.Header.Set("Content-Type", "multipart/form-data; boundary="+w.rw.Boundary())
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	t0 := time.Now()
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	_, cerr := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	lat = time.Since(t0)
	if cerr != nil {
		return 0, 0, 0, fmt.Errorf("read answer: %w", cerr)
	}
	retryAfter = time.Second
	if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s >= 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	return resp.StatusCode, retryAfter, lat, nil
}
