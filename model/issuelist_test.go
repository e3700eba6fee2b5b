package model

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/uuid"
)

func TestMergeGroups(t *testing.T) {
	id := func(b byte) uuid.UUID { return uuid.UUID{15: b} }
	v1, v2 := AppVersion{"1.0", "1"}, AppVersion{"2.0", "2"}
	cells := []IssueCell{
		{GroupID: "a", Class: ClassCrash, Version: v1, Count: 2, LastTime: 10, LastID: id(1), Last: IssueDisplay{Type: "A1"}},
		{GroupID: "a", Class: ClassHandled, Version: v2, Count: 1, LastTime: 30, LastID: id(2), Last: IssueDisplay{Type: "A2"}},
		{GroupID: "b", Class: ClassCrash, Version: v1, Count: 3, LastTime: 20, LastID: id(3), Last: IssueDisplay{Type: "B"}},
		{GroupID: "c", Class: ClassANR, Version: v1, Count: 1, LastTime: 5, LastID: id(4), Last: IssueDisplay{Type: "C"}},
		// Same time as c's latest, greater id: c's display comes from it.
		{GroupID: "c", Class: ClassANR, Version: v2, Count: 0, LastTime: 99, LastID: id(9), Last: IssueDisplay{Type: "empty"}},
		{GroupID: "c", Class: ClassANR, Version: v2, Count: 1, LastTime: 5, LastID: id(5), Last: IssueDisplay{Type: "C2"}},
		{GroupID: "d", Class: ClassCrash, Version: v2, Count: 1, LastTime: 7, LastID: id(6), Last: IssueDisplay{Type: "D"}},
	}
	got := MergeGroups(cells)
	want := []GroupRow{
		{ID: "a", Count: 3, Percentage: 33.33, LastTime: 30, LastID: id(2), Last: IssueDisplay{Type: "A2"}, LastClass: ClassHandled},
		{ID: "b", Count: 3, Percentage: 33.33, LastTime: 20, LastID: id(3), Last: IssueDisplay{Type: "B"}, LastClass: ClassCrash},
		{ID: "d", Count: 1, Percentage: 11.11, LastTime: 7, LastID: id(6), Last: IssueDisplay{Type: "D"}, LastClass: ClassCrash},
		{ID: "c", Count: 2, Percentage: 22.22, LastTime: 5, LastID: id(5), Last: IssueDisplay{Type: "C2"}, LastClass: ClassANR},
	}
	// c has 2 and comes before d in the true order; fix the expectation's order.
	want[2], want[3] = want[3], want[2]
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	if MergeGroups(nil) != nil {
		t.Fatal("no cells give no rows")
	}
}

// TestIssueCellMerge: the one merge rule of issue cells at its edges.
func TestIssueCellMerge(t *testing.T) {
	id := func(b byte) uuid.UUID { return uuid.UUID{15: b} }
	hi := uuid.UUID{0: 1} // greater than id(255) in byte order: the first byte decides
	cell := func(class IssueClass, n uint64, first, last int64, lastID uuid.UUID, typ string) IssueCell {
		return IssueCell{Class: class, Count: n, FirstTime: first, LastTime: last, LastID: lastID, Last: IssueDisplay{Type: typ}}
	}
	keyed := func(c IssueCell) IssueCell {
		c.GroupID, c.Version, c.Bucket = "g", AppVersion{Name: "1.0", Code: "1"}, 86400
		return c
	}
	cases := []struct {
		name      string
		c, o      IssueCell
		want      IssueCell
		wantLater bool
	}{
		{"later time takes the display and class",
			cell(ClassCrash, 2, 10, 20, id(1), "a"), cell(ClassHandled, 3, 15, 30, id(0), "b"),
			cell(ClassHandled, 5, 10, 30, id(0), "b"), true},
		{"earlier time keeps the display",
			cell(ClassCrash, 2, 10, 20, id(9), "a"), cell(ClassHandled, 1, 5, 19, id(200), "b"),
			cell(ClassCrash, 3, 5, 20, id(9), "a"), false},
		{"equal times: the greater id wins",
			cell(ClassCrash, 1, 20, 20, id(3), "a"), cell(ClassANR, 1, 20, 20, id(4), "b"),
			cell(ClassANR, 2, 20, 20, id(4), "b"), true},
		{"equal times: a smaller id loses",
			cell(ClassCrash, 1, 20, 20, id(4), "a"), cell(ClassANR, 1, 20, 20, id(3), "b"),
			cell(ClassCrash, 2, 20, 20, id(4), "a"), false},
		{"equal times: ids compare by bytes, the first byte first",
			cell(ClassCrash, 1, 20, 20, id(255), "a"), cell(ClassANR, 1, 20, 20, hi, "b"),
			cell(ClassANR, 2, 20, 20, hi, "b"), true},
		{"the same latest event: the receiver's display stays",
			cell(ClassCrash, 1, 20, 20, id(7), "a"), cell(ClassCrash, 1, 20, 20, id(7), "b"),
			cell(ClassCrash, 2, 20, 20, id(7), "a"), false},
		{"into an empty cell: its zero first seen does not win",
			IssueCell{}, cell(ClassANR, 4, 100, 200, id(2), "b"),
			cell(ClassANR, 4, 100, 200, id(2), "b"), true},
		{"into an empty cell with stale times: they do not count",
			cell(ClassCrash, 0, 1, 999, uuid.Max, "stale"), cell(ClassANR, 1, 100, 100, id(2), "b"),
			cell(ClassANR, 1, 100, 100, id(2), "b"), true},
		{"an empty cell changes nothing, however late it says it is",
			cell(ClassCrash, 2, 10, 20, id(1), "a"), cell(ClassANR, 0, 0, 99, uuid.Max, "empty"),
			cell(ClassCrash, 2, 10, 20, id(1), "a"), false},
		{"first seen at the epoch is a time like any",
			cell(ClassCrash, 1, 0, 0, id(1), "a"), cell(ClassCrash, 1, 50, 50, id(2), "b"),
			cell(ClassCrash, 2, 0, 50, id(2), "b"), true},
		{"times before the epoch",
			cell(ClassCrash, 1, -5, -5, id(1), "a"), cell(ClassCrash, 1, -50, -50, id(2), "b"),
			cell(ClassCrash, 2, -50, -5, id(1), "a"), false},
		{"first seen comes from the other cell than the display",
			cell(ClassCrash, 3, 1, 10, id(1), "a"), cell(ClassCrash, 1, 5, 50, id(2), "b"),
			cell(ClassCrash, 4, 1, 50, id(2), "b"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, o := keyed(tc.c), tc.o
			later := c.Merge(&o)
			if want := keyed(tc.want); c != want || later != tc.wantLater {
				t.Errorf("Merge = %v\n got %+v\nwant %+v (later %v)", later, c, want, tc.wantLater)
			}
			if o != tc.o {
				t.Errorf("Merge changed its argument: %+v", o)
			}
		})
	}
	// Merging is order-free on counts, first seen and the latest event.
	cs := []IssueCell{cell(ClassCrash, 1, 7, 7, id(5), "x"), cell(ClassANR, 2, 3, 9, id(1), "y"),
		cell(ClassHandled, 1, 9, 9, id(2), "z"), {}, cell(ClassCrash, 4, 4, 8, id(9), "w")}
	var fwd, back IssueCell
	for i := range cs {
		fwd.Merge(&cs[i])
		back.Merge(&cs[len(cs)-1-i])
	}
	if want := cell(ClassHandled, 8, 3, 9, id(2), "z"); fwd != want || back != want {
		t.Errorf("merged forward %+v, backward %+v; want %+v", fwd, back, want)
	}
}

func TestPageOf(t *testing.T) {
	cases := []struct {
		n, key, limit int
		want          Page
		err           error
	}{
		{10, -1, 3, Page{0, 3, true, false}, nil},
		{2, -1, 3, Page{0, 2, false, false}, nil},
		{0, -1, 3, Page{0, 0, false, false}, nil},
		{10, 2, 3, Page{3, 6, true, true}, nil},
		{10, 8, 3, Page{9, 10, false, true}, nil},
		{10, 9, 3, Page{10, 10, false, true}, nil},
		{10, 6, -3, Page{3, 6, true, true}, nil},
		{10, 2, -3, Page{0, 2, true, false}, nil},
		{10, 0, -3, Page{0, 0, true, false}, nil},
		{10, -1, -3, Page{}, ErrPageLimit},
	}
	for _, c := range cases {
		got, err := PageOf(c.n, c.key, c.limit)
		if err != c.err || got != c.want {
			t.Errorf("PageOf(%d, %d, %d) = %+v, %v; want %+v, %v", c.n, c.key, c.limit, got, err, c.want, c.err)
		}
	}
}

// Walking forward then backward over a list visits every item once, in order.
func TestPageGroupsWalk(t *testing.T) {
	var rows []GroupRow
	for i := 0; i < 23; i++ {
		rows = append(rows, GroupRow{ID: string(rune('a' + i))})
	}
	var fwd []string
	key := ""
	for {
		page, p, err := PageGroups(rows, key, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			fwd = append(fwd, r.ID)
		}
		if !p.Next {
			break
		}
		key = page[len(page)-1].ID
	}
	var back []string
	key = rows[len(rows)-1].ID
	if page, _, _ := PageGroups(rows, "", 30); len(page) != 23 {
		t.Fatal("one page holds all")
	}
	back = append(back, key)
	for {
		page, p, err := PageGroups(rows, key, -5)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(page) - 1; i >= 0; i-- {
			back = append(back, page[i].ID)
		}
		if !p.Previous {
			break
		}
		key = page[0].ID
	}
	for i := range fwd {
		if fwd[i] != rows[i].ID || back[len(back)-1-i] != rows[i].ID {
			t.Fatalf("forward %v backward %v", fwd, back)
		}
	}
	if len(fwd) != 23 || len(back) != 23 {
		t.Fatalf("forward %d, backward %d items", len(fwd), len(back))
	}
	if _, _, err := PageGroups(rows, "zz", 5); err != ErrPageKey {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestJourneyFacts(t *testing.T) {
	v := AppVersion{"1", "1"}
	ev := func(ts int64, screen string) WalkEvent { return WalkEvent{Timestamp: ts, Version: v, Screen: screen} }
	crash := WalkEvent{Timestamp: 9, Version: v, GroupID: "g", Class: ClassCrash, Title: "T@f"}
	handled := WalkEvent{Timestamp: 10, Version: v, GroupID: "h", Class: ClassHandled, Title: "H"}
	anrBefore := WalkEvent{Timestamp: 0, Version: v, GroupID: "n", Class: ClassANR, Title: "N"}
	events := []WalkEvent{anrBefore, ev(1, "A"), ev(2, "A"), ev(3, "B"), ev(4, "A"), ev(5, "B"), ev(6, "C"), crash, handled}
	var moves []string
	var issues []string
	facts := AppendJourneyFacts(nil, events)
	for _, f := range facts {
		if f.IsMove() {
			moves = append(moves, f.From+">"+f.Event.Screen)
		} else {
			issues = append(issues, f.Event.GroupID+"@"+f.From)
		}
	}
	// Walking on from any point gives the same facts as walking the whole session.
	for cut := range events {
		var w Walk
		got := w.AppendFacts(w.AppendFacts(nil, events[:cut]), events[cut:])
		if !reflect.DeepEqual(got, facts) {
			t.Errorf("walked in two parts at %d: %v, want %v", cut, got, facts)
		}
	}
	if want := []string{"A>B", "B>A", "B>C"}; !reflect.DeepEqual(moves, want) {
		t.Errorf("moves %v, want %v", moves, want)
	}
	if want := []string{"n@", "g@C"}; !reflect.DeepEqual(issues, want) {
		t.Errorf("issues %v, want %v", issues, want)
	}
	g := NewJourneyGraph()
	g.AddSessionWalk(events, KeepWalkEvent(4, 100, nil), "")
	j := g.Graph(true)
	if len(j.Links) != 2 || j.TotalIssues != 1 {
		t.Errorf("window [4, 100): %+v", j)
	}
	var w Walk
	for i := 0; i < MaxWalkEdges+10; i++ {
		w.Step(string(rune(0x4e00 + i)))
	}
	if len(w.Edges) != MaxWalkEdges {
		t.Errorf("walk keeps %d edges", len(w.Edges))
	}
}

// TestJourneyFactCount: a summed fact (N set, as ClickHouse's rollups pass) counts N in both
// journey builders, a single one (N 0) counts one.
func TestJourneyFactCount(t *testing.T) {
	move := func(n uint64) JourneyFact {
		return JourneyFact{From: "A", Event: WalkEvent{Timestamp: 10, Screen: "B"}, N: n, Last: 20}
	}
	crash := func(n uint64) JourneyFact {
		return JourneyFact{From: "B", Event: WalkEvent{Timestamp: 10, GroupID: "g", Class: ClassCrash, Title: "t"}, N: n, Last: 30}
	}
	for _, c := range []struct {
		facts        []JourneyFact
		links, crash uint64
	}{
		{[]JourneyFact{move(0), crash(0)}, 1, 1},
		{[]JourneyFact{move(3), crash(5)}, 3, 5},
		{[]JourneyFact{move(3), move(0), crash(2), crash(0)}, 4, 3},
	} {
		g, jc := NewJourneyGraph(), NewJourneyCounts(2, 2)
		for i := range c.facts {
			g.AddFact(&c.facts[i])
			jc.AddFact(&c.facts[i])
		}
		for name, j := range map[string]JourneyJSON{"JourneyGraph": g.Graph(false), "JourneyCounts": jc.Graph(false)} {
			var links uint64
			for _, l := range j.Links {
				links += l.Value
			}
			if links != c.links || j.TotalIssues != c.crash {
				t.Errorf("%s of %d facts: %d moves, %d issues; want %d, %d", name, len(c.facts), links, j.TotalIssues, c.links, c.crash)
			}
		}
	}
	if f := move(0); f.Count() != 1 || f.LastTime() != 10 {
		t.Errorf("a single fact: Count %d, LastTime %d; want 1, 10", f.Count(), f.LastTime())
	}
	if f := move(3); f.Count() != 3 || f.LastTime() != 20 {
		t.Errorf("a summed fact: Count %d, LastTime %d; want 3, 20", f.Count(), f.LastTime())
	}
}

// TestMergeGroupsOneCellEach: cells already one per group (a live answer's) are the rows as
// they are, in the list's order, and agree with the same groups' cells merged here.
func TestMergeGroupsOneCellEach(t *testing.T) {
	id := func(b byte) uuid.UUID { return uuid.UUID{15: b} }
	cells := []IssueCell{
		{GroupID: "z", Class: ClassCrash, Count: 0, LastTime: 50, LastID: id(9)}, // no events: no row
		{GroupID: "b", Class: ClassCrash, Count: 2, FirstTime: 1, LastTime: 9, LastID: id(2), Last: IssueDisplay{Type: "B"}},
		{GroupID: "a", Class: ClassANR, Count: 2, FirstTime: 3, LastTime: 9, LastID: id(1), Last: IssueDisplay{Type: "A"}},
		{GroupID: "c", Class: ClassCrash, Count: 5, FirstTime: 2, LastTime: 4, LastID: id(3), Last: IssueDisplay{Type: "C"}},
		{GroupID: "d", Class: ClassHandled, Count: 2, FirstTime: 0, LastTime: 10, LastID: id(4), Last: IssueDisplay{Type: "D"}},
	}
	want := []GroupRow{
		{ID: "c", Count: 5, Percentage: 45.45, FirstTime: 2, LastTime: 4, LastID: id(3), Last: IssueDisplay{Type: "C"}, LastClass: ClassCrash},
		{ID: "d", Count: 2, Percentage: 18.18, FirstTime: 0, LastTime: 10, LastID: id(4), Last: IssueDisplay{Type: "D"}, LastClass: ClassHandled},
		{ID: "a", Count: 2, Percentage: 18.18, FirstTime: 3, LastTime: 9, LastID: id(1), Last: IssueDisplay{Type: "A"}, LastClass: ClassANR},
		{ID: "b", Count: 2, Percentage: 18.18, FirstTime: 1, LastTime: 9, LastID: id(2), Last: IssueDisplay{Type: "B"}, LastClass: ClassCrash},
	}
	if got := MergeGroups(cells); !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	if got := MergeGroups(cells[:1]); got != nil {
		t.Fatalf("a cell without events gives %+v", got)
	}

	// Random cells of a few groups, against the same cells merged per group first.
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var raw []IssueCell
		for range rng.IntN(40) {
			raw = append(raw, IssueCell{GroupID: fmt.Sprintf("g%d", rng.IntN(8)), Class: IssueClass(rng.IntN(4)),
				Count: uint64(rng.IntN(3)), FirstTime: int64(rng.IntN(10)), LastTime: int64(rng.IntN(10)),
				LastID: id(byte(rng.IntN(4))), Last: IssueDisplay{Type: fmt.Sprint(rng.IntN(100))}})
		}
		var perGroup []IssueCell
		at := map[string]int{}
		for i := range raw {
			j, ok := at[raw[i].GroupID]
			if !ok {
				j = len(perGroup)
				at[raw[i].GroupID] = j
				perGroup = append(perGroup, IssueCell{GroupID: raw[i].GroupID})
			}
			perGroup[j].Merge(&raw[i])
		}
		if got, want := MergeGroups(perGroup), MergeGroups(raw); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: merged per group first\n%+v\nfrom the cells\n%+v", round, got, want)
		}
	}
}

// TestIsMove: isMove(k, from, to) is k == MoveKey(from, to), screen names holding the separator
// included; Walk.Step counts a move once by it.
func TestIsMove(t *testing.T) {
	keys := []string{"", "\x00", "A\x00B", "A\x00B\x00C", "AB\x00", "\x00AB", "A\x00", "Ä\x00B"}
	pairs := [][2]string{{"", ""}, {"A", "B"}, {"A\x00B", "C"}, {"A", "B\x00C"}, {"AB", ""}, {"", "AB"},
		{"A", ""}, {"A", "BC"}, {"AB", "C"}, {"Ä", "B"}, {"A", "b"}}
	for _, k := range keys {
		for _, p := range pairs {
			if got, want := isMove(k, p[0], p[1]), k == MoveKey(p[0], p[1]); got != want {
				t.Errorf("isMove(%q, %q, %q) = %v, want %v", k, p[0], p[1], got, want)
			}
		}
	}
	var w Walk
	var firsts []string
	for _, s := range []string{"A", "B", "A", "B", "C", "A", "B"} {
		if from, first := w.Step(s); first {
			firsts = append(firsts, from+">"+s)
		}
	}
	if want := []string{"A>B", "B>A", "B>C", "C>A"}; !reflect.DeepEqual(firsts, want) {
		t.Errorf("first moves %v, want %v", firsts, want)
	}
}
