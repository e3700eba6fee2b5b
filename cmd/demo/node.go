package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Files the demo keeps in the node's data directory for the node it starts.
const (
	pidFile = "demo-node.pid"
	logFile = "demo-node.log"
)

// listenLine is the first line `svc serve` prints once both listeners are open.
var listenLine = regexp.MustCompile(`listening on http://(\S+) \(admin http://(\S+)\)`)

// answers says whether an svc node answers GET /healthz at base.
func answers(ctx context.Context, base string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// background is a node the demo started in its own session, so that it outlives the demo (and
// make, and a Ctrl-C in the terminal) until `demo -stop`.
type background struct {
	pid         int
	addr, admin string // as the node reports them (real ports when 0 was asked for)
	log         string
}

// startBackground starts `svcBin serve` on addr and adminAddr with dataDir, its output going to
// dataDir/demo-node.log and its pid to dataDir/demo-node.pid, and returns once it is ready.
// A node that exits or is not ready within wait is reported with the end of its log.
func startBackground(ctx context.Context, svcBin, dataDir, addr, adminAddr string, wait time.Duration) (*background, error) {
	if _, err := os.Stat(svcBin); err != nil {
		return nil, fmt.Errorf("no svc binary to start a node with (make build makes %s): %w", svcBin, err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	logPath := filepath.Join(dataDir, logFile)
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("node log: %w", err)
	}
	defer lf.Close() // the child has its own copy
	cmd := exec.Command(svcBin, "serve", "--addr", addr, "--admin-addr", adminAddr, "--data-dir", dataDir)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", svcBin, err)
	}
	b := &background{pid: cmd.Process.Pid, log: logPath}
	pidPath := filepath.Join(dataDir, pidFile)
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(b.pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		return nil, fmt.Errorf("pid file: %w", err)
	}
	fail := func(why string) (*background, error) {
		if exited(b.pid) {
			_ = os.Remove(pidPath)
		} else {
			why += fmt.Sprintf("; it still runs as pid %d (`make demo-stop` stops it)", b.pid)
		}
		return nil, fmt.Errorf("the node started in the background %s; end of %s:\n%s", why, logPath, tail(logPath, 15))
	}
	deadline := time.Now().Add(wait)
	for {
		if b.addr == "" {
			if data, err := os.ReadFile(logPath); err == nil {
				if m := listenLine.FindSubmatch(data); m != nil {
					b.addr, b.admin = string(m[1]), string(m[2])
				}
			}
		}
		if b.addr != "" && ready(ctx, "http://"+b.addr) {
			_ = cmd.Process.Release()
			return b, nil
		}
		if exited(b.pid) {
			return fail("exited")
		}
		if time.Now().After(deadline) {
			return fail(fmt.Sprintf("was not ready within %s", wait))
		}
		select {
		case <-ctx.Done():
			return fail("was being started when the demo was interrupted")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ready says whether GET /readyz answers 200 (every store answers).
func ready(ctx context.Context, base string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// exited reaps the child pid if it has ended and says so; a child that ended but was not reaped
// yet still answers signals, so a signal 0 alone cannot tell.
func exited(pid int) bool {
	var ws syscall.WaitStatus
	got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	return got == pid || errors.Is(err, syscall.ECHILD) && !alive(pid)
}

// alive says whether a process with pid exists and has not ended. An ended process nobody has
// reaped yet (a zombie: where the init of a container does not reap) does not count.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) state …: comm may hold spaces and parentheses, so read after the last ')'.
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}

// tail is the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// runningBackground is the pid of the node an earlier demo started with dataDir, when it still
// runs (0 otherwise).
func runningBackground(dataDir string) int {
	pid, err := readPid(filepath.Join(dataDir, pidFile))
	if err != nil || !alive(pid) || !isServe(pid) {
		return 0
	}
	return pid
}

func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s does not hold a process id: %q", path, b)
	}
	return pid, nil
}

// isServe says whether pid runs `svc serve`, where /proc tells; elsewhere it trusts the pid file.
func isServe(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) || !dirExists("/proc/self")
	}
	args := strings.Split(string(b), "\x00")
	return len(args) > 1 && args[1] == "serve"
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// stopBackground stops the node an earlier demo started with dataDir: SIGTERM (the node flushes
// and closes its stores), then waits up to wait for it to end.
func stopBackground(dataDir string, w io.Writer, wait time.Duration) error {
	path := filepath.Join(dataDir, pidFile)
	pid, err := readPid(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(w, "demo: no node started by the demo in %s (no %s); nothing to stop\n", dataDir, pidFile)
		return nil
	case err != nil:
		return err
	case !alive(pid):
		fmt.Fprintf(w, "demo: the node started by the demo (pid %d) is not running any more\n", pid)
		return removePid(path)
	case !isServe(pid):
		fmt.Fprintf(w, "demo: process %d is not an svc node (the demo's node ended and its id was reused); leaving it alone\n", pid)
		return removePid(path)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	fmt.Fprintf(w, "demo: stopping the node started by the demo (pid %d)…\n", pid)
	deadline := time.Now().Add(wait)
	for alive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d did not end within %s of SIGTERM; see %s (kill -9 %d ends it at once)",
				pid, wait, filepath.Join(dataDir, logFile), pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintf(w, "demo: stopped; its data stays in %s\n", dataDir)
	return removePid(path)
}

func removePid(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove pid file: %w", err)
	}
	return nil
}
