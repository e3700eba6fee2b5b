package node

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/eventstest"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// backends are the two ways a node stores data; every ingest test runs on both.
var backends = []string{"embedded", "clickhouse+postgres"}

// testNode is an in-process node with one user, team and app.
type testNode struct {
	*Node
	base   string
	app    model.App
	key    string
	email  string // of the app's owner
	client *http.Client

	lastEmail string
}

// accessToken signs the user in through the admin API, as an operator would.
func (tn *testNode) accessToken(t *testing.T, email string) string {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(tn.cfg.DataDir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+tn.AdminAddr()+"/admin/tokens", strings.NewReader(`{"email":"`+email+`"}`))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := tn.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v["access_token"] == "" {
		t.Fatalf("admin token: %d %v", resp.StatusCode, err)
	}
	return v["access_token"]
}

// startNode starts a node on free loopback ports. tweak may change the config first.
func startNode(t *testing.T, backend string, tweak func(*Config)) *testNode {
	t.Helper()
	return startNodeLog(t, backend, tweak, nil)
}

// startNodeLog is startNode with the node's log going to log (nil: discarded, or stderr from
// warnings up with -v).
func startNodeLog(t *testing.T, backend string, tweak func(*Config), log *slog.Logger) *testNode {
	t.Helper()
	cfg, err := ParseConfig([]string{"--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--flush-interval", "100ms"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// The recorded SDK bodies and generated datasets lie months back, beyond the default window
	// of an app's retention; TestTimeWindow checks the default.
	cfg.MaxEventAge = 20 * 365 * 24 * time.Hour
	if backend == "clickhouse+postgres" {
		cfg.ClickHouseDSN = sinktest.ClickHouse(t)
		cfg.PostgresDSN = sinktest.Postgres(t)
	}
	if tweak != nil {
		tweak(&cfg)
	}
	if log == nil {
		log = slog.New(slog.NewJSONHandler(io.Discard, nil))
		if testing.Verbose() {
			log = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := Start(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = n.Shutdown(sctx)
		}
	})
	// The janitor's first round runs at start, when no test can say. Apps made before it ends
	// would have what the tests send (recorded SDK bodies from 2023–2025, accepted under the
	// --max-event-age above) deleted by retention at a moment of its choosing: CI lost fixture
	// events to it. The next round is --janitor-interval (1 h) away; tests of retention call
	// sweep themselves or set a shorter interval.
	select {
	case <-n.Swept():
	case <-time.After(time.Minute):
		t.Fatal("the janitor's first round did not end within a minute")
	}
	tn := &testNode{Node: n, base: "http://" + n.Addr(), client: &http.Client{Timeout: 60 * time.Second}}
	// The node's public URL must be where it really listens, for upload URLs.
	tn.app, tn.key = tn.newApp(t)
	tn.email = tn.lastEmail
	return tn
}

// newApp creates a user, their team and an app through the metadata store.
func (tn *testNode) newApp(t *testing.T) (model.App, string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	u := model.User{ID: uuid.New(), Name: "Ada", Email: uuid.NewString() + "@example.com", CreatedAt: now, UpdatedAt: now}
	tn.lastEmail = u.Email
	team := model.Team{ID: uuid.New(), Name: "Ada's team", CreatedAt: now, UpdatedAt: now}
	if err := tn.Meta.CreateUser(ctx, u, team); err != nil {
		t.Fatal(err)
	}
	app := model.App{ID: uuid.New(), TeamID: team.ID, Name: "demo", RetentionDays: 30, CreatedAt: now, UpdatedAt: now}
	key := model.APIKey{AppID: app.ID, Key: model.NewAPIKey(), CreatedAt: now}
	if err := tn.Meta.CreateApp(ctx, app, key); err != nil {
		t.Fatal(err)
	}
	return app, key.Key
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %q", r.body)
	}
	return m
}

// do sends a request with the app key (when key is not empty) and returns the answer.
func (tn *testNode) do(t *testing.T, method, path, key string, hdr map[string]string, body io.Reader) response {
	t.Helper()
	req, err := http.NewRequest(method, tn.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := tn.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// putJSON sends a JSON PUT /events with a request id.
func (tn *testNode) putJSON(t *testing.T, key string, reqID string, body []byte) response {
	t.Helper()
	return tn.do(t, http.MethodPut, "/events", key, map[string]string{"svc-req-id": reqID, "Content-Type": "application/json"},
		bytes.NewReader(body))
}

// waitFlushed waits until the spool holds nothing that is not in the event store.
func (tn *testNode) waitFlushed(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for tn.Spool.PendingBytes() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("spool still holds %d bytes after 60s", tn.Spool.PendingBytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (tn *testNode) counts(t *testing.T, app uuid.UUID) (int64, int64) {
	t.Helper()
	e, s, err := tn.Events.Count(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	return e, s
}

// fixtures returns the names of the recorded SDK batches.
func fixtures(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(eventstest.FixturesDir(t), "batch_*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	sort.Strings(names)
	return names
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// toMultipart turns a JSON batch into the multipart body older SDKs send: one `event` part per
// event and one `span` part per span.
func toMultipart(t *testing.T, body []byte, blobs map[string][]byte) ([]byte, string) {
	t.Helper()
	var b struct {
		Events []json.RawMessage `json:"events"`
		Spans  []json.RawMessage `json:"spans"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, e := range b.Events {
		if err := w.WriteField("event", string(e)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range b.Spans {
		if err := w.WriteField("span", string(s)); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range blobs {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+name+`"; filename="`+name+`"`)
		h.Set("Content-Type", "application/octet-stream")
		p, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		p.Write(data)
	}
	w.Close()
	return buf.Bytes(), w.FormDataContentType()
}

// equalRows compares a stored event with the decoded one, ignoring slice nil-ness.
func equalEvent(a, b model.Event) bool {
	norm := func(e model.Event) model.Event {
		if len(e.UserDefined) == 0 {
			e.UserDefined = nil
		}
		if len(e.Attachments) == 0 {
			e.Attachments = nil
		}
		if len(e.Payload) == 0 {
			e.Payload = nil
		}
		return e
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func equalSpan(a, b model.Span) bool {
	norm := func(s model.Span) model.Span {
		if len(s.UserDefined) == 0 {
			s.UserDefined = nil
		}
		if len(s.Checkpoints) == 0 {
			s.Checkpoints = nil
		}
		return s
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
