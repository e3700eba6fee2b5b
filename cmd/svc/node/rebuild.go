package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// replayFlushTimeout bounds how long start-up waits for the spool's replayed rows to reach the
// event store before it gives up on live answers for this run.
const replayFlushTimeout = 30 * time.Second

// rebuildApps gives every app's actor its aggregates from the event store before the node
// serves. When the spool was replayed, the replayed rows must be in the store first (the app
// actors ignore replayed batches so that nothing counts twice); if the store does not take them
// in time, the actors stay unready and every dashboard query goes to the store until the next
// start. New apps need nothing: their actors start empty and exact.
func (n *Node) rebuildApps(ctx context.Context, replayed, eventsUp bool, log *slog.Logger) error {
	ready := eventsUp
	if !eventsUp {
		// Nothing to wait for or read: the actors start unready and every dashboard query goes to
		// the store (503 until it answers).
		log.Warn("event store unavailable at start; live dashboard answers are off until the next start")
	} else if replayed {
		fctx, cancel := context.WithTimeout(ctx, replayFlushTimeout)
		err := n.flushNow(fctx)
		cancel()
		if err != nil {
			log.Warn("replayed rows not yet in the event store; live dashboard answers are off until the next start",
				"error", err.Error())
			ready = false
		}
	}
	apps, err := n.Meta.AllApps(ctx)
	if errors.Is(err, sinks.ErrUnavailable) {
		// The metadata store is down: start without knowing the apps. The actors the replay
		// started, and every one started later, are unready: their queries go to the store.
		log.Warn("metadata store unavailable at start; live dashboard answers are off until the next start",
			"error", err.Error())
		n.appsUnknown.Set()
		for _, id := range n.Dir.Active(actors.KindApp) {
			if _, err := n.Dir.Request(ctx, actors.KindApp, id, &actorpb.Rebuild{Ready: false}); err != nil {
				return fmt.Errorf("mark app %s unready: %w", id, err)
			}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("list apps to rebuild their aggregates: %w", err)
	}
	start := time.Now()
	for _, a := range apps {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		reply, err := n.Dir.Request(rctx, actors.KindApp, a.ID.String(), &actorpb.Rebuild{Ready: ready && n.Analytics != nil})
		cancel()
		if err != nil {
			return fmt.Errorf("rebuild app %s: %w", a.ID, err)
		}
		r, ok := reply.(*actorpb.RebuildReply)
		if !ok {
			return fmt.Errorf("rebuild app %s: unexpected reply %T", a.ID, reply)
		}
		if r.Error != "" {
			// The store answers every query still; only live answers are off for this app.
			log.Warn("app aggregates not rebuilt; its dashboard queries go to the store", "app", a.ID.String(), "error", r.Error)
		}
	}
	log.Info("app aggregates rebuilt", "apps", len(apps), "took", time.Since(start).String())
	return nil
}

// flushNow waits until the flusher holds nothing, retrying while the store refuses.
func (n *Node) flushNow(ctx context.Context) error {
	for {
		res, err := n.Actors.AS.Root.RequestFuture(n.flusher, actors.FlushNow{}, time.Until(deadline(ctx))).Result()
		if err != nil {
			return fmt.Errorf("flush replayed rows: %w", err)
		}
		r, _ := res.(actors.FlushNowReply)
		if r.Err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(r.Err, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}

// eventsDB opens the embedded event store's own database, or keeps using the main one when
// this data directory already holds events there (written before events had their own).
func (n *Node) eventsDB(dataDir string, log *slog.Logger) (*badger.DB, error) {
	for _, p := range []string{badgerdb.PrefixEvents, badgerdb.PrefixSpans} {
		old, err := badgerdb.HasPrefix(n.db, p)
		if err != nil {
			return nil, fmt.Errorf("check data directory layout: %w", err)
		}
		if old {
			log.Info("events stay in the main Badger database of this data directory (written before events had their own)")
			return n.db, nil
		}
	}
	db, err := badgerdb.OpenEvents(filepath.Join(dataDir, "badger-events"), log)
	if err != nil {
		return nil, err
	}
	n.closers = append(n.closers, db.Close)
	n.badgers = append(n.badgers, db)
	return db, nil
}
