// Package apidoc serves the reference of svc's public listener, without credentials:
//
//   - GET /openapi.json: openapi.json of this package, an OpenAPI 3.1 document written by hand
//     and embedded in the binary. Tests of cmd/svc/node walk the public router and the document
//     both ways and check the node's answers against it: change it with the routes. Its own
//     extensions: x-svc-wildcard marks the path parameter that stands for chi's trailing `*`,
//     x-svc-only-when an operation routed only with a setting, x-svc-deviation a failure
//     answered without the {"error"} body (and why).
//   - GET /docs: a page that renders the document with Swagger UI, whose files are vendored in
//     viewer/ (vendor.sh, `make vendor-docs-viewer`) and embedded too: the page loads nothing
//     from another host, and its Content-Security-Policy says so to the browser.
//   - GET /docs/{file}: the page's script, the viewer's files and their license files.
//
// Every answer carries a strong ETag, and If-None-Match gets 304 (ranges are not served). The
// page links its files with their content hash (?v=…), so those requests may be cached for a
// year; everything else is revalidated. Text is gzipped for clients that accept it.
package apidoc

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/svc-dev/svc/http/httpx"
)

//go:embed openapi.json
var document []byte

//go:embed page.html docs.js viewer
var files embed.FS

// Mount adds GET /openapi.json, GET /docs and GET /docs/* to r.
func Mount(r chi.Router) {
	r.Get("/openapi.json", serveDocument)
	r.Get("/docs", servePage)
	r.Get("/docs/*", serveFile)
}

// pageCSP lets the page load only what svc itself serves. Swagger UI sets inline styles and
// uses data: images in its stylesheet.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const (
	revalidate = "no-cache"
	immutable  = "public, max-age=31536000, immutable"
)

// asset is one file as served: its bytes, type and validators, and its gzip form once asked for.
type asset struct {
	body    []byte
	ctype   string
	etag    string // strong: quoted hex of the content's SHA-256 (first 16 bytes)
	version string // ?v= of the page's links: the first 12 hex digits of the same hash

	gzOnce sync.Once
	gz     []byte // nil when gzip does not pay
}

func newAsset(body []byte, ctype string) *asset {
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:16])
	return &asset{body: body, ctype: ctype, etag: `"` + h + `"`, version: h[:12]}
}

// gzipped returns the gzip form of a text asset worth compressing, or nil.
func (a *asset) gzipped() []byte {
	a.gzOnce.Do(func() {
		if len(a.body) < 1024 || (!strings.HasPrefix(a.ctype, "text/") && !strings.HasPrefix(a.ctype, "application/json")) {
			return
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(a.body)
		_ = zw.Close()
		if buf.Len() < len(a.body) {
			a.gz = buf.Bytes()
		}
	})
	return a.gz
}

// contentTypes by file extension; fixed here rather than read from the system's MIME tables,
// which differ between machines.
var contentTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".html": "text/html; charset=utf-8",
	".json": "application/json",
	".png":  "image/png",
	".md":   "text/plain; charset=utf-8",
	".txt":  "text/plain; charset=utf-8",
	"":      "text/plain; charset=utf-8", // LICENSE, NOTICE
}

// site is everything the handlers serve, built on first use (hashing and rendering the page
// are not worth doing in every process, `svc version` included).
var site struct {
	once  sync.Once
	err   error
	doc   *asset
	page  *asset
	files map[string]*asset // by name under /docs/
}

func load() error {
	site.once.Do(func() { site.err = build() })
	return site.err
}

func build() error {
	site.doc = newAsset(document, "application/json")
	site.files = map[string]*asset{}
	add := func(name, file string) error {
		b, err := files.ReadFile(file)
		if err != nil {
			return fmt.Errorf("apidoc: read %s: %w", file, err)
		}
		ct, ok := contentTypes[path.Ext(name)]
		if !ok {
			return fmt.Errorf("apidoc: no content type for %s", name)
		}
		site.files[name] = newAsset(b, ct)
		return nil
	}
	if err := add("docs.js", "docs.js"); err != nil {
		return err
	}
	entries, err := fs.ReadDir(files, "viewer")
	if err != nil {
		return fmt.Errorf("apidoc: list viewer: %w", err)
	}
	for _, e := range entries {
		if err := add(e.Name(), "viewer/"+e.Name()); err != nil {
			return err
		}
	}
	// Links are relative to the page (/docs), so a proxy may serve svc under a prefix.
	tmpl, err := template.New("page.html").Funcs(template.FuncMap{"asset": func(name string) (string, error) {
		a, ok := site.files[name]
		if !ok {
			return "", fmt.Errorf("no file %q to link", name)
		}
		return "docs/" + name + "?v=" + a.version, nil
	}}).ParseFS(files, "page.html")
	if err != nil {
		return fmt.Errorf("apidoc: parse page: %w", err)
	}
	var page bytes.Buffer
	if err := tmpl.Execute(&page, nil); err != nil {
		return fmt.Errorf("apidoc: render page: %w", err)
	}
	site.page = newAsset(page.Bytes(), contentTypes[".html"])
	return nil
}

func serveDocument(w http.ResponseWriter, r *http.Request) {
	if err := load(); err != nil {
		httpx.Error(w, http.StatusInternalServerError, err.Error())
		return
	}
	serve(w, r, site.doc, revalidate)
}

func servePage(w http.ResponseWriter, r *http.Request) {
	if err := load(); err != nil {
		httpx.Error(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("Referrer-Policy", "no-referrer")
	serve(w, r, site.page, revalidate)
}

func serveFile(w http.ResponseWriter, r *http.Request) {
	if err := load(); err != nil {
		httpx.Error(w, http.StatusInternalServerError, err.Error())
		return
	}
	name := chi.URLParam(r, "*")
	if name == "" {
		// /docs/ would resolve the page's relative links one level too deep.
		w.Header().Set("Location", "../docs")
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	a, ok := site.files[name]
	if !ok {
		httpx.Error(w, http.StatusNotFound, "no file "+name+" under /docs/")
		return
	}
	cc := revalidate
	if r.URL.Query().Get("v") == a.version {
		cc = immutable
	}
	serve(w, r, a, cc)
}

// serve answers with a, gzipped when the client takes it; If-None-Match with a current ETag
// gets 304. Range and the other preconditions are not served (no 206, 412 or 416 here).
func serve(w http.ResponseWriter, r *http.Request, a *asset, cacheControl string) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", cacheControl)
	body, etag := a.body, a.etag
	gzipped := false
	if gz := a.gzipped(); gz != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			body, etag, gzipped = gz, strings.TrimSuffix(a.etag, `"`)+`-gzip"`, true
		}
	}
	h.Set("ETag", etag)
	if etagListed(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", a.ctype)
	if gzipped {
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// etagListed applies an If-None-Match header: "*", or a listed tag equal to etag (the weak
// comparison RFC 9110 asks for: a W/ prefix is ignored).
func etagListed(header, etag string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || tag == etag {
			return true
		}
	}
	return false
}

// acceptsGzip reads an Accept-Encoding header: gzip (or *) listed, and not with q=0.
func acceptsGzip(header string) bool {
	for _, item := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(item), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		if v, ok := strings.CutPrefix(strings.ReplaceAll(strings.ToLower(params), " ", ""), "q="); ok {
			if q, err := strconv.ParseFloat(v, 64); err == nil && q == 0 {
				return false
			}
		}
		return true
	}
	return false
}
