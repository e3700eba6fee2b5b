package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Keys resolves app API keys to apps with a cache in front of the metadata store, so the hot
// path does not query it per request, and so that ingest goes on through a metadata outage.
//
// An entry is fresh for TTL after the store's answer; then the next request asks the store
// again (one request per key at a time: the others use the entry meanwhile). When the store does
// not answer, the entry's last answer keeps being used until StaleFor after it was given, and
// the store is asked again at most every RetryEvery, so a frozen store costs one slow request
// per key and interval, not every request. Whatever the store answers wins at once: a revoked
// or unknown key fails from then on. A key without an entry while the store does not answer
// gets 503 (it may be valid), never 401. Invalidate drops an app's keys at once (key rotation
// on this node); other nodes see a rotation within TTL of the store answering.
type Keys struct {
	Meta sinks.MetaStore
	TTL  time.Duration // default 30 s
	// StaleFor bounds how old the last answer of the store may be and still be used while the
	// store fails; default 6 h; negative: never used once TTL has passed.
	StaleFor time.Duration
	// RetryEvery is how long, after the store failed, entries are used without asking it
	// again; default 1 s.
	RetryEvery time.Duration
	Log        *slog.Logger
	Now        func() time.Time // default time.Now
	// Saved, when set, keeps the store's answers on the node's disk, so a node restarted
	// during an outage still serves the keys it knew (within StaleFor of the store's answer).
	Saved SavedKeys

	mu        sync.Mutex
	entries   map[string]*keyEntry
	gen       uint64    // counts Invalidate calls: an answer read across one is not cached
	retryFrom time.Time // the store failed: no refresh of a known key before this
}

// SavedKeys keeps the store's answers across restarts (sinks/keycache implements it).
type SavedKeys interface {
	Save(key string, app model.App, at time.Time, ttl time.Duration) error
	Load(key string) (app model.App, at time.Time, ok bool, err error)
	Forget(key string) error
	DropApp(app uuid.UUID) error
}

type keyEntry struct {
	app        model.App
	revoked    bool
	at         time.Time // when the store gave this answer
	touched    time.Time
	refreshing bool
}

var (
	errBadKey    = errors.New("API key is not valid or was revoked")
	errStoreDown = sinks.Unavailable(sinks.StoreMeta, errors.New("API keys: the store failed a moment ago; not asked again yet"))
)

func (k *Keys) settings() (ttl, staleFor, retry time.Duration) {
	ttl, staleFor, retry = k.TTL, k.StaleFor, k.RetryEvery
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	if staleFor == 0 {
		staleFor = 6 * time.Hour
	}
	if retry <= 0 {
		retry = time.Second
	}
	return ttl, staleFor, retry
}

func (k *Keys) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

func (e *keyEntry) answer() (model.App, error) {
	if e.revoked {
		return model.App{}, errBadKey
	}
	return e.app, nil
}

// Lookup returns the app of an active key: errBadKey for a revoked or unknown one, an error
// for which httpx.Unavailable holds when the store cannot tell.
func (k *Keys) Lookup(ctx context.Context, key string) (model.App, error) {
	ttl, staleFor, retry := k.settings()
	now := k.now()
	k.mu.Lock()
	if k.entries == nil {
		k.entries = map[string]*keyEntry{}
	}
	e := k.entries[key]
	usable := e != nil && (staleFor < 0 && now.Sub(e.at) <= ttl || staleFor >= 0 && now.Sub(e.at) <= staleFor)
	if e != nil && now.Sub(e.at) <= ttl || usable && (e.refreshing || now.Before(k.retryFrom)) {
		k.mu.Unlock()
		return e.answer()
	}
	if e == nil && now.Before(k.retryFrom) {
		k.mu.Unlock()
		return model.App{}, errStoreDown
	}
	if e != nil {
		e.refreshing = true
	}
	gen := k.gen
	k.mu.Unlock()

	app, ak, err := k.Meta.AppByAPIKey(ctx, key)

	k.mu.Lock()
	if e != nil {
		e.refreshing = false
	}
	switch {
	case errors.Is(err, sinks.ErrNotFound):
		delete(k.entries, key)
		k.mu.Unlock()
		k.forget(key)
		return model.App{}, errBadKey
	case err != nil:
		// RetryEvery counts from the failure, not from the request's start: a frozen store
		// fails only at the call's timeout, longer than RetryEvery, and counting from the start
		// would let the next request ask it again at once.
		failed := k.now()
		first := !failed.Before(k.retryFrom)
		k.retryFrom = failed.Add(retry)
		cached := usable && k.entries[key] == e // not invalidated meanwhile
		k.mu.Unlock()
		if first && k.Log != nil {
			k.Log.Warn("API keys: the metadata store did not answer; using the last answers", "error", err.Error(),
				"stale_for", staleFor.String())
		}
		if cached {
			return e.answer()
		}
		if app, ok := k.loadSaved(key, now, staleFor, gen); ok {
			return app, nil
		}
		return model.App{}, fmt.Errorf("look up an API key: %w", err)
	}
	ne := &keyEntry{app: app, revoked: ak.Revoked, at: now}
	if e != nil {
		ne.touched = e.touched
	}
	// last_seen is worth a write once a minute per key, not per request; the store has just
	// answered, so the write does not hold this request up in an outage.
	touch := !ak.Revoked && now.Sub(ne.touched) > time.Minute
	if touch {
		ne.touched = now
	}
	if k.gen == gen { // an answer read across a rotation may predate it
		if len(k.entries) > 100_000 { // a flood of distinct bad keys must not grow the cache
			clear(k.entries)
		}
		k.entries[key] = ne
	}
	saved := k.gen == gen
	k.mu.Unlock()
	if k.Saved != nil && saved && staleFor >= 0 {
		var err error
		if ak.Revoked {
			err = k.Saved.Forget(key)
		} else {
			err = k.Saved.Save(key, app, now, staleFor)
		}
		if err != nil && k.Log != nil {
			k.Log.Debug("API keys: keep the answer on disk", "error", err.Error())
		}
	}
	if touch {
		if err := k.Meta.TouchAPIKey(ctx, key, now.UTC()); err != nil && k.Log != nil {
			k.Log.Debug("API keys: record last use", "error", err.Error())
		}
	}
	return ne.answer()
}

// Invalidate forgets every cached key of the app, in memory and on disk.
func (k *Keys) Invalidate(appID uuid.UUID) {
	k.mu.Lock()
	k.gen++
	for key, e := range k.entries {
		if e.app.ID == appID {
			delete(k.entries, key)
		}
	}
	k.mu.Unlock()
	if k.Saved != nil {
		if err := k.Saved.DropApp(appID); err != nil && k.Log != nil {
			k.Log.Warn("API keys: drop an app's saved answers", "error", err.Error())
		}
	}
}

// forget drops a key's saved answer (the store said it is unknown).
func (k *Keys) forget(key string) {
	if k.Saved == nil {
		return
	}
	if err := k.Saved.Forget(key); err != nil && k.Log != nil {
		k.Log.Debug("API keys: forget a saved answer", "error", err.Error())
	}
}

// loadSaved serves a key the store cannot check now from its answer saved on disk (a node
// restarted during an outage), when that answer is at most staleFor old and no rotation
// happened since gen.
func (k *Keys) loadSaved(key string, now time.Time, staleFor time.Duration, gen uint64) (model.App, bool) {
	if k.Saved == nil || staleFor < 0 {
		return model.App{}, false
	}
	app, at, ok, err := k.Saved.Load(key)
	if err != nil && k.Log != nil {
		k.Log.Debug("API keys: read a saved answer", "error", err.Error())
	}
	if !ok || now.Sub(at) > staleFor {
		return model.App{}, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen != gen {
		return model.App{}, false
	}
	if _, there := k.entries[key]; !there {
		k.entries[key] = &keyEntry{app: app, at: at}
	}
	return app, true
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
			// The key may be valid: 503 lets the SDK retry, and the cause (which may name the
			// store's address, user and database) goes to the log only.
			if !httpx.StoreUnavailable(w, err) {
				if k.Log != nil {
					k.Log.Error("API keys: cannot check a key", "error", err.Error())
				}
				w.Header().Set("Retry-After", "5")
				httpx.Error(w, http.StatusServiceUnavailable, "cannot check the API key right now; retry after the time in Retry-After")
			}
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), appKey{}, app)))
	})
}
