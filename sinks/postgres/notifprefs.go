package postgres

import (
	"context"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Users' notification preferences (sinks.NotifPrefs) in the table notif_prefs (migration 00007).

var _ sinks.NotifPrefs = (*Store)(nil)

// NotifPrefs reads the user's row; see sinks.NotifPrefs.
func (s *Store) NotifPrefs(ctx context.Context, userID uuid.UUID) (model.NotifPrefs, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var p model.NotifPrefs
	err := s.pool.QueryRow(ctx,
		`SELECT error_spike, app_hang_spike, bug_report, daily_summary, created_at, updated_at FROM notif_prefs WHERE user_id = $1`, userID).
		Scan(&p.ErrorSpike, &p.AppHangSpike, &p.BugReport, &p.DailySummary, &p.CreatedAt, &p.UpdatedAt)
	if err != nil {
		return model.NotifPrefs{}, fail("notification preferences of user "+userID.String(), err)
	}
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p, nil
}

// SetNotifPrefs upserts the user's row; the foreign key makes an unknown user ErrNotFound.
func (s *Store) SetNotifPrefs(ctx context.Context, userID uuid.UUID, p model.NotifPrefs) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckNotifPrefs(p); err != nil {
		return err
	}
	_, err := exec(ctx, s.pool, "set notification preferences of user "+userID.String(),
		`INSERT INTO notif_prefs (user_id, error_spike, app_hang_spike, bug_report, daily_summary, created_at, updated_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)
		 ON CONFLICT (user_id) DO UPDATE SET error_spike = EXCLUDED.error_spike, app_hang_spike = EXCLUDED.app_hang_spike,
		     bug_report = EXCLUDED.bug_report, daily_summary = EXCLUDED.daily_summary,
		     created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at`,
		userID, p.ErrorSpike, p.AppHangSpike, p.BugReport, p.DailySummary, p.CreatedAt, p.UpdatedAt)
	return err
}
