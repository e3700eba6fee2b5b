package actors

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
)

// downStore is an event store that refuses every call while down is set.
type downStore struct {
	sinks.EventStore
	down   atomic.Bool
	writes atomic.Int32
}

var errDown = sinks.Unavailable(sinks.StoreEvents, errors.New("connection refused"))

func (s *downStore) WriteEvents(ctx context.Context, ev []model.Event) error {
	s.writes.Add(1)
	if s.down.Load() {
		return errDown
	}
	return s.EventStore.WriteEvents(ctx, ev)
}

func (s *downStore) Ping(ctx context.Context) error {
	if s.down.Load() {
		return errDown
	}
	return s.EventStore.Ping(ctx)
}

func newDownStore(t *testing.T) *downStore {
	db, err := badgerdb.Open("", quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &downStore{EventStore: badgerevents.New(db)}
}

func someEvents(n int) []model.Event {
	app := uuid.New()
	out := make([]model.Event, n)
	for i := range out {
		out[i] = model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "custom", Timestamp: int64(i + 1), Payload: []byte(`{}`)}
	}
	return out
}

// TestFlusherRecoversWithinAProbe: a flusher whose store was down for longer than any backoff
// would have grown writes everything it holds within a probe or two of the store's return.
func TestFlusherRecoversWithinAProbe(t *testing.T) {
	store := newDownStore(t)
	store.down.Store(true)
	sys := NewSystem(quiet)
	defer sys.Shutdown()
	acker := countingAcker{acked: make(chan uint64, 100)}
	pid := sys.AS.Root.Spawn(NewFlusher(store, acker, FlushOptions{MaxRows: 1000, Interval: 100 * time.Millisecond},
		NewFlushMetrics(prometheus.NewRegistry()), quiet))
	for seq := uint64(1); seq <= 5; seq++ {
		sys.AS.Root.Send(pid, &FlushItem{Events: someEvents(3), Seq: seq})
	}
	time.Sleep(3 * time.Second) // a doubling backoff from 100 ms would be at 1.6 s by now
	select {
	case s := <-acker.acked:
		t.Fatalf("acked %d while the store is down", s)
	default:
	}
	if store.writes.Load() > 3 {
		t.Errorf("%d writes to a store that does not answer pings: the flusher should probe, not write", store.writes.Load())
	}
	store.down.Store(false)
	back := time.Now()
	for seq := uint64(1); seq <= 5; seq++ {
		select {
		case <-acker.acked:
		case <-time.After(5 * time.Second):
			t.Fatalf("record %d not acknowledged 5 s after the store returned", seq)
		}
	}
	if d := time.Since(back); d > time.Second {
		t.Errorf("recovered %v after the store returned, want within a second", d)
	}
	t.Logf("recovered %v after the store returned", time.Since(back))
}

// TestFlusherFlushesByBytes: held batches reaching MaxBytes are written at once, long before
// the interval, so a small spool bound does not fill with rows waiting for it.
func TestFlusherFlushesByBytes(t *testing.T) {
	store := newDownStore(t)
	sys := NewSystem(quiet)
	defer sys.Shutdown()
	acker := countingAcker{acked: make(chan uint64, 100)}
	const interval = 10 * time.Second
	pid := sys.AS.Root.Spawn(NewFlusher(store, acker, FlushOptions{MaxRows: 1000, MaxBytes: 1000, Interval: interval},
		NewFlushMetrics(prometheus.NewRegistry()), quiet))
	sys.AS.Root.Send(pid, &FlushItem{Events: someEvents(1), Seq: 1, BodyLen: 600})
	sys.AS.Root.Send(pid, &FlushItem{Events: someEvents(1), Seq: 2, BodyLen: 600})
	for i := 0; i < 2; i++ {
		select {
		case <-acker.acked:
		case <-time.After(interval / 4):
			t.Fatal("batches over MaxBytes were not flushed at once")
		}
	}
}

// idleStore counts the Idle calls of an event store that keeps memory between writes.
type idleStore struct {
	sinks.EventStore
	idle atomic.Int32
}

func (s *idleStore) Idle() { s.idle.Add(1) }

// TestFlusherIdleReleasesStore: once the flusher has held nothing for IdleRelease after its last
// write, it tells a store that keeps memory between writes (sinks.Idler) to let it go, once; a
// new batch and its write start the wait again.
func TestFlusherIdleReleasesStore(t *testing.T) {
	store := &idleStore{EventStore: newDownStore(t).EventStore}
	sys := NewSystem(quiet)
	defer sys.Shutdown()
	acker := countingAcker{acked: make(chan uint64, 100)}
	const idle = 2 * time.Second // margins for a loaded 2-core machine, as the tests above
	pid := sys.AS.Root.Spawn(NewFlusher(store, acker, FlushOptions{Interval: 20 * time.Millisecond, IdleRelease: idle},
		NewFlushMetrics(prometheus.NewRegistry()), quiet))
	for seq := uint64(1); seq <= 2; seq++ {
		sys.AS.Root.Send(pid, &FlushItem{Events: someEvents(3), Seq: seq})
		select {
		case <-acker.acked:
		case <-time.After(5 * time.Second):
			t.Fatalf("batch %d was not flushed", seq)
		}
		if n := store.idle.Load(); n != int32(seq-1) {
			t.Fatalf("Idle called %d times right after write %d, want %d", n, seq, seq-1)
		}
		deadline := time.Now().Add(idle + 5*time.Second)
		for store.idle.Load() < int32(seq) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := store.idle.Load(); n != int32(seq) {
			t.Fatalf("Idle called %d times %v after write %d, want %d", n, idle+5*time.Second, seq, seq)
		}
	}
	time.Sleep(idle + time.Second) // more idle ticks: no further call
	if n := store.idle.Load(); n != 2 {
		t.Fatalf("Idle called %d times, want 2", n)
	}
}
