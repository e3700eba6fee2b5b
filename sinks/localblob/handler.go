package localblob

import (
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/svc-dev/svc/sinks"
)

// Handler serves the signed URLs: PUT stores a blob, GET and HEAD serve one. svc mounts it on
// its public listener without stripping the prefix: it expects request paths /blobs/{key}.
// Every refusal is JSON {"error": "..."}.
func (s *Store) Handler() http.Handler { return http.HandlerFunc(s.serve) }

func (s *Store) serve(w http.ResponseWriter, r *http.Request) {
	p, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no blob here: blob URLs start with %s", PathPrefix))
		return
	}
	key := keyOfPath(p)
	if err := sinks.CheckBlobKey(key); err != nil {
		writeError(w, http.StatusBadRequest, "invalid blob URL: "+strings.TrimPrefix(err.Error(), sinks.ErrInvalid.Error()+": "))
		return
	}
	if urlPath(key) != p {
		writeError(w, http.StatusBadRequest, "invalid blob URL: use the URL exactly as svc returned it")
		return
	}
	switch r.Method {
	case http.MethodPut:
		s.serveUpload(w, r, key)
	case http.MethodGet, http.MethodHead:
		s.serveDownload(w, r, key)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed: PUT to an upload URL, GET a download URL", r.Method))
	}
}

// verify checks the URL's signature, then its expiry, and writes the refusal when either fails.
func (s *Store) verify(w http.ResponseWriter, r *http.Request, op, key, token string) bool {
	q := r.URL.Query()
	expStr, sigStr := q.Get("expires"), q.Get("sig")
	exp, err := strconv.ParseInt(expStr, 10, 64)
	sig, herr := hex.DecodeString(sigStr)
	if expStr == "" || sigStr == "" || err != nil || herr != nil {
		writeError(w, http.StatusForbidden, "the blob URL lacks a valid expires or sig parameter: use the URL exactly as svc returned it")
		return false
	}
	want, _ := hex.DecodeString(s.sign(op, key, exp, token))
	if !hmac.Equal(sig, want) {
		msg := "the blob URL's signature does not match: use the URL exactly as svc returned it"
		if op == opPut {
			msg += fmt.Sprintf(", with the %s header listed beside it", TokenHeader)
		}
		writeError(w, http.StatusForbidden, msg)
		return false
	}
	if s.now().Unix() >= exp {
		writeError(w, http.StatusForbidden, fmt.Sprintf("the blob URL expired at %s: ask svc for a new one", time.Unix(exp, 0).UTC().Format(time.RFC3339)))
		return false
	}
	return true
}

func (s *Store) serveUpload(w http.ResponseWriter, r *http.Request, key string) {
	token := r.Header.Get(TokenHeader)
	if token == "" {
		writeError(w, http.StatusForbidden, fmt.Sprintf("missing header %s: send every header listed with the upload URL", TokenHeader))
		return
	}
	if !s.verify(w, r, opPut, key, token) {
		return
	}
	if r.ContentLength > s.maxUpload {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the blob is %d bytes; uploads are limited to %d bytes", r.ContentLength, s.maxUpload))
		return
	}
	_, err := s.write(r.Context(), key, r.Body, r.ContentLength, s.maxUpload, true)
	switch {
	case err == nil:
		w.WriteHeader(http.StatusOK)
	case errors.Is(err, errTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the blob is larger than %d bytes, the upload limit", s.maxUpload))
	case errors.Is(err, errSize), errors.Is(err, io.ErrUnexpectedEOF):
		writeError(w, http.StatusBadRequest, "the body ended before Content-Length bytes: send the whole file again")
	case r.Context().Err() != nil:
		// The client went away; nobody reads this answer.
		writeError(w, http.StatusBadRequest, "the upload was interrupted: send the whole file again")
	default:
		writeError(w, http.StatusInternalServerError, "svc could not store the blob; try again later")
	}
}

func (s *Store) serveDownload(w http.ResponseWriter, r *http.Request, key string) {
	if !s.verify(w, r, opGet, key, "") {
		return
	}
	c, modTime, err := s.open(key) // a small blob's zero time: no Last-Modified
	if errors.Is(err, sinks.ErrNotFound) {
		writeError(w, http.StatusNotFound, "no blob is stored under this URL")
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "svc could not read the blob; try again later")
		return
	}
	defer c.Close()
	// Blobs are whatever SDKs uploaded and are served from svc's own origin: never let a
	// browser run one as a page or script.
	h := w.Header()
	h.Set("Content-Type", contentType(key))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, max-age=60")
	http.ServeContent(w, r, "", modTime, c)
}

// contentType lets the dashboard show images inline; everything else is opaque bytes.
func contentType(key string) string {
	switch strings.ToLower(path.Ext(key)) {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".webp":
		return "image/webp"
	default:
		return "application/octet-stream"
	}
}

func writeError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
