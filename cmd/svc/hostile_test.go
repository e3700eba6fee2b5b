package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/cmd/internal/procfs"
)

// rssBytes is a child process's resident set size.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	n, err := procfs.RSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// honestLatencies sends n small batches one after another and returns their latencies, sorted.
func honestLatencies(t *testing.T, base, key string, n int) []time.Duration {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	var out []time.Duration
	for i := 0; i < n; i++ {
		b := makeBatch(50)
		start := time.Now()
		if s := send(client, base, key, b); s != 200 {
			t.Fatalf("honest request %d: status %d", i, s)
		}
		out = append(out, time.Since(start))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestHostileClients runs a node under hostile clients — bodies that declare 9 MiB and stall,
// header floods, bodies that stop halfway — while an honest SDK keeps sending. The node's RSS
// stays bounded, the honest requests are all acknowledged without a tail far beyond their
// unloaded one, and RSS falls back once the hostile connections are gone.
func TestHostileClients(t *testing.T) {
	dir := t.TempDir()
	p := startServe(t, nil, "--data-dir", dir, "--body-idle-timeout", "3s", "--ingest-rate-limit", "1000000")
	base, key := "http://"+p.addr, newOwner(t, p, dir, "hostile@example.com", "hostile").key
	pid := p.cmd.Process.Pid

	// 200 requests each, so that p99 is the third slowest rather than the one slowest: one
	// stall of a shared 2-core machine must not decide it.
	const honest = 200
	baseline := honestLatencies(t, base, key, honest)
	rssBefore := rssBytes(t, pid)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var peak int64
	attack := func(open func() (net.Conn, error)) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := open()
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			// Hold the connection until the node gives up on it or the test ends.
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}
	stalled := func() (net.Conn, error) {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			return nil, err
		}
		_, err = fmt.Fprintf(c, "PUT /events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nsvc-req-id: %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: 9437184\r\n\r\n{\"events\":[", key, uuid.NewString())
		return c, err
	}
	headerFlood := func() (net.Conn, error) {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			return nil, err
		}
		_, err = fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Flood: %s\r\n\r\n", strings.Repeat("f", 2<<20))
		return c, err
	}
	halfBody := func() (net.Conn, error) {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			return nil, err
		}
		body := makeBatch(100).body
		_, err = fmt.Fprintf(c, "PUT /events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nsvc-req-id: %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, uuid.NewString(), len(body), body[:len(body)/2])
		if err == nil {
			_ = c.(*net.TCPConn).CloseWrite()
		}
		return c, err
	}
	for i := 0; i < 150; i++ {
		wg.Add(1)
		go attack(stalled)
	}
	for i := 0; i < 8; i++ {
		wg.Add(2)
		go attack(headerFlood)
		go attack(halfBody)
	}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				r := rssBytes(t, pid)
				mu.Lock()
				peak = max(peak, r)
				mu.Unlock()
			}
		}
	}()
	time.Sleep(time.Second)
	under := honestLatencies(t, base, key, honest)
	close(stop)
	wg.Wait()
	<-sampled

	p99 := func(d []time.Duration) time.Duration { return d[len(d)*99/100] }
	t.Logf("RSS before %d MiB, peak under attack %d MiB; honest p99 %v alone, %v under attack",
		rssBefore>>20, peak>>20, p99(baseline), p99(under))
	// 150 bodies declaring 9 MiB would be 1.3 GiB if the declared length were allocated.
	if peak-rssBefore > 300<<20 {
		t.Errorf("RSS grew by %d MiB under hostile clients", (peak-rssBefore)>>20)
	}
	if limit := max(10*p99(baseline), 500*time.Millisecond); p99(under) > limit {
		t.Errorf("honest p99 %v under attack, %v alone", p99(under), p99(baseline))
	}
	// A node that let the attackers crowd honest requests out would keep those waiting until
	// the attackers are cut off (--body-idle-timeout 3 s) or give up (5 s).
	if slowest := under[len(under)-1]; slowest > 2500*time.Millisecond {
		t.Errorf("slowest honest request under attack took %v", slowest)
	}
	// The node is healthy afterwards.
	if code, _ := getJSON(t, base+"/healthz"); code != 200 {
		t.Errorf("healthz after the attack: %d", code)
	}
	p.stop(t)
}
