package metatest

import (
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// checkAppRole fails the test unless AppRole(appID, userID) and the app part of
// SessionAppRole(session.ID, appID, userID) answer the app as App reads it with role want, or
// ErrNotFound when want is empty; and SessionAppRole returns the session as stored.
func checkAppRole(t *testing.T, s sinks.MetaStore, what string, session model.AuthSession, appID, userID uuid.UUID, want model.Role) {
	t.Helper()
	ctx := t.Context()
	acc := as[sinks.AppAccess](t, s)
	var wantApp model.App
	missing := sinks.ErrNotFound
	if want != "" {
		var err error
		wantApp, err = s.App(ctx, appID)
		wantErr(t, what+": App", err, nil)
		missing = nil
	}
	app, rl, err := acc.AppRole(ctx, appID, userID)
	wantErr(t, what+": AppRole", err, missing)
	check(t, what+": AppRole's app", app, wantApp)
	check(t, what+": AppRole's role", rl, want)

	got, err := acc.SessionAppRole(ctx, session.ID, appID, userID)
	wantErr(t, what+": SessionAppRole", err, nil)
	wantErr(t, what+": SessionAppRole's AppErr", got.AppErr, missing)
	got.AppErr = nil
	check(t, what+": SessionAppRole", got, sinks.SessionAccess{Session: session, App: wantApp, Role: want})
}

// testAppAccess checks sinks.AppAccess: a member gets the app and their role, a non-member (a
// member of another team included) and a missing app get ErrNotFound, a changed role and a
// removed membership are seen by the next call, and SessionAppRole answers ErrNotFound for a
// missing or deleted session whatever the app, and a session as stored otherwise (its user is
// the caller's to compare).
func testAppAccess(t *testing.T, s sinks.MetaStore) {
	acc := as[sinks.AppAccess](t, s)
	ctx := t.Context()
	owner, tm := mustUser(t, s, at(0))
	a, _ := mustApp(t, s, tm.ID, at(1))
	ownerSession := mustSession(t, s, owner.ID, at(2), at(600))

	t.Run("Member", func(t *testing.T) {
		checkAppRole(t, s, "owner", ownerSession, a.ID, owner.ID, model.RoleOwner)
		for _, rl := range []model.Role{model.RoleAdmin, model.RoleDeveloper, model.RoleViewer} {
			m := mustMember(t, s, tm.ID, rl, at(3))
			checkAppRole(t, s, string(rl), mustSession(t, s, m.UserID, at(4), at(600)), a.ID, m.UserID, rl)
		}
	})

	t.Run("NonMember", func(t *testing.T) {
		// The outsider owns a team and an app of their own: only the app's team counts.
		outsider, own := mustUser(t, s, at(0))
		b, _ := mustApp(t, s, own.ID, at(1))
		session := mustSession(t, s, outsider.ID, at(2), at(600))
		checkAppRole(t, s, "outsider on another team's app", session, a.ID, outsider.ID, "")
		checkAppRole(t, s, "outsider on their own app", session, b.ID, outsider.ID, model.RoleOwner)
		checkAppRole(t, s, "owner on the outsider's app", ownerSession, b.ID, owner.ID, "")
		checkAppRole(t, s, "unknown user", ownerSession, a.ID, uuid.New(), "")
	})

	t.Run("MissingApp", func(t *testing.T) {
		checkAppRole(t, s, "unknown app", ownerSession, uuid.New(), owner.ID, "")
	})

	t.Run("RoleChange", func(t *testing.T) {
		m := mustMember(t, s, tm.ID, model.RoleViewer, at(3))
		session := mustSession(t, s, m.UserID, at(4), at(600))
		checkAppRole(t, s, "before the change", session, a.ID, m.UserID, model.RoleViewer)
		for i, rl := range []model.Role{model.RoleAdmin, model.RoleDeveloper, model.RoleOwner, model.RoleViewer} {
			if err := s.SetMemberRole(ctx, tm.ID, m.UserID, rl, at(5+i)); err != nil {
				t.Fatalf("SetMemberRole(%s): %v", rl, err)
			}
			checkAppRole(t, s, "after SetMemberRole("+string(rl)+")", session, a.ID, m.UserID, rl)
		}
	})

	t.Run("RemovedMember", func(t *testing.T) {
		m := mustMember(t, s, tm.ID, model.RoleAdmin, at(3))
		session := mustSession(t, s, m.UserID, at(4), at(600))
		checkAppRole(t, s, "before the removal", session, a.ID, m.UserID, model.RoleAdmin)
		if err := s.RemoveMember(ctx, tm.ID, m.UserID); err != nil {
			t.Fatalf("RemoveMember: %v", err)
		}
		checkAppRole(t, s, "after RemoveMember", session, a.ID, m.UserID, "")
	})

	t.Run("Session", func(t *testing.T) {
		noSession := func(what string, sessionID, appID uuid.UUID) {
			t.Helper()
			got, err := acc.SessionAppRole(ctx, sessionID, appID, owner.ID)
			wantErr(t, what, err, sinks.ErrNotFound)
			check(t, what, got, sinks.SessionAccess{})
		}
		noSession("unknown session, member of the app", uuid.New(), a.ID)
		noSession("unknown session, unknown app", uuid.New(), uuid.New())

		// The session comes back as stored whoever asks: the dashboard compares its user.
		m := mustMember(t, s, tm.ID, model.RoleDeveloper, at(3))
		checkAppRole(t, s, "another user's session", ownerSession, a.ID, m.UserID, model.RoleDeveloper)

		// A rotation and a sign-out are seen by the next call.
		session := mustSession(t, s, owner.ID, at(4), at(600))
		rotated := session
		rotated.RefreshID, rotated.ExpiresAt = uuid.New(), at(900)
		if err := s.RotateAuthSession(ctx, session.ID, session.RefreshID, rotated.RefreshID, rotated.ExpiresAt); err != nil {
			t.Fatalf("RotateAuthSession: %v", err)
		}
		checkAppRole(t, s, "after RotateAuthSession", rotated, a.ID, owner.ID, model.RoleOwner)
		if err := s.DeleteAuthSession(ctx, session.ID); err != nil {
			t.Fatalf("DeleteAuthSession: %v", err)
		}
		noSession("after DeleteAuthSession", session.ID, a.ID)
	})
}
