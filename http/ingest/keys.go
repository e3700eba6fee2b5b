package ingest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Keys resolves app API keys to apps with a short cache in front of the metadata store, so the
// hot path does not query it per request. Invalidate drops an app's keys at once (key rotation
// on this node); other nodes see a rotation within TTL.
type Keys struct {
	Meta sinks.MetaStore
	TTL  time.Duration // default 30 s

	mu      sync.Mutex
	entries map[string]keyEntry
}

type keyEntry struct {
	app     model.App
	revoked bool
	at      time.Time
	touched time.Time
}

var errBadKey = errors.New("API key is not valid or was revoked")

// Lookup returns the app of an active key.
func (k *Keys) Lookup(ctx context.Context, key string) (model.App, error) {
	ttl := k.TTL
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	now := time.Now()
	k.mu.Lock()
	if k.entries == nil {
		k.entries = map[string]keyEntry{}
	}
	e, ok := k.entries[key]
	k.mu.Unlock()
	if !ok || now.Sub(e.at) > ttl {
		app, ak, err := k.Meta.AppByAPIKey(ctx, key)
		switch {
		case errors.Is(err, sinks.ErrNotFound):
			return model.App{}, errBadKey
		case err != nil:
			return model.App{}, err
		}
		e = keyEntry{app: app, revoked: ak.Revoked, at: now, touched: e.touched}
		k.mu.Lock()
		if len(k.entries) > 100_000 { // a flood of distinct bad keys must not grow the cache
			clear(k.entries)
		}
		k.entries[key] = e
		k.mu.Unlock()
	}
	if e.revoked {
		return model.App{}, errBadKey
	}
	// last_seen is worth a write once a minute per key, not per request.
	if now.Sub(e.touched) > time.Minute {
		k.mu.Lock()
		e.touched = now
		k.entries[key] = e
		k.mu.Unlock()
		_ = k.Meta.TouchAPIKey(ctx, key, now.UTC())
	}
	return e.app, nil
}

// Invalidate forgets every cached key of the app.
func (k *Keys) Invalidate(appID uuid.UUID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, e := range k.entries {
		if e.app.ID == appID {
			delete(k.entries, key)
		}
	}
}

type appKey struct{}

// AppFrom returns the app the request's API key belongs to.
func AppFrom(ctx context.Context) model.App {
	a, _ := ctx.Value(appKey{}).(model.App)
	return a
}

// Middleware authenticates `Authorization: Bearer <API_KEY>` and puts the app in the context.
func (k *Keys) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			httpx.Error(w, http.StatusUnauthorized, "missing API key: send the app's key as Authorization: Bearer <API_KEY>")
			return
		}
		app, err := k.Lookup(r.Context(), key)
		if errors.Is(err, errBadKey) {
			httpx.Error(w, http.StatusUnauthorized, err.Error())
			return
		}
		if err != nil {
			w.Header().Set("Retry-After", "30")
			httpx.Error(w, http.StatusServiceUnavailable, "cannot check the API key right now: "+err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), appKey{}, app)))
	})
}
