package s3blob

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/blobtest"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// open makes a store on a fresh bucket of the test S3 server and removes the bucket after.
func open(t *testing.T, public func(endpoint string) string) *Store {
	t.Helper()
	c := sinktest.S3(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config{Endpoint: c.Endpoint, Bucket: c.Bucket, AccessKey: c.AccessKey, SecretKey: c.SecretKey}
	if public != nil {
		cfg.PublicEndpoint = public(c.Endpoint)
	}
	s, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", c, err)
	}
	t.Cleanup(func() { removeBucket(t, s) })
	return s
}

func removeBucket(t *testing.T, s *Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Logf("list %s: %v", s.bucket, obj.Err)
			return
		}
		if err := s.client.RemoveObject(ctx, s.bucket, obj.Key, minio.RemoveObjectOptions{}); err != nil {
			t.Logf("remove %s/%s: %v", s.bucket, obj.Key, err)
		}
	}
	if err := s.client.RemoveBucket(ctx, s.bucket); err != nil {
		t.Logf("remove bucket %s: %v", s.bucket, err)
	}
}

func TestConformance(t *testing.T) {
	t.Run("s3", func(t *testing.T) {
		blobtest.Run(t, func(t *testing.T) (sinks.BlobStore, *http.Client) {
			return open(t, nil), &http.Client{Timeout: time.Minute}
		})
	})
}

// TestPublicEndpoint: URLs are signed for the address clients use, and work there.
func TestPublicEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		public func(endpoint string) string
	}{
		{"host:port", func(e string) string { return strings.Replace(e, "127.0.0.1", "localhost", 1) }},
		{"URL", func(e string) string { return "http://" + strings.Replace(e, "127.0.0.1", "localhost", 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, tc.public)
			ctx := context.Background()
			up, err := s.SignUpload(ctx, "public/blob", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if u, _ := url.Parse(up.URL); u == nil || !strings.HasPrefix(u.Host, "localhost:") || u.Scheme != "http" {
				t.Fatalf("upload URL %q is not on the public endpoint", up.URL)
			}
			req, _ := http.NewRequest(http.MethodPut, up.URL, strings.NewReader("via public"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("PUT via public endpoint: %d", resp.StatusCode)
			}
			dl, err := s.SignDownload(ctx, "public/blob", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(dl, "//localhost:") {
				t.Fatalf("download URL %q is not on the public endpoint", dl)
			}
			resp, err = http.Get(dl)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(b) != "via public" {
				t.Fatalf("GET via public endpoint: %d %q", resp.StatusCode, b)
			}
		})
	}
}

func TestConfigRejects(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		c    Config
	}{
		{"no endpoint", Config{Bucket: "b"}},
		{"no bucket", Config{Endpoint: "127.0.0.1:1"}},
		{"public endpoint with path", Config{Endpoint: "127.0.0.1:1", Bucket: "b", PublicEndpoint: "https://s3.example.com/prefix"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(ctx, tc.c); !errors.Is(err, sinks.ErrInvalid) {
				t.Fatalf("New = %v, want ErrInvalid", err)
			}
		})
	}
}

// TestPutUnknownSize: size -1 streams without knowing the length.
func TestPutUnknownSize(t *testing.T) {
	s := open(t, nil)
	ctx := context.Background()
	data := strings.Repeat("0123456789", 100_000)
	if err := s.Put(ctx, "unknown/size", strings.NewReader(data), -1); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Get(ctx, "unknown/size")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	if string(b) != data {
		t.Fatalf("Get = %d bytes, want %d", len(b), len(data))
	}
}

func TestTTLBounds(t *testing.T) {
	s := open(t, nil)
	for _, ttl := range []time.Duration{0, 999 * time.Millisecond, 7*24*time.Hour + time.Second} {
		if _, err := s.SignUpload(context.Background(), "k", ttl); !errors.Is(err, sinks.ErrInvalid) {
			t.Errorf("SignUpload ttl %v = %v, want ErrInvalid", ttl, err)
		}
		if _, err := s.SignDownload(context.Background(), "k", ttl); !errors.Is(err, sinks.ErrInvalid) {
			t.Errorf("SignDownload ttl %v = %v, want ErrInvalid", ttl, err)
		}
	}
}

// TestObjectName: distinct keys get distinct names that a filesystem-backed server can store:
// no name is a directory of another, no empty or "." segment, no segment over 255 bytes.
func TestObjectName(t *testing.T) {
	keys := []string{
		"a", "a/b", "a/b/c", "a//b", "a/./b", "./a", "a/.", "a/", ".", "a/b/", "a//",
		"app/0190e7c5/shot.png", strings.Repeat("k", 512), strings.Repeat("k", 200), strings.Repeat("k", 201),
		strings.Repeat("k", 200) + "/x", strings.Repeat("k", 400) + "/x", strings.Repeat("d/", 255) + "ab",
	}
	names := map[string]string{}
	for _, key := range keys {
		if err := sinks.CheckBlobKey(key); err != nil {
			t.Fatal(err)
		}
		name := objectName(key)
		if prev, dup := names[name]; dup {
			t.Errorf("keys %q and %q share the object name %q", prev, key, name)
		}
		names[name] = key
		segs := strings.Split(name, "/")
		for i, seg := range segs {
			if seg == "" || seg == "." || len(seg) > 255 || (i < len(segs)-1) == strings.HasSuffix(seg, "~") {
				t.Errorf("key %q: object name %q has segment %q", key, name, seg)
			}
		}
	}
	for name, key := range names {
		for other := range names {
			if strings.HasPrefix(other, name+"/") {
				t.Errorf("object of %q is a directory of %q's", key, names[other])
			}
		}
	}
	if got := objectName("app/0190e7c5/shot.png"); got != "app/0190e7c5/shot.png~" {
		t.Errorf("ordinary key maps to %q", got)
	}
}
