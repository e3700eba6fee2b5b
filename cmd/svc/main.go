// Command svc is the whole of svc in one binary: the server and its operator commands.
//
//	svc serve     run a node (embedded stores unless ClickHouse/Postgres DSNs are given)
//	svc migrate   apply ClickHouse and Postgres migrations
//	svc admin     operator commands against a running node's admin listener
//	svc version   print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"
	// The IANA time zone database, built into the binary (about 450 kB): plots take a timezone
	// parameter (model.ParseBuckets loads it with time.LoadLocation), and a machine or
	// container image without /usr/share/zoneinfo would otherwise know no zone but UTC and
	// answer 400 to every other. Go reads the system's database first when there is one.
	_ "time/tzdata"

	"github.com/svc-dev/svc/cmd/svc/node"
	chstore "github.com/svc-dev/svc/sinks/clickhouse"
	pgstore "github.com/svc-dev/svc/sinks/postgres"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: svc <command> [flags]

commands:
  serve     run a node (svc serve -h for its flags)
  migrate   apply ClickHouse and Postgres migrations
  admin     operator commands: create-user, create-app, token (svc admin -h)
  version   print the version
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "migrate":
		return migrate(args[1:], stderr)
	case "admin":
		return adminCmd(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionString())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "svc: unknown command %q (want serve, migrate, admin or version)\n", args[0])
		return 2
	}
}

func versionString() string {
	v := version
	if v == "dev" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && len(s.Value) >= 12 {
					v = "dev-" + s.Value[:12]
				}
			}
		}
	}
	return fmt.Sprintf("svc %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

func serve(args []string, stdout, stderr io.Writer) int {
	cfg, err := node.ParseConfig(args, node.Getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "svc serve:", err)
		return 2
	}
	log := newLogger(stderr, cfg.LogLevel)
	node.ApplyMemoryLimit(cfg.MemoryLimit, log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	n, err := node.Start(startCtx, cfg, log)
	cancel()
	if err != nil {
		log.Error("start failed", "error", err.Error())
		fmt.Fprintln(stderr, "svc serve:", err)
		return 1
	}
	fmt.Fprintf(stdout, "svc %s listening on http://%s (admin http://%s)\n", version, n.Addr(), n.AdminAddr())
	code := 0
	select {
	case <-ctx.Done():
		log.Info("signal received, shutting down", "timeout", cfg.ShutdownTimeout.String())
	case err := <-n.Done():
		log.Error("listener stopped", "error", fmt.Sprint(err))
		code = 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		log.Error("shutdown", "error", err.Error())
		return 1
	}
	log.Info("stopped")
	return code
}

func migrate(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("svc migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ch := fs.String("clickhouse-dsn", os.Getenv("SVC_CLICKHOUSE_DSN"), "ClickHouse DSN (env SVC_CLICKHOUSE_DSN)")
	pg := fs.String("postgres-dsn", os.Getenv("SVC_POSTGRES_DSN"), "PostgreSQL DSN (env SVC_POSTGRES_DSN)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *ch == "" && *pg == "" {
		fmt.Fprintln(stderr, "svc migrate: nothing to migrate: give --clickhouse-dsn and/or --postgres-dsn (the embedded stores need no migrations)")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if *ch != "" {
		if err := chstore.Migrate(ctx, *ch); err != nil {
			fmt.Fprintln(stderr, "svc migrate: clickhouse:", err)
			return 1
		}
		fmt.Fprintln(stderr, "clickhouse: migrations applied")
	}
	if *pg != "" {
		if err := pgstore.Migrate(ctx, *pg); err != nil {
			fmt.Fprintln(stderr, "svc migrate: postgres:", err)
			return 1
		}
		fmt.Fprintln(stderr, "postgres: migrations applied")
	}
	return 0
}
