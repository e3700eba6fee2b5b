package main

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
)

// TestMetaDownAcrossCrash: svc is killed with SIGKILL under load while PostgreSQL is down and
// started again before PostgreSQL returns. The node starts, ingest goes on for the keys it
// accepted before the crash (saved on its disk), unknown keys and the dashboard get 503, and
// once PostgreSQL answers the dashboard works again; every acknowledged event is stored once.
func TestMetaDownAcrossCrash(t *testing.T) {
	pg := ownPostgres(t)
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--flush-interval", "200ms", "--ingest-rate-limit", "1000000",
		"--meta-timeout", metaTimeout.String(), "--api-key-cache-ttl", keyTTL.String()}
	env := []string{"SVC_POSTGRES_DSN=" + pg.DSN}
	p := startServe(t, env, args...)
	o := newOwner(t, p, dir, "crash-meta@example.com", "crash")
	app, tok := o.app, o.tok
	l := &load{base: "http://" + p.addr, key: o.key, status: map[int]int{}, perReq: 10, workers: 4}

	stop, done := make(chan struct{}), make(chan struct{})
	go func() { l.run(stop); close(done) }()
	time.Sleep(1500 * time.Millisecond)
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(keyTTL + time.Second) // the key's cache entry is past its TTL: served as the last answer
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	close(stop)
	<-done

	// PostgreSQL is still down: the node starts, and ingest goes on with the key it knew.
	start := time.Now()
	p = startServe(t, env, args...)
	t.Logf("restarted in %v with PostgreSQL down", time.Since(start).Round(time.Millisecond))
	base := "http://" + p.addr
	l.mu.Lock()
	l.base = base
	l.mu.Unlock()
	probe := makeBatch(2)
	if an := do(t, http.MethodPut, base+"/events", o.key, probe.body); an.code != 200 {
		t.Fatalf("a key known before the crash, PostgreSQL down: %d %s, want 200", an.code, an.body)
	}
	l.acked = append(l.acked, probe)
	if an := do(t, http.MethodPut, base+"/events", "svc_"+strings.Repeat("0", 40), makeBatch(1).body); an.code != 503 || an.retry == "" {
		t.Errorf("an unknown key, PostgreSQL down: %d %s, want 503 + Retry-After", an.code, an.body)
	}
	if an := do(t, http.MethodGet, base+"/auth/session", tok, nil); an.code != 503 || an.retry == "" ||
		!strings.Contains(an.body, "metadata store is unavailable") {
		t.Errorf("dashboard, PostgreSQL down: %d %q %s", an.code, an.retry, an.body)
	}
	stop, done = make(chan struct{}), make(chan struct{})
	go func() { l.run(stop); close(done) }()
	time.Sleep(3 * time.Second)
	l.mu.Lock()
	acked := len(l.acked)
	l.mu.Unlock()

	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	for {
		an := do(t, http.MethodGet, base+"/auth/session", tok, nil)
		if an.code == 200 {
			break
		}
		if time.Since(back) > 30*time.Second {
			t.Fatalf("dashboard still %d %s 30 s after PostgreSQL returned", an.code, an.body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("dashboard answered %v after PostgreSQL returned", time.Since(back).Round(time.Millisecond))
	// The node could not rebuild the app's aggregates at start: its group lists come from the
	// store, never from an actor that counted only since the restart.
	req, _ := http.NewRequest(http.MethodGet, base+"/apps/"+app.String()+"/crashGroups", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Svc-Answered-By") != "store" {
		t.Errorf("crash groups after the restart: %d answered by %q, want 200 from the store", resp.StatusCode, resp.Header.Get("Svc-Answered-By"))
	}
	time.Sleep(time.Second)
	close(stop)
	<-done
	l.drain(t)
	t.Logf("%d batches acknowledged (%d before PostgreSQL returned); statuses %v", len(l.acked), acked, l.status)
	if acked < 20 {
		t.Errorf("only %d batches acknowledged before PostgreSQL returned: ingest did not go on", acked)
	}
	for code, n := range l.status {
		if code != 200 && code != 0 { // 0: requests cut by the SIGKILL
			t.Errorf("the load got %d × %d", n, code)
		}
	}
	p.stop(t)
	db, err := badgerdb.OpenEvents(dir+"/badger-events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkExactlyOnce(t, badgerevents.New(db), app, l.acked)
}
