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

// debugKinds are the actor kinds the debug endpoint shows.
var debugKinds = []actors.Kind{actors.KindApp, actors.KindSession}

// listActors answers GET /debug/actors: each kind with its count and (up to 1000) identities.
func (a *API) listActors(w http.ResponseWriter, _ *http.Request) {
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
	httpx.JSON(w, http.StatusOK, map[string]any{"kind": st.Kind, "identity": st.Identity, "state": json.RawMessage(st.StateJson)})
}
