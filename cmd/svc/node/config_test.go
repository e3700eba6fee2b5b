package node

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string // substring; empty = success
		check   func(t *testing.T, c Config)
	}{
		{name: "defaults", check: func(t *testing.T, c Config) {
			if c.Addr != ":8080" || c.AdminAddr != "127.0.0.1:9091" || c.DataDir != "./data" {
				t.Errorf("defaults: %+v", c)
			}
			if c.ClickHouseDSN != "" || c.PostgresDSN != "" {
				t.Error("embedded by default")
			}
			if c.PublicURL != "http://localhost:8080" {
				t.Errorf("public url %q", c.PublicURL)
			}
			if c.AccessTokenTTL != 30*time.Minute || c.RefreshTokenTTL != 7*24*time.Hour {
				t.Errorf("ttls %v %v", c.AccessTokenTTL, c.RefreshTokenTTL)
			}
			if c.FlushRows != 10_000 {
				t.Errorf("flush rows %d, want the embedded store's 10000", c.FlushRows)
			}
		}},
		{name: "env", env: map[string]string{"SVC_ADDR": "127.0.0.1:9000", "SVC_DATA_DIR": "/tmp/x", "SVC_PUBLIC_URL": "https://svc.example.com/"},
			check: func(t *testing.T, c Config) {
				if c.Addr != "127.0.0.1:9000" || c.DataDir != "/tmp/x" || c.PublicURL != "https://svc.example.com" {
					t.Errorf("%+v", c)
				}
			}},
		{name: "flag beats env", args: []string{"--addr", ":7000"}, env: map[string]string{"SVC_ADDR": ":9000"},
			check: func(t *testing.T, c Config) {
				if c.Addr != ":7000" || c.PublicURL != "http://localhost:7000" {
					t.Errorf("%+v", c)
				}
			}},
		{name: "dsns", args: []string{"--clickhouse-dsn", "clickhouse://127.0.0.1:9000/svc", "--postgres-dsn", "postgres://u@127.0.0.1:5432/svc"},
			check: func(t *testing.T, c Config) {
				if c.ClickHouseDSN == "" || c.PostgresDSN == "" {
					t.Errorf("%+v", c)
				}
				if c.FlushRows != 50_000 {
					t.Errorf("flush rows %d, want ClickHouse's 50000", c.FlushRows)
				}
			}},
		{name: "flush rows set", args: []string{"--flush-rows", "2000", "--clickhouse-dsn", "clickhouse://127.0.0.1:9000/svc"},
			check: func(t *testing.T, c Config) {
				if c.FlushRows != 2000 {
					t.Errorf("flush rows %d, want 2000", c.FlushRows)
				}
			}},
		{name: "flush rows set, embedded", args: []string{"--flush-rows", "50000"},
			check: func(t *testing.T, c Config) {
				if c.FlushRows != 50_000 {
					t.Errorf("flush rows %d, want 50000", c.FlushRows)
				}
			}},
		{name: "flush rows 0 from env", env: map[string]string{"SVC_FLUSH_ROWS": "0"},
			check: func(t *testing.T, c Config) {
				if c.FlushRows != 10_000 {
					t.Errorf("flush rows %d, want the embedded store's 10000", c.FlushRows)
				}
			}},
		{name: "flush rows negative", args: []string{"--flush-rows", "-1"}, wantErr: "--flush-rows must not be negative"},
		{name: "cluster on embedded stores", args: []string{"--cluster-name", "c1", "--cluster-addr", "10.0.0.1:7000", "--cluster-peers", "10.0.0.1:7000"},
			wantErr: "--cluster-name needs shared stores, but events (--clickhouse-dsn), metadata (--postgres-dsn), blobs (--s3-endpoint) would be embedded"},
		{name: "cluster static", env: sharedStores(map[string]string{"SVC_CLUSTER_NAME": "c1", "SVC_CLUSTER_ADDR": "10.0.0.1:7000",
			"SVC_CLUSTER_PEERS": " 10.0.0.1:7000, 10.0.0.2:7000 ,,10.0.0.3:7000"}),
			check: func(t *testing.T, c Config) {
				if !c.Clustered() || c.ClusterProvider != "static" || len(c.ClusterPeers) != 3 || c.ClusterPeers[1] != "10.0.0.2:7000" {
					t.Errorf("%+v", c)
				}
			}},
		{name: "cluster etcd", env: sharedStores(map[string]string{"SVC_CLUSTER_NAME": "c1", "SVC_CLUSTER_ADDR": "svc-0.svc:7000",
			"SVC_CLUSTER_PROVIDER": "etcd", "SVC_ETCD_ENDPOINTS": "http://etcd:2379"}),
			check: func(t *testing.T, c Config) {
				if c.ClusterProvider != "etcd" || len(c.EtcdEndpoints) != 1 {
					t.Errorf("%+v", c)
				}
			}},
		{name: "cluster without addr", env: sharedStores(map[string]string{"SVC_CLUSTER_NAME": "c1", "SVC_CLUSTER_PEERS": "10.0.0.1:7000"}), wantErr: "--cluster-addr"},
		{name: "cluster addr on all interfaces", env: sharedStores(map[string]string{"SVC_CLUSTER_NAME": "c1", "SVC_CLUSTER_ADDR": "0.0.0.0:7000", "SVC_CLUSTER_PEERS": "0.0.0.0:7000"}), wantErr: "not empty, 0.0.0.0"},
		{name: "cluster peers without self", env: sharedStores(map[string]string{"SVC_CLUSTER_NAME": "c1", "SVC_CLUSTER_ADDR": "10.0.0.1:7000", "SVC_CLUSTER_PEERS": "10.0.0.2:7000"}), wantErr: "must list this node's own"},
		{name: "cluster static without peers", env: sharedStores(map[string]string{"SVC_CLUSTER_NAME": "c1", "SVC_CLUSTER_ADDR": "10.0.0.1:7000"}), wantErr: "needs --cluster-peers"},
		{name: "cluster etcd without endpoints", env: sharedStores(map[string]string{"SVC_CLUSTER_NAME": "c1", "SVC_CLUSTER_ADDR": "10.0.0.1:7000", "SVC_CLUSTER_PROVIDER": "etcd"}), wantErr: "needs --etcd-endpoints"},
		{name: "cluster unknown provider", env: sharedStores(map[string]string{"SVC_CLUSTER_NAME": "c1", "SVC_CLUSTER_ADDR": "10.0.0.1:7000", "SVC_CLUSTER_PROVIDER": "consul"}), wantErr: "want static or etcd"},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: "flag provided but not defined: -nope"},
		{name: "stray argument", args: []string{"extra"}, wantErr: `unexpected argument "extra"`},
		{name: "bad addr", args: []string{"--addr", "8080"}, wantErr: `bad value "8080" for --addr`},
		{name: "bad env duration", env: map[string]string{"SVC_ACCESS_TOKEN_TTL": "soon"}, wantErr: "SVC_ACCESS_TOKEN_TTL"},
		{name: "bad public url", args: []string{"--public-url", "ftp://x"}, wantErr: "--public-url"},
		{name: "bad clickhouse dsn", args: []string{"--clickhouse-dsn", "http://[::1"}, wantErr: "--clickhouse-dsn"},
		{name: "bad postgres dsn", args: []string{"--postgres-dsn", "postgres://u@h:notaport/db"}, wantErr: "--postgres-dsn"},
		{name: "s3 without keys", args: []string{"--s3-endpoint", "s3.local:9000"}, wantErr: "--s3-access-key"},
		{name: "ttl order", args: []string{"--access-token-ttl", "8h", "--refresh-token-ttl", "1h"}, wantErr: "shorter"},
		{name: "bad log level", args: []string{"--log-level", "loud"}, wantErr: "--log-level"},
		{name: "timeouts", args: []string{"--body-idle-timeout", "2s", "--read-header-timeout", "1s"}, check: func(t *testing.T, c Config) {
			if c.BodyIdleTimeout != 2*time.Second || c.ReadHeaderTimeout != time.Second || c.BodyTimeout != 5*time.Minute || c.IdleTimeout != 120*time.Second {
				t.Errorf("%+v", c)
			}
		}},
		{name: "zero timeout", args: []string{"--body-idle-timeout", "0s"}, wantErr: "--body-idle-timeout must be positive"},
		{name: "secret from file", args: []string{"--admin-token-file", secretFile(t, "tok-123\n")}, check: func(t *testing.T, c Config) {
			if c.AdminToken != "tok-123" {
				t.Errorf("admin token %q", c.AdminToken)
			}
		}},
		{name: "secret file from env", env: map[string]string{"SVC_POSTGRES_DSN_FILE": secretFile(t, "postgres://u:pw@127.0.0.1:5432/svc\r\n")},
			check: func(t *testing.T, c Config) {
				if c.PostgresDSN != "postgres://u:pw@127.0.0.1:5432/svc" {
					t.Errorf("dsn %q", c.PostgresDSN)
				}
			}},
		{name: "secret flag beats env file", args: []string{"--admin-token", "from-flag"}, env: map[string]string{"SVC_ADMIN_TOKEN_FILE": secretFile(t, "from-file")},
			check: func(t *testing.T, c Config) {
				if c.AdminToken != "from-flag" {
					t.Errorf("admin token %q", c.AdminToken)
				}
			}},
		{name: "secret flag and file", args: []string{"--admin-token", "a", "--admin-token-file", secretFile(t, "b")}, wantErr: "exclude each other"},
		{name: "secret file missing", args: []string{"--github-client-secret-file", "/nonexistent/secret"}, wantErr: "--github-client-secret-file"},
		{name: "secret file empty", args: []string{"--s3-secret-key-file", secretFile(t, "\n")}, wantErr: "is empty"},
		{name: "no -file for plain settings", args: []string{"--addr-file", "x"}, wantErr: "not defined: -addr-file"},
		{name: "oidc client secret from env file", env: map[string]string{"SVC_OIDC_CLIENT_ID": "id.apps.example.com",
			"SVC_OIDC_CLIENT_SECRET_FILE": secretFile(t, "GOCSPX-abc\n"), "SVC_DASHBOARD_URL": "https://dash.example.com/"},
			check: func(t *testing.T, c Config) {
				if c.OIDCClientSecret != "GOCSPX-abc" || c.DashboardURL != "https://dash.example.com" {
					t.Errorf("secret %q, dashboard url %q", c.OIDCClientSecret, c.DashboardURL)
				}
			}},
		{name: "oidc client secret flag", args: []string{"--oidc-client-id", "id", "--oidc-client-secret", "s"}, check: func(t *testing.T, c Config) {
			if c.OIDCClientSecret != "s" {
				t.Errorf("secret %q", c.OIDCClientSecret)
			}
		}},
		{name: "oidc client secret without id", args: []string{"--oidc-client-secret", "hunter2"}, wantErr: "--oidc-client-secret needs --oidc-client-id"},
		{name: "bad dsn hides its password", args: []string{"--postgres-dsn", "postgres://u:hunter2@h:notaport/db"}, wantErr: "--postgres-dsn"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig(c.args, func(k string) string { return c.env[k] }, io.Discard)
			if c.wantErr != "" {
				if err != nil && strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("error shows a secret: %v", err)
				}
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("want error containing %q, got %v", c.wantErr, err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error must be one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg)
		})
	}
}

// secretFile writes content to a new file and returns its path.
func secretFile(t *testing.T, content string) string {
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRedactArgs(t *testing.T) {
	cases := []struct{ in, want []string }{
		{[]string{"svc", "serve", "--admin-token", "s3cr3t", "--addr", ":8080"}, []string{"svc", "serve", "--admin-token", "REDACTED", "--addr", ":8080"}},
		{[]string{"svc", "serve", "--github-client-secret=abc", "-postgres-dsn=postgres://u:p@h/db"}, []string{"svc", "serve", "--github-client-secret=REDACTED", "-postgres-dsn=REDACTED"}},
		{[]string{"svc", "serve", "--data-dir", "--admin-token"}, []string{"svc", "serve", "--data-dir", "--admin-token"}},
		{[]string{"svc", "serve", "--s3-secret-key-file", "/run/secrets/s3"}, []string{"svc", "serve", "--s3-secret-key-file", "/run/secrets/s3"}},
		{[]string{"svc", "serve", "--clickhouse-dsn", "clickhouse://u:p@h/db", "--log-level", "debug"}, []string{"svc", "serve", "--clickhouse-dsn", "REDACTED", "--log-level", "debug"}},
	}
	for _, c := range cases {
		if got := RedactArgs(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("RedactArgs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Every secret setting is redacted in both spellings.
	for _, s := range Settings {
		if !s.Secret() {
			continue
		}
		for _, args := range [][]string{{"--" + s.Flag, "v4lue"}, {"--" + s.Flag + "=v4lue"}} {
			if strings.Contains(strings.Join(RedactArgs(args), " "), "v4lue") {
				t.Errorf("%q not redacted", args)
			}
		}
	}
}

// sharedStores adds the settings of ClickHouse, PostgreSQL and S3 to env, as a cluster needs.
func sharedStores(env map[string]string) map[string]string {
	env["SVC_CLICKHOUSE_DSN"] = "clickhouse://127.0.0.1:9000/svc"
	env["SVC_POSTGRES_DSN"] = "postgres://u@127.0.0.1:5432/svc"
	env["SVC_S3_ENDPOINT"], env["SVC_S3_ACCESS_KEY"], env["SVC_S3_SECRET_KEY"] = "s3:9000", "k", "s"
	return env
}
