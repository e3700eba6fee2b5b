package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// Settings of the metadata outage tests: a frozen PostgreSQL is noticed after metaTimeout, and
// the API-key cache entries expire during the outage, so ingest runs on the last answers.
const (
	metaTimeout = 2 * time.Second
	keyTTL      = 2 * time.Second
	outageFor   = 20 * time.Second
)

// TestMetaOutageStopped: PostgreSQL stopped for 20 s under steady ingest.
func TestMetaOutageStopped(t *testing.T) { metaOutage(t, false) }

// TestMetaOutageFrozen: PostgreSQL frozen with SIGSTOP for 20 s under steady ingest, then
// SIGCONT.
func TestMetaOutageFrozen(t *testing.T) { metaOutage(t, true) }

// answer is one HTTP exchange of the outage tests.
type answer struct {
	code  int
	retry string
	body  string
	took  time.Duration
}

func do(t *testing.T, method, url, token string, body []byte) answer {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	req.Header.Set("svc-req-id", uuid.NewString())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v after %v", method, url, err, time.Since(start))
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, retry: resp.Header.Get("Retry-After"), body: string(b), took: time.Since(start)}
}

// paced sends new batches at perSec per second from a few workers, resending refused ones with
// their id, until stop is closed; it records the slowest answer.
func (l *load) paced(stop <-chan struct{}, perSec, workers int, slowest *time.Duration, mu *sync.Mutex) {
	client := &http.Client{Timeout: 30 * time.Second}
	tick := time.NewTicker(time.Second / time.Duration(perSec))
	defer tick.Stop()
	work := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				b := l.next()
				start := time.Now()
				s := send(client, l.base, l.key, b)
				took := time.Since(start)
				mu.Lock()
				*slowest = max(*slowest, took)
				mu.Unlock()
				l.mu.Lock()
				l.status[s]++
				if s == 200 {
					l.acked = append(l.acked, b)
				} else {
					l.retry = append(l.retry, b)
				}
				l.mu.Unlock()
			}
		}()
	}
	defer wg.Wait()
	defer close(work)
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			select {
			case work <- struct{}{}:
			default: // every worker busy: this tick is skipped
			}
		}
	}
}

// ownPostgres starts a PostgreSQL server of the test's own, which the test may stop, start and
// freeze; it is stopped when the test ends.
func ownPostgres(t *testing.T) *sinktest.Server {
	t.Helper()
	// Under root the server runs as the postgres user, which cannot enter t.TempDir().
	pgDir, err := os.MkdirTemp("", "svc-meta-outage-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(pgDir, 0o755)
	t.Cleanup(func() { _ = os.RemoveAll(pgDir) })
	pg, err := sinktest.StartPostgres(pgDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	return pg
}

func metaOutage(t *testing.T, freeze bool) {
	pg := ownPostgres(t)
	dir := t.TempDir()
	p := startServe(t, []string{"SVC_POSTGRES_DSN=" + pg.DSN}, "--data-dir", dir, "--flush-interval", "200ms",
		"--ingest-rate-limit", "1000000", "--meta-timeout", metaTimeout.String(), "--api-key-cache-ttl", keyTTL.String())
	base := "http://" + p.addr
	u := adminJSON(t, p, dir, "create-user", "--email", "meta@example.com", "--name", "M")
	a := adminJSON(t, p, dir, "create-app", "--team", u["own_team_id"], "--name", "loaded")
	b := adminJSON(t, p, dir, "create-app", "--team", u["own_team_id"], "--name", "other")
	tok := adminJSON(t, p, dir, "token", "--email", "meta@example.com")["access_token"]
	appA := uuid.MustParse(a["app_id"])

	// What no answer may show: the server's address, port, user or database.
	leaks := []string{"127.0.0.1", strconv.Itoa(pg.Port), "user=", "database=", "postgres@", "dial", "connect"}
	noLeak := func(what string, an answer) {
		t.Helper()
		for _, l := range leaks {
			if strings.Contains(an.body, l) {
				t.Errorf("%s: the answer %q shows %q", what, an.body, l)
			}
		}
	}
	sendKey := func(key string) answer {
		t.Helper()
		return do(t, http.MethodPut, base+"/events", key, makeBatch(2).body)
	}
	if an := do(t, http.MethodGet, base+"/auth/session", tok, nil); an.code != 200 {
		t.Fatalf("session before the outage: %d %s", an.code, an.body)
	}
	if an := sendKey(b["api_key"]); an.code != 200 { // b's key is cached before the outage
		t.Fatalf("app b before the outage: %d %s", an.code, an.body)
	}

	l := &load{base: base, key: a["api_key"], status: map[int]int{}, perReq: 5}
	var slowest time.Duration
	var slowMu sync.Mutex
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { l.paced(stop, 100, 8, &slowest, &slowMu); close(done) }()
	time.Sleep(2 * time.Second)

	var err error
	if freeze {
		err = pg.Freeze()
	} else {
		err = pg.Stop()
	}
	if err != nil {
		t.Fatal(err)
	}
	outage := time.Now()
	// Generous on a shared 2-core machine, but far below the 40 s hangs of issue #16.
	limit := metaTimeout + 4*time.Second
	var dashSlowest, readySlowest time.Duration
	rounds := 0
	for time.Since(outage) < outageFor {
		rounds++
		for _, path := range []string{"/auth/session", "/teams", "/teams/" + u["own_team_id"] + "/apps", "/apps/" + a["app_id"] + "/retention"} {
			an := do(t, http.MethodGet, base+path, tok, nil)
			dashSlowest = max(dashSlowest, an.took)
			if an.code != 503 || an.retry == "" || !strings.Contains(an.body, "metadata store is unavailable") {
				t.Errorf("GET %s during the outage: %d Retry-After %q %s, want 503 + Retry-After naming the metadata store", path, an.code, an.retry, an.body)
			}
			if an.took > limit {
				t.Errorf("GET %s took %v during the outage, want under %v", path, an.took, limit)
			}
			noLeak("GET "+path, an)
		}
		an := do(t, http.MethodGet, base+"/readyz", "", nil)
		readySlowest = max(readySlowest, an.took)
		if an.code != 503 || !strings.Contains(an.body, "metadata") || an.took > limit {
			t.Errorf("readyz during the outage: %d in %v: %s", an.code, an.took, an.body)
		}
		noLeak("readyz", an)
		// A key accepted before the outage keeps working after its cache entry expired.
		if an := sendKey(b["api_key"]); an.code != 200 || an.took > limit {
			t.Errorf("app b's known key during the outage: %d in %v %s, want 200", an.code, an.took, an.body)
		}
		// A key the node has not seen may be valid: 503, not 401.
		an = sendKey("unknown-" + uuid.NewString())
		if an.code != 503 || an.retry == "" || an.took > limit {
			t.Errorf("an unknown key during the outage: %d Retry-After %q in %v %s, want 503 + Retry-After", an.code, an.retry, an.took, an.body)
		}
		noLeak("PUT /events with an unknown key", an)
		time.Sleep(time.Second)
	}
	if freeze {
		err = pg.Thaw()
	} else {
		err = pg.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	t.Logf("outage of %v: %d rounds; slowest dashboard answer %v, slowest readyz %v", time.Since(outage).Round(time.Millisecond), rounds, dashSlowest, readySlowest)

	// The dashboard recovers.
	for {
		an := do(t, http.MethodGet, base+"/auth/session", tok, nil)
		if an.code == 200 {
			break
		}
		if time.Since(back) > 20*time.Second {
			t.Fatalf("session still %d %s 20 s after PostgreSQL returned", an.code, an.body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("dashboard answered again %v after PostgreSQL returned", time.Since(back).Round(time.Millisecond))

	// A key revoked while the node served it from its stale cache (by another node, here in
	// SQL) stops working once the store answers: within the cache TTL and a retry.
	conn, err := pgx.Connect(context.Background(), pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `UPDATE api_keys SET revoked = true WHERE key = $1`, b["api_key"]); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	revoked := time.Now()
	for {
		an := sendKey(b["api_key"])
		if an.code == 401 {
			break
		}
		if an.code != 200 || time.Since(revoked) > keyTTL+metaTimeout+5*time.Second {
			t.Fatalf("app b's key revoked in the store: still %d %s after %v", an.code, an.body, time.Since(revoked))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("a key revoked in the store stopped working %v later", time.Since(revoked).Round(time.Millisecond))

	close(stop)
	<-done
	t.Logf("load: %d requests sent, statuses %v, slowest %v", l.sent, l.status, slowest)
	for code, n := range l.status {
		if code != 200 {
			t.Errorf("the load got %d × %d: ingest must answer 200 for a known key through the outage", n, code)
		}
	}
	if slowest > limit {
		t.Errorf("the slowest PUT /events took %v, want under %v", slowest, limit)
	}
	if len(l.acked) < int(outageFor/time.Second)*30 {
		t.Errorf("only %d batches acknowledged in %v at 100/s", len(l.acked), outageFor)
	}
	l.drain(t)

	// A key rotated through the dashboard after recovery stops working at once.
	an := do(t, http.MethodPatch, base+"/apps/"+a["app_id"]+"/apiKey", tok, nil)
	if an.code != 200 {
		t.Fatalf("rotate: %d %s", an.code, an.body)
	}
	var rot struct {
		APIKey struct {
			Key string `json:"key"`
		} `json:"api_key"`
	}
	if err := json.Unmarshal([]byte(an.body), &rot); err != nil || rot.APIKey.Key == "" {
		t.Fatalf("rotate answer %s: %v", an.body, err)
	}
	if an := sendKey(a["api_key"]); an.code != 401 {
		t.Errorf("the rotated-out key right after the rotation: %d %s, want 401", an.code, an.body)
	}
	nb := makeBatch(2)
	if s := send(http.DefaultClient, base, rot.APIKey.Key, nb); s != 200 {
		t.Errorf("the new key: %d", s)
	} else {
		l.acked = append(l.acked, nb)
	}

	p.stop(t)
	db, err := badgerdb.OpenEvents(dir+"/badger-events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkExactlyOnce(t, badgerevents.New(db), appA, l.acked)
}
