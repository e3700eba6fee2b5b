package metatest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func newSession(user uuid.UUID, created, expires time.Time) model.AuthSession {
	return model.AuthSession{ID: uuid.New(), UserID: user, RefreshID: uuid.New(), CreatedAt: created, ExpiresAt: expires}
}

func mustSession(t *testing.T, s sinks.MetaStore, user uuid.UUID, created, expires time.Time) model.AuthSession {
	t.Helper()
	a := newSession(user, created, expires)
	if err := s.CreateAuthSession(t.Context(), a); err != nil {
		t.Fatalf("CreateAuthSession: %v", err)
	}
	return a
}

func testAuthSessions(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()

	t.Run("CreateAndGet", func(t *testing.T) {
		u, _ := mustUser(t, s, at(0))
		a := mustSession(t, s, u.ID, at(1), at(60))
		got, err := s.AuthSession(ctx, a.ID)
		wantErr(t, "AuthSession", err, nil)
		check(t, "AuthSession", got, a)

		other, _ := mustUser(t, s, at(0))
		dup := newSession(other.ID, at(2), at(70))
		dup.ID = a.ID
		wantErr(t, "CreateAuthSession(duplicate id)", s.CreateAuthSession(ctx, dup), sinks.ErrConflict)
		got, err = s.AuthSession(ctx, a.ID)
		wantErr(t, "AuthSession", err, nil)
		check(t, "AuthSession after a rejected duplicate", got, a)

		orphan := newSession(uuid.New(), at(2), at(70))
		wantErr(t, "CreateAuthSession(unknown user)", s.CreateAuthSession(ctx, orphan), sinks.ErrNotFound)
		_, err = s.AuthSession(ctx, orphan.ID)
		wantErr(t, "AuthSession(rejected)", err, sinks.ErrNotFound)
	})

	t.Run("Rotate", func(t *testing.T) {
		u, _ := mustUser(t, s, at(0))
		a := mustSession(t, s, u.ID, at(1), at(60))
		r1, r2, r3 := a.RefreshID, uuid.New(), uuid.New()
		steps := []struct {
			name     string
			old, new uuid.UUID
			expires  time.Time
			want     error
		}{
			{"current refresh id", r1, r2, at(120), nil},
			{"the same refresh id again", r1, uuid.New(), at(180), sinks.ErrConflict},
			{"a refresh id never issued", uuid.New(), uuid.New(), at(180), sinks.ErrConflict},
			{"the new refresh id", r2, r3, at(240), nil},
			{"the first one again", r1, uuid.New(), at(300), sinks.ErrConflict},
		}
		want := a
		for _, st := range steps {
			err := s.RotateAuthSession(ctx, a.ID, st.old, st.new, st.expires)
			wantErr(t, "RotateAuthSession with "+st.name, err, st.want)
			if st.want == nil {
				want.RefreshID, want.ExpiresAt = st.new, st.expires
			}
			got, err := s.AuthSession(ctx, a.ID)
			wantErr(t, "AuthSession", err, nil)
			check(t, "AuthSession after rotating with "+st.name, got, want)
		}
		wantErr(t, "RotateAuthSession(unknown session)", s.RotateAuthSession(ctx, uuid.New(), r3, uuid.New(), at(300)), sinks.ErrNotFound)
	})

	t.Run("Delete", func(t *testing.T) {
		u, _ := mustUser(t, s, at(0))
		a := mustSession(t, s, u.ID, at(1), at(60))
		keep := mustSession(t, s, u.ID, at(1), at(60))
		if err := s.DeleteAuthSession(ctx, a.ID); err != nil {
			t.Fatalf("DeleteAuthSession: %v", err)
		}
		_, err := s.AuthSession(ctx, a.ID)
		wantErr(t, "AuthSession(deleted)", err, sinks.ErrNotFound)
		wantErr(t, "RotateAuthSession(deleted)", s.RotateAuthSession(ctx, a.ID, a.RefreshID, uuid.New(), at(90)), sinks.ErrNotFound)
		wantErr(t, "DeleteAuthSession(again)", s.DeleteAuthSession(ctx, a.ID), sinks.ErrNotFound)
		got, err := s.AuthSession(ctx, keep.ID)
		wantErr(t, "AuthSession(other session)", err, nil)
		check(t, "AuthSession(other session)", got, keep)
	})
}

// testExpiredAuthSessions needs a store of its own: DeleteExpiredAuthSessions counts every
// session of the store.
func testExpiredAuthSessions(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()
	u, _ := mustUser(t, s, at(0))
	v, _ := mustUser(t, s, at(0))
	now := at(100)

	n, err := s.DeleteExpiredAuthSessions(ctx, now)
	wantErr(t, "DeleteExpiredAuthSessions(no sessions)", err, nil)
	if n != 0 {
		t.Errorf("DeleteExpiredAuthSessions of an empty store = %d", n)
	}

	longAgo := mustSession(t, s, u.ID, at(0), at(10))
	justBefore := mustSession(t, s, v.ID, at(0), now.Add(-time.Microsecond))
	exactlyNow := mustSession(t, s, u.ID, at(0), now)
	later := mustSession(t, s, v.ID, at(0), at(200))
	// Rotation moves the expiry: this one expired at 50 but now lives until 150.
	rotated := mustSession(t, s, u.ID, at(0), at(50))
	newRefresh := uuid.New()
	if err := s.RotateAuthSession(ctx, rotated.ID, rotated.RefreshID, newRefresh, at(150)); err != nil {
		t.Fatalf("RotateAuthSession: %v", err)
	}
	rotated.RefreshID, rotated.ExpiresAt = newRefresh, at(150)

	n, err = s.DeleteExpiredAuthSessions(ctx, now)
	wantErr(t, "DeleteExpiredAuthSessions", err, nil)
	if n != 2 {
		t.Errorf("DeleteExpiredAuthSessions = %d, want 2", n)
	}
	for _, gone := range []model.AuthSession{longAgo, justBefore} {
		_, err := s.AuthSession(ctx, gone.ID)
		wantErr(t, "AuthSession(expired)", err, sinks.ErrNotFound)
	}
	for _, kept := range []model.AuthSession{exactlyNow, later, rotated} {
		got, err := s.AuthSession(ctx, kept.ID)
		wantErr(t, "AuthSession(kept)", err, nil)
		check(t, "AuthSession(kept)", got, kept)
	}

	n, err = s.DeleteExpiredAuthSessions(ctx, now)
	wantErr(t, "DeleteExpiredAuthSessions(again)", err, nil)
	if n != 0 {
		t.Errorf("DeleteExpiredAuthSessions again = %d, want 0", n)
	}
	n, err = s.DeleteExpiredAuthSessions(ctx, at(1000))
	wantErr(t, "DeleteExpiredAuthSessions(later)", err, nil)
	if n != 3 {
		t.Errorf("DeleteExpiredAuthSessions much later = %d, want 3", n)
	}

	// Many expired sessions go in one call.
	const many = 300
	for range many {
		mustSession(t, s, u.ID, at(0), at(10))
	}
	n, err = s.DeleteExpiredAuthSessions(ctx, now)
	wantErr(t, "DeleteExpiredAuthSessions(many)", err, nil)
	if n != many {
		t.Errorf("DeleteExpiredAuthSessions of %d expired sessions = %d", many, n)
	}
}
