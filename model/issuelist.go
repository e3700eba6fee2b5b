package model

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// GroupRow is one issue group of a list: the merge of its cells in the window.
type GroupRow struct {
	ID    string
	Count uint64
	// Percentage is Count's share of all rows' counts, rounded to two decimals.
	Percentage float64
	// FirstTime is when the group was first seen in the window. LastTime and LastID are its
	// latest event; Last is that event's display and LastClass its class (errorGroups'
	// error_type).
	FirstTime int64
	LastTime  int64
	LastID    uuid.UUID
	Last      IssueDisplay
	LastClass IssueClass
}

// Merge adds o's events to c. It is the one rule by which issue cells combine, wherever they
// do (a batch's events into day cells, day cells into a window's, cells into a group's row):
// counts add up, the earliest first seen stays, and the later of the two latest events (Later:
// timestamp, then id; on a full tie c's stays) gives the display and the class. An empty cell
// (Count 0) holds no event: merging one changes nothing, and merging into one takes o's events
// whole, whatever c's times say. GroupID, Version and Bucket are the caller's: the key of the
// cells merged, or dropped by a merge across keys. It says whether o's latest event became c's.
func (c *IssueCell) Merge(o *IssueCell) (later bool) {
	switch {
	case o.Count == 0:
		return false
	case c.Count == 0:
		c.Count, c.FirstTime = o.Count, o.FirstTime
	default:
		c.Count += o.Count
		c.FirstTime = min(c.FirstTime, o.FirstTime)
		if !c.Later(o.LastTime, o.LastID) {
			return false
		}
	}
	c.LastTime, c.LastID, c.Last, c.Class = o.LastTime, o.LastID, o.Last, o.Class
	return true
}

// MergeGroups merges cells into one row per group id, whatever their class, version or
// bucket, by IssueCell.Merge: counts add up, the earliest first seen stays, and the latest
// event gives the display and LastClass. Rows are ordered by count descending, then latest
// event descending, then id (docs/architecture.md, "Algorithms").
func MergeGroups(cells []IssueCell) []GroupRow {
	// Two passes, so that each array is allocated once at its size: a live answer of a busy
	// app merges hundreds of groups per request. The first numbers the groups.
	idx := make(map[string]int32, min(len(cells), 1024))
	counted := 0
	var total uint64
	for i := range cells {
		if c := &cells[i]; c.Count != 0 {
			counted++
			total += c.Count
			if _, ok := idx[c.GroupID]; !ok {
				idx[c.GroupID] = int32(len(idx))
			}
		}
	}
	if len(idx) == 0 {
		return nil
	}
	// order holds the numbers of the rows' cells in merged, in the list's order once sorted.
	order := make([]int32, 0, len(idx))
	merged := cells
	if counted == len(idx) {
		// Each group has one cell (a live answer's): those are the rows' cells as they are.
		for i := range cells {
			if cells[i].Count != 0 {
				order = append(order, int32(i))
			}
		}
	} else {
		merged = make([]IssueCell, len(idx))
		for i := range cells {
			if c := &cells[i]; c.Count != 0 {
				m := &merged[idx[c.GroupID]]
				m.GroupID = c.GroupID
				m.Merge(c)
			}
		}
		for i := range merged {
			order = append(order, int32(i))
		}
	}
	// Sort the cells' numbers, not the rows: a row is over 200 bytes, and sort.Slice moved
	// each by reflection.
	slices.SortFunc(order, func(a, b int32) int {
		x, y := &merged[a], &merged[b]
		return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(y.LastTime, x.LastTime), strings.Compare(x.GroupID, y.GroupID))
	})
	rows := make([]GroupRow, len(order))
	for i, j := range order {
		m := &merged[j]
		rows[i] = GroupRow{ID: m.GroupID, Count: m.Count, FirstTime: m.FirstTime, LastTime: m.LastTime,
			LastID: m.LastID, Last: m.Last, LastClass: m.Class,
			Percentage: math.Round(float64(m.Count)*100/float64(total)*100) / 100}
	}
	return rows
}

// Keyset paging errors, for 400 answers.
var (
	ErrPageKey   = errors.New("key_id is not an item of this list (it may have left the window): start again without key_id")
	ErrPageLimit = errors.New("a negative limit pages backward from key_id, so it needs key_id")
)

// Page is a window [Start, End) of a list with what lies around it.
type Page struct {
	Start, End     int
	Next, Previous bool
}

// PageOf finds the page of a list of n items for keyset paging: key is the index of the key
// item (-1 without key_id), limit the number of items (negative: the items just before the
// key). Next and Previous say whether items exist after and before the page.
func PageOf(n, key, limit int) (Page, error) {
	var p Page
	switch {
	case key < 0 && limit < 0:
		return p, ErrPageLimit
	case key < 0:
		p.Start, p.End = 0, min(limit, n)
	case limit >= 0:
		p.Start = key + 1
		p.End = min(p.Start+limit, n)
	default:
		p.End = key
		p.Start = max(0, key+limit)
	}
	p.Previous = p.Start > 0
	p.Next = p.End < n
	return p, nil
}

// PageGroups pages rows by key_id (the id of the last item of the previous page, or of the
// first item of the current page when limit is negative).
func PageGroups(rows []GroupRow, keyID string, limit int) ([]GroupRow, Page, error) {
	key := -1
	if keyID != "" {
		for i := range rows {
			if rows[i].ID == keyID {
				key = i
				break
			}
		}
		if key < 0 {
			return nil, Page{}, ErrPageKey
		}
	}
	p, err := PageOf(len(rows), key, limit)
	if err != nil {
		return nil, p, err
	}
	return rows[p.Start:p.End], p, nil
}

// MaxWalkEdges bounds the distinct moves a session's walk remembers: a session that makes more
// distinct moves than this counts no further new ones (in live answers and store answers alike).
const MaxWalkEdges = 500

// Walk follows one session's screens in time order for journeys (docs/architecture.md, "Algorithms"): a move from
// one screen to the next counts once per session, on its first occurrence; repeats of a screen
// are no move. The session actor keeps a Walk live and store queries replay one per session,
// so both count the same moves at the same times.
type Walk struct {
	Screen string   // the screen shown now ("" before the first)
	Edges  []string // the distinct moves made so far, as MoveKey
}

// MoveKey is the text form of a move in Walk.Edges.
func MoveKey(from, to string) string { return from + "\x00" + to }

// Step advances the walk to screen. first is true when this is a move the session had not
// made before (the one to count); from is the screen it left.
func (w *Walk) Step(screen string) (from string, first bool) {
	if screen == "" || screen == w.Screen {
		return "", false
	}
	from, w.Screen = w.Screen, screen
	if from == "" {
		return "", false
	}
	for _, e := range w.Edges {
		if isMove(e, from, screen) {
			return from, false
		}
	}
	if len(w.Edges) >= MaxWalkEdges {
		return from, false
	}
	w.Edges = append(w.Edges, MoveKey(from, screen))
	return from, true
}

// isMove says whether k is MoveKey(from, to), without making that string (a walk steps far more
// often than it makes a new move).
func isMove(k, from, to string) bool {
	return len(k) == len(from)+1+len(to) && k[len(from)] == 0 && k[:len(from)] == from && k[len(from)+1:] == to
}

// JourneyKind is the journey issue kind of a class: JourneyCrash, JourneyANR, or "" for a
// class journeys leave out (handled exceptions).
func JourneyKind(c IssueClass) string {
	switch c {
	case ClassCrash:
		return JourneyCrash
	case ClassANR:
		return JourneyANR
	}
	return ""
}

// JourneyFact is one thing a session's walk counts in journeys: a first move, made by the
// screen event Event (Event.Screen is the screen entered, From the screen left), or an issue
// event Event (Event.GroupID set, a class with a JourneyKind) that happened on screen From (""
// when no screen was shown yet). Stores keep a session's facts so that a journey over a window
// reads only the facts in it instead of walking every session again.
//
// A store that keeps facts summed (ClickHouse's journey rollups, the embedded store's day sums)
// passes one JourneyFact for N facts that are equal but for their events' times and ids, all in
// one UTC day: Event.Timestamp is then the earliest of those times and Last the latest, and N is
// at least 1. A single fact has N 0 (Count 1).
type JourneyFact struct {
	From  string
	Event WalkEvent
	N     uint64
	Last  int64
}

// IsMove says whether f is a move (else it is an issue).
func (f *JourneyFact) IsMove() bool { return f.Event.Screen != "" }

// Count is how many facts f stands for.
func (f *JourneyFact) Count() uint64 { return max(f.N, 1) }

// LastTime is the latest event time of the facts f stands for.
func (f *JourneyFact) LastTime() int64 {
	if f.N == 0 {
		return f.Event.Timestamp
	}
	return f.Last
}

// AppendFacts walks on over events (ascending by time, all after those walked so far) and
// appends their facts to out: each first move with the event that made it, and each issue with
// the screen it happened on.
func (w *Walk) AppendFacts(out []JourneyFact, events []WalkEvent) []JourneyFact {
	for i := range events {
		e := &events[i]
		if e.Screen != "" {
			if from, first := w.Step(e.Screen); first {
				out = append(out, JourneyFact{From: from, Event: *e})
			}
			continue
		}
		if e.GroupID != "" && JourneyKind(e.Class) != "" {
			out = append(out, JourneyFact{From: w.Screen, Event: *e})
		}
	}
	return out
}

// AppendJourneyFacts appends the facts of one session's walk events (all of them, ascending by
// time) to out, in walk order.
func AppendJourneyFacts(out []JourneyFact, events []WalkEvent) []JourneyFact {
	var w Walk
	return w.AppendFacts(out, events)
}

// AddFact counts f (f.Count() facts) in g (AddTransitions or AddIssues).
func (g *JourneyGraph) AddFact(f *JourneyFact) {
	if f.IsMove() {
		g.AddTransitions(f.From, f.Event.Screen, f.Count())
		return
	}
	g.AddIssues(f.From, JourneyKind(f.Event.Class), f.Event.GroupID, f.Event.Title, f.Count())
}

// AddSessionWalk adds one session's moves and issues that keep accepts to g. With group set,
// only the issues of that group count (the group journey plots).
func (g *JourneyGraph) AddSessionWalk(events []WalkEvent, keep func(*WalkEvent) bool, group string) {
	for _, f := range AppendJourneyFacts(nil, events) {
		if keep(&f.Event) && (f.IsMove() || group == "" || f.Event.GroupID == group) {
			g.AddFact(&f)
		}
	}
}

// KeepWalkEvent is the journey window: events in [from, to) of one of versions (any when empty).
func KeepWalkEvent(from, to int64, versions []AppVersion) func(*WalkEvent) bool {
	return func(e *WalkEvent) bool {
		return e.Timestamp >= from && e.Timestamp < to &&
			(len(versions) == 0 || hasVersion(versions, e.Version.Name, e.Version.Code))
	}
}
