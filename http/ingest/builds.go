package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Builds serves PUT /builds: build metadata, and upload URLs for mapping files.
type Builds struct {
	Meta  sinks.MetaStore
	Blobs sinks.BlobStore
	// MaxMappingBytes refuses (413) a mapping item that declares a larger size.
	MaxMappingBytes int64
	UploadTTL       time.Duration
	Now             func() time.Time
}

const maxBuildBody = 1 << 20

// flexString accepts a JSON string or number: build tools send build_size and version_code
// either way.
type flexString struct {
	set bool
	s   string
}

func (f *flexString) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	f.set = true
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &f.s)
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return errors.New("must be a string or a number")
	}
	f.s = n.String()
	return nil
}

type buildRequest struct {
	VersionName flexString       `json:"version_name"`
	VersionCode flexString       `json:"version_code"`
	BuildSize   flexString       `json:"build_size"`
	BuildType   flexString       `json:"build_type"`
	Mappings    []mappingRequest `json:"mappings"`
}

type mappingRequest struct {
	Type     string `json:"type"`
	Filename string `json:"filename"`
	Size     *int64 `json:"size"` // optional declared size
}

// errDeclaredTooLarge is a mapping whose declared size is over the limit (413).
type errDeclaredTooLarge struct {
	index int
	size  int64
	limit int64
}

func (e errDeclaredTooLarge) Error() string {
	return fmt.Sprintf("mappings[%d]: declared size %d bytes exceeds the limit of %d bytes", e.index, e.size, e.limit)
}

// validBareName reports whether a mapping file name is a bare file name, never a path.
func validBareName(s string) bool {
	return s != "" && s != "." && s != ".." && len(s) <= 255 && !strings.ContainsAny(s, "/\\\x00") && utf8.ValidString(s)
}

func (req *buildRequest) validate(maxMapping int64) (model.Build, error) {
	var b model.Build
	for _, f := range []struct {
		name string
		v    flexString
	}{{"version_name", req.VersionName}, {"version_code", req.VersionCode}, {"build_size", req.BuildSize}, {"build_type", req.BuildType}} {
		if !f.v.set || strings.TrimSpace(f.v.s) == "" {
			return b, fmt.Errorf("%s is required", f.name)
		}
		if len(f.v.s) > 256 {
			return b, fmt.Errorf("%s must be at most 256 characters", f.name)
		}
		if !utf8.ValidString(f.v.s) || strings.ContainsRune(f.v.s, 0) {
			return b, fmt.Errorf("%s must be valid UTF-8 without NUL characters", f.name)
		}
	}
	size, err := strconv.ParseInt(req.BuildSize.s, 10, 64)
	if err != nil || size < 0 {
		return b, fmt.Errorf("build_size must be a whole number of bytes, got %q", req.BuildSize.s)
	}
	if !model.BuildTypes[req.BuildType.s] {
		return b, fmt.Errorf("build_type must be aab, apk or ipa, got %q", req.BuildType.s)
	}
	if len(req.Mappings) > 100 {
		return b, fmt.Errorf("at most 100 mappings per build, got %d", len(req.Mappings))
	}
	for i, m := range req.Mappings {
		if !model.MappingTypes[m.Type] {
			return b, fmt.Errorf("mappings[%d].type must be dsym, proguard, elf_debug or jsbundle, got %q", i, m.Type)
		}
		if !validBareName(m.Filename) {
			return b, fmt.Errorf("mappings[%d].filename must be a bare file name (no path), got %q", i, m.Filename)
		}
		if m.Size != nil && (*m.Size < 0 || (maxMapping > 0 && *m.Size > maxMapping)) {
			if *m.Size < 0 {
				return b, fmt.Errorf("mappings[%d].size must not be negative", i)
			}
			return b, errDeclaredTooLarge{i, *m.Size, maxMapping}
		}
	}
	return model.Build{VersionName: req.VersionName.s, VersionCode: req.VersionCode.s, BuildType: req.BuildType.s, Size: size}, nil
}

// MappingBlobKey is where a mapping file lives in the blob store.
func MappingBlobKey(app, mapping uuid.UUID) string {
	return "mappings/" + app.String() + "/" + mapping.String()
}

// ServeHTTP handles PUT /builds.
func (h *Builds) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	app := AppFrom(r.Context())
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		httpx.Error(w, http.StatusBadRequest, "Content-Type must be application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBuildBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpx.Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("build request exceeds %d bytes", maxBuildBody))
			return
		}
		if httpx.IsTimeout(err) {
			httpx.Error(w, http.StatusRequestTimeout, "the request body stalled or took too long to arrive")
			return
		}
		httpx.Error(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	var req buildRequest
	if err := json.Unmarshal(body, &req); err != nil {
		httpx.Error(w, http.StatusBadRequest, "malformed build request: "+err.Error())
		return
	}
	b, err := req.validate(h.MaxMappingBytes)
	var tl errDeclaredTooLarge
	if errors.As(err, &tl) {
		httpx.Error(w, http.StatusRequestEntityTooLarge, tl.Error())
		return
	}
	if err != nil {
		httpx.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	now := time.Now().UTC()
	if h.Now != nil {
		now = h.Now().UTC()
	}
	b.AppID, b.UpdatedAt = app.ID, now
	if err := h.Meta.PutBuild(r.Context(), b); err != nil {
		storeFailed(w, "store build", err)
		return
	}
	if len(req.Mappings) == 0 {
		httpx.JSON(w, http.StatusOK, map[string]string{"ok": "uploaded build info"})
		return
	}
	ttl := h.UploadTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	ms := make([]model.Mapping, len(req.Mappings))
	items := make([]map[string]any, len(req.Mappings))
	for i, m := range req.Mappings {
		id := uuid.New()
		ms[i] = model.Mapping{ID: id, AppID: app.ID, VersionName: b.VersionName, VersionCode: b.VersionCode, BuildType: b.BuildType,
			Type: m.Type, Filename: m.Filename, BlobKey: MappingBlobKey(app.ID, id), CreatedAt: now}
		up, err := h.Blobs.SignUpload(r.Context(), ms[i].BlobKey, ttl)
		if err != nil {
			serverFault(w, nil, "signing an upload URL", err)
			return
		}
		// The upload carries the mapping id and original name, as the contract lists; the blob
		// store ignores headers it does not sign.
		hdr := map[string]string{"x-svc-mapping-id": id.String(), "x-svc-original-file-name": m.Filename}
		for k, v := range up.Headers {
			hdr[k] = v
		}
		items[i] = map[string]any{"id": id, "type": m.Type, "filename": m.Filename, "upload_url": up.URL,
			"expires_at": up.ExpiresAt.UTC().Format(time.RFC3339Nano), "headers": hdr}
	}
	if err := h.Meta.AddMappings(r.Context(), ms); err != nil {
		storeFailed(w, "store mappings", err)
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"mappings": items})
}

// storeFailed answers a store error: the store's ErrInvalid means the request can never be
// stored (400: retrying would not help); anything else is temporary (503).
func storeFailed(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, sinks.ErrInvalid) {
		httpx.Error(w, http.StatusBadRequest, what+": "+err.Error())
		return
	}
	serverFault(w, nil, what, err)
}

// unavailable answers 503 with Retry-After: the SDK or build tool keeps its data and retries.
func unavailable(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", "30")
	httpx.Error(w, http.StatusServiceUnavailable, msg)
}

// serverFault answers a failure on the node's side with 503 + Retry-After, so an SDK keeps its
// data: a store outage names the kind of store, anything else says what failed. The cause, which
// may name a store's address, user or bucket, goes to the log only (log nil: the default).
func serverFault(w http.ResponseWriter, log *slog.Logger, what string, err error) {
	if log == nil {
		log = slog.Default()
	}
	log.Error("ingest: "+what, "error", err.Error())
	if httpx.StoreUnavailable(w, err) {
		return
	}
	unavailable(w, what+" failed on the server; retry after the time in Retry-After")
}
