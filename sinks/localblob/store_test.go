package localblob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/blobtest"
)

var testSecret = []byte("0123456789abcdef-test-secret")

// serve starts a real HTTP server that mounts the store's handler at /blobs/ the way svc does,
// beside another route, and returns the store and the server.
func serve(t testing.TB, dir string, opts ...Option) (*Store, *httptest.Server) {
	t.Helper()
	var s *Store
	mux := http.NewServeMux()
	mux.Handle(PathPrefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.Handler().ServeHTTP(w, r) }))
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	var err error
	s, err = New(dir, srv.URL, testSecret, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, srv
}

func TestConformance(t *testing.T) {
	t.Run("localblob", func(t *testing.T) {
		blobtest.Run(t, func(t *testing.T) (sinks.BlobStore, *http.Client) {
			s, srv := serve(t, t.TempDir())
			return s, srv.Client()
		})
	})
	// Batches of blobs both up to and over 4 KiB: values and files side by side.
	t.Run("localblob with small blobs", func(t *testing.T) {
		blobtest.Run(t, func(t *testing.T) (sinks.BlobStore, *http.Client) {
			db, err := badgerdb.Open("", nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			s, srv := serve(t, t.TempDir(), WithSmallBlobs(db, 4096))
			return s, srv.Client()
		})
	})
}

// Small blobs of a batch take no file, and a later batch's large blob of one of their keys
// replaces the value.
func TestSmallBlobsTakeNoFile(t *testing.T) {
	db, err := badgerdb.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	dir := t.TempDir()
	s, _ := serve(t, dir, WithSmallBlobs(db, 4096))
	ctx := context.Background()
	blobs := []sinks.Blob{{Key: "a/1", Bytes: bytes.Repeat([]byte("x"), 4096)}, {Key: "a/2", Bytes: []byte("y")}}
	if err := s.PutBatch(ctx, blobs); err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if _, err := os.Stat(s.path(b.Key)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("blob %s of %d bytes: file %v, want none", b.Key, len(b.Bytes), err)
		}
	}
	large := bytes.Repeat([]byte("z"), 4097)
	if err := s.PutBatch(ctx, []sinks.Blob{{Key: "a/2", Bytes: large}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.path("a/2")); err != nil {
		t.Errorf("blob of 4,097 bytes: %v, want a file", err)
	}
	rc, err := s.Get(ctx, "a/2")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); !bytes.Equal(got, large) {
		t.Errorf("Get after the larger batch blob: %d bytes, want %d", len(got), len(large))
	}
}

func TestNewRejects(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		secret    []byte
		opts      []Option
	}{
		{"short secret", "http://x", []byte("short"), nil},
		{"relative URL", "svc.example.com", testSecret, nil},
		{"ftp URL", "ftp://svc.example.com", testSecret, nil},
		{"URL with query", "https://svc.example.com/?a=b", testSecret, nil},
		{"zero max upload", "https://svc.example.com", testSecret, []Option{WithMaxUpload(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(t.TempDir(), tc.url, tc.secret, tc.opts...); !errors.Is(err, sinks.ErrInvalid) {
				t.Fatalf("New = %v, want ErrInvalid", err)
			}
		})
	}
}

// TestPublicURLPath: svc behind a proxy that strips a path keeps that path in its URLs.
func TestPublicURLPath(t *testing.T) {
	s, err := New(t.TempDir(), "https://example.com/svc/", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.SignDownload(context.Background(), "a/b.png", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u, "https://example.com/svc/blobs/a/b.png?expires=") {
		t.Fatalf("download URL %q", u)
	}
}

func TestTTLBounds(t *testing.T) {
	s, err := New(t.TempDir(), "https://example.com", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []time.Duration{0, -time.Second, 999 * time.Millisecond, 7*24*time.Hour + time.Second} {
		if _, err := s.SignUpload(context.Background(), "k", ttl); !errors.Is(err, sinks.ErrInvalid) {
			t.Errorf("SignUpload ttl %v = %v, want ErrInvalid", ttl, err)
		}
		if _, err := s.SignDownload(context.Background(), "k", ttl); !errors.Is(err, sinks.ErrInvalid) {
			t.Errorf("SignDownload ttl %v = %v, want ErrInvalid", ttl, err)
		}
	}
}

// TestPutSize: a reader that disagrees with size stores nothing, and Put keeps no temp file.
func TestPutSize(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir, "https://example.com", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		r    io.Reader
		size int64
		want error
	}{
		{"short", strings.NewReader("abc"), 4, sinks.ErrInvalid},
		{"long", strings.NewReader("abcde"), 4, sinks.ErrInvalid},
		{"reader error", iotest.ErrReader(io.ErrClosedPipe), 4, io.ErrClosedPipe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Put(ctx, "k", tc.r, tc.size); !errors.Is(err, tc.want) {
				t.Fatalf("Put = %v, want %v", err, tc.want)
			}
			if _, err := s.Get(ctx, "k"); !errors.Is(err, sinks.ErrNotFound) {
				t.Fatalf("Get after failed Put = %v, want ErrNotFound", err)
			}
		})
	}
	if err := s.Put(ctx, "k", strings.NewReader("unknown size"), -1); err != nil {
		t.Fatalf("Put size -1: %v", err)
	}
	assertNoTemps(t, dir)
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("%d temporary files left behind, first %s", len(left), left[0].Name())
	}
}

// TestKeysStayInside: whatever the key, its file is inside the store's directory.
func TestKeysStayInside(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir, "https://example.com", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "blobs") + string(filepath.Separator)
	for _, key := range []string{"a", "./a", "a/./b", "-", ".a/.b", strings.Repeat("/x", 256)[1:]} {
		if p := s.path(key); !strings.HasPrefix(p, root) {
			t.Errorf("key %q maps to %q, outside %q", key, p, root)
		}
	}
}

type errorBody struct {
	Error string `json:"error"`
}

// send makes one request and decodes a JSON error answer.
func send(t *testing.T, c *http.Client, req *http.Request) (int, errorBody) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e errorBody
	if resp.StatusCode >= 400 {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%d answer has Content-Type %q, want application/json", resp.StatusCode, ct)
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error == "" {
			t.Fatalf("%d answer %q is not {\"error\": \"...\"}: %v", resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, e
}

func TestHandlerErrors(t *testing.T) {
	dir := t.TempDir()
	s, srv := serve(t, dir, WithMaxUpload(1000))
	ctx := context.Background()
	up, err := s.SignUpload(ctx, "limit/blob", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	token := up.Headers[TokenHeader]
	if err := s.Put(ctx, "stored", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	dl, err := s.SignDownload(ctx, "stored", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	missing, err := s.SignDownload(ctx, "missing", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// chunked hides the length from the server, as SDKs that stream do.
	chunked := func(n int) io.Reader { return io.MultiReader(bytes.NewReader(make([]byte, n))) }

	for _, tc := range []struct {
		name    string
		method  string
		url     string
		token   string
		body    io.Reader
		want    int
		mention string // the message must say this, so a person knows what to do
	}{
		{"at limit", http.MethodPut, up.URL, token, bytes.NewReader(make([]byte, 1000)), http.StatusOK, ""},
		{"over limit", http.MethodPut, up.URL, token, bytes.NewReader(make([]byte, 1001)), http.StatusRequestEntityTooLarge, "1000 bytes"},
		{"chunked at limit", http.MethodPut, up.URL, token, chunked(1000), http.StatusOK, ""},
		{"chunked over limit", http.MethodPut, up.URL, token, chunked(5000), http.StatusRequestEntityTooLarge, "1000 bytes"},
		{"no token", http.MethodPut, up.URL, "", strings.NewReader("x"), http.StatusForbidden, TokenHeader},
		{"wrong token", http.MethodPut, up.URL, token + "0", strings.NewReader("x"), http.StatusForbidden, TokenHeader},
		{"no signature", http.MethodPut, strings.Split(up.URL, "&sig=")[0], token, strings.NewReader("x"), http.StatusForbidden, "sig"},
		{"download with GET", http.MethodGet, dl, "", nil, http.StatusOK, ""},
		{"download missing blob", http.MethodGet, missing, "", nil, http.StatusNotFound, "no blob"},
		{"upload URL with GET", http.MethodGet, up.URL, "", nil, http.StatusForbidden, "signature"},
		{"POST", http.MethodPost, up.URL, token, strings.NewReader("x"), http.StatusMethodNotAllowed, "PUT"},
		{"invalid key", http.MethodGet, srv.URL + "/blobs/a..b?expires=1&sig=00", "", nil, http.StatusBadRequest, ".."},
		{"unknown escape", http.MethodGet, srv.URL + "/blobs/a/~x/b?expires=1&sig=00", "", nil, http.StatusBadRequest, "character"},
		{"escape of a plain key", http.MethodGet, srv.URL + "/blobs/a/~e?expires=1&sig=00", "", nil, http.StatusBadRequest, "exactly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.url, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set(TokenHeader, tc.token)
			}
			code, e := send(t, srv.Client(), req)
			if code != tc.want || !strings.Contains(e.Error, tc.mention) {
				t.Fatalf("%d %q, want %d mentioning %q", code, e.Error, tc.want, tc.mention)
			}
		})
	}
	assertNoTemps(t, dir)
}

// TestDownloadHeaders: blobs are served so a browser never runs them, images still show.
func TestDownloadHeaders(t *testing.T) {
	s, srv := serve(t, t.TempDir())
	ctx := context.Background()
	for key, want := range map[string]string{"a/shot.png": "image/png", "a/page.html": "application/octet-stream", "a/noext": "application/octet-stream"} {
		if err := s.Put(ctx, key, strings.NewReader("<html><script>alert(1)</script>"), -1); err != nil {
			t.Fatal(err)
		}
		u, err := s.SignDownload(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != want || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: Content-Type %q nosniff %q, want %q and nosniff", key, ct, resp.Header.Get("X-Content-Type-Options"), want)
		}
	}
}

// TestStaleTemps: New removes old temporary files a crash left behind and keeps fresh ones,
// which may belong to an upload in progress.
func TestStaleTemps(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(dir, "https://example.com", testSecret); err != nil {
		t.Fatal(err)
	}
	old, fresh := filepath.Join(dir, "tmp", "put-old"), filepath.Join(dir, "tmp", "put-fresh")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := New(dir, "https://example.com", testSecret); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old temp file: %v, want removed", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temp file: %v, want kept", err)
	}
}

// TestReopen: blobs and signed URLs survive a restart with the same secret, and URLs die with
// a changed secret.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s1, srv := serve(t, dir)
	ctx := context.Background()
	if err := s1.Put(ctx, "kept", strings.NewReader("still here"), -1); err != nil {
		t.Fatal(err)
	}
	u, err := s1.SignDownload(ctx, "kept", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := New(dir, srv.URL, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := s2.Get(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "still here" {
		t.Fatalf("after reopen Get = %q", b)
	}
	for _, tc := range []struct {
		secret []byte
		want   int
	}{{testSecret, http.StatusOK}, {[]byte("another-secret-of-16+"), http.StatusForbidden}} {
		s3, err := New(dir, srv.URL, tc.secret)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		s3.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		if rec.Code != tc.want {
			t.Errorf("secret %q: GET old URL = %d, want %d", tc.secret, rec.Code, tc.want)
		}
	}
}

// TestURLPath: keys that path cleaning would merge get URL paths that cleaning leaves alone,
// and the handler gets every key back.
func TestURLPath(t *testing.T) {
	for _, key := range []string{"a", "a/b", "a//b", "a/./b", "./a", "a/.", "a/", ".", "a/.b", "a/b/", "a//", strings.Repeat("/.", 200)[1:]} {
		p := urlPath(key)
		if strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.HasSuffix(p, "/.") || p == "." || strings.HasPrefix(p, "./") {
			t.Errorf("key %q: URL path %q would be cleaned", key, p)
		}
		if got := keyOfPath(p); got != key {
			t.Errorf("key %q: URL path %q reads back as %q", key, p, got)
		}
	}
}
