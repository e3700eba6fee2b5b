package model

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// jsonStrings need every kind of escape encoding/json writes.
var jsonStrings = []string{
	"", "Home", `say "hi"`, `back\slash`, `\"`, "/", "a/b",
	"\x00\x01\x07\b\t\n\v\f\r\x0e\x1b\x1f\x20\x7f",
	"<script>alert('x')</script>", "a&b", "<>&",
	"\u2028", "\u2029", "x\u2028y\u2029z", "\u2027\u202a",
	"\xff", "a\xffb", "\xc0\x80", "\xed\xa0\x80", "\xe2\x80", "\xf4\x90\x80\x80", "caf\xe9",
	"Ünïcødé ✓ 日本語 🚀", "\ufffd", "\U0010ffff",
	"java.lang.IllegalStateException@MainActivity.kt", "com.example.<init>@A$1.kt",
	strings.Repeat("é\"<", 50),
}

func TestAppendJSONString(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendJSONString([]byte("prefix"), s); string(got) != "prefix"+string(want) {
			t.Errorf("%q: got %s, want %s", s, got[len("prefix"):], want)
		}
	}
	for _, s := range jsonStrings {
		check(s)
	}
	for c := range 256 { // every byte alone and between others
		check(string([]byte{byte(c)}))
		check("ab" + string([]byte{byte(c)}) + "cd")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"a", "<", "\"", "\\", "\n", "\x01", "\u2028", "é", "\xff", "\xe2\x80", "🚀"}
	for range 2000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			if rng.IntN(4) == 0 {
				sb.WriteByte(byte(rng.IntN(256)))
			} else {
				sb.WriteString(pieces[rng.IntN(len(pieces))])
			}
		}
		check(sb.String())
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
		if !utf8.Valid(AppendJSONString(nil, s)) {
			t.Errorf("%q: invalid UTF-8 out", s)
		}
	})
}

// journeyCase is the counts of a journey as a live reply holds them.
type journeyCase struct {
	name   string
	links  []JourneyLink
	issues []journeyIssueCount
}

type journeyIssueCount struct {
	Screen, Kind, GroupID, Title string
	Count                        uint64
}

// counts is what JourneyCounts makes of the case.
func (c journeyCase) counts(bigraph bool) JourneyJSON {
	n := NewJourneyCounts(len(c.links), len(c.issues))
	if len(c.links)%2 == 1 {
		n = &JourneyCounts{} // the zero one works too
	}
	return c.fill(n).Graph(bigraph)
}

// fill adds the case's links and issues to n.
func (c journeyCase) fill(n *JourneyCounts) *JourneyCounts {
	for _, l := range c.links {
		n.AddLink(l.Source, l.Target, l.Value)
	}
	for _, is := range c.issues {
		n.AddIssue(is.Screen, is.Kind, is.GroupID, is.Title, is.Count)
	}
	return n
}

// TestJourneyCountsReused: a JourneyCounts used again after Reset for a journey of the same
// size allocates nothing (what the live answer's pool is for).
func TestJourneyCountsReused(t *testing.T) {
	cases := journeyCases()
	c := cases[len(cases)-1]
	n := &JourneyCounts{}
	c.fill(n).Graph(true)
	buf := make([]byte, 0, 64<<10)
	if a := testing.AllocsPerRun(20, func() {
		n.Reset()
		buf = c.fill(n).Graph(true).AppendJSON(buf[:0])
	}); a != 0 {
		t.Errorf("%v allocations per journey after Reset, want 0", a)
	}
}

// graphOf is the reference: the counts added to a JourneyGraph in order.
func (c journeyCase) graphOf() *JourneyGraph {
	g := NewJourneyGraph()
	for _, l := range c.links {
		g.AddTransitions(l.Source, l.Target, l.Value)
	}
	for _, is := range c.issues {
		g.AddIssues(is.Screen, is.Kind, is.GroupID, is.Title, is.Count)
	}
	return g
}

func journeyCases() []journeyCase {
	cases := []journeyCase{
		{name: "empty"},
		{name: "one link", links: []JourneyLink{{"Home", "List", 3}}},
		{name: "one node, issues only", issues: []journeyIssueCount{{"Home", JourneyCrash, "c1", "E@F.kt", 2}}},
		{name: "ignored", links: []JourneyLink{{"Home", "Home", 5}, {"", "List", 1}, {"List", "", 1}, {"A", "B", 0}},
			issues: []journeyIssueCount{{"", JourneyANR, "a", "X", 4}, {"Home", "bug", "b", "x", 9}, {"Gone", JourneyCrash, "c", "T", 0},
				{"Home", "", "c", "T", 1}}},
		{name: "ties", links: []JourneyLink{{"B", "A", 2}, {"A", "B", 2}, {"C", "A", 2}, {"A", "C", 2}, {"B", "C", 2}, {"C", "B", 1},
			{"D", "A", 2}, {"A", "D", 3}},
			issues: []journeyIssueCount{{"A", JourneyCrash, "c2", "T2", 3}, {"A", JourneyCrash, "c1", "T1", 3}, {"A", JourneyCrash, "c0", "T0", 1},
				{"A", JourneyANR, "a2", "U2", 1}, {"A", JourneyANR, "a1", "U1", 1}, {"A", JourneyANR, "a0", "U0", 7}}},
		{name: "repeats", links: []JourneyLink{{"A", "B", 1}, {"B", "A", 2}, {"A", "B", 2}, {"A", "B", math.MaxUint64}},
			issues: []journeyIssueCount{{"A", JourneyCrash, "c", "first", 1}, {"A", JourneyCrash, "c", "", 1}, {"A", JourneyANR, "c", "anr", 1},
				{"A", JourneyCrash, "c", "second", 1}, {"A", JourneyCrash, "c", "", 1}, {"B", JourneyCrash, "c", "", 2}}},
		{name: "escapes", links: []JourneyLink{{"<Home>", `"List"`, 1}, {`"List"`, "a\\b\n", 2}, {"caf\xe9", "\u2028", 1}, {"\x00", "&", 1}},
			issues: []journeyIssueCount{{"<Home>", JourneyCrash, "c\"1", "java.lang.Error@<init>\t\"x\"\xff", 1}, {"\u2029", JourneyANR, "a", "&amp;", 1}}},
		{name: "big numbers", links: []JourneyLink{{"A", "B", math.MaxUint64}, {"B", "A", math.MaxUint64 - 1}},
			issues: []journeyIssueCount{{"A", JourneyCrash, "c", "t", math.MaxUint64}, {"A", JourneyANR, "a", "t", 2}}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	names := slices.Clone(jsonStrings[:12])
	for i := range 30 {
		names = append(names, fmt.Sprintf("com.example.ui.Screen%02d", i))
	}
	for i := range 40 {
		c := journeyCase{name: fmt.Sprintf("random %d", i)}
		screens := names[:2+rng.IntN(len(names)-2)]
		for range rng.IntN(200) {
			c.links = append(c.links, JourneyLink{screens[rng.IntN(len(screens))], screens[rng.IntN(len(screens))], uint64(rng.IntN(5))})
		}
		kinds := []string{JourneyCrash, JourneyANR, JourneyCrash, ""}
		for range rng.IntN(60) {
			c.issues = append(c.issues, journeyIssueCount{Screen: screens[rng.IntN(len(screens))], Kind: kinds[rng.IntN(len(kinds))],
				GroupID: fmt.Sprintf("%032x", rng.IntN(6)), Title: names[rng.IntN(len(names))], Count: uint64(rng.IntN(4))})
		}
		cases = append(cases, c)
	}
	return cases
}

// TestJourneyCounts checks JourneyCounts (directly and through JourneyGraph.Graph) and
// AppendJSON against referenceGraph and encoding/json, byte for byte, both ways and with each
// Only.
func TestJourneyCounts(t *testing.T) {
	reused := &JourneyCounts{} // Reset before each case: what a pool of them does
	for _, c := range journeyCases() {
		for _, bigraph := range []bool{true, false} {
			want := referenceGraph(c.graphOf(), bigraph)
			got := c.counts(bigraph)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, bigraph %v:\n got %+v\nwant %+v", c.name, bigraph, got, want)
			}
			reused.Reset()
			if r := c.fill(reused).Graph(bigraph); !reflect.DeepEqual(r, want) {
				t.Errorf("%s, bigraph %v, after Reset:\n got %+v\nwant %+v", c.name, bigraph, r, want)
			}
			if g := c.graphOf().Graph(bigraph); !reflect.DeepEqual(g, want) {
				t.Errorf("%s, bigraph %v: JourneyGraph.Graph\n got %+v\nwant %+v", c.name, bigraph, g, want)
			}
			for _, only := range []string{"", JourneyCrash, JourneyANR} {
				w, g := want, got
				if only != "" {
					w, g = want.Only(only), got.Only(only)
				}
				wantJSON, err := json.Marshal(w)
				if err != nil {
					t.Fatal(err)
				}
				if b := g.AppendJSON(nil); string(b) != string(wantJSON) {
					t.Errorf("%s, bigraph %v, only %q:\n got %s\nwant %s", c.name, bigraph, only, b, wantJSON)
				}
			}
		}
	}
	// The zero JourneyJSON (nil slices) and nil issue lists encode as encoding/json has them.
	for _, j := range []JourneyJSON{{}, {Nodes: []JourneyNode{{ID: "A"}, {ID: "B", Issues: JourneyIssues{Only: JourneyANR}}}}} {
		want, _ := json.Marshal(j)
		if got := j.AppendJSON(nil); string(got) != string(want) {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

// referenceGraph is JourneyGraph.Graph as it was written before it went through JourneyCounts:
// maps and sorts of whole links and nodes, the definition the tests hold JourneyCounts to.
func referenceGraph(g *JourneyGraph, bigraph bool) JourneyJSON {
	j := JourneyJSON{Links: make([]JourneyLink, 0, len(g.links)), crashes: g.crashes, anrs: g.anrs}
	j.TotalIssues = g.crashes + g.anrs
	for e, n := range g.links {
		if !bigraph {
			if back, ok := g.links[journeyEdge{e.to, e.from}]; ok && (back > n || back == n && e.to < e.from) {
				continue
			}
		}
		j.Links = append(j.Links, JourneyLink{Source: e.from, Target: e.to, Value: n})
	}
	slices.SortFunc(j.Links, func(x, y JourneyLink) int {
		if x.Value != y.Value {
			return cmp.Compare(y.Value, x.Value)
		}
		if c := strings.Compare(x.Source, y.Source); c != 0 {
			return c
		}
		return strings.Compare(x.Target, y.Target)
	})
	screens := make(map[string]bool, len(g.issues)+len(j.Links))
	for _, l := range j.Links {
		screens[l.Source], screens[l.Target] = true, true
	}
	for s := range g.issues {
		screens[s] = true
	}
	j.Nodes = make([]JourneyNode, 0, len(screens))
	for s := range screens {
		n := JourneyNode{ID: s, Issues: JourneyIssues{Crashes: []JourneyIssue{}, ANRs: []JourneyIssue{}}}
		if is := g.issues[s]; is != nil {
			n.Issues.Crashes = referenceIssues(is.crashes)
			n.Issues.ANRs = referenceIssues(is.anrs)
		}
		j.Nodes = append(j.Nodes, n)
	}
	slices.SortFunc(j.Nodes, func(a, b JourneyNode) int { return strings.Compare(a.ID, b.ID) })
	return j
}

func referenceIssues(m map[string]*journeyIssue) []JourneyIssue {
	out := make([]JourneyIssue, 0, len(m))
	for id, is := range m {
		out = append(out, JourneyIssue{ID: id, Title: is.title, Count: is.count})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Count != out[b].Count {
			return out[a].Count > out[b].Count
		}
		return out[a].ID < out[b].ID
	})
	return out
}
