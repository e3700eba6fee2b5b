package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svc-dev/svc/cmd/internal/adminapi"
	"github.com/svc-dev/svc/cmd/internal/replay"
	"github.com/svc-dev/svc/cmd/svc/node"
)

func TestBaseURL(t *testing.T) {
	tests := []struct {
		addr, want string
		bad        bool
	}{
		{addr: ":8080", want: "http://localhost:8080"},
		{addr: "0.0.0.0:8080", want: "http://localhost:8080"},
		{addr: "[::]:8080", want: "http://localhost:8080"},
		{addr: "127.0.0.1:9091", want: "http://127.0.0.1:9091"},
		{addr: "[::1]:8080", want: "http://[::1]:8080"},
		{addr: "svc.internal:80", want: "http://svc.internal:80"},
		{addr: "8080", bad: true},
	}
	for _, tt := range tests {
		got, err := baseURL(tt.addr)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("baseURL(%q) = %q, %v; want %q (error: %v)", tt.addr, got, err, tt.want, tt.bad)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"", time.Second},
		{"2", 2 * time.Second},
		{"0", 100 * time.Millisecond},
		{"60", 10 * time.Second},
		{"soon", time.Second},
		{now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 100 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := retryDelay(tt.header, now); got != tt.want {
			t.Errorf("retryDelay(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestDefaultWindow(t *testing.T) {
	tests := []struct {
		now, from, to string
	}{
		{"2026-11-23T20:56:14Z", "2026-11-17T00:00:00Z", "2026-11-24T00:00:00Z"},
		{"2026-03-01T00:00:00Z", "2026-02-23T00:00:00Z", "2026-03-02T00:00:00Z"},
		{"2026-01-03T23:59:59.999Z", "2025-12-28T00:00:00Z", "2026-01-04T00:00:00Z"},
	}
	for _, tt := range tests {
		now, _ := time.Parse(time.RFC3339Nano, tt.now)
		from, to := defaultWindow(now.In(time.FixedZone("x", 5*3600)))
		if got := time.Unix(0, from).UTC().Format(time.RFC3339); got != tt.from {
			t.Errorf("%s: from %s, want %s", tt.now, got, tt.from)
		}
		if got := time.Unix(0, to).UTC().Format(time.RFC3339); got != tt.to {
			t.Errorf("%s: to %s, want %s", tt.now, got, tt.to)
		}
	}
}

// TestCrashesIn counts the crashes of the recorded batches: replayed to now they fall in the
// window, as recorded (months old) they do not.
func TestCrashesIn(t *testing.T) {
	ts := templates(t)
	now := time.Now()
	from, to := defaultWindow(now)
	rw := replay.NewRewriter()
	var moved, kept int
	for _, tpl := range ts {
		n, ids, err := crashesIn(rw.Render(nil, tpl, now.UnixNano()), from, to)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != n {
			t.Fatalf("%s: %d crashes, %d group ids", tpl.Name, n, len(ids))
		}
		moved += n
		n, _, err = crashesIn(tpl.Body(), from, to)
		if err != nil {
			t.Fatal(err)
		}
		kept += n
	}
	if moved == 0 || kept != 0 {
		t.Errorf("crashes in the window: %d replayed to now (want some), %d as recorded (want none)", moved, kept)
	}
	if _, _, err := crashesIn([]byte(`{"events":[]}`), from, to); err == nil {
		t.Error("an invalid batch was counted")
	}
}

func templates(t *testing.T) []*replay.Template {
	t.Helper()
	dir, err := replay.FixturesDir()
	if err != nil {
		t.Fatal(err)
	}
	ts, err := replay.LoadTemplates(dir, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestLoadShowsCrashGroups runs the demo's core twice against a real node with embedded
// stores: both runs see every crash they sent in the crash group list a new user asks for (no
// window), the second reusing the user with a new app.
func TestLoadShowsCrashGroups(t *testing.T) {
	dir := t.TempDir()
	cfg, err := node.ParseConfig([]string{"--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--data-dir", dir},
		func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := node.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	t.Setenv("SVC_ADMIN_TOKEN", "")
	token, err := adminapi.ReadToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + n.Addr()
	ts := templates(t)
	var apps []string
	for i, name := range []string{"Demo one", "Demo two"} {
		var log bytes.Buffer
		r, err := Load(ctx, Options{URL: base, Admin: &adminapi.Client{Addr: n.AdminAddr(), Token: token},
			Email: "demo@example.com", Name: "Demo", AppName: name, Templates: ts, Wait: 30 * time.Second, Log: &log})
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, log.String())
		}
		if r.UserReused != (i == 1) {
			t.Errorf("run %d: user reused %v", i+1, r.UserReused)
		}
		if r.Batches != len(ts) || r.Crashes == 0 || len(r.Groups) == 0 || total(r.Groups) != uint64(r.Crashes) {
			t.Errorf("run %d: %d batches of %d, %d crashes sent, %d groups counting %d", i+1, r.Batches, len(ts),
				r.Crashes, len(r.Groups), total(r.Groups))
		}
		// What the printed query answers: the first page, without a window.
		req, _ := http.NewRequest(http.MethodGet, base+"/apps/"+r.AppID+"/crashGroups", nil)
		req.Header.Set("Authorization", "Bearer "+r.AccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Results []group `json:"results"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(page.Results) == 0 {
			t.Errorf("run %d: the printed query answers %d with %d groups (%v)", i+1, resp.StatusCode, len(page.Results), err)
		}
		apps = append(apps, r.AppID)
	}
	if apps[0] == apps[1] {
		t.Errorf("both runs used app %s", apps[0])
	}
}

// TestCommandBackgroundNode runs the command as make demo does when no node answers: it starts
// svc serve in the background, loads it and prints a query that works after the command has
// ended; a second run reuses that node; -stop ends it.
func TestCommandBackgroundNode(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "svc")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/svc-dev/svc/cmd/svc").CombinedOutput(); err != nil {
		t.Fatalf("build svc: %v\n%s", err, out)
	}
	// The node serves what the test asks for: embedded stores, whatever svc settings the shell has.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SVC_") && !strings.HasPrefix(k, "SVC_TEST_") {
			t.Setenv(k, "")
		}
	}
	dir := t.TempDir()
	t.Cleanup(func() { // a failed test must not leave the node behind
		if pid := runningBackground(dir); pid != 0 {
			_ = stopBackground(dir, io.Discard, 45*time.Second)
		}
	})
	runCmd := func(args ...string) (int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		return code, out.String() + errb.String()
	}
	code, out := runCmd("-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data-dir", dir, "-svc", bin)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	m := regexp.MustCompile(`curl -sS -H 'Authorization: Bearer (\S+)' (http://(\S+))/apps/(\S+)/crashGroups`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "Stop it with: SVC_DATA_DIR="+dir+" make demo-stop") {
		t.Fatalf("no query or stop line in:\n%s", out)
	}
	pid := runningBackground(dir)
	if pid == 0 {
		t.Fatalf("no background node recorded in %s:\n%s", dir, out)
	}

	// The printed query, pasted after the command ended.
	req, _ := http.NewRequest(http.MethodGet, m[2]+"/apps/"+m[4]+"/crashGroups", nil)
	req.Header.Set("Authorization", "Bearer "+m[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"count"`) {
		t.Fatalf("the printed query answers %d: %s", resp.StatusCode, body)
	}

	// A second run finds the node at the address it printed and reuses it and the user.
	admin := regexp.MustCompile(`--admin-addr (\S+)`).FindStringSubmatch(out)
	if admin == nil {
		t.Fatalf("no admin address in:\n%s", out)
	}
	code, out2 := runCmd("-addr", m[3], "-admin-addr", admin[1], "-data-dir", dir, "-svc", bin)
	if code != 0 || !strings.Contains(out2, "using the node at") || !strings.Contains(out2, "exists already") ||
		!strings.Contains(out2, "an earlier make demo started") {
		t.Fatalf("second run: exit %d:\n%s", code, out2)
	}

	if code, out := runCmd("-stop", "-data-dir", dir); code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("-stop: exit %d:\n%s", code, out)
	}
	if alive(pid) {
		t.Errorf("pid %d still runs after -stop", pid)
	}
	if _, err := os.Stat(filepath.Join(dir, pidFile)); !os.IsNotExist(err) {
		t.Errorf("pid file left: %v", err)
	}
	if code, out := runCmd("-stop", "-data-dir", dir); code != 0 || !strings.Contains(out, "nothing to stop") {
		t.Errorf("second -stop: exit %d:\n%s", code, out)
	}
}

// TestLoadFailsLoudly: a node that accepts everything but whose crash group list stays empty,
// or counts fewer crashes than were sent, fails the demo with a message saying so.
func TestLoadFailsLoudly(t *testing.T) {
	for _, tt := range []struct {
		name, groups, want string
	}{
		{"empty", `{"meta":{},"results":[]}`, "still empty"},
		{"short", `{"meta":{},"results":[{"id":"a","type":"T","message":"m","count":1}]}`, "counting 1 crashes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("POST /admin/users", func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"user_id":"u","own_team_id":"t"}`))
			})
			mux.HandleFunc("POST /admin/tokens", func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"access_token":"tok","own_team_id":"t"}`))
			})
			mux.HandleFunc("POST /admin/apps", func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"app_id":"a","api_key":"k"}`))
			})
			mux.HandleFunc("PUT /events", func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"attachments":null}`))
			})
			mux.HandleFunc("GET /apps/a/crashGroups", func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(tt.groups))
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			_, err := Load(context.Background(), Options{URL: srv.URL, Admin: &adminapi.Client{Addr: srv.Listener.Addr().String(), Token: "x"},
				Email: "demo@example.com", Name: "Demo", AppName: "Demo", Templates: templates(t), Wait: 300 * time.Millisecond})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}
