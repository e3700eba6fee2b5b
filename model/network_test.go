package model

import (
	"testing"
	"time"
)

func TestHTTPFactsOf(t *testing.T) {
	start := time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	for _, tc := range []struct {
		name, payload string
		sessionStart  int64
		want          HTTPFacts
	}{
		{"complete", `{"url":"https://API.Example.com:8443/v1/users/1234/orders?x=1#f","method":"GET","status_code":200,"start_time":1000,"end_time":1250}`,
			start - 90*int64(time.Second), HTTPFacts{Domain: "api.example.com:8443", Path: "/v1/users/*/orders", Method: "get", Status: 200, LatencyMs: 250, ElapsedMs: 90_000}},
		{"failed, no end", `{"url":"https://a.io/","method":"post","status_code":0,"start_time":5}`, 0,
			HTTPFacts{Domain: "a.io", Path: "/", Method: "post", LatencyMs: -1, ElapsedMs: -1}},
		{"no host", `{"url":"msr","method":"get","status_code":0,"start_time":1,"end_time":2}`, 0,
			HTTPFacts{Path: "/msr", Method: "get", LatencyMs: 1, ElapsedMs: -1}},
		{"end before start", `{"url":"https://a.io/x","method":"get","status_code":204,"start_time":9,"end_time":3}`, 0,
			HTTPFacts{Domain: "a.io", Path: "/x", Method: "get", Status: 204, LatencyMs: -1, ElapsedMs: -1}},
		{"status out of range", `{"url":"https://a.io/x","method":"get","status_code":700}`, 0,
			HTTPFacts{Domain: "a.io", Path: "/x", Method: "get", LatencyMs: -1, ElapsedMs: -1}},
		{"event before the session's start", `{"url":"https://a.io/x","status_code":500}`, start + 1,
			HTTPFacts{Domain: "a.io", Path: "/x", Status: 500, LatencyMs: -1, ElapsedMs: -1}},
		{"not an object", `[1,2]`, 0, HTTPFacts{Path: "/", LatencyMs: -1, ElapsedMs: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := Event{Type: "http", Timestamp: start, Payload: []byte(tc.payload)}
			e.Attribute.SessionStartTime = tc.sessionStart
			if got := DeriveFacts(&e).HTTP; got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestPathQuery(t *testing.T) {
	for _, tc := range []struct {
		query, pattern string
		want           bool
	}{
		{"/v1/users/*", "/v1/users/*", true},
		{"/v1/users/*", "/v1/users/me", true},
		{"/v1/users/*", "/v1/users/*/orders", false},
		{"/v1/users/me", "/v1/users/*", false},
		{"/v1/**", "/v1", true},
		{"/v1/**", "/v1/users/*/orders", true},
		{"/v1/**", "/v2/users", false},
		{"/**", "/anything/at/all", true},
		{"v1/users/*/", "/v1/users/42", true}, // slashes at the ends do not matter
		{"/", "/", true},
		{"/", "/x", false},
	} {
		if got := ParsePathQuery(tc.query).Match(tc.pattern); got != tc.want {
			t.Errorf("ParsePathQuery(%q).Match(%q) = %v, want %v", tc.query, tc.pattern, got, tc.want)
		}
	}
}

// EndpointsOf maps stored paths through the trie: once a position collapses, every path under
// it maps to "*", the ones added before the collapse included.
func TestEndpointsOf(t *testing.T) {
	pp := &PathPatterns{}
	var paths []HTTPPath
	for _, s := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		paths = append(paths, HTTPPath{Domain: "d.io", Path: "/p/" + s})
	}
	paths = append(paths, HTTPPath{Domain: "d.io", Path: "/login"}, HTTPPath{Domain: "e.io", Path: "/p/a"})
	for _, p := range paths {
		pp.Add(p.Domain, PathSegments(p.Path))
	}
	m := EndpointsOf(pp, paths, nil)
	for _, tc := range []struct{ domain, path, want string }{
		{"d.io", "/p/a", "/p/*"}, {"d.io", "/p/j", "/p/*"}, {"d.io", "/login", "/login"}, {"e.io", "/p/a", "/p/a"},
	} {
		if got, ok := m.Pattern(tc.domain, tc.path); !ok || got != tc.want {
			t.Errorf("Pattern(%s, %s) = %q, %v; want %q", tc.domain, tc.path, got, ok, tc.want)
		}
	}
	if _, ok := m.Pattern("d.io", "/nope"); ok {
		t.Error("an unknown path is mapped")
	}
	only := EndpointsOf(pp, paths, func(d, p string) bool { return d == "d.io" && p == "/p/*" })
	if only.Len() != 10 {
		t.Errorf("paths of d.io /p/*: %d, want 10", only.Len())
	}
}
