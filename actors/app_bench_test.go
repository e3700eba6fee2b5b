package actors

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
)

// benchLiveApp fills an app actor with a month of a busy app's aggregates: 500 groups in 3
// versions over 30 days (45k day cells), and journeys over 40 screens.
func benchLiveApp(b *testing.B) (*LocalDirectory, uuid.UUID, time.Time) {
	_, dir, _ := newDirB(b, time.Minute)
	app := uuid.New()
	day0 := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -30)
	rng := rand.New(rand.NewPCG(1, 2))
	versions := []*actorpb.Version{{Name: "1.0", Code: "1"}, {Name: "1.1", Code: "2"}, {Name: "2.0", Code: "3"}}
	for d := 0; d < 30; d++ {
		batch := &actorpb.SessionUpdate{}
		for g := 0; g < 500; g++ {
			for _, v := range versions {
				c := model.IssueCell{GroupID: fmt.Sprintf("%032x", g), Class: model.ClassCrash, Version: model.AppVersion{Name: v.Name, Code: v.Code},
					Bucket: day0.AddDate(0, 0, d).UnixNano(), Count: uint64(1 + rng.IntN(50)),
					LastTime: day0.AddDate(0, 0, d).Add(time.Duration(rng.IntN(86400)) * time.Second).UnixNano(), LastID: uuid.New(),
					Last: model.IssueDisplay{Type: "java.lang.IllegalStateException", Message: "boom", MethodName: "run", FileName: "Main.kt", LineNumber: 42, Severity: "fatal"}}
				batch.Cells = append(batch.Cells, CellProto(&c))
			}
		}
		dir.Tell(KindApp, app.String(), batch)
		upd := &actorpb.SessionUpdate{}
		for m := 0; m < 2000; m++ {
			from, to := rng.IntN(40), rng.IntN(40)
			upd.Moves = append(upd.Moves, &actorpb.JourneyMove{From: fmt.Sprintf("Screen%d", from), To: fmt.Sprintf("Screen%d", to),
				Timestamp: day0.AddDate(0, 0, d).Add(time.Minute).UnixNano(), Version: versions[m%3]})
		}
		dir.Tell(KindApp, app.String(), upd)
	}
	if _, err := dir.Request(context.Background(), KindApp, app.String(), &actorpb.StateRequest{}); err != nil {
		b.Fatal(err)
	}
	return dir, app, day0
}

// BenchmarkLiveGroupList is a live crash group list over the last 7 whole days: the actor round
// trip, the merge of 10.5k day cells into 1.5k, and MergeGroups in the caller.
func BenchmarkLiveGroupList(b *testing.B) {
	dir, app, day0 := benchLiveApp(b)
	live := Live{Dir: dir}
	q := &actorpb.LiveQuery{From: day0.AddDate(0, 0, 23).UnixNano(), To: day0.AddDate(0, 0, 30).UnixNano(), Classes: []uint32{uint32(model.ClassCrash)}}
	b.ResetTimer()
	for b.Loop() {
		r, err := live.Query(context.Background(), app, q)
		if err != nil || !r.Ok {
			b.Fatal(err, r.GetReason())
		}
		if rows := model.MergeGroups(CellsOf(r.Cells)); len(rows) != 500 {
			b.Fatalf("%d groups", len(rows))
		}
	}
}

// BenchmarkLiveJourney is a live journey over the last 7 whole days: the actor merges 21 day
// graphs and sends the JSON snapshot; the caller rebuilds the graph.
func BenchmarkLiveJourney(b *testing.B) {
	dir, app, day0 := benchLiveApp(b)
	live := Live{Dir: dir}
	q := &actorpb.LiveQuery{From: day0.AddDate(0, 0, 23).UnixNano(), To: day0.AddDate(0, 0, 30).UnixNano(), Journey: true}
	b.ResetTimer()
	for b.Loop() {
		r, err := live.Query(context.Background(), app, q)
		if err != nil || !r.Ok {
			b.Fatal(err, r.GetReason())
		}
		if j, err := JourneyAnswer(r, true); err != nil || len(j.Links) == 0 {
			b.Fatal("no links", err)
		}
	}
}
