package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
	"github.com/svc-dev/svc/sinks/gate"
	"github.com/svc-dev/svc/sinks/keycache"
	"github.com/svc-dev/svc/sinks/localblob"
	"github.com/svc-dev/svc/sinks/s3blob"
	"github.com/svc-dev/svc/sinks/spool"
)

// component is one part of a node, in the manner of Tempo's modules: its name, the components
// it needs started before it, and how it starts. start keeps what it made in the Node and
// appends a closer for what it opened (closers run last opened first). when, if set, says
// whether the node runs it at all.
type component struct {
	name  string
	deps  []string
	when  func(*Config) bool
	start func(n *Node, ctx context.Context) error
}

// components is what a node runs. Start runs them in an order that respects deps
// (startOrder); listing them here is the node at a glance.
var components = []component{
	{name: "listeners", start: (*Node).startListeners},
	{name: "secrets", deps: []string{"listeners"}, start: (*Node).startSecrets},
	{name: "local-db", deps: []string{"secrets"}, start: (*Node).startLocalDB},
	{name: "metrics", start: (*Node).startMetrics},
	{name: "event-store", deps: []string{"local-db"}, start: (*Node).startEventStore},
	{name: "meta-store", deps: []string{"local-db"}, start: (*Node).startMetaStore},
	{name: "blob-store", deps: []string{"secrets", "local-db"}, start: (*Node).startBlobStore},
	{name: "spool", deps: []string{"metrics", "secrets"}, start: (*Node).startSpool},
	{name: "alerter", deps: []string{"meta-store"}, start: (*Node).startAlerter},
	{name: "actors", deps: []string{"event-store", "blob-store", "spool", "alerter", "local-db", "metrics"}, start: (*Node).startActors},
	{name: "ingest", deps: []string{"actors", "meta-store", "blob-store", "spool", "local-db"}, start: (*Node).startIngest},
	{name: "replay", deps: []string{"ingest"}, start: (*Node).startReplay},
	{name: "rebuild", deps: []string{"replay", "meta-store"}, start: (*Node).startRebuild},
	{name: "public-http", deps: []string{"ingest", "rebuild", "secrets"}, start: (*Node).startPublicHTTP},
	{name: "admin-http", deps: []string{"public-http"}, start: (*Node).startAdminHTTP},
	{name: "background", deps: []string{"meta-store", "event-store"}, start: (*Node).startBackground},
	{name: "serve", deps: []string{"public-http", "admin-http", "background"}, start: (*Node).startServing},
}

// startOrder sorts components so that each comes after its deps, keeping the listed order
// where deps allow it; it refuses an unknown dep or a cycle.
func startOrder(cs []component) ([]component, error) {
	byName := map[string]int{}
	for i, c := range cs {
		if _, dup := byName[c.name]; dup {
			return nil, fmt.Errorf("node component %q listed twice", c.name)
		}
		byName[c.name] = i
	}
	for _, c := range cs {
		for _, d := range c.deps {
			if _, ok := byName[d]; !ok {
				return nil, fmt.Errorf("node component %q needs %q, which does not exist", c.name, d)
			}
		}
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(cs))
	var out []component
	var visit func(i int, path []string) error
	visit = func(i int, path []string) error {
		switch state[i] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("node components depend on each other in a cycle: %s", strings.Join(append(path, cs[i].name), " → "))
		}
		state[i] = visiting
		for _, d := range cs[i].deps {
			if err := visit(byName[d], append(path, cs[i].name)); err != nil {
				return err
			}
		}
		state[i] = done
		out = append(out, cs[i])
		return nil
	}
	for i := range cs {
		if err := visit(i, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// startListeners listens first: a port taken is the most common start-up failure, and with
// --addr :0 the public URL needs the real port. Connections wait in the backlog until serving
// starts.
func (n *Node) startListeners(context.Context) error {
	var err error
	if n.publicLn, err = net.Listen("tcp", n.cfg.Addr); err != nil {
		return fmt.Errorf("listen on --addr: %w", err)
	}
	n.closers = append(n.closers, func() error { return ignoreClosed(n.publicLn.Close()) })
	if n.adminLn, err = net.Listen("tcp", n.cfg.AdminAddr); err != nil {
		return fmt.Errorf("listen on --admin-addr: %w", err)
	}
	n.closers = append(n.closers, func() error { return ignoreClosed(n.adminLn.Close()) })
	if n.cfg.publicURLDefault {
		n.cfg.PublicURL = fmt.Sprintf("http://localhost:%d", n.publicLn.Addr().(*net.TCPAddr).Port)
		if n.cfg.dashboardURLDefault {
			n.cfg.DashboardURL = n.cfg.PublicURL
		}
	}
	return nil
}

// startSecrets reads the token, blob URL and admin secrets: the configured ones, else those
// generated once into the data directory.
func (n *Node) startSecrets(context.Context) error {
	cfg := &n.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	sb, err := loadOrCreate(filepath.Join(cfg.DataDir, "secrets.json"), func() ([]byte, error) {
		return json.MarshalIndent(secrets{Access: randomHex(32), Refresh: randomHex(32), Blob: randomHex(32)}, "", "  ")
	})
	if err != nil {
		return err
	}
	var sec secrets
	if err := json.Unmarshal(sb, &sec); err != nil || sec.Access == "" || sec.Refresh == "" || sec.Blob == "" {
		return fmt.Errorf("%s is damaged; remove it to generate new secrets (signs everyone out)", filepath.Join(cfg.DataDir, "secrets.json"))
	}
	if cfg.AccessTokenSecret != "" {
		sec.Access = cfg.AccessTokenSecret
	}
	if cfg.RefreshTokenSecret != "" {
		sec.Refresh = cfg.RefreshTokenSecret
	}
	n.sec = sec
	n.adminToken = cfg.AdminToken
	if n.adminToken == "" {
		tb, err := loadOrCreate(filepath.Join(cfg.DataDir, "admin.token"), func() ([]byte, error) { return []byte(randomHex(24) + "\n"), nil })
		if err != nil {
			return err
		}
		n.adminToken = strings.TrimSpace(string(tb))
	}
	return nil
}

// startLocalDB opens the data directory's Badger databases: the main one (embedded metadata)
// and the node's own (gate, key cache, snapshots).
func (n *Node) startLocalDB(context.Context) error {
	var err error
	n.db, err = badgerdb.Open(filepath.Join(n.cfg.DataDir, "badger"), n.log)
	if err != nil {
		return err
	}
	n.closers = append(n.closers, n.db.Close)
	n.local, err = badgerdb.OpenLocal(filepath.Join(n.cfg.DataDir, "badger-local"), n.log)
	if err != nil {
		return err
	}
	n.closers = append(n.closers, n.local.Close)
	n.badgers = append(n.badgers, n.db, n.local)
	return nil
}

func (n *Node) startMetrics(context.Context) error {
	n.reg = prometheus.NewRegistry()
	// The scheduler's metrics add go_sched_latencies_seconds: how long goroutines wait for a
	// CPU once ready to run, what a slow answer on a busy node waits for.
	n.reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsScheduler)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return nil
}

// startEventStore opens ClickHouse when configured, else the embedded event store.
func (n *Node) startEventStore(ctx context.Context) error {
	n.eventsUp = true // the event store answers and its schema is current
	if n.cfg.ClickHouseDSN != "" {
		var err error
		if n.eventsUp, err = n.openClickHouse(ctx, n.cfg, n.log); err != nil {
			return err
		}
	} else {
		evdb, err := n.eventsDB(n.cfg.DataDir, n.log)
		if err != nil {
			return err
		}
		// Open builds the issue index of a store written before it, once, here rather than
		// in a user's first group list.
		store, err := badgerevents.Open(ctx, evdb)
		if err != nil {
			return err
		}
		store.SetLogger(n.log)
		switch {
		case n.cfg.EventBlocks:
			if err := store.UseBlocks(); err != nil {
				return err
			}
		case store.UsesBlocks():
			n.log.Warn("--event-blocks=false ignored: this event store has written rows in blocks and goes on doing so (docs/event-blocks.md)")
		}
		n.Events, n.EventBackend = store, "badger"
	}
	n.closers = append(n.closers, n.Events.Close)
	n.Analytics, _ = n.Events.(sinks.Analytics)
	return nil
}

// startMetaStore opens PostgreSQL when configured, else the embedded metadata store.
func (n *Node) startMetaStore(ctx context.Context) error {
	if n.cfg.PostgresDSN != "" {
		if err := n.openPostgres(ctx, n.cfg, n.log); err != nil {
			return err
		}
	} else {
		n.Meta, n.MetaBackend = badgermeta.New(n.db), "badger"
	}
	n.closers = append(n.closers, n.Meta.Close)
	return nil
}

// smallBlobMax is the largest inline attachment the local blob store keeps in the node's
// Badger database instead of a file (localblob.WithSmallBlobs); the recorded SDK traffic's are
// about 12 KiB.
const smallBlobMax = 64 << 10

// startBlobStore opens S3 when configured, else the local blob directory with its signed
// upload and download routes.
func (n *Node) startBlobStore(ctx context.Context) error {
	cfg := &n.cfg
	if cfg.S3Endpoint != "" {
		st, err := s3blob.New(ctx, s3blob.Config{Endpoint: cfg.S3Endpoint, Region: cfg.S3Region, Bucket: cfg.S3Bucket,
			AccessKey: cfg.S3AccessKey, SecretKey: cfg.S3SecretKey, UseSSL: cfg.S3UseSSL, PublicEndpoint: cfg.S3PublicEndpoint})
		if err != nil {
			return fmt.Errorf("open s3: %w", err)
		}
		n.Blobs, n.BlobBackend = st, "s3"
		return nil
	}
	st, err := localblob.New(filepath.Join(cfg.DataDir, "blobs"), cfg.PublicURL, []byte(n.sec.Blob),
		localblob.WithMaxUpload(max(cfg.MaxMappingBytes, localblob.DefaultMaxUpload)),
		localblob.WithSmallBlobs(n.db, smallBlobMax))
	if err != nil {
		return fmt.Errorf("open blob dir: %w", err)
	}
	n.Blobs, n.BlobBackend, n.blobHandler = st, "localdisk", st.Handler()
	return nil
}

// startSpool opens the write-ahead spool; the records it holds are replayed by "replay".
func (n *Node) startSpool(context.Context) error {
	dir, minSeq, err := spoolDir(n.cfg.DataDir, n.cfg.SpoolDir)
	if err != nil {
		return err
	}
	sp, recs, err := spool.Open(dir, spool.Options{MinSeq: minSeq})
	if err != nil {
		return err
	}
	if minSeq > 0 { // moved
		if err := rememberSpoolDir(n.cfg.DataDir, dir); err != nil {
			sp.Close()
			return err
		}
	}
	n.Spool, n.recs = sp, recs
	n.closers = append(n.closers, sp.Close)
	n.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svc_spool_pending_bytes",
		Help: "Bytes of accepted batches not yet in the event store."}, func() float64 { return float64(sp.PendingBytes()) }))
	return nil
}

// gateFirst acknowledges spool records only once the request gate has written the ids it
// accepted so far: a record dropped before its id is written would leave a crash nothing to
// mark the id again from, and a retry would be processed twice.
type gateFirst struct {
	sp *spool.Spool
	g  *gate.Local
}

func (a gateFirst) Ack(seq uint64, bodyLen int) {
	a.g.Sync()
	a.sp.Ack(seq, bodyLen)
}

// spoolPathFile, in the data directory, names the spool directory the node last used, so that
// a start with another --spool-dir cannot leave acknowledged batches behind unreplayed.
const spoolPathFile = "spool.path"

// spoolDir resolves the spool directory (flag, else <data-dir>/spool) and what the spool must
// start numbering from. It refuses a start that would move away from a spool still holding
// records: those batches were acknowledged to SDKs and only that directory's replay stores
// them. Moving to a new directory carries the old one's sequence numbers on (they must never
// repeat: replayed batches are told apart by them). minSeq is 0 unless the directory moved;
// then the caller records the new one (rememberSpoolDir) once the spool is open there, which
// makes that floor durable.
func spoolDir(dataDir, flag string) (dir string, minSeq uint64, err error) {
	dir = flag
	if dir == "" {
		dir = filepath.Join(dataDir, "spool")
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", 0, fmt.Errorf("spool dir: %w", err)
	}
	last := filepath.Join(dataDir, "spool") // nodes before --spool-dir kept it there
	if b, err := os.ReadFile(filepath.Join(dataDir, spoolPathFile)); err == nil {
		if p := strings.TrimSpace(string(b)); p != "" {
			last = p
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", 0, fmt.Errorf("spool dir: %w", err)
	}
	if last, err = filepath.Abs(last); err != nil {
		return "", 0, fmt.Errorf("spool dir: %w", err)
	}
	if sameDir(last, dir) {
		return dir, 0, nil
	}
	n, next, err := spool.Contents(last)
	if err != nil {
		return "", 0, err
	}
	if n > 0 {
		return "", 0, fmt.Errorf("the spool this node used last, %s, still holds %d acknowledged batch(es) "+
			"not known to be stored; start once with --spool-dir %s so they are replayed (or move its files into %s while the node is stopped)",
			last, n, last, dir)
	}
	return dir, next, nil // next is at least 1
}

// rememberSpoolDir records dir as the spool directory the node used last.
func rememberSpoolDir(dataDir, dir string) error {
	return spool.WriteFileSync(filepath.Join(dataDir, spoolPathFile), []byte(dir+"\n"))
}

// sameDir says whether a and b name one directory: the same path, or (through symlinks or
// mounts) the same file.
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// startAlerter starts what stores and sends the alerts app actors raise. It outlives the
// actors (its closer runs after theirs) so it stores what they raise while stopping.
func (n *Node) startAlerter(context.Context) error {
	if as, ok := n.Meta.(sinks.Alerts); ok {
		al := newAlerter(n.Meta, as, n.cfg.DashboardURL, n.log)
		n.closers = append(n.closers, al.Close)
		n.alerts = al
	}
	return nil
}

// startActors starts the actor system, the flusher (rows to the event store) and the directory
// of app and session actors.
func (n *Node) startActors(context.Context) error {
	cfg, log := &n.cfg, n.log
	// The node's own request gate writes accepted ids behind the requests; the flusher drops
	// spool records only once those are written (gateFirst). Its closer runs after the
	// flusher's, whose last flush acknowledges records too.
	n.localGate = gate.New(n.local, 0)
	n.localGate.Log = log
	n.closers = append(n.closers, n.localGate.Close)
	n.Actors = actors.NewSystem(log)
	n.closers = append(n.closers, func() error { n.Actors.Shutdown(); return nil })
	n.flusher = n.Actors.AS.Root.Spawn(actors.NewFlusher(n.Events, gateFirst{n.Spool, n.localGate},
		actors.FlushOptions{MaxRows: cfg.FlushRows, MaxBytes: cfg.SpoolMaxBytes / 4, Interval: cfg.FlushInterval, Blobs: n.Blobs},
		actors.NewFlushMetrics(n.reg), log))
	n.closers = append(n.closers, func() error {
		// Stopping flushes what the flusher holds; what fails stays in the spool for the next start.
		return n.Actors.AS.Root.PoisonFuture(n.flusher).Wait()
	})
	if cfg.Clustered() {
		if err := n.startClusterDirectory(); err != nil {
			return err
		}
	} else {
		snaps, err := badgerdb.NewSnapshots(n.local)
		if err != nil {
			return err
		}
		dir := actors.NewLocalDirectory(n.Actors, map[actors.Kind]actors.Producer{
			actors.KindApp:     actors.AppProducerAlerting(n.Analytics, log, &n.appsUnknown, n.alerts, nil),
			actors.KindSession: actors.SessionProducer(func() actors.Directory { return n.Dir }, snaps, cfg.SessionIdle, log),
		})
		n.Dir = dir
		n.closers = append(n.closers, func() error { dir.StopAll(10 * time.Second); return nil })
	}
	n.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svc_session_actors",
		Help: "Live session actors."}, func() float64 { return float64(n.Dir.Count(actors.KindSession)) }))
	return nil
}

// startIngest builds the request path of PUT /events: the API key check, the body budget,
// onboarding, and the ingest component below HTTP (gate, session order, spool, actors).
func (n *Node) startIngest(ctx context.Context) error {
	cfg, log := &n.cfg, n.log
	n.Keys = &ingest.Keys{Meta: n.Meta, TTL: cfg.KeyCacheTTL, StaleFor: cfg.KeyStaleFor, Log: log, Saved: keycache.New(n.local)}
	n.budget = ingest.NewBudget(cfg.MaxInflightBytes)
	n.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svc_ingest_inflight_body_bytes",
		Help: "Request body bytes PUT /events holds in memory now (bounded by --max-inflight-bytes)."}, func() float64 { return float64(n.budget.Used()) }))
	onboard := &sinks.Onboarder{Log: log}
	if o, ok := n.Meta.(sinks.Onboarding); ok {
		onboard.Store = o
	}
	n.closers = append(n.closers, onboard.Close) // before the metadata store closes
	nodeID, err := loadOrCreate(filepath.Join(cfg.DataDir, "node.id"), func() ([]byte, error) { return []byte(randomHex(8) + "\n"), nil })
	if err != nil {
		return err
	}
	id := strings.TrimSpace(string(nodeID))
	n.Ingest = &actors.Ingest{Dir: n.Dir, Root: n.Actors.AS.Root, Flusher: n.flusher, Gate: n.requestGate(ctx, id), Spool: n.Spool,
		Node: id, Stages: actors.NewStageMetrics(n.reg), Log: log}
	n.events = &ingest.Events{Blobs: n.Blobs, Ingest: n.Ingest, Budget: n.budget, Onboard: onboard,
		MaxEventAge: cfg.MaxEventAge, MaxEventFuture: cfg.MaxEventFuture, Log: log,
		MaxJSONBytes: cfg.MaxJSONBytes, MaxMultipartBytes: cfg.MaxMultipartBytes,
		MaxPendingBytes: cfg.SpoolMaxBytes, UploadTTL: cfg.UploadURLTTL,
		// A spool over its bound drains within a second or two of the event store's return.
		RetryAfter: httpx.RetryAfterUnavailable}
	return nil
}

// startReplay hands the spool's records found at start to the ingest path again.
func (n *Node) startReplay(ctx context.Context) error {
	if len(n.recs) == 0 {
		return nil
	}
	ne, ns, err := n.events.Replay(ctx, n.recs)
	if err != nil {
		return err
	}
	n.log.Info("spool replayed", "records", len(n.recs), "events", ne, "spans", ns)
	return nil
}

// startRebuild gives the app actors their aggregates from the event store (rebuild.go). In a
// cluster each app actor settles by itself wherever it is activated (actors.Settle).
func (n *Node) startRebuild(ctx context.Context) error {
	replayed := len(n.recs) > 0
	n.recs = nil // replayed: the records' memory is not needed any more
	if n.cluster != nil {
		return nil
	}
	return n.rebuildApps(ctx, replayed, n.eventsUp, n.log)
}

// startPublicHTTP builds the public listener's routes: health, API docs, uploads, the SDK API
// and the dashboard API.
func (n *Node) startPublicHTTP(context.Context) error {
	cfg, log := &n.cfg, n.log
	ingestLimit := httprate.Limit(cfg.IngestRatePerMin, time.Minute,
		httprate.WithKeyFuncs(func(r *http.Request) (string, error) { return ingest.AppFrom(r.Context()).ID.String(), nil }),
		httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
			httpx.Error(w, http.StatusTooManyRequests, "this app sends requests faster than its limit; retry after the time in Retry-After")
		}))
	n.tokens = &auth.Issuer{AccessSecret: []byte(n.sec.Access), RefreshSecret: []byte(n.sec.Refresh),
		AccessTTL: cfg.AccessTokenTTL, RefreshTTL: cfg.RefreshTokenTTL}

	checks := []ops.Check{
		{Name: n.EventBackend + " (events)", Ping: n.Events.Ping},
		{Name: n.MetaBackend + " (metadata)", Ping: n.Meta.Ping},
		{Name: n.BlobBackend + " (blobs)", Ping: n.Blobs.Ping},
	}
	pub := chi.NewRouter()
	n.pub = pub
	pub.Use(middleware.RequestID, httpx.NewMetrics(n.reg, "public").Middleware(log), httpx.Recoverer(log),
		httpx.BodyDeadlines(cfg.BodyIdleTimeout, cfg.BodyTimeout))
	pub.Get("/healthz", ops.Healthz)
	pub.Get("/readyz", ops.Readyz(checks, 3*time.Second, log))
	apidoc.Mount(pub) // GET /openapi.json, /docs, /docs/*: the API reference, no credentials
	if n.blobHandler != nil {
		pub.Handle("/blobs/*", n.blobHandler)
	}
	pub.Group(func(r chi.Router) {
		r.Use(n.Keys.Middleware, ingestLimit)
		r.Method(http.MethodPut, "/events", n.events)
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
	api := &dashboard.API{Meta: n.Meta, Events: n.Events, Analytics: n.Analytics, Spans: spansOf(n.Events), Live: actors.Live{Dir: n.Dir}, Blobs: n.Blobs, Tokens: n.tokens, SignIn: providers, Keys: n.Keys,
		HTTPClient: &http.Client{Timeout: 15 * time.Second}, Log: log,
		RatePerUser: cfg.RateLimitUser, RateSignInIP: cfg.RateLimitSignIn, RequestTimeout: cfg.RequestTimeout,
		SecureCookies: strings.HasPrefix(cfg.PublicURL, "https://")}
	if al, ok := n.alerts.(*alerter); ok {
		api.OnThresholds = al.setPrefs
	}
	api.Routes(pub)
	pub.NotFound(func(w http.ResponseWriter, r *http.Request) {
		httpx.Error(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
	pub.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		httpx.Error(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
	})
	return nil
}

// startAdminHTTP builds the admin listener's routes: metrics, profiles, the operator API and
// the debug endpoints, all behind the admin token.
func (n *Node) startAdminHTTP(context.Context) error {
	cfg, log := &n.cfg, n.log
	adminAPI := &admin.API{Token: n.adminToken, Meta: n.Meta, Tokens: n.tokens, Actors: n.Dir}
	if n.cluster != nil {
		adminAPI.Cluster = clusterView{n}
	}
	adm := chi.NewRouter()
	n.adm = adm
	// Every path of the admin listener needs the admin token: profiles and metrics tell an
	// attacker as much as the operator API lets one do.
	adm.Use(middleware.RequestID, httpx.NewMetrics(n.reg, "admin").Middleware(log), httpx.Recoverer(log), adminAPI.RequireToken,
		httpx.BodyDeadlines(cfg.BodyIdleTimeout, cfg.BodyTimeout))
	metrics := promhttp.HandlerFor(n.reg, promhttp.HandlerOpts{})
	adm.Handle("/metrics", metrics)
	if cfg.MetricsPublic {
		n.pub.Method(http.MethodGet, "/metrics", metrics)
	}
	admin.Profiles(adm, RedactArgs)
	adm.Get("/healthz", ops.Healthz)
	adminAPI.Routes(adm)
	adm.NotFound(func(w http.ResponseWriter, r *http.Request) {
		httpx.Error(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
	return nil
}

// startBackground starts the node's periodic jobs: the janitor (retention, expired sessions),
// returning idle memory to the system and paging out Badger's logs. All end when the node
// closes.
func (n *Node) startBackground(context.Context) error {
	dirs, err := badgerdb.LogDirs(n.badgers...)
	if err != nil {
		return err
	}
	n.untilClose(func(ctx context.Context) { n.janitor(ctx, n.cfg.JanitorInterval) })
	n.untilClose(func(ctx context.Context) { returnIdleMemory(ctx, idleMemoryPeriod, n.log) })
	n.untilClose(func(ctx context.Context) { pageOutLogs(ctx, logPageOutPeriod, dirs, n.log) })
	return nil
}

// untilClose runs job in a goroutine of its own until the node closes: its context ends then,
// and the node's close waits for job to return.
func (n *Node) untilClose(job func(context.Context)) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); job(ctx) }()
	n.closers = append(n.closers, func() error { stop(); <-done; return nil })
}

// startServing serves both listeners; Done reports a listener that stops on its own.
func (n *Node) startServing(context.Context) error {
	errLog := slog.NewLogLogger(n.log.Handler(), slog.LevelWarn)
	n.public = &http.Server{Handler: n.pub, ReadHeaderTimeout: n.cfg.ReadHeaderTimeout, IdleTimeout: n.cfg.IdleTimeout, ErrorLog: errLog}
	n.admin = &http.Server{Handler: n.adm, ReadHeaderTimeout: n.cfg.ReadHeaderTimeout, IdleTimeout: n.cfg.IdleTimeout, ErrorLog: errLog}
	go func() { n.serveDone <- n.public.Serve(httpx.JSONErrorListener(n.publicLn)) }()
	go func() { n.serveDone <- n.admin.Serve(httpx.JSONErrorListener(n.adminLn)) }()
	return nil
}

// Components lists the node's components in start order with their dependencies, for the
// start-up log and the debug endpoint.
func Components() []string {
	order, _ := startOrder(components)
	out := make([]string, 0, len(order))
	for _, c := range order {
		s := c.name
		if len(c.deps) > 0 {
			deps := slices.Clone(c.deps)
			slices.Sort(deps)
			s += " (after " + strings.Join(deps, ", ") + ")"
		}
		out = append(out, s)
	}
	return out
}
