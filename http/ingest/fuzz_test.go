package ingest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svc-dev/svc/model/corpus"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
	"github.com/svc-dev/svc/sinks/badgermeta"
	"github.com/svc-dev/svc/sinks/gate"
	"github.com/svc-dev/svc/sinks/localblob"
	"github.com/svc-dev/svc/sinks/spool"
)

// newEvents builds a PUT /events handler on real embedded parts in a temporary directory.
func newEvents(tb testing.TB) *Events {
	tb.Helper()
	dir := tb.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := badgerdb.Open("", log)
	if err != nil {
		tb.Fatal(err)
	}
	sp, _, err := spool.Open(filepath.Join(dir, "spool"), spool.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	blobs, err := localblob.New(filepath.Join(dir, "blobs"), "http://localhost:1", []byte("fuzz-secret-0123456789"))
	if err != nil {
		tb.Fatal(err)
	}
	sys := actors.NewSystem(log)
	var dirx *actors.LocalDirectory
	dirx = actors.NewLocalDirectory(sys, map[actors.Kind]actors.Producer{
		actors.KindApp:     actors.AppProducer(nil, slog.Default()),
		actors.KindSession: actors.SessionProducer(func() actors.Directory { return dirx }, badgerdb.Snapshots{DB: db}, time.Minute, log),
	})
	fl := sys.AS.Root.Spawn(actors.NewFlusher(badgerevents.New(db), sp, actors.FlushOptions{}, actors.NewFlushMetrics(prometheus.NewRegistry()), log))
	g := gate.New(db, 0)
	tb.Cleanup(func() {
		dirx.StopAll(5 * time.Second)
		_ = sys.AS.Root.PoisonFuture(fl).Wait()
		sys.Shutdown()
		sp.Close()
		g.Close()
		db.Close()
	})
	return &Events{Blobs: blobs, Ingest: &actors.Ingest{Dir: dirx, Root: sys.AS.Root, Flusher: fl, Gate: g, Spool: sp, Node: "fuzz", Log: log},
		Log: log, MaxJSONBytes: 1 << 20, MaxMultipartBytes: 2 << 20}
}

func fixtureSeeds(f *testing.F) [][]byte {
	dir, err := corpus.Dir()
	if err != nil {
		f.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "batch_*.json"))
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err == nil && len(b) < 64<<10 {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		f.Fatal("no recorded SDK bodies found in testdata/sdk")
	}
	return out
}

func serve(h *Events, app model.App, body []byte, ct string) int {
	req := httptest.NewRequest(http.MethodPut, "/events", bytes.NewReader(body))
	req.Header.Set("svc-req-id", uuid.NewString())
	req.Header.Set("Content-Type", ct)
	req = req.WithContext(context.WithValue(req.Context(), appKey{}, app))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// FuzzEventsJSON: no JSON body makes PUT /events panic or answer 5xx.
func FuzzEventsJSON(f *testing.F) {
	for _, s := range fixtureSeeds(f) {
		f.Add(s)
	}
	h := newEvents(f)
	app := model.App{ID: uuid.New()}
	f.Fuzz(func(t *testing.T, body []byte) {
		if code := serve(h, app, body, "application/json"); code >= 500 {
			t.Fatalf("status %d for %q", code, body)
		}
	})
}

// FuzzEventsMultipart: no multipart body makes PUT /events panic or answer 5xx.
func FuzzEventsMultipart(f *testing.F) {
	for _, s := range fixtureSeeds(f) {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		_ = w.SetBoundary("fuzzboundary")
		_ = w.WriteField("event", string(s))
		_ = w.WriteField("blob-"+uuid.NewString(), "data")
		w.Close()
		f.Add(buf.Bytes())
	}
	h := newEvents(f)
	app := model.App{ID: uuid.New()}
	f.Fuzz(func(t *testing.T, body []byte) {
		if code := serve(h, app, body, "multipart/form-data; boundary=fuzzboundary"); code >= 500 {
			t.Fatalf("status %d for %q", code, body)
		}
	})
}

// FuzzBuilds: no PUT /builds body makes the handler panic or answer 5xx, on the embedded
// metadata and blob stores.
func FuzzBuilds(f *testing.F) {
	for _, name := range []string{"openapi_put-builds_request_json-example.json", "openapi_put-builds-ota_request_json-example.json"} {
		dir, err := corpus.Dir()
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"version_name":"1","version_code":"1","build_size":"12","build_type":"aab","mappings":[{"type":"proguard","filename":"m.txt","size":1e3}]}`))
	db, err := badgerdb.Open("", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	blobs, err := localblob.New(f.TempDir(), "http://localhost:1", []byte("fuzz-secret-0123456789"))
	if err != nil {
		f.Fatal(err)
	}
	meta := badgermeta.New(db)
	now := time.Now().UTC()
	team := model.Team{ID: uuid.New(), Name: "fuzz", CreatedAt: now, UpdatedAt: now}
	user := model.User{ID: uuid.New(), Name: "fuzz", Email: "fuzz@example.com", CreatedAt: now, UpdatedAt: now}
	if err := meta.CreateUser(context.Background(), user, team); err != nil {
		f.Fatal(err)
	}
	app := model.App{ID: uuid.New(), TeamID: team.ID, Name: "fuzz", RetentionDays: 30, CreatedAt: now, UpdatedAt: now}
	if err := meta.CreateApp(context.Background(), app, model.APIKey{AppID: app.ID, Key: model.NewAPIKey(), CreatedAt: now}); err != nil {
		f.Fatal(err)
	}
	h := &Builds{Meta: meta, Blobs: blobs, MaxMappingBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPut, "/builds", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req = req.WithContext(context.WithValue(req.Context(), appKey{}, app))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}
