package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// command runs in its own process group, so stopping it also stops what it started (go run's
// child, go test's test binary); ctx's end (Ctrl-C) sends the group SIGTERM, then SIGKILL.
func command(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	return cmd
}

// output runs a command to its end and returns its stdout; stderr goes to ours.
func output(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	out, _, err := outputCPU(ctx, dir, env, name, args...)
	return out, err
}

// outputCPU is output, with the CPU the command used (its rusage: user + system).
func outputCPU(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, time.Duration, error) {
	cmd := command(ctx, dir, env, name, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var cpu time.Duration
	if st := cmd.ProcessState; st != nil {
		cpu = st.UserTime() + st.SystemTime()
	}
	if err != nil {
		return out, cpu, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return out, cpu, nil
}

// node is a running `svc serve`.
type node struct {
	cmd         *exec.Cmd
	addr, admin string
	dataDir     string
	exited      chan struct{}
}

var listenLine = regexp.MustCompile(`listening on http://(\S+) \(admin http://(\S+)\)`)

// startNode starts svc serve on free loopback ports with data directory dataDir and waits for
// its "listening" line: up to 15 minutes, as a node restarted on 10M events first rebuilds its
// app aggregates from the store. extra holds the environment's store settings (empty =
// embedded). Dashboard requests may take 2 minutes (the dashboard client's timeout) rather than
// the default 30 s, so a slow store query is measured rather than answered 503.
func startNode(ctx context.Context, root, svcBin, dataDir string, extra []string) (*node, error) {
	args := []string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--data-dir", dataDir,
		"--ingest-rate-limit", "100000000", "--rate-limit-user", "100000000", "--request-timeout", "2m", "--log-level", "warn"}
	env := append(append(baseEnv(), nodeEnv...), extra...)
	cmd := command(ctx, root, env, svcBin, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	n := &node{cmd: cmd, dataDir: dataDir, exited: make(chan struct{})}
	lines := make(chan string, 1)
	go func() { // ends when the process closes stdout
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { _ = cmd.Wait(); close(n.exited) }()
	select {
	case l := <-lines:
		m := listenLine.FindStringSubmatch(l)
		if m == nil {
			_ = n.stop()
			return nil, fmt.Errorf("svc serve: unexpected first line %q", l)
		}
		n.addr, n.admin = m[1], m[2]
		return n, nil
	case <-n.exited:
		return nil, errors.New("svc serve exited at start")
	case <-time.After(15 * time.Minute):
		_ = n.stop()
		return nil, errors.New("svc serve did not start in 15 minutes")
	}
}

// stop sends the node's group SIGTERM and, past the node's shutdown timeout (30 s) and some
// slack, SIGKILL; it returns once the node is gone, with an error when it did not end by itself
// with status 0 (a fill must not open a store the node left mid-write).
func (n *node) stop() error {
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(45 * time.Second):
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.exited
		return errors.New("svc serve did not stop within 45 s of SIGTERM; killed")
	}
	if st := n.cmd.ProcessState; st != nil && !st.Success() {
		return fmt.Errorf("svc serve stopped with %s", st)
	}
	return nil
}

// nodeEnv is -node-env: settings every node started gets, before the run's own.
var nodeEnv envList

// envList is a repeatable KEY=VALUE flag.
type envList []string

func (l *envList) String() string { return strings.Join(*l, " ") }

func (l *envList) Set(kv string) error {
	if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", kv)
	}
	*l = append(*l, kv)
	return nil
}

// baseEnv is our environment without svc's own settings, so the embedded node does not pick up
// the ClickHouse and Postgres of testenv; the production run adds them back explicitly.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SVC_") {
			env = append(env, kv)
		}
	}
	return env
}

// repoRoot is the directory holding go.mod, at or above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
