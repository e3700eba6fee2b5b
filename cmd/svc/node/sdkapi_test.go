package node

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// TestUploads: an upload URL from PUT /events takes the file with its headers, the blob is then
// readable, a missing header or an expired URL is refused.
func TestUploads(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, func(c *Config) { c.UploadURLTTL = 2 * time.Second })
			r := tn.putJSON(t, tn.key, uuid.NewString(), sampleBatch(uuid.New(), time.Now(), 1))
			var v struct {
				Attachments []struct {
					ID        uuid.UUID         `json:"id"`
					UploadURL string            `json:"upload_url"`
					ExpiresAt time.Time         `json:"expires_at"`
					Headers   map[string]string `json:"headers"`
				} `json:"attachments"`
			}
			if err := json.Unmarshal(r.body, &v); err != nil || len(v.Attachments) != 1 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			a := v.Attachments[0]
			if d := time.Until(a.ExpiresAt); d <= 0 || d > 3*time.Second {
				t.Errorf("expires_at %v is not ~2s ahead", a.ExpiresAt)
			}
			put := func(withHeaders bool) int {
				req, _ := http.NewRequest(http.MethodPut, a.UploadURL, strings.NewReader("PNGDATA"))
				if withHeaders {
					for k, h := range a.Headers {
						req.Header.Set(k, h)
					}
				}
				resp, err := tn.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if len(a.Headers) > 0 {
				if s := put(false); s/100 != 4 {
					t.Errorf("upload without the listed headers: %d", s)
				}
			}
			if s := put(true); s/100 != 2 {
				t.Fatalf("upload: %d", s)
			}
			rc, err := tn.Blobs.Get(context.Background(), "attachments/"+tn.app.ID.String()+"/"+a.ID.String())
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			if string(got) != "PNGDATA" {
				t.Fatalf("stored %q", got)
			}
			time.Sleep(time.Until(a.ExpiresAt) + 1500*time.Millisecond)
			if s := put(true); s != http.StatusForbidden {
				t.Fatalf("upload after expiry: %d, want 403", s)
			}
		})
	}
}

// TestBuilds covers PUT /builds: validation, size replaced on a repeat, mappings with upload
// items, 413 for a declared file over the limit.
func TestBuilds(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, func(c *Config) { c.MaxMappingBytes = 1 << 20 })
			put := func(body string) response {
				return tn.do(t, http.MethodPut, "/builds", tn.key, map[string]string{"Content-Type": "application/json"}, strings.NewReader(body))
			}
			cases := []struct {
				name   string
				body   string
				status int
				want   string
			}{
				{"size as number", `{"version_name":"1.0","version_code":"10","build_size":1000,"build_type":"apk"}`, 200, `"uploaded build info"`},
				{"size as string, extra keys", `{"version_name":"1.0","version_code":"10","build_size":"2000","build_type":"apk","app_unique_id":"x","os_name":"android"}`, 200, `"uploaded build info"`},
				{"missing version", `{"version_code":"10","build_size":1,"build_type":"apk"}`, 400, "version_name is required"},
				{"bad type", `{"version_name":"1","version_code":"1","build_size":1,"build_type":"exe"}`, 400, "build_type"},
				{"bad size", `{"version_name":"1","version_code":"1","build_size":"big","build_type":"ipa"}`, 400, "build_size"},
				{"path as file name", `{"version_name":"1","version_code":"1","build_size":1,"build_type":"ipa","mappings":[{"type":"dsym","filename":"a/b.tgz"}]}`, 400, "bare file name"},
				{"bad mapping type", `{"version_name":"1","version_code":"1","build_size":1,"build_type":"ipa","mappings":[{"type":"zip","filename":"b.tgz"}]}`, 400, "mappings[0].type"},
				{"declared too large", `{"version_name":"1","version_code":"1","build_size":1,"build_type":"ipa","mappings":[{"type":"dsym","filename":"b.tgz","size":2097152}]}`, 413, "exceeds the limit"},
				{"malformed", `{"version_name":`, 400, "malformed"},
				{"NUL in a version", `{"version_name":"1\u0000","version_code":"1","build_size":1,"build_type":"apk"}`, 400, "NUL"},
			}
			for _, c := range cases {
				r := put(c.body)
				if r.status != c.status || !strings.Contains(string(r.body), c.want) {
					t.Errorf("%s: %d %s, want %d with %q", c.name, r.status, r.body, c.status, c.want)
				}
			}
			builds, err := tn.Meta.Builds(context.Background(), tn.app.ID)
			if err != nil || len(builds) != 1 || builds[0].Size != 2000 {
				t.Fatalf("builds after a repeat: %+v %v (want one build of size 2000)", builds, err)
			}
			r := put(`{"version_name":"1.0","version_code":"10","build_size":10241024,"build_type":"ipa","mappings":[{"type":"dsym","filename":"DemoApp.app.dSYM.tgz"},{"type":"elf_debug","filename":"app.symbols"}]}`)
			if r.status != 200 {
				t.Fatalf("with mappings: %d %s", r.status, r.body)
			}
			var v struct {
				Mappings []struct {
					ID        uuid.UUID         `json:"id"`
					Type      string            `json:"type"`
					Filename  string            `json:"filename"`
					UploadURL string            `json:"upload_url"`
					ExpiresAt string            `json:"expires_at"`
					Headers   map[string]string `json:"headers"`
				} `json:"mappings"`
			}
			if err := json.Unmarshal(r.body, &v); err != nil || len(v.Mappings) != 2 {
				t.Fatalf("%s", r.body)
			}
			m := v.Mappings[0]
			if m.Type != "dsym" || m.Filename != "DemoApp.app.dSYM.tgz" || m.Headers["x-svc-mapping-id"] != m.ID.String() ||
				m.Headers["x-svc-original-file-name"] != m.Filename || m.ExpiresAt == "" {
				t.Fatalf("mapping item %+v", m)
			}
			req, _ := http.NewRequest(http.MethodPut, m.UploadURL, bytes.NewReader([]byte("dsym-bytes")))
			for k, h := range m.Headers {
				req.Header.Set(k, h)
			}
			resp, err := tn.client.Do(req)
			if err != nil || resp.StatusCode/100 != 2 {
				t.Fatalf("mapping upload: %v %v", resp, err)
			}
			resp.Body.Close()
			ms, err := tn.Meta.Mappings(context.Background(), tn.app.ID, "1.0", "10")
			if err != nil || len(ms) != 2 {
				t.Fatalf("mappings stored: %+v %v", ms, err)
			}
		})
	}
}

// TestConfig covers GET /config: defaults, strong ETag, Cache-Control, 304 on a match, and a new
// ETag when the configuration changes.
func TestConfig(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, nil)
			get := func(inm string) response {
				h := map[string]string{"Content-Type": "application/json"}
				if inm != "" {
					h["If-None-Match"] = inm
				}
				return tn.do(t, http.MethodGet, "/config", tn.key, h, nil)
			}
			r := get("")
			if r.status != 200 || r.header.Get("Cache-Control") != "max-age=600" {
				t.Fatalf("%d %v", r.status, r.header)
			}
			etag := r.header.Get("ETag")
			if !strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, "W/") {
				t.Fatalf("ETag %q is not strong", etag)
			}
			var cfg map[string]any
			if err := json.Unmarshal(r.body, &cfg); err != nil {
				t.Fatal(err)
			}
			for k, want := range map[string]any{"max_events_in_batch": 10000.0, "crash_timeline_duration": 300.0, "trace_sampling_rate": 100.0,
				"screenshot_mask_level": "all_text_and_media", "cpu_usage_interval": 5.0, "crash_take_screenshot": true} {
				if cfg[k] != want {
					t.Errorf("%s = %v, want %v", k, cfg[k], want)
				}
			}
			if l, ok := cfg["http_blocked_headers"].([]any); !ok || len(l) != 0 {
				t.Errorf("http_blocked_headers = %v, want []", cfg["http_blocked_headers"])
			}
			if r := get(etag); r.status != 304 || len(r.body) != 0 {
				t.Fatalf("matching If-None-Match: %d %q", r.status, r.body)
			}
			c := model.DefaultSDKConfig()
			c.TraceSamplingRate = 10
			c.HTTPBlockedHeaders = []string{"Authorization"}
			if err := tn.Meta.SetSDKConfig(context.Background(), tn.app.ID, c, time.Now()); err != nil {
				t.Fatal(err)
			}
			r = get(etag)
			if r.status != 200 || r.header.Get("ETag") == etag || !strings.Contains(string(r.body), `"trace_sampling_rate":10`) {
				t.Fatalf("after a change: %d %v %s", r.status, r.header, r.body)
			}
			if r := tn.do(t, http.MethodGet, "/config", "", nil, nil); r.status != 401 {
				t.Fatalf("no key: %d", r.status)
			}
		})
	}
}

// TestKeyRotationSeenByIngest: after the key is rotated, the old key is refused at once.
func TestKeyRotationSeenByIngest(t *testing.T) {
	tn := startNode(t, "embedded", nil)
	if r := tn.putJSON(t, tn.key, uuid.NewString(), sampleBatch(uuid.New(), time.Now(), 1)); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	newKey := model.APIKey{AppID: tn.app.ID, Key: model.NewAPIKey(), CreatedAt: time.Now().UTC()}
	if err := tn.Meta.RotateAPIKey(context.Background(), newKey); err != nil {
		t.Fatal(err)
	}
	tn.Keys.Invalidate(tn.app.ID)
	if r := tn.putJSON(t, tn.key, uuid.NewString(), sampleBatch(uuid.New(), time.Now(), 1)); r.status != 401 {
		t.Fatalf("old key after rotation: %d %s", r.status, r.body)
	}
	if r := tn.putJSON(t, newKey.Key, uuid.NewString(), sampleBatch(uuid.New(), time.Now(), 1)); r.status != 200 {
		t.Fatalf("new key: %d %s", r.status, r.body)
	}
}

// TestIngestRateLimit: past the per-app rate, 429 with Retry-After; other apps are unaffected.
func TestIngestRateLimit(t *testing.T) {
	tn := startNode(t, "embedded", func(c *Config) { c.IngestRatePerMin = 3 })
	other, otherKey := tn.newApp(t)
	_ = other
	var last response
	for i := 0; i < 4; i++ {
		last = tn.putJSON(t, tn.key, uuid.NewString(), sampleBatch(uuid.New(), time.Now(), 1))
	}
	if last.status != 429 || last.header.Get("Retry-After") == "" || !strings.Contains(string(last.body), `"error"`) {
		t.Fatalf("4th request: %d %v %s", last.status, last.header, last.body)
	}
	if r := tn.putJSON(t, otherKey, uuid.NewString(), sampleBatch(uuid.New(), time.Now(), 1)); r.status != 200 {
		t.Fatalf("other app: %d %s", r.status, r.body)
	}
}

// TestInlineAttachments: attachment bytes sent inline in a JSON batch reach the blob store
// (written by the flusher, after the acknowledgement, from what the spool holds).
func TestInlineAttachments(t *testing.T) {
	tn := startNode(t, "embedded", nil)
	n := 0
	for _, path := range fixtures(t) {
		body := readFile(t, path)
		b, err := model.DecodeBatch(body, tn.app.ID, false)
		if err != nil || len(b.Inline) == 0 {
			continue
		}
		if r := tn.putJSON(t, tn.key, uuid.NewString(), body); r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		tn.waitFlushed(t)
		for _, in := range b.Inline {
			rc, err := tn.Blobs.Get(context.Background(), "attachments/"+tn.app.ID.String()+"/"+in.AttachmentID.String())
			if err != nil {
				t.Fatalf("%s: inline attachment %s: %v", path, in.AttachmentID, err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			if !bytes.Equal(got, in.Bytes) {
				t.Fatalf("%s: inline attachment %s stored %d bytes, sent %d", path, in.AttachmentID, len(got), len(in.Bytes))
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no fixture has inline attachment bytes")
	}
}
