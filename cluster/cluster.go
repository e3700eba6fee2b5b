package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/labstack/echo"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/svc-dev/svc/actors"
)

// Providers: how members find each other.
const (
	ProviderStatic = "static" // a fixed list of peers, each checked on its health port (remoting port + 1)
	ProviderEtcd   = "etcd"   // members register under a lease in etcd and watch each other there
)

// Remoting sends the messages queued for a member in batches, one gRPC message each, and a gRPC
// server refuses a message over its limit (4 MiB by default): the refused batch is lost, all of
// it, and the connection breaks. protoactor's default batch is 1000 messages. Smaller batches and
// a larger limit let a batch of messages averaging up to 2.5 MiB through.
const (
	remoteBatch         = 100
	remoteMaxBatchBytes = 256 << 20
)

// etcdPrefix is where members of a cluster register in etcd: one prefix per cluster name, so
// clusters sharing an etcd (even with names that are prefixes of each other) stay apart.
const etcdPrefix = "/svc/clusters/"

// Config says how a node joins its cluster.
type Config struct {
	Name          string   // cluster name; every member of a cluster has the same one
	Provider      string   // ProviderStatic or ProviderEtcd
	Addr          string   // host:port of this node's remoting, reachable by every other member
	Peers         []string // static: every member's remoting address, this one included
	EtcdEndpoints []string // etcd: the etcd client endpoints
	Log           *slog.Logger

	// RequestTimeout bounds a Request or AskMember whose context has no deadline. Default 10 s.
	RequestTimeout time.Duration
	// MemberRefresh is the pause between two health checks of every peer by the static provider.
	// A peer that fails one check (down, or no answer within 2 s) leaves the cluster. Default 1 s.
	MemberRefresh time.Duration
	// StartTimeout bounds how long Start waits to see this node among the members. Default 30 s.
	StartTimeout time.Duration
	// LeaveTimeout bounds a graceful Shutdown: stopping this node's actors (which save their
	// state) and telling the other members. Default 10 s.
	LeaveTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.MemberRefresh <= 0 {
		c.MemberRefresh = time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.LeaveTimeout <= 0 {
		c.LeaveTimeout = 10 * time.Second
	}
	return c
}

func (c Config) validate() error {
	if c.Name == "" {
		return errors.New("cluster: no cluster name")
	}
	host, port, err := splitAddr(c.Addr)
	if err != nil || host == "" {
		return fmt.Errorf("cluster: bad address %q: want the host:port other members reach this node at", c.Addr)
	}
	switch c.Provider {
	case ProviderStatic:
		self := false
		for _, p := range c.Peers {
			if _, _, err := splitAddr(p); err != nil {
				return fmt.Errorf("cluster: bad peer %q: want host:port", p)
			}
			self = self || p == c.Addr
		}
		if !self {
			return fmt.Errorf("cluster: the peers must list this node's own address %q", c.Addr)
		}
		if port == 65535 {
			return fmt.Errorf("cluster: port %d leaves no room for the health port (port + 1)", port)
		}
	case ProviderEtcd:
		if len(c.EtcdEndpoints) == 0 {
			return errors.New("cluster: the etcd provider needs etcd endpoints")
		}
	default:
		return fmt.Errorf("cluster: unknown provider %q (want %s or %s)", c.Provider, ProviderStatic, ProviderEtcd)
	}
	return nil
}

func splitAddr(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", addr)
	}
	return host, port, nil
}

// healthAddr is where the static provider checks a member: its remoting port + 1.
func healthAddr(addr string) string {
	host, port, _ := splitAddr(addr)
	return net.JoinHostPort(host, strconv.Itoa(port+1))
}

// Member is one member of the cluster as this node sees it.
type Member struct {
	ID      string   // the provider's member id; a new one at every start of the node
	Address string   // remoting address
	Status  string   // "alive"; for this node also "leaving" (graceful Shutdown) or "removed" (dropped, see InCluster); "unreachable": a static peer not in the cluster
	Kinds   []string // the actor kinds it hosts (protoactor's own pub-sub kind left out), sorted
	Self    bool     // this node
}

// Cluster is this node's membership of the cluster. It implements actors.Directory: each
// identity lives on the member the rendezvous hash of the current members picks (the hash
// protoactor's disthash lookup uses), and every message for it goes through that member's
// router (router.go).
type Cluster struct {
	cfg      Config
	log      *slog.Logger
	sys      *actors.System
	pc       *cluster.Cluster
	provider cluster.ClusterProvider
	kinds    map[actors.Kind]*kindState
	router   *router
	node     *actor.PID
	sub      *eventstream.Subscription

	mu       sync.Mutex
	raw      []*cluster.Member // the members protoactor lists
	departed map[string]bool   // ids of members that said they leave, until protoactor drops them
	leaving  atomic.Bool       // this node is in a graceful Shutdown (set under mu)
	view     atomic.Pointer[view]
	joined   chan struct{} // closed once this node is among the members
	joinOnce sync.Once

	handler    atomic.Pointer[Handler]
	handlerCtx context.Context
	stopAsks   context.CancelFunc
	asks       sync.WaitGroup // handler calls in progress

	closed   atomic.Bool
	shutOnce sync.Once
}

// view is one set of members and the hash over them. It is replaced, never changed; changed is
// closed when a newer view replaces it, which wakes requests waiting on a member that left.
type view struct {
	members []*cluster.Member
	rdv     *cluster.Rendezvous
	self    bool
	changed chan struct{}
}

func (v *view) has(address string) bool {
	for _, m := range v.members {
		if m.Address() == address {
			return true
		}
	}
	return false
}

// Start joins the cluster cfg names: remoting on cfg.Addr, the provider, and one cluster kind per
// entry of kinds, whose actors the producer makes. It returns once this node is among the
// members. sys must not be in a cluster yet; its Shutdown stays the caller's, after Shutdown here.
func Start(sys *actors.System, cfg Config, kinds map[actors.Kind]actors.Producer) (*Cluster, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	host, port, _ := splitAddr(cfg.Addr)
	// protoactor panics when it cannot listen; trying first gives the caller an error instead.
	if err := tryListen(cfg.Addr); err != nil {
		return nil, fmt.Errorf("cluster: remoting address: %w", err)
	}
	var provider cluster.ClusterProvider
	switch cfg.Provider {
	case ProviderStatic:
		// automanaged's health server listens on every interface, whatever host Addr names.
		if err := tryListen(":" + strconv.Itoa(port+1)); err != nil {
			return nil, fmt.Errorf("cluster: health port of the static provider (remoting port + 1): %w", err)
		}
		hosts := make([]string, len(cfg.Peers))
		for i, p := range cfg.Peers {
			hosts[i] = healthAddr(p)
		}
		// Our own health server: automanaged's prints a start line to stdout, where svc serve
		// promises one line (its listening line), and it answers what its own would.
		health := echo.New()
		health.HideBanner, health.HidePort = true, true
		var names []string
		for k := range kinds {
			names = append(names, string(k))
		}
		sort.Strings(names)
		self := automanaged.NewNode(cfg.Name, sys.AS.ID, host, port, port+1, names)
		health.GET("/_health", func(c echo.Context) error { return c.JSON(http.StatusOK, self) })
		provider = automanaged.NewWithTesting(cfg.MemberRefresh, port+1, health, hosts...)
	case ProviderEtcd:
		// The provider's etcd calls have no deadline: with etcd unreachable, starting it would
		// hang for good. Asking etcd first turns that into an error.
		if err := etcdReachable(cfg, 5*time.Second); err != nil {
			return nil, fmt.Errorf("cluster: connect to etcd %s: %w", strings.Join(cfg.EtcdEndpoints, ","), err)
		}
		p, err := etcd.NewWithConfig(etcdPrefix+cfg.Name, clientv3.Config{
			Endpoints:   cfg.EtcdEndpoints,
			DialTimeout: 5 * time.Second,
			Logger:      zap.NewNop(),
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: connect to etcd %s: %w", strings.Join(cfg.EtcdEndpoints, ","), err)
		}
		provider = p
	}

	c := &Cluster{
		cfg:      cfg,
		log:      cfg.Log.With("component", "cluster", "node", cfg.Addr),
		sys:      sys,
		provider: provider,
		kinds:    map[actors.Kind]*kindState{},
		departed: map[string]bool{},
		joined:   make(chan struct{}),
	}
	c.handlerCtx, c.stopAsks = context.WithCancel(context.Background())
	c.view.Store(&view{rdv: cluster.NewRendezvous(), changed: make(chan struct{})})
	c.router = &router{c: c}

	var pkinds []*cluster.Kind
	for k, produce := range kinds {
		ks := &kindState{kind: k}
		pk := cluster.NewKind(string(k), actor.PropsFromProducer(func() actor.Actor {
			return &activation{kind: k, produce: produce, router: c.router}
		}))
		ks.props = pk.Props
		c.kinds[k] = ks
		pkinds = append(pkinds, pk)
	}

	rcfg := remote.Configure(host, port, remote.WithAdvertisedHost(cfg.Addr),
		remote.WithEndpointWriterBatchSize(remoteBatch),
		remote.WithServerOptions(grpc.MaxRecvMsgSize(remoteMaxBatchBytes)))
	// A connection to a member is tried MaxRetryCount times, 2 s apart, while messages for it
	// wait; protoactor's 5 held them 10 s when a member had died. After the one try they are
	// undeliverable at once (a request then tries again), and the next message tries anew.
	rcfg.MaxRetryCount = 1
	ccfg := cluster.Configure(cfg.Name, provider, disthash.New(), rcfg,
		cluster.WithKinds(pkinds...), cluster.WithRequestTimeout(cfg.RequestTimeout))
	if err := c.startMember(ccfg); err != nil {
		c.Shutdown(false)
		return nil, err
	}
	select {
	case <-c.joined:
	case <-time.After(cfg.StartTimeout):
		c.Shutdown(false)
		return nil, fmt.Errorf("cluster %s: this node (%s) was not among the members after %s", cfg.Name, cfg.Addr, cfg.StartTimeout)
	}
	c.log.Info("joined the cluster", "cluster", cfg.Name, "provider", cfg.Provider, "members", len(c.view.Load().members))
	return c, nil
}

// startMember starts protoactor's cluster member with the router, the node actor and the
// topology subscription in place before the first message or topology can arrive. protoactor
// reports failures by panicking; they come back as an error.
func (c *Cluster) startMember(ccfg *cluster.Config) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: start member: %v", r)
		}
	}()
	c.pc = cluster.New(c.sys.AS, ccfg)
	if _, ok := c.sys.AS.ProcessRegistry.Add(c.router, routerName); !ok {
		return fmt.Errorf("cluster: actor system already has a %s process (one cluster per actor system)", routerName)
	}
	node, err := c.sys.AS.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &nodeActor{c: c} }), nodeName)
	if err != nil {
		return fmt.Errorf("cluster: spawn node actor: %w", err)
	}
	c.node = node
	c.sub = c.sys.AS.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*cluster.ClusterTopology); ok {
			c.onTopology(t.Members)
		}
	})
	c.pc.StartMember() // sleeps 1 s at its end
	return nil
}

func tryListen(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return l.Close()
}

// onTopology takes protoactor's member list (it publishes one on every change) and rehashes.
func (c *Cluster) onTopology(members []*cluster.Member) {
	c.mu.Lock()
	c.raw = members
	for id := range c.departed {
		if !slices.ContainsFunc(members, func(m *cluster.Member) bool { return m.Id == id }) {
			delete(c.departed, id)
		}
	}
	c.rebuildLocked()
	n := len(c.view.Load().members)
	c.mu.Unlock()
	c.log.Info("cluster members changed", "members", n)
	c.router.rehash()
}

// rebuildLocked replaces the view: protoactor's members without departed ones, and without
// this node while it leaves. Called with c.mu held.
func (c *Cluster) rebuildLocked() {
	var members []*cluster.Member
	self := false
	for _, m := range c.raw {
		if c.departed[m.Id] {
			continue
		}
		if m.Address() == c.cfg.Addr {
			if c.leaving.Load() {
				continue
			}
			self = true
		}
		members = append(members, m)
	}
	rdv := cluster.NewRendezvous()
	rdv.UpdateMembers(members)
	old := c.view.Swap(&view{members: members, rdv: rdv, self: self, changed: make(chan struct{})})
	close(old.changed)
	if self {
		c.joinOnce.Do(func() { close(c.joined) })
	}
}

// depart stops placing identities on the member that said it leaves.
func (c *Cluster) depart(id, address string) {
	c.mu.Lock()
	if slices.ContainsFunc(c.raw, func(m *cluster.Member) bool { return m.Id == id }) {
		c.departed[id] = true
	}
	c.rebuildLocked()
	c.mu.Unlock()
	c.log.Info("member leaves", "member", address)
	c.router.rehash()
}

// Owner says which member's address an identity lives on now (ok is false when no member hosts
// the kind). It is the rendezvous hash of protoactor's disthash lookup over the current members.
func (c *Cluster) Owner(kind actors.Kind, identity string) (address string, ok bool) {
	a := c.owner(kind, identity)
	return a, a != ""
}

func (c *Cluster) owner(kind actors.Kind, identity string) string {
	return c.view.Load().owner(kind, identity)
}

func (v *view) owner(kind actors.Kind, identity string) string {
	return v.rdv.GetByClusterIdentity(&cluster.ClusterIdentity{Kind: string(kind), Identity: identity})
}

// Members lists the members this node sees, sorted by address. With the static provider, a peer
// that is not in the cluster is listed as "unreachable".
func (c *Cluster) Members() []Member {
	v := c.view.Load()
	var out []Member
	seen := map[string]bool{}
	for _, m := range v.members {
		kinds := slices.DeleteFunc(slices.Clone(m.Kinds), func(k string) bool { return k == cluster.TopicActorKind })
		slices.Sort(kinds)
		out = append(out, Member{ID: m.Id, Address: m.Address(), Status: "alive", Kinds: kinds, Self: m.Address() == c.cfg.Addr})
		seen[m.Address()] = true
	}
	if !v.self && !seen[c.cfg.Addr] {
		st := "removed"
		if c.leaving.Load() {
			st = "leaving"
		}
		out = append(out, Member{ID: c.sys.AS.ID, Address: c.cfg.Addr, Status: st, Kinds: c.kindNames(), Self: true})
		seen[c.cfg.Addr] = true
	}
	if c.cfg.Provider == ProviderStatic {
		for _, p := range c.cfg.Peers {
			if !seen[p] {
				out = append(out, Member{Address: p, Status: "unreachable"})
				seen[p] = true
			}
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Address, b.Address) })
	return out
}

func (c *Cluster) kindNames() []string {
	var ks []string
	for k := range c.kinds {
		ks = append(ks, string(k))
	}
	slices.Sort(ks)
	return ks
}

// InCluster says whether this node is among the members it sees. It is false after protoactor
// dropped it (a missed health check or an expired heartbeat): the other members then refuse
// it until it restarts with a new member id, so a node that stays out should be restarted.
func (c *Cluster) InCluster() bool { return c.view.Load().self }

// Addr is this node's remoting address.
func (c *Cluster) Addr() string { return c.cfg.Addr }

// Shutdown leaves the cluster. graceful: this node stops placing identities on itself, stops
// its actors after their queued messages (so they save their state), tells every other member
// to rehash without it at once, then stops the provider and remoting. Otherwise it stops the
// provider and remoting at once; the others notice at their next member check (static) or
// when its etcd key goes. The actor system itself stays the caller's to shut down.
func (c *Cluster) Shutdown(graceful bool) {
	c.shutOnce.Do(func() {
		if graceful && c.pc != nil && c.pc.Remote != nil {
			c.leave()
		}
		c.closed.Store(true)
		if c.sub != nil {
			c.sys.AS.EventStream.Unsubscribe(c.sub)
		}
		if c.node != nil { // first, so no handler call starts after waitAsks
			_ = c.sys.AS.Root.StopFuture(c.node).Wait()
		}
		c.stopAsks()
		c.waitAsks(time.Second)
		c.stopProvider(graceful)
		c.stopProtoactor(graceful)
		c.sys.AS.ProcessRegistry.Remove(actor.NewPID(c.sys.AS.Address(), routerName))
		c.log.Info("left the cluster", "graceful", graceful)
	})
}

// stopProvider ends the provider's goroutines and deregisters: the static provider closes its
// health server, the etcd provider deletes this member's key. Its etcd calls have no deadline, so
// with etcd unreachable it is skipped and the member's lease expires on its own.
func (c *Cluster) stopProvider(graceful bool) {
	if c.provider == nil || c.pc == nil || c.pc.Remote == nil {
		return
	}
	if c.cfg.Provider == ProviderEtcd && etcdReachable(c.cfg, 2*time.Second) != nil {
		c.log.Warn("etcd unreachable at shutdown: this member's key expires with its lease")
		return
	}
	defer func() {
		if r := recover(); r != nil {
			c.log.Warn("stop cluster provider", "error", fmt.Sprint(r))
		}
	}()
	var gone chan struct{}
	if graceful && c.cfg.Provider == ProviderEtcd {
		// Deleting this member's key shows in the provider's etcd watch, whose goroutine then
		// tells remoting the member is gone. A graceful stop of remoting sets a map of
		// protoactor's endpoint manager to nil, and that report crashes the process if it comes
		// after (an ungraceful stop leaves the map). protoactor publishes the topology without
		// this member once the report is handled, so remoting waits for it.
		gone = make(chan struct{})
		var once sync.Once
		sub := c.sys.AS.EventStream.Subscribe(func(evt any) {
			if t, ok := evt.(*cluster.ClusterTopology); ok &&
				!slices.ContainsFunc(t.Members, func(m *cluster.Member) bool { return m.Address() == c.cfg.Addr }) {
				once.Do(func() { close(gone) })
			}
		})
		defer c.sys.AS.EventStream.Unsubscribe(sub)
	}
	if err := c.provider.Shutdown(graceful); err != nil {
		c.log.Warn("stop cluster provider", "error", err.Error())
		return
	}
	if gone != nil {
		select {
		case <-gone:
		case <-time.After(etcdDepartureWait):
		}
	}
}

// etcdDepartureWait bounds how long a graceful stopProvider waits for the etcd watch to report
// this member's own departure. When the watch is cancelled before the deletion reaches it,
// nothing comes and the wait runs out (protoactor's own graceful Shutdown sleeps 2 s at that
// point). A watch goroutine slower than this, or a change of another member that the watch
// takes in the moment before its cancellation, can still reach remoting after it stopped.
const etcdDepartureWait = time.Second

// etcdReachable reads from etcd with a deadline, which says whether it answers.
func etcdReachable(cfg Config, timeout time.Duration) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.EtcdEndpoints, DialTimeout: timeout, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err = cli.Get(ctx, etcdPrefix+cfg.Name, clientv3.WithCountOnly())
	return err
}

// stopProtoactor stops what protoactor's cluster runs besides the provider. Its own
// Cluster.Shutdown does not fit: it shuts the actor system down (the caller's), sleeps 2 s when
// graceful, and when not graceful leaves the provider running, so the others never drop the node.
func (c *Cluster) stopProtoactor(graceful bool) {
	if c.pc == nil || c.pc.Remote == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			c.log.Warn("stop cluster member", "error", fmt.Sprint(r))
		}
	}()
	c.pc.Gossip.Shutdown()
	if c.pc.IdentityLookup != nil {
		c.pc.IdentityLookup.Shutdown()
	}
	c.pc.Remote.Shutdown(graceful)
}
