package node

import (
	"context"
	"time"
)

// janitor runs the node's periodic jobs until ctx ends: it removes expired dashboard sessions
// and deletes each app's events and spans older than its retention. Both are idempotent, so
// several nodes may run them.
func (n *Node) janitor(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n.sweep(ctx)
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
		before := now.AddDate(0, 0, -app.RetentionDays)
		if err := n.Events.DeleteBefore(ctx, app.ID, before); err != nil {
			n.log.Warn("janitor: retention not applied", "app", app.ID.String(), "error", err.Error())
		}
	}
}
