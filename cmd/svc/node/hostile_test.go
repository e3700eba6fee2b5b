package node

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// logBuffer collects a node's log lines for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// rawPut opens a TCP connection to the node and writes head (the request line and headers
// up to and including the blank line) and then body; closeWrite half-closes the connection
// after, as a client does that has nothing more to send.
func rawPut(t *testing.T, addr, head string, body []byte, closeWrite bool) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(body); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		_ = c.(*net.TCPConn).CloseWrite()
	}
	return c
}

// readAnswer reads one HTTP answer from c within d.
func readAnswer(t *testing.T, c net.Conn, d time.Duration) (int, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", d, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func eventsHead(addr, key, reqID string, extra string) string {
	return "PUT /events HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + key + "\r\nsvc-req-id: " + reqID +
		"\r\nContent-Type: application/json\r\n" + extra + "\r\n"
}

// TestHostileBodies: bodies a client does not deliver whole are the client's fault (4xx with
// {error}, no ERROR log line), a stalled body is cut after the idle timeout and releases its
// request id at once, and a declared length is never allocated before the bytes arrive.
func TestHostileBodies(t *testing.T) {
	logs := &logBuffer{}
	tn := startNodeLog(t, "embedded", func(c *Config) { c.BodyIdleTimeout = 700 * time.Millisecond },
		slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	addr := tn.Addr()
	valid := sampleBatch(uuid.New(), time.Now(), 2)

	cases := []struct {
		name   string
		extra  string // more headers
		body   []byte
		status int
		want   string
	}{
		{"shorter than its length", fmt.Sprintf("Content-Length: %d\r\n", len(valid)+100), valid, 400, "cut off or malformed"},
		{"bad chunk size", "Transfer-Encoding: chunked\r\n", []byte("zz\r\n{}\r\n0\r\n\r\n"), 400, "cut off or malformed"},
		{"chunked without its last chunk", "Transfer-Encoding: chunked\r\n", []byte(fmt.Sprintf("%x\r\n%s\r\n", 20, valid[:20])), 400, "cut off or malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := rawPut(t, addr, eventsHead(addr, tn.key, uuid.NewString(), c.extra), c.body, true)
			status, body := readAnswer(t, conn, 10*time.Second)
			if status != c.status || !strings.Contains(body, `"error"`) || !strings.Contains(body, c.want) {
				t.Fatalf("%d %s, want %d {error} with %q", status, body, c.status, c.want)
			}
		})
	}

	t.Run("stalled body", func(t *testing.T) {
		reqID := uuid.NewString()
		before := tn.budget.Used()
		conn := rawPut(t, addr, eventsHead(addr, tn.key, reqID, "Content-Length: 9437184\r\n"), valid[:10], false)
		time.Sleep(200 * time.Millisecond)
		if held := tn.budget.Used() - before; held > 2<<20 {
			t.Errorf("a body that declared 9 MiB and sent 10 bytes holds %d bytes", held)
		}
		start := time.Now()
		status, body := readAnswer(t, conn, 10*time.Second)
		if status != http.StatusRequestTimeout || !strings.Contains(body, "stalled") {
			t.Fatalf("stalled body: %d %s, want 408", status, body)
		}
		if waited := time.Since(start); waited > 5*time.Second {
			t.Errorf("answered after %v; the idle timeout is 700ms", waited)
		}
		// The request id is free again: the same id with a whole body is processed.
		if r := tn.putJSON(t, tn.key, reqID, valid); r.status != 200 {
			t.Fatalf("same request id after the stall: %d %s", r.status, r.body)
		}
		if used := tn.budget.Used(); used != 0 {
			t.Errorf("%d body bytes still held with no request in flight", used)
		}
	})

	t.Run("declared length is not allocated", func(t *testing.T) {
		const conns = 40
		before := tn.budget.Used()
		var cs []net.Conn
		for i := 0; i < conns; i++ {
			cs = append(cs, rawPut(t, addr, eventsHead(addr, tn.key, uuid.NewString(), "Content-Length: 9437184\r\n"), valid[:10], false))
		}
		time.Sleep(300 * time.Millisecond)
		if held := tn.budget.Used() - before; held > conns*(1<<20) {
			t.Errorf("%d stalled bodies of 10 bytes hold %d bytes", conns, held)
		}
		for _, c := range cs {
			c.Close()
		}
	})

	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("client faults logged as errors:\n%s", logs.String())
	}
}

// TestMultipartBlobsNotOrphaned: a refused multipart body leaves no blob behind, a body of
// thousands of blob parts is refused quickly, and blob parts no attachment names are removed.
func TestMultipartBlobsNotOrphaned(t *testing.T) {
	tn := startNode(t, "embedded", nil)
	send := func(body []byte, ct string) response {
		return tn.do(t, http.MethodPut, "/events", tn.key, map[string]string{"svc-req-id": uuid.NewString(), "Content-Type": ct}, bytes.NewReader(body))
	}

	// 20,000 empty blob parts and no events.
	var b bytes.Buffer
	const boundary = "xxBOUNDARYxx"
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"blob-%s\"\r\n\r\n\r\n", boundary, uuid.NewString())
	}
	fmt.Fprintf(&b, "--%s--\r\n", boundary)
	start := time.Now()
	r := send(b.Bytes(), "multipart/form-data; boundary="+boundary)
	if r.status != 400 || !strings.Contains(string(r.body), "blob parts") {
		t.Fatalf("20,000 blob parts: %d %s", r.status, r.body)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("refusing 20,000 blob parts took %v", d)
	}
	if n := blobFiles(tn); n != 0 {
		t.Errorf("%d blob files left by a refused request", n)
	}

	// A valid event and a blob, but a broken event part: refused, blob removed.
	body, ct := toMultipart(t, []byte(`{"events":[{"nope":1}],"spans":[]}`), map[string][]byte{"blob-" + uuid.NewString(): []byte("png")})
	if r := send(body, ct); r.status != 400 {
		t.Fatalf("bad event with a blob: %d %s", r.status, r.body)
	}
	if n := blobFiles(tn); n != 0 {
		t.Errorf("%d blob files left by a refused request", n)
	}

	// An accepted body keeps its attachments' blobs and drops a stray one.
	batch := sampleBatch(uuid.New(), time.Now(), 2) // its first event has one attachment
	attID := regexp.MustCompile(`"attachments":\[\{"id":"([0-9a-f-]{36})"`).FindSubmatch(batch)[1]
	body, ct = toMultipart(t, batch, map[string][]byte{"blob-" + string(attID): []byte("png"), "blob-" + uuid.NewString(): []byte("stray")})
	if r := send(body, ct); r.status != 202 {
		t.Fatalf("valid multipart: %d %s", r.status, r.body)
	}
	if n := blobFiles(tn); n != 1 {
		t.Errorf("%d blob files after an accepted body with one attachment and one stray part, want 1", n)
	}
}

// TestTimeWindow: events and spans dated beyond the app's retention, or more than
// --max-event-future ahead, are refused with 400 naming the item; the operator can widen the
// past bound.
func TestTimeWindow(t *testing.T) {
	tn := startNode(t, "embedded", func(c *Config) { c.MaxEventAge = 0 })
	wide := startNode(t, "embedded", func(c *Config) { c.MaxEventAge = 400 * 24 * time.Hour; c.MaxEventFuture = time.Hour })
	now := time.Now().UTC()
	day := 24 * time.Hour
	spanAt := func(start time.Time) []byte {
		ts := func(t time.Time) string { return t.Format("2006-01-02T15:04:05.000000000Z") }
		return []byte(`{"events":[],"spans":[{"name":"load","trace_id":"d71f3d909689859469a7d9b38e605d56","span_id":"9f1890db9aedb305",` +
			`"session_id":"` + uuid.NewString() + `","start_time":"` + ts(start) + `","end_time":"` + ts(start.Add(time.Second)) + `","duration":1000,"status":1,` +
			`"attributes":{"installation_id":"i","app_version":"1","app_build":"1","app_unique_id":"a","measure_sdk_version":"0.11.0","os_version":"34",` +
			`"platform":"android","thread_name":"main","network_type":"wifi","network_provider":"unknown","network_generation":"unknown","device_cpu_arch":"arm64"}}]}`)
	}
	cases := []struct {
		name   string
		node   *testNode
		body   []byte
		status int
		want   string
	}{
		{"now", tn, sampleBatch(uuid.New(), now, 2), 200, ""},
		{"inside retention", tn, sampleBatch(uuid.New(), now.Add(-29*day), 2), 200, ""},
		{"beyond retention", tn, sampleBatch(uuid.New(), now.Add(-31*day), 2), 400, "event 0: timestamp: "},
		{"1900", tn, sampleBatch(uuid.New(), time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), 1), 400, "older than this app's retention of 30 days"},
		{"a week ahead", tn, sampleBatch(uuid.New(), now.Add(7*day), 1), 200, ""},
		{"2200, 10,000 events", tn, sampleBatch(uuid.New(), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), 10000), 400, "event 0: timestamp: 2200-01-01T00:00:00Z is more than 720h0m0s ahead"},
		{"span ahead", tn, spanAt(now.Add(40 * day)), 400, "span 0: start_time: "},
		{"wider past bound", wide, sampleBatch(uuid.New(), now.Add(-300*day), 1), 200, ""},
		{"beyond the wider bound", wide, sampleBatch(uuid.New(), now.Add(-401*day), 1), 400, "older than the node accepts (--max-event-age 9600h0m0s)"},
		{"narrower future bound", wide, sampleBatch(uuid.New(), now.Add(2*time.Hour), 1), 400, "more than 1h0m0s ahead"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.node.putJSON(t, c.node.key, uuid.NewString(), c.body)
			if r.status != c.status || (c.want != "" && !strings.Contains(string(r.body), c.want)) {
				t.Fatalf("%d %s, want %d with %q", r.status, r.body, c.status, c.want)
			}
		})
	}
	t.Run("multipart leaves no blob", func(t *testing.T) {
		batch := sampleBatch(uuid.New(), now.Add(-60*day), 1)
		attID := regexp.MustCompile(`"attachments":\[\{"id":"([0-9a-f-]{36})"`).FindSubmatch(batch)[1]
		body, ct := toMultipart(t, batch, map[string][]byte{"blob-" + string(attID): []byte("png")})
		r := tn.do(t, http.MethodPut, "/events", tn.key, map[string]string{"svc-req-id": uuid.NewString(), "Content-Type": ct}, bytes.NewReader(body))
		if r.status != 400 || !strings.Contains(string(r.body), "retention") {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if n := blobFiles(tn); n != 0 {
			t.Fatalf("%d blob files left", n)
		}
	})
}

// blobFiles counts the files of a node's local blob store.
func blobFiles(tn *testNode) int {
	n := 0
	_ = filepath.Walk(filepath.Join(tn.cfg.DataDir, "blobs"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n++
		}
		return nil
	})
	return n
}
