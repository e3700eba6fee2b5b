// Command testenv starts throwaway ClickHouse, PostgreSQL, S3-compatible and etcd servers on free
// loopback ports, runs a command with their addresses in SVC_TEST_* variables (and, with -serve,
// in the variables an svc node reads: SVC_CLICKHOUSE_DSN, SVC_POSTGRES_DSN, SVC_S3_*,
// SVC_ETCD_ENDPOINTS), then stops them and removes their data. `make test` and `make stack` use it:
//
//	go run ./cmd/testenv -- go test ./...
//	go run ./cmd/testenv -serve -only clickhouse,postgres -- ./bin/svc serve
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/svc-dev/svc/sinks/sinktest"
)

func main() {
	os.Exit(run())
}

func run() int {
	only := flag.String("only", "clickhouse,postgres,s3,etcd", "comma separated servers to start")
	keep := flag.Bool("keep", false, "keep the servers' data directory after they stop")
	serve := flag.Bool("serve", false, "also set the variables an svc node reads (SVC_CLICKHOUSE_DSN, SVC_POSTGRES_DSN, SVC_S3_*, SVC_ETCD_ENDPOINTS), so the command is an svc node using the servers (make stack)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testenv [-only clickhouse,postgres,s3,etcd] [-keep] [-serve] -- command [args...]")
	}
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		flag.Usage()
		return 2
	}
	dir, err := os.MkdirTemp("", "svc-testenv-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	// The postgres user must be able to reach its directory below this one.
	_ = os.Chmod(dir, 0o755)
	if !*keep {
		defer os.RemoveAll(dir)
	}

	var servers []*sinktest.Server
	defer func() {
		for _, s := range servers {
			_ = s.Stop()
		}
	}()
	env := os.Environ()
	for _, name := range strings.Split(*only, ",") {
		sub := filepath.Join(dir, name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "testenv:", err)
			return 1
		}
		var s *sinktest.Server
		switch name {
		case "clickhouse":
			s, err = sinktest.StartClickHouse(sub)
			if err == nil {
				env = append(env, sinktest.EnvClickHouse+"="+s.DSN)
				if *serve {
					env = append(env, "SVC_CLICKHOUSE_DSN="+s.DSN)
				}
			}
		case "postgres":
			s, err = sinktest.StartPostgres(sub)
			if err == nil {
				env = append(env, sinktest.EnvPostgres+"="+s.DSN)
				if *serve {
					env = append(env, "SVC_POSTGRES_DSN="+s.DSN)
				}
			}
		case "s3":
			s, err = sinktest.StartS3(sub)
			if err == nil {
				env = append(env, sinktest.EnvS3Endpoint+"="+s.DSN,
					sinktest.EnvS3Access+"="+sinktest.S3AccessKey, sinktest.EnvS3Secret+"="+sinktest.S3SecretKey)
				if *serve {
					env = append(env, "SVC_S3_ENDPOINT="+s.DSN, "SVC_S3_ACCESS_KEY="+sinktest.S3AccessKey,
						"SVC_S3_SECRET_KEY="+sinktest.S3SecretKey, "SVC_S3_BUCKET=svc-blobs", "SVC_S3_USE_SSL=false")
				}
			}
		case "etcd":
			s, err = sinktest.StartEtcd(sub)
			if err == nil {
				env = append(env, sinktest.EnvEtcd+"="+s.DSN)
				if *serve {
					env = append(env, "SVC_ETCD_ENDPOINTS="+s.DSN)
				}
			}
		default:
			err = fmt.Errorf("unknown server %q (want clickhouse, postgres, s3 or etcd)", name)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "testenv:", err)
			return 1
		}
		servers = append(servers, s)
		fmt.Fprintf(os.Stderr, "testenv: %s listening, %s\n", s.Name, s.DSN)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if exit.ExitCode() < 0 {
			return 1
		}
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
}
