package actors

import (
	"encoding/json"
	"errors"
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
	type link struct {
		from, to string
		n        uint64
	}
	type issue struct {
		screen, group string
		class         uint32
		title         string
		n             uint64
	}
	reply := func(links []link, issues []issue) *actorpb.LiveReply {
		p := JourneyPack{Reply: &actorpb.LiveReply{Ok: true}}
		for _, l := range links {
			p.Link(l.from, l.to, l.n)
		}
		for _, is := range issues {
			p.Issue(is.screen, is.group, is.class, is.title, is.n)
		}
		return p.Reply
	}
	replies := map[string]*actorpb.LiveReply{
		"empty":    reply(nil, nil),
		"one link": reply([]link{{"Home", "List", 1}}, nil),
		"one node": reply(nil, []issue{{"Home", "g", crash, "E@F.kt", 1}}),
		"ties": reply([]link{{"B", "A", 2}, {"A", "B", 2}, {"C", "A", 2}, {"A", "C", 1}, {"C", "B", 2}},
			[]issue{{"A", "g2", crash, "", 3}, {"A", "g1", crash, "", 3}, {"A", "g3", anr, "", 3}, {"", "g4", anr, "", 5},
				{"B", "g5", uint32(model.ClassHandled), "", 5}}),
		"escapes": reply([]link{{`<a href="x">`, "back\\slash\n\t\x01", 4}, {"\u2028caf\xe9", "&amp;", 4}, {"&amp;", "\u2028caf\xe9", 4}},
			[]issue{{"&amp;", "\"id\"", crash, "java.lang.Error@<init>\u2029\xff", 2}}),
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 30 {
		var links []link
		var issues []issue
		screens := 1 + rng.IntN(30)
		for range rng.IntN(300) {
			links = append(links, link{fmt.Sprintf("Screen<%d>", rng.IntN(screens)), fmt.Sprintf("Screen<%d>", rng.IntN(screens)), uint64(rng.IntN(4))})
		}
		for range rng.IntN(40) {
			issues = append(issues, issue{fmt.Sprintf("Screen<%d>", rng.IntN(screens+1)-1)[:rng.IntN(2)*9],
				fmt.Sprintf("%032x", rng.IntN(5)), uint32(rng.IntN(4)), fmt.Sprintf("T%d@\"F\".kt", rng.IntN(3)), uint64(rng.IntN(3))})
		}
		replies[fmt.Sprintf("random %d", i)] = reply(links, issues)
	}
	for name, r := range replies {
		for _, bigraph := range []bool{true, false} {
			want, err := json.Marshal(JourneyOf(r).Graph(bigraph))
			if err != nil {
				t.Fatal(err)
			}
			j, err := JourneyAnswer(r, bigraph)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := j.AppendJSON(nil); string(got) != string(want) {
				t.Errorf("%s, bigraph %v:\n got %s\nwant %s", name, bigraph, got, want)
			}
		}
	}
}

// TestJourneyReplyMalformed checks that a reply whose packed arrays do not hold together is
// refused rather than read past its ends.
func TestJourneyReplyMalformed(t *testing.T) {
	good := func() *actorpb.LiveReply {
		p := JourneyPack{Reply: &actorpb.LiveReply{Ok: true}}
		p.Link("A", "B", 2)
		p.Issue("B", "g", uint32(model.ClassCrash), "T", 1)
		return p.Reply
	}
	cases := map[string]func(r *actorpb.LiveReply){
		"link from past the screens":  func(r *actorpb.LiveReply) { r.LinkFrom[0] = 2 },
		"link to past the screens":    func(r *actorpb.LiveReply) { r.LinkTo[0] = 7 },
		"issue past the screens":      func(r *actorpb.LiveReply) { r.IssueScreen[0] = 2 },
		"a link without its to":       func(r *actorpb.LiveReply) { r.LinkTo = nil },
		"a link without its from":     func(r *actorpb.LiveReply) { r.LinkFrom = append(r.LinkFrom, 0) },
		"sessions without a link":     func(r *actorpb.LiveReply) { r.LinkSessions = append(r.LinkSessions, 1) },
		"an issue without its class":  func(r *actorpb.LiveReply) { r.IssueClass = nil },
		"an issue without its group":  func(r *actorpb.LiveReply) { r.IssueGroup = nil },
		"an issue without its title":  func(r *actorpb.LiveReply) { r.IssueTitle = append(r.IssueTitle, "x") },
		"an issue without its count":  func(r *actorpb.LiveReply) { r.IssueCount = nil },
		"an issue without its screen": func(r *actorpb.LiveReply) { r.IssueScreen = nil },
		"no screens":                  func(r *actorpb.LiveReply) { r.Screens = nil },
		// A reply of a node before the packed journey: its links as messages (field 4: from
		// "A", to "B", 2 sessions), which this node keeps as unknown bytes.
		"links of an older node": func(r *actorpb.LiveReply) {
			*r = actorpb.LiveReply{Ok: true}
			r.ProtoReflect().SetUnknown([]byte{0x22, 0x08, 0x0a, 0x01, 'A', 0x12, 0x01, 'B', 0x18, 0x02})
		},
	}
	if _, err := JourneyAnswer(good(), true); err != nil {
		t.Fatalf("the good reply: %v", err)
	}
	for name, spoil := range cases {
		r := good()
		spoil(r)
		if _, err := JourneyAnswer(r, true); !errors.Is(err, errJourneyReply) {
			t.Errorf("%s: got %v, want a malformed reply", name, err)
		}
	}
}

// JourneyOf is the reference TestJourneyAnswer holds JourneyAnswer to: the reply's links and
// issues added to a model.JourneyGraph.
func JourneyOf(r *actorpb.LiveReply) *model.JourneyGraph {
	g := model.NewJourneyGraph()
	for i, n := range r.LinkSessions {
		g.AddTransitions(r.Screens[r.LinkFrom[i]], r.Screens[r.LinkTo[i]], n)
	}
	for i, n := range r.IssueCount {
		g.AddIssues(r.Screens[r.IssueScreen[i]], model.JourneyKind(model.IssueClass(r.IssueClass[i])), r.IssueGroup[i], r.IssueTitle[i], n)
	}
	return g
}
