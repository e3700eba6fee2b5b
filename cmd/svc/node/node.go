package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/dgraph-io/badger/v4"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/cluster"
	"github.com/svc-dev/svc/http/auth"
	"github.com/svc-dev/svc/http/ingest"
	"github.com/svc-dev/svc/sinks"
	chstore "github.com/svc-dev/svc/sinks/clickhouse"
	"github.com/svc-dev/svc/sinks/gate"
	pgstore "github.com/svc-dev/svc/sinks/postgres"
	"github.com/svc-dev/svc/sinks/spool"
)

// Node is one running svc node.
type Node struct {
	cfg Config
	log *slog.Logger

	db     *badger.DB
	Spool  *spool.Spool
	Dir    directory      // app and session actors: this process's, or the cluster's
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
	swept             chan struct{} // closed when the janitor's first round, at start, has ended
	flusher           *actor.PID
	budget            *ingest.Budget // request body bytes held now
	appsUnknown       actors.AppsUnknown

	// What one component hands the next (components.go).
	sec         secrets
	adminToken  string
	local       *badger.DB   // this node's own Badger: gate, caches, snapshots
	badgers     []*badger.DB // every Badger database the node opened, for the janitor's value log collection
	reg         *prometheus.Registry
	eventsUp    bool           // the event store answered and was migrated at start
	recs        []spool.Record // spool records found at start
	alerts      actors.AlertSink
	blobHandler http.Handler // the local blob store's upload and download routes; nil on S3
	events      *ingest.Events
	tokens      *auth.Issuer
	pub, adm    *chi.Mux
	cluster     *cluster.Cluster // nil on a single node
	pg          *pgstore.Store   // the PostgreSQL store, in a cluster
	sharedGate  *pgstore.Gate    // the cluster's request gate (in PostgreSQL)
	localGate   *gate.Local      // the node's request gate, or the cluster gate's cache of it
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

// Start runs the node's components (components.go) in the order of their dependencies, and
// returns once both listeners accept connections. On error everything opened is closed.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (_ *Node, err error) {
	// n is not the named result: `return nil, err` must not nil the node that the deferred
	// clean-up and the closers use.
	n := &Node{cfg: cfg, log: log, serveDone: make(chan error, 2), swept: make(chan struct{})}
	defer func() {
		if err != nil {
			n.closeAll(context.Background())
		}
	}()
	order, err := startOrder(components)
	if err != nil {
		return nil, err
	}
	for _, c := range order {
		if c.when != nil && !c.when(&n.cfg) {
			continue
		}
		if err := c.start(n, ctx); err != nil {
			return nil, err
		}
	}
	log.Debug("node components, in start order", "components", Components())
	log.Info("svc listening",
		"addr", n.publicLn.Addr().String(), "admin_addr", n.adminLn.Addr().String(), "public_url", n.cfg.PublicURL,
		"events", n.EventBackend, "metadata", n.MetaBackend, "blobs", n.BlobBackend, "data_dir", n.cfg.DataDir)
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

// Swept is closed once the janitor's first round, which it starts with the node, has ended
// (on ClickHouse its deletions are then scheduled mutations, applied in the background).
// Until then retention may delete an app's old rows at any moment; a test that sends data from
// beyond an app's retention (accepted under a wider --max-event-age) waits for it first, since
// the next round is --janitor-interval away.
func (n *Node) Swept() <-chan struct{} { return n.swept }

// Shutdown stops accepting requests, waits for those in flight, flushes what the node holds and
// closes the stores, in that order, within ctx. When ctx ends first, what is still closing is
// left as a crash would leave it (closeAll).
func (n *Node) Shutdown(ctx context.Context) error {
	var errs []error
	if err := n.public.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("public listener: %w", err))
	}
	if err := n.admin.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("admin listener: %w", err))
	}
	errs = append(errs, n.closeAll(ctx))
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
	st, err := pgstore.New(cfg.PostgresDSN, pgstore.Options{CallTimeout: cfg.MetaTimeout, AccessCache: true, Logger: log})
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

// closeAll closes what Start opened, last opened first, until ctx ends. A closer can wait on a
// store that does not answer (the flusher's last write; pgx closing its pool waits up to 15 s
// per connection to a frozen server), so each runs in a goroutine of its own, and once ctx
// ends the rest are not waited for: the process exits with them as a crash would leave them,
// which loses nothing acknowledged (the spool replays it at the next start).
func (n *Node) closeAll(ctx context.Context) error {
	var errs []error
	for i := len(n.closers) - 1; i >= 0; i-- {
		done := make(chan error, 1)
		go func(c func() error) { done <- c() }(n.closers[i]) // ends when the closer returns, or with the process
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			n.closers = nil
			return errors.Join(append(errs, fmt.Errorf("%d of the node's parts not closed when the shutdown's time was up "+
				"(what they held is replayed from the spool at the next start): %w", i+1, ctx.Err()))...)
		}
	}
	n.closers = nil
	return errors.Join(errs...)
}
