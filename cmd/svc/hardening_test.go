package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminListenerNeedsToken: every path of the admin listener refuses a caller without the
// admin token, and the command line it shows never holds a secret given as a flag.
func TestAdminListenerNeedsToken(t *testing.T) {
	dir := t.TempDir()
	const adminToken, ghSecret = "adm1n-t0ken-for-test", "gh-s3cret-for-test"
	p := startServe(t, nil, "--data-dir", dir, "--admin-token", adminToken,
		"--github-client-id", "id", "--github-client-secret", ghSecret)
	paths := []string{"/metrics", "/healthz", "/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline",
		"/debug/pprof/goroutine?debug=1", "/debug/vars", "/debug/actors", "/admin/users", "/nope"}
	for _, path := range paths {
		for _, token := range []string{"", "wrong"} {
			if code, body := getWithToken(t, "http://"+p.admin+path, token); code != 401 || !strings.Contains(string(body), `"error"`) {
				t.Errorf("GET %s with token %q: %d %s, want 401 {error}", path, token, code, body)
			}
		}
	}
	code, cmdline := getWithToken(t, "http://"+p.admin+"/debug/pprof/cmdline", adminToken)
	if code != 200 || !strings.Contains(string(cmdline), "--github-client-id") {
		t.Fatalf("cmdline with the token: %d %q", code, cmdline)
	}
	for _, secret := range []string{adminToken, ghSecret} {
		if strings.Contains(string(cmdline), secret) {
			t.Errorf("cmdline shows a secret: %q", cmdline)
		}
	}
	if code, _ := getWithToken(t, "http://"+p.admin+"/metrics", adminToken); code != 200 {
		t.Errorf("/metrics with the token: %d", code)
	}
	if code, _ := getWithToken(t, "http://"+p.addr+"/metrics", ""); code != 404 {
		t.Errorf("/metrics on the public listener without --metrics-public: %d", code)
	}
	p.stop(t)
	for _, secret := range []string{adminToken, ghSecret} {
		if strings.Contains(p.stderr.String(), secret) {
			t.Errorf("the log shows a secret")
		}
	}

	// --metrics-public serves /metrics on the public listener for scrapers without a token.
	p2 := startServe(t, nil, "--data-dir", dir, "--metrics-public")
	if code, body := getWithToken(t, "http://"+p2.addr+"/metrics", ""); code != 200 || !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("public /metrics: %d", code)
	}
	p2.stop(t)
}

// TestAdminTokenFromFile: secrets come from files as container setups mount them.
func TestAdminTokenFromFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("t0ken-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, []string{"SVC_ADMIN_TOKEN_FILE=" + file}, "--data-dir", dir)
	if code, _ := getWithToken(t, "http://"+p.admin+"/metrics", "t0ken-from-file"); code != 200 {
		t.Errorf("token from file: %d", code)
	}
	p.stop(t)
}

// TestStartFailures: a node that cannot start says why in one line and exits 1, without a
// panic, whatever was already open when it failed.
func TestStartFailures(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy, busySpool := t.TempDir(), t.TempDir()
	running := startServe(t, nil, "--data-dir", busy, "--spool-dir", busySpool)
	defer running.stop(t)

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"public port taken", []string{"--addr", taken.Addr().String(), "--data-dir", t.TempDir()}, "listen on --addr"},
		{"admin port taken", []string{"--addr", "127.0.0.1:0", "--admin-addr", taken.Addr().String(), "--data-dir", t.TempDir()}, "listen on --admin-addr"},
		{"data dir in use", []string{"--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--data-dir", busy}, "svc serve:"},
		{"spool dir in use", []string{"--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--spool-dir", busySpool},
			"spool in use by another process"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := runSvc(t, nil, append([]string{"serve"}, c.args...)...)
			if code != 1 || strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine ") {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			var last string
			for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
				if strings.HasPrefix(l, "svc serve:") {
					last = l
				}
			}
			if !strings.Contains(last, c.want) {
				t.Fatalf("no line %q in:\n%s", c.want, errOut)
			}
		})
	}
}
