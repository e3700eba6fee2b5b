package httpx

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// BodyDeadlines bounds how long a request body may take: each read must bring data within idle
// of the previous one, and the whole body must arrive within total of the handler's start. A
// body that stalls fails its read with an error for which IsTimeout is true, so the handler
// answers and the connection is released instead of being held by a client that sends nothing.
// (http.Server's ReadTimeout would also cut honest large uploads on slow links.)
func BodyDeadlines(idle, total time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body != nil && r.Body != http.NoBody {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: http.NewResponseController(w), idle: idle,
					end: time.Now().Add(total)}
			}
			next.ServeHTTP(w, r)
		})
	}
}

type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
	end  time.Time
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.done {
		return b.ReadCloser.Read(p)
	}
	d := time.Now().Add(b.idle)
	if d.After(b.end) {
		d = b.end
	}
	// ErrNotSupported (not HTTP/1) leaves the body without deadlines, as before.
	_ = b.rc.SetReadDeadline(d)
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		// Once the body has ended the server reads the connection in the background (to notice
		// a client that goes away); a deadline left behind would cancel the request there.
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil:
		// The deadline stays: the server's drain of the unread rest must not wait either, so
		// the connection is closed after the answer.
		b.done = true
	}
	return n, err
}

// IsTimeout reports whether err is a read that hit its deadline.
func IsTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
