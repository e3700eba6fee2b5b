package dashboard

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// The builds page and its filter bar (issue #15): an app's builds with their mapping files
// (sinks.BuildFiles over the records PUT /builds made), the download of one file from the blob
// store, and the keys and values the filter bar offers for its filter_expr (model.BuildsEntity).

// buildRoutes mounts the builds page, file downloads and the filter bar's keys and values;
// every member of the app's team may read them.
func (a *API) buildRoutes(r chi.Router) {
	r.Get("/builds", a.builds)
	r.Get("/builds/{fileID}/download", a.downloadBuildFile)
	r.Get("/filters/keys", a.filterKeys)
	r.Get("/filters/values", a.filterValues)
}

// Limits of GET /filters/values.
const (
	defaultValuesLimit = 50
	maxValuesLimit     = 200
	maxValuesSearch    = 1024 // bytes
)

type buildJSON struct {
	VersionName string          `json:"version_name"`
	VersionCode string          `json:"version_code"`
	LastUpdated string          `json:"last_updated"`
	Files       []buildFileJSON `json:"files"`
}

type buildFileJSON struct {
	ID          uuid.UUID `json:"id"`
	MappingType string    `json:"mapping_type"`
	DownloadURL string    `json:"download_url"`
	Filesize    int64     `json:"filesize"`
	LastUpdated string    `json:"last_updated"`
}

// buildFiles returns the metadata store's builds queries, answering 500 when it has none.
func (a *API) buildFiles(w http.ResponseWriter) (sinks.BuildFiles, bool) {
	bf, ok := a.Meta.(sinks.BuildFiles)
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "this metadata store does not answer builds queries")
	}
	return bf, ok
}

// builds serves GET /apps/{id}/builds: the builds whose files were uploaded in the window
// (default the last 7 days) and match filter_expr, with the newest file of each mapping type,
// the build with the newest file first, paged by limit (1–1000, default 10) and offset.
// A bad filter_expr is 400 invalid_filter_expr with its issues, as the dashboard's filter bar
// shows them.
func (a *API) builds(w http.ResponseWriter, r *http.Request) {
	bf, ok := a.buildFiles(w)
	if !ok {
		return
	}
	p := &params{q: r.URL.Query()} // builds take no filter_short_code
	from, to, err := p.window(a.now())
	if err != nil {
		a.fail(w, "read window", err)
		return
	}
	limit, offset, err := offsetPage(p)
	if err != nil {
		a.fail(w, "read page", err)
		return
	}
	app := appOf(r.Context()).ID
	q := sinks.BuildQuery{App: app, From: time.Unix(0, from), To: time.Unix(0, to), Limit: limit + 1, Offset: offset}
	if text := p.q.Get("filter_expr"); strings.TrimSpace(text) != "" {
		x, err := model.ParseFilterExpr(text, model.BuildsEntity)
		var fe *model.FilterExprError
		if errors.As(err, &fe) {
			httpx.JSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_filter_expr", "filter_expr_issues": fe.Issues})
			return
		}
		if err != nil {
			a.internal(w, "parse filter_expr", err)
			return
		}
		q.Filter = x
	}
	list, err := bf.BuildPage(r.Context(), q)
	if errors.Is(err, sinks.ErrInvalid) {
		httpx.Error(w, http.StatusBadRequest, "filter_expr cannot be used: "+err.Error())
		return
	}
	if err != nil {
		a.internal(w, "list builds", err)
		return
	}
	out := pageOf[buildJSON]{Meta: offsetMeta(len(list), limit, offset), Results: []buildJSON{}}
	for _, b := range list[:min(len(list), limit)] {
		bj := buildJSON{VersionName: b.VersionName, VersionCode: b.VersionCode, LastUpdated: b.LastUpdated.UTC().Format(time.RFC3339Nano),
			Files: make([]buildFileJSON, len(b.Files))}
		for i, f := range b.Files {
			if f.Size == sinks.SizeUnknown {
				f.Size = a.measureBuildFile(r.Context(), bf, f)
			}
			bj.Files[i] = buildFileJSON{ID: f.ID, MappingType: f.Type, DownloadURL: "/apps/" + app.String() + "/builds/" + f.ID.String() + "/download",
				Filesize: max(f.Size, 0), LastUpdated: f.CreatedAt.UTC().Format(time.RFC3339Nano)}
		}
		out.Results = append(out.Results, bj)
	}
	httpx.JSON(w, http.StatusOK, out)
}

// measureBuildFile finds the size of a file whose size is not recorded yet, and records it: the
// build tool uploads a file straight to the blob store after PUT /builds, so no one counted its
// bytes. A file not uploaded yet is 0 bytes for now and measured again next time; a failure is
// logged and leaves the page whole.
func (a *API) measureBuildFile(ctx context.Context, bf sinks.BuildFiles, f sinks.BuildFile) int64 {
	if a.Blobs == nil {
		return 0
	}
	rc, err := a.Blobs.Get(ctx, f.BlobKey)
	if errors.Is(err, sinks.ErrNotFound) {
		return 0
	}
	if err != nil {
		a.warn("measure build file: read blob", f.ID, err)
		return 0
	}
	defer rc.Close()
	var n int64
	// Both blob stores' readers seek (a file, an S3 object whose size its Get learned), which
	// reads nothing; counting the bytes is the fallback.
	if s, ok := rc.(io.Seeker); ok {
		n, err = s.Seek(0, io.SeekEnd)
	} else {
		n, err = io.Copy(io.Discard, rc)
	}
	if err != nil {
		a.warn("measure build file: size of blob", f.ID, err)
		return 0
	}
	if err := bf.SetBuildFileSize(ctx, f.AppID, f.ID, n); err != nil {
		a.warn("measure build file: record size", f.ID, err)
	}
	return n
}

func (a *API) warn(what string, id uuid.UUID, err error) {
	if a.Log != nil {
		a.Log.Warn("dashboard: "+what, "mapping", id.String(), "error", err.Error())
	}
}

// downloadBuildFile serves GET /apps/{id}/builds/{fileID}/download: the mapping file's bytes,
// streamed (chunked, no Content-Length) as an attachment named by downloadName. 404 for a file
// that is not the app's or was never uploaded.
func (a *API) downloadBuildFile(w http.ResponseWriter, r *http.Request) {
	bf, ok := a.buildFiles(w)
	if !ok {
		return
	}
	id, ok := parseID(w, r, "fileID", "build file")
	if !ok {
		return
	}
	f, err := bf.BuildFile(r.Context(), appOf(r.Context()).ID, id)
	if errors.Is(err, sinks.ErrNotFound) {
		httpx.Error(w, http.StatusNotFound, fmt.Sprintf("build file %s is not a file of this app", id))
		return
	}
	if err != nil {
		a.internal(w, "read build file", err)
		return
	}
	if a.Blobs == nil {
		httpx.Error(w, http.StatusInternalServerError, "this node has no blob store")
		return
	}
	// A large file may stream for longer than the request deadline; a client that goes away
	// still ends the copy, when writing to it fails.
	rc, err := a.Blobs.Get(context.WithoutCancel(r.Context()), f.BlobKey)
	if errors.Is(err, sinks.ErrNotFound) {
		httpx.Error(w, http.StatusNotFound, fmt.Sprintf("build file %s was never uploaded: the build tool has not sent its bytes", id))
		return
	}
	if err != nil {
		a.internal(w, "read build file bytes", err)
		return
	}
	defer rc.Close()
	br := bufio.NewReader(rc)
	head, _ := br.Peek(4) // a shorter file is named by its type alone
	name, ctype := downloadName(f.Mapping, head)
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-store")
	w.WriteHeader(http.StatusOK)
	// Sending the headers now makes the answer chunked whatever the file's size.
	_ = http.NewResponseController(w).Flush()
	if _, err := io.Copy(w, br); err != nil {
		a.warn("download build file", id, err)
	}
}

// downloadName is the file name and content type of a mapping's download: a ProGuard mapping
// is mapping.txt (text); a dSYM is <name>.dSYM.zip when the upload is a zip archive, and
// <name>.dSYM.tgz when it is the gzipped tarball build tools send (so the name never lies about
// the bytes); anything else keeps the name it was uploaded with. head is the file's first bytes.
func downloadName(m model.Mapping, head []byte) (name, contentType string) {
	switch {
	case m.Type == "proguard":
		return "mapping.txt", "text/plain; charset=utf-8"
	case m.Type == "dsym" && bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return dsymBase(m.Filename) + ".dSYM.zip", "application/zip"
	case m.Type == "dsym" && bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return dsymBase(m.Filename) + ".dSYM.tgz", "application/gzip"
	}
	return m.Filename, "application/octet-stream"
}

// dsymBase is an uploaded dSYM's name without its archive and .dSYM extensions:
// DemoApp.app.dSYM.tgz → DemoApp.app.
func dsymBase(filename string) string {
	base := filename
	for _, ext := range []string{".tar.gz", ".tgz", ".zip", ".dsym"} {
		if len(base) > len(ext) && strings.EqualFold(base[len(base)-len(ext):], ext) {
			base = base[:len(base)-len(ext)]
		}
	}
	if base == "" {
		return "mapping"
	}
	return base
}

// filterEntity reads the entity parameter of the filter bar's endpoints, answering 400 when it
// is missing or names no entity.
func filterEntity(w http.ResponseWriter, r *http.Request) (model.FilterEntity, bool) {
	name := r.URL.Query().Get("entity")
	if name == "" {
		httpx.Error(w, http.StatusBadRequest, "entity is required: the kind of thing to filter, such as builds")
		return model.FilterEntity{}, false
	}
	e, ok := model.FilterEntities[name]
	if !ok {
		httpx.Error(w, http.StatusBadRequest, fmt.Sprintf("Unknown filter entity %q", name))
	}
	return e, ok
}

type filterKeyJSON struct {
	Name        string   `json:"name"`
	Label       string   `json:"label"`
	Description string   `json:"description"`
	KeyGroup    string   `json:"key_group"`
	ValueType   string   `json:"value_type"`
	Operators   []string `json:"operators"`
	Suggestion  string   `json:"value_suggestion_mode"`
}

// filterKeys serves GET /apps/{id}/filters/keys?entity=...: the keys the filter bar offers,
// with their groups in display order.
func (a *API) filterKeys(w http.ResponseWriter, r *http.Request) {
	e, ok := filterEntity(w, r)
	if !ok {
		return
	}
	keys := make([]filterKeyJSON, len(e.Keys))
	for i, k := range e.Keys {
		keys[i] = filterKeyJSON{Name: k.Name, Label: k.Label, Description: k.Description, KeyGroup: k.Group,
			ValueType: k.ValueType, Operators: k.Operators, Suggestion: k.Suggestion}
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"keys": keys, "key_groups": e.Groups})
}

type filterValueJSON struct {
	Text string `json:"text"`
}

// filterValues serves GET /apps/{id}/filters/values?entity=...&key_name=...: values to pick
// for a key, those containing search (A–Z folded), at most limit (1–200, default 50): an enum's
// whole list in order, else the values the app's builds carry, most recently uploaded first.
// svc has no patch builds, so the patch keys have none.
func (a *API) filterValues(w http.ResponseWriter, r *http.Request) {
	e, ok := filterEntity(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	name := q.Get("key_name")
	if name == "" {
		httpx.Error(w, http.StatusBadRequest, "key_name is required: the filter key whose values to list")
		return
	}
	k, ok := e.Key(name)
	if !ok {
		httpx.Error(w, http.StatusBadRequest, fmt.Sprintf("Key %q is not a filter of %s", name, e.Name))
		return
	}
	if k.Suggestion == "none" {
		httpx.Error(w, http.StatusBadRequest, fmt.Sprintf("Key %q has no values to pick; type its value", name))
		return
	}
	limit := defaultValuesLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxValuesLimit {
			httpx.Error(w, http.StatusBadRequest, fmt.Sprintf("limit %q must be an integer from 1 to %d", s, maxValuesLimit))
			return
		}
		limit = n
	}
	search := q.Get("search")
	if len(search) > maxValuesSearch {
		httpx.Error(w, http.StatusBadRequest, fmt.Sprintf("search is %d bytes long; at most %d are searched for", len(search), maxValuesSearch))
		return
	}
	var (
		values []string
		more   bool
	)
	switch {
	case len(k.Enum) > 0:
		needle := model.FoldASCII(search)
		for _, v := range k.Enum {
			if strings.Contains(model.FoldASCII(v), needle) {
				values = append(values, v)
			}
		}
		if len(values) > limit {
			values, more = values[:limit], true
		}
	case e.Name == model.BuildsEntity.Name && (name == "version_name" || name == "version_code"):
		bf, ok := a.buildFiles(w)
		if !ok {
			return
		}
		var err error
		values, more, err = bf.BuildValues(r.Context(), appOf(r.Context()).ID, name, search, limit)
		if errors.Is(err, sinks.ErrInvalid) {
			httpx.Error(w, http.StatusBadRequest, "search cannot be used: "+err.Error())
			return
		}
		if err != nil {
			a.internal(w, "list filter values", err)
			return
		}
	}
	out := make([]filterValueJSON, len(values))
	for i, v := range values {
		out[i] = filterValueJSON{Text: v}
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"values": out, "truncated": more})
}
