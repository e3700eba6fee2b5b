package model

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JourneyCounts builds the journey of already-summed counts (an app actor's live reply) without
// a JourneyGraph's maps: AddLink and AddIssue as JourneyGraph's AddTransitions and AddIssues,
// then Graph as JourneyGraph.Graph, with the same result. Repeats add up (of a group's repeats
// on a screen, the last non-empty title wins). Screens are numbered as they come and renumbered
// in name order once, so that links sort by integers; the nodes' issue lists share one array.
//
// Reset empties it for another journey and keeps its memory, so that a pool of them answers
// live journeys without allocating (each allocation brings the next garbage collection nearer,
// and a collection is what the slowest live answers wait for).
type JourneyCounts struct {
	sc            screenNumbers
	edges         []journeyEdgeCount
	on            []journeyIssueAt // issues on a screen
	crashes, anrs uint64
	// Graph's answer and working space, kept across Reset.
	links []JourneyLink
	nodes []JourneyNode
	idx   []int32
	list  []JourneyIssue
}

type journeyIssueAt struct {
	screen       int32
	kind         string
	group, title string
	count        uint64
}

// NewJourneyCounts returns an empty JourneyCounts with room for about links links and issues
// issues.
func NewJourneyCounts(links, issues int) *JourneyCounts {
	return &JourneyCounts{sc: screenNumbers{ids: make(map[string]int32, links/2+issues)},
		edges: make([]journeyEdgeCount, 0, links), on: make([]journeyIssueAt, 0, issues)}
}

// Reset empties c, keeping its memory. A JourneyJSON that Graph returned before shares that
// memory, so it must not be used after.
func (c *JourneyCounts) Reset() {
	clear(c.sc.ids)
	c.sc.names = clearSlice(c.sc.names)
	c.edges, c.on = c.edges[:0], clearSlice(c.on)
	c.crashes, c.anrs = 0, 0
	c.links, c.nodes, c.list = clearSlice(c.links), clearSlice(c.nodes), clearSlice(c.list)
}

// resized returns s with length n, in s's array when it has room; the elements are not cleared.
func resized[T any](s []T, n int) []T { return slices.Grow(s[:0], n)[:n] }

// clearSlice empties s, dropping what its elements point to, and keeps its array.
func clearSlice[T any](s []T) []T {
	clear(s)
	return s[:0]
}

// AddLink counts n sessions that moved from one screen to another (JourneyGraph.AddTransitions).
func (c *JourneyCounts) AddLink(from, to string, n uint64) {
	if from == to || from == "" || to == "" || n == 0 {
		return
	}
	c.edges = append(c.edges, journeyEdgeCount{from: c.sc.id(from), to: c.sc.id(to), n: n})
}

// AddFact counts f (f.Count() facts), as JourneyGraph.AddFact.
func (c *JourneyCounts) AddFact(f *JourneyFact) {
	if f.IsMove() {
		c.AddLink(f.From, f.Event.Screen, f.Count())
		return
	}
	c.AddIssue(f.From, JourneyKind(f.Event.Class), f.Event.GroupID, f.Event.Title, f.Count())
}

// AddIssue counts n issue events of a group on a screen (JourneyGraph.AddIssues).
func (c *JourneyCounts) AddIssue(screen, kind, groupID, title string, n uint64) {
	switch kind {
	case JourneyCrash:
		c.crashes += n
	case JourneyANR:
		c.anrs += n
	default:
		return
	}
	if screen != "" && n != 0 {
		c.on = append(c.on, journeyIssueAt{screen: c.sc.id(screen), kind: kind, group: groupID, title: title, count: n})
	}
}

// Graph is the journey as JourneyGraph.Graph(bigraph) has it. It can be called once after
// NewJourneyCounts or Reset, and its answer shares c's memory until c is Reset.
func (c *JourneyCounts) Graph(bigraph bool) JourneyJSON {
	j := JourneyJSON{TotalIssues: c.crashes + c.anrs, crashes: c.crashes, anrs: c.anrs}
	// The nodes are the screens of the links and of the issues. Without bigraph, one direction
	// of each pair of links stays, so the kept links have the same screens.
	rank := c.sc.sort()
	for i := range c.edges {
		e := &c.edges[i]
		e.from, e.to = rank[e.from], rank[e.to]
	}
	for i := range c.on {
		c.on[i].screen = rank[c.on[i].screen]
	}
	c.links = c.sc.links(c.edges, bigraph, c.links)
	c.nodes = resized(c.nodes, len(c.sc.names))
	for i, s := range c.sc.names {
		c.nodes[i] = JourneyNode{ID: s}
	}
	c.idx, c.list = nodeIssues(c.nodes, c.on, c.idx, c.list)
	j.Links, j.Nodes = c.links, c.nodes
	if j.Links == nil { // empty lists are [], not null
		j.Links = []JourneyLink{}
	}
	if j.Nodes == nil {
		j.Nodes = []JourneyNode{}
	}
	return j
}

// screenNumbers numbers screens in the order they come, then (sort) in name order.
type screenNumbers struct {
	ids   map[string]int32
	names []string
	// sort's working space, kept for the next use.
	order, rank []int32
	sorted      []string
}

func (sc *screenNumbers) id(s string) int32 {
	id, ok := sc.ids[s]
	if !ok {
		if sc.ids == nil {
			sc.ids = map[string]int32{}
		}
		id = int32(len(sc.names))
		sc.ids[s] = id
		sc.names = append(sc.names, s)
	}
	return id
}

// sort orders names and returns each former number's new one.
func (sc *screenNumbers) sort() []int32 {
	n := len(sc.names)
	order := resized(sc.order, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(sc.names[a], sc.names[b]) })
	rank := resized(sc.rank, n)
	sorted := resized(sc.sorted, n)
	for r, id := range order {
		rank[id] = int32(r)
		sorted[r] = sc.names[id]
	}
	// The former names' array is the next sort's.
	former := sc.names
	clear(former)
	sc.names, sc.sorted, sc.order, sc.rank = sorted, former[:0], order, rank
	return rank
}

// journeyEdgeCount is n sessions from screen number from to screen number to.
type journeyEdgeCount struct {
	from, to int32
	n        uint64
}

func (e journeyEdgeCount) key() uint64 { return uint64(e.from)<<32 | uint64(e.to) }

// links adds up repeated edges, drops what Graph drops without bigraph, and returns the links
// in Graph's order, in out's array when it has room.
func (sc *screenNumbers) links(edges []journeyEdgeCount, bigraph bool, out []JourneyLink) []JourneyLink {
	slices.SortFunc(edges, func(a, b journeyEdgeCount) int { return cmp.Compare(a.key(), b.key()) })
	w := 0
	for _, e := range edges {
		if w > 0 && edges[w-1].key() == e.key() {
			edges[w-1].n += e.n
			continue
		}
		edges[w] = e
		w++
	}
	edges = edges[:w]
	if !bigraph {
		// A dropped edge gets n 0, which no edge has here: of a pair exactly one direction
		// stays, so when the reverse was dropped already this one stays.
		for i := range edges {
			e := &edges[i]
			k, ok := slices.BinarySearchFunc(edges, uint64(e.to)<<32|uint64(e.from), func(x journeyEdgeCount, key uint64) int {
				return cmp.Compare(x.key(), key)
			})
			if !ok {
				continue
			}
			if back := edges[k].n; back != 0 && (back > e.n || back == e.n && e.to < e.from) {
				e.n = 0
			}
		}
		edges = slices.DeleteFunc(edges, func(e journeyEdgeCount) bool { return e.n == 0 })
	}
	// Screens are numbered in name order: Graph's order is by count, then source, then target
	// (edges are unique by the last two here), which an unstable sort gives as well as a stable
	// one by count alone, at a fraction of its moves.
	slices.SortFunc(edges, func(a, b journeyEdgeCount) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.key(), b.key())) })
	out = resized(out, len(edges))
	for i, e := range edges {
		out[i] = JourneyLink{Source: sc.names[e.from], Target: sc.names[e.to], Value: e.n}
	}
	return out
}

// nodeIssues sets the nodes' issue lists from the issues on them: repeats of a group on a
// screen added up (the last non-empty title wins), ordered by count (descending), then id. idx
// and list are working space (their arrays are used when large enough); it returns them.
func nodeIssues(nodes []JourneyNode, on []journeyIssueAt, idx []int32, list []JourneyIssue) ([]int32, []JourneyIssue) {
	for i := range nodes {
		nodes[i].Issues = JourneyIssues{Crashes: []JourneyIssue{}, ANRs: []JourneyIssue{}} // as Graph has them
	}
	idx = resized(idx, len(on))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		return cmp.Or(cmp.Compare(on[a].screen, on[b].screen), strings.Compare(on[a].kind, on[b].kind),
			strings.Compare(on[a].group, on[b].group), cmp.Compare(a, b))
	})
	w := 0
	for _, i := range idx {
		if into := &on[idx[max(w-1, 0)]]; w > 0 && into.screen == on[i].screen && into.kind == on[i].kind && into.group == on[i].group {
			into.count += on[i].count
			if on[i].title != "" {
				into.title = on[i].title
			}
			continue
		}
		idx[w] = i
		w++
	}
	idx = idx[:w]
	slices.SortFunc(idx, func(a, b int32) int {
		return cmp.Or(cmp.Compare(on[a].screen, on[b].screen), strings.Compare(on[a].kind, on[b].kind),
			cmp.Compare(on[b].count, on[a].count), strings.Compare(on[a].group, on[b].group))
	})
	list = resized(list, len(idx))
	for k := 0; k < len(idx); {
		first, screen, kind := k, on[idx[k]].screen, on[idx[k]].kind
		for ; k < len(idx) && on[idx[k]].screen == screen && on[idx[k]].kind == kind; k++ {
			is := &on[idx[k]]
			list[k] = JourneyIssue{ID: is.group, Title: is.title, Count: is.count}
		}
		if kind == JourneyCrash {
			nodes[screen].Issues.Crashes = list[first:k:k]
		} else {
			nodes[screen].Issues.ANRs = list[first:k:k]
		}
	}
	return idx, list
}

// AppendJSON appends j as encoding/json writes it (json.Marshal(j): same fields, order, escapes,
// null for a nil slice), without reflection.
func (j JourneyJSON) AppendJSON(b []byte) []byte {
	b = append(b, `{"links":`...)
	b = appendJSONArray(b, j.Links, true, func(b []byte, l *JourneyLink) []byte {
		return appendStringsCount(b, `{"source":`, l.Source, `,"target":`, l.Target, `,"value":`, l.Value)
	})
	b = append(b, `,"nodes":`...)
	b = appendJSONArray(b, j.Nodes, true, func(b []byte, n *JourneyNode) []byte {
		b = append(b, `{"id":`...)
		b = AppendJSONString(b, n.ID)
		b = append(b, `,"issues":`...)
		b = n.Issues.appendJSON(b)
		return append(b, '}')
	})
	b = append(b, `,"totalIssues":`...)
	b = strconv.AppendUint(b, j.TotalIssues, 10)
	return append(b, '}')
}

// appendJSON appends what MarshalJSON returns (a nil list as []).
func (j *JourneyIssues) appendJSON(b []byte) []byte {
	switch j.Only {
	case JourneyCrash:
		b = append(b, `{"crashes":`...)
		b = appendJSONArray(b, j.Crashes, false, appendJourneyIssue)
	case JourneyANR:
		b = append(b, `{"anrs":`...)
		b = appendJSONArray(b, j.ANRs, false, appendJourneyIssue)
	default:
		b = append(b, `{"anrs":`...)
		b = appendJSONArray(b, j.ANRs, false, appendJourneyIssue)
		b = append(b, `,"crashes":`...)
		b = appendJSONArray(b, j.Crashes, false, appendJourneyIssue)
	}
	return append(b, '}')
}

func appendJourneyIssue(b []byte, is *JourneyIssue) []byte {
	return appendStringsCount(b, `{"id":`, is.ID, `,"title":`, is.Title, `,"count":`, is.Count)
}

// appendStringsCount appends an object of two strings and a number, each after its key (with
// the brace or comma before it).
func appendStringsCount(b []byte, k1, s1, k2, s2, k3 string, n uint64) []byte {
	b = AppendJSONString(append(b, k1...), s1)
	b = AppendJSONString(append(b, k2...), s2)
	b = strconv.AppendUint(append(b, k3...), n, 10)
	return append(b, '}')
}

// appendJSONArray appends s as a JSON array of what each appends per element; a nil s as null
// when nilNull (encoding/json's way), else as [].
func appendJSONArray[T any](b []byte, s []T, nilNull bool, each func([]byte, *T) []byte) []byte {
	if s == nil && nilNull {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, &s[i])
	}
	return append(b, ']')
}

// AppendJSONString appends s quoted as encoding/json quotes a string by default: `"` and `\`
// escaped, \b \f \n \r \t and \u00XX for the other control characters, <, > and & as \u003c,
// \u003e and \u0026 (HTML-safe), U+2028 and U+2029 as \u2028 and \u2029, and each byte of
// invalid UTF-8 as \ufffd.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0 // s[start:i] is still to append as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonSafe says which ASCII bytes AppendJSONString copies as they are.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
