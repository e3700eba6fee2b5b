package apidoc

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// ---- the document

type obj = map[string]any

func parseDoc(t *testing.T) obj {
	t.Helper()
	var d obj
	dec := json.NewDecoder(bytes.NewReader(document))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	if dec.More() {
		t.Fatal("openapi.json holds more than one JSON value")
	}
	return d
}

// pointer resolves a local JSON pointer ("#/components/schemas/Error") in d.
func pointer(d obj, ref string) (any, error) {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("%q is not a local reference", ref)
	}
	var cur any = d
	for _, tok := range strings.Split(p, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(obj)
		if !ok {
			return nil, fmt.Errorf("%q: %q is not inside an object", ref, tok)
		}
		if cur, ok = m[tok]; !ok {
			return nil, fmt.Errorf("%q does not resolve: no %q", ref, tok)
		}
	}
	return cur, nil
}

// deref follows $ref until it reaches an object that is not a reference.
func deref(t *testing.T, d obj, v any) obj {
	t.Helper()
	for range 10 {
		m, ok := v.(obj)
		if !ok {
			t.Fatalf("expected an object, got %T", v)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var err error
		if v, err = pointer(d, ref); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("reference chain longer than 10")
	return nil
}

// walkRefs calls f with every $ref of v and the JSON path where it is.
func walkRefs(v any, at string, f func(ref, at string)) {
	switch x := v.(type) {
	case obj:
		for k, c := range x {
			if k == "$ref" {
				if s, ok := c.(string); ok {
					f(s, at)
					continue
				}
			}
			walkRefs(c, at+"/"+k, f)
		}
	case []any:
		for i, c := range x {
			walkRefs(c, at+"/"+strconv.Itoa(i), f)
		}
	}
}

var (
	methods     = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}
	templateVar = regexp.MustCompile(`\{([^{}/]+)\}`)
	statusKey   = regexp.MustCompile(`^[1-5][0-9][0-9]$`)
	paramIn     = []string{"query", "header", "path", "cookie"}
)

// TestOpenAPIDocumentIsWellFormed checks openapi.json structurally: version and info, every
// $ref resolves and every component is used, path templates match the declared path
// parameters, every operation has an id, tags, explicit security, responses with valid
// status codes, 401 when it needs credentials, and `{"error"}` bodies for its failures.
func TestOpenAPIDocumentIsWellFormed(t *testing.T) {
	d := parseDoc(t)
	if v, _ := d["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi = %q, want 3.1.x", v)
	}
	info, _ := d["info"].(obj)
	if info["title"] == "" || info["title"] == nil || info["version"] == nil {
		t.Errorf("info needs title and version: %v", info)
	}

	used := map[string]bool{}
	walkRefs(d, "#", func(ref, at string) {
		if _, err := pointer(d, ref); err != nil {
			t.Errorf("%s: %v", at, err)
		}
		used[ref] = true
	})
	comps, _ := d["components"].(obj)
	for kind, v := range comps {
		if kind == "securitySchemes" {
			continue
		}
		for name := range v.(obj) {
			if ref := "#/components/" + kind + "/" + name; !used[ref] {
				t.Errorf("%s is never used", ref)
			}
		}
	}

	schemes, _ := comps["securitySchemes"].(obj)
	usedSchemes := map[string]bool{}
	tags := map[string]bool{}
	for _, tg := range d["tags"].([]any) {
		tags[tg.(obj)["name"].(string)] = true
	}
	ids := map[string]string{}
	paths, _ := d["paths"].(obj)
	if len(paths) == 0 {
		t.Fatal("no paths")
	}
	for p, pv := range paths {
		if !strings.HasPrefix(p, "/") {
			t.Errorf("path %q does not start with /", p)
		}
		item := pv.(obj)
		var inTemplate []string
		for _, m := range templateVar.FindAllStringSubmatch(p, -1) {
			inTemplate = append(inTemplate, m[1])
		}
		sort.Strings(inTemplate)
		pathLevel, _ := item["parameters"].([]any)
		nops := 0
		for k, ov := range item {
			if k == "parameters" || k == "summary" || k == "description" {
				continue
			}
			if !slices.Contains(methods, k) {
				t.Errorf("%s: %q is not an operation", p, k)
				continue
			}
			nops++
			o := ov.(obj)
			where := strings.ToUpper(k) + " " + p
			id, _ := o["operationId"].(string)
			if id == "" {
				t.Errorf("%s: no operationId", where)
			} else if prev, dup := ids[id]; dup {
				t.Errorf("%s: operationId %q also names %s", where, id, prev)
			}
			ids[id] = where
			if tg, _ := o["tags"].([]any); len(tg) == 0 {
				t.Errorf("%s: no tags", where)
			} else {
				for _, x := range tg {
					if !tags[x.(string)] {
						t.Errorf("%s: tag %v is not declared", where, x)
					}
				}
			}

			// Parameters: declared once, valid, and the path ones exactly those of the template.
			seen := map[string]bool{}
			var inPath []string
			for _, pv := range append(slices.Clone(pathLevel), anySlice(o["parameters"])...) {
				prm := deref(t, d, pv)
				name, _ := prm["name"].(string)
				in, _ := prm["in"].(string)
				if name == "" || !slices.Contains(paramIn, in) {
					t.Errorf("%s: parameter %v needs a name and in (query, header, path, cookie)", where, prm)
					continue
				}
				key := in + ":" + strings.ToLower(name)
				if seen[key] {
					t.Errorf("%s: parameter %s declared twice", where, key)
				}
				seen[key] = true
				if prm["schema"] == nil && prm["content"] == nil {
					t.Errorf("%s: parameter %s has no schema", where, key)
				}
				if in == "path" {
					inPath = append(inPath, name)
					if prm["required"] != true {
						t.Errorf("%s: path parameter %s must be required", where, name)
					}
				}
			}
			sort.Strings(inPath)
			if !slices.Equal(inPath, inTemplate) {
				t.Errorf("%s: path parameters %v, template has %v", where, inPath, inTemplate)
			}

			// Security: explicit on every operation, naming declared schemes.
			sec, ok := o["security"].([]any)
			if !ok {
				t.Errorf("%s: no security (write [] for none)", where)
			}
			for _, req := range sec {
				for name := range req.(obj) {
					if schemes[name] == nil {
						t.Errorf("%s: security scheme %s is not declared", where, name)
					}
					usedSchemes[name] = true
				}
			}

			// Responses.
			resps, _ := o["responses"].(obj)
			if len(resps) == 0 {
				t.Errorf("%s: no responses", where)
			}
			if len(sec) > 0 && resps["401"] == nil {
				t.Errorf("%s: needs credentials but does not list 401", where)
			}
			for code, rv := range resps {
				if !statusKey.MatchString(code) && code != "default" {
					t.Errorf("%s: response key %q is not a status code", where, code)
					continue
				}
				r := deref(t, d, rv)
				if r["description"] == nil {
					t.Errorf("%s %s: no description", where, code)
				}
				if hs, ok := r["headers"].(obj); ok {
					for hn, hv := range hs {
						if deref(t, d, hv)["schema"] == nil {
							t.Errorf("%s %s: header %s has no schema", where, code, hn)
						}
					}
				}
				cont, _ := r["content"].(obj)
				for ct, mv := range cont {
					if mv.(obj)["schema"] == nil {
						t.Errorf("%s %s %s: no schema", where, code, ct)
					}
				}
				if code[0] != '4' && code[0] != '5' {
					continue
				}
				if k == "head" {
					continue // no body
				}
				if why, _ := r["x-svc-deviation"].(string); why != "" {
					continue // a known exception, explained in the document
				}
				jm, ok := cont["application/json"].(obj)
				if !ok || len(cont) != 1 {
					t.Errorf("%s %s: a failure must answer application/json only (or explain itself in x-svc-deviation), got %v", where, code, keys(cont))
					continue
				}
				if !isErrorSchema(t, d, jm["schema"]) {
					t.Errorf("%s %s: a failure's body must be an object with a required string `error` (or oneOf such and Warning), got %v", where, code, jm["schema"])
				}
			}
			if b, ok := o["requestBody"]; ok {
				rb := deref(t, d, b)
				cont, _ := rb["content"].(obj)
				if len(cont) == 0 {
					t.Errorf("%s: request body without content", where)
				}
				for ct, mv := range cont {
					if mv.(obj)["schema"] == nil {
						t.Errorf("%s: request body %s has no schema", where, ct)
					}
				}
			}
		}
		if nops == 0 {
			t.Errorf("%s has no operation", p)
		}
	}
	for name := range schemes {
		if !usedSchemes[name] {
			t.Errorf("security scheme %s is never used", name)
		}
	}
}

func anySlice(v any) []any { s, _ := v.([]any); return s }

func keys(m obj) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// isErrorSchema: an object with a required string member `error` (others may follow), or a
// oneOf of such objects and the Warning of PUT /events.
func isErrorSchema(t *testing.T, d obj, v any) bool {
	m := deref(t, d, v)
	if one, ok := m["oneOf"].([]any); ok {
		hasError := false
		for _, s := range one {
			if ref, _ := s.(obj)["$ref"].(string); ref == "#/components/schemas/Warning" {
				continue
			}
			if !isErrorSchema(t, d, s) {
				return false
			}
			hasError = true
		}
		return hasError
	}
	props, _ := m["properties"].(obj)
	e, _ := props["error"].(obj)
	return m["type"] == "object" && e["type"] == "string" && slices.Contains(anySlice(m["required"]), any("error"))
}

// TestOpenAPIStructuralCheckCatchesMistakes feeds the checks above broken documents, so they
// cannot pass by checking nothing.
func TestOpenAPIStructuralCheckCatchesMistakes(t *testing.T) {
	d := parseDoc(t)
	if _, err := pointer(d, "#/components/schemas/NoSuchSchema"); err == nil {
		t.Error("a dangling $ref resolved")
	}
	if _, err := pointer(d, "#/components/schemas/Error"); err != nil {
		t.Errorf("the Error schema does not resolve: %v", err)
	}
	if isErrorSchema(t, d, obj{"$ref": "#/components/schemas/Team"}) || isErrorSchema(t, d, obj{"oneOf": []any{obj{"$ref": "#/components/schemas/Warning"}}}) ||
		isErrorSchema(t, d, obj{"type": "object", "properties": obj{"error": obj{"type": "string"}}}) {
		t.Error("isErrorSchema accepts a body without a required error member")
	}
	if !isErrorSchema(t, d, obj{"$ref": "#/components/schemas/NotReady"}) || !isErrorSchema(t, d, obj{"oneOf": []any{obj{"$ref": "#/components/schemas/Error"}, obj{"$ref": "#/components/schemas/Warning"}}}) {
		t.Error("isErrorSchema refuses an {error, ...} body")
	}
	var got []string
	walkRefs(obj{"a": []any{obj{"$ref": "#/x"}}, "b": obj{"$ref": "#/y"}}, "#", func(ref, _ string) { got = append(got, ref) })
	sort.Strings(got)
	if !slices.Equal(got, []string{"#/x", "#/y"}) {
		t.Errorf("walkRefs found %v", got)
	}
}

// ---- the handlers

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	r := chi.NewRouter()
	Mount(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func get(t *testing.T, rawURL string, hdr map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	// A transport of its own that leaves Accept-Encoding alone: the tests look at the raw bytes.
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

func TestOpenAPIDocumentServed(t *testing.T) {
	srv := newServer(t)
	a := get(t, srv.URL+"/openapi.json", nil)
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %q", a.status, a.header.Get("Content-Type"))
	}
	if !bytes.Equal(a.body, document) {
		t.Error("GET /openapi.json does not answer the embedded document")
	}
	etag := a.header.Get("ETag")
	if !regexp.MustCompile(`^"[0-9a-f]{32}"$`).MatchString(etag) || a.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("ETag %q, Cache-Control %q", etag, a.header.Get("Cache-Control"))
	}
	if a := get(t, srv.URL+"/openapi.json", map[string]string{"If-None-Match": etag}); a.status != http.StatusNotModified || len(a.body) != 0 {
		t.Errorf("If-None-Match with the current ETag: %d, %d bytes", a.status, len(a.body))
	}
	if a := get(t, srv.URL+"/openapi.json", map[string]string{"If-None-Match": `"stale"`}); a.status != http.StatusOK {
		t.Errorf("If-None-Match with another ETag: %d", a.status)
	}
	for _, inm := range []string{`W/"stale", W/` + etag, "*", `"a",` + etag} {
		if a := get(t, srv.URL+"/openapi.json", map[string]string{"If-None-Match": inm}); a.status != http.StatusNotModified || a.header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: %d, ETag %q", inm, a.status, a.header.Get("ETag"))
		}
	}
	// Ranges are not served: the whole document, and no Accept-Ranges to promise otherwise.
	if a := get(t, srv.URL+"/openapi.json", map[string]string{"Range": "bytes=0-9"}); a.status != http.StatusOK || !bytes.Equal(a.body, document) || a.header.Get("Accept-Ranges") != "" {
		t.Errorf("Range: %d, %d bytes, Accept-Ranges %q", a.status, len(a.body), a.header.Get("Accept-Ranges"))
	}

	z := get(t, srv.URL+"/openapi.json", map[string]string{"Accept-Encoding": "br, gzip;q=0.5"})
	if z.header.Get("Content-Encoding") != "gzip" || z.header.Get("ETag") == etag || !strings.Contains(z.header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("gzip answer: Content-Encoding %q, ETag %q, Vary %q", z.header.Get("Content-Encoding"), z.header.Get("ETag"), z.header.Get("Vary"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(z.body))
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := io.ReadAll(zr); err != nil || !bytes.Equal(plain, document) {
		t.Errorf("gzip answer does not unzip to the document (%v)", err)
	}
	if a := get(t, srv.URL+"/openapi.json", map[string]string{"Accept-Encoding": "gzip;q=0"}); a.header.Get("Content-Encoding") != "" {
		t.Error("gzip;q=0 got a gzip answer")
	}
}

func TestDocsAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{"": false, "gzip": true, "GZIP": true, "br, gzip": true, "deflate": false, "*": true,
		"gzip;q=0": false, "gzip; q=0.000": false, "gzip;q=0.1": true, "identity": false, "x-gzip": false} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", h, got, want)
		}
	}
}

var linkAttr = regexp.MustCompile(`<(script|link)\b[^>]*?\b(src|href)="([^"]*)"`)

// TestDocsPageServesOnlyLocalFiles: the page's scripts, styles and icon are relative links to
// files svc serves (200, right type, cacheable for a year at their version); nothing names
// another host; the Content-Security-Policy keeps the browser to svc's origin.
func TestDocsPageServesOnlyLocalFiles(t *testing.T) {
	srv := newServer(t)
	page := get(t, srv.URL+"/docs", nil)
	if page.status != http.StatusOK || page.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /docs: %d %q", page.status, page.header.Get("Content-Type"))
	}
	if csp := page.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "script-src 'self';") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if bytes.Contains(page.body, []byte("//")) {
		t.Errorf("the page names a URL with a host:\n%s", page.body)
	}
	links := linkAttr.FindAllStringSubmatch(string(page.body), -1)
	base, _ := url.Parse(srv.URL + "/docs")
	want := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".png": "image/png"}
	kinds := map[string]int{}
	for _, l := range links {
		ref, err := url.Parse(l[3])
		if err != nil || ref.IsAbs() || ref.Host != "" || strings.HasPrefix(l[3], "/") {
			t.Errorf("%s link %q is not a relative local path", l[1], l[3])
			continue
		}
		u := base.ResolveReference(ref)
		if !strings.HasPrefix(u.Path, "/docs/") {
			t.Errorf("link %q resolves to %s, outside /docs/", l[3], u.Path)
		}
		a := get(t, u.String(), nil)
		ext := u.Path[strings.LastIndex(u.Path, "."):]
		kinds[ext]++
		if a.status != http.StatusOK || a.header.Get("Content-Type") != want[ext] || len(a.body) == 0 {
			t.Errorf("GET %s: %d %q, %d bytes", u, a.status, a.header.Get("Content-Type"), len(a.body))
			continue
		}
		if cc := a.header.Get("Cache-Control"); cc != immutable {
			t.Errorf("GET %s (the page's link): Cache-Control %q, want %q", u, cc, immutable)
		}
		if a.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", u)
		}
		// Without the version (or with an old one) the file is revalidated, never pinned.
		bare := *u
		bare.RawQuery = "v=000000000000"
		if b := get(t, bare.String(), nil); b.status != http.StatusOK || b.header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: %d, Cache-Control %q", &bare, b.status, b.header.Get("Cache-Control"))
		}
		if b := get(t, u.String(), map[string]string{"If-None-Match": a.header.Get("ETag")}); b.status != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d", u, b.status)
		}
	}
	if kinds[".js"] < 2 || kinds[".css"] < 1 {
		t.Errorf("the page links %v; want the viewer's script and style and docs.js", kinds)
	}
	init := get(t, srv.URL+"/docs/docs.js", nil)
	if !bytes.Contains(init.body, []byte("validatorUrl: null")) || !bytes.Contains(page.body, []byte(`data-spec="openapi.json"`)) {
		t.Error("the page must point the viewer at openapi.json with the online validator off")
	}
	if a := get(t, srv.URL+"/docs", map[string]string{"If-None-Match": page.header.Get("ETag")}); a.status != http.StatusNotModified {
		t.Errorf("GET /docs with its ETag: %d", a.status)
	}
}

func TestDocsUnknownFileAndSlash(t *testing.T) {
	srv := newServer(t)
	a := get(t, srv.URL+"/docs/nope.js", nil)
	var e struct{ Error string }
	if a.status != http.StatusNotFound || json.Unmarshal(a.body, &e) != nil || e.Error == "" {
		t.Errorf("GET /docs/nope.js: %d %s", a.status, a.body)
	}
	a = get(t, srv.URL+"/docs/", nil)
	if a.status != http.StatusMovedPermanently || a.header.Get("Location") != "../docs" {
		t.Errorf("GET /docs/: %d Location %q", a.status, a.header.Get("Location"))
	}
	for _, f := range []string{"LICENSE", "NOTICE", "swagger-ui-bundle.js.LICENSE.txt"} {
		if a := get(t, srv.URL+"/docs/"+f, nil); a.status != http.StatusOK || a.header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("GET /docs/%s: %d %q", f, a.status, a.header.Get("Content-Type"))
		}
	}
}

// TestDocsViewerVendorRecord: viewer/README.md names the package, version and license that
// viewer/package.json has, and vendor.sh (make vendor-docs-viewer) is there to redo it.
func TestDocsViewerVendorRecord(t *testing.T) {
	var pkg struct{ Name, Version, License string }
	b, err := files.ReadFile("viewer/package.json")
	if err != nil || json.Unmarshal(b, &pkg) != nil {
		t.Fatalf("viewer/package.json: %v", err)
	}
	readme, err := files.ReadFile("viewer/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"- package: " + pkg.Name + " ", "- version: " + pkg.Version + "\n", "- license: " + pkg.License + " ",
		"/" + pkg.Name + "-" + pkg.Version + ".tgz", "make vendor-docs-viewer"} {
		if !bytes.Contains(readme, []byte(line)) {
			t.Errorf("viewer/README.md lacks %q", line)
		}
	}
	for _, f := range []string{"viewer/LICENSE", "viewer/NOTICE"} {
		if b, err := files.ReadFile(f); err != nil || len(b) == 0 {
			t.Errorf("%s missing: %v", f, err)
		}
	}
	st, err := os.Stat("vendor.sh")
	if err != nil || st.Mode()&0o100 == 0 {
		t.Errorf("vendor.sh missing or not executable: %v", err)
	}
}
