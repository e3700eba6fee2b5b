package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/sinktest"
)

var svcBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "svc-bin-")
	if err != nil {
		panic(err)
	}
	svcBin = filepath.Join(dir, "svc")
	if out, err := exec.Command("go", "build", "-o", svcBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build svc: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running `svc serve` child.
type proc struct {
	cmd         *exec.Cmd
	addr, admin string
	dataDir     string // from --data-dir, for the admin token
	stderr      *bytes.Buffer
	exited      chan struct{}
}

// adminGet GETs path on the admin listener with the node's admin token.
func (p *proc) adminGet(t *testing.T, path string) (int, []byte) {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(p.dataDir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	return getWithToken(t, "http://"+p.admin+path, strings.TrimSpace(string(token)))
}

// getWithToken GETs url with a bearer token (none when empty).
func getWithToken(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

var listenLine = regexp.MustCompile(`listening on http://(\S+) \(admin http://(\S+)\)`)

// childEnv is the test's environment without svc's own settings and GOMEMLIMIT, so a child
// serves exactly what the test asks for (an SVC_CLICKHOUSE_DSN in the shell must not turn an
// embedded test into a ClickHouse one).
func childEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SVC_") && !strings.HasPrefix(kv, "SVC_TEST_") || strings.HasPrefix(kv, "GOMEMLIMIT=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

func startServe(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(svcBin, append([]string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = childEnv(env)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	for i, a := range args {
		if a == "--data-dir" && i+1 < len(args) {
			p.dataDir = args[i+1]
		}
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	select {
	case l := <-lines:
		m := listenLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unexpected first line %q", l)
		}
		p.addr, p.admin = m[1], m[2]
	case <-p.exited:
		t.Fatalf("svc serve exited at start: %s", p.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("svc serve did not start in 60s: %s", p.stderr)
	}
	return p
}

// stop sends SIGTERM and checks the process ends cleanly.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(45 * time.Second): // --shutdown-timeout (30 s by default) and room
		_ = p.cmd.Process.Kill()
		<-p.exited // its stderr is complete once it has exited
		t.Fatalf("svc serve did not stop within 45s of SIGTERM; stderr:\n%s", p.stderr)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; stderr:\n%s", code, p.stderr)
	}
	if !strings.Contains(p.stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no shutdown log line in:\n%s", p.stderr)
	}
}

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("GET %s: body is not JSON: %q", url, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("GET %s: content type %q", url, ct)
	}
	return resp.StatusCode, m
}

func runSvc(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(svcBin, args...)
	cmd.Env = childEnv(env)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// owner is a user and an app of their own team, made on a running node through svc admin.
type owner struct {
	app uuid.UUID
	key string // the app's API key
	tok string // the user's dashboard access token
}

func newOwner(t *testing.T, p *proc, dataDir, email, appName string) owner {
	t.Helper()
	u := adminJSON(t, p, dataDir, "create-user", "--email", email, "--name", appName)
	a := adminJSON(t, p, dataDir, "create-app", "--team", u["own_team_id"], "--name", appName)
	tok := adminJSON(t, p, dataDir, "token", "--email", email)["access_token"]
	return owner{app: uuid.MustParse(a["app_id"]), key: a["api_key"], tok: tok}
}

func adminJSON(t *testing.T, p *proc, dataDir string, args ...string) map[string]string {
	t.Helper()
	out, errOut, code := runSvc(t, nil, append([]string{"admin", "--admin-addr", p.admin, "--data-dir", dataDir}, args...)...)
	if code != 0 {
		t.Fatalf("svc admin %v: exit %d: %s", args, code, errOut)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("svc admin %v: not JSON: %q", args, out)
	}
	return m
}

// TestServeEmbedded runs the binary as an operator would, with no external service.
func TestServeEmbedded(t *testing.T) {
	dir := t.TempDir()
	p := startServe(t, nil, "--data-dir", dir)

	if code, body := getJSON(t, "http://"+p.addr+"/healthz"); code != 200 || body["status"] != "ok" {
		t.Fatalf("healthz %d %v", code, body)
	}
	code, body := getJSON(t, "http://"+p.addr+"/readyz")
	if code != 200 {
		t.Fatalf("readyz %d %v", code, body)
	}
	checks := body["checks"].(map[string]any)
	for _, name := range []string{"badger (events)", "badger (metadata)", "localdisk (blobs)"} {
		if checks[name] != "ok" {
			t.Errorf("readyz check %q = %v", name, checks[name])
		}
	}
	if code, body := getJSON(t, "http://"+p.addr+"/nope"); code != 404 || body["error"] == nil {
		t.Errorf("unknown route: %d %v", code, body)
	}

	u := adminJSON(t, p, dir, "create-user", "--email", "ada@example.com", "--name", "Ada")
	if u["user_id"] == "" || u["own_team_id"] == "" {
		t.Fatalf("create-user: %v", u)
	}
	a := adminJSON(t, p, dir, "create-app", "--team", u["own_team_id"], "--name", "Demo")
	if a["app_id"] == "" || !strings.HasPrefix(a["api_key"], "svc_") {
		t.Fatalf("create-app: %v", a)
	}
	tok := adminJSON(t, p, dir, "token", "--email", "ada@example.com")
	for _, k := range []string{"access_token", "refresh_token", "session_id", "user_id", "own_team_id"} {
		if tok[k] == "" {
			t.Errorf("token: %s missing in %v", k, tok)
		}
	}
	if tok["user_id"] != u["user_id"] || tok["own_team_id"] != u["own_team_id"] {
		t.Errorf("token names another user: %v vs %v", tok, u)
	}

	// The debug endpoint shows the actors a batch created, and one actor's state.
	b := makeBatch(3)
	if s := send(http.DefaultClient, "http://"+p.addr, a["api_key"], b); s != 200 {
		t.Fatalf("PUT /events: %d", s)
	}
	token, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	debug := func(path string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+p.admin+path, nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := debug("/debug/actors"); code != 200 || fmt.Sprint(m["session"].(map[string]any)["count"]) != "1" {
		t.Errorf("/debug/actors: %d %v", code, m)
	}
	if code, m := debug("/debug/actors/app/" + a["app_id"]); code != 200 || fmt.Sprint(m["state"].(map[string]any)["events"]) != "3" {
		t.Errorf("/debug/actors/app: %d %v", code, m)
	}
	if code, _ := debug("/debug/actors/nope/x"); code != 404 {
		t.Errorf("unknown kind: %d", code)
	}
	if code, m := debug("/debug/cluster"); code != 200 || m["clustered"] != false ||
		fmt.Sprint(m["members"].([]any)[0].(map[string]any)["actors"].(map[string]any)["session"]) != "1" {
		t.Errorf("/debug/cluster on a single node: %d %v", code, m)
	}

	// Operator mistakes get one clear line and a non-zero exit.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create-user", "--email", "ada@example.com", "--name", "Ada"}, "exists already"},
		{[]string{"create-user", "--email", "not-an-email", "--name", "X"}, "not a valid address"},
		{[]string{"create-app", "--team", "3f1c8a52-51d4-4a71-8d8e-2b1f4ff0c001", "--name", "X"}, "does not exist"},
		{[]string{"token", "--email", "nobody@example.com"}, "no user"},
		{[]string{"create-app", "--name", "X"}, "--team is required"},
	} {
		_, errOut, code := runSvc(t, nil, append([]string{"admin", "--admin-addr", p.admin, "--data-dir", dir}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("svc admin %v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
	_, errOut, code2 := runSvc(t, []string{"SVC_ADMIN_TOKEN=wrong"}, "admin", "--admin-addr", p.admin, "token", "--email", "ada@example.com")
	if code2 == 0 || !strings.Contains(errOut, "401") {
		t.Errorf("wrong admin token: exit %d %q", code2, errOut)
	}

	code, metrics := p.adminGet(t, "/metrics")
	if code != 200 {
		t.Errorf("/metrics with the admin token: %d", code)
	}
	if code, _ := p.adminGet(t, "/debug/pprof/heap"); code != 200 {
		t.Errorf("heap profile on the admin listener: %d", code)
	}
	for _, want := range []string{`svc_http_requests_total{code="200",listener="public",method="GET",route="/readyz"}`, "go_goroutines", "process_resident_memory_bytes",
		"go_sched_latencies_seconds_bucket", "go_memstats_alloc_bytes_total", "go_gc_duration_seconds_count"} { // the last three: cmd/bench reads them
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	p.stop(t)

	// The data survives a restart: the same user signs in again.
	p2 := startServe(t, nil, "--data-dir", dir)
	tok2 := adminJSON(t, p2, dir, "token", "--email", "ADA@example.com")
	if tok2["user_id"] != u["user_id"] {
		t.Fatalf("after restart: %v", tok2)
	}
	p2.stop(t)
}

func TestServeBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"serve", "--bogus"}, nil, "flag provided but not defined: -bogus"},
		{[]string{"serve", "--addr", "nonsense"}, nil, `bad value "nonsense" for --addr`},
		{[]string{"serve"}, []string{"SVC_REFRESH_TOKEN_TTL=forever"}, "SVC_REFRESH_TOKEN_TTL"},
		{[]string{"frobnicate"}, nil, `unknown command "frobnicate"`},
		{[]string{"serve", "--memory-limit", "512"}, nil, "--memory-limit must be 0 (no limit) or at least"},
		{[]string{"serve", "--memory-limit", "-1"}, nil, "--memory-limit must be 0 (no limit) or at least"},
	}
	for _, c := range cases {
		_, errOut, code := runSvc(t, c.env, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, code, errOut, c.want)
		}
	}
	out, _, code := runSvc(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "svc ") {
		t.Errorf("version: %d %q", code, out)
	}
}

// TestServeProductionStores points the binary at real ClickHouse and PostgreSQL, then stops
// ClickHouse under it: /readyz must turn 503 and name it, and recover when it returns.
func TestServeProductionStores(t *testing.T) {
	ch, err := sinktest.StartClickHouse(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Stop() })
	pg := sinktest.Postgres(t)
	dir := t.TempDir()

	// migrate alone, twice: applied once, safe to re-run.
	for i := 0; i < 2; i++ {
		if _, errOut, code := runSvc(t, nil, "migrate", "--clickhouse-dsn", ch.DSN, "--postgres-dsn", pg); code != 0 {
			t.Fatalf("migrate run %d: exit %d: %s", i, code, errOut)
		}
	}

	p := startServe(t, []string{"SVC_CLICKHOUSE_DSN=" + ch.DSN, "SVC_POSTGRES_DSN=" + pg}, "--data-dir", dir)
	code, body := getJSON(t, "http://"+p.addr+"/readyz")
	if code != 200 {
		t.Fatalf("readyz %d %v", code, body)
	}
	checks := body["checks"].(map[string]any)
	if checks["clickhouse (events)"] != "ok" || checks["postgres (metadata)"] != "ok" {
		t.Fatalf("checks %v", checks)
	}
	u := adminJSON(t, p, dir, "create-user", "--email", "grace@example.com", "--name", "Grace")
	if u["user_id"] == "" {
		t.Fatal(u)
	}

	if err := ch.Stop(); err != nil {
		t.Fatal(err)
	}
	code, body = getJSON(t, "http://"+p.addr+"/readyz")
	if code != 503 || !strings.Contains(fmt.Sprint(body["error"]), "clickhouse") {
		t.Fatalf("readyz with ClickHouse stopped: %d %v", code, body)
	}
	if f := fmt.Sprint(body["failing"]); f != "[clickhouse (events)]" {
		t.Errorf("failing = %s", f)
	}
	if err := ch.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body = getJSON(t, "http://"+p.addr+"/readyz")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz did not recover after ClickHouse restarted: %d %v", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.stop(t)
}

// TestServeMemoryLimit: svc serve gives the Go runtime three quarters of --memory-limit as its
// soft limit (1 GiB by default), none with 0, and leaves GOMEMLIMIT's when the environment
// sets it; /metrics shows the runtime's.
func TestServeMemoryLimit(t *testing.T) {
	re := regexp.MustCompile(`(?m)^go_gc_gomemlimit_bytes (\S+)$`)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want float64
	}{
		{"default", nil, nil, 768 << 20},
		{"flag", nil, []string{"--memory-limit", "400000000"}, 300_000_000},
		{"env", []string{"SVC_MEMORY_LIMIT=2147483648"}, nil, 1536 << 20},
		{"none", nil, []string{"--memory-limit", "0"}, math.MaxInt64},
		{"GOMEMLIMIT wins", []string{"GOMEMLIMIT=500MiB"}, nil, 500 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := startServe(t, c.env, append([]string{"--data-dir", dir}, c.args...)...)
			_, b := p.adminGet(t, "/metrics")
			m := re.FindSubmatch(b)
			if m == nil {
				t.Fatal("no go_gc_gomemlimit_bytes in /metrics")
			}
			if got, _ := strconv.ParseFloat(string(m[1]), 64); got != c.want {
				t.Errorf("go_gc_gomemlimit_bytes = %s, want %.0f", m[1], c.want)
			}
		})
	}
}
