package sinktest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// need returns the value of env, failing the test when it is unset: a test that needs a server
// must not pass silently because the server is missing.
func need(t testing.TB, env string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, which starts ClickHouse, PostgreSQL and an S3 server and sets it", env)
	}
	return v
}

func freshName() string {
	return "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
}

// ClickHouse creates a fresh database on the test ClickHouse server and returns a DSN for it.
// The database is dropped when the test ends.
func ClickHouse(t testing.TB) string {
	t.Helper()
	base := need(t, EnvClickHouse)
	opts, err := clickhouse.ParseDSN(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvClickHouse, err)
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		t.Fatalf("connect to test ClickHouse: %v", err)
	}
	defer conn.Close()
	name := freshName()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create ClickHouse database: %v", err)
	}
	t.Cleanup(func() {
		c, err := clickhouse.Open(opts)
		if err != nil {
			return
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvClickHouse, err)
	}
	u.Path = "/" + name
	return u.String()
}

// Postgres creates a fresh database on the test PostgreSQL server and returns a DSN for it.
// The database is dropped when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	base := need(t, EnvPostgres)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to test PostgreSQL: %v", err)
	}
	defer conn.Close(context.Background())
	name := freshName()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create PostgreSQL database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvPostgres, err)
	}
	u.Path = "/" + name
	return u.String()
}

// S3Config says where the test S3-compatible server is.
type S3Config struct {
	Endpoint  string // host:port, plain HTTP
	AccessKey string
	SecretKey string
	Bucket    string // a fresh name; the test creates the bucket
}

// S3 returns the test S3 server's address and credentials and a fresh bucket name.
func S3(t testing.TB) S3Config {
	t.Helper()
	c := S3Config{Endpoint: need(t, EnvS3Endpoint), AccessKey: os.Getenv(EnvS3Access), SecretKey: os.Getenv(EnvS3Secret)}
	if c.AccessKey == "" {
		c.AccessKey, c.SecretKey = S3AccessKey, S3SecretKey
	}
	c.Bucket = strings.ReplaceAll(freshName(), "_", "-")
	return c
}

// String is for logs.
func (c S3Config) String() string { return fmt.Sprintf("s3://%s/%s", c.Endpoint, c.Bucket) }
