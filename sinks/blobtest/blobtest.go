// Package blobtest is the conformance suite of sinks.BlobStore: every backend's test calls Run,
// so all backends honour the same contract, checked over real HTTP for the signed URLs.
package blobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-dev/svc/sinks"
)

// Open returns a store with no blobs and the HTTP client that reaches its signed URLs. Each
// subtest opens its own store; cleanup belongs on t.
type Open func(t *testing.T) (sinks.BlobStore, *http.Client)

// Run checks every rule of the sinks.BlobStore contract. Call it inside t.Run("<backend>", ...)
// so test names show which backend failed.
func Run(t *testing.T, open Open) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, open) })
	t.Run("Overwrite", func(t *testing.T) { testOverwrite(t, open) })
	t.Run("Batch", func(t *testing.T) { testBatch(t, open) })
	t.Run("GetUnknown", func(t *testing.T) { testGetUnknown(t, open) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, open) })
	t.Run("InvalidKeys", func(t *testing.T) { testInvalidKeys(t, open) })
	t.Run("ValidKeys", func(t *testing.T) { testValidKeys(t, open) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, open) })
	t.Run("Ping", func(t *testing.T) { testPing(t, open) })
	t.Run("Upload", func(t *testing.T) { testUpload(t, open) })
	t.Run("UploadMissingHeader", func(t *testing.T) { testUploadMissingHeader(t, open) })
	t.Run("UploadTampered", func(t *testing.T) { testUploadTampered(t, open) })
	t.Run("Download", func(t *testing.T) { testDownload(t, open) })
	t.Run("DownloadTampered", func(t *testing.T) { testDownloadTampered(t, open) })
	// The expiry checks wait for the clock; they run side by side.
	t.Run("Expiry", func(t *testing.T) {
		t.Run("Upload", func(t *testing.T) { t.Parallel(); testUploadExpired(t, open) })
		t.Run("Download", func(t *testing.T) { t.Parallel(); testDownloadExpired(t, open) })
	})
}

const ttl = time.Minute

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func put(t *testing.T, s sinks.BlobStore, key string, data []byte) {
	t.Helper()
	if err := s.Put(ctxOf(t), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
}

// get returns the stored bytes, or the error of Get.
func get(t *testing.T, s sinks.BlobStore, key string) ([]byte, error) {
	t.Helper()
	rc, err := s.Get(ctxOf(t), key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read blob %q: %v", key, err)
	}
	return b, nil
}

func mustGet(t *testing.T, s sinks.BlobStore, key string, want []byte) {
	t.Helper()
	got, err := get(t, s, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q) = %d bytes %s, want %d bytes %s", key, len(got), head(got), len(want), head(want))
	}
}

func mustNotFound(t *testing.T, s sinks.BlobStore, key string) {
	t.Helper()
	got, err := get(t, s, key)
	if !errors.Is(err, sinks.ErrNotFound) {
		t.Fatalf("Get(%q) = %d bytes, %v; want ErrNotFound", key, len(got), err)
	}
}

func head(b []byte) string {
	if len(b) > 16 {
		b = b[:16]
	}
	return fmt.Sprintf("%q…", b)
}

// do sends one request and returns its status and body.
func do(t *testing.T, c *http.Client, method, u string, hdr map[string]string, body []byte) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctxOf(t), method, u, r)
	if err != nil {
		t.Fatalf("request %s %s: %v", method, u, err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, u, err)
	}
	return resp.StatusCode, b
}

func signUpload(t *testing.T, s sinks.BlobStore, key string, ttl time.Duration) sinks.Upload {
	t.Helper()
	before := time.Now()
	up, err := s.SignUpload(ctxOf(t), key, ttl)
	if err != nil {
		t.Fatalf("SignUpload(%q): %v", key, err)
	}
	if up.URL == "" || up.Headers == nil {
		t.Fatalf("SignUpload(%q) = %+v: want a URL and a non-nil header map", key, up)
	}
	// Backends may round to whole seconds, never by more.
	if up.ExpiresAt.Before(before.Add(ttl-time.Second)) || up.ExpiresAt.After(time.Now().Add(ttl+time.Second)) {
		t.Fatalf("SignUpload ttl %v: ExpiresAt %v is not about %v from now", ttl, up.ExpiresAt, ttl)
	}
	return up
}

func signDownload(t *testing.T, s sinks.BlobStore, key string, ttl time.Duration) string {
	t.Helper()
	u, err := s.SignDownload(ctxOf(t), key, ttl)
	if err != nil {
		t.Fatalf("SignDownload(%q): %v", key, err)
	}
	return u
}

func is2xx(code int) bool { return code >= 200 && code < 300 }

func testRoundTrip(t *testing.T, open Open) {
	s, _ := open(t)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", []byte{}},
		{"small", []byte("hello, blob")},
		{"3MiB", randomBytes(t, 3<<20+17)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "roundtrip/" + tc.name + ".bin"
			put(t, s, key, tc.data)
			mustGet(t, s, key, tc.data)
		})
	}
}

func testOverwrite(t *testing.T, open Open) {
	s, c := open(t)
	long, short := randomBytes(t, 100_000), []byte("shorter")
	put(t, s, "over/write", long)
	put(t, s, "over/write", short)
	mustGet(t, s, "over/write", short)

	// An upload URL replaces a blob too.
	up := signUpload(t, s, "over/write", ttl)
	if code, body := do(t, c, http.MethodPut, up.URL, up.Headers, long); !is2xx(code) {
		t.Fatalf("PUT to upload URL: %d %s", code, body)
	}
	mustGet(t, s, "over/write", long)
}

// testBatch checks sinks.BlobBatch on backends that have it: each blob as Put stores it
// (replacing what a key held; downloadable; replaced by a later Put; gone after Delete), and a
// batch with an invalid key is ErrInvalid.
func testBatch(t *testing.T, open Open) {
	s, c := open(t)
	bb, ok := s.(sinks.BlobBatch)
	if !ok {
		t.Skipf("%T has no PutBatch", s)
	}
	put(t, s, "batch/old", []byte("replaced by the batch"))
	blobs := []sinks.Blob{{Key: "batch/old", Bytes: []byte("new")}, {Key: "batch/empty", Bytes: []byte{}}}
	for i := range 20 {
		blobs = append(blobs, sinks.Blob{Key: fmt.Sprintf("batch/%d", i), Bytes: randomBytes(t, 1+i*997)})
	}
	if err := bb.PutBatch(ctxOf(t), blobs); err != nil {
		t.Fatalf("PutBatch: %v", err)
	}
	for _, b := range blobs {
		mustGet(t, s, b.Key, b.Bytes)
	}
	for _, b := range blobs[:4] {
		code, got := do(t, c, http.MethodGet, signDownload(t, s, b.Key, ttl), nil, nil)
		if code != http.StatusOK || !bytes.Equal(got, b.Bytes) {
			t.Fatalf("GET download URL of batch blob %s: %d, %d bytes; want 200, %d bytes", b.Key, code, len(got), len(b.Bytes))
		}
	}
	put(t, s, blobs[2].Key, []byte("put after the batch"))
	mustGet(t, s, blobs[2].Key, []byte("put after the batch"))
	if err := s.Delete(ctxOf(t), blobs[3].Key); err != nil {
		t.Fatalf("Delete of a batch blob: %v", err)
	}
	mustNotFound(t, s, blobs[3].Key)
	if err := bb.PutBatch(ctxOf(t), nil); err != nil {
		t.Errorf("PutBatch(nil): %v", err)
	}
	bad := []sinks.Blob{{Key: "batch/fine", Bytes: []byte("x")}, {Key: "../escape", Bytes: []byte("x")}}
	if err := bb.PutBatch(ctxOf(t), bad); !errors.Is(err, sinks.ErrInvalid) {
		t.Errorf("PutBatch with key ../escape: %v, want ErrInvalid", err)
	}
}

func testGetUnknown(t *testing.T, open Open) {
	s, _ := open(t)
	mustNotFound(t, s, "never/stored")
	put(t, s, "stored", []byte("x"))
	for _, key := range []string{"stored/child", "store", "Stored"} {
		mustNotFound(t, s, key)
	}
}

func testInvalidKeys(t *testing.T, open Open) {
	s, _ := open(t)
	ctx := ctxOf(t)
	keys := []struct{ name, key string }{
		{"empty", ""},
		{"absolute", "/abs"},
		{"dotdot", "a/../b"},
		{"trailing dotdot", "a/.."},
		{"space", "sp ace"},
		{"non-ascii", "caf\u00e9"},
		{"percent", "a%2e"},
		{"query", "a?b"},
		{"513 chars", strings.Repeat("k", 513)},
	}
	methods := []struct {
		name string
		call func(key string) error
	}{
		{"Put", func(key string) error { return s.Put(ctx, key, strings.NewReader("x"), 1) }},
		{"Get", func(key string) error {
			rc, err := s.Get(ctx, key)
			if err == nil {
				rc.Close()
			}
			return err
		}},
		{"SignUpload", func(key string) error { _, err := s.SignUpload(ctx, key, ttl); return err }},
		{"SignDownload", func(key string) error { _, err := s.SignDownload(ctx, key, ttl); return err }},
	}
	for _, k := range keys {
		for _, m := range methods {
			t.Run(m.name+"/"+k.name, func(t *testing.T) {
				if err := m.call(k.key); !errors.Is(err, sinks.ErrInvalid) {
					t.Fatalf("%s(%q) = %v, want ErrInvalid", m.name, k.key, err)
				}
			})
		}
	}
}

// testValidKeys stores keys at the edges of the rule: keys that are prefixes of each other
// (a file and a directory on filesystem-backed stores), and keys that path cleaning would
// merge ("a/b", "a//b", "a/./b"). All are distinct blobs.
func testValidKeys(t *testing.T, open Open) {
	s, c := open(t)
	keys := []string{
		"a",
		"a/b",
		"a/b/c",
		"a//b",
		"a/./b",
		"./a",
		"a/.",
		"a/",
		".",
		"-",
		"a_b",
		"A-Z_a-z.0-9",
		"app/0190e7c5-9c5e-7c56-8e51-3c2f1b0a9d11/attachment.png",
		strings.Repeat("k", 512),
		strings.Repeat("d/", 255) + "ab",
	}
	for i, key := range keys {
		put(t, s, key, []byte(fmt.Sprint("blob ", i)))
	}
	for i, key := range keys {
		mustGet(t, s, key, []byte(fmt.Sprint("blob ", i)))
	}
	// Signed URLs carry every valid key.
	for i, key := range keys {
		want := []byte(fmt.Sprint("uploaded ", i))
		up := signUpload(t, s, key, ttl)
		if code, body := do(t, c, http.MethodPut, up.URL, up.Headers, want); !is2xx(code) {
			t.Fatalf("PUT key of %d chars: %d %s", len(key), code, body)
		}
		code, got := do(t, c, http.MethodGet, signDownload(t, s, key, ttl), nil, nil)
		if code != http.StatusOK || !bytes.Equal(got, want) {
			t.Fatalf("GET key of %d chars: %d %s, want 200 %q", len(key), code, head(got), want)
		}
	}
}

func testConcurrent(t *testing.T, open Open) {
	s, _ := open(t)
	const n = 16
	ctx := ctxOf(t)
	blobs := make([][]byte, n)
	for i := range blobs {
		blobs[i] = randomBytes(t, 64<<10+i)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Put(ctx, fmt.Sprintf("concurrent/%d", i), bytes.NewReader(blobs[i]), int64(len(blobs[i])))
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Put %d: %v", i, errs[i])
		}
		mustGet(t, s, fmt.Sprintf("concurrent/%d", i), blobs[i])
	}
}

func testPing(t *testing.T, open Open) {
	s, _ := open(t)
	if err := s.Ping(ctxOf(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testUpload(t *testing.T, open Open) {
	s, c := open(t)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", []byte{}},
		{"small", []byte(`{"layout":"snapshot"}`)},
		{"3MiB", randomBytes(t, 3<<20+5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "upload/" + tc.name
			up := signUpload(t, s, key, ttl)
			code, body := do(t, c, http.MethodPut, up.URL, up.Headers, tc.data)
			if !is2xx(code) {
				t.Fatalf("PUT with headers %v: %d %s", up.Headers, code, body)
			}
			mustGet(t, s, key, tc.data)
		})
	}
}

// testUploadMissingHeader leaves out each listed header in turn. A backend that lists no
// headers has nothing to leave out; the upload test proves a bare PUT works for it.
func testUploadMissingHeader(t *testing.T, open Open) {
	s, c := open(t)
	up := signUpload(t, s, "missing/header", ttl)
	t.Logf("upload headers: %v", up.Headers)
	for name := range up.Headers {
		t.Run(name, func(t *testing.T) {
			hdr := map[string]string{}
			for k, v := range up.Headers {
				if k != name {
					hdr[k] = v
				}
			}
			code, body := do(t, c, http.MethodPut, up.URL, hdr, []byte("data"))
			if code < 400 || code > 499 {
				t.Fatalf("PUT without %s: %d %s, want 4xx", name, code, body)
			}
			mustNotFound(t, s, "missing/header")

			hdr[name] = up.Headers[name] + "x"
			code, body = do(t, c, http.MethodPut, up.URL, hdr, []byte("data"))
			if code < 400 || code > 499 {
				t.Fatalf("PUT with a changed %s: %d %s, want 4xx", name, code, body)
			}
			mustNotFound(t, s, "missing/header")
		})
	}
}

// tamper returns variants of the signed URL a that must all be refused: the path of b (a URL
// signed the same way for another key) with a's query, a changed signature, a later expiry.
func tamper(t *testing.T, a, b string) map[string]string {
	t.Helper()
	u, err := url.Parse(a)
	if err != nil {
		t.Fatalf("parse signed URL %q: %v", a, err)
	}
	other, err := url.Parse(b)
	if err != nil {
		t.Fatalf("parse signed URL %q: %v", b, err)
	}
	if other.Path == u.Path {
		t.Fatalf("URLs of two keys share the path %q", u.Path)
	}
	out := map[string]string{}
	k := *other
	k.RawQuery = u.RawQuery
	out["key"] = k.String()

	q := u.Query()
	var sigs, exps int
	for name, vals := range q {
		lower := strings.ToLower(name)
		switch {
		case strings.Contains(lower, "signature") || lower == "sig":
			sigs++
			v := []byte(vals[0])
			// Flip the last hex digit to another valid one.
			if v[len(v)-1] == '0' {
				v[len(v)-1] = '1'
			} else {
				v[len(v)-1] = '0'
			}
			out["signature"] = withQuery(u, name, string(v))
		case strings.Contains(lower, "expires"):
			exps++
			out["expiry"] = withQuery(u, name, vals[0]+"0")
		}
	}
	if sigs != 1 || exps != 1 {
		t.Fatalf("signed URL %q: want one signature and one expiry parameter to tamper with, found %d and %d", a, sigs, exps)
	}
	return out
}

func withQuery(u *url.URL, name, value string) string {
	c := *u
	q := c.Query()
	q.Set(name, value)
	c.RawQuery = q.Encode()
	return c.String()
}

func testUploadTampered(t *testing.T, open Open) {
	s, c := open(t)
	up := signUpload(t, s, "tamper/original", ttl)
	for name, u := range tamper(t, up.URL, signUpload(t, s, "tamper/other", ttl).URL) {
		t.Run(name, func(t *testing.T) {
			code, body := do(t, c, http.MethodPut, u, up.Headers, []byte("evil"))
			if code != http.StatusForbidden {
				t.Fatalf("PUT to tampered URL %s: %d %s, want 403", u, code, body)
			}
			mustNotFound(t, s, "tamper/original")
			mustNotFound(t, s, "tamper/other")
		})
	}
	// The untouched URL still works, so the refusals above were about the tampering.
	if code, body := do(t, c, http.MethodPut, up.URL, up.Headers, []byte("good")); !is2xx(code) {
		t.Fatalf("PUT to the untouched URL: %d %s", code, body)
	}
	mustGet(t, s, "tamper/original", []byte("good"))
	// A download URL is not an upload URL.
	if code, body := do(t, c, http.MethodPut, signDownload(t, s, "tamper/original", ttl), up.Headers, []byte("evil")); code < 400 || code > 499 {
		t.Fatalf("PUT to a download URL: %d %s, want 4xx", code, body)
	}
	mustGet(t, s, "tamper/original", []byte("good"))
}

func testDownload(t *testing.T, open Open) {
	s, c := open(t)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", []byte{}},
		{"small", []byte("screenshot")},
		{"3MiB", randomBytes(t, 3<<20+3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "download/" + tc.name
			put(t, s, key, tc.data)
			code, got := do(t, c, http.MethodGet, signDownload(t, s, key, ttl), nil, nil)
			if code != http.StatusOK || !bytes.Equal(got, tc.data) {
				t.Fatalf("GET download URL: %d, %d bytes %s; want 200, %d bytes %s", code, len(got), head(got), len(tc.data), head(tc.data))
			}
		})
	}
}

func testDownloadTampered(t *testing.T, open Open) {
	s, c := open(t)
	put(t, s, "tamper/a", []byte("a"))
	put(t, s, "tamper/b", []byte("b"))
	for name, u := range tamper(t, signDownload(t, s, "tamper/a", ttl), signDownload(t, s, "tamper/b", ttl)) {
		t.Run(name, func(t *testing.T) {
			if code, body := do(t, c, http.MethodGet, u, nil, nil); code != http.StatusForbidden {
				t.Fatalf("GET tampered URL %s: %d %s, want 403", u, code, head(body))
			}
		})
	}
}

// waitPast sleeps until a moment after the URL's expiry; the slack covers servers that check
// expiry in whole seconds.
func waitPast(at time.Time) {
	time.Sleep(time.Until(at) + 1100*time.Millisecond)
}

// shortTTL is the lifetime of the URLs the expiry tests sign. S3 counts it from the signing
// time cut to the second, so a URL of 1 s can expire within milliseconds of being signed, before
// a loaded machine has sent the request made "before expiry" (it did, under make test): 3 s
// leaves 2 s at least.
const shortTTL = 3 * time.Second

func testUploadExpired(t *testing.T, open Open) {
	s, c := open(t)
	early := signUpload(t, s, "expiry/early", shortTTL)
	late := signUpload(t, s, "expiry/late", shortTTL+time.Second)
	// Before expiry the URL works: what follows is refused because of the time alone.
	if code, body := do(t, c, http.MethodPut, early.URL, early.Headers, []byte("in time")); !is2xx(code) {
		t.Fatalf("PUT before expiry: %d %s", code, body)
	}
	mustGet(t, s, "expiry/early", []byte("in time"))
	waitPast(late.ExpiresAt)
	if code, body := do(t, c, http.MethodPut, late.URL, late.Headers, []byte("too late")); code != http.StatusForbidden {
		t.Fatalf("PUT after expiry: %d %s, want 403", code, body)
	}
	mustNotFound(t, s, "expiry/late")
	if code, body := do(t, c, http.MethodPut, early.URL, early.Headers, []byte("too late")); code != http.StatusForbidden {
		t.Fatalf("second PUT after expiry: %d %s, want 403", code, body)
	}
	mustGet(t, s, "expiry/early", []byte("in time"))
}

func testDownloadExpired(t *testing.T, open Open) {
	s, c := open(t)
	put(t, s, "expiry/blob", []byte("secret screenshot"))
	u := signDownload(t, s, "expiry/blob", shortTTL)
	signed := time.Now()
	if code, body := do(t, c, http.MethodGet, u, nil, nil); code != http.StatusOK || string(body) != "secret screenshot" {
		t.Fatalf("GET before expiry: %d %s", code, head(body))
	}
	waitPast(signed.Add(shortTTL))
	if code, body := do(t, c, http.MethodGet, u, nil, nil); code != http.StatusForbidden {
		t.Fatalf("GET after expiry: %d %s, want 403", code, head(body))
	}
}

// testDelete: a deleted blob is gone, others stay, and deleting twice or an unknown key is no
// error; a bad key is ErrInvalid.
func testDelete(t *testing.T, open Open) {
	s, _ := open(t)
	keep, gone := "apps/1/keep", "apps/1/gone"
	put(t, s, keep, []byte("keep"))
	put(t, s, gone, []byte("gone"))
	for i := 0; i < 2; i++ {
		if err := s.Delete(ctxOf(t), gone); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	mustNotFound(t, s, gone)
	mustGet(t, s, keep, []byte("keep"))
	if err := s.Delete(ctxOf(t), "never/stored"); err != nil {
		t.Fatalf("Delete of an unknown key: %v", err)
	}
	if err := s.Delete(ctxOf(t), "../x"); !errors.Is(err, sinks.ErrInvalid) {
		t.Fatalf("Delete of a bad key: %v, want ErrInvalid", err)
	}
	put(t, s, gone, []byte("again")) // a deleted key can be written again
	mustGet(t, s, gone, []byte("again"))
}
