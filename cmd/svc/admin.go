package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const adminUsage = `usage: svc admin [--admin-addr ADDR] [--data-dir DIR] <command> [flags]

Talks to a running node's admin listener. The token is SVC_ADMIN_TOKEN, or <data-dir>/admin.token.

commands:
  create-user --email E --name N   prints {user_id, own_team_id}
  create-app  --team T --name N    prints {app_id, api_key}
  token       --email E            prints {access_token, refresh_token, session_id, user_id, own_team_id}
`

func adminCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("svc admin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("admin-addr", envOr("SVC_ADMIN_ADDR", "127.0.0.1:9091"), "admin listener address")
	dataDir := fs.String("data-dir", envOr("SVC_DATA_DIR", "./data"), "data directory holding admin.token")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, adminUsage)
			return 0
		}
		fmt.Fprintf(stderr, "svc admin: %v\n%s", err, adminUsage)
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, adminUsage)
		return 2
	}
	sub, rest := fs.Arg(0), fs.Args()[1:]
	var path string
	body := map[string]string{}
	sfs := flag.NewFlagSet("svc admin "+sub, flag.ContinueOnError)
	sfs.SetOutput(io.Discard)
	var need []string
	switch sub {
	case "create-user":
		path, need = "/admin/users", []string{"email", "name"}
		sfs.String("email", "", "")
		sfs.String("name", "", "")
	case "create-app":
		path, need = "/admin/apps", []string{"team", "name"}
		sfs.String("team", "", "")
		sfs.String("name", "", "")
	case "token":
		path, need = "/admin/tokens", []string{"email"}
		sfs.String("email", "", "")
	default:
		fmt.Fprintf(stderr, "svc admin: unknown command %q\n%s", sub, adminUsage)
		return 2
	}
	if err := sfs.Parse(rest); err != nil {
		fmt.Fprintf(stderr, "svc admin %s: %v\n", sub, err)
		return 2
	}
	for _, f := range need {
		v := sfs.Lookup(f).Value.String()
		if v == "" {
			fmt.Fprintf(stderr, "svc admin %s: --%s is required\n", sub, f)
			return 2
		}
		if f == "team" {
			f = "team_id"
		}
		body[f] = v
	}
	token := os.Getenv("SVC_ADMIN_TOKEN")
	if token == "" {
		b, err := os.ReadFile(filepath.Join(*dataDir, "admin.token"))
		if err != nil {
			fmt.Fprintf(stderr, "svc admin: no admin token: set SVC_ADMIN_TOKEN or point --data-dir at the node's data directory (%v)\n", err)
			return 1
		}
		token = strings.TrimSpace(string(b))
	}
	out, err := postAdmin("http://"+*addr+path, token, body)
	if err != nil {
		fmt.Fprintf(stderr, "svc admin %s: %v\n", sub, err)
		return 1
	}
	fmt.Fprintln(stdout, strings.TrimSpace(string(out)))
	return 0
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func postAdmin(url, token string, body any) ([]byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach admin listener: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(out, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("%s: %s", resp.Status, e.Error)
		}
		return nil, fmt.Errorf("%s", resp.Status)
	}
	return out, nil
}
