package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
	"github.com/svc-dev/svc/sinks/clickhouse"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// batch is one PUT /events request of the load: its id and its event ids, resent unchanged
// until acknowledged, as an SDK does.
type batch struct {
	req    string
	body   []byte
	events []uuid.UUID
}

func makeBatch(n int) batch {
	b := batch{req: uuid.NewString()}
	session := uuid.NewString()
	now := time.Now().UTC()
	var parts []string
	for i := 0; i < n; i++ {
		id := uuid.New()
		b.events = append(b.events, id)
		parts = append(parts, fmt.Sprintf(`{"id":"%s","session_id":"%s","timestamp":"%s","type":"custom","custom":{"name":"load %d"},`+
			`"attribute":{"installation_id":"i","app_version":"1.0","app_build":"1","app_unique_id":"com.example","platform":"android",`+
			`"measure_sdk_version":"0.11.0","thread_name":"main","network_type":"wifi","network_provider":"unknown","network_generation":"unknown",`+
			`"device_cpu_arch":"arm64","os_version":"34"},"attachments":[],"user_triggered":false}`,
			id, session, now.Add(time.Duration(i)*time.Microsecond).Format("2006-01-02T15:04:05.000000000Z"), i))
	}
	b.body = []byte(`{"events":[` + strings.Join(parts, ",") + `],"spans":[]}`)
	return b
}

// send PUTs a batch; it returns the status, or 0 on a transport error.
func send(client *http.Client, base, key string, b batch) int {
	req, _ := http.NewRequest(http.MethodPut, base+"/events", bytes.NewReader(b.body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("svc-req-id", b.req)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// load keeps workers sending new batches to *base until stop is closed; a batch that is not
// acknowledged goes back to the queue to be resent with the same id.
type load struct {
	mu      sync.Mutex
	base    string
	key     string
	acked   []batch
	retry   []batch
	sent    int
	status  map[int]int
	perReq  int
	workers int
}

func (l *load) next() batch {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.retry); n > 0 {
		b := l.retry[n-1]
		l.retry = l.retry[:n-1]
		return b
	}
	l.sent++
	return makeBatch(l.perReq)
}

func (l *load) run(stop <-chan struct{}) {
	client := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	for w := 0; w < l.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				b := l.next()
				l.mu.Lock()
				base := l.base
				l.mu.Unlock()
				s := send(client, base, l.key, b)
				l.mu.Lock()
				l.status[s]++
				if s == 200 {
					l.acked = append(l.acked, b)
				} else {
					l.retry = append(l.retry, b)
				}
				l.mu.Unlock()
				if s != 200 {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
}

// drain resends every unacknowledged batch until it is acknowledged.
func (l *load) drain(t *testing.T) {
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for len(l.retry) > 0 {
		b := l.retry[len(l.retry)-1]
		if s := send(client, l.base, l.key, b); s == 200 {
			l.retry = l.retry[:len(l.retry)-1]
			l.acked = append(l.acked, b)
		} else if time.Now().After(deadline) {
			t.Fatalf("batch %s still refused (%d) after 60s", b.req, s)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// checkExactlyOnce asserts every acknowledged event is stored and nothing is stored twice. A
// store that lists its rows' ids (the embedded one, whose Event scans for ids that are not bug
// reports) is read in one pass, and each id must have exactly one row; another is asked for
// each id.
func checkExactlyOnce(t *testing.T, store sinks.EventStore, app uuid.UUID, acked []batch) {
	t.Helper()
	ctx := context.Background()
	ids := map[uuid.UUID]bool{}
	lister, lists := store.(interface {
		EventIDs(ctx context.Context, app uuid.UUID, fn func(id uuid.UUID, ts int64)) error
	})
	rows := map[uuid.UUID]int{}
	if lists {
		if err := lister.EventIDs(ctx, app, func(id uuid.UUID, _ int64) { rows[id]++ }); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range acked {
		for _, id := range b.events {
			ids[id] = true
			if lists {
				if rows[id] != 1 {
					t.Fatalf("acknowledged event %s of request %s is stored in %d rows, want 1", id, b.req, rows[id])
				}
			} else if _, err := store.Event(ctx, app, id); err != nil {
				t.Fatalf("acknowledged event %s of request %s is not stored: %v", id, b.req, err)
			}
		}
	}
	n, _, err := store.Count(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(ids)) {
		t.Fatalf("store holds %d events, want exactly the %d acknowledged", n, len(ids))
	}
	t.Logf("%d acknowledged events of %d requests, each stored once", len(ids), len(acked))
}

// TestCrashUnderLoad kills svc with SIGKILL under steady ingest several times; after the last
// restart every acknowledged event is stored exactly once, with event rows written in blocks
// (the default, docs/event-blocks.md) and a key per row (--event-blocks=false).
func TestCrashUnderLoad(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		blocks bool
	}{
		{"blocks", nil, true},
		{"rows", []string{"--event-blocks=false"}, false},
	} {
		t.Run(c.name, func(t *testing.T) { crashUnderLoad(t, c.args, c.blocks) })
	}
}

func crashUnderLoad(t *testing.T, extra []string, blocks bool) {
	dir := t.TempDir()
	args := append([]string{"--data-dir", dir, "--flush-interval", "200ms", "--ingest-rate-limit", "1000000"}, extra...)
	p := startServe(t, nil, args...)
	o := newOwner(t, p, dir, "crash@example.com", "crash")
	app := o.app
	l := &load{base: "http://" + p.addr, key: o.key, status: map[int]int{}, perReq: 20, workers: 4}
	for round := 0; round < 3; round++ {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { l.run(stop); close(done) }()
		time.Sleep(1500 * time.Millisecond)
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		close(stop)
		<-done
		// The port changes with each start; the load follows.
		p = startServe(t, nil, args...)
		l.mu.Lock()
		l.base = "http://" + p.addr
		l.mu.Unlock()
	}
	l.drain(t)
	if len(l.acked) < 30 {
		t.Fatalf("only %d requests acknowledged: the load did not run (statuses %v)", len(l.acked), l.status)
	}
	p.stop(t)                                                 // a clean stop flushes what the node holds
	db, err := badgerdb.OpenEvents(dir+"/badger-events", nil) // the embedded event store's own database
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The layout asked for is the one written: data blocks and no row key, or the reverse.
	rowKeys, dataBlocks := countPrefix(t, db, badgerdb.PrefixEvents+"r"), countPrefix(t, db, badgerdb.PrefixEvents+"b")
	if blocks && (rowKeys > 0 || dataBlocks == 0) || !blocks && (rowKeys == 0 || dataBlocks > 0) {
		t.Fatalf("%d event row keys and %d data blocks written", rowKeys, dataBlocks)
	}
	checkExactlyOnce(t, badgerevents.New(db), app, l.acked)
	if l.status[500] > 0 {
		t.Errorf("500 answers during the test: %v", l.status)
	}
}

var pendingRe = regexp.MustCompile(`(?m)^svc_spool_pending_bytes (\S+)$`)

func spoolPending(t *testing.T, p *proc) float64 {
	t.Helper()
	_, b := p.adminGet(t, "/metrics")
	m := pendingRe.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no svc_spool_pending_bytes in /metrics")
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestClickHouseOutage stops ClickHouse under ingest: svc keeps acknowledging into its spool,
// answers 503 with Retry-After once the spool bound is reached, and after ClickHouse returns
// every acknowledged event is stored exactly once.
func TestClickHouseOutage(t *testing.T) {
	ch, err := sinktest.StartClickHouse(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Stop() })
	pg := sinktest.Postgres(t)
	dir := t.TempDir()
	p := startServe(t, []string{"SVC_CLICKHOUSE_DSN=" + ch.DSN, "SVC_POSTGRES_DSN=" + pg},
		"--data-dir", dir, "--flush-interval", "200ms", "--spool-max-bytes", "300000", "--ingest-rate-limit", "1000000")
	o := newOwner(t, p, dir, "outage@example.com", "outage")
	app := o.app
	l := &load{base: "http://" + p.addr, key: o.key, status: map[int]int{}, perReq: 20}
	client := &http.Client{Timeout: 10 * time.Second}
	sendOne := func() int {
		b := l.next()
		s := send(client, l.base, l.key, b)
		l.status[s]++
		if s == 200 {
			l.acked = append(l.acked, b)
		} else {
			l.retry = append(l.retry, b)
		}
		return s
	}
	for i := 0; i < 20; i++ {
		if s := sendOne(); s != 200 {
			t.Fatalf("before the outage: %d", s)
		}
	}
	if err := ch.Stop(); err != nil {
		t.Fatal(err)
	}
	// Ingest keeps answering; once the spool bound is reached, 503 with Retry-After.
	got503 := false
	for i := 0; i < 400 && !got503; i++ {
		b := l.next()
		req, _ := http.NewRequest(http.MethodPut, l.base+"/events", bytes.NewReader(b.body))
		req.Header.Set("Authorization", "Bearer "+l.key)
		req.Header.Set("svc-req-id", b.req)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case 200:
			l.acked = append(l.acked, b)
		case 503:
			got503 = true
			l.retry = append(l.retry, b)
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"error"`) {
				t.Fatalf("503 without Retry-After or {error}: %v %s", resp.Header, body)
			}
		default:
			t.Fatalf("during the outage: %d %s", resp.StatusCode, body)
		}
	}
	if !got503 {
		t.Fatalf("the spool bound was never reached (pending %v bytes)", spoolPending(t, p))
	}
	if err := ch.Start(); err != nil {
		t.Fatal(err)
	}
	l.drain(t)
	deadline := time.Now().Add(90 * time.Second)
	for spoolPending(t, p) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("spool not drained 90s after ClickHouse returned")
		}
		time.Sleep(200 * time.Millisecond)
	}
	store, err := clickhouse.Open(context.Background(), ch.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	checkExactlyOnce(t, store, app, l.acked)
	p.stop(t)
}

// countPrefix counts the keys of db under prefix.
func countPrefix(t *testing.T, db *badger.DB, prefix string) int {
	t.Helper()
	n := 0
	if err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefix)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}
