package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Apps' extra SDK settings (sinks.SDKConfigExtras) in the table sdk_config_extras (migration
// 00006), and the removal of a team's chat app (sinks.ChatAppDeleter).

var (
	_ sinks.SDKConfigExtras = (*Store)(nil)
	_ sinks.ChatAppDeleter  = (*Store)(nil)
)

// SDKConfigExtra reads the app's row; see sinks.SDKConfigExtras.
func (s *Store) SDKConfigExtra(ctx context.Context, appID uuid.UUID) (model.SDKConfigExtra, time.Time, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var (
		e   model.SDKConfigExtra
		sev int16
		at  time.Time
	)
	err := s.pool.QueryRow(ctx,
		`SELECT http_sampling_rate, profile_sampling_rate, log_autocollect_enabled, log_min_severity, log_ignore_patterns, updated_at
		 FROM sdk_config_extras WHERE app_id = $1`, appID).
		Scan(&e.HTTPSamplingRate, &e.ProfileSamplingRate, &e.LogAutocollectEnabled, &sev, &e.LogIgnorePatterns, &at)
	if err != nil {
		return model.SDKConfigExtra{}, time.Time{}, fail("SDK config extra settings of app "+appID.String(), err)
	}
	e.LogMinSeverity = int(sev)
	if e.LogIgnorePatterns == nil {
		e.LogIgnorePatterns = []string{}
	}
	return e, at.UTC(), nil
}

// SetSDKConfigExtra upserts the app's row; the foreign key makes an unknown app ErrNotFound.
func (s *Store) SetSDKConfigExtra(ctx context.Context, appID uuid.UUID, e model.SDKConfigExtra, at time.Time) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckSDKConfigExtra(&e); err != nil {
		return err
	}
	_, err := exec(ctx, s.pool, "set SDK config extra settings of app "+appID.String(),
		`INSERT INTO sdk_config_extras (app_id, http_sampling_rate, profile_sampling_rate, log_autocollect_enabled, log_min_severity,
		     log_ignore_patterns, updated_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)
		 ON CONFLICT (app_id) DO UPDATE SET http_sampling_rate = EXCLUDED.http_sampling_rate,
		     profile_sampling_rate = EXCLUDED.profile_sampling_rate, log_autocollect_enabled = EXCLUDED.log_autocollect_enabled,
		     log_min_severity = EXCLUDED.log_min_severity, log_ignore_patterns = EXCLUDED.log_ignore_patterns,
		     updated_at = EXCLUDED.updated_at`,
		appID, e.HTTPSamplingRate, e.ProfileSamplingRate, e.LogAutocollectEnabled, int16(e.LogMinSeverity), e.LogIgnorePatterns, at)
	return err
}

// DeleteChatApp deletes the team's row; see sinks.ChatAppDeleter.
func (s *Store) DeleteChatApp(ctx context.Context, teamID uuid.UUID) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "delete chat app of team " + teamID.String()
	n, err := exec(ctx, s.pool, what, `DELETE FROM chat_apps WHERE team_id = $1`, teamID)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound(what)
	}
	return nil
}
