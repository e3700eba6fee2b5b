package localblob

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzSignedURL: no path and query make the blob handler panic or answer 5xx, and only a URL
// carrying the store's own signature reads or writes a blob.
func FuzzSignedURL(f *testing.F) {
	s, err := New(f.TempDir(), "http://localhost:1", testSecret)
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "apps/a/blob", strings.NewReader("data"), 4); err != nil {
		f.Fatal(err)
	}
	dl, err := s.SignDownload(ctx, "apps/a/blob", time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	up, err := s.SignUpload(ctx, "apps/a/up", time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	for _, raw := range []string{dl, up.URL} {
		u, _ := url.Parse(raw)
		f.Add(http.MethodGet, u.EscapedPath(), u.RawQuery)
		f.Add(http.MethodPut, u.EscapedPath(), u.RawQuery)
	}
	f.Add(http.MethodGet, "/blobs/..%2f..%2fetc/passwd", "exp=1&sig=x")
	h := s.Handler()
	f.Fuzz(func(t *testing.T, method, path, query string) {
		if method != http.MethodGet && method != http.MethodPut {
			method = http.MethodGet
		}
		u := &url.URL{Path: "/", RawQuery: query}
		if p, err := url.PathUnescape(path); err == nil && strings.HasPrefix(p, "/") {
			u.Path = p
		}
		req := httptest.NewRequest(method, "/", strings.NewReader("body"))
		req.URL, req.RequestURI = u, u.RequestURI()
		for k, v := range up.Headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s: %d %s", method, u.RequestURI(), rec.Code, rec.Body)
		}
		if rec.Code/100 == 2 && !signedHere(s, method, u, up.Headers[TokenHeader]) {
			t.Fatalf("%s %s: %d for a URL the store did not sign", method, u.RequestURI(), rec.Code)
		}
	})
}

// signedHere says whether u carries a signature the store made for this method (in any run:
// the secret is the test's), read as the store reads it.
func signedHere(s *Store, method string, u *url.URL, token string) bool {
	p, ok := strings.CutPrefix(u.Path, PathPrefix)
	q := u.Query()
	exp, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if !ok || err != nil {
		return false
	}
	op := opGet
	if method == http.MethodPut {
		op = opPut
	} else {
		token = ""
	}
	return strings.ToLower(q.Get("sig")) == s.sign(op, keyOfPath(p), exp, token)
}
