package actors

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// MaxHTTPPaths bounds the distinct request paths (domain and normalised path) an app actor
// keeps. Paths are normalised (identifiers are "*"), so a real app has hundreds; beyond the
// bound (an app whose URLs carry names that are not identifiers, or a hostile client) the
// actor keeps its patterns but the network pages read the paths from the store.
const MaxHTTPPaths = 20_000

// endpoints is what an app actor keeps of its app's requests: the distinct paths and the path
// patterns over them (model.PathPatterns), so the network pages map stored paths to endpoints
// without reading every path from the store. The patterns depend only on the set of paths, so
// the actor's equal what a rebuild, or a caller building them from the store's paths, gets.
type endpoints struct {
	paths    map[model.HTTPPath]struct{}
	patterns model.PathPatterns
	overflow bool // more than MaxHTTPPaths: paths is incomplete
}

func (en *endpoints) reset() { *en = endpoints{paths: map[model.HTTPPath]struct{}{}} }

// add records a completed request's path.
func (en *endpoints) add(domain, path string) {
	p := model.HTTPPath{Domain: domain, Path: path}
	if _, ok := en.paths[p]; ok {
		return
	}
	if len(en.paths) >= MaxHTTPPaths {
		en.overflow = true
	} else {
		en.paths[p] = struct{}{}
	}
	en.patterns.Add(domain, model.PathSegments(path))
}

// rebuild reads the paths from the store, when it answers network queries.
func (en *endpoints) rebuild(ctx context.Context, store sinks.Analytics, a *appActor) error {
	en.reset()
	net, ok := store.(sinks.Network)
	if !ok {
		return nil
	}
	paths, err := net.HTTPPaths(ctx, a.app)
	if err != nil {
		return fmt.Errorf("rebuild request paths of app %s: %w", a.identity, err)
	}
	for _, p := range paths {
		en.add(p.Domain, p.Path)
	}
	return nil
}

// reply answers EndpointsQuery; ok only when the actor's aggregates are exact (ready) and it
// keeps every path.
func (en *endpoints) reply(ready bool) *actorpb.EndpointsReply {
	if !ready || en.overflow {
		return &actorpb.EndpointsReply{}
	}
	r := &actorpb.EndpointsReply{Ok: true, Paths: make([]*actorpb.HttpPath, 0, len(en.paths))}
	for p := range en.paths {
		r.Paths = append(r.Paths, &actorpb.HttpPath{Domain: p.Domain, Path: p.Path})
	}
	b, err := en.patterns.AppendBinary(nil)
	if err != nil {
		return &actorpb.EndpointsReply{}
	}
	r.Patterns = b
	return r
}

// batchPaths collects the distinct paths of a batch's completed requests, for its summary.
type batchPaths struct {
	seen map[model.HTTPPath]struct{}
	out  []*actorpb.HttpPath
}

// add records e's path when e is a completed request with a path not seen yet.
func (b *batchPaths) add(e *model.Event) {
	h := &e.Facts.HTTP
	if e.Type != "http" || !h.Completed() {
		return
	}
	p := model.HTTPPath{Domain: h.Domain, Path: h.Path}
	if _, ok := b.seen[p]; ok {
		return
	}
	if b.seen == nil {
		b.seen = map[model.HTTPPath]struct{}{}
	}
	b.seen[p] = struct{}{}
	b.out = append(b.out, &actorpb.HttpPath{Domain: h.Domain, Path: h.Path})
}

// Endpoints asks the app's actor for its request paths and patterns (EndpointsReply.Ok false:
// read them from the store).
func (l Live) Endpoints(ctx context.Context, app uuid.UUID) (*actorpb.EndpointsReply, error) {
	reply, err := l.Dir.Request(ctx, KindApp, app.String(), &actorpb.EndpointsQuery{})
	if err != nil {
		return nil, fmt.Errorf("ask app actor: %w", err)
	}
	r, ok := reply.(*actorpb.EndpointsReply)
	if !ok {
		return nil, fmt.Errorf("ask app actor: unexpected reply %T", reply)
	}
	return r, nil
}
