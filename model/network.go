package model

import (
	"slices"
	"strings"
)

// Network requests: what the network pages read of http events. Each http event's request is
// reduced once at ingest to HTTPFacts (stored with the event); queries select requests with a
// NetworkQuery and aggregate them into HTTPStats, grouped by what the page plots. A request's
// endpoint is the pattern the app's PathPatterns maps its normalised path to; the caller turns
// the trie into an EndpointMap (stored path → pattern), so stores never see the trie.

// HTTPFacts are an http event's request as the network pages use it.
type HTTPFacts struct {
	Domain string // SplitURL's domain; "" for a URL without a host, which the pages do not show
	Path   string // PatternString of the normalised segments: identifiers are already "*"
	Method string // lowercase ("get"); the SDKs send lowercase, some clients uppercase
	Status uint16 // status_code; 0 when the request got no response (or the code is not 100–599)
	// LatencyMs is end_time − start_time (the device's monotonic milliseconds); -1 when either is
	// missing or the end is before the start.
	LatencyMs int64
	// ElapsedMs is the time from the session's start (attribute session_start_time) to the
	// event, in milliseconds; -1 when the SDK does not send the session's start or the event is
	// before it.
	ElapsedMs int64
}

// Completed says whether the request got a response: only those are counted by the pages
// (status 0 is a request that failed before a response, with no status class and no latency
// worth plotting).
func (h *HTTPFacts) Completed() bool { return h.Domain != "" && h.Status != 0 }

// StatusClass is 2 for 2xx … 5 for 5xx, and 0 for other codes (1xx, none).
func (h *HTTPFacts) StatusClass() int {
	if c := int(h.Status / 100); c >= 2 && c <= 5 {
		return c
	}
	return 0
}

// httpFactsOf reads the request of an http event's payload.
func httpFactsOf(e *Event) HTTPFacts {
	var url, method rawStr
	var status, start, end uint64
	_ = eachMember(e.Payload, func(key []byte, s *scanner) error {
		var err error
		switch string(key) {
		case "url":
			url, err = readStr(s)
		case "method":
			method, err = readStr(s)
		case "status_code":
			status, err = readUint(s)
		case "start_time":
			start, err = readUint(s)
		case "end_time":
			end, err = readUint(s)
		default:
			err = s.skip()
		}
		return err
	})
	f := HTTPFacts{LatencyMs: -1, ElapsedMs: -1, Method: strings.ToLower(method.String())}
	if status >= 100 && status <= 599 {
		f.Status = uint16(status)
	}
	var segs []string
	f.Domain, segs = SplitURL(url.String())
	f.Path = PatternString(NormalizePath(segs))
	if start > 0 && end >= start && end-start < 1<<62 {
		f.LatencyMs = int64(end - start)
	}
	if st := e.Attribute.SessionStartTime; st > 0 && e.Timestamp >= st {
		f.ElapsedMs = (e.Timestamp - st) / 1e6
	}
	return f
}

// NetworkQuery selects the completed requests (HTTPFacts.Completed) of an app's http events.
// Match is its Go definition, which every store agrees with.
type NetworkQuery struct {
	// EventFilter's fields apply to the event as they do on every other endpoint: the window
	// bounds its time, [From, To); versions, attribute lists, Countries and UD as EventFilter.Match.
	EventFilter
	// OSVersions: the event's (os_name, os_version) is one of them.
	OSVersions []OSVersion
	// Domain: the request's domain, exactly; "" is any.
	Domain string
	// Methods: the request's method is one of them (lowercase); empty is any.
	Methods []string
	// Endpoints, when set, keeps only the requests whose (domain, path) it maps and gives each
	// the pattern it maps to. Nil keeps every request, its pattern being its stored path.
	Endpoints *EndpointMap
}

// Match says whether the event e, whose facts are h, is a request q selects.
func (q *NetworkQuery) Match(e *Event, h *HTTPFacts) bool {
	if e.Type != "http" || e.AppID != q.App || !h.Completed() {
		return false
	}
	if q.Domain != "" && h.Domain != q.Domain {
		return false
	}
	if len(q.Methods) > 0 && !slices.Contains(q.Methods, h.Method) {
		return false
	}
	if q.Endpoints != nil {
		if _, ok := q.Endpoints.Pattern(h.Domain, h.Path); !ok {
			return false
		}
	}
	a := &e.Attribute
	if len(q.OSVersions) > 0 && !slices.Contains(q.OSVersions, OSVersion{Name: a.OSName, Version: a.OSVersion}) {
		return false
	}
	return q.EventFilter.Match(e)
}

// PatternOf is the endpoint pattern of a request q selects.
func (q *NetworkQuery) PatternOf(h *HTTPFacts) string {
	if q.Endpoints != nil {
		p, _ := q.Endpoints.Pattern(h.Domain, h.Path)
		return p
	}
	return h.Path
}

// EndpointMap maps stored request paths, per domain, to the endpoint patterns a page shows.
// Its three lists are parallel: Domains[i] + Paths[i] maps to Patterns[i].
type EndpointMap struct {
	Domains, Paths, Patterns []string
	index                    map[[2]string]string
}

// Add maps (domain, path) to pattern.
func (m *EndpointMap) Add(domain, path, pattern string) {
	m.Domains, m.Paths, m.Patterns = append(m.Domains, domain), append(m.Paths, path), append(m.Patterns, pattern)
	m.index = nil
}

// Len is the number of paths mapped.
func (m *EndpointMap) Len() int { return len(m.Paths) }

// Pattern returns the pattern of (domain, path) and whether it is mapped.
func (m *EndpointMap) Pattern(domain, path string) (string, bool) {
	if m.index == nil {
		m.index = make(map[[2]string]string, len(m.Paths))
		for i := range m.Paths {
			m.index[[2]string{m.Domains[i], m.Paths[i]}] = m.Patterns[i]
		}
	}
	p, ok := m.index[[2]string{domain, path}]
	return p, ok
}

// HTTPPath is a distinct stored (domain, path) of an app's requests.
type HTTPPath struct {
	Domain, Path string
}

// EndpointsOf maps every path of paths through pp (PathPatterns.Pattern) and keeps those whose
// pattern match accepts; match nil accepts all.
func EndpointsOf(pp *PathPatterns, paths []HTTPPath, match func(domain, pattern string) bool) *EndpointMap {
	m := &EndpointMap{}
	for _, p := range paths {
		pat := PatternString(pp.Pattern(p.Domain, PathSegments(p.Path)))
		if match == nil || match(p.Domain, pat) {
			m.Add(p.Domain, p.Path, pat)
		}
	}
	return m
}

// PathSegments splits a stored path ("/a/*/b") into its segments; "/" has none.
func PathSegments(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

// PathQuery is the path parameter of the endpoint pages: a pattern whose "*" segments match any
// one segment, optionally ending in "**", which matches any number of further segments (none
// included). "/v1/users/*" matches the pattern "/v1/users/*" and, as "*" matches any value,
// "/v1/users/me"; "/v1/**" matches every pattern under /v1.
type PathQuery struct {
	segs   []string
	prefix bool
}

// ParsePathQuery reads a path parameter.
func ParsePathQuery(s string) PathQuery {
	segs := PathSegments(s)
	q := PathQuery{segs: segs}
	if n := len(segs); n > 0 && segs[n-1] == "**" {
		q.segs, q.prefix = segs[:n-1], true
	}
	return q
}

// Match says whether an endpoint pattern is one the query selects.
func (q PathQuery) Match(pattern string) bool {
	p := PathSegments(pattern)
	if len(p) < len(q.segs) || (!q.prefix && len(p) != len(q.segs)) {
		return false
	}
	for i, s := range q.segs {
		if s != PatternStar && s != p[i] {
			return false
		}
	}
	return true
}

// HTTPGroup says what HTTPStats are grouped by; the zero value is one group of everything.
type HTTPGroup uint8

// The dimensions of HTTPGroup, combined with |.
const (
	ByDomain  HTTPGroup = 1 << iota // HTTPStat.Domain
	ByPattern                       // HTTPStat.Domain and Pattern
	ByBucket                        // HTTPStat.Bucket, by the query's Buckets
	ByStatus                        // HTTPStat.Status
	ByElapsed                       // HTTPStat.Elapsed; requests of unknown elapsed time are left out
)

// ElapsedStep is the width of the time-since-session-start buckets of the timeline plots.
const ElapsedStep = 5000 // milliseconds

// HTTPStat aggregates the requests of one group.
type HTTPStat struct {
	Domain, Pattern string // with ByDomain or ByPattern
	Bucket          int64  // with ByBucket: Buckets.Start of the event time, Unix ns
	Status          uint16 // with ByStatus
	Elapsed         int64  // with ByElapsed: ⌊ElapsedMs / ElapsedStep⌋ · ElapsedStep, ms
	Count           uint64 // requests
	// Classes counts the requests per status class: [0] 2xx, [1] 3xx, [2] 4xx, [3] 5xx.
	Classes [4]uint64
	// Sessions counts the distinct sessions of the requests.
	Sessions uint64
	// The percentiles of LatencyMs over the requests whose latency is known (LatencyCount of
	// them), by DurationQuantile.
	LatencyCount       uint64
	P50, P90, P95, P99 uint64
}

// HTTPKey is the group of a request under by.
type HTTPKey struct {
	Domain, Pattern string
	Bucket          int64
	Status          uint16
	Elapsed         int64
}

// KeyOf is the group of a request q selects, by is grouped by, bucket its time's bucket (only
// read with ByBucket). ok is false for a request ByElapsed leaves out.
func (q *NetworkQuery) KeyOf(h *HTTPFacts, by HTTPGroup, bucket int64) (k HTTPKey, ok bool) {
	if by&(ByDomain|ByPattern) != 0 {
		k.Domain = h.Domain
	}
	if by&ByPattern != 0 {
		k.Pattern = q.PatternOf(h)
	}
	if by&ByBucket != 0 {
		k.Bucket = bucket
	}
	if by&ByStatus != 0 {
		k.Status = h.Status
	}
	if by&ByElapsed != 0 {
		if h.ElapsedMs < 0 {
			return k, false
		}
		k.Elapsed = h.ElapsedMs / ElapsedStep * ElapsedStep
	}
	return k, true
}

// HTTPAcc accumulates the requests of one group; Stat computes its HTTPStat.
type HTTPAcc struct {
	count     uint64
	classes   [4]uint64
	sessions  map[[16]byte]struct{}
	latencies []uint64
}

// Add counts one request of session session.
func (a *HTTPAcc) Add(h *HTTPFacts, session [16]byte) {
	a.count++
	if c := h.StatusClass(); c != 0 {
		a.classes[c-2]++
	}
	if a.sessions == nil {
		a.sessions = map[[16]byte]struct{}{}
	}
	a.sessions[session] = struct{}{}
	if h.LatencyMs >= 0 {
		a.latencies = append(a.latencies, uint64(h.LatencyMs))
	}
}

// Stat is the group's HTTPStat under key k; it sorts the latencies in place.
func (a *HTTPAcc) Stat(k HTTPKey) HTTPStat {
	slices.Sort(a.latencies)
	l := a.latencies
	return HTTPStat{Domain: k.Domain, Pattern: k.Pattern, Bucket: k.Bucket, Status: k.Status, Elapsed: k.Elapsed,
		Count: a.count, Classes: a.classes, Sessions: uint64(len(a.sessions)), LatencyCount: uint64(len(l)),
		P50: DurationQuantile(l, SpanQuantileLevels[0]), P90: DurationQuantile(l, SpanQuantileLevels[1]),
		P95: DurationQuantile(l, SpanQuantileLevels[2]), P99: DurationQuantile(l, SpanQuantileLevels[3])}
}

// CompareHTTPKeys orders groups: domain, pattern, bucket, status, elapsed, each ascending — the
// order stores return HTTPStats in.
func CompareHTTPKeys(a, b *HTTPKey) int {
	if c := strings.Compare(a.Domain, b.Domain); c != 0 {
		return c
	}
	if c := strings.Compare(a.Pattern, b.Pattern); c != 0 {
		return c
	}
	switch {
	case a.Bucket != b.Bucket:
		return cmpInt(a.Bucket, b.Bucket)
	case a.Status != b.Status:
		return cmpInt(int64(a.Status), int64(b.Status))
	}
	return cmpInt(a.Elapsed, b.Elapsed)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Key is the group key of a stat.
func (s *HTTPStat) Key() HTTPKey {
	return HTTPKey{Domain: s.Domain, Pattern: s.Pattern, Bucket: s.Bucket, Status: s.Status, Elapsed: s.Elapsed}
}
