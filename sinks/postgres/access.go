package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// What the dashboard checks before an app route (sinks.AppAccess): the app joined with the
// caller's membership of its team and, with SessionAppRole, with the sign-in session too: one
// query for every request the dashboard admits.

var _ sinks.AppAccess = (*Store)(nil)

// appRoleByID reads an app ($1) with the role of a user ($2) in its team: no row when the app
// does not exist or the user is not a member.
const appRoleByID = `SELECT ` + appCols + `, m.role FROM apps a
	JOIN team_members m ON m.team_id = a.team_id AND m.user_id = $2
	WHERE a.id = $1`

func scanAppRole(row pgx.Row, appID, userID uuid.UUID) (model.App, model.Role, error) {
	var role model.Role
	a, err := scanApp(row, &role)
	if err != nil {
		return model.App{}, "", fail("app "+appID.String()+" of a team of user "+userID.String(), err)
	}
	return a, role, nil
}

func (s *Store) AppRole(ctx context.Context, appID, userID uuid.UUID) (model.App, model.Role, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	return scanAppRole(s.pool.QueryRow(ctx, appRoleByID, appID, userID), appID, userID)
}

// sessionAppRoleByID reads an app ($2) with the role of a user ($3) in its team and a session
// ($1), as one row: none when any of them is missing.
const sessionAppRoleByID = `SELECT ` + appCols + `, m.role, ` + sessionCols + ` FROM apps a
	JOIN team_members m ON m.team_id = a.team_id AND m.user_id = $3
	CROSS JOIN auth_sessions s
	WHERE a.id = $2 AND s.id = $1`

// SessionAppRole reads the three rows with one query when all exist, as they do for every
// request the dashboard admits. When the query finds none, the request is refused, and the
// session and AppRole are read apart to tell why (two more round trips at most).
//
// With Options.AccessCache, an answer that admits the request is kept (accesscache.go).
func (s *Store) SessionAppRole(ctx context.Context, sessionID, appID, userID uuid.UUID) (sinks.SessionAccess, error) {
	return s.access.Read(sinks.AccessKey{Session: sessionID, App: appID, User: userID}, func() (sinks.SessionAccess, error) {
		return s.sessionAppRole(ctx, sessionID, appID, userID)
	})
}

func (s *Store) sessionAppRole(ctx context.Context, sessionID, appID, userID uuid.UUID) (sinks.SessionAccess, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var (
		role    model.Role
		session sessionDest
	)
	app, err := scanApp(s.pool.QueryRow(ctx, sessionAppRoleByID, sessionID, appID, userID), append([]any{&role}, session.targets()...)...)
	switch {
	case err == nil:
		return sinks.SessionAccess{Session: session.session(), App: app, Role: role}, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return sinks.SessionAccess{}, fail("session "+sessionID.String()+" and app "+appID.String(), err)
	}
	acc := sinks.SessionAccess{}
	if acc.Session, err = s.AuthSession(ctx, sessionID); err != nil {
		return sinks.SessionAccess{}, err
	}
	acc.App, acc.Role, acc.AppErr = s.AppRole(ctx, appID, userID)
	return acc, nil
}
