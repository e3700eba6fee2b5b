package eventstest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// NetworkStore is an event store that answers the network queries: both event stores are.
type NetworkStore interface {
	sinks.EventStore
	sinks.Network
}

// NetworkReference is the brute-force answer of sinks.Network over a set of events, by the
// model's Go definitions. Backends' own tests and the node's tests may use it.
type NetworkReference struct {
	events []model.Event // one per (app, event id): the last written
}

// NewNetworkReference keeps the last of the events written with each (app, id), as a store does.
func NewNetworkReference(written []model.Event) *NetworkReference {
	return &NetworkReference{events: lastEvents(written)}
}

// HTTPPaths is sinks.Network.HTTPPaths.
func (r *NetworkReference) HTTPPaths(app uuid.UUID) []model.HTTPPath {
	seen := map[model.HTTPPath]bool{}
	var out []model.HTTPPath
	for i := range r.events {
		e := &r.events[i]
		h := &e.Facts.HTTP
		if e.AppID != app || e.Type != "http" || !h.Completed() {
			continue
		}
		p := model.HTTPPath{Domain: h.Domain, Path: h.Path}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b model.HTTPPath) int {
		if c := strings.Compare(a.Domain, b.Domain); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out
}

// HTTPStats is sinks.Network.HTTPStats.
func (r *NetworkReference) HTTPStats(q *model.NetworkQuery, by model.HTTPGroup, b model.Buckets) []model.HTTPStat {
	accs := map[model.HTTPKey]*model.HTTPAcc{}
	for i := range r.events {
		e := &r.events[i]
		if !q.Match(e, &e.Facts.HTTP) {
			continue
		}
		k, ok := q.KeyOf(&e.Facts.HTTP, by, b.Start(time.Unix(0, e.Timestamp)).UnixNano())
		if !ok {
			continue
		}
		a := accs[k]
		if a == nil {
			a = &model.HTTPAcc{}
			accs[k] = a
		}
		a.Add(&e.Facts.HTTP, e.SessionID)
	}
	out := make([]model.HTTPStat, 0, len(accs))
	for k, a := range accs {
		out = append(out, a.Stat(k))
	}
	slices.SortFunc(out, func(a, b model.HTTPStat) int { ka, kb := a.Key(), b.Key(); return model.CompareHTTPKeys(&ka, &kb) })
	return out
}

// HTTPEvent makes an http event of app in session at ts (Unix ns) whose payload carries the
// request as SDKs send it, with its facts derived. start and end are the device's monotonic
// milliseconds (0 leaves them out); sessionStart is attribute session_start_time (0: absent).
func HTTPEvent(app, session uuid.UUID, ts int64, method, url string, status, start, end int, sessionStart int64, a model.Attributes) model.Event {
	p := `{"url":` + strconv.Quote(url) + `,"method":` + strconv.Quote(method) + `,"status_code":` + strconv.Itoa(status)
	if start > 0 {
		p += `,"start_time":` + strconv.Itoa(start)
	}
	if end > 0 {
		p += `,"end_time":` + strconv.Itoa(end)
	}
	p += `,"client":"okhttp"}`
	a.SessionStartTime = sessionStart
	e := model.Event{ID: uuid.New(), AppID: app, SessionID: session, Type: "http", Timestamp: ts, Attribute: a,
		Payload: []byte(p)}
	e.Facts = model.DeriveFacts(&e)
	return e
}

// networkData is the dataset of RunNetwork.
type networkData struct {
	A, B, C uuid.UUID
	written [][]model.Event
	ref     *NetworkReference
	lo, hi  int64 // app A's request times, min and max
}

var (
	netDomains = []string{"api.example.com", "cdn.example.com:8443", "intake.example.org"}
	netPaths   = []string{"/v1/users/%d", "/v1/users/%d/orders", "/v1/feed", "/v2/items/%s", "/login",
		"/v1/users/me", "/static/%x.png", "/search", "/v1/p/slug-%c", "/"}
	netMethods  = []string{"get", "post", "GET", "put", "delete"}
	netStatuses = []int{200, 200, 200, 201, 204, 301, 304, 400, 401, 404, 500, 503, 0, 101}
)

// netDay is the first day of the dataset: it and the next two days cross local midnights in
// Asia/Kolkata and the start of daylight saving time in America/New_York (2025-03-09).
var netDay = time.Date(2025, 3, 8, 0, 0, 0, 0, time.UTC).UnixNano() + 987_651

// buildNetworkData makes app A's requests at random (fixed seed): three domains, paths with
// identifiers (so patterns collapse), a slug position with more than model.CollapseAt values,
// every status class and failed requests, methods in both cases, latencies missing or not,
// sessions with and without a start time, ties in time, every filter attribute varied; some
// events are written twice, and some are not http or have no domain. App B has a few of the
// same; app C is hand-written (testNetworkHand).
func buildNetworkData() *networkData {
	d := &networkData{A: uuid.New(), B: uuid.New(), C: uuid.New()}
	r := rand.New(rand.NewPCG(29, 3))
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	var evs []model.Event
	ts := netDay
	sessions := make([]uuid.UUID, 12)
	starts := make([]int64, len(sessions))
	for i := range sessions {
		sessions[i] = uuid.New()
		if i%4 != 3 { // every fourth session's SDK sends no session start
			starts[i] = netDay - int64(r.IntN(600))*int64(time.Second)
		}
	}
	for i := range 700 {
		if i%9 != 0 { // every ninth request at the time of the one before: ties
			ts += int64(r.IntN(900)) * int64(time.Second) / 2
		}
		v := spanVersions[r.IntN(len(spanVersions))]
		os := spanOSes[r.IntN(len(spanOSes))]
		a := model.Attributes{InstallationID: "inst", AppVersion: v.Name, AppBuild: v.Code, OSName: os.Name, OSVersion: os.Version,
			DeviceName: pick([]string{"sunfish", "iPhone15,2"}), DeviceManufacturer: pick([]string{"Google", "Apple"}),
			DeviceLocale: pick([]string{"en-US", "fr-FR"}), NetworkType: pick([]string{"wifi", "cellular"}),
			NetworkProvider: pick([]string{"", "Orange"}), NetworkGeneration: pick([]string{"", "4g", "5g"})}
		s := r.IntN(len(sessions))
		path := netPaths[r.IntN(len(netPaths))]
		switch {
		case strings.Contains(path, "%d"):
			path = fmt.Sprintf(path, r.IntN(5000))
		case strings.Contains(path, "%x"):
			path = fmt.Sprintf(path, r.Uint64())
		case strings.Contains(path, "%s"):
			path = fmt.Sprintf(path, uuid.New())
		case strings.Contains(path, "%c"):
			path = fmt.Sprintf(path, 'a'+r.IntN(14)) // 14 slugs: the position collapses
		}
		domain := pick(netDomains)
		if strings.HasPrefix(path, "/v1/p/") {
			domain = netDomains[1] // all slugs on one domain, so that its position collapses
		}
		url := "https://" + domain + path
		if r.IntN(5) == 0 {
			url += "?page=" + strconv.Itoa(r.IntN(3))
		}
		begin := 1 + r.IntN(1_000_000)
		end := begin + r.IntN(40)*37
		if r.IntN(10) == 0 {
			begin = 0 // no start time: latency unknown
		}
		e := HTTPEvent(d.A, sessions[s], ts, pick(netMethods), url, netStatuses[r.IntN(len(netStatuses))], begin, end, starts[s], a)
		if r.IntN(4) != 0 {
			e.UserDefined = []model.UDAttr{{Key: "n", Type: model.UDInt64, Value: strconv.Itoa(r.IntN(10))},
				{Key: "tier", Type: model.UDString, Value: pick([]string{"gold", "silver"})}}
		}
		evs = append(evs, e)
	}
	d.lo, d.hi = evs[0].Timestamp, ts
	// Not requests of the pages: an SDK's "msr" URL (no host), and other kinds of events.
	evs = append(evs, HTTPEvent(d.A, sessions[0], netDay+5, "get", "msr", 0, 1, 2, 0, model.Attributes{}),
		model.Event{ID: uuid.New(), AppID: d.A, SessionID: sessions[0], Type: "screen_view", Timestamp: netDay + 6,
			Payload: []byte(`{"name":"Home"}`)})
	for i := range 5 { // app B: A's requests in another app
		e := evs[i]
		e.ID, e.AppID = uuid.New(), d.B
		evs = append(evs, e)
	}
	d.written = [][]model.Event{evs, everyNth(evs, 23), handRequests(d.C)}
	d.ref = NewNetworkReference(concat(d.written))
	return d
}

// RunNetwork checks the sinks.Network contract. open must return a fresh, empty store; the
// suite writes one dataset into it and closes it at the end. Each answer is compared with
// NetworkReference; app C's answers are also written out by hand (testNetworkHand). Call it
// inside t.Run("<backend>", …).
func RunNetwork(t *testing.T, open func(t *testing.T) NetworkStore) {
	d := buildNetworkData()
	s := openWritten(t, open, d.written, nil)
	c := ctx(t)
	t.Run("HandWritten", func(t *testing.T) { testNetworkHand(t, s, d) })
	t.Run("HTTPPaths", func(t *testing.T) {
		for _, app := range []uuid.UUID{d.A, d.B, d.C, uuid.New()} {
			got, err := s.HTTPPaths(c, app)
			if err != nil {
				t.Fatalf("HTTPPaths: %v", err)
			}
			if want := d.ref.HTTPPaths(app); !slices.Equal(got, want) {
				t.Errorf("HTTPPaths(%s) = %v\nwant %v", app, got, want)
			}
		}
	})
	zones := []model.Buckets{{Group: model.PlotHours}, {Group: model.PlotDays}, {Group: model.PlotMinutes}, {Group: model.PlotMonths}}
	for _, name := range []string{"Asia/Kolkata", "America/New_York"} {
		for _, g := range []string{"hours", "days"} {
			b, err := model.ParseBuckets(g, name)
			if err != nil {
				t.Fatalf("ParseBuckets(%s, %s): %v", g, name, err)
			}
			zones = append(zones, b)
		}
	}
	groups := []model.HTTPGroup{0, model.ByDomain, model.ByPattern, model.ByBucket, model.ByDomain | model.ByBucket,
		model.ByPattern | model.ByBucket | model.ByStatus, model.ByPattern | model.ByElapsed, model.ByElapsed, model.ByStatus}
	for _, qc := range networkQueries(t, d) {
		t.Run("HTTPStats/"+qc.name, func(t *testing.T) {
			any := false
			for _, by := range groups {
				for _, b := range zones {
					if by&model.ByBucket == 0 && b != zones[0] {
						continue // the buckets matter only with ByBucket
					}
					got, err := s.HTTPStats(c, &qc.q, by, b)
					if err != nil {
						t.Fatalf("HTTPStats(by %b): %v", by, err)
					}
					want := d.ref.HTTPStats(&qc.q, by, b)
					any = any || len(want) > 0
					if len(got) == 0 && len(want) == 0 {
						continue
					}
					if df := diff(got, want); df != "" {
						t.Errorf("by %b, buckets %s %v:\n%s", by, b.Group, b.Loc, df)
					}
				}
			}
			if !any && !qc.empty {
				t.Errorf("selects nothing; the dataset must make it select some")
			}
		})
	}
}

type networkQueryCase struct {
	name  string
	q     model.NetworkQuery
	empty bool
}

// networkQueries are the filter cases of app A: each filter alone, some together, endpoint
// maps as the pages build them, and windows whose bounds are request times.
func networkQueries(t *testing.T, d *networkData) []networkQueryCase {
	full := model.EventFilter{App: d.A, From: d.lo, To: d.hi + 1}
	mid := model.EventFilter{App: d.A, From: d.lo + (d.hi-d.lo)/4, To: d.lo + (d.hi-d.lo)*3/4}
	var times []int64
	for _, e := range d.ref.events {
		if e.AppID == d.A && e.Type == "http" {
			times = append(times, e.Timestamp)
		}
	}
	slices.Sort(times)
	exact := model.EventFilter{App: d.A, From: times[len(times)/3], To: times[len(times)*2/3]}
	// The app's patterns, as its actor would have them, and endpoint maps made from them.
	pp := &model.PathPatterns{}
	for _, p := range d.ref.HTTPPaths(d.A) {
		pp.Add(p.Domain, model.PathSegments(p.Path))
	}
	paths := d.ref.HTTPPaths(d.A)
	all := model.EndpointsOf(pp, paths, nil)
	users := model.ParsePathQuery("/v1/users/**")
	one := model.EndpointsOf(pp, paths, func(domain, pattern string) bool {
		return domain == netDomains[0] && users.Match(pattern)
	})
	slug := model.EndpointsOf(pp, paths, func(domain, pattern string) bool {
		return domain == netDomains[1] && pattern == "/v1/p/*"
	})
	if one.Len() == 0 || slug.Len() < model.CollapseAt {
		t.Fatalf("endpoint maps: %d paths under /v1/users, %d under the slug position; the dataset must give some and ≥ %d",
			one.Len(), slug.Len(), model.CollapseAt)
	}
	q := func(f model.EventFilter, edit func(q *model.NetworkQuery)) model.NetworkQuery {
		nq := model.NetworkQuery{EventFilter: f}
		if edit != nil {
			edit(&nq)
		}
		return nq
	}
	return []networkQueryCase{
		{name: "full", q: q(full, nil)},
		{name: "mid", q: q(mid, nil)},
		{name: "exact-bounds", q: q(exact, nil)},
		{name: "empty-window", q: q(model.EventFilter{App: d.A, From: times[5], To: times[5]}, nil), empty: true},
		{name: "endpoints-all", q: q(full, func(q *model.NetworkQuery) { q.Endpoints = all })},
		{name: "endpoints-users", q: q(full, func(q *model.NetworkQuery) { q.Endpoints = one; q.Domain = netDomains[0] })},
		{name: "endpoints-slug", q: q(mid, func(q *model.NetworkQuery) { q.Endpoints = slug })},
		{name: "domain", q: q(full, func(q *model.NetworkQuery) { q.Domain = netDomains[2] })},
		{name: "methods", q: q(full, func(q *model.NetworkQuery) { q.Methods = []string{"get", "delete"} })},
		{name: "versions", q: q(full, func(q *model.NetworkQuery) { q.Versions = spanVersions[:2] })},
		{name: "version-cross", q: q(full, func(q *model.NetworkQuery) { q.Versions = []model.AppVersion{{Name: "1.0", Code: "11"}} }), empty: true},
		{name: "os", q: q(full, func(q *model.NetworkQuery) { q.OSVersions = spanOSes[1:] })},
		{name: "device-names", q: q(full, func(q *model.NetworkQuery) { q.DeviceNames = []string{"sunfish"} })},
		{name: "manufacturers", q: q(full, func(q *model.NetworkQuery) { q.DeviceManufacturers = []string{"Apple"} })},
		{name: "locales", q: q(full, func(q *model.NetworkQuery) { q.Locales = []string{"fr-FR"} })},
		{name: "network", q: q(full, func(q *model.NetworkQuery) {
			q.NetworkTypes, q.NetworkProviders, q.NetworkGenerations = []string{"wifi"}, []string{"Orange"}, []string{"", "5g"}
		})},
		{name: "countries", q: q(full, func(q *model.NetworkQuery) { q.Countries = []string{"FR"} }), empty: true},
		{name: "ud", q: q(full, func(q *model.NetworkQuery) {
			q.UD = mustUD(t, `{"or":[`+udCmp("n", "int64", "gte", `"7"`)+`,`+udCmp("tier", "string", "eq", `"gold"`)+`]}`)
		})},
		{name: "together", q: q(mid, func(q *model.NetworkQuery) {
			q.Endpoints, q.Methods, q.Versions = all, []string{"get"}, spanVersions[1:]
			q.UD = mustUD(t, udCmp("n", "int64", "lt", `"8"`))
		})},
		{name: "other-app", q: q(model.EventFilter{App: d.B, From: d.lo, To: d.hi + 1}, nil)},
	}
}

// handRequests is app C: one session that started at 10:00:00 UTC on 2025-06-02 and made six
// requests to api.c.io in its first 12 seconds, and a second session (no start time) with two.
func handRequests(app uuid.UUID) []model.Event {
	t0 := time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	s1, s2 := uuid.MustParse("00000000-0000-4000-8000-000000000001"), uuid.MustParse("00000000-0000-4000-8000-000000000002")
	a := model.Attributes{AppVersion: "3.0", AppBuild: "300", OSName: "ios", OSVersion: "18.0"}
	sec := int64(time.Second)
	return []model.Event{
		HTTPEvent(app, s1, t0+1*sec, "get", "https://api.c.io/users/1234", 200, 1000, 1100, t0, a),    // 100 ms, elapsed 1 s
		HTTPEvent(app, s1, t0+2*sec, "get", "https://api.c.io/users/5678", 200, 2000, 2300, t0, a),    // 300 ms, 2 s
		HTTPEvent(app, s1, t0+6*sec, "post", "https://api.c.io/users/5678", 500, 3000, 3200, t0, a),   // 200 ms, 6 s
		HTTPEvent(app, s1, t0+7*sec, "get", "https://api.c.io/login", 401, 4000, 4050, t0, a),         // 50 ms, 7 s
		HTTPEvent(app, s1, t0+11*sec, "get", "https://api.c.io/users/me", 404, 5000, 0, t0, a),        // no end: latency unknown, 11 s
		HTTPEvent(app, s1, t0+12*sec, "get", "https://api.c.io/users/42", 0, 6000, 6010, t0, a),       // failed: not counted
		HTTPEvent(app, s2, t0+3600*sec, "GET", "https://api.c.io/users/77", 302, 100, 400, 0, a),      // 300 ms, no elapsed
		HTTPEvent(app, s2, t0+3601*sec, "get", "https://API.C.IO/users/77?x=1", 200, 500, 1500, 0, a), // 1000 ms
	}
}

// testNetworkHand checks app C's answers, written out by hand.
func testNetworkHand(t *testing.T, s NetworkStore, d *networkData) {
	c := ctx(t)
	paths, err := s.HTTPPaths(c, d.C)
	if err != nil {
		t.Fatal(err)
	}
	// users/me is a name, not an identifier. users/42 failed (no status).
	want := []model.HTTPPath{{Domain: "api.c.io", Path: "/login"}, {Domain: "api.c.io", Path: "/users/*"}, {Domain: "api.c.io", Path: "/users/me"}}
	if !slices.Equal(paths, want) {
		t.Errorf("HTTPPaths = %v, want %v", paths, want)
	}
	day := time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC).UnixNano()
	q := model.NetworkQuery{EventFilter: model.EventFilter{App: d.C, From: day, To: day + 24*int64(time.Hour)}}
	stats, err := s.HTTPStats(c, &q, model.ByPattern, model.Buckets{})
	if err != nil {
		t.Fatal(err)
	}
	wantStats := []model.HTTPStat{
		{Domain: "api.c.io", Pattern: "/login", Count: 1, Classes: [4]uint64{0, 0, 1, 0}, Sessions: 1, LatencyCount: 1, P50: 50, P90: 50, P95: 50, P99: 50},
		// 100, 200, 300, 300, 1000 ms: index ⌊0.5·5⌋ = 2 → 300; ⌊0.9·5⌋ = 4 → 1000.
		{Domain: "api.c.io", Pattern: "/users/*", Count: 5, Classes: [4]uint64{3, 1, 0, 1}, Sessions: 2, LatencyCount: 5, P50: 300, P90: 1000, P95: 1000, P99: 1000},
		{Domain: "api.c.io", Pattern: "/users/me", Count: 1, Classes: [4]uint64{0, 0, 1, 0}, Sessions: 1},
	}
	if df := diff(stats, wantStats); df != "" {
		t.Errorf("HTTPStats by pattern:\n%s", df)
	}
	q.Methods = []string{"get"}
	stats, err = s.HTTPStats(c, &q, model.ByElapsed, model.Buckets{})
	if err != nil {
		t.Fatal(err)
	}
	// GET requests with a known elapsed time: 1 s and 2 s (bucket 0), 7 s (5 s), 11 s (10 s).
	wantStats = []model.HTTPStat{
		{Elapsed: 0, Count: 2, Classes: [4]uint64{2, 0, 0, 0}, Sessions: 1, LatencyCount: 2, P50: 300, P90: 300, P95: 300, P99: 300},
		{Elapsed: 5000, Count: 1, Classes: [4]uint64{0, 0, 1, 0}, Sessions: 1, LatencyCount: 1, P50: 50, P90: 50, P95: 50, P99: 50},
		{Elapsed: 10000, Count: 1, Classes: [4]uint64{0, 0, 1, 0}, Sessions: 1},
	}
	if df := diff(stats, wantStats); df != "" {
		t.Errorf("HTTPStats of GETs by elapsed time:\n%s", df)
	}
}
