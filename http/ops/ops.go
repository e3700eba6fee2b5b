// Package ops serves the health endpoints: /healthz says the process is alive, /readyz says
// whether every store it depends on answers.
package ops

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/svc-dev/svc/http/httpx"
)

// Check is one dependency /readyz asks. Name is what an operator sees when it fails
// ("clickhouse", "postgres", ...).
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// Healthz answers 200 while the process serves HTTP at all.
func Healthz(w http.ResponseWriter, _ *http.Request) {
	httpx.JSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Readyz pings every check concurrently, each within timeout. All answer: 200. Otherwise 503
// with `error` naming the failing stores and `failing` listing them, so a load balancer stops
// sending traffic and an operator sees which store to look at.
func Readyz(checks []Check, timeout time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		errs := make([]error, len(checks))
		var wg sync.WaitGroup
		for i, c := range checks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.Ping(ctx)
			}()
		}
		wg.Wait()
		status := map[string]string{}
		var failing []string
		msg := ""
		for i, c := range checks {
			if errs[i] != nil {
				failing = append(failing, c.Name)
				status[c.Name] = errs[i].Error()
				if msg != "" {
					msg += "; "
				}
				msg += c.Name + " unavailable: " + errs[i].Error()
			} else {
				status[c.Name] = "ok"
			}
		}
		if len(failing) > 0 {
			httpx.JSON(w, http.StatusServiceUnavailable, map[string]any{"error": msg, "failing": failing, "checks": status})
			return
		}
		httpx.JSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": status})
	}
}
