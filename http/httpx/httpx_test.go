package httpx

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serve runs h behind JSONErrorListener and BodyDeadlines on a loopback port.
func serve(t *testing.T, h http.Handler, idle time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: BodyDeadlines(idle, time.Minute)(h), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(JSONErrorListener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// raw writes req on a new connection (half-closing it when closeWrite) and reads one answer.
func raw(t *testing.T, addr, req string, closeWrite bool) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		_, _ = io.WriteString(c, req)
		if closeWrite {
			_ = c.(*net.TCPConn).CloseWrite()
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestJSONErrorListener(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain" {
			http.Error(w, "plain text from a handler", http.StatusTeapot)
			return
		}
		Error(w, http.StatusNotFound, "no route")
	}), time.Second)
	cases := []struct {
		name, req   string
		status      int
		contentType string
		body        string // substring
	}{
		{"huge headers", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", 431, "application/json", `{"error":"431 Request Header Fields Too Large"}`},
		{"malformed request line", "NONSENSE\r\n\r\n", 400, "application/json", `"error":"400 Bad Request`},
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400, "application/json", "missing required Host header"},
		{"unknown transfer encoding", "PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked2\r\n\r\n", 501, "application/json", "Unsupported transfer encoding"},
		{"handler answers pass untouched", "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n", 418, "text/plain", "plain text from a handler"},
		{"json answers pass untouched", "GET /x HTTP/1.1\r\nHost: x\r\n\r\n", 404, "application/json", `{"error":"no route"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := raw(t, addr, c.req, false)
			if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.contentType) || !strings.Contains(body, c.body) {
				t.Fatalf("%d %q %q, want %d %s with %q", resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status, c.contentType, c.body)
			}
			if c.contentType == "application/json" && !json.Valid([]byte(body)) {
				t.Fatalf("not JSON: %q", body)
			}
		})
	}
}

func TestBodyDeadlines(t *testing.T) {
	got := make(chan error, 1)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		got <- err
		if IsTimeout(err) {
			Error(w, http.StatusRequestTimeout, "stalled")
			return
		}
		Error(w, http.StatusOK, "whole")
	}), 300*time.Millisecond)

	// A body that keeps coming, slower than the idle timeout in all but each gap, is read whole.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\n")
	for i := 0; i < 3; i++ {
		time.Sleep(150 * time.Millisecond)
		_, _ = io.WriteString(c, "ab")
	}
	if err := <-got; err != nil {
		t.Fatalf("slow but steady body: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("slow but steady body: %v %v", resp, err)
	}

	// A body that stops is cut after the idle timeout.
	start := time.Now()
	resp, body := raw(t, addr, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc", false)
	if err := <-got; !IsTimeout(err) || resp.StatusCode != 408 || !strings.Contains(body, "stalled") {
		t.Fatalf("stalled body: %v, %d %s", err, resp.StatusCode, body)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stalled body answered after %v", d)
	}
}
