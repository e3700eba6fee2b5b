package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

const appCols = `a.id, a.team_id, a.name, a.unique_id, a.platform, a.retention_days, a.created_at, a.updated_at,
	a.onboarded, a.onboarded_at, a.os_names`

func scanApp(row pgx.Row, extra ...any) (model.App, error) {
	var (
		a           model.App
		onboardedAt *time.Time
	)
	err := row.Scan(append([]any{&a.ID, &a.TeamID, &a.Name, &a.UniqueID, &a.Platform, &a.RetentionDays, &a.CreatedAt, &a.UpdatedAt,
		&a.Onboarded, &onboardedAt, &a.OSNames}, extra...)...)
	a.CreatedAt, a.UpdatedAt, a.OnboardedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC(), utcOrZero(onboardedAt)
	return a, err
}

const keyCols = `k.app_id, k.key, k.created_at, k.last_seen, k.revoked`

// keyDest holds the scan targets of keyCols.
type keyDest struct {
	k        model.APIKey
	lastSeen *time.Time
}

func (d *keyDest) targets() []any {
	return []any{&d.k.AppID, &d.k.Key, &d.k.CreatedAt, &d.lastSeen, &d.k.Revoked}
}

func (d *keyDest) key() model.APIKey {
	k := d.k
	k.CreatedAt, k.LastSeen = k.CreatedAt.UTC(), utcOrZero(d.lastSeen)
	return k
}

func insertKey(ctx context.Context, tx pgx.Tx, k model.APIKey) error {
	_, err := exec(ctx, tx, "store API key of app "+k.AppID.String(),
		`INSERT INTO api_keys (key, app_id, created_at, last_seen, revoked) VALUES ($1, $2, $3, $4, false)`,
		k.Key, k.AppID, k.CreatedAt, nullTime(k.LastSeen))
	return err
}

func (s *Store) CreateApp(ctx context.Context, a model.App, k model.APIKey) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckNewKey(k, a.ID); err != nil {
		return err
	}
	days, err := retention(a.RetentionDays, true)
	if err != nil {
		return err
	}
	return s.inTx(ctx, "create app", func(tx pgx.Tx) error {
		_, err := exec(ctx, tx, "create app "+a.ID.String()+" of team "+a.TeamID.String(),
			`INSERT INTO apps (id, team_id, name, unique_id, platform, retention_days, created_at, updated_at)
			 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			a.ID, a.TeamID, a.Name, a.UniqueID, a.Platform, days, a.CreatedAt, a.UpdatedAt)
		if err != nil {
			return err
		}
		return insertKey(ctx, tx, k)
	})
}

func (s *Store) App(ctx context.Context, id uuid.UUID) (model.App, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	a, err := scanApp(s.pool.QueryRow(ctx, `SELECT `+appCols+` FROM apps a WHERE a.id = $1`, id))
	if err != nil {
		return model.App{}, fail("app "+id.String(), err)
	}
	return a, nil
}

func (s *Store) AppsOfTeam(ctx context.Context, teamID uuid.UUID) ([]model.App, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "apps of team " + teamID.String()
	rows, err := s.pool.Query(ctx, `SELECT `+appCols+` FROM apps a WHERE a.team_id = $1 ORDER BY a.created_at, a.id`, teamID)
	if err != nil {
		return nil, fail(what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.App, error) { return scanApp(row) })
	if err != nil {
		return nil, fail(what, err)
	}
	if len(out) == 0 {
		ok, err := exists(ctx, s.pool, what, `SELECT 1 FROM teams WHERE id = $1`, teamID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, notFound("team " + teamID.String())
		}
	}
	return out, nil
}

// AllApps reads the whole table; background jobs call it rarely.
func (s *Store) AllApps(ctx context.Context) ([]model.App, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT `+appCols+` FROM apps a ORDER BY a.created_at, a.id`)
	if err != nil {
		return nil, fail("all apps", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.App, error) { return scanApp(row) })
	if err != nil {
		return nil, fail("all apps", err)
	}
	return out, nil
}

func (s *Store) UpdateApp(ctx context.Context, a model.App) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	defer s.accessChanged("a" + a.ID.String())
	days, err := retention(a.RetentionDays, false)
	if err != nil {
		return err
	}
	n, err := exec(ctx, s.pool, "update app "+a.ID.String(),
		`UPDATE apps SET name = $2, unique_id = $3, platform = $4, retention_days = $5, updated_at = $6 WHERE id = $1`,
		a.ID, a.Name, a.UniqueID, a.Platform, days, a.UpdatedAt)
	if err == nil && n == 0 {
		err = notFound("app " + a.ID.String())
	}
	return err
}

func (s *Store) AppByAPIKey(ctx context.Context, key string) (model.App, model.APIKey, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var d keyDest
	a, err := scanApp(s.pool.QueryRow(ctx,
		`SELECT `+appCols+`, `+keyCols+` FROM api_keys k JOIN apps a ON a.id = k.app_id WHERE k.key = $1`, key),
		d.targets()...)
	if err != nil {
		return model.App{}, model.APIKey{}, fail("app of an API key", err)
	}
	return a, d.key(), nil
}

func (s *Store) ActiveAPIKey(ctx context.Context, appID uuid.UUID) (model.APIKey, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var d keyDest
	err := s.pool.QueryRow(ctx, `SELECT `+keyCols+` FROM api_keys k WHERE k.app_id = $1 AND NOT k.revoked`, appID).Scan(d.targets()...)
	if err != nil {
		return model.APIKey{}, fail("active API key of app "+appID.String(), err)
	}
	return d.key(), nil
}

// RotateAPIKey locks the app's row first, so concurrent rotations of one app run one after the
// other and each revokes the key the previous one stored.
func (s *Store) RotateAPIKey(ctx context.Context, k model.APIKey) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckNewKey(k, k.AppID); err != nil {
		return err
	}
	return s.inTx(ctx, "rotate API key", func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM apps WHERE id = $1 FOR NO KEY UPDATE`, k.AppID).Scan(&one); err != nil {
			return fail("app "+k.AppID.String(), err)
		}
		if _, err := exec(ctx, tx, "revoke API keys of app "+k.AppID.String(),
			`UPDATE api_keys SET revoked = true WHERE app_id = $1 AND NOT revoked`, k.AppID); err != nil {
			return err
		}
		return insertKey(ctx, tx, k)
	})
}

func (s *Store) TouchAPIKey(ctx context.Context, key string, at time.Time) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	// GREATEST skips NULL, and a concurrent touch is re-read before this one applies.
	n, err := exec(ctx, s.pool, "touch API key",
		`UPDATE api_keys SET last_seen = GREATEST(last_seen, $2) WHERE key = $1`, key, at)
	if err == nil && n == 0 {
		err = notFound("API key")
	}
	return err
}

func (s *Store) CreateAuthSession(ctx context.Context, a model.AuthSession) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err := exec(ctx, s.pool, "create session "+a.ID.String()+" of user "+a.UserID.String(),
		`INSERT INTO auth_sessions (id, user_id, refresh_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		a.ID, a.UserID, a.RefreshID, a.CreatedAt, a.ExpiresAt)
	return err
}

const sessionCols = `s.id, s.user_id, s.refresh_id, s.created_at, s.expires_at`

// sessionDest holds the scan targets of sessionCols.
type sessionDest struct{ s model.AuthSession }

func (d *sessionDest) targets() []any {
	return []any{&d.s.ID, &d.s.UserID, &d.s.RefreshID, &d.s.CreatedAt, &d.s.ExpiresAt}
}

func (d *sessionDest) session() model.AuthSession {
	s := d.s
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	return s
}

func (s *Store) AuthSession(ctx context.Context, id uuid.UUID) (model.AuthSession, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var d sessionDest
	if err := s.pool.QueryRow(ctx, `SELECT `+sessionCols+` FROM auth_sessions s WHERE s.id = $1`, id).Scan(d.targets()...); err != nil {
		return model.AuthSession{}, fail("session "+id.String(), err)
	}
	return d.session(), nil
}

// RotateAuthSession locks the session's row, so of concurrent rotations with the same refresh
// id the first to commit wins and the others then see the new id.
func (s *Store) RotateAuthSession(ctx context.Context, id, oldRefreshID, newRefreshID uuid.UUID, expiresAt time.Time) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	defer s.accessChanged("s" + id.String())
	return s.inTx(ctx, "rotate session", func(tx pgx.Tx) error {
		var current uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT refresh_id FROM auth_sessions WHERE id = $1 FOR UPDATE`, id).Scan(&current); err != nil {
			return fail("session "+id.String(), err)
		}
		if current != oldRefreshID {
			return fmt.Errorf("postgres: session %s was rotated with another refresh token: %w", id, sinks.ErrConflict)
		}
		_, err := exec(ctx, tx, "rotate session "+id.String(),
			`UPDATE auth_sessions SET refresh_id = $2, expires_at = $3 WHERE id = $1`, id, newRefreshID, expiresAt)
		return err
	})
}

func (s *Store) DeleteAuthSession(ctx context.Context, id uuid.UUID) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	defer s.accessChanged("s" + id.String())
	n, err := exec(ctx, s.pool, "delete session "+id.String(), `DELETE FROM auth_sessions WHERE id = $1`, id)
	if err == nil && n == 0 {
		err = notFound("session " + id.String())
	}
	return err
}

func (s *Store) DeleteExpiredAuthSessions(ctx context.Context, now time.Time) (int, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	n, err := exec(ctx, s.pool, "delete expired sessions", `DELETE FROM auth_sessions WHERE expires_at < $1`, now)
	return int(n), err
}
