// Package ops serves the health endpoints: /healthz says the process is alive, /readyz says
// whether every store it depends on answers.
package ops

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/svc-dev/svc/http/httpx"
)

// Check is one dependency /readyz asks. Name is what an operator sees when it fails
// ("clickhouse (events)", "postgres (metadata)", ...).
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// Healthz answers 200 while the process serves HTTP at all.
func Healthz(w http.ResponseWriter, _ *http.Request) {
	httpx.JSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Readyz pings every check concurrently, each within timeout, and answers within timeout
// whatever the checks do: a check that has not answered by then counts as failing (its ping
// goes on in the background until the store's own call deadline ends it). All answer: 200.
// Otherwise 503 with `error` naming the failing stores and `failing` listing them, so a load
// balancer stops sending traffic and an operator sees which store to look at. The answer names
// stores only; the causes (which may hold addresses and user names) go to log.
func Readyz(checks []Check, timeout time.Duration, log *slog.Logger) http.HandlerFunc {
	type result struct {
		i   int
		err error
	}
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		// Buffered for every check, so a late ping's goroutine ends when its ping does.
		results := make(chan result, len(checks))
		for i, c := range checks {
			go func() {
				results <- result{i, c.Ping(ctx)}
			}()
		}
		status := make(map[string]string, len(checks))
		for range checks {
			select {
			case res := <-results:
				c := checks[res.i]
				if res.err != nil {
					status[c.Name] = "unavailable"
					if log != nil {
						log.Warn("readyz: store unavailable", "store", c.Name, "error", res.err.Error())
					}
				} else {
					status[c.Name] = "ok"
				}
			case <-ctx.Done():
			}
		}
		var failing []string
		msg := ""
		for _, c := range checks {
			if _, answered := status[c.Name]; !answered {
				status[c.Name] = "did not answer within " + timeout.String()
				if log != nil {
					log.Warn("readyz: store did not answer in time", "store", c.Name, "timeout", timeout.String())
				}
			}
			if status[c.Name] == "ok" {
				continue
			}
			failing = append(failing, c.Name)
			if msg != "" {
				msg += "; "
			}
			msg += c.Name + " " + status[c.Name]
		}
		if len(failing) > 0 {
			httpx.JSON(w, http.StatusServiceUnavailable, map[string]any{"error": msg, "failing": failing, "checks": status})
			return
		}
		httpx.JSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": status})
	}
}
