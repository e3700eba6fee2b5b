package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/keycache"
)

// fakeKeys is a MetaStore that knows API keys only, and can be taken down.
type fakeKeys struct {
	sinks.MetaStore
	mu    sync.Mutex
	keys  map[string]model.APIKey
	apps  map[uuid.UUID]model.App
	down  bool
	calls int
	slow  func() // when set, runs in each call the store fails (a frozen store's timeout)
}

func (f *fakeKeys) AppByAPIKey(_ context.Context, key string) (model.App, model.APIKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.down {
		if f.slow != nil {
			f.slow()
		}
		return model.App{}, model.APIKey{}, sinks.Unavailable(sinks.StoreMeta,
			errors.New("failed to connect to user=postgres database=svc_secret: 127.0.0.1:25432"))
	}
	k, ok := f.keys[key]
	if !ok {
		return model.App{}, model.APIKey{}, sinks.ErrNotFound
	}
	return f.apps[k.AppID], k, nil
}

func (f *fakeKeys) TouchAPIKey(context.Context, string, time.Time) error { return nil }

func (f *fakeKeys) set(down bool) { f.mu.Lock(); f.down = down; f.mu.Unlock() }

func TestKeysServeLastAnswerWhileStoreDown(t *testing.T) {
	app := model.App{ID: uuid.New(), Name: "a"}
	f := &fakeKeys{keys: map[string]model.APIKey{"good": {AppID: app.ID, Key: "good"}, "other": {AppID: app.ID, Key: "other"}},
		apps: map[uuid.UUID]model.App{app.ID: app}}
	now := time.Unix(1_700_000_000, 0)
	k := &Keys{Meta: f, TTL: 30 * time.Second, StaleFor: time.Hour, RetryEvery: time.Second, Now: func() time.Time { return now }}
	h := k.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	do := func(key string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPut, "/events", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		h.ServeHTTP(rec, req)
		return rec
	}
	if c := do("good").Code; c != http.StatusOK {
		t.Fatalf("good key: %d", c)
	}
	f.set(true)
	now = now.Add(40 * time.Second) // past TTL
	if c := do("good").Code; c != http.StatusOK {
		t.Fatalf("known key with the store down: %d, want 200 from the last answer", c)
	}
	calls := f.calls
	for range 50 {
		do("good")
	}
	if f.calls != calls {
		t.Fatalf("the store was asked %d more times within RetryEvery of a failure", f.calls-calls)
	}
	rec := do("other")
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("unknown key with the store down: %d (Retry-After %q), want 503 + Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	body := rec.Body.String()
	if !strings.Contains(body, "metadata store is unavailable") || strings.Contains(body, "127.0.0.1") || strings.Contains(body, "svc_secret") {
		t.Fatalf("503 body %q: want the kind of store and no address, user or database", body)
	}
	now = now.Add(2 * time.Second)
	if c := do("other").Code; c != http.StatusServiceUnavailable {
		t.Fatalf("unknown key after retry: %d", c)
	}
	// Beyond StaleFor the last answer is not used.
	now = now.Add(time.Hour)
	if c := do("good").Code; c != http.StatusServiceUnavailable {
		t.Fatalf("known key past StaleFor: %d, want 503", c)
	}
	// The store answers again: its answer wins, revocation included.
	f.set(false)
	if c := do("good").Code; c != http.StatusOK {
		t.Fatalf("after recovery: %d", c)
	}
	f.set(true)
	now = now.Add(40 * time.Second)
	f.mu.Lock()
	k2 := f.keys["good"]
	k2.Revoked = true
	f.keys["good"] = k2
	f.down = false
	f.mu.Unlock()
	now = now.Add(2 * time.Second)
	if c := do("good").Code; c != http.StatusUnauthorized {
		t.Fatalf("revoked key once the store answers: %d, want 401", c)
	}
	f.set(true)
	now = now.Add(2 * time.Second)
	if c := do("good").Code; c != http.StatusUnauthorized {
		t.Fatalf("revoked key with the store down again: %d, want 401 (the revocation is cached)", c)
	}
}

// TestKeysRetryCountsFromTheFailure: a frozen store fails only at the call's timeout, longer
// than RetryEvery; the store is then left alone for RetryEvery from that failure, not asked
// again by the very next request.
func TestKeysRetryCountsFromTheFailure(t *testing.T) {
	app := model.App{ID: uuid.New(), Name: "a"}
	f := &fakeKeys{keys: map[string]model.APIKey{"good": {AppID: app.ID, Key: "good"}}, apps: map[uuid.UUID]model.App{app.ID: app}}
	now := time.Unix(1_700_000_000, 0)
	f.slow = func() { now = now.Add(2 * time.Second) } // the call times out after 2 s
	k := &Keys{Meta: f, TTL: 30 * time.Second, StaleFor: time.Hour, RetryEvery: time.Second, Now: func() time.Time { return now }}
	ctx := context.Background()
	if _, err := k.Lookup(ctx, "good"); err != nil {
		t.Fatal(err)
	}
	f.set(true)
	now = now.Add(40 * time.Second) // past TTL: the next lookup asks the store
	for i, c := range []struct {
		after time.Duration // since the previous lookup returned
		asks  bool
	}{
		{0, true}, {0, false}, {900 * time.Millisecond, false}, {200 * time.Millisecond, true}, {0, false},
	} {
		now = now.Add(c.after)
		calls := f.calls
		if _, err := k.Lookup(ctx, "good"); err != nil {
			t.Fatalf("lookup %d: %v, want the last answer", i, err)
		}
		if asked := f.calls > calls; asked != c.asks {
			t.Errorf("lookup %d, %v after the previous one returned: asked the store %v, want %v", i, c.after, asked, c.asks)
		}
	}
}

func TestKeysInvalidateWinsOverStaleAnswer(t *testing.T) {
	app := model.App{ID: uuid.New()}
	f := &fakeKeys{keys: map[string]model.APIKey{"good": {AppID: app.ID, Key: "good"}}, apps: map[uuid.UUID]model.App{app.ID: app}}
	now := time.Unix(1_700_000_000, 0)
	k := &Keys{Meta: f, Now: func() time.Time { return now }}
	if _, err := k.Lookup(context.Background(), "good"); err != nil {
		t.Fatal(err)
	}
	f.set(true)
	k.Invalidate(app.ID) // rotated through the dashboard of this node
	if _, err := k.Lookup(context.Background(), "good"); !errors.Is(err, sinks.ErrUnavailable) {
		t.Fatalf("invalidated key with the store down: %v, want ErrUnavailable (no stale answer)", err)
	}
}

func storeDown(err error) bool { _, ok := httpx.Unavailable(err); return ok }

// TestKeysSavedAcrossRestart: a node restarted while the store is down serves the keys it
// accepted before from the answers saved on its disk (within StaleFor); a rotation on this node
// and a revocation the store reports remove them.
func TestKeysSavedAcrossRestart(t *testing.T) {
	db, err := badgerdb.OpenLocal(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	saved := keycache.New(db)
	a, b := model.App{ID: uuid.New(), Name: "a"}, model.App{ID: uuid.New(), Name: "b"}
	f := &fakeKeys{keys: map[string]model.APIKey{"ka": {AppID: a.ID, Key: "ka"}, "kb": {AppID: b.ID, Key: "kb"}, "kr": {AppID: b.ID, Key: "kr"}},
		apps: map[uuid.UUID]model.App{a.ID: a, b.ID: b}}
	now := time.Unix(1_700_000_000, 0)
	node := func() *Keys {
		return &Keys{Meta: f, TTL: 30 * time.Second, StaleFor: time.Hour, RetryEvery: time.Second, Now: func() time.Time { return now }, Saved: saved}
	}
	lookup := func(k *Keys, key string) (model.App, error) { return k.Lookup(context.Background(), key) }
	first := node()
	for _, key := range []string{"ka", "kb", "kr"} {
		if _, err := lookup(first, key); err != nil {
			t.Fatal(err)
		}
	}
	// The store revokes kr and the node hears it; b's keys are rotated on this node.
	f.mu.Lock()
	kr := f.keys["kr"]
	kr.Revoked = true
	f.keys["kr"] = kr
	f.mu.Unlock()
	now = now.Add(31 * time.Second)
	if _, err := lookup(first, "kr"); !errors.Is(err, errBadKey) {
		t.Fatalf("revoked key: %v", err)
	}

	// Restart during an outage.
	f.set(true)
	now = now.Add(10 * time.Minute)
	second := node()
	if app, err := lookup(second, "ka"); err != nil || app.ID != a.ID {
		t.Fatalf("a key known before the restart: %v %v, want its app from disk", app, err)
	}
	if _, err := lookup(second, "kr"); err == nil || errors.Is(err, errBadKey) || !storeDown(err) {
		t.Fatalf("a key revoked before the restart: %v, want unavailable (no saved answer)", err)
	}
	second.Invalidate(b.ID)
	if _, err := lookup(second, "kb"); err == nil || !storeDown(err) {
		t.Fatalf("a key of an app rotated on this node: %v, want unavailable", err)
	}
	// Beyond StaleFor the saved answer is not used.
	third := node()
	now = now.Add(time.Hour)
	if _, err := lookup(third, "ka"); err == nil {
		t.Fatal("a saved answer older than StaleFor was used")
	}
}

// TestServerFaultHidesTheCause: a failure on the node's side answers 503 + Retry-After saying
// what failed (or which kind of store is down), never the cause's address, user or bucket.
func TestServerFaultHidesTheCause(t *testing.T) {
	cause := errors.New(`dial tcp 10.1.2.3:9000: user=svc bucket=svc-blobs: connection refused`)
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("store blob part: %w", cause), "accepting the events failed on the server"},
		{fmt.Errorf("read: %w", sinks.Unavailable(sinks.StoreMeta, cause)), "the metadata store is unavailable"},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		serverFault(rec, slog.New(slog.NewTextHandler(io.Discard, nil)), "accepting the events", c.err)
		body := rec.Body.String()
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(body, c.want) {
			t.Errorf("%v: %d %q %s", c.err, rec.Code, rec.Header().Get("Retry-After"), body)
		}
		for _, leak := range []string{"10.1.2.3", "user=", "bucket", "dial"} {
			if strings.Contains(body, leak) {
				t.Errorf("the answer %s shows %q", body, leak)
			}
		}
	}
}
