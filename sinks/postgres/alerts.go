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

var _ sinks.Alerts = (*Store)(nil)

const alertCols = `id, team_id, app_id, entity_id, type, message, url, created_at, updated_at`

// scanAlert scans alertCols, then extra.
func scanAlert(row pgx.Row, extra ...any) (model.Alert, error) {
	var a model.Alert
	err := row.Scan(append([]any{&a.ID, &a.TeamID, &a.AppID, &a.EntityID, &a.Type, &a.Message, &a.URL, &a.CreatedAt, &a.UpdatedAt}, extra...)...)
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	return a, err
}

// checkAlert refuses what text cannot hold (NUL, invalid UTF-8) as ErrInvalid, as the Badger
// backend does, rather than as the server's error.
func checkAlert(a model.Alert) error {
	for _, f := range []struct{ what, s string }{
		{"alert entity id", a.EntityID}, {"alert type", a.Type}, {"alert message", a.Message}, {"alert URL", a.URL},
	} {
		if err := sinks.CheckText(f.what, f.s); err != nil {
			return err
		}
	}
	return nil
}

// AddAlert inserts the alert unless its id is taken, and its delivery only when it inserted
// it, in one transaction. A concurrent add of the same id waits for the first to commit and
// then inserts nothing. An unknown app is a foreign key violation: ErrNotFound.
func (s *Store) AddAlert(ctx context.Context, a model.Alert, deliver bool) (bool, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := checkAlert(a); err != nil {
		return false, err
	}
	what := "add alert " + a.ID.String() + " of app " + a.AppID.String()
	var added bool
	err := s.inTx(ctx, what, func(tx pgx.Tx) error {
		n, err := exec(ctx, tx, what,
			`INSERT INTO alerts (`+alertCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			 ON CONFLICT (id) DO NOTHING`,
			a.ID, a.TeamID, a.AppID, a.EntityID, a.Type, a.Message, a.URL, a.CreatedAt, a.UpdatedAt)
		if err != nil || n == 0 {
			return err
		}
		added = true
		if !deliver {
			return nil
		}
		_, err = exec(ctx, tx, what,
			`INSERT INTO alert_deliveries (alert_id, attempts, next_attempt, last_error) VALUES ($1, 0, $2, '')`,
			a.ID, a.CreatedAt)
		return err
	})
	if err != nil {
		return false, err
	}
	return added, nil
}

func (s *Store) AppAlerts(ctx context.Context, app uuid.UUID, from, to time.Time, limit, offset int) ([]model.Alert, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if limit < 1 || offset < 0 {
		return nil, fmt.Errorf("postgres: alerts page of limit %d and offset %d: %w", limit, offset, sinks.ErrInvalid)
	}
	what := "alerts of app " + app.String()
	rows, err := s.pool.Query(ctx,
		`SELECT `+alertCols+` FROM alerts WHERE app_id = $1 AND created_at >= $2 AND created_at < $3
		 ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5`,
		app, from, to, limit, offset)
	if err != nil {
		return nil, fail(what, err)
	}
	return collectAlerts(rows, what)
}

// LatestAlerts compares type and entity as bytes (COLLATE "C"), as the Badger backend does;
// uuids compare as bytes in Postgres.
func (s *Store) LatestAlerts(ctx context.Context, app uuid.UUID, since time.Time) ([]model.Alert, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "latest alerts of app " + app.String()
	rows, err := s.pool.Query(ctx,
		`SELECT DISTINCT ON (type COLLATE "C", entity_id COLLATE "C") `+alertCols+`
		 FROM alerts WHERE app_id = $1 AND created_at >= $2
		 ORDER BY type COLLATE "C", entity_id COLLATE "C", created_at DESC, id DESC`,
		app, since)
	if err != nil {
		return nil, fail(what, err)
	}
	return collectAlerts(rows, what)
}

func collectAlerts(rows pgx.Rows, what string) ([]model.Alert, error) {
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Alert, error) { return scanAlert(row) })
	if err != nil {
		return nil, fail(what, err)
	}
	if out == nil {
		out = []model.Alert{}
	}
	return out, nil
}

func (s *Store) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]model.Delivery, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if limit < 0 {
		return nil, fmt.Errorf("postgres: due deliveries limit %d: %w", limit, sinks.ErrInvalid)
	}
	const what = "due deliveries"
	rows, err := s.pool.Query(ctx,
		`SELECT a.id, a.team_id, a.app_id, a.entity_id, a.type, a.message, a.url, a.created_at, a.updated_at,
		     d.attempts, d.next_attempt, d.last_error
		 FROM alert_deliveries d JOIN alerts a ON a.id = d.alert_id
		 WHERE d.next_attempt <= $1 ORDER BY d.next_attempt, d.alert_id LIMIT $2`,
		now, limit)
	if err != nil {
		return nil, fail(what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Delivery, error) {
		var d model.Delivery
		var err error
		d.Alert, err = scanAlert(row, &d.Attempts, &d.NextAttempt, &d.LastError)
		d.NextAttempt = d.NextAttempt.UTC()
		return d, err
	})
	if err != nil {
		return nil, fail(what, err)
	}
	if out == nil {
		out = []model.Delivery{}
	}
	return out, nil
}

func (s *Store) FinishDelivery(ctx context.Context, alertID uuid.UUID) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err := exec(ctx, s.pool, "finish delivery of alert "+alertID.String(),
		`DELETE FROM alert_deliveries WHERE alert_id = $1`, alertID)
	return err
}

func (s *Store) PostponeDelivery(ctx context.Context, alertID uuid.UUID, attempts int, next time.Time, lastError string) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckText("delivery error", lastError); err != nil {
		return err
	}
	what := "pending delivery of alert " + alertID.String()
	n, err := exec(ctx, s.pool, "postpone "+what,
		`UPDATE alert_deliveries SET attempts = $2, next_attempt = $3, last_error = $4 WHERE alert_id = $1`,
		alertID, attempts, next, lastError)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound(what)
	}
	return nil
}
