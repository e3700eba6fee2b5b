package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func (s *Store) ThresholdPrefs(ctx context.Context, appID uuid.UUID) (model.ThresholdPrefs, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var p model.ThresholdPrefs
	err := s.pool.QueryRow(ctx,
		`SELECT error_good_threshold, error_caution_threshold, error_spike_min_count_threshold, error_spike_min_rate_threshold
		 FROM threshold_prefs WHERE app_id = $1`, appID).
		Scan(&p.ErrorGoodThreshold, &p.ErrorCautionThreshold, &p.ErrorSpikeMinCountThreshold, &p.ErrorSpikeMinRateThreshold)
	if err != nil {
		return model.ThresholdPrefs{}, fail("thresholds of app "+appID.String(), err)
	}
	return p, nil
}

// SetThresholdPrefs upserts the app's row; the foreign key makes an unknown app ErrNotFound.
func (s *Store) SetThresholdPrefs(ctx context.Context, appID uuid.UUID, p model.ThresholdPrefs, at time.Time) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckThresholds(p); err != nil {
		return err
	}
	_, err := exec(ctx, s.pool, "set thresholds of app "+appID.String(),
		`INSERT INTO threshold_prefs (app_id, error_good_threshold, error_caution_threshold, error_spike_min_count_threshold,
		     error_spike_min_rate_threshold, updated_at)
		 VALUES ($1, $2, $3, $4, $5, $6)
		 ON CONFLICT (app_id) DO UPDATE SET error_good_threshold = EXCLUDED.error_good_threshold,
		     error_caution_threshold = EXCLUDED.error_caution_threshold,
		     error_spike_min_count_threshold = EXCLUDED.error_spike_min_count_threshold,
		     error_spike_min_rate_threshold = EXCLUDED.error_spike_min_rate_threshold, updated_at = EXCLUDED.updated_at`,
		appID, p.ErrorGoodThreshold, p.ErrorCautionThreshold, p.ErrorSpikeMinCountThreshold, p.ErrorSpikeMinRateThreshold, at)
	return err
}

// PutShortFilter inserts unless the code is stored; then it compares the stored filters, which
// never change once inserted, so concurrent puts need no lock.
func (s *Store) PutShortFilter(ctx context.Context, f model.ShortFilter) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckShortFilter(f); err != nil {
		return err
	}
	what := "short filter " + f.Code + " of app " + f.AppID.String()
	n, err := exec(ctx, s.pool, "put "+what,
		`INSERT INTO short_filters (app_id, code, filters, created_at) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (app_id, code) DO NOTHING`,
		f.AppID, f.Code, json.RawMessage(f.Filters), f.CreatedAt)
	if err != nil || n == 1 {
		return err
	}
	var stored []byte
	if err := s.pool.QueryRow(ctx, `SELECT filters FROM short_filters WHERE app_id = $1 AND code = $2`, f.AppID, f.Code).Scan(&stored); err != nil {
		return fail(what, err)
	}
	if !bytes.Equal(stored, f.Filters) {
		return fmt.Errorf("postgres: %s stands for other filters: %w", what, sinks.ErrConflict)
	}
	return nil
}

// ShortFilter answers ErrNotFound for a code of the wrong form: no such code can be stored.
func (s *Store) ShortFilter(ctx context.Context, appID uuid.UUID, code string) (model.ShortFilter, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "short filter " + code + " of app " + appID.String()
	if !sinks.ValidShortFilterCode(code) {
		return model.ShortFilter{}, notFound(what)
	}
	var f model.ShortFilter
	err := s.pool.QueryRow(ctx, `SELECT app_id, code, filters, created_at FROM short_filters WHERE app_id = $1 AND code = $2`, appID, code).
		Scan(&f.AppID, &f.Code, &f.Filters, &f.CreatedAt)
	if err != nil {
		return model.ShortFilter{}, fail(what, err)
	}
	f.CreatedAt = f.CreatedAt.UTC()
	return f, nil
}

func (s *Store) ChatApp(ctx context.Context, teamID uuid.UUID) (model.ChatApp, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var c model.ChatApp
	err := s.pool.QueryRow(ctx, `SELECT team_id, webhook_url, enabled, updated_at FROM chat_apps WHERE team_id = $1`, teamID).
		Scan(&c.TeamID, &c.WebhookURL, &c.Enabled, &c.UpdatedAt)
	if err != nil {
		return model.ChatApp{}, fail("chat app of team "+teamID.String(), err)
	}
	c.UpdatedAt = c.UpdatedAt.UTC()
	return c, nil
}

// SetChatApp upserts the team's row; the foreign key makes an unknown team ErrNotFound.
func (s *Store) SetChatApp(ctx context.Context, c model.ChatApp) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckWebhook(c.WebhookURL); err != nil {
		return err
	}
	_, err := exec(ctx, s.pool, "set chat app of team "+c.TeamID.String(),
		`INSERT INTO chat_apps (team_id, webhook_url, enabled, updated_at) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (team_id) DO UPDATE SET webhook_url = EXCLUDED.webhook_url, enabled = EXCLUDED.enabled,
		     updated_at = EXCLUDED.updated_at`,
		c.TeamID, c.WebhookURL, c.Enabled, c.UpdatedAt)
	return err
}
