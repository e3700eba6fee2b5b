package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Config serves GET /config: the app's SDK configuration with a strong ETag, cacheable for ten
// minutes, 304 when the client's copy is current.
type Config struct {
	Meta sinks.MetaStore
}

// ServeHTTP handles GET /config.
func (h *Config) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	app := AppFrom(r.Context())
	cfg, _, err := h.Meta.SDKConfig(r.Context(), app.ID)
	if errors.Is(err, sinks.ErrNotFound) {
		cfg, err = model.DefaultSDKConfig(), nil
	}
	if err != nil {
		serverFault(w, nil, "reading the SDK configuration", err)
		return
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		httpx.Error(w, http.StatusInternalServerError, "encode SDK configuration: "+err.Error())
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "max-age=600")
	if matches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// matches applies If-None-Match: "*", or any listed tag equal to etag (weak comparison, as
// RFC 9110 asks for If-None-Match).
func matches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
