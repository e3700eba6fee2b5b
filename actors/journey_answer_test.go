package actors

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
)

// TestJourneyAnswer checks the dashboard's live journey bytes against the graph path it
// replaced: JourneyOf, Graph and encoding/json, for replies of every shape, both bigraph ways.
func TestJourneyAnswer(t *testing.T) {
	crash, anr := uint32(model.ClassCrash), uint32(model.ClassANR)
	replies := map[string]*actorpb.LiveReply{
		"empty":    {Ok: true},
		"one link": {Ok: true, Links: []*actorpb.JourneyLink{{From: "Home", To: "List", Sessions: 1}}},
		"one node": {Ok: true, Issues: []*actorpb.JourneyIssueCount{{Screen: "Home", GroupId: "g", Class: crash, Title: "E@F.kt", Count: 1}}},
		"ties": {Ok: true, Links: []*actorpb.JourneyLink{{From: "B", To: "A", Sessions: 2}, {From: "A", To: "B", Sessions: 2},
			{From: "C", To: "A", Sessions: 2}, {From: "A", To: "C", Sessions: 1}, {From: "C", To: "B", Sessions: 2}},
			Issues: []*actorpb.JourneyIssueCount{{Screen: "A", GroupId: "g2", Class: crash, Count: 3}, {Screen: "A", GroupId: "g1", Class: crash, Count: 3},
				{Screen: "A", GroupId: "g3", Class: anr, Count: 3}, {Screen: "", GroupId: "g4", Class: anr, Count: 5},
				{Screen: "B", GroupId: "g5", Class: uint32(model.ClassHandled), Count: 5}}},
		"escapes": {Ok: true, Links: []*actorpb.JourneyLink{{From: `<a href="x">`, To: "back\\slash\n\t\x01", Sessions: 4},
			{From: "\u2028caf\xe9", To: "&amp;", Sessions: 4}, {From: "&amp;", To: "\u2028caf\xe9", Sessions: 4}},
			Issues: []*actorpb.JourneyIssueCount{{Screen: "&amp;", GroupId: "\"id\"", Class: crash, Title: "java.lang.Error@<init>\u2029\xff", Count: 2}}},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 30 {
		r := &actorpb.LiveReply{Ok: true}
		screens := 1 + rng.IntN(30)
		for range rng.IntN(300) {
			r.Links = append(r.Links, &actorpb.JourneyLink{From: fmt.Sprintf("Screen<%d>", rng.IntN(screens)),
				To: fmt.Sprintf("Screen<%d>", rng.IntN(screens)), Sessions: uint64(rng.IntN(4))})
		}
		for range rng.IntN(40) {
			r.Issues = append(r.Issues, &actorpb.JourneyIssueCount{Screen: fmt.Sprintf("Screen<%d>", rng.IntN(screens+1)-1)[:rng.IntN(2)*9],
				GroupId: fmt.Sprintf("%032x", rng.IntN(5)), Class: uint32(rng.IntN(4)), Title: fmt.Sprintf("T%d@\"F\".kt", rng.IntN(3)), Count: uint64(rng.IntN(3))})
		}
		replies[fmt.Sprintf("random %d", i)] = r
	}
	for name, r := range replies {
		for _, bigraph := range []bool{true, false} {
			want, err := json.Marshal(JourneyOf(r).Graph(bigraph))
			if err != nil {
				t.Fatal(err)
			}
			if got := JourneyAnswer(r, bigraph).AppendJSON(nil); string(got) != string(want) {
				t.Errorf("%s, bigraph %v:\n got %s\nwant %s", name, bigraph, got, want)
			}
		}
	}
}

// JourneyOf is the reference TestJourneyAnswer holds JourneyAnswer to: the reply's links and
// issues added to a model.JourneyGraph.
func JourneyOf(r *actorpb.LiveReply) *model.JourneyGraph {
	g := model.NewJourneyGraph()
	for _, l := range r.Links {
		g.AddTransitions(l.From, l.To, l.Sessions)
	}
	for _, is := range r.Issues {
		g.AddIssues(is.Screen, model.JourneyKind(model.IssueClass(is.Class)), is.GroupId, is.Title, is.Count)
	}
	return g
}
