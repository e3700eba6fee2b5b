// Package sinktest starts throwaway ClickHouse, PostgreSQL, S3-compatible and etcd servers on
// free loopback ports, and gives tests a fresh database on them. `make test` (cmd/testenv)
// starts one of each and passes their addresses to the tests in SVC_TEST_* variables; tests
// that need a server of their own (outage tests) start it here too.
package sinktest

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Environment variables through which cmd/testenv hands servers to tests.
const (
	EnvClickHouse = "SVC_TEST_CLICKHOUSE_DSN"
	EnvPostgres   = "SVC_TEST_POSTGRES_DSN"
	EnvS3Endpoint = "SVC_TEST_S3_ENDPOINT" // host:port
	EnvS3Access   = "SVC_TEST_S3_ACCESS_KEY"
	EnvS3Secret   = "SVC_TEST_S3_SECRET_KEY"
	EnvEtcd       = "SVC_TEST_ETCD_ENDPOINTS" // comma-separated client URLs
)

// Server is one throwaway server process. Stop and Start may be called repeatedly (outage
// tests); the data directory and port stay the same.
type Server struct {
	Name string
	DSN  string // how a client reaches it
	Port int

	dir   string
	start func() (*exec.Cmd, error)
	ready func() error
	stop  func(*exec.Cmd) error
	cmd   *exec.Cmd

	frozen []int // processes Freeze stopped
}

// Start (re)starts the server and waits until it accepts connections.
func (s *Server) Start() error {
	if s.cmd != nil {
		return nil
	}
	cmd, err := s.start()
	if err != nil {
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := s.ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			_ = s.Stop()
			return fmt.Errorf("%s did not become ready in 60s: %w (logs in %s)", s.Name, err, s.dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop ends the server process and waits for it to exit.
func (s *Server) Stop() error {
	if s.cmd == nil {
		return nil
	}
	if err := s.Thaw(); err != nil { // a frozen server cannot shut down
		return err
	}
	cmd := s.cmd
	s.cmd = nil
	if s.stop != nil {
		return s.stop(cmd)
	}
	return terminate(cmd)
}

func terminate(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

// FreePort returns a loopback TCP port that was free a moment ago, for a server started later
// (a child process, or one restarted on the same port after an outage). It picks below the
// kernel's ephemeral range when it can: a port from that range can be handed, in the meantime,
// to a ":0" listener or the source port of an outgoing connection of any test running beside.
func FreePort() (int, error) {
	if lo, ok := ephemeralLow(); ok && lo > belowEphemeralFrom+1000 {
		for range 100 {
			port := belowEphemeralFrom + rand.IntN(lo-belowEphemeralFrom)
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				l.Close()
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// belowEphemeralFrom is the lowest port FreePort picks: above the well-known and the usual
// service ports.
const belowEphemeralFrom = 15000

// ephemeralLow is the first port of Linux's ephemeral range (net.ipv4.ip_local_port_range).
func ephemeralLow() (int, bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	lo, err := strconv.Atoi(f[0])
	return lo, err == nil
}

// FreePortPair returns a loopback TCP port that, with the port after it, was free a moment ago:
// the cluster's static provider listens on a node's remoting port and the one after it.
func FreePortPair() (int, error) {
	for range 50 {
		port, err := FreePort()
		if err != nil {
			return 0, err
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+1))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, errors.New("find a free port pair: none in 50 tries")
}

func tcpReady(port int) func() error {
	return func() error {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// findBinary returns the first candidate that exists, by path or in PATH.
func findBinary(candidates ...string) (string, error) {
	for _, c := range candidates {
		if strings.Contains(c, "*") {
			m, _ := filepath.Glob(c)
			if len(m) > 0 {
				return m[len(m)-1], nil
			}
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("none of %s found", strings.Join(candidates, ", "))
}

// StartClickHouse starts a ClickHouse server with its data in dir.
func StartClickHouse(dir string) (*Server, error) {
	bin, err := findBinary("clickhouse-server", "/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server")
	var args []string
	if err != nil {
		// Newer packages ship one `clickhouse` binary with a `server` subcommand.
		bin, err = findBinary("clickhouse", "/usr/bin/clickhouse")
		if err != nil {
			return nil, fmt.Errorf("ClickHouse is not installed (apt-get install -y clickhouse-server clickhouse-client): %w", err)
		}
		args = []string{"server"}
	}
	tcp, err := FreePort()
	if err != nil {
		return nil, err
	}
	httpPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"data", "tmp", "user_files", "format_schemas"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("clickhouse dir: %w", err)
		}
	}
	config := fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>%[1]s/server.log</log><errorlog>%[1]s/error.log</errorlog></logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>%[2]d</tcp_port>
  <http_port>%[3]d</http_port>
  <path>%[1]s/data/</path>
  <tmp_path>%[1]s/tmp/</tmp_path>
  <user_files_path>%[1]s/user_files/</user_files_path>
  <format_schema_path>%[1]s/format_schemas/</format_schema_path>
  <users_config>%[1]s/users.xml</users_config>
  <mark_cache_size>268435456</mark_cache_size>
</yandex>
`, dir, tcp, httpPort)
	users := `<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
`
	if err := os.WriteFile(filepath.Join(dir, "config.xml"), []byte(config), 0o644); err != nil {
		return nil, fmt.Errorf("clickhouse config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.xml"), []byte(users), 0o644); err != nil {
		return nil, fmt.Errorf("clickhouse users: %w", err)
	}
	s := &Server{
		Name: "clickhouse",
		DSN:  fmt.Sprintf("clickhouse://127.0.0.1:%d/default", tcp),
		Port: tcp,
		dir:  dir,
		start: func() (*exec.Cmd, error) {
			cmd := exec.Command(bin, append(args, "--config-file="+filepath.Join(dir, "config.xml"))...)
			cmd.Dir = dir
			out, err := os.OpenFile(filepath.Join(dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return nil, err
			}
			cmd.Stdout, cmd.Stderr = out, out
			cmd.SysProcAttr = serverAttrs()
			return cmd, cmd.Start()
		},
		ready: tcpReady(tcp),
	}
	return s, s.Start()
}

// StartPostgres initialises a cluster in dir and starts PostgreSQL on a free port. initdb
// refuses root, so as root it runs the server as the postgres user.
func StartPostgres(dir string) (*Server, error) {
	initdb, err := findBinary("/usr/lib/postgresql/15/bin/initdb", "/usr/lib/postgresql/*/bin/initdb", "initdb")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL server binaries not found: %w", err)
	}
	bindir := filepath.Dir(initdb)
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	sock := filepath.Join(dir, "sock")
	if err := os.MkdirAll(sock, 0o755); err != nil {
		return nil, fmt.Errorf("postgres dir: %w", err)
	}
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs a postgres user for initdb: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{dir, sock} {
			if err := os.Chown(d, uid, gid); err != nil {
				return nil, fmt.Errorf("postgres dir: %w", err)
			}
		}
		asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(name string, args ...string) *exec.Cmd {
		full := append(append(append([]string{}, asUser...), filepath.Join(bindir, name)), args...)
		cmd := exec.Command(full[0], full[1:]...)
		cmd.Dir = dir
		return cmd
	}
	if out, err := run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	s := &Server{
		Name: "postgres",
		DSN:  fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		Port: port,
		dir:  dir,
		start: func() (*exec.Cmd, error) {
			cmd := run("postgres", "-D", data, "-p", strconv.Itoa(port), "-k", sock,
				"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200")
			return cmd, startLogged(cmd, dir)
		},
		ready: func() error {
			out, err := exec.Command(filepath.Join(bindir, "pg_isready"), "-h", "127.0.0.1", "-p", strconv.Itoa(port)).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			return nil
		},
		// pg_ctl's fast shutdown signals the postmaster itself: as root, cmd is runuser, which
		// does not always pass a signal on, and a postmaster left behind outlived its data
		// directory. SIGINT (fast shutdown too) follows for the non-root case.
		stop: func(cmd *exec.Cmd) error {
			_ = run("pg_ctl", "-D", data, "-m", "fast", "-w", "-t", "30", "stop").Run()
			_ = cmd.Process.Signal(syscall.SIGINT)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			return nil
		},
	}
	return s, s.Start()
}

// S3 credentials of the throwaway S3-compatible server.
const (
	S3AccessKey = "svctestaccess"
	S3SecretKey = "svctestsecret0123456789"
)

// StartS3 starts versitygw, an S3-compatible gateway over a directory, on a free port. The
// server's DSN is its host:port.
func StartS3(dir string) (*Server, error) {
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	bin, err := findBinary("versitygw", filepath.Join(gopath, "bin", "versitygw"))
	if err != nil {
		return nil, fmt.Errorf("versitygw not installed (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0): %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "buckets")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("s3 dir: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s := &Server{
		Name: "s3",
		DSN:  addr,
		Port: port,
		dir:  dir,
		start: func() (*exec.Cmd, error) {
			cmd := exec.Command(bin, "--access", S3AccessKey, "--secret", S3SecretKey, "--port", addr, "posix", root)
			cmd.Dir = dir
			return cmd, startLogged(cmd, dir)
		},
		ready: tcpReady(port),
	}
	return s, s.Start()
}

// StartEtcd starts a single-member etcd (Debian's etcd-server) with its data in dir, its client
// and peer URLs on free loopback ports. The server's DSN is its client URL (cluster mode's
// etcd endpoints).
func StartEtcd(dir string) (*Server, error) {
	bin, err := findBinary("etcd", "/usr/bin/etcd")
	if err != nil {
		return nil, fmt.Errorf("etcd is not installed (apt-get install -y etcd-server): %w", err)
	}
	clientPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	s := &Server{
		Name: "etcd",
		DSN:  clientURL,
		Port: clientPort,
		dir:  dir,
		start: func() (*exec.Cmd, error) {
			cmd := exec.Command(bin, "--name", "svctest", "--data-dir", filepath.Join(dir, "data"),
				"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
				"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
				"--initial-cluster", "svctest="+peerURL, "--initial-cluster-state", "new",
				"--logger", "zap", "--log-level", "warn")
			cmd.Dir = dir
			return cmd, startLogged(cmd, dir)
		},
		ready: func() error {
			c := http.Client{Timeout: time.Second}
			resp, err := c.Get(clientURL + "/health")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"true"`) {
				return fmt.Errorf("etcd health: %s %s", resp.Status, body)
			}
			return nil
		},
	}
	return s, s.Start()
}

// ErrNoServer is returned when a test needs a server that make test did not provide.
var ErrNoServer = errors.New("no test server")

// startLogged starts cmd with its output appended to dir/server.log, killed when the test
// process dies (a server must not outlive the run that started it).
func startLogged(cmd *exec.Cmd, dir string) error {
	out, err := os.OpenFile(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = serverAttrs()
	return cmd.Start()
}
