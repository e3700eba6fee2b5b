package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestTimingConn sends requests as the timed loop does, one request sent again and again, to a
// server that answers chunked, with a length, and with Connection: close, and checks each
// answer and how many connections it took.
func TestTimingConn(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Svc-Answered-By", "live")
		switch r.URL.Path {
		case "/chunked":
			w.Write([]byte(strings.Repeat("a", 20000))) // past the server's buffer: chunked
		case "/length":
			w.Header().Set("Content-Length", "5")
			w.Write([]byte("hello"))
		case "/close":
			w.Header().Set("Connection", "close")
			w.Write([]byte("bye"))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cases := []struct {
		path  string
		times int
		body  string
		conns int32 // opened in all, after this case
	}{
		{"/chunked", 3, strings.Repeat("a", 20000), 1},
		{"/length", 3, "hello", 1},
		{"/close", 2, "bye", 2}, // each answer closes: the next request dials
		{"/length", 2, "hello", 3},
	}
	var c timingConn
	defer c.close()
	var body bytes.Buffer
	for _, tc := range cases {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok")
		for range tc.times {
			resp, err := c.roundTrip(req, &body)
			if err != nil {
				t.Fatalf("%s: %v", tc.path, err)
			}
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Svc-Answered-By") != "live" || body.String() != tc.body {
				t.Fatalf("%s: %s, answered by %q, %d bytes", tc.path, resp.Status, resp.Header.Get("Svc-Answered-By"), body.Len())
			}
		}
		if got := conns.Load(); got != tc.conns {
			t.Fatalf("after %s: %d connections, want %d", tc.path, got, tc.conns)
		}
	}
	// A node restarted on another address: the connection goes there.
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("two")) }))
	defer srv2.Close()
	req, _ := http.NewRequest(http.MethodGet, srv2.URL+"/", nil)
	if _, err := c.roundTrip(req, &body); err != nil || body.String() != "two" {
		t.Fatalf("after a move: %v, %q", err, body.String())
	}
	// A server gone: an error, then a new dial.
	srv2.Close()
	if _, err := c.roundTrip(req, &body); err == nil {
		t.Fatal("no error from a closed server")
	}
	if c.conn != nil {
		t.Fatal("a failed exchange kept its connection")
	}
}
