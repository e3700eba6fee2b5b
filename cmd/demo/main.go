// Command demo shows a new svc node something in one command (`make demo`): it creates a user
// (or reuses it) and an app, sends every recorded SDK body of testdata/sdk once with fresh ids
// and its times moved to now, waits until the dashboard's crash group list counts the crashes
// sent, and prints a dashboard query to paste and its access token.
//
// It uses the node that answers at -addr (the one `make run` serves). When none does, it starts
// `bin/svc serve` in the background with the same defaults as make run (:8080, admin
// 127.0.0.1:9091, ./data), which keeps running after the demo; `demo -stop` (make demo-stop)
// stops it. Each run creates another app, so running it twice shows the same groups again.
//
//	go run ./cmd/demo [-addr :8080] [-admin-addr 127.0.0.1:9091] [-data-dir ./data] [-svc ./bin/svc]
//	go run ./cmd/demo -stop
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/svc-dev/svc/cmd/internal/adminapi"
	"github.com/svc-dev/svc/cmd/internal/replay"
)

const usage = `usage: demo [flags]     load the recorded SDK batches into a node and print a dashboard query
       demo -stop          stop the node an earlier demo started in the background

Uses the node answering at -addr (e.g. the one make run serves); when none answers, starts
-svc serve in the background with -addr, -admin-addr and -data-dir (the node keeps running
until demo -stop). Each run creates a new app; the user is created once and reused.

flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	var (
		addr      = fs.String("addr", envOr("SVC_ADDR", ":8080"), "the node's public listener (default $SVC_ADDR or :8080)")
		adminAddr = fs.String("admin-addr", envOr("SVC_ADMIN_ADDR", "127.0.0.1:9091"), "its admin listener (default $SVC_ADMIN_ADDR or 127.0.0.1:9091)")
		dataDir   = fs.String("data-dir", envOr("SVC_DATA_DIR", "./data"), "its data directory, holding admin.token (default $SVC_DATA_DIR or ./data)")
		svcBin    = fs.String("svc", "./bin/svc", "svc binary to start when no node answers at -addr")
		dir       = fs.String("dir", "", "folder of batch_*.json bodies (default testdata/sdk of the repository)")
		email     = fs.String("email", "demo@example.com", "the demo user's email")
		wait      = fs.Duration("wait", 30*time.Second, "how long the crash groups may take to show")
		stop      = fs.Bool("stop", false, "stop the node an earlier demo started in the background, and exit")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "demo: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "demo: FAILED: %v\n", err)
		return 1
	}
	if *stop {
		if err := stopBackground(*dataDir, stdout, 45*time.Second); err != nil {
			return fail(err)
		}
		return 0
	}
	if *dir == "" {
		d, err := replay.FixturesDir()
		if err != nil {
			return fail(fmt.Errorf("%w (give -dir)", err))
		}
		*dir = d
	}
	templates, err := replay.LoadTemplates(*dir, nil, false)
	if err != nil {
		return fail(err)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	base, err := baseURL(*addr)
	if err != nil {
		return fail(err)
	}
	started, bgPid := false, 0
	_, port, _ := net.SplitHostPort(*addr)
	if port != "0" && answers(ctx, base) {
		bgPid = runningBackground(*dataDir)
		fmt.Fprintf(stdout, "demo: using the node at %s\n", base)
	} else {
		fmt.Fprintf(stdout, "demo: no node answers at %s; starting %s serve in the background (data in %s)\n", base, *svcBin, *dataDir)
		bg, err := startBackground(ctx, *svcBin, *dataDir, *addr, *adminAddr, 2*time.Minute)
		if err != nil {
			return fail(err)
		}
		started, bgPid = true, bg.pid
		if base, err = baseURL(bg.addr); err != nil {
			return fail(err)
		}
		*adminAddr = bg.admin
		fmt.Fprintf(stdout, "demo: node ready at %s (pid %d, log %s)\n", base, bg.pid, bg.log)
	}
	adminBase, err := baseURL(*adminAddr)
	if err != nil {
		return fail(err)
	}
	token, err := adminapi.ReadToken(*dataDir)
	if err != nil {
		return fail(err)
	}
	admin := &adminapi.Client{Addr: adminBase[len("http://"):], Token: token}

	res, err := Load(ctx, Options{URL: base, Admin: admin, Email: *email, Name: "Demo",
		AppName: "Demo " + time.Now().UTC().Format("2006-01-02 15:04:05"), Templates: templates,
		Wait: *wait, Log: stdout})
	var se *adminapi.StatusError
	if errors.As(err, &se) && se.Code == http.StatusUnauthorized {
		err = fmt.Errorf("%w\nthe node at %s refuses the admin token of %s: it was started with another data directory or SVC_ADMIN_TOKEN; give -data-dir or set SVC_ADMIN_TOKEN",
			err, *adminAddr, filepath.Join(*dataDir, adminapi.TokenFile))
	}
	if err != nil {
		return fail(err)
	}
	report(stdout, res, base, *adminAddr, *dataDir, started, bgPid)
	return 0
}

// report prints what a new user needs next: the groups seen, the query, the token and how the
// node goes on.
func report(w io.Writer, r *Result, base, adminAddr, dataDir string, started bool, bgPid int) {
	fmt.Fprintf(w, "demo: the crash group list shows %d groups counting %d crashes:\n", len(r.Groups), total(r.Groups))
	for i, g := range r.Groups {
		if i == 5 {
			fmt.Fprintf(w, "  … and %d more\n", len(r.Groups)-i)
			break
		}
		msg := g.Message
		if r := []rune(msg); len(r) > 60 {
			msg = string(r[:57]) + "..."
		}
		fmt.Fprintf(w, "  %3d × %s: %s\n", g.Count, g.Type, msg)
	}
	tokenCmd := "./bin/svc admin token --email " + r.Email
	if adminAddr != "127.0.0.1:9091" || filepath.Clean(dataDir) != "data" {
		tokenCmd = fmt.Sprintf("./bin/svc admin --admin-addr %s --data-dir %s token --email %s", adminAddr, dataDir, r.Email)
	}
	fmt.Fprintf(w, `
The dashboard query (the app's crash groups over the default window, the last 7 days):

  %s

access token: %s
  (valid 30 minutes unless the node has another --access-token-ttl; %s makes a new one)
app id:       %s
API key:      %s
  (SDKs send it as Authorization: Bearer <key> with PUT %s/events)
`, r.Query(base), r.AccessToken, tokenCmd, r.AppID, r.APIKey, base)
	stopCmd := "make demo-stop"
	if filepath.Clean(dataDir) != "data" {
		stopCmd = "SVC_DATA_DIR=" + dataDir + " make demo-stop"
	}
	switch {
	case started:
		fmt.Fprintf(w, "\nThe node keeps running in the background (pid %d, log %s).\nStop it with: %s\n",
			bgPid, filepath.Join(dataDir, logFile), stopCmd)
	case bgPid != 0:
		fmt.Fprintf(w, "\nThe node is the one an earlier make demo started (pid %d). Stop it with: %s\n", bgPid, stopCmd)
	default:
		fmt.Fprintln(w, "\nThe node is the one you started (make run); it keeps running.")
	}
}
