package actors

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
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
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				for j := 0; j < n; j++ {
					dir.Tell(KindSession, SessionIdentity(app, uuid.New()), &actorpb.SessionEvents{AppId: app[:], Events: []*actorpb.SessionEvent{
						{Timestamp: 1, Type: "session_start"}, {Timestamp: 2, Type: "lifecycle_activity", Screen: "MainActivity"}}})
				}
				for dir.Count(KindSession) < n {
					time.Sleep(5 * time.Millisecond)
				}
				b.StopTimer()
				time.Sleep(500 * time.Millisecond) // let mailboxes drain
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-bytes/actor")
			}
		})
	}
}
