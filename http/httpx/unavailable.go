package httpx

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/svc-dev/svc/sinks"
)

// RetryAfterUnavailable is the Retry-After of a 503 that a store outage caused.
const RetryAfterUnavailable = 5 * time.Second

// Unavailable reports whether err means that a store did not answer in time, and which kind of
// store ("metadata", "event", "blob"; empty when the error does not say): sinks.ErrUnavailable,
// or an expired deadline (the request's own, or a call's) that a backend passed on unwrapped.
// This is the one test every handler uses to tell an outage (503) from a fault (500).
func Unavailable(err error) (store string, ok bool) {
	var ue *sinks.UnavailableError
	if errors.As(err, &ue) {
		return ue.Store, true
	}
	if errors.Is(err, sinks.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		return "", true
	}
	return "", false
}

// StoreUnavailable answers 503 with Retry-After and a message naming the kind of store (never
// its address, user or database: the cause is the caller's to log) when err is an outage, and
// reports whether it did.
func StoreUnavailable(w http.ResponseWriter, err error) bool {
	store, ok := Unavailable(err)
	if !ok {
		return false
	}
	msg := "a store this request needs did not answer in time; retry after the time in Retry-After"
	if store != "" {
		msg = "the " + store + " store is unavailable; retry after the time in Retry-After"
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfterUnavailable/time.Second)))
	Error(w, http.StatusServiceUnavailable, msg)
	return true
}

// RequestTimeout gives every request a deadline of d, so that a store that hangs ends in a
// timely answer (the stores' calls honour their context, and StoreUnavailable turns the expiry
// into 503) instead of a request that never ends.
func RequestTimeout(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if d <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}
