package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestNormalizeSegment(t *testing.T) {
	cases := []struct {
		in, want string
		why      string
	}{
		// UUIDs, either case, even without two consecutive digits.
		{"3fa85f64-5717-4562-b3fc-2c963f66afa6", "*", "uuid lower"},
		{"3FA85F64-5717-4562-B3FC-2C963F66AFA6", "*", "uuid upper"},
		{"a1b2c3d4-e5f6-a7b8-c9d0-e1f2a3b4c5d6", "*", "uuid without two digits in a row"},
		{"a1b2c3d4-e5f6-a7b8-c9d0-e1f2a3b4c5dZ", "a1b2c3d4-e5f6-a7b8-c9d0-e1f2a3b4c5dZ", "not hex: stays"},
		{"a1b2c3d4e5f6-a7b8-c9d0-e1f2a3b4c5d6", "a1b2c3d4e5f6-a7b8-c9d0-e1f2a3b4c5d6", "hyphens misplaced: stays"},
		// Hashes of the usual lengths, written so that only the hash rule catches them.
		{strings.Repeat("a1", 16), "*", "md5 (32)"},
		{strings.Repeat("b2", 20), "*", "sha-1 (40)"},
		{strings.Repeat("C3", 32), "*", "sha-256 (64), upper"},
		{strings.Repeat("d4", 12), "*", "object id (24)"},
		{"deadbeefcafebabe", "*", "16 hex letters"},
		{"deadbeefcafebab", "deadbeefcafebab", "15 hex letters: too short for a hash"},
		{"facade", "facade", "a word of hex letters"},
		// ISO dates and times.
		{"2024-05-01", "*", "date"},
		{"2024-05-01T10:05:00Z", "*", "date-time"},
		{"2024-05-01T10:05:00.123+02:00", "*", "date-time with fraction and zone"},
		{"10:05", "*", "time"},
		{"10:05:07", "*", "time with seconds"},
		// 0x hex.
		{"0x1f", "*", "0x"},
		{"0XaBc", "*", "0X upper"},
		{"0x", "0x", "0x alone"},
		{"0xyz", "0xyz", "0x and no hex"},
		// Two digits in a row, anywhere.
		{"v10", "*", "two digits after a letter"},
		{"id42x", "*", "two digits inside"},
		{"2024", "*", "a year"},
		{"page-12", "*", "two digits after a hyphen"},
		// Numbers, even of one digit.
		{"1", "*", "one digit"},
		{"0", "*", "zero"},
		{"8812", "*", "a number"},
		// What stays: names with single digits between letters, plain names.
		{"v1", "v1", "api version"},
		{"v2", "v2", "api version"},
		{"2fa", "2fa", "one leading digit"},
		{"oauth2", "oauth2", "one trailing digit"},
		{"s3", "s3", "one digit"},
		{"a1b2", "a1b2", "digits never adjacent"},
		{"api", "api", "name"},
		{"users", "users", "name"},
		{"e-mail", "e-mail", "hyphenated name"},
		{"caf%C3%A9", "caf%C3%A9", "escaped unicode, no two digits in a row"},
		{"%E2%9C%93", "*", "escapes count as written: %93 holds two digits"},
		{"*", "*", "already a star"},
		{"", "", "empty"},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			if got := NormalizeSegment(c.in); got != c.want {
				t.Errorf("NormalizeSegment(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestSplitURL(t *testing.T) {
	cases := []struct {
		in     string
		domain string
		segs   []string
	}{
		{"https://API.Example.com/v1/users/?q=1#top", "api.example.com", []string{"v1", "users"}},
		{"http://example.com:8080//a///b/", "example.com:8080", []string{"a", "b"}},
		{"https://example.com", "example.com", nil},
		{"https://example.com/", "example.com", nil},
		{"https://example.com/a%2Fb/c", "example.com", []string{"a%2Fb", "c"}},
		{"msr", "", []string{"msr"}},
		{"/relative/path?x", "", []string{"relative", "path"}},
		{"%zz/bad?x", "", []string{"%zz", "bad"}}, // does not parse: taken as a path
	}
	for _, c := range cases {
		d, s := SplitURL(c.in)
		if d != c.domain || !slices.Equal(s, c.segs) {
			t.Errorf("SplitURL(%q) = %q %q, want %q %q", c.in, d, s, c.domain, c.segs)
		}
	}
}

// addURL adds a URL and returns the pattern Add gave it.
func addURL(p *PathPatterns, u string) string {
	d, s := SplitURL(u)
	return d + PatternString(p.Add(d, s))
}

func TestPathPatternsCollapse(t *testing.T) {
	var p PathPatterns
	// Nine distinct names under /users: each stays itself.
	for i := range CollapseAt - 1 {
		name := fmt.Sprintf("user%c", 'a'+i)
		if got, want := addURL(&p, "https://x.io/users/"+name+"/orders"), "x.io/users/"+name+"/orders"; got != want {
			t.Fatalf("value %d: %s, want %s", i+1, got, want)
		}
	}
	// Identifiers go to * at once and do not count as distinct values.
	if got := addURL(&p, "https://x.io/users/42/orders"); got != "x.io/users/*/orders" {
		t.Fatalf("numeric id: %s", got)
	}
	if n := len(p.Patterns("x.io")); n != CollapseAt {
		t.Fatalf("before the collapse: %d patterns %q", n, p.Patterns("x.io"))
	}
	// Another domain and another prefix are other positions.
	addURL(&p, "https://y.io/users/userz/orders")
	addURL(&p, "https://x.io/teams/userz/orders")
	// The tenth distinct value collapses the position, and the request that caused it gets *.
	if got := addURL(&p, "https://x.io/users/userj/orders"); got != "x.io/users/*/orders" {
		t.Fatalf("tenth value: %s", got)
	}
	// Later requests map onto the collapsed position, known values and new ones alike, and
	// deeper positions keep their own values.
	for u, want := range map[string]string{
		"https://x.io/users/usera/orders":   "x.io/users/*/orders",
		"https://x.io/users/newbie/orders":  "x.io/users/*/orders",
		"https://x.io/users/newbie/profile": "x.io/users/*/profile",
		"https://x.io/users":                "x.io/users",
	} {
		if got := addURL(&p, u); got != want {
			t.Errorf("%s: %s, want %s", u, got, want)
		}
	}
	want := map[string][]string{
		"x.io": {"/teams/userz/orders", "/users", "/users/*/orders", "/users/*/profile"},
		"y.io": {"/users/userz/orders"},
	}
	for d, w := range want {
		if got := p.Patterns(d); !slices.Equal(got, w) {
			t.Errorf("Patterns(%s) = %q, want %q", d, got, w)
		}
	}
	if got := p.Domains(); !slices.Equal(got, []string{"x.io", "y.io"}) {
		t.Errorf("Domains = %q", got)
	}
	// Pattern does not change the trie.
	d, s := SplitURL("https://x.io/teams/other/orders")
	if got := PatternString(p.Pattern(d, s)); got != "/teams/other/orders" {
		t.Errorf("Pattern of an unseen value under an open position: %s", got)
	}
	d, s = SplitURL("https://x.io/users/somebody/settings/2")
	if got := PatternString(p.Pattern(d, s)); got != "/users/*/settings/*" {
		t.Errorf("Pattern under a collapsed position: %s", got)
	}
	if got := p.Patterns("x.io"); !slices.Equal(got, want["x.io"]) {
		t.Errorf("Pattern changed the trie: %q", got)
	}
}

// TestPathPatternsCascade: a collapse merges subtrees, and the merged position collapses in
// turn when the union of its values reaches CollapseAt, though no subtree alone did.
func TestPathPatternsCascade(t *testing.T) {
	var p PathPatterns
	for i := range CollapseAt - 1 {
		for j := range 2 {
			addURL(&p, fmt.Sprintf("https://x.io/%c/%c%c", 'a'+i, 'a'+i, 'k'+j))
		}
	}
	if n := len(p.Patterns("x.io")); n != 2*(CollapseAt-1) {
		t.Fatalf("before: %d patterns", n)
	}
	addURL(&p, "https://x.io/j/jk")
	if got := p.Patterns("x.io"); !slices.Equal(got, []string{"/*/*"}) {
		t.Fatalf("after: %q", got)
	}
}

// corpusOfPaths is a set of URLs where collapses happen at several depths and cascade.
func corpusOfPaths() []string {
	var us []string
	for i := range 14 {
		us = append(us, fmt.Sprintf("https://a.io/users/u%c/orders", 'a'+i))
		us = append(us, fmt.Sprintf("https://a.io/users/u%c/items/i%c", 'a'+i%3, 'a'+i))
		us = append(us, fmt.Sprintf("https://a.io/shop/%c%c/%c", 'a'+i%11, 'a'+i%4, 'a'+i%12))
	}
	for i := range 6 {
		us = append(us, fmt.Sprintf("https://b.io/v1/c%c", 'a'+i), "https://b.io/v1/"+uuid.NewString())
	}
	return append(us, "https://a.io/", "https://a.io/users", "msr")
}

func encodePatterns(t *testing.T, p *PathPatterns) []byte {
	t.Helper()
	b, err := p.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPathPatternsOrder: the final trie does not depend on the order of the requests nor on
// how they were split between tries that were merged; the encoding round-trips.
func TestPathPatternsOrder(t *testing.T) {
	urls := corpusOfPaths()
	var ref PathPatterns
	for _, u := range urls {
		addURL(&ref, u)
	}
	want := encodePatterns(t, &ref)
	wantA := []string{"/", "/shop/*/*", "/users", "/users/*/items/*", "/users/*/orders"}
	if got := ref.Patterns("a.io"); !slices.Equal(got, wantA) {
		t.Fatalf("a.io patterns %q, want %q", got, wantA)
	}
	if got := ref.Patterns("b.io"); len(got) != 7 || got[0] != "/v1/*" {
		t.Fatalf("b.io patterns %q", got)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		r.Shuffle(len(urls), func(i, j int) { urls[i], urls[j] = urls[j], urls[i] })
		var whole PathPatterns
		parts := make([]PathPatterns, 1+round%4)
		for i, u := range urls {
			addURL(&whole, u)
			addURL(&parts[i%len(parts)], u)
		}
		if got := encodePatterns(t, &whole); !bytes.Equal(got, want) {
			t.Fatalf("round %d: order changed the trie: %q", round, whole.Patterns("a.io"))
		}
		var merged PathPatterns
		for i := range parts {
			merged.Merge(&parts[len(parts)-1-i])
		}
		if got := encodePatterns(t, &merged); !bytes.Equal(got, want) {
			t.Fatalf("round %d: merging %d parts: %q", round, len(parts), merged.Patterns("a.io"))
		}
	}
	back, err := UnmarshalPathPatterns(want)
	if err != nil {
		t.Fatal(err)
	}
	if got := encodePatterns(t, back); !bytes.Equal(got, want) {
		t.Fatal("round trip changed the encoding")
	}
	// A restored trie keeps its collapses: a new value at a collapsed position maps to *.
	if got := addURL(back, "https://a.io/users/brand-new/orders"); got != "a.io/users/*/orders" {
		t.Fatalf("after restore: %s", got)
	}
	// Merge copies: changing the source later leaves the destination alone.
	var dst, src PathPatterns
	addURL(&src, "https://c.io/x")
	dst.Merge(&src)
	addURL(&src, "https://c.io/y")
	if got := dst.Patterns("c.io"); !slices.Equal(got, []string{"/x"}) {
		t.Fatalf("merge shares nodes: %q", got)
	}
	for _, bad := range [][]byte{nil, {2}, want[:len(want)-1], append(slices.Clone(want), 0)} {
		if _, err := UnmarshalPathPatterns(bad); err == nil {
			t.Errorf("UnmarshalPathPatterns(%x) accepted", bad)
		}
	}
}

// TestPathPatternsSDKBodies runs the URL of every http event of the recorded SDK bodies.
func TestPathPatternsSDKBodies(t *testing.T) {
	want := map[string]string{
		"https://intake-analytics.wikimedia.org/v1/events": "intake-analytics.wikimedia.org/v1/events",
		"https://fakestoreapi.com/users":                   "fakestoreapi.com/users",
		"https://fakestoreapi.com/products/1":              "fakestoreapi.com/products/*",
		"https://fakestoreapi.com/login":                   "fakestoreapi.com/login",
		"https://api.example.com/test":                     "api.example.com/test",
		"msr":                                              "/msr", // an RN SDK's placeholder: no domain
	}
	seen := map[string]int{}
	var p PathPatterns
	for name, body := range fixtureBatches(t) {
		b, err := DecodeBatch(body, uuid.New(), false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, e := range b.Events {
			if e.Type != "http" {
				continue
			}
			var h struct {
				URL string `json:"url"`
			}
			if err := json.Unmarshal(e.Payload, &h); err != nil {
				t.Fatalf("%s: http member: %v", name, err)
			}
			w, ok := want[h.URL]
			if !ok {
				t.Errorf("%s: URL %q has no expectation", name, h.URL)
				continue
			}
			seen[h.URL]++
			if got := addURL(&p, h.URL); got != w {
				t.Errorf("%s: %q → %q, want %q", name, h.URL, got, w)
			}
		}
	}
	for u := range want {
		if seen[u] == 0 {
			t.Errorf("no http event has %q", u)
		}
	}
	total := 0
	for _, n := range seen {
		total += n
	}
	if total != 14 {
		t.Errorf("%d http events, want the 14 of the recorded bodies", total)
	}
}
