package main

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/svc-dev/svc/sinks/sinktest"
)

// TestShutdownWithStoresFrozen: SIGTERM reaches a node whose ClickHouse and PostgreSQL are both
// frozen (connections open, nothing answers) while it holds acknowledged rows and a dashboard
// request waits on PostgreSQL. The node must stop within --shutdown-timeout and a margin, not
// wait on the stores for ever, and lose nothing: after the stores thaw, a restarted node
// stores every acknowledged event exactly once.
func TestShutdownWithStoresFrozen(t *testing.T) {
	ch, err := sinktest.StartClickHouse(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Stop() })
	pg := ownPostgres(t)
	dir := t.TempDir()
	const shutdownTimeout = 5 * time.Second
	env := []string{"SVC_CLICKHOUSE_DSN=" + ch.DSN, "SVC_POSTGRES_DSN=" + pg.DSN}
	base := []string{"--data-dir", dir, "--ingest-rate-limit", "1000000", "--shutdown-timeout", shutdownTimeout.String()}
	// Rows stay in the flusher until shutdown: its last flush meets the frozen store.
	p := startServe(t, env, append(base, "--flush-interval", "1h", "--flush-rows", "1000000")...)
	o := newOwner(t, p, dir, "shutdown-frozen@example.com", "shutdown-frozen")
	l := &load{base: "http://" + p.addr, key: o.key, status: map[int]int{}, perReq: 10, workers: 4}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { l.run(stop); close(done) }()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	<-done
	if len(l.acked) == 0 {
		t.Fatalf("no batch acknowledged before the freeze (statuses %v)", l.status)
	}

	if err := ch.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Freeze(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Thaw(); _ = pg.Thaw() })
	// A dashboard request that waits on the frozen metadata store when SIGTERM comes.
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+"/apps/"+o.app.String()+"/crashGroups", nil)
		req.Header.Set("Authorization", "Bearer "+o.tok)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	bound := shutdownTimeout + 5*time.Second // pgx alone waited 15 s on each frozen connection
	select {
	case <-p.exited:
	case <-time.After(bound):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT) // the goroutines' stacks go to stderr
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		t.Fatalf("svc serve did not stop within %v of SIGTERM with its stores frozen (--shutdown-timeout %v); stderr:\n%s",
			bound, shutdownTimeout, p.stderr)
	}
	t.Logf("stopped %v after SIGTERM, exit code %d", time.Since(start).Round(10*time.Millisecond), p.cmd.ProcessState.ExitCode())

	// Nothing acknowledged is lost: it waits in the spool for the next start.
	if err := ch.Thaw(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Thaw(); err != nil {
		t.Fatal(err)
	}
	p = startServe(t, env, base...) // the default flush settings
	waitFor(t, "spool drained", 60*time.Second, func() bool { return spoolPending(t, p) == 0 })
	checkStoredOnceCH(t, ch.DSN, o.app, l.acked)
	p.stop(t)
}
