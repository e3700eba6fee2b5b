package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// TestIngestFixtures sends every recorded SDK batch unmodified, as JSON and as multipart, and
// checks every event and span is stored with every field, exactly once.
func TestIngestFixtures(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, nil)
			multiApp, multiKey := tn.newApp(t)
			var wantEvents, wantSpans []any
			var nEvents, nSpans int64
			for _, path := range fixtures(t) {
				body := readFile(t, path)
				name := filepath.Base(path)
				r := tn.putJSON(t, tn.key, uuid.NewString(), body)
				if r.status != http.StatusOK {
					t.Fatalf("%s as JSON: %d %s", name, r.status, r.body)
				}
				var keys map[string]json.RawMessage
				if err := json.Unmarshal(r.body, &keys); err != nil || len(keys) != 1 || keys["attachments"] == nil {
					t.Fatalf("%s: body must be exactly {\"attachments\": …}: %s", name, r.body)
				}
				mp, ct := toMultipart(t, body, nil)
				r = tn.do(t, http.MethodPut, "/events", multiKey, map[string]string{"svc-req-id": uuid.NewString(), "Content-Type": ct}, bytes.NewReader(mp))
				if r.status != http.StatusAccepted || string(bytes.TrimSpace(r.body)) != `{"ok":"accepted"}` {
					t.Fatalf("%s as multipart: %d %s", name, r.status, r.body)
				}
				b, err := model.DecodeBatch(body, tn.app.ID, false)
				if err != nil {
					t.Fatal(err)
				}
				for i := range b.Events {
					for j := range b.Events[i].Attachments {
						a := &b.Events[i].Attachments[j]
						a.BlobKey = "attachments/" + tn.app.ID.String() + "/" + a.ID.String()
					}
					wantEvents = append(wantEvents, b.Events[i])
				}
				for i := range b.Spans {
					wantSpans = append(wantSpans, b.Spans[i])
				}
				nEvents += int64(len(b.Events))
				nSpans += int64(len(b.Spans))
			}
			tn.waitFlushed(t)
			ctx := context.Background()
			for _, w := range wantEvents {
				want := w.(model.Event)
				want.Facts = model.DeriveFacts(&want) // ingest derives and stores them
				got, err := tn.Events.Event(ctx, tn.app.ID, want.ID)
				if err != nil {
					t.Fatalf("event %s (%s): %v", want.ID, want.Type, err)
				}
				if !equalEvent(got, want) {
					t.Fatalf("event %s (%s) stored differently:\n got %+v\nwant %+v", want.ID, want.Type, got, want)
				}
			}
			for _, w := range wantSpans {
				want := w.(model.Span)
				got, err := tn.Events.Span(ctx, tn.app.ID, want.SpanID)
				if err != nil {
					t.Fatalf("span %s: %v", want.SpanID, err)
				}
				if !equalSpan(got, want) {
					t.Fatalf("span %s stored differently:\n got %+v\nwant %+v", want.SpanID, got, want)
				}
			}
			for _, app := range []uuid.UUID{tn.app.ID, multiApp.ID} {
				if e, s := tn.counts(t, app); e != nEvents || s != nSpans {
					t.Errorf("app %s: stored %d events, %d spans; want %d, %d", app, e, s, nEvents, nSpans)
				}
			}
		})
	}
}

// sampleBatch is a small valid JSON batch of one session, with one attachment.
func sampleBatch(session uuid.UUID, ts time.Time, n int) []byte {
	var events []string
	attr := `{"installation_id":"9a8f1f6e-0d3c-4d59-9b57-3b9f3c1d2e01","app_version":"1.2.3","app_build":"45","app_unique_id":"com.example",` +
		`"platform":"android","measure_sdk_version":"0.11.0","thread_name":"main","network_type":"wifi","network_provider":"unknown",` +
		`"network_generation":"unknown","device_cpu_arch":"arm64","os_name":"android","os_version":"34"}`
	for i := 0; i < n; i++ {
		att := "[]"
		if i == 0 {
			att = `[{"id":"` + uuid.NewString() + `","name":"screen.png","type":"screenshot"}]`
		}
		events = append(events, fmt.Sprintf(`{"id":"%s","session_id":"%s","timestamp":"%s","type":"custom","custom":{"name":"e%d"},"attribute":%s,"attachments":%s,"user_triggered":false}`,
			uuid.NewString(), session, ts.Add(time.Duration(i)*time.Millisecond).UTC().Format("2006-01-02T15:04:05.000000000Z"), i, attr, att))
	}
	return []byte(`{"events":[` + strings.Join(events, ",") + `],"spans":[]}`)
}

// TestRequestGate: a repeated request id is not processed again; JSON repeats get fresh upload
// URLs for the same attachments, multipart repeats the known-request answer; concurrent requests
// with one id are processed once.
func TestRequestGate(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, nil)
			body := sampleBatch(uuid.New(), time.Now(), 5)
			req := uuid.NewString()
			first := tn.putJSON(t, tn.key, req, body)
			if first.status != 200 {
				t.Fatalf("first: %d %s", first.status, first.body)
			}
			time.Sleep(1100 * time.Millisecond) // upload URLs carry second-resolution expiry
			again := tn.putJSON(t, tn.key, req, body)
			if again.status != 200 {
				t.Fatalf("repeat: %d %s", again.status, again.body)
			}
			type item struct{ ID, Type, Filename, UploadURL, ExpiresAt string }
			parse := func(r response) []item {
				var v struct {
					Attachments []struct {
						ID        string            `json:"id"`
						Type      string            `json:"type"`
						Filename  string            `json:"filename"`
						UploadURL string            `json:"upload_url"`
						ExpiresAt string            `json:"expires_at"`
						Headers   map[string]string `json:"headers"`
					} `json:"attachments"`
				}
				if err := json.Unmarshal(r.body, &v); err != nil {
					t.Fatal(err)
				}
				var out []item
				for _, a := range v.Attachments {
					if a.Headers == nil {
						t.Errorf("headers must be at least {}: %s", r.body)
					}
					out = append(out, item{a.ID, a.Type, a.Filename, a.UploadURL, a.ExpiresAt})
				}
				return out
			}
			a, b := parse(first), parse(again)
			if len(a) != 1 || len(b) != 1 || a[0].ID != b[0].ID || a[0].Filename != "screen.png" || a[0].Type != "screenshot" {
				t.Fatalf("attachments differ: %+v vs %+v", a, b)
			}
			if a[0].UploadURL == b[0].UploadURL || a[0].ExpiresAt == b[0].ExpiresAt {
				t.Errorf("repeat must carry a fresh upload URL: %+v vs %+v", a[0], b[0])
			}
			// Concurrent requests with one new id: one is processed; the others are told to
			// retry (429, Retry-After: 60) or, once it is done, get the accepted answer.
			body2 := sampleBatch(uuid.New(), time.Now(), 3)
			req2 := uuid.NewString()
			var wg sync.WaitGroup
			statuses := make([]int, 12)
			for i := range statuses {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := tn.putJSON(t, tn.key, req2, body2)
					statuses[i] = r.status
					if r.status == 429 {
						if r.header.Get("Retry-After") != "60" || !strings.Contains(string(r.body), `"warning"`) {
							t.Errorf("in-progress answer: %v %s", r.header, r.body)
						}
					} else if r.status != 200 {
						t.Errorf("concurrent: %d %s", r.status, r.body)
					}
				}()
			}
			wg.Wait()
			tn.waitFlushed(t)
			if e, _ := tn.counts(t, tn.app.ID); e != 8 {
				t.Fatalf("stored %d events, want 8 (5 + 3, each once); statuses %v", e, statuses)
			}
			// Multipart repeats.
			mp, ct := toMultipart(t, sampleBatch(uuid.New(), time.Now(), 2), nil)
			req3 := uuid.NewString()
			for i, want := range []string{`{"ok":"accepted"}`, `{"ok":"accepted, known event request"}`} {
				r := tn.do(t, http.MethodPut, "/events", tn.key, map[string]string{"svc-req-id": req3, "Content-Type": ct}, bytes.NewReader(mp))
				if r.status != 202 || string(bytes.TrimSpace(r.body)) != want {
					t.Fatalf("multipart %d: %d %s", i, r.status, r.body)
				}
			}
			tn.waitFlushed(t)
			if e, _ := tn.counts(t, tn.app.ID); e != 10 {
				t.Fatalf("stored %d events, want 10", e)
			}
		})
	}
}

// TestIngestRefusals: every refusal answers its status with a {error} naming the problem, and
// nothing of a refused batch is kept.
func TestIngestRefusals(t *testing.T) {
	tn := startNode(t, "embedded", func(c *Config) { c.MaxJSONBytes = 64 << 10; c.MaxMultipartBytes = 128 << 10 })
	session := uuid.New()
	valid := sampleBatch(session, time.Now(), 2)
	big := bytes.Repeat([]byte(" "), 70<<10)
	bigBody := append(append([]byte{}, valid[:len(valid)-1]...), append(big, '}')...)
	mpBig, mpCT := toMultipart(t, sampleBatch(uuid.New(), time.Now(), 1), map[string][]byte{"blob-" + uuid.NewString(): bytes.Repeat([]byte("x"), 200<<10)})
	base := map[string]string{"svc-req-id": "", "Content-Type": "application/json"}
	with := func(kv ...string) map[string]string {
		h := map[string]string{}
		for k, v := range base {
			h[k] = v
		}
		h["svc-req-id"] = uuid.NewString()
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(h, kv[i])
			} else {
				h[kv[i]] = kv[i+1]
			}
		}
		return h
	}
	cases := []struct {
		name   string
		key    string
		hdr    map[string]string
		body   []byte
		status int
		want   string
	}{
		{"no key", "", with(), valid, 401, "missing API key"},
		{"unknown key", "svc_nope", with(), valid, 401, "not valid"},
		{"no request id", tn.key, with("svc-req-id", ""), valid, 400, "svc-req-id is required"},
		{"request id not a uuid", tn.key, with("svc-req-id", "abc"), valid, 400, "not a UUID"},
		{"legacy request id header works", tn.key, with("svc-req-id", "", "msr-req-id", uuid.NewString()), sampleBatch(uuid.New(), time.Now(), 1), 200, ""},
		{"bad content type", tn.key, with("Content-Type", "text/plain"), valid, 400, "Content-Type"},
		{"malformed json", tn.key, with(), []byte(`{"events":[`), 400, ""},
		{"empty batch", tn.key, with(), []byte(`{"events":[],"spans":[]}`), 400, "at least one event or span"},
		{"missing attribute", tn.key, with(), bytes.Replace(valid, []byte(`"app_version":"1.2.3",`), nil, 1), 400, "event 0: attribute.app_version"},
		{"json over the limit", tn.key, with(), bigBody, 413, "exceeds the limit"},
		{"multipart over the limit", tn.key, with("Content-Type", mpCT), mpBig, 413, "exceeds the limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := tn.do(t, http.MethodPut, "/events", c.key, c.hdr, bytes.NewReader(c.body))
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			if c.status != 200 {
				msg, _ := r.json(t)["error"].(string)
				if msg == "" || !strings.Contains(msg, c.want) {
					t.Fatalf("error %q, want it to contain %q", msg, c.want)
				}
			}
		})
	}
	tn.waitFlushed(t)
	if e, _ := tn.counts(t, tn.app.ID); e != 1 {
		t.Fatalf("stored %d events; only the one accepted batch (1 event) may be kept", e)
	}
	// A chunked body (no Content-Length) over the limit is cut off while reading.
	pr := &slowReader{data: bigBody}
	req, _ := http.NewRequest(http.MethodPut, tn.base+"/events", pr)
	req.Header.Set("Authorization", "Bearer "+tn.key)
	req.Header.Set("svc-req-id", uuid.NewString())
	req.Header.Set("Content-Type", "application/json")
	resp, err := tn.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 || req.ContentLength != 0 {
		t.Fatalf("chunked oversize: %d (content length %d)", resp.StatusCode, req.ContentLength)
	}
}

// slowReader hides its length so the client sends the body chunked.
type slowReader struct {
	data []byte
	off  int
}

func (s *slowReader) Read(p []byte) (int, error) {
	if s.off >= len(s.data) {
		return 0, io.EOF
	}
	n := copy(p, s.data[s.off:min(len(s.data), s.off+4096)])
	s.off += n
	return n, nil
}
