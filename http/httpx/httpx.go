// Package httpx holds what every svc HTTP handler shares: JSON replies, `{error}` bodies, and the
// middleware for panics, request logs and request metrics.
package httpx

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// JSON writes v as the JSON body with the given status.
func JSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"internal error: response could not be encoded"}`, http.StatusInternalServerError)
		return
	}
	JSONBytes(w, status, append(b, '\n'))
}

// JSONBytes writes b, a JSON body encoded by the caller (ending in a newline as JSON's), with
// status.
func JSONBytes(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Error writes the contract's failure body `{"error": msg}`.
func Error(w http.ResponseWriter, status int, msg string) {
	JSON(w, status, map[string]string{"error": msg})
}

// Recoverer turns a panic into a 500 `{error}` and logs it with the stack, so one bad request
// never takes the node down.
func Recoverer(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.Error("panic in handler", "panic", v, "method", r.Method, "path", r.URL.Path,
						"request_id", middleware.GetReqID(r.Context()))
					Error(w, http.StatusInternalServerError, "internal error")
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// Metrics counts requests and their latency by route pattern (not raw path, which would make
// one series per id).
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics registers the HTTP metrics of one listener on reg.
func NewMetrics(reg prometheus.Registerer, listener string) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "svc_http_requests_total",
			Help:        "HTTP requests answered, by route and status code.",
			ConstLabels: prometheus.Labels{"listener": listener},
		}, []string{"method", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "svc_http_request_duration_seconds",
			Help:        "HTTP request latency, by route.",
			ConstLabels: prometheus.Labels{"listener": listener},
			Buckets:     []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// Middleware records every request, and logs those that end in a server error or are slow.
func (m *Metrics) Middleware(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			d := time.Since(start)
			m.requests.WithLabelValues(r.Method, route, strconv.Itoa(status)).Inc()
			m.latency.WithLabelValues(r.Method, route).Observe(d.Seconds())
			if status >= 500 || d > 2*time.Second {
				log.Warn("request", "method", r.Method, "route", route, "status", status,
					"duration_ms", d.Milliseconds(), "request_id", middleware.GetReqID(r.Context()))
			}
		})
	}
}
