package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/dgraph-io/badger/v4"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/httprate"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/http/admin"
	"github.com/svc-dev/svc/http/apidoc"
	"github.com/svc-dev/svc/http/auth"
	"github.com/svc-dev/svc/http/dashboard"
	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/http/ingest"
	"github.com/svc-dev/svc/http/ops"
	"github.com/svc-dev/svc/http/signin"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
	"github.com/svc-dev/svc/sinks/badgermeta"
	chstore "github.com/svc-dev/svc/sinks/clickhouse"
	"github.com/svc-dev/svc/sinks/gate"
	"github.com/svc-dev/svc/sinks/keycache"
	"github.com/svc-dev/svc/sinks/localblob"
	pgstore "github.com/svc-dev/svc/sinks/postgres"
	"github.com/svc-dev/svc/sinks/s3blob"
	"github.com/svc-dev/svc/sinks/spool"
)

// Node is one running svc node.
type Node struct {
	cfg Config
	log *slog.Logger

	db     *badger.DB
	Spool  *spool.Spool
	Dir    *actors.LocalDirectory
	Ingest *actors.Ingest // the request path of PUT /events below HTTP
	Keys   *ingest.Keys
	Events sinks.EventStore
	// Analytics is the event store's dashboard queries (the same store as Events).
	Analytics sinks.Analytics
	Meta      sinks.MetaStore
	Blobs     sinks.BlobStore
	Actors    *actors.System

	// Backend names, as /readyz and the start-up log show them.
	EventBackend, MetaBackend, BlobBackend string

	public, admin     *http.Server
	publicLn, adminLn net.Listener
	serveDone         chan error
	closers           []func() error
	flusher           *actor.PID
	budget            *ingest.Budget // request body bytes held now
	appsUnknown       actors.AppsUnknown
}

// secrets are generated once per data directory so tokens and upload URLs stay valid across
// restarts when the operator did not set them.
type secrets struct {
	Access  string `json:"access_token_secret"`
	Refresh string `json:"refresh_token_secret"`
	Blob    string `json:"blob_url_secret"`
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// loadOrCreate reads path, or writes it with make()'s content (mode 0600) when missing.
func loadOrCreate(path string, make func() ([]byte, error)) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	b, err = make()
	if err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return b, nil
}

// Start opens the stores (migrating the production ones), starts the actor system and both
// listeners, and returns once they accept connections. On error everything opened is closed.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (_ *Node, err error) {
	// n is not the named result: `return nil, err` must not nil the node that the deferred
	// clean-up and the closers use.
	n := &Node{cfg: cfg, log: log, serveDone: make(chan error, 2)}
	defer func() {
		if err != nil {
			n.closeAll()
		}
	}()
	// Listen first: a port taken is the most common start-up failure, and with --addr :0 the
	// public URL needs the real port. Connections wait in the backlog until serving starts.
	if n.publicLn, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("listen on --addr: %w", err)
	}
	n.closers = append(n.closers, func() error { return ignoreClosed(n.publicLn.Close()) })
	if n.adminLn, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
		return nil, fmt.Errorf("listen on --admin-addr: %w", err)
	}
	n.closers = append(n.closers, func() error { return ignoreClosed(n.adminLn.Close()) })
	if cfg.publicURLDefault {
		cfg.PublicURL = fmt.Sprintf("http://localhost:%d", n.publicLn.Addr().(*net.TCPAddr).Port)
		if cfg.dashboardURLDefault {
			cfg.DashboardURL = cfg.PublicURL
		}
		n.cfg = cfg
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	sb, err := loadOrCreate(filepath.Join(cfg.DataDir, "secrets.json"), func() ([]byte, error) {
		return json.MarshalIndent(secrets{Access: randomHex(32), Refresh: randomHex(32), Blob: randomHex(32)}, "", "  ")
	})
	if err != nil {
		return nil, err
	}
	var sec secrets
	if err := json.Unmarshal(sb, &sec); err != nil || sec.Access == "" || sec.Refresh == "" || sec.Blob == "" {
		return nil, fmt.Errorf("%s is damaged; remove it to generate new secrets (signs everyone out)", filepath.Join(cfg.DataDir, "secrets.json"))
	}
	if cfg.AccessTokenSecret != "" {
		sec.Access = cfg.AccessTokenSecret
	}
	if cfg.RefreshTokenSecret != "" {
		sec.Refresh = cfg.RefreshTokenSecret
	}
	adminToken := cfg.AdminToken
	if adminToken == "" {
		tb, err := loadOrCreate(filepath.Join(cfg.DataDir, "admin.token"), func() ([]byte, error) { return []byte(randomHex(24) + "\n"), nil })
		if err != nil {
			return nil, err
		}
		adminToken = strings.TrimSpace(string(tb))
	}

	n.db, err = badgerdb.Open(filepath.Join(cfg.DataDir, "badger"), log)
	if err != nil {
		return nil, err
	}
	n.closers = append(n.closers, n.db.Close)
	local, err := badgerdb.OpenLocal(filepath.Join(cfg.DataDir, "badger-local"), log)
	if err != nil {
		return nil, err
	}
	n.closers = append(n.closers, local.Close)

	eventsUp := true // the event store answers and its schema is current
	if cfg.ClickHouseDSN != "" {
		if eventsUp, err = n.openClickHouse(ctx, cfg, log); err != nil {
			return nil, err
		}
	} else {
		evdb, err := n.eventsDB(cfg.DataDir, log)
		if err != nil {
			return nil, err
		}
		n.Events, n.EventBackend = badgerevents.New(evdb), "badger"
	}
	n.closers = append(n.closers, n.Events.Close)
	n.Analytics, _ = n.Events.(sinks.Analytics)

	if cfg.PostgresDSN != "" {
		if err := n.openPostgres(ctx, cfg, log); err != nil {
			return nil, err
		}
	} else {
		n.Meta, n.MetaBackend = badgermeta.New(n.db), "badger"
	}
	n.closers = append(n.closers, n.Meta.Close)

	var blobHandler http.Handler
	if cfg.S3Endpoint != "" {
		st, err := s3blob.New(ctx, s3blob.Config{Endpoint: cfg.S3Endpoint, Region: cfg.S3Region, Bucket: cfg.S3Bucket,
			AccessKey: cfg.S3AccessKey, SecretKey: cfg.S3SecretKey, UseSSL: cfg.S3UseSSL, PublicEndpoint: cfg.S3PublicEndpoint})
		if err != nil {
			return nil, fmt.Errorf("open s3: %w", err)
		}
		n.Blobs, n.BlobBackend = st, "s3"
	} else {
		st, err := localblob.New(filepath.Join(cfg.DataDir, "blobs"), cfg.PublicURL, []byte(sec.Blob),
			localblob.WithMaxUpload(max(cfg.MaxMappingBytes, localblob.DefaultMaxUpload)))
		if err != nil {
			return nil, fmt.Errorf("open blob dir: %w", err)
		}
		n.Blobs, n.BlobBackend, blobHandler = st, "localdisk", st.Handler()
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// Ingest pipeline: spool → actors → flusher → event store.
	sp, recs, err := spool.Open(filepath.Join(cfg.DataDir, "spool"), spool.Options{})
	if err != nil {
		return nil, err
	}
	n.Spool = sp
	n.closers = append(n.closers, sp.Close)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svc_spool_pending_bytes",
		Help: "Bytes of accepted batches not yet in the event store."}, func() float64 { return float64(sp.PendingBytes()) }))
	// The alerter outlives the actors (its closer runs after theirs) so it stores what they raise.
	var alerts actors.AlertSink
	if as, ok := n.Meta.(sinks.Alerts); ok {
		al := newAlerter(n.Meta, as, cfg.DashboardURL, log)
		n.closers = append(n.closers, al.Close)
		alerts = al
	}
	n.Actors = actors.NewSystem(log)
	n.closers = append(n.closers, func() error { n.Actors.Shutdown(); return nil })
	n.flusher = n.Actors.AS.Root.Spawn(actors.NewFlusher(n.Events, sp,
		actors.FlushOptions{MaxRows: cfg.FlushRows, MaxBytes: cfg.SpoolMaxBytes / 4, Interval: cfg.FlushInterval, Blobs: n.Blobs},
		actors.NewFlushMetrics(reg), log))
	n.closers = append(n.closers, func() error {
		// Stopping flushes what the flusher holds; what fails stays in the spool for the next start.
		return n.Actors.AS.Root.PoisonFuture(n.flusher).Wait()
	})
	snaps := badgerdb.Snapshots{DB: local}
	n.Dir = actors.NewLocalDirectory(n.Actors, map[actors.Kind]actors.Producer{
		actors.KindApp:     actors.AppProducerAlerting(n.Analytics, log, &n.appsUnknown, alerts, nil),
		actors.KindSession: actors.SessionProducer(func() actors.Directory { return n.Dir }, snaps, cfg.SessionIdle, log),
	})
	n.closers = append(n.closers, func() error { n.Dir.StopAll(10 * time.Second); return nil })
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svc_session_actors",
		Help: "Live session actors."}, func() float64 { return float64(n.Dir.Count(actors.KindSession)) }))
	n.Keys = &ingest.Keys{Meta: n.Meta, TTL: cfg.KeyCacheTTL, StaleFor: cfg.KeyStaleFor, Log: log, Saved: keycache.New(local)}
	budget := ingest.NewBudget(cfg.MaxInflightBytes)
	n.budget = budget
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svc_ingest_inflight_body_bytes",
		Help: "Request body bytes PUT /events holds in memory now (bounded by --max-inflight-bytes)."}, func() float64 { return float64(budget.Used()) }))
	onboard := &sinks.Onboarder{Log: log}
	if o, ok := n.Meta.(sinks.Onboarding); ok {
		onboard.Store = o
	}
	n.closers = append(n.closers, onboard.Close) // before the metadata store closes
	nodeID, err := loadOrCreate(filepath.Join(cfg.DataDir, "node.id"), func() ([]byte, error) { return []byte(randomHex(8) + "\n"), nil })
	if err != nil {
		return nil, err
	}
	n.Ingest = &actors.Ingest{Dir: n.Dir, Root: n.Actors.AS.Root, Flusher: n.flusher, Gate: gate.New(local, 0), Spool: sp,
		Node: strings.TrimSpace(string(nodeID)), Stages: actors.NewStageMetrics(reg), Log: log}
	events := &ingest.Events{Blobs: n.Blobs, Ingest: n.Ingest, Budget: budget, Onboard: onboard,
		MaxEventAge: cfg.MaxEventAge, MaxEventFuture: cfg.MaxEventFuture, Log: log,
		MaxJSONBytes: cfg.MaxJSONBytes, MaxMultipartBytes: cfg.MaxMultipartBytes,
		MaxPendingBytes: cfg.SpoolMaxBytes, UploadTTL: cfg.UploadURLTTL,
		// A spool over its bound drains within a second or two of the event store's return.
		RetryAfter: httpx.RetryAfterUnavailable}
	if len(recs) > 0 {
		ne, ns, err := events.Replay(ctx, recs)
		if err != nil {
			return nil, err
		}
		log.Info("spool replayed", "records", len(recs), "events", ne, "spans", ns)
	}
	if err := n.rebuildApps(ctx, len(recs) > 0, eventsUp, log); err != nil {
		return nil, err
	}
	ingestLimit := httprate.Limit(cfg.IngestRatePerMin, time.Minute,
		httprate.WithKeyFuncs(func(r *http.Request) (string, error) { return ingest.AppFrom(r.Context()).ID.String(), nil }),
		httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
			httpx.Error(w, http.StatusTooManyRequests, "this app sends requests faster than its limit; retry after the time in Retry-After")
		}))
	tokens := &auth.Issuer{AccessSecret: []byte(sec.Access), RefreshSecret: []byte(sec.Refresh),
		AccessTTL: cfg.AccessTokenTTL, RefreshTTL: cfg.RefreshTokenTTL}

	checks := []ops.Check{
		{Name: n.EventBackend + " (events)", Ping: n.Events.Ping},
		{Name: n.MetaBackend + " (metadata)", Ping: n.Meta.Ping},
		{Name: n.BlobBackend + " (blobs)", Ping: n.Blobs.Ping},
	}
	pub := chi.NewRouter()
	pub.Use(middleware.RequestID, httpx.NewMetrics(reg, "public").Middleware(log), httpx.Recoverer(log),
		httpx.BodyDeadlines(cfg.BodyIdleTimeout, cfg.BodyTimeout))
	pub.Get("/healthz", ops.Healthz)
	pub.Get("/readyz", ops.Readyz(checks, 3*time.Second, log))
	apidoc.Mount(pub) // GET /openapi.json, /docs, /docs/*: the API reference, no credentials
	if blobHandler != nil {
		pub.Handle("/blobs/*", blobHandler)
	}
	pub.Group(func(r chi.Router) {
		r.Use(n.Keys.Middleware, ingestLimit)
		r.Method(http.MethodPut, "/events", events)
		r.Method(http.MethodPut, "/builds", &ingest.Builds{Meta: n.Meta, Blobs: n.Blobs, MaxMappingBytes: cfg.MaxMappingBytes, UploadTTL: cfg.UploadURLTTL})
		r.Method(http.MethodGet, "/config", &ingest.Config{Meta: n.Meta})
	})
	// The state of a two-step sign-in lives on this node: its init and its code must reach it.
	providers := dashboard.Providers{States: &signin.States{}}
	if cfg.GitHubClientID != "" {
		providers.GitHub = &signin.GitHub{ClientID: cfg.GitHubClientID, ClientSecret: cfg.GitHubClientSecret,
			OAuthURL: cfg.GitHubOAuthURL, APIURL: cfg.GitHubAPIURL}
	}
	if cfg.OIDCClientID != "" {
		providers.OIDC = &signin.OIDC{Issuer: cfg.OIDCIssuer, ClientID: cfg.OIDCClientID, ClientSecret: cfg.OIDCClientSecret,
			RedirectURL: cfg.DashboardURL + "/auth/callback/google"}
	}
	(&dashboard.API{Meta: n.Meta, Events: n.Events, Analytics: n.Analytics, Spans: spansOf(n.Events), Live: actors.Live{Dir: n.Dir}, Blobs: n.Blobs, Tokens: tokens, SignIn: providers, Keys: n.Keys,
		HTTPClient: &http.Client{Timeout: 15 * time.Second}, Log: log,
		RatePerUser: cfg.RateLimitUser, RateSignInIP: cfg.RateLimitSignIn, RequestTimeout: cfg.RequestTimeout,
		SecureCookies: strings.HasPrefix(cfg.PublicURL, "https://")}).Routes(pub)
	pub.NotFound(func(w http.ResponseWriter, r *http.Request) {
		httpx.Error(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
	pub.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		httpx.Error(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
	})

	adminAPI := &admin.API{Token: adminToken, Meta: n.Meta, Tokens: tokens, Actors: n.Dir}
	adm := chi.NewRouter()
	// Every path of the admin listener needs the admin token: profiles and metrics tell an
	// attacker as much as the operator API lets one do.
	adm.Use(middleware.RequestID, httpx.NewMetrics(reg, "admin").Middleware(log), httpx.Recoverer(log), adminAPI.RequireToken,
		httpx.BodyDeadlines(cfg.BodyIdleTimeout, cfg.BodyTimeout))
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	adm.Handle("/metrics", metrics)
	if cfg.MetricsPublic {
		pub.Method(http.MethodGet, "/metrics", metrics)
	}
	admin.Profiles(adm, RedactArgs)
	adm.Get("/healthz", ops.Healthz)
	adminAPI.Routes(adm)
	adm.NotFound(func(w http.ResponseWriter, r *http.Request) {
		httpx.Error(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})

	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	n.public = &http.Server{Handler: pub, ReadHeaderTimeout: cfg.ReadHeaderTimeout, IdleTimeout: cfg.IdleTimeout, ErrorLog: errLog}
	n.admin = &http.Server{Handler: adm, ReadHeaderTimeout: cfg.ReadHeaderTimeout, IdleTimeout: cfg.IdleTimeout, ErrorLog: errLog}
	jctx, stopJanitor := context.WithCancel(context.Background())
	janitorDone := make(chan struct{})
	go func() { defer close(janitorDone); n.janitor(jctx, cfg.JanitorInterval) }()
	n.closers = append(n.closers, func() error { stopJanitor(); <-janitorDone; return nil })
	mctx, stopMemory := context.WithCancel(context.Background())
	memoryDone := make(chan struct{})
	go func() { defer close(memoryDone); returnIdleMemory(mctx, idleMemoryPeriod, log) }()
	n.closers = append(n.closers, func() error { stopMemory(); <-memoryDone; return nil })
	go func() { n.serveDone <- n.public.Serve(httpx.JSONErrorListener(n.publicLn)) }()
	go func() { n.serveDone <- n.admin.Serve(httpx.JSONErrorListener(n.adminLn)) }()

	log.Info("svc listening",
		"addr", n.publicLn.Addr().String(), "admin_addr", n.adminLn.Addr().String(), "public_url", cfg.PublicURL,
		"events", n.EventBackend, "metadata", n.MetaBackend, "blobs", n.BlobBackend, "data_dir", cfg.DataDir)
	return n, nil
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Addr is the public listener's address (useful with --addr :0).
func (n *Node) Addr() string { return n.publicLn.Addr().String() }

// AdminAddr is the admin listener's address.
func (n *Node) AdminAddr() string { return n.adminLn.Addr().String() }

// Done receives the error of a listener that stopped serving on its own.
func (n *Node) Done() <-chan error { return n.serveDone }

// Shutdown stops accepting requests, waits for those in flight, flushes what the node holds and
// closes the stores, in that order, within ctx.
func (n *Node) Shutdown(ctx context.Context) error {
	var errs []error
	if err := n.public.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("public listener: %w", err))
	}
	if err := n.admin.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("admin listener: %w", err))
	}
	errs = append(errs, n.closeAll())
	return errors.Join(errs...)
}

// openClickHouse opens the ClickHouse event store and applies its migrations. When ClickHouse
// does not answer, the node starts all the same: the store refuses every call as unavailable
// (ingest goes on into the spool, dashboard queries answer 503) while a background loop applies
// the migrations as soon as ClickHouse answers; up says whether it did at start. A migration
// that fails on a server that answers stops the start.
func (n *Node) openClickHouse(ctx context.Context, cfg Config, log *slog.Logger) (up bool, err error) {
	st, err := chstore.New(cfg.ClickHouseDSN, chstore.Options{Timeout: cfg.EventTimeout, QueryTimeout: cfg.EventQueryTimeout})
	if err != nil {
		return false, fmt.Errorf("open clickhouse: %w", err)
	}
	n.Events, n.EventBackend = st, "clickhouse"
	pctx, cancel := context.WithTimeout(ctx, cfg.EventTimeout)
	err = st.Conn().Ping(pctx) // the store's own Ping refuses until migrated
	cancel()
	if err == nil {
		if err := st.MigrateOnce(ctx); err != nil {
			return false, fmt.Errorf("migrate clickhouse: %w", err)
		}
		return true, nil
	}
	log.Warn("clickhouse does not answer; starting without the event store (ingest goes to the spool, "+
		"dashboard queries answer 503) and migrating once it answers", "error", err.Error())
	mctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // ends once migrated, or when the node closes
		defer close(done)
		_ = st.MigrateUntilDone(mctx, time.Second, log)
	}()
	n.closers = append(n.closers, func() error { stop(); <-done; return nil })
	return false, nil
}

// openPostgres opens the PostgreSQL metadata store and applies its migrations. When PostgreSQL
// does not answer, the node starts all the same: metadata calls fail as unavailable (ingest
// serves the API keys it saved, dashboard requests answer 503) while a background loop applies
// the migrations as soon as it answers. A migration that fails on a server that answers stops
// the start.
func (n *Node) openPostgres(ctx context.Context, cfg Config, log *slog.Logger) error {
	st, err := pgstore.New(cfg.PostgresDSN, pgstore.Options{CallTimeout: cfg.MetaTimeout})
	if err != nil {
		return fmt.Errorf("open postgres: %w", err)
	}
	n.Meta, n.MetaBackend = st, "postgres"
	err = st.Ping(ctx)
	if err == nil {
		if err := pgstore.Migrate(ctx, cfg.PostgresDSN); err != nil {
			return fmt.Errorf("migrate postgres: %w", err)
		}
		return nil
	}
	log.Warn("postgres does not answer; starting without the metadata store (ingest serves the API keys it "+
		"saved, dashboard requests answer 503) and migrating once it answers", "error", err.Error())
	mctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // ends once migrated, or when the node closes
		defer close(done)
		_ = pgstore.MigrateUntilDone(mctx, cfg.PostgresDSN, time.Second, log)
	}()
	n.closers = append(n.closers, func() error { stop(); <-done; return nil })
	return nil
}

// closeAll closes what Start opened, last opened first.
func (n *Node) closeAll() error {
	var errs []error
	for i := len(n.closers) - 1; i >= 0; i-- {
		if err := n.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	n.closers = nil
	return errors.Join(errs...)
}
