package node

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/google/uuid"
	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/cluster"
	"github.com/svc-dev/svc/http/admin"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/gate"
	pgstore "github.com/svc-dev/svc/sinks/postgres"
)

// directory is where a node's app and session actors live: in this process
// (actors.LocalDirectory) or across the cluster (cluster.Cluster).
type directory interface {
	actors.Directory
	// Count is how many actors of a kind live on this node.
	Count(kind actors.Kind) int
}

// settleQuiet is how long an app must send nothing before its actor, newly activated in a
// cluster, rebuilds from the store (actors.Settle).
const settleQuiet = 5 * time.Second

// startClusterDirectory joins the cluster: app and session actors become cluster kinds, session
// snapshots and the request gate go to PostgreSQL, and every member answers node requests
// (flush, actor counts). Config.validate made sure the stores are shared.
func (n *Node) startClusterDirectory() error {
	pg, ok := n.Meta.(*pgstore.Store)
	if !ok {
		return errors.New("a cluster keeps session snapshots and request ids in PostgreSQL: set --postgres-dsn")
	}
	n.pg = pg
	cfg, log := &n.cfg, n.log
	settle := &actors.Settle{Quiet: settleQuiet, Flush: n.flushCluster}
	kinds := map[actors.Kind]actors.Producer{
		actors.KindApp:     actors.AppProducerSettling(n.Analytics, log, n.alerts, settle),
		actors.KindSession: actors.SessionProducerSaving(func() actors.Directory { return n.Dir }, pg.Snapshots(), cfg.SessionIdle, log, true),
	}
	c, err := cluster.Start(n.Actors, cluster.Config{Name: cfg.ClusterName, Provider: cfg.ClusterProvider, Addr: cfg.ClusterAddr,
		Peers: cfg.ClusterPeers, EtcdEndpoints: cfg.EtcdEndpoints, Log: log}, kinds)
	if err != nil {
		return fmt.Errorf("join cluster %q: %w", cfg.ClusterName, err)
	}
	c.Serve(n.serveNode)
	n.cluster, n.Dir = c, c
	// Graceful: the others take over this node's identities at once.
	n.closers = append(n.closers, func() error { c.Shutdown(true); return nil })
	return nil
}

// requestGate is the request gate: the node's own, or in a cluster PostgreSQL's (a retry may
// reach another node) with this node's Badger in front for the ids it knows accepted. The
// shared gate names this node by its id, and ends at start what the node held in progress when
// it died, so the retries of those requests are processed at once.
func (n *Node) requestGate(ctx context.Context, nodeID string) gate.Store {
	local := n.localGate // started with the flusher (startActors)
	if n.pg == nil {
		return local
	}
	shared := n.pg.Gate(pgstore.GateOptions{Holder: uuid.NewSHA1(uuid.NameSpaceOID, []byte("svc-node/"+nodeID))})
	n.sharedGate = shared
	if k, err := shared.ReleaseHeld(ctx); err != nil {
		n.log.Warn("request ids this node held in progress when it stopped are not released; their retries wait up to "+
			gate.InProgressTTL.String(), "error", err.Error())
	} else if k > 0 {
		n.log.Info("request ids this node held in progress when it stopped released", "ids", k)
	}
	return gate.Cached{Shared: shared, Local: local}
}

// serveNode answers the requests other members send this node.
func (n *Node) serveNode(ctx context.Context, msg proto.Message) (proto.Message, error) {
	switch msg.(type) {
	case *actorpb.FlushRequest:
		if err := n.flushNow(ctx); err != nil {
			return &actorpb.FlushReply{Error: err.Error()}, nil
		}
		return &actorpb.FlushReply{}, nil
	case *actorpb.NodeActorsRequest:
		r := &actorpb.NodeActorsReply{Node: n.cfg.ClusterAddr, Actors: map[string]uint64{}}
		for _, k := range []actors.Kind{actors.KindApp, actors.KindSession} {
			r.Actors[string(k)] = uint64(n.Dir.Count(k))
		}
		return r, nil
	}
	return nil, fmt.Errorf("node request %T not served", msg)
}

// flushCluster makes every member write what its flusher holds (the barrier of actors.Settle).
func (n *Node) flushCluster(ctx context.Context) error {
	var errs []error
	for addr, r := range n.cluster.AskAll(ctx, &actorpb.FlushRequest{}) {
		switch rep, _ := r.Reply.(*actorpb.FlushReply); {
		case r.Err != nil:
			errs = append(errs, fmt.Errorf("member %s: %w", addr, r.Err))
		case rep == nil:
			errs = append(errs, fmt.Errorf("member %s: unexpected reply %T", addr, r.Reply))
		case rep.Error != "":
			errs = append(errs, fmt.Errorf("member %s: %s", addr, rep.Error))
		}
	}
	return errors.Join(errs...)
}

// clusterView shows the cluster to the debug endpoints.
type clusterView struct{ n *Node }

// Members implements admin.Cluster: the provider's members, each asked for its actors.
func (v clusterView) Members(ctx context.Context) []admin.ClusterMember {
	counts := v.n.cluster.AskAll(ctx, &actorpb.NodeActorsRequest{})
	var out []admin.ClusterMember
	for _, m := range v.n.cluster.Members() {
		cm := admin.ClusterMember{ID: m.ID, Address: m.Address, Status: m.Status, Self: m.Self}
		switch r, ok := counts[m.Address]; {
		case !ok:
			cm.Error = "not asked: not in the cluster's member list now"
		case r.Err != nil:
			cm.Error = r.Err.Error()
		default:
			if rep, ok := r.Reply.(*actorpb.NodeActorsReply); ok {
				cm.Actors = rep.Actors
			}
		}
		out = append(out, cm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// Owner implements admin.Cluster.
func (v clusterView) Owner(kind actors.Kind, identity string) (string, bool) {
	return v.n.cluster.Owner(kind, identity)
}

// deleteExpiredShared removes the cluster's expired request ids and session snapshots.
func (n *Node) deleteExpiredShared(ctx context.Context) {
	if n.pg == nil {
		return
	}
	for _, job := range []struct {
		what string
		del  func(context.Context) (int64, error)
	}{
		{"request ids", n.sharedGate.DeleteExpiredRequestIDs},
		{"session snapshots", n.pg.Snapshots().DeleteExpiredSnapshots},
	} {
		k, err := job.del(ctx)
		switch {
		case err != nil && !errors.Is(err, sinks.ErrUnavailable):
			n.log.Warn("janitor: expired "+job.what+" not removed", "error", err.Error())
		case k > 0:
			n.log.Info("janitor: expired "+job.what+" removed", "count", k)
		}
	}
}
