package metatest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// checkNotifPrefs fails the test unless NotifPrefs(user) returns want.
func checkNotifPrefs(t *testing.T, np sinks.NotifPrefs, what string, user uuid.UUID, want model.NotifPrefs) {
	t.Helper()
	got, err := np.NotifPrefs(t.Context(), user)
	wantErr(t, what, err, nil)
	check(t, what, got, want)
}

// prefsWith returns preferences whose four booleans are the bits of n (error spike the lowest),
// first set at created and last set at updated.
func prefsWith(n int, created, updated time.Time) model.NotifPrefs {
	return model.NotifPrefs{ErrorSpike: n&1 != 0, AppHangSpike: n&2 != 0, BugReport: n&4 != 0, DailySummary: n&8 != 0,
		CreatedAt: created, UpdatedAt: updated}
}

// testNotifPrefs checks sinks.NotifPrefs. Beyond its doc comments it pins down: every
// combination of the four booleans comes back as set (a backend that mixes up two of them
// fails); a set replaces the times too; preferences are per user; a refused set changes
// nothing; concurrent sets leave one of them whole.
func testNotifPrefs(t *testing.T, s sinks.MetaStore) {
	np := as[sinks.NotifPrefs](t, s)
	ctx := t.Context()

	t.Run("SetAndGet", func(t *testing.T) {
		u, _ := mustUser(t, s, at(0))
		v, _ := mustUser(t, s, at(0))
		_, err := np.NotifPrefs(ctx, u.ID)
		wantErr(t, "NotifPrefs before any set", err, sinks.ErrNotFound)
		for n := range 16 {
			p := prefsWith(n, at(1), at(1+n))
			if err := np.SetNotifPrefs(ctx, u.ID, p); err != nil {
				t.Fatalf("SetNotifPrefs(%+v): %v", p, err)
			}
			checkNotifPrefs(t, np, fmt.Sprintf("NotifPrefs after set %d", n), u.ID, p)
		}
		_, err = np.NotifPrefs(ctx, v.ID)
		wantErr(t, "NotifPrefs of another user", err, sinks.ErrNotFound)
		other := prefsWith(0b0101, at(3), at(4))
		wantErr(t, "SetNotifPrefs(other user)", np.SetNotifPrefs(ctx, v.ID, other), nil)
		checkNotifPrefs(t, np, "NotifPrefs of the other user", v.ID, other)
		checkNotifPrefs(t, np, "NotifPrefs after another user's set", u.ID, prefsWith(15, at(1), at(16)))
		// A set replaces both times: the caller decides when the preferences were first set.
		again := prefsWith(0b1010, at(20), at(21))
		wantErr(t, "SetNotifPrefs(new times)", np.SetNotifPrefs(ctx, u.ID, again), nil)
		checkNotifPrefs(t, np, "NotifPrefs after a set with new times", u.ID, again)

		unknown := uuid.New()
		wantErr(t, "SetNotifPrefs(unknown user)", np.SetNotifPrefs(ctx, unknown, other), sinks.ErrNotFound)
		_, err = np.NotifPrefs(ctx, unknown)
		wantErr(t, "NotifPrefs(unknown user)", err, sinks.ErrNotFound)
	})

	t.Run("Invalid", func(t *testing.T) {
		u, _ := mustUser(t, s, at(0))
		stored := prefsWith(0b0110, at(1), at(2))
		if err := np.SetNotifPrefs(ctx, u.ID, stored); err != nil {
			t.Fatalf("SetNotifPrefs: %v", err)
		}
		cases := []struct {
			name string
			p    model.NotifPrefs
		}{
			{"no first-set time", prefsWith(15, time.Time{}, at(3))},
			{"no last-set time", prefsWith(15, at(3), time.Time{})},
			{"last set before first set", prefsWith(15, at(4), at(3))},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				wantErr(t, "SetNotifPrefs", np.SetNotifPrefs(ctx, u.ID, tc.p), sinks.ErrInvalid)
				checkNotifPrefs(t, np, "NotifPrefs after a refused set", u.ID, stored)
			})
		}
		// Refused before the user is looked up: the rule does not depend on the user.
		wantErr(t, "SetNotifPrefs(unknown user, invalid)", np.SetNotifPrefs(ctx, uuid.New(), cases[0].p), sinks.ErrInvalid)
	})

	t.Run("Times", func(t *testing.T) {
		for _, tc := range oddTimes {
			t.Run(tc.name, func(t *testing.T) {
				u, _ := mustUser(t, s, at(0))
				if err := np.SetNotifPrefs(ctx, u.ID, prefsWith(1, tc.t, tc.t)); err != nil {
					t.Fatalf("SetNotifPrefs: %v", err)
				}
				got, err := np.NotifPrefs(ctx, u.ID)
				wantErr(t, "NotifPrefs", err, nil)
				checkTime(t, "CreatedAt", got.CreatedAt, tc.t)
				checkTime(t, "UpdatedAt", got.UpdatedAt, tc.t)
			})
		}
	})

	t.Run("ConcurrentSets", func(t *testing.T) {
		u, _ := mustUser(t, s, at(0))
		const n = 8
		sets := make([]model.NotifPrefs, n)
		for i := range sets {
			sets[i] = prefsWith(i, at(1), at(10+i))
		}
		for _, err := range race(n, func(i int) error { return np.SetNotifPrefs(ctx, u.ID, sets[i]) }) {
			wantErr(t, "concurrent SetNotifPrefs", err, nil)
		}
		got, err := np.NotifPrefs(ctx, u.ID)
		wantErr(t, "NotifPrefs", err, nil)
		i := int(got.UpdatedAt.Sub(at(10)) / time.Minute)
		if i < 0 || i >= n {
			t.Fatalf("UpdatedAt %s after the race is none of those set", got.UpdatedAt)
		}
		// The booleans and the times come from the same set.
		check(t, "NotifPrefs after the race", got, sets[i])
	})

	t.Run("Deadline", func(t *testing.T) {
		u, _ := mustUser(t, s, at(0))
		dctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
		defer cancel()
		calls := map[string]error{}
		_, calls["NotifPrefs"] = np.NotifPrefs(dctx, u.ID)
		calls["SetNotifPrefs"] = np.SetNotifPrefs(dctx, u.ID, prefsWith(3, at(1), at(1)))
		for name, err := range calls {
			wantUnavailableOrNil(t, name, err, name == "NotifPrefs")
		}
	})
}

// wantUnavailableOrNil fails the test unless err, of a call with an expired deadline, is nil or
// ErrUnavailable of the metadata store (a backend that never waits may answer anyway, and a read
// of what does not exist may then truly be ErrNotFound when notFoundOK). It is never ErrNotFound
// otherwise.
func wantUnavailableOrNil(t *testing.T, name string, err error, notFoundOK bool) {
	t.Helper()
	if err == nil || (notFoundOK && errors.Is(err, sinks.ErrNotFound) && !errors.Is(err, sinks.ErrUnavailable)) {
		return
	}
	var ue *sinks.UnavailableError
	if !errors.Is(err, sinks.ErrUnavailable) || !errors.As(err, &ue) || ue.Store != sinks.StoreMeta {
		t.Errorf("%s with an expired deadline: %v, want nil or ErrUnavailable of the %s store", name, err, sinks.StoreMeta)
	}
	if errors.Is(err, sinks.ErrNotFound) {
		t.Errorf("%s with an expired deadline: %v is ErrNotFound", name, err)
	}
}
