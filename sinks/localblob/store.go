// Package localblob is the embedded sinks.BlobStore: blobs are files on local disk, and signed
// upload and download URLs point at svc itself (Handler, mounted at /blobs/), so svc needs no
// external service.
//
// URLs look like {publicURL}/blobs/{key}?expires=<unix seconds>&sig=<hex HMAC-SHA256>. The
// signature covers the method, the key and the expiry; an upload's also covers a random token
// that the client must send in the X-Svc-Blob-Token header, so a leaked upload URL (proxy and
// access logs keep URLs, not headers) is not enough to write a blob.
package localblob

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// TokenHeader is the header every upload must carry, with the value listed in Upload.Headers.
const TokenHeader = "X-Svc-Blob-Token"

// DefaultMaxUpload caps the body of a PUT to an upload URL unless WithMaxUpload says otherwise.
const DefaultMaxUpload = 64 << 20

// PathPrefix is where svc mounts Handler on its public listener.
const PathPrefix = "/blobs/"

// Signed URLs live at least a second (expiry has one-second resolution) and at most seven days,
// like S3's presigned URLs, so both backends accept the same TTLs.
const (
	minTTL = time.Second
	maxTTL = 7 * 24 * time.Hour
)

// tempMaxAge is how old a temporary file must be before New removes it: younger ones may
// belong to an upload in progress in another Store on the same directory.
const tempMaxAge = time.Hour

// Store keeps blobs under a directory. It is safe for concurrent use.
type Store struct {
	root      string // blobs: root/<first 2 hex>/<sha256 hex of key>
	tmp       string // temporary files, on the same file system as root
	publicURL string // without trailing slash
	secret    []byte
	maxUpload int64
	now       func() time.Time
	small     *badger.DB // WithSmallBlobs: PutBatch's small blobs, under badgerdb.PrefixBlob
	smallMax  int
}

// Option changes a Store made by New.
type Option func(*Store)

// WithMaxUpload sets the largest body a PUT to an upload URL may carry, in bytes.
func WithMaxUpload(n int64) Option { return func(s *Store) { s.maxUpload = n } }

// WithSmallBlobs has PutBatch keep blobs of at most max bytes in db, one value each, instead
// of a file each. A file costs a create and a rename, which under a busy node's writes took
// about 170 µs of CPU per blob (docs/benchmarks.md), while a Badger value is an append to its
// value log; the flusher writes every inline attachment with PutBatch. Get, Delete and
// downloads read both places, and every file written (Put, uploads, PutBatch's larger blobs)
// drops the key's value, so a key holds what was stored last.
func WithSmallBlobs(db *badger.DB, max int) Option {
	return func(s *Store) { s.small, s.smallMax = db, max }
}

// New opens (creating when missing) a store in dir. publicURL is how clients reach svc's
// public listener (scheme, host and any path a proxy strips, e.g. "https://svc.example.com");
// secret signs the URLs and must be at least 16 bytes, and the same across restarts and nodes
// that share dir, or URLs already handed out stop working.
func New(dir, publicURL string, secret []byte, opts ...Option) (*Store, error) {
	if len(secret) < 16 {
		return nil, fmt.Errorf("localblob: %w: the URL signing secret must be at least 16 bytes, got %d", sinks.ErrInvalid, len(secret))
	}
	u, err := url.Parse(publicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("localblob: %w: public URL %q must be an absolute http(s) URL without query, like https://svc.example.com", sinks.ErrInvalid, publicURL)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localblob: directory %q: %w", dir, err)
	}
	s := &Store{
		root:      filepath.Join(abs, "blobs"),
		tmp:       filepath.Join(abs, "tmp"),
		publicURL: strings.TrimRight(publicURL, "/"),
		secret:    append([]byte(nil), secret...),
		maxUpload: DefaultMaxUpload,
		now:       time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	if s.maxUpload <= 0 {
		return nil, fmt.Errorf("localblob: %w: max upload size must be positive, got %d", sinks.ErrInvalid, s.maxUpload)
	}
	if err := s.makeDirs(abs); err != nil {
		return nil, err
	}
	s.removeStaleTemps()
	return s, nil
}

// makeDirs creates the 256 fan-out directories up front, so a Put never creates a directory
// and only has to sync the one it renames into.
func (s *Store) makeDirs(abs string) error {
	if err := os.MkdirAll(s.tmp, 0o755); err != nil {
		return fmt.Errorf("localblob: create %s: %w", s.tmp, err)
	}
	for i := range 256 {
		d := filepath.Join(s.root, fmt.Sprintf("%02x", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("localblob: create %s: %w", d, err)
		}
	}
	for _, d := range []string{s.root, abs, filepath.Dir(abs)} {
		if err := syncDir(d); err != nil {
			return fmt.Errorf("localblob: %w", err)
		}
	}
	return nil
}

// removeStaleTemps deletes temporary files a crash left behind; failing to is harmless.
func (s *Store) removeStaleTemps() {
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		return
	}
	cutoff := s.now().Add(-tempMaxAge)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			_ = os.Remove(filepath.Join(s.tmp, e.Name()))
		}
	}
}

// path maps a key to its file. Keys are hashed rather than used as paths: "a" and "a/b" are
// both valid keys but cannot be a file and a directory at once, keys may be longer than a file
// name may be, and no key can reach outside root whatever it contains.
func (s *Store) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	name := hex.EncodeToString(sum[:])
	p := filepath.Join(s.root, name[:2], name)
	if filepath.Dir(filepath.Dir(p)) != s.root {
		panic("localblob: blob path outside the store: " + p) // unreachable: name is hex
	}
	return p
}

// Put stores the blob durably. size is the exact length of r, or -1 when unknown; a reader
// that ends early or runs on is ErrInvalid and stores nothing.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := sinks.CheckBlobKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("localblob: put %q: %w", key, err)
	}
	_, err := s.write(ctx, key, r, size, -1, true)
	return err
}

// PutBatch stores the blobs as Put would, with one sync of the file system for all of them
// instead of a file and a directory fsync per blob; see sinks.BlobBatch. Until it returns, a
// blob may be visible but not yet durable, as any file in the page cache is.
func (s *Store) PutBatch(ctx context.Context, blobs []sinks.Blob) error {
	for i := range blobs {
		if err := sinks.CheckBlobKey(blobs[i].Key); err != nil {
			return err
		}
	}
	var files []sinks.Blob // the blobs written as files, which syncBlobs makes durable
	var wb *badger.WriteBatch
	if s.small != nil {
		wb = s.small.NewWriteBatch()
		defer wb.Cancel()
	}
	for i := range blobs {
		b := &blobs[i]
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("localblob: put %q: %w", b.Key, err)
		}
		if wb != nil && len(b.Bytes) <= s.smallMax {
			if err := wb.Set(smallKey(b.Key), b.Bytes); err != nil {
				return fmt.Errorf("localblob: put %q: %w", b.Key, err)
			}
			continue
		}
		if wb != nil { // no older small blob of the key may shadow the file
			if err := wb.Delete(smallKey(b.Key)); err != nil {
				return fmt.Errorf("localblob: put %q: %w", b.Key, err)
			}
		}
		files = append(files, *b)
		if _, err := s.write(ctx, b.Key, bytes.NewReader(b.Bytes), int64(len(b.Bytes)), -1, false); err != nil {
			return err
		}
	}
	if wb != nil {
		// A small blob shadows an older file of its key (open reads values first), so that
		// file can stay: removing it would cost the system call this path avoids.
		if err := wb.Flush(); err != nil {
			return fmt.Errorf("localblob: put %d blobs: %w", len(blobs), err)
		}
		if err := s.small.Sync(); err != nil {
			return fmt.Errorf("localblob: put %d blobs: sync: %w", len(blobs), err)
		}
	}
	if len(files) > 0 {
		if err := s.syncBlobs(files); err != nil {
			return fmt.Errorf("localblob: put %d blobs: %w", len(files), err)
		}
	}
	return nil
}

// smallKey is the Badger key of a small blob.
func smallKey(key string) []byte { return append([]byte(badgerdb.PrefixBlob), key...) }

// open opens key's blob, the small blob first (it is newer than a file of its key, which Put
// and uploads would have dropped it for), and says when it was written (zero for a small blob:
// none is kept). A key that holds nothing is ErrNotFound.
func (s *Store) open(key string) (io.ReadSeekCloser, time.Time, error) {
	if s.small != nil {
		v, ok, err := badgerdb.Lookup(s.small, smallKey(key))
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("localblob: get %q: %w", key, err)
		}
		if ok {
			return nopCloser{bytes.NewReader(v)}, time.Time{}, nil
		}
	}
	f, err := os.Open(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, time.Time{}, fmt.Errorf("localblob: blob %q: %w", key, sinks.ErrNotFound)
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("localblob: get %q: %w", key, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, time.Time{}, fmt.Errorf("localblob: get %q: %w", key, err)
	}
	return f, info.ModTime(), nil
}

// nopCloser is a small blob's reader: nothing to close.
type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// dropSmall removes the small blob of key, if any: a file of the key was just written, or the
// key deleted.
func (s *Store) dropSmall(key string) error {
	if s.small == nil {
		return nil
	}
	if err := s.small.Update(func(txn *badger.Txn) error { return txn.Delete(smallKey(key)) }); err != nil {
		return fmt.Errorf("localblob: %q: drop its small blob: %w", key, err)
	}
	return nil
}

// Delete removes the key's file; a missing one is no error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := sinks.CheckBlobKey(key); err != nil {
		return err
	}
	if err := os.Remove(s.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("localblob: delete %q: %w", key, err)
	}
	return s.dropSmall(key)
}

// errTooLarge: the blob is longer than write's max.
var errTooLarge = errors.New("blob larger than allowed")

// errSize: the blob's length differs from the size the caller gave.
var errSize = errors.New("blob length differs from its declared size")

// write copies r into a temporary file, syncs it, renames it over the key's file and syncs the
// directory, and drops the key's small blob: when it returns nil, the blob survives a crash.
// With durable false it does neither: its caller, PutBatch, syncs and drops the small blobs of
// all its files at once. It commits nothing and returns an
// error wrapping errSize when size >= 0 and r does not hold exactly size bytes, or errTooLarge
// when max >= 0 and r holds more than max bytes.
func (s *Store) write(ctx context.Context, key string, r io.Reader, size, max int64, durable bool) (n int64, err error) {
	f, err := os.CreateTemp(s.tmp, "put-*")
	if err != nil {
		return 0, fmt.Errorf("localblob: put %q: %w", key, err)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	src, limit := r, size
	if limit < 0 || max >= 0 && max < limit {
		limit = max
	}
	if limit >= 0 {
		src = io.LimitReader(r, limit+1) // one more, to notice a reader that runs on
	}
	buf := copyBufs.Get().(*[]byte)
	n, err = io.CopyBuffer(writerOnly{f}, src, *buf)
	copyBufs.Put(buf)
	if err != nil {
		return n, fmt.Errorf("localblob: put %q: read blob: %w", key, err)
	}
	if max >= 0 && n > max {
		return n, fmt.Errorf("localblob: put %q: %w: more than %d bytes", key, errTooLarge, max)
	}
	if size >= 0 && n != size {
		return n, fmt.Errorf("localblob: put %q: %w: %w: read %d bytes, size says %d", key, sinks.ErrInvalid, errSize, n, size)
	}
	if err := ctx.Err(); err != nil {
		return n, fmt.Errorf("localblob: put %q: %w", key, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return n, fmt.Errorf("localblob: put %q: sync: %w", key, err)
		}
	}
	if err := f.Close(); err != nil {
		return n, fmt.Errorf("localblob: put %q: close: %w", key, err)
	}
	dst := s.path(key)
	if err := os.Rename(f.Name(), dst); err != nil {
		return n, fmt.Errorf("localblob: put %q: %w", key, err)
	}
	committed = true
	if !durable {
		return n, nil
	}
	if err := s.dropSmall(key); err != nil {
		return n, err
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return n, fmt.Errorf("localblob: put %q: %w", key, err)
	}
	return n, nil
}

// copyBufs holds write's copy buffers: a blob costs no buffer allocation, and 128 KiB reads
// take fewer system calls than io.Copy's 32 KiB.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// writerOnly hides *os.File's ReadFrom, which would copy through a fresh 32 KiB buffer of its
// own instead of the pooled one.
type writerOnly struct{ io.Writer }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Get returns the blob's file, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := sinks.CheckBlobKey(key); err != nil {
		return nil, err
	}
	c, _, err := s.open(key)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// SignUpload returns a URL of Handler that accepts a PUT of the blob, with the token header,
// until ExpiresAt. ttl must be between one second and seven days.
func (s *Store) SignUpload(ctx context.Context, key string, ttl time.Duration) (sinks.Upload, error) {
	if err := sinks.CheckBlobKey(key); err != nil {
		return sinks.Upload{}, err
	}
	exp, err := s.expiry(ttl)
	if err != nil {
		return sinks.Upload{}, err
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return sinks.Upload{}, fmt.Errorf("localblob: upload token: %w", err)
	}
	token := hex.EncodeToString(raw[:])
	return sinks.Upload{
		URL:       s.url(key, exp, s.sign(opPut, key, exp, token)),
		Headers:   map[string]string{TokenHeader: token},
		ExpiresAt: time.Unix(exp, 0),
	}, nil
}

// SignDownload returns a URL of Handler that serves the blob with GET until it expires.
func (s *Store) SignDownload(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := sinks.CheckBlobKey(key); err != nil {
		return "", err
	}
	exp, err := s.expiry(ttl)
	if err != nil {
		return "", err
	}
	return s.url(key, exp, s.sign(opGet, key, exp, "")), nil
}

// expiry is now+ttl rounded up to a whole second, so a URL never lives shorter than asked.
func (s *Store) expiry(ttl time.Duration) (int64, error) {
	if ttl < minTTL || ttl > maxTTL {
		return 0, fmt.Errorf("localblob: %w: URL lifetime %v must be between %v and %v", sinks.ErrInvalid, ttl, minTTL, maxTTL)
	}
	t := s.now().Add(ttl)
	exp := t.Unix()
	if t.Nanosecond() > 0 {
		exp++
	}
	return exp, nil
}

func (s *Store) url(key string, exp int64, sig string) string {
	return s.publicURL + PathPrefix + urlPath(key) + "?expires=" + strconv.FormatInt(exp, 10) + "&sig=" + sig
}

// urlPath writes a key into a URL path that routers and proxies leave alone. Keys hold only
// [A-Za-z0-9._/-], which need no escaping, but "" and "." segments ("a//b", "a/./b", "a/.") are
// valid keys that path cleaning would merge with others, so they become "~e" and "~d" ("~" is
// never in a key). A trailing "" segment ("a/") survives cleaning and stays.
func urlPath(key string) string {
	if !strings.Contains(key, "//") && !strings.HasPrefix(key, "./") && !strings.Contains(key, "/.") && key != "." {
		return key
	}
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		switch {
		case seg == "" && i < len(segs)-1:
			segs[i] = "~e"
		case seg == ".":
			segs[i] = "~d"
		}
	}
	return strings.Join(segs, "/")
}

// keyOfPath undoes urlPath; the caller checks the result with CheckBlobKey.
func keyOfPath(p string) string {
	if !strings.Contains(p, "~") {
		return p
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		switch seg {
		case "~e":
			segs[i] = ""
		case "~d":
			segs[i] = "."
		}
	}
	return strings.Join(segs, "/")
}

const (
	opPut = "PUT"
	opGet = "GET"
)

// sign is HMAC-SHA256 over the operation, key, expiry and upload token, separated by newlines
// (none of them can hold one, so no two inputs sign the same message).
func (s *Store) sign(op, key string, exp int64, token string) string {
	m := hmac.New(sha256.New, s.secret)
	var buf [20]byte
	io.WriteString(m, op)
	m.Write([]byte{'\n'})
	io.WriteString(m, key)
	m.Write([]byte{'\n'})
	m.Write(strconv.AppendInt(buf[:0], exp, 10))
	m.Write([]byte{'\n'})
	io.WriteString(m, token)
	return hex.EncodeToString(m.Sum(nil))
}

// Ping checks that the directory still takes files.
func (s *Store) Ping(ctx context.Context) error {
	f, err := os.CreateTemp(s.tmp, "ping-*")
	if err != nil {
		return fmt.Errorf("localblob: ping: %w", err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("localblob: ping: %w", err)
	}
	return nil
}

var _ sinks.BlobStore = (*Store)(nil)
