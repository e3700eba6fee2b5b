package node

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// upload is one mapping file of a PUT /builds: its type, name and bytes (nil: never uploaded).
type upload struct {
	typ, name string
	data      []byte
}

// putBuild sends PUT /builds with the app key, then uploads each file's bytes to its upload
// URL as a build tool does; it returns the mapping ids in the order given.
func (tn *testNode) putBuild(t *testing.T, key, name, code, buildType string, files ...upload) []uuid.UUID {
	t.Helper()
	type item struct {
		Type     string `json:"type"`
		Filename string `json:"filename"`
	}
	req := map[string]any{"version_name": name, "version_code": code, "build_size": 1000, "build_type": buildType}
	var items []item
	for _, f := range files {
		items = append(items, item{f.typ, f.name})
	}
	req["mappings"] = items
	body, _ := json.Marshal(req)
	r := tn.do(t, http.MethodPut, "/builds", key, map[string]string{"Content-Type": "application/json"}, bytes.NewReader(body))
	var v struct {
		Mappings []struct {
			ID        uuid.UUID         `json:"id"`
			UploadURL string            `json:"upload_url"`
			Headers   map[string]string `json:"headers"`
		} `json:"mappings"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil || len(v.Mappings) != len(files) {
		t.Fatalf("PUT /builds %s: %d %s", body, r.status, r.body)
	}
	ids := make([]uuid.UUID, len(files))
	for i, m := range v.Mappings {
		ids[i] = m.ID
		if files[i].data == nil {
			continue
		}
		req, _ := http.NewRequest(http.MethodPut, m.UploadURL, bytes.NewReader(files[i].data))
		for k, h := range m.Headers {
			req.Header.Set(k, h)
		}
		resp, err := tn.client.Do(req)
		if err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("upload of %s: %v %v", files[i].name, resp, err)
		}
		resp.Body.Close()
	}
	return ids
}

type buildsAnswer struct {
	Meta    struct{ Next, Previous bool } `json:"meta"`
	Results []map[string]json.RawMessage  `json:"results"`
}

// buildFile is a file of GET /builds as the dashboard reads it.
type buildFile struct {
	ID          uuid.UUID `json:"id"`
	MappingType string    `json:"mapping_type"`
	DownloadURL string    `json:"download_url"`
	Filesize    int64     `json:"filesize"`
	LastUpdated string    `json:"last_updated"`
}

// TestBuildsPage covers the builds page of the reference dashboard (issue #15) on both store
// setups: builds uploaded through PUT /builds listed with their newest file per mapping type,
// paging, the window, every filter_expr key and operator and the issues of a bad one, the
// filter bar's keys and values, and downloads.
func TestBuildsPage(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, nil)
			token := tn.accessToken(t, tn.email)
			app := tn.app.ID.String()
			get := func(t *testing.T, path string) response {
				t.Helper()
				return tn.do(t, http.MethodGet, "/apps/"+app+path, token, nil, nil)
			}
			// marks[i] comes before the i-th upload and after the one before; they separate the uploads by a few milliseconds, for windows written to the
			// millisecond as the dashboard writes them.
			var marks []string
			mark := func() {
				time.Sleep(5 * time.Millisecond)
				marks = append(marks, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
				time.Sleep(5 * time.Millisecond)
			}
			gz := []byte{0x1f, 0x8b, 8, 0, 'd', 's', 'y', 'm'}
			zip := []byte("PK\x03\x04dsym zip")
			mark()
			old := tn.putBuild(t, tn.key, "1.0", "100", "aab", upload{"proguard", "mapping.txt", []byte("old mapping")})
			mark()
			v1 := tn.putBuild(t, tn.key, "1.0", "100", "aab", upload{"proguard", "mapping.txt", []byte("new mapping, longer")})
			mark()
			beta := tn.putBuild(t, tn.key, "1.1-beta", "110", "ipa", upload{"dsym", "App.app.dSYM.tgz", gz}, upload{"elf_debug", "libapp.so.sym", []byte("elf symbols")})
			mark()
			v2 := tn.putBuild(t, tn.key, "2.0", "200", "apk", upload{"jsbundle", "index.android.bundle.map", []byte("{}")}, upload{"dsym", "Other.dSYM.zip", zip})
			mark()
			v2pg := tn.putBuild(t, tn.key, "2.0", "200", "aab", upload{"proguard", "mapping.txt", []byte("2.0 mapping")})
			mark()
			otherApp, otherKey := tn.newApp(t)
			otherFile := tn.putBuild(t, otherKey, "9.9", "999", "aab", upload{"proguard", "mapping.txt", []byte("other app")})

			// list asks GET /builds and returns meta and each build as "name (code): type type…".
			list := func(t *testing.T, query string) (buildsAnswer, []string) {
				t.Helper()
				r := get(t, "/builds?"+query)
				var a buildsAnswer
				if r.status != http.StatusOK || json.Unmarshal(r.body, &a) != nil || a.Results == nil {
					t.Fatalf("GET /builds?%s: %d %s", query, r.status, r.body)
				}
				got := []string{}
				for _, b := range a.Results {
					var name, code string
					var files []buildFile
					_ = json.Unmarshal(b["version_name"], &name)
					_ = json.Unmarshal(b["version_code"], &code)
					_ = json.Unmarshal(b["files"], &files)
					s := name + " (" + code + "):"
					for _, f := range files {
						s += " " + f.MappingType
					}
					got = append(got, s)
				}
				return a, got
			}
			want := func(t *testing.T, query string, builds ...string) {
				t.Helper()
				if _, got := list(t, query); !reflect.DeepEqual(got, append([]string{}, builds...)) {
					t.Errorf("GET /builds?%s:\n got  %q\n want %q", query, got, builds)
				}
			}
			all := []string{"2.0 (200): proguard dsym jsbundle", "1.1-beta (110): dsym elf_debug", "1.0 (100): proguard"}

			t.Run("Shape", func(t *testing.T) {
				a, got := list(t, "")
				if !reflect.DeepEqual(got, all) || a.Meta.Next || a.Meta.Previous {
					t.Fatalf("builds %q meta %+v, want %q and no more pages", got, a.Meta, all)
				}
				for _, b := range a.Results {
					for _, k := range []string{"patch_id", "patch_version"} {
						if _, ok := b[k]; ok {
							t.Errorf("a build carries %s; svc has no patch builds", k)
						}
					}
				}
				var files []buildFile
				_ = json.Unmarshal(a.Results[0]["files"], &files)
				var last string
				_ = json.Unmarshal(a.Results[0]["last_updated"], &last)
				wantIDs := []uuid.UUID{v2pg[0], v2[1], v2[0]}
				wantSizes := []int64{int64(len("2.0 mapping")), int64(len(zip)), 2}
				for i, f := range files {
					if f.ID != wantIDs[i] || f.Filesize != wantSizes[i] || f.DownloadURL != "/apps/"+app+"/builds/"+f.ID.String()+"/download" {
						t.Errorf("file %d: %+v, want id %s, %d bytes", i, f, wantIDs[i], wantSizes[i])
					}
					if _, err := time.Parse(time.RFC3339, f.LastUpdated); err != nil {
						t.Errorf("file last_updated %q: %v", f.LastUpdated, err)
					}
				}
				if last != files[0].LastUpdated {
					t.Errorf("build last_updated %q, want its newest file's %q", last, files[0].LastUpdated)
				}
				// The newer proguard file of 1.0 replaces the older.
				_ = json.Unmarshal(a.Results[2]["files"], &files)
				if len(files) != 1 || files[0].ID != v1[0] || files[0].Filesize != int64(len("new mapping, longer")) {
					t.Errorf("1.0's files %+v, want only %s", files, v1[0])
				}
			})

			t.Run("Paging", func(t *testing.T) {
				for _, c := range []struct {
					query      string
					build      []string
					next, prev bool
				}{
					{"limit=1", all[:1], true, false},
					{"limit=1&offset=1", all[1:2], true, true},
					{"limit=2&offset=1", all[1:], false, true},
					{"limit=1&offset=3", []string{}, false, true},
				} {
					a, got := list(t, c.query)
					if !reflect.DeepEqual(got, c.build) || a.Meta.Next != c.next || a.Meta.Previous != c.prev {
						t.Errorf("%s: %q %+v, want %q next %v previous %v", c.query, got, a.Meta, c.build, c.next, c.prev)
					}
				}
				for _, q := range []string{"limit=0", "limit=1001", "limit=x", "offset=-1", "from=" + marks[0], "from=yesterday&to=" + marks[1]} {
					if r := get(t, "/builds?"+q); r.status != http.StatusBadRequest {
						t.Errorf("GET /builds?%s: %d %s, want 400", q, r.status, r.body)
					}
				}
			})

			t.Run("Window", func(t *testing.T) {
				window := func(i, j int) string { return "from=" + marks[i] + "&to=" + marks[j] }
				want(t, window(0, 1), "1.0 (100): proguard")
				want(t, window(1, 2), "1.0 (100): proguard")
				want(t, window(2, 3), "1.1-beta (110): dsym elf_debug")
				want(t, window(3, 4), "2.0 (200): dsym jsbundle")
				want(t, window(0, 4), "2.0 (200): dsym jsbundle", "1.1-beta (110): dsym elf_debug", "1.0 (100): proguard")
				want(t, window(4, 5), "2.0 (200): proguard")
				// The file of a window is its newest there: the older proguard file of 1.0.
				a, _ := list(t, window(0, 1))
				var files []buildFile
				_ = json.Unmarshal(a.Results[0]["files"], &files)
				if files[0].ID != old[0] {
					t.Errorf("1.0's file in [mark 0, mark 1) is %s, want the old one %s", files[0].ID, old[0])
				}
			})

			t.Run("FilterExpr", func(t *testing.T) {
				f := func(expr string) string { return "filter_expr=" + url.QueryEscape(expr) }
				pid := uuid.NewString()
				cases := []struct {
					expr   string
					builds []string
				}{
					{"version_name:in:[1.0,2.0]", []string{all[0], all[2]}},
					{`version_name:in:"1.1-beta"`, all[1:2]},
					{"version_name:not_in:2.0", all[1:]},
					{"version_name:contains:BETA", all[1:2]},
					{"version_name:starts_with:2", all[:1]},
					{"version_code:in:110", all[1:2]},
					{"version_code:not_in:[110,200]", all[2:]},
					{"mapping_type:in:dsym", []string{"2.0 (200): dsym", "1.1-beta (110): dsym"}},
					{"mapping_type:not_in:[proguard,dsym]", []string{"2.0 (200): jsbundle", "1.1-beta (110): elf_debug"}},
					{"patch_version:in:1", nil},
					{"patch_version:not_in:1", all},
					{"patch_version:contains:1", nil},
					{"patch_id:in:" + pid, nil},
					{"patch_id:not_in:" + pid, all},
					{"patch_id:is_set", nil},
					{"patch_id:is_not_set", all},
					{"(version_code:in:100 OR mapping_type:in:elf_debug) and patch_id:is_not_set", []string{"1.1-beta (110): elf_debug", "1.0 (100): proguard"}},
					{"   ", all}, // blank: no filter
				}
				for _, c := range cases {
					want(t, f(c.expr), c.builds...)
				}
				// With the window and paging.
				want(t, f("mapping_type:in:dsym")+"&limit=1&offset=1&from="+marks[0]+"&to="+marks[5], "1.1-beta (110): dsym")

				type issue struct {
					Message string          `json:"message"`
					Span    *model.TextSpan `json:"span"`
				}
				for _, c := range []struct {
					expr  string
					span  *model.TextSpan
					names string
				}{
					{"os_name:in:android", &model.TextSpan{Start: 0, End: 18}, `"os_name"`},
					{"version_name:in:1 AND mapping_type:in:zip", &model.TextSpan{Start: 22, End: 41}, `"zip"`},
					{"version_code:starts_with:1", &model.TextSpan{Start: 0, End: 26}, `"starts_with"`},
					{"patch_id:in:not-a-uuid", &model.TextSpan{Start: 0, End: 22}, `"not-a-uuid"`},
					{"version_name:in:[1,2", nil, "List of values"},
					{"version_name:in:1 version_code:in:2", nil, `"version_code"`},
					{strings.Repeat("version_name:in:1 OR ", 32) + "version_name:in:1", nil, "32 conditions"},
				} {
					r := get(t, "/builds?"+f(c.expr))
					var e struct {
						Error  string  `json:"error"`
						Issues []issue `json:"filter_expr_issues"`
					}
					if r.status != http.StatusBadRequest || json.Unmarshal(r.body, &e) != nil || e.Error != "invalid_filter_expr" || len(e.Issues) != 1 {
						t.Errorf("filter_expr %q: %d %s, want 400 invalid_filter_expr with one issue", c.expr, r.status, r.body)
						continue
					}
					if !reflect.DeepEqual(e.Issues[0].Span, c.span) || !strings.Contains(e.Issues[0].Message, c.names) {
						t.Errorf("filter_expr %q: issue %s, want span %+v and a message naming %s", c.expr, r.body, c.span, c.names)
					}
					if c.span == nil && bytes.Contains(r.body, []byte(`"span"`)) {
						t.Errorf("filter_expr %q: %s carries a span", c.expr, r.body)
					}
				}
			})

			t.Run("FilterKeys", func(t *testing.T) {
				r := get(t, "/filters/keys?entity=builds")
				var got any
				if r.status != http.StatusOK || json.Unmarshal(r.body, &got) != nil {
					t.Fatalf("GET /filters/keys: %d %s", r.status, r.body)
				}
				key := func(name, label, group, typ, mode string, ops ...string) map[string]any {
					o := make([]any, len(ops))
					for i, op := range ops {
						o[i] = op
					}
					return map[string]any{"name": name, "label": label, "key_group": group, "value_type": typ, "value_suggestion_mode": mode, "operators": o}
				}
				wantKeys := []any{
					key("version_name", "App version", "Version", "string", "sample", "in", "not_in", "contains", "starts_with"),
					key("version_code", "Build number", "Version", "string", "sample", "in", "not_in"),
					key("mapping_type", "Mapping type", "Build", "enum", "full_list", "in", "not_in"),
					key("patch_version", "Patch version", "Version", "string", "sample", "in", "not_in", "contains"),
					key("patch_id", "Patch id", "Version", "uuid", "sample", "in", "not_in", "is_set", "is_not_set"),
				}
				m := got.(map[string]any)
				keys, _ := m["keys"].([]any)
				for _, k := range keys {
					if d, _ := k.(map[string]any)["description"].(string); d == "" {
						t.Errorf("key %v has no description", k)
					}
					delete(k.(map[string]any), "description")
				}
				if !reflect.DeepEqual(keys, wantKeys) || !reflect.DeepEqual(m["key_groups"], []any{"Version", "Build"}) {
					t.Errorf("GET /filters/keys:\n got  %s", r.body)
				}
				for q, msg := range map[string]string{"": "entity", "entity=sessions": `Unknown filter entity \"sessions\"`} {
					if r := get(t, "/filters/keys?"+q); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), msg) {
						t.Errorf("GET /filters/keys?%s: %d %s, want 400 with %s", q, r.status, r.body, msg)
					}
				}
			})

			t.Run("FilterValues", func(t *testing.T) {
				type answer struct {
					Values []struct {
						Text string `json:"text"`
					} `json:"values"`
					Truncated bool `json:"truncated"`
				}
				for _, c := range []struct {
					query     string
					values    []string
					truncated bool
				}{
					{"key_name=version_name", []string{"2.0", "1.1-beta", "1.0"}, false},
					{"key_name=version_name&search=BETA", []string{"1.1-beta"}, false},
					{"key_name=version_name&limit=1", []string{"2.0"}, true},
					{"key_name=version_code", []string{"200", "110", "100"}, false},
					{"key_name=version_code&search=9", []string{}, false}, // the other app's 999 is not this app's
					{"key_name=mapping_type", []string{"proguard", "dsym", "elf_debug", "jsbundle"}, false},
					{"key_name=mapping_type&search=S", []string{"dsym", "jsbundle"}, false},
					{"key_name=mapping_type&limit=3", []string{"proguard", "dsym", "elf_debug"}, true},
					{"key_name=patch_id", []string{}, false},
					{"key_name=patch_version&search=1", []string{}, false},
				} {
					r := get(t, "/filters/values?entity=builds&"+c.query)
					var a answer
					if r.status != http.StatusOK || json.Unmarshal(r.body, &a) != nil || a.Values == nil {
						t.Errorf("GET /filters/values?%s: %d %s", c.query, r.status, r.body)
						continue
					}
					got := []string{}
					for _, v := range a.Values {
						got = append(got, v.Text)
					}
					if !reflect.DeepEqual(got, c.values) || a.Truncated != c.truncated {
						t.Errorf("GET /filters/values?%s: %s, want %q truncated %v", c.query, r.body, c.values, c.truncated)
					}
				}
				for _, q := range []string{"key_name=version_name", "entity=x&key_name=version_name", "entity=builds", "entity=builds&key_name=os_name",
					"entity=builds&key_name=version_name&limit=0", "entity=builds&key_name=version_name&limit=201"} {
					if r := get(t, "/filters/values?"+q); r.status != http.StatusBadRequest {
						t.Errorf("GET /filters/values?%s: %d %s, want 400", q, r.status, r.body)
					}
				}
			})

			t.Run("Download", func(t *testing.T) {
				for _, c := range []struct {
					id          uuid.UUID
					body        []byte
					name, ctype string
				}{
					{v1[0], []byte("new mapping, longer"), "mapping.txt", "text/plain; charset=utf-8"},
					{beta[0], gz, "App.app.dSYM.tgz", "application/gzip"},
					{v2[1], zip, "Other.dSYM.zip", "application/zip"},
					{beta[1], []byte("elf symbols"), "libapp.so.sym", "application/octet-stream"},
					{v2[0], []byte("{}"), "index.android.bundle.map", "application/octet-stream"},
				} {
					r := get(t, "/builds/"+c.id.String()+"/download")
					if r.status != http.StatusOK || !bytes.Equal(r.body, c.body) {
						t.Errorf("download %s: %d %q, want %q", c.name, r.status, r.body, c.body)
						continue
					}
					if cd := r.header.Get("Content-Disposition"); cd != "attachment; filename="+c.name {
						t.Errorf("download %s: Content-Disposition %q", c.name, cd)
					}
					if ct := r.header.Get("Content-Type"); ct != c.ctype {
						t.Errorf("download %s: Content-Type %q, want %q", c.name, ct, c.ctype)
					}
					if cl := r.header.Get("Content-Length"); cl != "" {
						t.Errorf("download %s: Content-Length %s; the file is streamed chunked", c.name, cl)
					}
				}
				for _, id := range []uuid.UUID{otherFile[0], uuid.New()} {
					if r := get(t, "/builds/"+id.String()+"/download"); r.status != http.StatusNotFound {
						t.Errorf("download of %s (another app's, or unknown): %d %s, want 404", id, r.status, r.body)
					}
				}
				if r := get(t, "/builds/nope/download"); r.status != http.StatusBadRequest {
					t.Errorf("download of a file id that is no UUID: %d %s, want 400", r.status, r.body)
				}
				// The other app's owner does not reach this app's builds at all.
				outsider := tn.accessToken(t, tn.lastEmail)
				if r := tn.do(t, http.MethodGet, "/apps/"+app+"/builds/"+v1[0].String()+"/download", outsider, nil, nil); r.status != http.StatusForbidden {
					t.Errorf("download by a user outside the team: %d, want 403", r.status)
				}
				if r := tn.do(t, http.MethodGet, "/apps/"+otherApp.ID.String()+"/builds/"+otherFile[0].String()+"/download", outsider, nil, nil); r.status != http.StatusOK {
					t.Errorf("download of the other app's file by its owner: %d %s", r.status, r.body)
				}
			})

			t.Run("NotUploadedYet", func(t *testing.T) {
				late := tn.putBuild(t, tn.key, "3.0", "300", "aab", upload{"elf_debug", "late.sym", nil})
				sizeOf := func() int64 {
					a, _ := list(t, "limit=1&filter_expr="+url.QueryEscape("version_name:in:3.0"))
					var files []buildFile
					_ = json.Unmarshal(a.Results[0]["files"], &files)
					return files[0].Filesize
				}
				if n := sizeOf(); n != 0 {
					t.Errorf("a file not uploaded yet has filesize %d, want 0", n)
				}
				if r := get(t, "/builds/"+late[0].String()+"/download"); r.status != http.StatusNotFound || !strings.Contains(string(r.body), "never uploaded") {
					t.Errorf("download of a file not uploaded: %d %s, want 404 saying so", r.status, r.body)
				}
				ms, err := tn.Meta.Mappings(t.Context(), tn.app.ID, "3.0", "300")
				if err != nil || len(ms) != 1 {
					t.Fatalf("mappings of 3.0: %v %v", ms, err)
				}
				if err := tn.Blobs.Put(t.Context(), ms[0].BlobKey, strings.NewReader("late bytes"), 10); err != nil {
					t.Fatal(err)
				}
				if n := sizeOf(); n != 10 {
					t.Errorf("a file uploaded since has filesize %d, want 10", n)
				}
			})
		})
	}
}
