package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/svc-dev/svc/cmd/internal/adminapi"
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
	token, err := adminapi.ReadToken(*dataDir)
	if err != nil {
		fmt.Fprintf(stderr, "svc admin: %v\n", err)
		return 1
	}
	client := &adminapi.Client{Addr: *addr, Token: token}
	out, err := client.Post(context.Background(), path, body)
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
