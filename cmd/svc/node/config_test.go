package node

import (
	"io"
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
			}},
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig(c.args, func(k string) string { return c.env[k] }, io.Discard)
			if c.wantErr != "" {
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
