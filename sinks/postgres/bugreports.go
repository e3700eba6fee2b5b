package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Bug reports' statuses (sinks.BugReportStatuses) in the table bug_report_statuses (migration
// 00004).

var _ sinks.BugReportStatuses = (*Store)(nil)

// SetBugReportStatus upserts the report's row; the foreign key makes an unknown app
// ErrNotFound.
func (s *Store) SetBugReportStatus(ctx context.Context, st model.BugReportState) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckBugReportState(st); err != nil {
		return err
	}
	_, err := exec(ctx, s.pool, "set status of bug report "+st.ID.String()+" of app "+st.AppID.String(),
		`INSERT INTO bug_report_statuses (app_id, report_id, status, updated_at) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (app_id, report_id) DO UPDATE SET status = EXCLUDED.status, updated_at = EXCLUDED.updated_at`,
		st.AppID, st.ID, int16(st.Status), st.UpdatedAt)
	return err
}

// BugReportStates reads the rows of the given reports in one query.
func (s *Store) BugReportStates(ctx context.Context, app uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]model.BugReportState, error) {
	out := make(map[uuid.UUID]model.BugReportState, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "bug report states of app " + app.String()
	rows, err := s.pool.Query(ctx,
		`SELECT report_id, status, updated_at FROM bug_report_statuses WHERE app_id = $1 AND report_id = ANY($2)`, app, ids)
	if err != nil {
		return nil, fail(what, err)
	}
	states, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.BugReportState, error) {
		st := model.BugReportState{AppID: app}
		var status int16
		err := row.Scan(&st.ID, &status, &st.UpdatedAt)
		st.Status, st.UpdatedAt = model.BugReportStatus(status), st.UpdatedAt.UTC()
		return st, err
	})
	if err != nil {
		return nil, fail(what, err)
	}
	for _, st := range states {
		out[st.ID] = st
	}
	return out, nil
}

// ClosedBugReports reads the app's closed ids from the partial index; uuid compares as bytes.
func (s *Store) ClosedBugReports(ctx context.Context, app uuid.UUID) ([]uuid.UUID, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "closed bug reports of app " + app.String()
	rows, err := s.pool.Query(ctx,
		`SELECT report_id FROM bug_report_statuses WHERE app_id = $1 AND status = 1 ORDER BY report_id`, app)
	if err != nil {
		return nil, fail(what, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fail(what, err)
	}
	if out == nil {
		out = []uuid.UUID{}
	}
	return out, nil
}
