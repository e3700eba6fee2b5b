package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
	chstore "github.com/svc-dev/svc/sinks/clickhouse"
	"github.com/svc-dev/svc/sinks/eventstest"
)

// eventSink is a store the synthetic copies go into, opened while the node is stopped: the
// two stores differ only here.
type eventSink struct {
	name  string
	batch int // events per write
	write func(context.Context, []model.Event) error
	close func() error
}

// openBadgerSink opens the embedded node's event store in dataDir as the node does
// (badgerdb.OpenEvents of <data-dir>/badger-events, then badgerevents.Open: the bench's nodes start
// on fresh data directories, so events are never in the main database of the older layout).
// Badger allows one process per directory: the node must be stopped.
func openBadgerSink(ctx context.Context, dataDir string) (*eventSink, error) {
	db, err := badgerdb.OpenEvents(filepath.Join(dataDir, "badger-events"), quiet)
	if err != nil {
		return nil, fmt.Errorf("open the node's event database: %w", err)
	}
	st, err := badgerevents.Open(ctx, db)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open the node's event store: %w", err), db.Close())
	}
	closeAll := func() error { return errors.Join(st.Close(), db.Close()) } // the store first (its id filter's build)
	return &eventSink{name: "Badger", batch: 50_000, write: st.WriteEvents, close: closeAll}, nil
}

// clickHouseSink opens the ClickHouse database of dsn (the node's data directory plays no part).
func clickHouseSink(dsn string) func(context.Context, string) (*eventSink, error) {
	return func(ctx context.Context, _ string) (*eventSink, error) {
		st, err := chstore.Open(ctx, dsn)
		if err != nil {
			return nil, fmt.Errorf("open ClickHouse: %w", err)
		}
		return &eventSink{name: "ClickHouse", batch: 100_000, write: st.WriteEvents, close: st.Close}, nil
	}
}

// fillRun is what topping a store up took.
type fillRun struct {
	Store   string
	Copies  int64
	Wall    time.Duration // writing the copies
	Restart time.Duration // the node's start after it: spool replay and app aggregates rebuilt from the store
}

func (f *fillRun) rate() float64 {
	if f.Wall <= 0 {
		return 0
	}
	return float64(f.Copies) / f.Wall.Seconds()
}

// copyWriters is how many writes of synthetic copies run at once: a store insert waits on its
// sync or its server part of the time, and a second one uses that time (the node is stopped).
const copyWriters = 2

// writeCopies writes n synthetic copies of the corpus's events for app (eventstest.Copies, over
// the last 6 days; Facts derived at load) through write, in batches of batch events,
// copyWriters writes at once (each on a batch of its own). It returns the time the writes took.
func writeCopies(ctx context.Context, c *corpus, app uuid.UUID, n int64, batch int, write func(context.Context, []model.Event) error) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	full := make(chan []model.Event)
	free := make(chan []model.Event, copyWriters+1) // every batch there is: one being made, one per writer
	var written atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range copyWriters {
		wg.Add(1)
		go func() { // ends when full is closed or on the first failed write
			defer wg.Done()
			for b := range full {
				if err := write(ctx, b); err != nil {
					cancel(fmt.Errorf("write synthetic events (%d written): %w", written.Load(), err))
					return
				}
				w := written.Add(int64(len(b)))
				if w/1_000_000 != (w-int64(len(b)))/1_000_000 || w == n {
					fmt.Printf("  %s written, %.0f s (%s/s)\n", thousands(float64(w)), time.Since(start).Seconds(),
						thousands(float64(w)/time.Since(start).Seconds()))
				}
				free <- b[:0]
			}
		}()
	}

	bodies := make([][]model.Event, len(c.batches))
	for k := range c.batches {
		bodies[k] = c.batches[k].Events
	}
	// Six days: inside the default dashboard window, and so inside a 30-day one too.
	copies := eventstest.NewCopies(bodies, app, time.Now(), 6*24*time.Hour, rand.New(rand.NewChaCha8(seed())))
fill:
	for left := n; left > 0; {
		var buf []model.Event
		select {
		case buf = <-free:
		default:
			buf = make([]model.Event, 0, batch)
		}
		k := min(int64(batch), left)
		buf = copies.Append(buf, int(k))
		left -= k
		select {
		case full <- buf:
		case <-ctx.Done():
			break fill
		}
	}
	close(full)
	wg.Wait()
	return time.Since(start), context.Cause(ctx)
}

// fillStore tops node n's store up to want events for app (it holds have) with synthetic
// copies and returns the node serving afterwards. The node is stopped first, gracefully: the
// embedded store's Badger is held open by the node, and a restarted node rebuilds its app
// actors' live aggregates from the store, so the live answers count the copies too, as the ones
// from the store do. open gives the store's sink; extra is the node's store settings.
func fillStore(ctx context.Context, n *node, root, svcBin string, extra []string, corp *corpus, app uuid.UUID, have, want int64,
	open func(context.Context, string) (*eventSink, error)) (*node, *fillRun, error) {
	if err := n.stop(); err != nil {
		return nil, nil, err
	}
	sink, err := open(ctx, n.dataDir)
	if err != nil {
		return nil, nil, err
	}
	f := &fillRun{Store: sink.name, Copies: want - have}
	fmt.Printf("writing %s synthetic events into %s (node stopped)\n", thousands(float64(f.Copies)), sink.name)
	f.Wall, err = writeCopies(ctx, corp, app, f.Copies, sink.batch, sink.write)
	if cerr := sink.close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close %s: %w", sink.name, cerr))
	}
	if err != nil {
		return nil, nil, err
	}
	fmt.Printf("%s events in %.0f s (%s/s); starting the node again\n", thousands(float64(f.Copies)), f.Wall.Seconds(), thousands(f.rate()))
	t0 := time.Now()
	next, err := startNode(ctx, root, svcBin, n.dataDir, extra)
	if err != nil {
		return nil, nil, fmt.Errorf("restart after the fill: %w", err)
	}
	f.Restart = time.Since(t0)
	fmt.Printf("node on %s again after %.0f s (app aggregates rebuilt from the store)\n", next.addr, f.Restart.Seconds())
	return next, f, nil
}
