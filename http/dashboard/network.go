package dashboard

import (
	"cmp"
	"context"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// The network request pages (issue #13): domains, the endpoint patterns of a domain, trends
// per endpoint, and five plots. Counts come from the event store (sinks.Network); the app's
// endpoint patterns come from its app actor (EndpointAnswers), or, when the actor cannot
// answer exactly, are built from the store's paths the same way. Every endpoint applies the
// same filters as every other one (window, versions, OS, attribute lists, ud_expression), plus
// http_methods. Only requests that got a response are counted (model.HTTPFacts.Completed).

// EndpointAnswers gives an app's request paths and patterns (actors.Live does).
type EndpointAnswers interface {
	Endpoints(ctx context.Context, app uuid.UUID) (*actorpb.EndpointsReply, error)
}

// Limits of the network endpoints.
const (
	defaultNetLimit = 10  // paths, trends and timeline series when not asked
	maxTrendsLimit  = 50  // trends_limit
	maxTimeline     = 100 // timeline_limit
	maxMethodLen    = 32
)

// networkRoutes mounts the network endpoints of an app; every member may read them.
func (a *API) networkRoutes(r chi.Router) {
	r.Route("/networkRequests", func(r chi.Router) {
		r.Get("/domains", a.netDomains)
		r.Get("/paths", a.netPaths)
		r.Get("/trends", a.netTrends)
		r.Get("/plots/overviewStatusCodes", a.netOverviewStatusCodes)
		r.Get("/plots/overviewTimeline", a.netOverviewTimeline)
		r.Get("/plots/endpointLatency", a.netEndpointLatency)
		r.Get("/plots/endpointStatusCodes", a.netEndpointStatusCodes)
		r.Get("/plots/endpointTimeline", a.netEndpointTimeline)
	})
}

// netStore answers 500 when the event store has no network queries.
func (a *API) netStore(w http.ResponseWriter) (sinks.Network, bool) {
	s, ok := a.Events.(sinks.Network)
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "this event store does not answer network queries")
	}
	return s, ok
}

// netRequest is a parsed network request: its parameters and query.
type netRequest struct {
	p       *params
	q       *model.NetworkQuery
	buckets model.Buckets
	st      sinks.Network
}

// netParams reads the filters every network endpoint takes: the window and the common filters,
// os_names/os_versions, repeated http_methods, plot_time_group and timezone.
func (a *API) netParams(w http.ResponseWriter, r *http.Request) (*netRequest, bool) {
	st, ok := a.netStore(w)
	if !ok {
		return nil, false
	}
	fail := func(err error) (*netRequest, bool) { a.fail(w, "read filters", err); return nil, false }
	p, err := a.readParams(r)
	if err != nil {
		return fail(err)
	}
	f, err := p.filter(appOf(r.Context()), a.now(), true)
	if err != nil {
		return fail(err)
	}
	q := &model.NetworkQuery{EventFilter: f}
	if q.OSVersions, err = p.osVersions(); err != nil {
		return fail(err)
	}
	for _, m := range p.q["http_methods"] {
		if m == "" || len(m) > maxMethodLen || strings.ContainsFunc(m, func(c rune) bool { return c <= ' ' || c > '~' }) {
			return fail(bad("http_methods %q must be an HTTP method such as get or post; repeat the parameter for several", m))
		}
		q.Methods = append(q.Methods, strings.ToLower(m))
	}
	b, err := model.ParseBuckets(p.q.Get("plot_time_group"), p.q.Get("timezone"))
	if err != nil {
		return fail(bad("%v", err))
	}
	return &netRequest{p: p, q: q, buckets: b, st: st}, true
}

// endpoints returns the app's path patterns and its stored paths: from the app actor when it
// answers exactly, else from the store.
func (a *API) endpoints(r *http.Request, st sinks.Network) (*model.PathPatterns, []model.HTTPPath, error) {
	app := appOf(r.Context()).ID
	if ea, ok := a.Live.(EndpointAnswers); ok && r.Header.Get(HeaderAnswerFrom) != "store" {
		rep, err := ea.Endpoints(r.Context(), app)
		if err == nil && rep.Ok {
			pp, err := model.UnmarshalPathPatterns(rep.Patterns)
			if err == nil {
				paths := make([]model.HTTPPath, len(rep.Paths))
				for i, p := range rep.Paths {
					paths[i] = model.HTTPPath{Domain: p.Domain, Path: p.Path}
				}
				return pp, paths, nil
			}
		}
		if err != nil && a.Log != nil {
			a.Log.Warn("dashboard: app actor did not give its endpoints; reading them from the store", "app", app, "error", err.Error())
		}
	}
	paths, err := st.HTTPPaths(r.Context(), app)
	if err != nil {
		return nil, nil, err
	}
	pp := &model.PathPatterns{}
	for _, p := range paths {
		pp.Add(p.Domain, model.PathSegments(p.Path))
	}
	return pp, paths, nil
}

// endpointParams reads domain and path (both required) and restricts the query to the
// requests of that domain whose endpoint pattern the path selects (model.PathQuery).
func (a *API) endpointParams(w http.ResponseWriter, r *http.Request, nr *netRequest) bool {
	domain, path := nr.p.q.Get("domain"), nr.p.q.Get("path")
	if domain == "" {
		httpx.Error(w, http.StatusBadRequest, "domain is required: a domain of /networkRequests/domains")
		return false
	}
	if path == "" {
		httpx.Error(w, http.StatusBadRequest, "path is required: an endpoint pattern of /networkRequests/paths, such as /v1/users/* (a final /** matches every pattern under it)")
		return false
	}
	segs := model.PathSegments(path)
	for i, s := range segs {
		if s == "**" && i != len(segs)-1 {
			httpx.Error(w, http.StatusBadRequest, "path "+strconv.Quote(path)+": ** may only end a path")
			return false
		}
	}
	pp, paths, err := a.endpoints(r, nr.st)
	if err != nil {
		a.internal(w, "read request paths", err)
		return false
	}
	pq := model.ParsePathQuery(path)
	nr.q.Domain = strings.ToLower(domain)
	nr.q.Endpoints = model.EndpointsOf(pp, paths, func(d, pattern string) bool { return d == nr.q.Domain && pq.Match(pattern) })
	return true
}

func (a *API) netStats(w http.ResponseWriter, r *http.Request, nr *netRequest, by model.HTTPGroup) ([]model.HTTPStat, bool) {
	if nr.q.Endpoints != nil && nr.q.Endpoints.Len() == 0 {
		return nil, true // no path maps to the endpoint: nothing to read
	}
	stats, err := nr.st.HTTPStats(r.Context(), nr.q, by, nr.buckets)
	if err != nil {
		a.internal(w, "query network requests", err)
		return nil, false
	}
	return stats, true
}

// intParam reads an optional integer parameter in [1, max].
func intParam(p *params, name string, def, max int) (int, error) {
	s := p.q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		return 0, bad("%s %q must be an integer from 1 to %d", name, s, max)
	}
	return n, nil
}

func (a *API) netAnswer(w http.ResponseWriter, v any) {
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, v)
}

// netDomains serves GET …/networkRequests/domains: the domains of the selected requests, the
// most requested first (then by name).
func (a *API) netDomains(w http.ResponseWriter, r *http.Request) {
	nr, ok := a.netParams(w, r)
	if !ok {
		return
	}
	stats, ok := a.netStats(w, r, nr, model.ByDomain)
	if !ok {
		return
	}
	slices.SortStableFunc(stats, func(x, y model.HTTPStat) int { return cmp.Compare(y.Count, x.Count) })
	out := make([]string, len(stats))
	for i := range stats {
		out[i] = stats[i].Domain
	}
	a.netAnswer(w, struct {
		Results []string `json:"results"`
	}{out})
}

// netPaths serves GET …/networkRequests/paths: the endpoint patterns of a domain (every
// request path the app has sent it, mapped through the app's path patterns, whatever the
// window), those holding search (case-insensitive) when given, ascending, at most limit
// (default 10).
func (a *API) netPaths(w http.ResponseWriter, r *http.Request) {
	st, ok := a.netStore(w)
	if !ok {
		return
	}
	p, err := a.readParams(r)
	if err != nil {
		a.fail(w, "read filters", err)
		return
	}
	domain := strings.ToLower(p.q.Get("domain"))
	if domain == "" {
		httpx.Error(w, http.StatusBadRequest, "domain is required: a domain of /networkRequests/domains")
		return
	}
	limit, err := intParam(p, "limit", defaultNetLimit, maxLimit)
	if err != nil {
		a.fail(w, "read limit", err)
		return
	}
	search := strings.ToLower(p.q.Get("search"))
	pp, paths, err := a.endpoints(r, st)
	if err != nil {
		a.internal(w, "read request paths", err)
		return
	}
	seen := map[string]bool{}
	out := []string{}
	for _, pat := range model.EndpointsOf(pp, paths, func(d, _ string) bool { return d == domain }).Patterns {
		if !seen[pat] && strings.Contains(strings.ToLower(pat), search) {
			seen[pat] = true
			out = append(out, pat)
		}
	}
	slices.Sort(out)
	a.netAnswer(w, struct {
		Results []string `json:"results"`
	}{out[:min(len(out), limit)]})
}

type trendJSON struct {
	Domain      string  `json:"domain"`
	PathPattern string  `json:"path_pattern"`
	P95Latency  float64 `json:"p95_latency"`
	ErrorRate   float64 `json:"error_rate"`
	Frequency   uint64  `json:"frequency"`
}

// round1 rounds to one decimal, round2 to two.
func round1(x float64) float64 { return math.Round(x*10) / 10 }
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// errorRate is the percentage of requests answered 4xx or 5xx.
func errorRate(s *model.HTTPStat) float64 {
	if s.Count == 0 {
		return 0
	}
	return round1(float64(s.Classes[2]+s.Classes[3]) * 100 / float64(s.Count))
}

// netTrends serves GET …/networkRequests/trends: per endpoint (domain and pattern), the
// trends_limit (default 10, at most 50) slowest by 95th percentile latency (endpoints with a
// known latency), with the highest error rate (those with errors), and the most requested.
// Ties go to the more requested endpoint, then by domain and pattern.
func (a *API) netTrends(w http.ResponseWriter, r *http.Request) {
	nr, ok := a.netParams(w, r)
	if !ok {
		return
	}
	limit, err := intParam(nr.p, "trends_limit", defaultNetLimit, maxTrendsLimit)
	if err != nil {
		a.fail(w, "read trends_limit", err)
		return
	}
	pp, paths, err := a.endpoints(r, nr.st)
	if err != nil {
		a.internal(w, "read request paths", err)
		return
	}
	nr.q.Endpoints = model.EndpointsOf(pp, paths, nil)
	stats, ok := a.netStats(w, r, nr, model.ByPattern)
	if !ok {
		return
	}
	// stats is in key order (domain, pattern); stable sorts keep it among ties.
	slices.SortStableFunc(stats, func(x, y model.HTTPStat) int { return cmp.Compare(y.Count, x.Count) })
	top := func(keep func(*model.HTTPStat) bool, by func(x, y *model.HTTPStat) int) []trendJSON {
		sel := []*model.HTTPStat{}
		for i := range stats {
			if keep(&stats[i]) {
				sel = append(sel, &stats[i])
			}
		}
		slices.SortStableFunc(sel, by)
		out := make([]trendJSON, 0, min(len(sel), limit))
		for _, s := range sel[:min(len(sel), limit)] {
			out = append(out, trendJSON{Domain: s.Domain, PathPattern: s.Pattern, P95Latency: float64(s.P95),
				ErrorRate: errorRate(s), Frequency: s.Count})
		}
		return out
	}
	a.netAnswer(w, struct {
		Latency   []trendJSON `json:"trends_latency"`
		ErrorRate []trendJSON `json:"trends_error_rate"`
		Frequency []trendJSON `json:"trends_frequency"`
	}{
		Latency: top(func(s *model.HTTPStat) bool { return s.LatencyCount > 0 },
			func(x, y *model.HTTPStat) int { return cmp.Compare(y.P95, x.P95) }),
		ErrorRate: top(func(s *model.HTTPStat) bool { return s.Classes[2]+s.Classes[3] > 0 },
			func(x, y *model.HTTPStat) int { return cmp.Compare(errorRate(y), errorRate(x)) }),
		Frequency: top(func(*model.HTTPStat) bool { return true }, func(x, y *model.HTTPStat) int { return 0 }),
	})
}

type statusCodesPointJSON struct {
	Datetime   string `json:"datetime"`
	TotalCount uint64 `json:"total_count"`
	Count2xx   uint64 `json:"count_2xx"`
	Count3xx   uint64 `json:"count_3xx"`
	Count4xx   uint64 `json:"count_4xx"`
	Count5xx   uint64 `json:"count_5xx"`
}

// netOverviewStatusCodes serves GET …/plots/overviewStatusCodes: per bucket, the requests per
// status class; total_count is their sum (1xx answers are in no class).
func (a *API) netOverviewStatusCodes(w http.ResponseWriter, r *http.Request) {
	nr, ok := a.netParams(w, r)
	if !ok {
		return
	}
	stats, ok := a.netStats(w, r, nr, model.ByBucket)
	if !ok {
		return
	}
	out := make([]statusCodesPointJSON, 0, len(stats))
	for i := range stats {
		s := &stats[i]
		c := s.Classes
		out = append(out, statusCodesPointJSON{Datetime: nr.buckets.Label(time.Unix(0, s.Bucket)),
			TotalCount: c[0] + c[1] + c[2] + c[3], Count2xx: c[0], Count3xx: c[1], Count4xx: c[2], Count5xx: c[3]})
	}
	a.netAnswer(w, out)
}

type timelinePointJSON struct {
	Elapsed     int64   `json:"elapsed"` // seconds since the session's start, a multiple of interval
	Domain      string  `json:"domain"`
	PathPattern string  `json:"path_pattern"`
	Count       float64 `json:"count"`
}

type timelineJSON struct {
	Interval int64               `json:"interval"` // seconds
	Points   []timelinePointJSON `json:"points"`
}

// timeline turns requests per (endpoint, elapsed bucket) into points: requests of the bucket
// per session that requested the endpoint (sessions[endpoint]), two decimals; ordered by
// elapsed time, then endpoint.
func timeline(stats []model.HTTPStat, sessions map[[2]string]uint64, label func(*model.HTTPStat) (string, string)) timelineJSON {
	out := timelineJSON{Interval: model.ElapsedStep / 1000, Points: []timelinePointJSON{}}
	for i := range stats {
		s := &stats[i]
		d, p := label(s)
		n := sessions[[2]string{s.Domain, s.Pattern}]
		if n == 0 {
			continue
		}
		out.Points = append(out.Points, timelinePointJSON{Elapsed: s.Elapsed / 1000, Domain: d, PathPattern: p,
			Count: round2(float64(s.Count) / float64(n))})
	}
	slices.SortStableFunc(out.Points, func(x, y timelinePointJSON) int { return cmp.Compare(x.Elapsed, y.Elapsed) })
	return out
}

// netOverviewTimeline serves GET …/plots/overviewTimeline: for the timeline_limit (default
// 10, at most 100) most requested endpoints, per 5 seconds since the session's start, the
// requests per session that requested the endpoint. Requests whose SDK does not send the
// session's start are not placed.
func (a *API) netOverviewTimeline(w http.ResponseWriter, r *http.Request) {
	nr, ok := a.netParams(w, r)
	if !ok {
		return
	}
	limit, err := intParam(nr.p, "timeline_limit", defaultNetLimit, maxTimeline)
	if err != nil {
		a.fail(w, "read timeline_limit", err)
		return
	}
	pp, paths, err := a.endpoints(r, nr.st)
	if err != nil {
		a.internal(w, "read request paths", err)
		return
	}
	all := model.EndpointsOf(pp, paths, nil)
	nr.q.Endpoints = all
	stats, ok := a.netStats(w, r, nr, model.ByPattern)
	if !ok {
		return
	}
	slices.SortStableFunc(stats, func(x, y model.HTTPStat) int { return cmp.Compare(y.Count, x.Count) })
	stats = stats[:min(len(stats), limit)]
	sessions := map[[2]string]uint64{}
	for i := range stats {
		sessions[[2]string{stats[i].Domain, stats[i].Pattern}] = stats[i].Sessions
	}
	top := &model.EndpointMap{}
	for i := range all.Paths {
		if _, ok := sessions[[2]string{all.Domains[i], all.Patterns[i]}]; ok {
			top.Add(all.Domains[i], all.Paths[i], all.Patterns[i])
		}
	}
	nr.q.Endpoints = top
	points, ok := a.netStats(w, r, nr, model.ByPattern|model.ByElapsed)
	if !ok {
		return
	}
	a.netAnswer(w, timeline(points, sessions, func(s *model.HTTPStat) (string, string) { return s.Domain, s.Pattern }))
}

type latencyPointJSON struct {
	Datetime string `json:"datetime"`
	Count    uint64 `json:"count"`
	P50      uint64 `json:"p50"`
	P90      uint64 `json:"p90"`
	P95      uint64 `json:"p95"`
	P99      uint64 `json:"p99"`
}

// netEndpointLatency serves GET …/plots/endpointLatency: per bucket, the requests of the
// endpoint (domain and path) and the percentiles of their known latencies in milliseconds.
func (a *API) netEndpointLatency(w http.ResponseWriter, r *http.Request) {
	nr, ok := a.netParams(w, r)
	if !ok || !a.endpointParams(w, r, nr) {
		return
	}
	stats, ok := a.netStats(w, r, nr, model.ByBucket)
	if !ok {
		return
	}
	out := make([]latencyPointJSON, 0, len(stats))
	for i := range stats {
		s := &stats[i]
		out = append(out, latencyPointJSON{Datetime: nr.buckets.Label(time.Unix(0, s.Bucket)), Count: s.Count,
			P50: s.P50, P90: s.P90, P95: s.P95, P99: s.P99})
	}
	a.netAnswer(w, out)
}

// netEndpointStatusCodes serves GET …/plots/endpointStatusCodes: the status codes the
// endpoint answered, and per bucket the requests per code ("count_<code>", only the codes of
// that bucket) and their total.
func (a *API) netEndpointStatusCodes(w http.ResponseWriter, r *http.Request) {
	nr, ok := a.netParams(w, r)
	if !ok || !a.endpointParams(w, r, nr) {
		return
	}
	stats, ok := a.netStats(w, r, nr, model.ByBucket|model.ByStatus)
	if !ok {
		return
	}
	codes := []uint16{}
	points := []map[string]any{}
	var last int64
	for i := range stats {
		s := &stats[i]
		if !slices.Contains(codes, s.Status) {
			codes = append(codes, s.Status)
		}
		if len(points) == 0 || s.Bucket != last {
			points = append(points, map[string]any{"datetime": nr.buckets.Label(time.Unix(0, s.Bucket)), "total_count": uint64(0)})
			last = s.Bucket
		}
		pt := points[len(points)-1]
		pt["count_"+strconv.Itoa(int(s.Status))] = s.Count
		pt["total_count"] = pt["total_count"].(uint64) + s.Count
	}
	slices.Sort(codes)
	a.netAnswer(w, struct {
		StatusCodes []uint16         `json:"status_codes"`
		DataPoints  []map[string]any `json:"data_points"`
	}{codes, points})
}

// netEndpointTimeline serves GET …/plots/endpointTimeline: overviewTimeline's points for the
// requests of one endpoint (domain and path, the series named by them as asked).
func (a *API) netEndpointTimeline(w http.ResponseWriter, r *http.Request) {
	nr, ok := a.netParams(w, r)
	if !ok || !a.endpointParams(w, r, nr) {
		return
	}
	all, ok := a.netStats(w, r, nr, 0)
	if !ok {
		return
	}
	sessions := map[[2]string]uint64{}
	if len(all) == 1 {
		sessions[[2]string{}] = all[0].Sessions
	}
	points, ok := a.netStats(w, r, nr, model.ByElapsed)
	if !ok {
		return
	}
	domain, path := nr.q.Domain, nr.p.q.Get("path")
	a.netAnswer(w, timeline(points, sessions, func(*model.HTTPStat) (string, string) { return domain, path }))
}
