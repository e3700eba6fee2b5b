package node

import (
	"context"
	"time"

	"github.com/svc-dev/svc/sinks/badgerdb"
)

// janitor runs the node's periodic jobs until ctx ends: it removes expired dashboard sessions,
// deletes each app's events and spans older than its retention, and frees the space that
// deleted and overwritten values hold in the node's Badger value logs. All are idempotent, so
// several nodes may run them.
func (n *Node) janitor(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for first := true; ; first = false {
		n.sweep(ctx)
		n.collectGarbage(ctx)
		if first {
			close(n.swept)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep is one round of the janitor's jobs.
func (n *Node) sweep(ctx context.Context) {
	now := time.Now().UTC()
	if k, err := n.Meta.DeleteExpiredAuthSessions(ctx, now); err != nil {
		n.log.Warn("janitor: expired sessions not removed", "error", err.Error())
	} else if k > 0 {
		n.log.Info("janitor: expired sessions removed", "sessions", k)
	}
	n.deleteExpiredShared(ctx)
	apps, err := n.Meta.AllApps(ctx)
	if err != nil {
		n.log.Warn("janitor: apps not listed; retention skipped", "error", err.Error())
		return
	}
	for _, app := range apps {
		if ctx.Err() != nil {
			return
		}
		// Cut at a UTC midnight: each app's old rows go once a day, not a sliver every round
		// (on ClickHouse each deletion is a mutation, and it sends the app's journey rollups
		// to be built again).
		before := now.AddDate(0, 0, -app.RetentionDays).Truncate(24 * time.Hour)
		if err := n.Events.DeleteBefore(ctx, app.ID, before); err != nil {
			n.log.Warn("janitor: retention not applied", "app", app.ID.String(), "error", err.Error())
		}
	}
}

// collectGarbage rewrites the value log files of the node's Badger databases that are mostly
// dropped values (badgerdb.CollectGarbage): retention's deletions, rewritten journey walks and
// snapshots. Without it a data directory would only grow.
func (n *Node) collectGarbage(ctx context.Context) {
	for _, db := range n.badgers {
		files, err := badgerdb.CollectGarbage(ctx, db)
		if err != nil && ctx.Err() == nil {
			n.log.Warn("janitor: value log not collected", "dir", db.Opts().Dir, "error", err.Error())
		}
		if files > 0 {
			n.log.Info("janitor: value log files rewritten", "dir", db.Opts().Dir, "files", files)
		}
	}
}
