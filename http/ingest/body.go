package ingest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/svc-dev/svc/http/httpx"
)

// Body memory. A declared Content-Length is never trusted for allocation: the buffer grows as
// bytes arrive, by at most growStep beyond what has arrived, and every byte held for a request
// body counts against a node-wide budget, so memory follows what clients really sent.
const (
	growStep = 1 << 20 // the most a body buffer grows ahead of the bytes that arrived
	// pooledMax is the largest buffer kept for reuse: a burst of large bodies must not keep
	// its memory after it passed.
	pooledMax = 1 << 20
	// DefaultMaxInflightBytes is the default budget of request body bytes held at once.
	DefaultMaxInflightBytes = 256 << 20
)

// Budget counts the request body bytes the node holds right now across requests.
type Budget struct {
	max  int64
	used atomic.Int64
}

// NewBudget returns a budget of max bytes; max <= 0 means DefaultMaxInflightBytes.
func NewBudget(max int64) *Budget {
	if max <= 0 {
		max = DefaultMaxInflightBytes
	}
	return &Budget{max: max}
}

// take reserves n bytes, or reports false when the budget has no room.
func (b *Budget) take(n int64) bool {
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *Budget) give(n int64) { b.used.Add(-n) }

// Used is how many bytes are held now (a gauge for operators).
func (b *Budget) Used() int64 { return b.used.Load() }

// errBusy: the node holds as many body bytes as its budget allows (503, the SDK retries).
var errBusy = errors.New("the node is holding as much request data as it may; retry later")

// errBody is a body the client did not deliver whole: it ended early, broke the chunked
// framing, or stalled. It is the client's fault (4xx) and no error of the node.
type errBody struct {
	timeout bool
	err     error
}

func (e errBody) Error() string {
	if e.timeout {
		return "the request body stalled or took too long to arrive"
	}
	return "the request body was cut off or malformed: " + e.err.Error()
}

func (e errBody) Unwrap() error { return e.err }

// readErr classifies an error of reading a request body (through MaxBytesReader with limit).
func readErr(err error, limit int64) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return errTooLarge{limit}
	case httpx.IsTimeout(err):
		return errBody{timeout: true, err: err}
	default:
		return errBody{err: err}
	}
}

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// body is one request's buffered body; release returns its memory to the budget and the pool.
type body struct {
	buf    []byte
	budget *Budget
	held   int64
}

func (b *body) release() {
	b.budget.give(b.held)
	b.held = 0
	if cap(b.buf) <= pooledMax {
		buf := b.buf[:0]
		bodyPool.Put(&buf)
	}
	b.buf = nil
}

// readBody reads a body of up to limit bytes (chunked ones too: no Content-Length needed). A
// body over the limit stops being read at the limit (errTooLarge); one the client did not
// deliver whole is errBody; a node at its budget is errBusy. The caller releases the body.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, budget *Budget) (*body, error) {
	b := &body{buf: *bodyPool.Get().(*[]byte), budget: budget}
	if r.ContentLength > limit {
		return b, errTooLarge{limit}
	}
	if !budget.take(int64(cap(b.buf))) {
		return b, errBusy
	}
	b.held = int64(cap(b.buf))
	src := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(b.buf) == cap(b.buf) {
			grow := grownBy(cap(b.buf))
			if !budget.take(int64(grow)) {
				return b, errBusy
			}
			b.held += int64(grow)
			nb := make([]byte, len(b.buf), cap(b.buf)+grow)
			copy(nb, b.buf)
			b.buf = nb
		}
		n, err := src.Read(b.buf[len(b.buf):cap(b.buf)])
		b.buf = b.buf[:len(b.buf)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, readErr(err, limit)
		}
	}
}

// grownBy is how much a full body buffer of capacity c grows: by half, at least 4 KiB and at
// most growStep, but never from at most pooledMax to past it. A body that fits in pooledMax
// thus ends in a buffer the pool keeps: growing 729 KiB by half made 1,093 KiB, which it did
// not, so each request with an 800 KB body grew a buffer from the pool's 64 KiB again (3 MB
// allocated and copied per request, a quarter of a ClickHouse node's allocated bytes).
func grownBy(c int) int {
	g := min(max(c/2, 4<<10), growStep)
	if c < pooledMax && c+g > pooledMax {
		g = pooledMax - c
	}
	return g
}

// errReader notes the first error of the body beneath a multipart reader, so a failure
// while a part is copied elsewhere (a blob to the blob store) can be told from the store's own.
type errReader struct {
	r   io.Reader
	err error
}

func (c *errReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// errTooLarge marks a body over its limit (413).
type errTooLarge struct{ limit int64 }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("request body exceeds the limit of %d bytes", e.limit)
}
