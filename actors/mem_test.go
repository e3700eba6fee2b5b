package actors

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/model/corpus"
)

// BenchmarkSessionActorMemory measures the heap one live session actor costs (issue 4 target:
// 100k session actors in < 512 MB): it activates n actors, each with one batch of two events
// (one a screen), and reports the heap growth per actor.
func BenchmarkSessionActorMemory(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				_, dir, _ := newDirB(b, time.Hour)
				app := uuid.New()
				var before, after runtime.MemStats
				sessions := make([]uuid.UUID, n)
				for j := range sessions {
					sessions[j] = uuid.New()
				}
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				for _, s := range sessions {
					dir.Tell(KindSession, SessionIdentity(app, s), &actorpb.SessionEvents{AppId: app[:], Events: []*actorpb.SessionEvent{
						{Timestamp: 1, Type: "session_start"}, {Timestamp: 2, Type: "lifecycle_activity", Screen: "MainActivity"}}})
				}
				drainActors(b, dir, app, sessions)
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-bytes/actor")
			}
		})
	}
}

// BenchmarkSessionActorMemoryRecorded measures the heap a live session actor costs with
// sessions shaped like real SDK traffic: each of n sessions receives one recorded batch of
// testdata/sdk (round-robin, every event moved into the session) through Ingest.Distribute, as
// PUT /events hands it over; the batches themselves are dropped afterwards, so what remains is
// what the actors keep.
func BenchmarkSessionActorMemoryRecorded(b *testing.B) {
	dir, err := corpus.Dir()
	if err != nil {
		b.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "batch_*.json"))
	var bodies [][]byte
	for _, n := range names {
		body, err := os.ReadFile(n)
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	const n = 10_000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		sys, d, _ := newDirB(b, time.Hour)
		in := &Ingest{Dir: d, Root: sys.AS.Root, Flusher: sys.AS.Root.Spawn(noopFlusher())}
		app := uuid.New()
		var before, after runtime.MemStats
		sessions := make([]uuid.UUID, n)
		for j := range sessions {
			sessions[j] = uuid.New()
		}
		runtime.GC()
		runtime.ReadMemStats(&before)
		events := 0
		b.StartTimer()
		for j, session := range sessions {
			batch, err := model.DecodeBatch(bodies[j%len(bodies)], app, false)
			if err != nil {
				b.Fatal(err)
			}
			for k := range batch.Events {
				batch.Events[k].SessionID = session
				batch.Events[k].ID = uuid.New()
			}
			events += len(batch.Events)
			in.Distribute(app, batch.Events, nil, uint64(j+1), len(bodies[j%len(bodies)]), false)
		}
		drainActors(b, d, app, sessions)
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/actor")
		b.ReportMetric(float64(events)/n, "events/session")
	}
}

// drainActors returns once every session actor of sessions and then the app actor have handled
// what they were told before it: a state request queues behind a mailbox's earlier messages.
// The memory benchmarks measure what the actors keep, not the messages still waiting for them
// (a fixed wait of a second measured 2,300 to 3,700 bytes per actor, as the machine was busy).
func drainActors(tb testing.TB, dir *LocalDirectory, app uuid.UUID, sessions []uuid.UUID) {
	tb.Helper()
	for _, s := range sessions {
		if _, err := dir.Request(context.Background(), KindSession, SessionIdentity(app, s), &actorpb.StateRequest{}); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := dir.Request(context.Background(), KindApp, app.String(), &actorpb.StateRequest{}); err != nil {
		tb.Fatal(err)
	}
}
