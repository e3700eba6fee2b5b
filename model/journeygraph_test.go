package model

import (
	"encoding/json"
	"reflect"
	"testing"
)

// sessionsGraph feeds a graph as session actors do: each session's screen sequence, repeats
// skipped, each transition counted once per session.
func sessionsGraph(sessions [][]string) *JourneyGraph {
	g := NewJourneyGraph()
	for _, screens := range sessions {
		seen := map[[2]string]bool{}
		for i := 1; i < len(screens); i++ {
			e := [2]string{screens[i-1], screens[i]}
			if e[0] != e[1] && !seen[e] {
				seen[e] = true
				g.AddTransition(e[0], e[1])
			}
		}
	}
	return g
}

func TestJourneyGraph(t *testing.T) {
	g := sessionsGraph([][]string{
		{"Home", "Home", "List", "Detail", "List", "Detail"}, // Home→List, List→Detail, Detail→List (once each)
		{"Home", "List", "Home"},                             // Home→List, List→Home
		{"Home", "Settings"},                                 // Home→Settings
		{"Login"},                                            // no move
	})
	g.AddIssue("Detail", JourneyCrash, "c1", "java.lang.NullPointerException@Detail.kt")
	g.AddIssue("Detail", JourneyCrash, "c1", "")                  // an empty title keeps the old one
	g.AddIssue("Detail", JourneyCrash, "c0", "IllegalState@A.kt") // fewer events: listed after c1
	g.AddIssue("List", JourneyANR, "a1", "AnrError@MessageQueue.java")
	g.AddIssue("Crashy", JourneyCrash, "c2", "E@F.kt") // a screen no link reaches
	g.AddIssue("", JourneyANR, "a2", "X")              // before any screen: only in the total
	if g.AddIssue("Home", "bug", "b", "x") {
		t.Error("unknown kind accepted")
	}

	want := `{"links":[{"source":"Home","target":"List","value":2},` +
		`{"source":"Detail","target":"List","value":1},{"source":"Home","target":"Settings","value":1},` +
		`{"source":"List","target":"Detail","value":1},{"source":"List","target":"Home","value":1}],` +
		`"nodes":[{"id":"Crashy","issues":{"anrs":[],"crashes":[{"id":"c2","title":"E@F.kt","count":1}]}},` +
		`{"id":"Detail","issues":{"anrs":[],"crashes":[{"id":"c1","title":"java.lang.NullPointerException@Detail.kt","count":2},{"id":"c0","title":"IllegalState@A.kt","count":1}]}},` +
		`{"id":"Home","issues":{"anrs":[],"crashes":[]}},` +
		`{"id":"List","issues":{"anrs":[{"id":"a1","title":"AnrError@MessageQueue.java","count":1}],"crashes":[]}},` +
		`{"id":"Settings","issues":{"anrs":[],"crashes":[]}}],"totalIssues":6}`
	if b, _ := json.Marshal(g.Graph(true)); string(b) != want {
		t.Errorf("bigraph\n got %s\nwant %s", b, want)
	}

	// One direction per pair: Home→List (2) beats List→Home (1); Detail↔List tie: the source
	// that sorts first, Detail.
	uni := g.Graph(false)
	wantLinks := []JourneyLink{{"Home", "List", 2}, {"Detail", "List", 1}, {"Home", "Settings", 1}}
	if !reflect.DeepEqual(uni.Links, wantLinks) {
		t.Errorf("unidirectional links %+v", uni.Links)
	}
	if len(uni.Nodes) != 5 {
		t.Errorf("nodes %+v", uni.Nodes)
	}

	crashOnly, _ := json.Marshal(g.Graph(false).Only(JourneyCrash))
	wantCrash := `{"links":[{"source":"Home","target":"List","value":2},{"source":"Detail","target":"List","value":1},{"source":"Home","target":"Settings","value":1}],` +
		`"nodes":[{"id":"Crashy","issues":{"crashes":[{"id":"c2","title":"E@F.kt","count":1}]}},` +
		`{"id":"Detail","issues":{"crashes":[{"id":"c1","title":"java.lang.NullPointerException@Detail.kt","count":2},{"id":"c0","title":"IllegalState@A.kt","count":1}]}},` +
		`{"id":"Home","issues":{"crashes":[]}},{"id":"List","issues":{"crashes":[]}},{"id":"Settings","issues":{"crashes":[]}}],"totalIssues":4}`
	if string(crashOnly) != wantCrash {
		t.Errorf("crashes only\n got %s\nwant %s", crashOnly, wantCrash)
	}
	anrOnly := g.Graph(true).Only(JourneyANR)
	if anrOnly.TotalIssues != 2 {
		t.Errorf("ANR total %d", anrOnly.TotalIssues)
	}
	if b, _ := json.Marshal(anrOnly.Nodes[3].Issues); string(b) != `{"anrs":[{"id":"a1","title":"AnrError@MessageQueue.java","count":1}]}` {
		t.Errorf("ANR node %s", b)
	}
	// Only does not change the graph it came from.
	if b, _ := json.Marshal(g.Graph(true)); string(b) != want {
		t.Error("Only changed the source")
	}
}

func TestJourneyGraphEmpty(t *testing.T) {
	var g JourneyGraph // the zero value works
	if b, _ := json.Marshal(g.Graph(false)); string(b) != `{"links":[],"nodes":[],"totalIssues":0}` {
		t.Errorf("empty: %s", b)
	}
	g.AddTransition("A", "A")
	g.AddTransition("", "B")
	g.AddTransitions("A", "B", 0)
	if len(g.Graph(true).Links) != 0 {
		t.Error("repeats, empty screens and zero counts must not link")
	}
	g.AddTransition("A", "B")
	if l := g.Graph(true).Links; len(l) != 1 || l[0].Value != 1 {
		t.Errorf("links %+v", l)
	}
}

// TestJourneyGraphMerge: graphs of disjoint sets of sessions merge into the graph of all of
// them, and a snapshot restores an equal graph.
func TestJourneyGraphMerge(t *testing.T) {
	all := [][]string{{"A", "B", "C"}, {"A", "C"}, {"B", "A"}, {"C", "B", "A", "B"}}
	whole := sessionsGraph(all)
	whole.AddIssue("B", JourneyCrash, "x", "old")
	whole.AddIssue("B", JourneyCrash, "x", "t1")
	whole.AddIssue("C", JourneyANR, "y", "t2")
	whole.AddIssue("", JourneyCrash, "x", "")

	left, right := sessionsGraph(all[:2]), sessionsGraph(all[2:])
	left.AddIssue("B", JourneyCrash, "x", "old")
	right.AddIssue("B", JourneyCrash, "x", "t1") // merged later: its title wins
	right.AddIssue("C", JourneyANR, "y", "t2")
	right.AddIssue("", JourneyCrash, "x", "")
	merged := NewJourneyGraph()
	merged.Merge(left)
	merged.Merge(right)

	for _, bi := range []bool{true, false} {
		w, m := whole.Graph(bi), merged.Graph(bi)
		if !reflect.DeepEqual(w, m) {
			t.Errorf("bigraph=%v\nwhole  %+v\nmerged %+v", bi, w, m)
		}
	}

	snap, err := json.Marshal(whole)
	if err != nil {
		t.Fatal(err)
	}
	var back JourneyGraph
	if err := json.Unmarshal(snap, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Graph(true), whole.Graph(true)) || back.crashes != whole.crashes || back.anrs != whole.anrs {
		t.Errorf("snapshot round trip: %s", snap)
	}
	again, _ := json.Marshal(&back)
	if string(again) != string(snap) {
		t.Errorf("snapshot not deterministic:\n%s\n%s", snap, again)
	}
}

func BenchmarkJourneyGraph(b *testing.B) {
	g := NewJourneyGraph()
	screens := make([]string, 200)
	for i := range screens {
		screens[i] = "com.example.Screen" + string(rune('A'+i%26)) + string(rune('a'+i/26))
	}
	for i := 0; i < 20000; i++ {
		g.AddTransition(screens[i%200], screens[(i*7+3)%200])
		if i%10 == 0 {
			g.AddIssue(screens[i%200], JourneyCrash, "group"+string(rune('a'+i%20)), "T@F")
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = g.Graph(i%2 == 0)
	}
}
