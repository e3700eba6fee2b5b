package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/http/httpx"
)

// Profiles mounts Go's profiles under /debug/pprof/ on r. The command line is shown through
// redact, so secrets given as flags never leave the process; expvar's /debug/vars, which would
// show the raw command line, is not served.
func Profiles(r chi.Router, redact func([]string) []string) {
	r.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(strings.Join(redact(os.Args), "\x00")))
	})
	r.HandleFunc("/debug/pprof/profile", pprof.Profile)
	r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	r.HandleFunc("/debug/pprof/trace", pprof.Trace)
	r.HandleFunc("/debug/pprof/*", pprof.Index) // the index and every named profile (heap, goroutine, …)
}

// Cluster is what the debug endpoints show of a node's cluster.
type Cluster interface {
	// Members lists the cluster's members, each with the actors it runs now (asked of it).
	Members(ctx context.Context) []ClusterMember
	// Owner is the remoting address of the member an identity's actor runs on.
	Owner(kind actors.Kind, identity string) (address string, ok bool)
}

// ClusterMember is one member as GET /debug/cluster shows it.
type ClusterMember struct {
	ID      string            `json:"id"`
	Address string            `json:"address"` // its actor remoting address
	Status  string            `json:"status"`  // alive, leaving, unreachable
	Self    bool              `json:"self"`    // the node that answers
	Actors  map[string]uint64 `json:"actors"`  // live actors per kind; null when it did not answer
	Error   string            `json:"error,omitempty"`
}

// clusterMembers answers GET /debug/cluster: the members with their remoting addresses, status
// and how many actors of each kind each runs. A single node answers as the one member.
func (a *API) clusterMembers(w http.ResponseWriter, r *http.Request) {
	if a.Cluster == nil {
		counts := map[string]uint64{}
		for _, k := range debugKinds {
			counts[string(k)] = uint64(len(a.Actors.Active(k)))
		}
		httpx.JSON(w, http.StatusOK, map[string]any{"clustered": false,
			"members": []ClusterMember{{Status: "alive", Self: true, Actors: counts}}})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	httpx.JSON(w, http.StatusOK, map[string]any{"clustered": true, "members": a.Cluster.Members(ctx)})
}

// debugKinds are the actor kinds the debug endpoint shows.
var debugKinds = []actors.Kind{actors.KindApp, actors.KindSession}

// listActors answers GET /debug/actors: each kind with its count and (up to 1000) identities on
// this node, and in a cluster the counts of every node ("nodes", by remoting address).
func (a *API) listActors(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{}
	for _, k := range debugKinds {
		ids := a.Actors.Active(k)
		sort.Strings(ids)
		n := len(ids)
		if len(ids) > 1000 {
			ids = ids[:1000]
		}
		out[string(k)] = map[string]any{"count": n, "identities": ids}
	}
	if a.Cluster != nil {
		// Kinds and counts per node; the identities above are this node's.
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		nodes := map[string]any{}
		for _, m := range a.Cluster.Members(ctx) {
			if m.Error != "" {
				nodes[m.Address] = map[string]any{"error": m.Error}
				continue
			}
			nodes[m.Address] = m.Actors
		}
		out["nodes"] = nodes
	}
	httpx.JSON(w, http.StatusOK, out)
}

// actorState answers GET /debug/actors/{kind}/*: one actor's state as JSON. Asking activates the
// actor if it is passivated (its snapshot is loaded), which is what a developer wants to see.
func (a *API) actorState(w http.ResponseWriter, r *http.Request) {
	kind := actors.Kind(chi.URLParam(r, "kind"))
	id := chi.URLParam(r, "*")
	known := false
	for _, k := range debugKinds {
		known = known || k == kind
	}
	if !known || id == "" {
		httpx.Error(w, http.StatusNotFound, "want /debug/actors/app/<app id> or /debug/actors/session/<app id>/<session id>")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	reply, err := a.Actors.Request(ctx, kind, id, &actorpb.StateRequest{})
	if err != nil {
		httpx.Error(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	st, ok := reply.(*actorpb.StateReply)
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "unexpected reply from the actor")
		return
	}
	out := map[string]any{"kind": st.Kind, "identity": st.Identity, "state": json.RawMessage(st.StateJson)}
	if a.Cluster != nil {
		// Asked through the cluster, so the owner answered wherever it runs.
		out["node"], _ = a.Cluster.Owner(kind, id)
	}
	httpx.JSON(w, http.StatusOK, out)
}
