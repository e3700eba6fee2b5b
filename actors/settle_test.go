package actors

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
)

// TestAppActorSettles: an app actor as a cluster runs it starts unready, rebuilds once its app
// is quiet (after the cluster flushed), and then answers live as the store does; a replay of a
// batch it counted changes nothing, one it never heard of sends it back to the store until it
// settles again.
func TestAppActorSettles(t *testing.T) {
	db, err := badgerdb.Open(t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var flushes atomic.Int32
	var rig *liveRig
	rig = newLiveRigWith(t, db, time.Minute, func(store *badgerevents.Store) Producer {
		return AppProducerSettling(store, quiet, nil, &Settle{Quiet: 150 * time.Millisecond, Flush: func(context.Context) error {
			flushes.Add(1)
			return rig.flusher()
		}})
	})
	app := uuid.New()
	day0 := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)
	batches, sessions := liveDataset(app, day0)
	for i, b := range batches {
		rig.in.Distribute(app, b, nil, uint64(i+1), 0, false)
	}
	from, to := day0.UnixNano(), day0.Add(72*time.Hour).UnixNano()
	live := func() ([]model.GroupRow, bool) {
		cells, ok := liveCells(t, rig.dir, app, &actorpb.LiveQuery{From: from, To: to})
		return model.MergeGroups(cells), ok
	}
	if _, ok := live(); ok {
		t.Fatal("a cluster app actor answered live before it settled")
	}
	waitLive := func(stage string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, ok := live(); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the app actor did not settle within 10 s", stage)
			}
			time.Sleep(20 * time.Millisecond)
		}
		stored, err := rig.store.IssueCells(context.Background(), &model.IssueQuery{EventFilter: model.EventFilter{App: app, From: from, To: to}}, model.Cells{})
		if err != nil {
			t.Fatal(err)
		}
		lg, _ := live()
		if sg := model.MergeGroups(stored); len(sg) == 0 || !reflect.DeepEqual(lg, sg) {
			t.Fatalf("%s:\nlive  %+v\nstore %+v", stage, lg, sg)
		}
		lj, ok := liveJourney(t, rig.dir, app, from, to)
		if sj := storeJourney(t, rig.store, app, from, to); !ok || !reflect.DeepEqual(lj, sj) {
			t.Fatalf("%s journey:\nlive  %+v\nstore %+v", stage, lj, sj)
		}
	}
	waitLive("first settling")
	if flushes.Load() == 0 {
		t.Fatal("settled without asking the cluster to flush")
	}

	// A batch it counted, replayed by its node after a restart: nothing changes.
	rig.in.Distribute(app, batches[0], nil, 1, 0, true)
	rig.settle(t, app, sessions)
	if _, ok := live(); !ok {
		t.Fatal("a replay of a counted batch made the actor unready")
	}

	// A batch it never heard of (its node died before telling it), replayed: the store gets
	// its rows, and the actor answers from the store until it has settled again.
	extra := []model.Event{{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "exception",
		Timestamp: day0.Add(time.Hour).UnixNano(), Payload: []byte(`{"handled":false,"exceptions":[{"type":"Late","message":"m","frames":[]}],"threads":[]}`)}}
	rig.in.Distribute(app, extra, nil, 99_999, 0, true)
	if _, ok := live(); ok {
		t.Fatal("a replay of a batch the actor never counted left it answering live")
	}
	waitLive("settling after an unknown replay")
}
