package model

import (
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

func TestWalkSession(t *testing.T) {
	v := AppVersion{"1", "1"}
	ev := func(ts int64, screen string) WalkEvent { return WalkEvent{Timestamp: ts, Version: v, Screen: screen} }
	crash := WalkEvent{Timestamp: 9, Version: v, GroupID: "g", Class: ClassCrash, Title: "T@f"}
	handled := WalkEvent{Timestamp: 10, Version: v, GroupID: "h", Class: ClassHandled, Title: "H"}
	anrBefore := WalkEvent{Timestamp: 0, Version: v, GroupID: "n", Class: ClassANR, Title: "N"}
	events := []WalkEvent{anrBefore, ev(1, "A"), ev(2, "A"), ev(3, "B"), ev(4, "A"), ev(5, "B"), ev(6, "C"), crash, handled}
	var moves []string
	var issues []string
	WalkSession(events, func(from string, at *WalkEvent) {
		moves = append(moves, from+">"+at.Screen)
	}, func(screen string, at *WalkEvent) {
		issues = append(issues, at.GroupID+"@"+screen)
	})
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
