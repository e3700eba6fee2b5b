package model

import (
	"encoding/json"
)

// Issue kinds of journey nodes.
const (
	JourneyCrash = "crash"
	JourneyANR   = "anr"
)

// JourneyGraph accumulates the journey of docs/architecture.md ("Algorithms") incrementally: screen transitions
// counted in sessions, and the crash and ANR groups whose events happened on each screen.
// Session actors feed it (each deduplicates its own transitions, so that a link counts
// sessions, not moves); store queries feed it counts; Merge combines graphs. It is not safe for
// concurrent use: one actor owns it.
type JourneyGraph struct {
	links  map[journeyEdge]uint64
	issues map[string]*screenIssues // by screen
	// Issue events by kind, including those that happened on no known screen.
	crashes, anrs uint64
}

type journeyEdge struct{ from, to string }

type screenIssues struct {
	crashes, anrs map[string]*journeyIssue // by group id
}

type journeyIssue struct {
	title string
	count uint64
}

// NewJourneyGraph returns an empty graph (the zero JourneyGraph is one too).
func NewJourneyGraph() *JourneyGraph {
	return &JourneyGraph{links: map[journeyEdge]uint64{}, issues: map[string]*screenIssues{}}
}

// AddTransition counts one session that moved from screen from to screen to. A repeat (from ==
// to) or an empty screen is not a move and is ignored.
func (g *JourneyGraph) AddTransition(from, to string) {
	g.AddTransitions(from, to, 1)
}

// AddTransitions counts n sessions that moved from one screen to another, as AddTransition.
func (g *JourneyGraph) AddTransitions(from, to string, n uint64) {
	if from == to || from == "" || to == "" || n == 0 {
		return
	}
	if g.links == nil {
		g.links = map[journeyEdge]uint64{}
	}
	g.links[journeyEdge{from, to}] += n
}

// AddIssue counts one issue event of group groupID (kind JourneyCrash or JourneyANR) that
// happened on screen; screen may be empty when none was shown yet, and the event then counts
// only in totalIssues. A non-empty title replaces the group's earlier one. It returns false,
// counting nothing, for an unknown kind.
func (g *JourneyGraph) AddIssue(screen, kind, groupID, title string) bool {
	return g.AddIssues(screen, kind, groupID, title, 1)
}

// AddIssues counts n issue events, as AddIssue.
func (g *JourneyGraph) AddIssues(screen, kind, groupID, title string, n uint64) bool {
	switch kind {
	case JourneyCrash:
		g.crashes += n
	case JourneyANR:
		g.anrs += n
	default:
		return false
	}
	if screen == "" || n == 0 {
		return true
	}
	if g.issues == nil {
		g.issues = map[string]*screenIssues{}
	}
	s := g.issues[screen]
	if s == nil {
		s = &screenIssues{}
		g.issues[screen] = s
	}
	m := &s.crashes
	if kind == JourneyANR {
		m = &s.anrs
	}
	if *m == nil {
		*m = map[string]*journeyIssue{}
	}
	is := (*m)[groupID]
	if is == nil {
		is = &journeyIssue{}
		(*m)[groupID] = is
	}
	is.count += n
	if title != "" {
		is.title = title
	}
	return true
}

// Merge adds other's counts to g. Titles of other replace g's where other has one.
func (g *JourneyGraph) Merge(other *JourneyGraph) {
	for e, n := range other.links {
		g.AddTransitions(e.from, e.to, n)
	}
	g.crashes += other.crashes
	g.anrs += other.anrs
	for screen, s := range other.issues {
		for id, is := range s.crashes {
			g.addCounted(screen, JourneyCrash, id, is.title, is.count)
		}
		for id, is := range s.anrs {
			g.addCounted(screen, JourneyANR, id, is.title, is.count)
		}
	}
}

// addCounted adds to a node's issue without touching the totals (Merge adds those at once).
func (g *JourneyGraph) addCounted(screen, kind, id, title string, n uint64) {
	c, a := g.crashes, g.anrs
	g.AddIssues(screen, kind, id, title, n)
	g.crashes, g.anrs = c, a
}

// JourneyJSON is the journey graph of the dashboard API.
type JourneyJSON struct {
	Links       []JourneyLink `json:"links"`
	Nodes       []JourneyNode `json:"nodes"`
	TotalIssues uint64        `json:"totalIssues"`
	crashes     uint64
	anrs        uint64
}

// JourneyLink is an edge: Value sessions moved from Source to Target.
type JourneyLink struct {
	Source string `json:"source"`
	Target string `json:"target"`
	Value  uint64 `json:"value"`
}

// JourneyNode is a screen and the issues that happened on it.
type JourneyNode struct {
	ID     string        `json:"id"`
	Issues JourneyIssues `json:"issues"`
}

// JourneyIssues are the groups of a node, each ordered by count (descending), then id. Only
// says which arrays the JSON holds: both (""), or only JourneyCrash's or JourneyANR's.
type JourneyIssues struct {
	Crashes []JourneyIssue
	ANRs    []JourneyIssue
	Only    string
}

// MarshalJSON writes {"anrs": [...], "crashes": [...]}, or the one array Only names.
func (j JourneyIssues) MarshalJSON() ([]byte, error) {
	type both struct {
		ANRs    []JourneyIssue `json:"anrs"`
		Crashes []JourneyIssue `json:"crashes"`
	}
	switch j.Only {
	case JourneyCrash:
		return json.Marshal(struct {
			Crashes []JourneyIssue `json:"crashes"`
		}{nonNil(j.Crashes)})
	case JourneyANR:
		return json.Marshal(struct {
			ANRs []JourneyIssue `json:"anrs"`
		}{nonNil(j.ANRs)})
	}
	return json.Marshal(both{nonNil(j.ANRs), nonNil(j.Crashes)})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// JourneyIssue is a group that happened on a node: Count of its events there, Title
// "type@file_name" (Group.Title).
type JourneyIssue struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Count uint64 `json:"count"`
}

// Graph returns the journey. With bigraph, every link is kept; without, only one direction of
// each pair of screens linked both ways: the one more sessions took (on a tie, the one whose
// source sorts first), with its own count. Links are ordered by value (descending), source,
// target; nodes by id. Nodes are the screens of the kept links and the screens with issues.
// TotalIssues counts issue events of both kinds, on any screen or none. The graph's counts go
// through JourneyCounts, so live and store answers share one definition of the order.
func (g *JourneyGraph) Graph(bigraph bool) JourneyJSON {
	issues := 0
	for _, s := range g.issues {
		issues += len(s.crashes) + len(s.anrs)
	}
	c := NewJourneyCounts(len(g.links), issues)
	for e, n := range g.links {
		c.AddLink(e.from, e.to, n)
	}
	for screen, s := range g.issues {
		for id, is := range s.crashes {
			c.AddIssue(screen, JourneyCrash, id, is.title, is.count)
		}
		for id, is := range s.anrs {
			c.AddIssue(screen, JourneyANR, id, is.title, is.count)
		}
	}
	c.crashes, c.anrs = g.crashes, g.anrs // with the issues on no screen, which AddIssue never saw
	return c.Graph(bigraph)
}

// Only keeps the issues of one kind (JourneyCrash for the crash journey plot, which lists only
// crashes; JourneyANR for the ANR one): the other array is left out of every node and
// TotalIssues counts only that kind. Nodes that were there only for the other kind's issues
// stay (they were shown).
func (j JourneyJSON) Only(kind string) JourneyJSON {
	nodes := make([]JourneyNode, len(j.Nodes))
	for i, n := range j.Nodes {
		n.Issues.Only = kind
		if kind == JourneyCrash {
			n.Issues.ANRs = nil
		} else {
			n.Issues.Crashes = nil
		}
		nodes[i] = n
	}
	j.Nodes = nodes
	if kind == JourneyCrash {
		j.TotalIssues = j.crashes
	} else {
		j.TotalIssues = j.anrs
	}
	return j
}

// journeyState is the JSON form of a whole JourneyGraph (snapshots).
type journeyState struct {
	Links   []JourneyLink   `json:"links"`
	Issues  []journeyOnNode `json:"issues"`
	Crashes uint64          `json:"crashes"`
	ANRs    uint64          `json:"anrs"`
}

type journeyOnNode struct {
	Screen string `json:"screen"`
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Title  string `json:"title"`
	Count  uint64 `json:"count"`
}

// MarshalJSON writes the graph's whole state, so that an actor can snapshot it;
// UnmarshalJSON restores it. The form is deterministic.
func (g *JourneyGraph) MarshalJSON() ([]byte, error) {
	full := g.Graph(true)
	st := journeyState{Links: full.Links, Issues: []journeyOnNode{}, Crashes: g.crashes, ANRs: g.anrs}
	for _, n := range full.Nodes {
		for _, is := range n.Issues.Crashes {
			st.Issues = append(st.Issues, journeyOnNode{n.ID, JourneyCrash, is.ID, is.Title, is.Count})
		}
		for _, is := range n.Issues.ANRs {
			st.Issues = append(st.Issues, journeyOnNode{n.ID, JourneyANR, is.ID, is.Title, is.Count})
		}
	}
	return json.Marshal(st)
}

// UnmarshalJSON replaces g's state with a snapshot written by MarshalJSON.
func (g *JourneyGraph) UnmarshalJSON(b []byte) error {
	var st journeyState
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	*g = *NewJourneyGraph()
	for _, l := range st.Links {
		g.AddTransitions(l.Source, l.Target, l.Value)
	}
	for _, is := range st.Issues {
		g.addCounted(is.Screen, is.Kind, is.ID, is.Title, is.Count)
	}
	g.crashes, g.anrs = st.Crashes, st.ANRs
	return nil
}
