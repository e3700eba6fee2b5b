package sinks

import (
	"context"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// AppAccess reads what the dashboard checks before it serves a route under /apps/{id}: the app,
// the caller's role in the app's team and, with SessionAppRole, the caller's sign-in session,
// in one round trip to the store instead of three (issue #17). A sign-out, a changed role or a
// removed membership is seen by the next call. Both stores may keep the answers that admit a
// request (AccessCache): the embedded one drops them at each of its writes, the PostgreSQL one
// of a node while it hears PostgreSQL's notices of changes (postgres.Options.AccessCache), so
// another node's change is seen once its notice arrives, within milliseconds. Both metadata stores implement it; the AppAccess group of
// sinks/metatest.Run checks them. The MetaStore contract's rules on errors (ErrUnavailable when
// the store does not answer) and concurrency apply.
type AppAccess interface {
	// AppRole returns the app and the user's role in the app's team, read together. ErrNotFound
	// when the app does not exist or the user is not a member of its team; the error does not
	// tell which (the dashboard answers both alike).
	AppRole(ctx context.Context, appID, userID uuid.UUID) (model.App, model.Role, error)
	// SessionAppRole is AuthSession(sessionID) and AppRole(appID, userID) read together: one
	// round trip when the session, the app and the membership all exist (every request the
	// dashboard admits); a backend may take more to tell which one is missing. Its error is
	// AuthSession's: ErrNotFound when the session does not exist (whatever the app), or a
	// failure to read. AppRole's answer comes back in the SessionAccess, its error in AppErr;
	// when the session could not be read, the SessionAccess is zero.
	SessionAppRole(ctx context.Context, sessionID, appID, userID uuid.UUID) (SessionAccess, error)
}

// SessionAccess is what SessionAppRole read: the session as AuthSession returns it, and the app
// and role as AppRole returns them.
type SessionAccess struct {
	Session model.AuthSession
	App     model.App  // zero unless AppErr is nil
	Role    model.Role // empty unless AppErr is nil
	// AppErr is AppRole's error: ErrNotFound when the app does not exist or the user is not a
	// member of its team, or a failure to read them.
	AppErr error
}
