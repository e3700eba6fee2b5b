package gate_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/gate"
	"github.com/svc-dev/svc/sinks/gate/gatetest"
)

// openLocal returns a Local over a fresh in-memory Badger, closed when the test ends.
func openLocal(t testing.TB) *gate.Local {
	t.Helper()
	db, err := badgerdb.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	g := gate.New(db, 0)
	t.Cleanup(func() { _ = g.Close() }) // before the DB's (cleanups run last first)
	return g
}

// diskGate opens the Badger in dir and a Local over it; both are closed when the test ends
// unless the caller closed them first (Close is safe twice).
func diskGate(t *testing.T, dir string) (*badger.DB, *gate.Local) {
	t.Helper()
	db, err := badgerdb.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := gate.New(db, 0)
	t.Cleanup(func() { _ = g.Close(); _ = db.Close() })
	return db, g
}

func TestConformance(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		gatetest.Run(t, func(t *testing.T) gate.Store { return openLocal(t) })
	})
}

// TestLocalReopen: accepted ids survive a restart of the node; in-progress ids do not (they
// were in memory, and the requests holding them died with the process).
func TestLocalReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, g := diskGate(t, dir)
	app, accepted, held := uuid.New(), uuid.New(), uuid.New()
	for _, req := range []uuid.UUID{accepted, held} {
		if s, _, err := g.Begin(ctx, app, req); err != nil || s != gate.Unseen {
			t.Fatalf("Begin: %v %v, want Unseen", s, err)
		}
	}
	if err := g.Accept(ctx, app, accepted, []byte("info")); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil { // the background write of the id ends first
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, g = diskGate(t, dir)
	if s, info, err := g.Begin(ctx, app, accepted); err != nil || s != gate.Accepted || string(info) != "info" {
		t.Fatalf("accepted id after reopen: %v %q %v, want Accepted \"info\"", s, info, err)
	}
	if s, _, err := g.Begin(ctx, app, held); err != nil || s != gate.Unseen {
		t.Fatalf("in-progress id after reopen: %v %v, want Unseen", s, err)
	}
}

// TestLocalAcceptsAtOnceAndWritesBehind: ids accepted by many requests at once are Accepted for
// Begin as soon as Accept returns, and every one is in Badger once Close has returned; after
// Close, Accept writes its id itself.
func TestLocalAcceptsAtOnceAndWritesBehind(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, g := diskGate(t, dir)
	app := uuid.New()
	const n = 2000
	ids := make([]uuid.UUID, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				ids[i] = uuid.New()
				if s, _, err := g.Begin(ctx, app, ids[i]); err != nil || s != gate.Unseen {
					errs <- fmt.Errorf("Begin %d: %v %v", i, s, err)
					return
				}
				info := []byte(strconv.Itoa(i))
				if err := g.Accept(ctx, app, ids[i], info); err != nil {
					errs <- err
					return
				}
				info[0] = 'x' // the caller's buffer may be reused
				if s, got, err := g.Begin(ctx, app, ids[i]); err != nil || s != gate.Accepted || string(got) != strconv.Itoa(i) {
					errs <- fmt.Errorf("Begin %d right after Accept: %v %q %v", i, s, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	late := uuid.New()
	if err := g.Accept(ctx, app, late, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, g = diskGate(t, dir)
	for i, id := range append(ids, late) {
		want := "late"
		if i < n {
			want = strconv.Itoa(i)
		}
		if s, info, err := g.Begin(ctx, app, id); err != nil || s != gate.Accepted || string(info) != want {
			t.Fatalf("id %d after reopen: %v %q %v, want Accepted %q", i, s, info, err, want)
		}
	}
}

// TestLocalSync: once Sync returns, every id accepted before it is in Badger, as another
// reader of the database (a Local with nothing in memory, started after Sync: a Local knows
// only the ids present when it started and those it wrote) finds.
func TestLocalSync(t *testing.T) {
	ctx := context.Background()
	db, g := diskGate(t, t.TempDir())
	app := uuid.New()
	g.Sync() // nothing waits: returns at once
	for round := range 20 {
		ids := make([]uuid.UUID, 200)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(ids); i += 4 {
					ids[i] = uuid.New()
					if _, _, err := g.Begin(ctx, app, ids[i]); err != nil {
						t.Error(err)
						return
					}
					if err := g.Accept(ctx, app, ids[i], []byte("i")); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		g.Sync()
		reader := gate.New(db, 0)
		t.Cleanup(func() { _ = reader.Close() }) // before the database's, after a Fatal too
		for i, id := range ids {
			if s, _, err := reader.Begin(ctx, app, id); err != nil || s != gate.Accepted {
				t.Fatalf("round %d: id %d not in Badger after Sync: %v %v", round, i, s, err)
			}
		}
		reader.Close()
	}
}

// BenchmarkLocalBeginUnderWrites times Begin of new ids (each then accepted, as a request
// would) on a node's unsynced Badger while another writer commits 1 MiB batches to the same
// database without pause, as session snapshots and the gate's own writes do on a busy node:
// a Badger read first waits for the commits before it to be applied.
func BenchmarkLocalBeginUnderWrites(b *testing.B) {
	db, g := diskLocal(b)
	ctx, app := b.Context(), uuid.New()
	if _, _, err := g.Begin(ctx, app, uuid.New()); err != nil { // the filter's build, if any
		b.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	// The writer ends at stop, before the database closes, even after a Fatal.
	b.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		val := make([]byte, 16<<10)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = db.Update(func(txn *badger.Txn) error {
				for j := range 64 {
					if err := txn.Set(fmt.Appendf(nil, "zz/%d/%d", i%1000, j), val); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		req := uuid.New()
		t0 := time.Now()
		st, _, err := g.Begin(ctx, app, req)
		lat = append(lat, time.Since(t0))
		if err != nil || st != gate.Unseen {
			b.Fatal(st, err)
		}
		if err := g.Accept(ctx, app, req, []byte(`{"attachments":[]}`)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-µs")
}
