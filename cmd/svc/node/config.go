// Package node assembles one svc node: its stores, actors and HTTP listeners, from a Config.
// cmd/svc runs it; tests start it in-process.
package node

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/jackc/pgx/v5"
)

// Config is everything a node is told at start. Every field has a flag and an environment
// variable; flags win over the environment, the environment over defaults.
type Config struct {
	Addr          string
	AdminAddr     string
	DataDir       string
	ClickHouseDSN string
	PostgresDSN   string
	PublicURL     string
	DashboardURL  string

	S3Endpoint       string
	S3Bucket         string
	S3Region         string
	S3AccessKey      string
	S3SecretKey      string
	S3UseSSL         bool
	S3PublicEndpoint string

	AdminToken         string
	AccessTokenSecret  string
	RefreshTokenSecret string
	AccessTokenTTL     time.Duration
	RefreshTokenTTL    time.Duration

	LogLevel        string
	ShutdownTimeout time.Duration

	MemoryLimit       int64 // resident memory the node aims for; 0 = none (ApplyMemoryLimit)
	SpoolMaxBytes     int64
	SpoolDir          string // "" = <DataDir>/spool
	FlushRows         int
	EventBlocks       bool // the embedded store writes event rows in blocks (docs/event-blocks.md)
	FlushInterval     time.Duration
	IngestRatePerMin  int
	SessionIdle       time.Duration
	UploadURLTTL      time.Duration
	MaxMappingBytes   int64
	MaxJSONBytes      int64
	MaxMultipartBytes int64

	GitHubClientID     string
	GitHubClientSecret string
	GitHubOAuthURL     string
	GitHubAPIURL       string
	OIDCIssuer         string
	OIDCClientID       string
	OIDCClientSecret   string
	RateLimitUser      int
	RateLimitSignIn    int
	JanitorInterval    time.Duration

	ReadHeaderTimeout time.Duration // both listeners: the request line and headers
	BodyIdleTimeout   time.Duration // longest pause while a request body arrives
	BodyTimeout       time.Duration // longest a whole request body may take
	IdleTimeout       time.Duration // keep-alive connections without a request
	MetricsPublic     bool          // /metrics on the public listener, without a token
	MaxInflightBytes  int64         // request body bytes held at once across ingest requests
	MaxEventAge       time.Duration // oldest event accepted; 0 = the app's retention
	MaxEventFuture    time.Duration // farthest an event may lie after the node's clock

	MetaTimeout    time.Duration // bound of one metadata store call
	RequestTimeout time.Duration // bound of one dashboard request
	KeyCacheTTL    time.Duration // an API key's cached answer is used without asking the store
	KeyStaleFor    time.Duration // how old a cached answer may be and still be used while the store fails

	EventTimeout      time.Duration // bound of one event store (ClickHouse) insert, statement or ping
	EventQueryTimeout time.Duration // bound of one event store (ClickHouse) query

	// Cluster mode (off when ClusterName is empty): protoactor's cluster over the shared stores.
	ClusterName     string
	ClusterProvider string   // "static" or "etcd"
	ClusterAddr     string   // host:port of this node's actor remoting
	ClusterPeers    []string // static provider: every member's remoting address
	EtcdEndpoints   []string // etcd provider: the etcd client endpoints

	// publicURLDefault is set when PublicURL was derived from Addr, so Start can put the real
	// port in it when Addr asks for any free port (:0).
	publicURLDefault bool
	// dashboardURLDefault is set when DashboardURL was taken from PublicURL, so it follows it.
	dashboardURLDefault bool
}

// Setting describes one configuration value: its flag, environment variable and meaning.
// README's configuration table lists the same.
type Setting struct {
	Flag, Env, Default, Usage string
	bind                      func(fs *flag.FlagSet, c *Config, s Setting)
}

// secretFlags may hold secrets (DSNs may carry passwords). They may also be read from a file
// (--<flag>-file, <ENV>_FILE), as container setups mount secrets, and their values never appear
// in profiles, logs or errors.
var secretFlags = map[string]bool{"clickhouse-dsn": true, "postgres-dsn": true, "s3-secret-key": true,
	"admin-token": true, "access-token-secret": true, "refresh-token-secret": true, "github-client-secret": true,
	"oidc-client-secret": true}

// Secret reports whether the setting may hold a secret.
func (s Setting) Secret() bool { return secretFlags[s.Flag] }

func str(p func(*Config) *string) func(*flag.FlagSet, *Config, Setting) {
	return func(fs *flag.FlagSet, c *Config, s Setting) { fs.StringVar(p(c), s.Flag, s.Default, s.Usage) }
}

func dur(p func(*Config) *time.Duration) func(*flag.FlagSet, *Config, Setting) {
	return func(fs *flag.FlagSet, c *Config, s Setting) {
		d, err := time.ParseDuration(s.Default)
		if err != nil {
			panic("bad default for " + s.Flag)
		}
		fs.DurationVar(p(c), s.Flag, d, s.Usage)
	}
}

func integer(p func(*Config) *int) func(*flag.FlagSet, *Config, Setting) {
	return func(fs *flag.FlagSet, c *Config, s Setting) {
		n, err := strconv.Atoi(s.Default)
		if err != nil {
			panic("bad default for " + s.Flag)
		}
		fs.IntVar(p(c), s.Flag, n, s.Usage)
	}
}

func bytesize(p func(*Config) *int64) func(*flag.FlagSet, *Config, Setting) {
	return func(fs *flag.FlagSet, c *Config, s Setting) {
		n, err := strconv.ParseInt(s.Default, 10, 64)
		if err != nil {
			panic("bad default for " + s.Flag)
		}
		fs.Int64Var(p(c), s.Flag, n, s.Usage)
	}
}

// list binds a comma-separated list; blanks around items are dropped, and so are empty items.
func list(p func(*Config) *[]string) func(*flag.FlagSet, *Config, Setting) {
	return func(fs *flag.FlagSet, c *Config, s Setting) {
		fs.Func(s.Flag, s.Usage, func(v string) error {
			var out []string
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					out = append(out, item)
				}
			}
			*p(c) = out
			return nil
		})
	}
}

func boolean(p func(*Config) *bool) func(*flag.FlagSet, *Config, Setting) {
	return func(fs *flag.FlagSet, c *Config, s Setting) {
		b, _ := strconv.ParseBool(s.Default)
		fs.BoolVar(p(c), s.Flag, b, s.Usage)
	}
}

// Settings are the flags of `svc serve`.
var Settings = []Setting{
	{"addr", "SVC_ADDR", ":8080", "public listen address (ingest, dashboard, uploads)", str(func(c *Config) *string { return &c.Addr })},
	{"admin-addr", "SVC_ADMIN_ADDR", "127.0.0.1:9091", "admin listen address (/metrics, operator API)", str(func(c *Config) *string { return &c.AdminAddr })},
	{"data-dir", "SVC_DATA_DIR", "./data", "directory for the embedded stores, spool, blobs and generated secrets", str(func(c *Config) *string { return &c.DataDir })},
	{"clickhouse-dsn", "SVC_CLICKHOUSE_DSN", "", "ClickHouse for events and spans, e.g. clickhouse://host:9000/svc; empty = embedded store", str(func(c *Config) *string { return &c.ClickHouseDSN })},
	{"postgres-dsn", "SVC_POSTGRES_DSN", "", "PostgreSQL for metadata, e.g. postgres://user:pass@host:5432/svc; empty = embedded store", str(func(c *Config) *string { return &c.PostgresDSN })},
	{"public-url", "SVC_PUBLIC_URL", "", "URL clients reach this node at, used in upload URLs; default http://localhost:<port of --addr>", str(func(c *Config) *string { return &c.PublicURL })},
	{"dashboard-url", "SVC_DASHBOARD_URL", "", "base URL of the web dashboard, for the links alerts carry and the redirect URI of sign-in by code (<dashboard-url>/auth/callback/google); default --public-url", str(func(c *Config) *string { return &c.DashboardURL })},
	{"s3-endpoint", "SVC_S3_ENDPOINT", "", "S3-compatible endpoint host:port for attachments; empty = local disk", str(func(c *Config) *string { return &c.S3Endpoint })},
	{"s3-bucket", "SVC_S3_BUCKET", "svc-blobs", "S3 bucket (created when missing)", str(func(c *Config) *string { return &c.S3Bucket })},
	{"s3-region", "SVC_S3_REGION", "us-east-1", "S3 region", str(func(c *Config) *string { return &c.S3Region })},
	{"s3-access-key", "SVC_S3_ACCESS_KEY", "", "S3 access key", str(func(c *Config) *string { return &c.S3AccessKey })},
	{"s3-secret-key", "SVC_S3_SECRET_KEY", "", "S3 secret key", str(func(c *Config) *string { return &c.S3SecretKey })},
	{"s3-use-ssl", "SVC_S3_USE_SSL", "true", "use HTTPS to reach S3", boolean(func(c *Config) *bool { return &c.S3UseSSL })},
	{"s3-public-endpoint", "SVC_S3_PUBLIC_ENDPOINT", "", "host:port SDKs reach S3 at, when it differs from --s3-endpoint", str(func(c *Config) *string { return &c.S3PublicEndpoint })},
	{"admin-token", "SVC_ADMIN_TOKEN", "", "token of the admin API; empty = generated into <data-dir>/admin.token", str(func(c *Config) *string { return &c.AdminToken })},
	{"access-token-secret", "SVC_ACCESS_TOKEN_SECRET", "", "HMAC secret of access tokens; empty = generated and kept in <data-dir>", str(func(c *Config) *string { return &c.AccessTokenSecret })},
	{"refresh-token-secret", "SVC_REFRESH_TOKEN_SECRET", "", "HMAC secret of refresh tokens; empty = generated and kept in <data-dir>", str(func(c *Config) *string { return &c.RefreshTokenSecret })},
	{"access-token-ttl", "SVC_ACCESS_TOKEN_TTL", "30m", "lifetime of access tokens", dur(func(c *Config) *time.Duration { return &c.AccessTokenTTL })},
	{"refresh-token-ttl", "SVC_REFRESH_TOKEN_TTL", "168h", "lifetime of refresh tokens", dur(func(c *Config) *time.Duration { return &c.RefreshTokenTTL })},
	{"log-level", "SVC_LOG_LEVEL", "info", "debug, info, warn or error", str(func(c *Config) *string { return &c.LogLevel })},
	{"shutdown-timeout", "SVC_SHUTDOWN_TIMEOUT", "30s", "how long SIGTERM waits for requests in flight, the last flush and closing the stores; past it the node exits as a crash would leave it (the spool replays what was not stored at the next start)", dur(func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
	{"spool-dir", "SVC_SPOOL_DIR", "", "directory of the write-ahead spool, every acknowledged batch fdatasync'ed; a disk of its own keeps those syncs from waiting behind the stores' writes. Empty = <data-dir>/spool", str(func(c *Config) *string { return &c.SpoolDir })},
	{"memory-limit", "SVC_MEMORY_LIMIT", "1073741824", "resident memory (bytes) the node aims to stay under: the Go runtime's soft memory limit is set to three quarters of it, the rest left for Badger's mapped files; past it the runtime collects garbage harder, at the price of CPU. 0 = no limit, else at least 67108864 (64 MiB). GOMEMLIMIT, when set, is used instead", bytesize(func(c *Config) *int64 { return &c.MemoryLimit })},
	{"spool-max-bytes", "SVC_SPOOL_MAX_BYTES", "268435456", "PUT /events answers 503 while the spool holds more than this many bytes not yet in the event store", bytesize(func(c *Config) *int64 { return &c.SpoolMaxBytes })},
	{"event-blocks", "SVC_EVENT_BLOCKS", "true", "the embedded event store writes event rows in compressed blocks of a second instead of a key per row (docs/event-blocks.md); false keeps a key per row for a store that has not written blocks yet: once a store has written blocks it goes on writing them", boolean(func(c *Config) *bool { return &c.EventBlocks })},
	{"flush-rows", "SVC_FLUSH_ROWS", "0", "rows per event store insert; 0 = by event store: 10000 embedded, 50000 ClickHouse", integer(func(c *Config) *int { return &c.FlushRows })},
	{"flush-interval", "SVC_FLUSH_INTERVAL", "1s", "longest wait before held rows are inserted", dur(func(c *Config) *time.Duration { return &c.FlushInterval })},
	{"ingest-rate-limit", "SVC_INGEST_RATE_LIMIT", "6000", "PUT /events and PUT /builds requests per minute per app; over it, 429", integer(func(c *Config) *int { return &c.IngestRatePerMin })},
	{"session-idle", "SVC_SESSION_IDLE", "5m", "a session actor without events for this long is passivated", dur(func(c *Config) *time.Duration { return &c.SessionIdle })},
	{"upload-url-ttl", "SVC_UPLOAD_URL_TTL", "1h", "lifetime of attachment and mapping upload URLs", dur(func(c *Config) *time.Duration { return &c.UploadURLTTL })},
	{"max-mapping-bytes", "SVC_MAX_MAPPING_BYTES", "536870912", "largest mapping file PUT /builds accepts (413 above)", bytesize(func(c *Config) *int64 { return &c.MaxMappingBytes })},
	{"max-json-bytes", "SVC_MAX_JSON_BYTES", "9437184", "largest JSON body of PUT /events (413 above)", bytesize(func(c *Config) *int64 { return &c.MaxJSONBytes })},
	{"github-client-id", "SVC_GITHUB_CLIENT_ID", "", "GitHub OAuth app client id (sign-in with POST /auth/codehost)", str(func(c *Config) *string { return &c.GitHubClientID })},
	{"github-client-secret", "SVC_GITHUB_CLIENT_SECRET", "", "GitHub OAuth app client secret", str(func(c *Config) *string { return &c.GitHubClientSecret })},
	{"github-oauth-url", "SVC_GITHUB_OAUTH_URL", "https://github.com", "GitHub (Enterprise) web URL for the OAuth code exchange", str(func(c *Config) *string { return &c.GitHubOAuthURL })},
	{"github-api-url", "SVC_GITHUB_API_URL", "https://api.github.com", "GitHub (Enterprise) REST API URL", str(func(c *Config) *string { return &c.GitHubAPIURL })},
	{"oidc-issuer", "SVC_OIDC_ISSUER", "https://accounts.google.com", "OpenID Connect issuer for POST /auth/idp", str(func(c *Config) *string { return &c.OIDCIssuer })},
	{"oidc-client-id", "SVC_OIDC_CLIENT_ID", "", "OpenID Connect client id (the ID token's audience)", str(func(c *Config) *string { return &c.OIDCClientID })},
	{"oidc-client-secret", "SVC_OIDC_CLIENT_SECRET", "", "OpenID Connect client secret: with it POST /auth/google also signs in with an authorization code, exchanged at the issuer's token endpoint; empty = ID tokens only", str(func(c *Config) *string { return &c.OIDCClientSecret })},
	{"rate-limit-user", "SVC_RATE_LIMIT_USER", "300", "dashboard requests per minute per signed-in user; over it, 429", integer(func(c *Config) *int { return &c.RateLimitUser })},
	{"rate-limit-signin", "SVC_RATE_LIMIT_SIGNIN", "30", "sign-in, refresh and invite-validation requests per minute per client address", integer(func(c *Config) *int { return &c.RateLimitSignIn })},
	{"janitor-interval", "SVC_JANITOR_INTERVAL", "1h", "how often retention deletes old data, expired sessions are removed, and the embedded databases' value logs give back the space of deleted values", dur(func(c *Config) *time.Duration { return &c.JanitorInterval })},
	{"max-multipart-bytes", "SVC_MAX_MULTIPART_BYTES", "20971520", "largest multipart body of PUT /events (413 above)", bytesize(func(c *Config) *int64 { return &c.MaxMultipartBytes })},
	{"read-header-timeout", "SVC_READ_HEADER_TIMEOUT", "10s", "longest time a client may take to send a request's line and headers (both listeners)", dur(func(c *Config) *time.Duration { return &c.ReadHeaderTimeout })},
	{"body-idle-timeout", "SVC_BODY_IDLE_TIMEOUT", "30s", "longest pause while a request body arrives; a stalled body gets 408 and its request id is released", dur(func(c *Config) *time.Duration { return &c.BodyIdleTimeout })},
	{"body-timeout", "SVC_BODY_TIMEOUT", "5m", "longest time a whole request body may take to arrive (408 after)", dur(func(c *Config) *time.Duration { return &c.BodyTimeout })},
	{"idle-timeout", "SVC_IDLE_TIMEOUT", "120s", "keep-alive connections without a request are closed after this", dur(func(c *Config) *time.Duration { return &c.IdleTimeout })},
	{"max-inflight-bytes", "SVC_MAX_INFLIGHT_BYTES", "268435456", "request body bytes PUT /events may hold in memory at once across requests; beyond it, 503 + Retry-After", bytesize(func(c *Config) *int64 { return &c.MaxInflightBytes })},
	{"max-event-age", "SVC_MAX_EVENT_AGE", "0s", "oldest event or span PUT /events accepts (400 naming it beyond); 0 = the app's retention", dur(func(c *Config) *time.Duration { return &c.MaxEventAge })},
	{"max-event-future", "SVC_MAX_EVENT_FUTURE", "720h", "farthest after the node's clock an event or span may lie (400 naming it beyond)", dur(func(c *Config) *time.Duration { return &c.MaxEventFuture })},
	{"metrics-public", "SVC_METRICS_PUBLIC", "false", "also serve /metrics on the public listener without a token (for scrapers that cannot send one)", boolean(func(c *Config) *bool { return &c.MetricsPublic })},
	{"meta-timeout", "SVC_META_TIMEOUT", "3s", "longest a metadata store (PostgreSQL) call may take; beyond it the store counts as unavailable and the request answers 503 + Retry-After", dur(func(c *Config) *time.Duration { return &c.MetaTimeout })},
	{"request-timeout", "SVC_REQUEST_TIMEOUT", "30s", "longest a dashboard API request may take; its store calls end then and it answers 503 + Retry-After", dur(func(c *Config) *time.Duration { return &c.RequestTimeout })},
	{"api-key-cache-ttl", "SVC_API_KEY_CACHE_TTL", "30s", "how long an API key's answer from the metadata store is used before asking again (other nodes see a rotation within it)", dur(func(c *Config) *time.Duration { return &c.KeyCacheTTL })},
	{"api-key-stale-for", "SVC_API_KEY_STALE_FOR", "6h", "while the metadata store does not answer, a key it accepted at most this long ago keeps working", dur(func(c *Config) *time.Duration { return &c.KeyStaleFor })},
	{"clickhouse-timeout", "SVC_CLICKHOUSE_TIMEOUT", "5s", "longest a ClickHouse insert (up to --flush-rows rows), statement or ping may take; beyond it the event store counts as unavailable", dur(func(c *Config) *time.Duration { return &c.EventTimeout })},
	{"clickhouse-query-timeout", "SVC_CLICKHOUSE_QUERY_TIMEOUT", "5m", "longest a ClickHouse query may take (dashboard requests end sooner, at --request-timeout)", dur(func(c *Config) *time.Duration { return &c.EventQueryTimeout })},
	{"cluster-name", "SVC_CLUSTER_NAME", "", "name of the cluster this node joins; empty = a single node (no cluster provider needed). A cluster runs on ClickHouse, PostgreSQL and S3 only", str(func(c *Config) *string { return &c.ClusterName })},
	{"cluster-provider", "SVC_CLUSTER_PROVIDER", "static", "how members find each other: static (the fixed list of --cluster-peers) or etcd (--etcd-endpoints)", str(func(c *Config) *string { return &c.ClusterProvider })},
	{"cluster-addr", "SVC_CLUSTER_ADDR", "", "host:port of this node's actor remoting, reachable by every other member (static: also port+1 for member checks)", str(func(c *Config) *string { return &c.ClusterAddr })},
	{"cluster-peers", "SVC_CLUSTER_PEERS", "", "static provider: comma-separated remoting addresses (host:port) of all members, this one included", list(func(c *Config) *[]string { return &c.ClusterPeers })},
	{"etcd-endpoints", "SVC_ETCD_ENDPOINTS", "", "etcd provider: comma-separated etcd client URLs, e.g. http://etcd:2379", list(func(c *Config) *[]string { return &c.EtcdEndpoints })},
}

// ParseConfig reads the environment (getenv) and then args. The error is one line naming the
// flag or variable and what is wrong with it; flag.ErrHelp when -h was asked for.
func ParseConfig(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("svc serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	files := map[string]*string{} // secret flag → the file named by its -file flag
	for _, s := range Settings {
		s.bind(fs, &c, s)
		if s.Secret() {
			files[s.Flag] = fs.String(s.Flag+"-file", "", "read --"+s.Flag+" from this file")
		}
	}
	for _, s := range Settings {
		if v := getenv(s.Env); v != "" {
			if err := fs.Set(s.Flag, v); err != nil {
				return c, fmt.Errorf("bad value %s for %s: %v", shown(s, v), s.Env, unwrapFlagErr(err))
			}
		}
		if v := getenv(s.Env + "_FILE"); v != "" && s.Secret() {
			*files[s.Flag] = v
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(usage)
			fmt.Fprintln(usage, "usage: svc serve [flags]   (every flag also reads the environment variable shown)")
			for _, s := range Settings {
				fmt.Fprintf(usage, "  --%-22s %-26s %s (default %q)\n", s.Flag, s.Env, s.Usage, s.Default)
				if s.Secret() {
					fmt.Fprintf(usage, "  --%-22s %-26s a file holding --%s\n", s.Flag+"-file", s.Env+"_FILE", s.Flag)
				}
			}
			return c, err
		}
		return c, fmt.Errorf("%v (see svc serve -h)", unwrapFlagErr(err))
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (see svc serve -h)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, s := range Settings {
		if !s.Secret() || *files[s.Flag] == "" {
			continue
		}
		path := *files[s.Flag]
		if set[s.Flag] && set[s.Flag+"-file"] {
			return c, fmt.Errorf("--%s and --%s-file exclude each other", s.Flag, s.Flag)
		}
		if set[s.Flag] {
			continue // a flag wins over the environment's file
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("--%s-file: %w", s.Flag, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return c, fmt.Errorf("--%s-file: %s is empty", s.Flag, path)
		}
		if err := fs.Set(s.Flag, v); err != nil {
			return c, fmt.Errorf("bad value in --%s-file: %v", s.Flag, unwrapFlagErr(err))
		}
	}
	return c, c.validate()
}

// shown is how an error names a setting's value: secrets are never echoed.
func shown(s Setting, v string) string {
	if s.Secret() {
		return "(secret, not shown)"
	}
	return strconv.Quote(v)
}

// RedactArgs returns args with the values of secret flags replaced, for anything that shows a
// command line (the admin listener's /debug/pprof/cmdline).
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(out[i], "-"), "=")
		if !strings.HasPrefix(out[i], "-") || !secretFlags[name] {
			continue
		}
		if hasValue {
			out[i] = out[i][:strings.Index(out[i], "=")+1] + "REDACTED"
		} else if i+1 < len(out) {
			i++
			out[i] = "REDACTED"
		}
	}
	return out
}

// unwrapFlagErr shortens the flag package's errors to their message.
func unwrapFlagErr(err error) string {
	return strings.TrimSpace(err.Error())
}

// defaultFlushRows is --flush-rows when it is 0. ClickHouse wants few large inserts: each one
// makes a part its server later merges, and in alternated runs 10,000-row inserts cost its server
// 40–66 % more CPU per item than 50,000-row ones and stored 11–22 % fewer rows flat out. The
// embedded store gains nothing from large writes (Badger commits them in transactions of a few
// thousand rows anyway), while the rows held for one and its write scratch grow the live heap
// the collector marks and keep a processor busy for longer: 10,000 stored 2–7 % more rows flat
// out than 50,000 and cut the p99 of 50–149-item batches at 350 requests/s from 24–33 to 9–20 ms
// (docs/benchmarks.md, "Smaller flushes for the embedded store").
func defaultFlushRows(clickhouse bool) int {
	if clickhouse {
		return 50_000
	}
	return 10_000
}

// minMemoryLimit is the smallest --memory-limit taken; a node needs more than that to start.
const minMemoryLimit = 64 << 20

func (c *Config) validate() error {
	for _, a := range []struct{ name, v string }{{"--addr", c.Addr}, {"--admin-addr", c.AdminAddr}} {
		if _, port, err := net.SplitHostPort(a.v); err != nil || port == "" {
			return fmt.Errorf("bad value %q for %s: want host:port or :port", a.v, a.name)
		}
	}
	if c.DataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	if c.PublicURL == "" {
		_, port, _ := net.SplitHostPort(c.Addr)
		c.PublicURL = "http://localhost:" + port
		c.publicURLDefault = true
	}
	u, err := url.Parse(c.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad value %q for --public-url: want an absolute http(s) URL", c.PublicURL)
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.DashboardURL == "" {
		c.DashboardURL = c.PublicURL
		c.dashboardURLDefault = true
	}
	if u, err := url.Parse(c.DashboardURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad value %q for --dashboard-url: want an absolute http(s) URL", c.DashboardURL)
	}
	c.DashboardURL = strings.TrimRight(c.DashboardURL, "/")
	switch {
	case c.FlushRows < 0:
		return errors.New("--flush-rows must not be negative (0 = the event store's default)")
	case c.FlushRows == 0:
		c.FlushRows = defaultFlushRows(c.ClickHouseDSN != "")
	}
	if c.ClickHouseDSN != "" {
		if _, err := clickhouse.ParseDSN(c.ClickHouseDSN); err != nil {
			return fmt.Errorf("bad value for --clickhouse-dsn: %v", err)
		}
	}
	if c.PostgresDSN != "" {
		if _, err := pgx.ParseConfig(c.PostgresDSN); err != nil {
			return fmt.Errorf("bad value for --postgres-dsn: %v", err)
		}
	}
	if c.S3Endpoint != "" && (c.S3AccessKey == "" || c.S3SecretKey == "") {
		return errors.New("--s3-endpoint needs --s3-access-key and --s3-secret-key")
	}
	for _, u := range []struct{ name, v string }{{"--github-oauth-url", c.GitHubOAuthURL}, {"--github-api-url", c.GitHubAPIURL}, {"--oidc-issuer", c.OIDCIssuer}} {
		if pu, err := url.Parse(u.v); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return fmt.Errorf("bad value %q for %s: want an absolute http(s) URL", u.v, u.name)
		}
	}
	if (c.GitHubClientID == "") != (c.GitHubClientSecret == "") {
		return errors.New("--github-client-id and --github-client-secret go together")
	}
	if c.OIDCClientSecret != "" && c.OIDCClientID == "" {
		return errors.New("--oidc-client-secret needs --oidc-client-id")
	}
	if c.AccessTokenTTL <= 0 || c.RefreshTokenTTL <= 0 {
		return errors.New("token lifetimes must be positive")
	}
	if c.AccessTokenTTL >= c.RefreshTokenTTL {
		return errors.New("--access-token-ttl must be shorter than --refresh-token-ttl")
	}
	positive := []struct {
		name string
		ok   bool
	}{
		{"--spool-max-bytes", c.SpoolMaxBytes > 0}, {"--flush-interval", c.FlushInterval > 0},
		{"--ingest-rate-limit", c.IngestRatePerMin > 0}, {"--session-idle", c.SessionIdle > 0}, {"--upload-url-ttl", c.UploadURLTTL > 0},
		{"--max-mapping-bytes", c.MaxMappingBytes > 0}, {"--rate-limit-user", c.RateLimitUser > 0},
		{"--rate-limit-signin", c.RateLimitSignIn > 0}, {"--janitor-interval", c.JanitorInterval > 0}, {"--max-json-bytes", c.MaxJSONBytes > 0}, {"--max-multipart-bytes", c.MaxMultipartBytes > 0},
		{"--read-header-timeout", c.ReadHeaderTimeout > 0}, {"--body-idle-timeout", c.BodyIdleTimeout > 0}, {"--body-timeout", c.BodyTimeout > 0},
		{"--idle-timeout", c.IdleTimeout > 0}, {"--max-inflight-bytes", c.MaxInflightBytes > 0}, {"--max-event-future", c.MaxEventFuture > 0},
		{"--meta-timeout", c.MetaTimeout > 0}, {"--request-timeout", c.RequestTimeout > 0}, {"--api-key-cache-ttl", c.KeyCacheTTL > 0}, {"--api-key-stale-for", c.KeyStaleFor > 0},
		{"--clickhouse-timeout", c.EventTimeout > 0}, {"--clickhouse-query-timeout", c.EventQueryTimeout > 0},
	}
	for _, p := range positive {
		if !p.ok {
			return fmt.Errorf("%s must be positive", p.name)
		}
	}
	if c.MemoryLimit != 0 && c.MemoryLimit < minMemoryLimit {
		return fmt.Errorf("--memory-limit must be 0 (no limit) or at least %d bytes (64 MiB): it is in bytes, and a smaller limit keeps the garbage collector running without pause", int64(minMemoryLimit))
	}
	if c.MaxEventAge < 0 {
		return errors.New("--max-event-age must not be negative")
	}
	if err := c.validateCluster(); err != nil {
		return err
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("bad value %q for --log-level: want debug, info, warn or error", c.LogLevel)
	}
	return nil
}

// Clustered says whether the node runs as a member of a cluster.
func (c *Config) Clustered() bool { return c.ClusterName != "" }

// validateCluster checks the cluster settings. A cluster needs stores every member reaches: the
// embedded ones live in one node's data directory.
func (c *Config) validateCluster() error {
	if !c.Clustered() {
		return nil
	}
	var local []string
	if c.ClickHouseDSN == "" {
		local = append(local, "events (--clickhouse-dsn)")
	}
	if c.PostgresDSN == "" {
		local = append(local, "metadata (--postgres-dsn)")
	}
	if c.S3Endpoint == "" {
		local = append(local, "blobs (--s3-endpoint)")
	}
	if len(local) > 0 {
		return fmt.Errorf("--cluster-name needs shared stores, but %s would be embedded in this node's data directory, where other members cannot reach them", strings.Join(local, ", "))
	}
	if _, port, err := net.SplitHostPort(c.ClusterAddr); err != nil || port == "" || port == "0" {
		return fmt.Errorf("bad value %q for --cluster-addr: want the host:port other members reach this node's remoting at", c.ClusterAddr)
	}
	if host, _, _ := net.SplitHostPort(c.ClusterAddr); host == "" || host == "0.0.0.0" || host == "::" {
		return fmt.Errorf("bad value %q for --cluster-addr: the host must be one other members can reach (not empty, 0.0.0.0 or ::)", c.ClusterAddr)
	}
	switch c.ClusterProvider {
	case "static":
		if len(c.ClusterPeers) == 0 {
			return errors.New("--cluster-provider static needs --cluster-peers: the remoting addresses of all members")
		}
		self := false
		for _, p := range c.ClusterPeers {
			if _, port, err := net.SplitHostPort(p); err != nil || port == "" {
				return fmt.Errorf("bad member %q in --cluster-peers: want host:port", p)
			}
			self = self || p == c.ClusterAddr
		}
		if !self {
			return fmt.Errorf("--cluster-peers must list this node's own --cluster-addr %q", c.ClusterAddr)
		}
	case "etcd":
		if len(c.EtcdEndpoints) == 0 {
			return errors.New("--cluster-provider etcd needs --etcd-endpoints")
		}
	default:
		return fmt.Errorf("bad value %q for --cluster-provider: want static or etcd", c.ClusterProvider)
	}
	return nil
}

// Getenv is os.Getenv, named for ParseConfig's callers.
var Getenv = os.Getenv
