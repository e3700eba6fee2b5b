package metatest

import (
	"bytes"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func testApps(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()

	t.Run("CreateApp", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		empty, err := s.AppsOfTeam(ctx, tm.ID)
		wantErr(t, "AppsOfTeam(no apps)", err, nil)
		if len(empty) != 0 {
			t.Errorf("AppsOfTeam of a team without apps = %+v", empty)
		}

		later, laterKey := mustApp(t, s, tm.ID, at(2))
		older, olderKey := newApp(tm.ID, at(1))
		older.RetentionDays = 0 // stored as the default
		if err := s.CreateApp(ctx, older, olderKey); err != nil {
			t.Fatalf("CreateApp: %v", err)
		}
		older.RetentionDays = model.DefaultRetentionDays
		tieA, _ := mustApp(t, s, tm.ID, at(3))
		tieB, _ := mustApp(t, s, tm.ID, at(3))
		if bytes.Compare(tieA.ID[:], tieB.ID[:]) > 0 {
			tieA, tieB = tieB, tieA
		}
		// Another team's app is not listed.
		_, otherTeam := mustUser(t, s, at(0))
		mustApp(t, s, otherTeam.ID, at(1))

		got, err := s.App(ctx, later.ID)
		wantErr(t, "App", err, nil)
		check(t, "App", got, later)
		got, err = s.App(ctx, older.ID)
		wantErr(t, "App(default retention)", err, nil)
		check(t, "App(default retention)", got, older)
		apps, err := s.AppsOfTeam(ctx, tm.ID)
		wantErr(t, "AppsOfTeam", err, nil)
		check(t, "AppsOfTeam", apps, []model.App{older, later, tieA, tieB})

		app, key, err := s.AppByAPIKey(ctx, laterKey.Key)
		wantErr(t, "AppByAPIKey", err, nil)
		check(t, "AppByAPIKey app", app, later)
		check(t, "AppByAPIKey key", key, laterKey)
		active, err := s.ActiveAPIKey(ctx, older.ID)
		wantErr(t, "ActiveAPIKey", err, nil)
		check(t, "ActiveAPIKey", active, olderKey)
	})

	t.Run("CreateAppErrors", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		existing, existingKey := mustApp(t, s, tm.ID, at(1))
		cases := []struct {
			name string
			edit func(a *model.App, k *model.APIKey)
			want error
		}{
			{"key taken", func(_ *model.App, k *model.APIKey) { k.Key = existingKey.Key }, sinks.ErrConflict},
			{"app id taken", func(a *model.App, k *model.APIKey) { a.ID, k.AppID = existing.ID, existing.ID }, sinks.ErrConflict},
			{"unknown team", func(a *model.App, _ *model.APIKey) { a.TeamID = uuid.New() }, sinks.ErrNotFound},
			{"key of another app", func(_ *model.App, k *model.APIKey) { k.AppID = uuid.New() }, sinks.ErrInvalid},
			{"empty key", func(_ *model.App, k *model.APIKey) { k.Key = "" }, sinks.ErrInvalid},
			{"revoked key", func(_ *model.App, k *model.APIKey) { k.Revoked = true }, sinks.ErrInvalid},
			{"retention 29 days", func(a *model.App, _ *model.APIKey) { a.RetentionDays = 29 }, sinks.ErrInvalid},
			{"retention 366 days", func(a *model.App, _ *model.APIKey) { a.RetentionDays = 366 }, sinks.ErrInvalid},
			{"negative retention", func(a *model.App, _ *model.APIKey) { a.RetentionDays = -30 }, sinks.ErrInvalid},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				a, k := newApp(tm.ID, at(2))
				tc.edit(&a, &k)
				wantErr(t, "CreateApp", s.CreateApp(ctx, a, k), tc.want)
				// Nothing of the failed call is stored.
				if a.ID != existing.ID {
					_, err := s.App(ctx, a.ID)
					wantErr(t, "App(rejected)", err, sinks.ErrNotFound)
				}
				if k.Key != existingKey.Key && k.Key != "" {
					_, _, err := s.AppByAPIKey(ctx, k.Key)
					wantErr(t, "AppByAPIKey(rejected)", err, sinks.ErrNotFound)
				}
			})
		}
		got, err := s.App(ctx, existing.ID)
		wantErr(t, "App(existing)", err, nil)
		check(t, "App(existing)", got, existing)
		app, key, err := s.AppByAPIKey(ctx, existingKey.Key)
		wantErr(t, "AppByAPIKey(existing)", err, nil)
		check(t, "AppByAPIKey(existing) app", app, existing)
		check(t, "AppByAPIKey(existing) key", key, existingKey)
		apps, err := s.AppsOfTeam(ctx, tm.ID)
		wantErr(t, "AppsOfTeam", err, nil)
		check(t, "AppsOfTeam after rejected creates", apps, []model.App{existing})
	})

	t.Run("UpdateApp", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		_, otherTeam := mustUser(t, s, at(0))
		a, k := mustApp(t, s, tm.ID, at(1))
		upd := a
		upd.Name, upd.UniqueID, upd.Platform, upd.RetentionDays, upd.UpdatedAt = "Renamed", "com.example.app", "android", 365, at(5)
		// Not replaced by UpdateApp: the team and the creation time.
		upd.TeamID, upd.CreatedAt = otherTeam.ID, at(-50)
		if err := s.UpdateApp(ctx, upd); err != nil {
			t.Fatalf("UpdateApp: %v", err)
		}
		want := a
		want.Name, want.UniqueID, want.Platform, want.RetentionDays, want.UpdatedAt = upd.Name, upd.UniqueID, upd.Platform, upd.RetentionDays, upd.UpdatedAt
		got, err := s.App(ctx, a.ID)
		wantErr(t, "App", err, nil)
		check(t, "App", got, want)
		apps, err := s.AppsOfTeam(ctx, tm.ID)
		wantErr(t, "AppsOfTeam", err, nil)
		check(t, "AppsOfTeam", apps, []model.App{want})
		apps, err = s.AppsOfTeam(ctx, otherTeam.ID)
		wantErr(t, "AppsOfTeam(other team)", err, nil)
		check(t, "AppsOfTeam(other team)", apps, []model.App(nil))
		app, _, err := s.AppByAPIKey(ctx, k.Key)
		wantErr(t, "AppByAPIKey", err, nil)
		check(t, "AppByAPIKey", app, want)

		for _, days := range []int{0, 29, 366} {
			bad := upd
			bad.RetentionDays, bad.Name = days, "bad"
			wantErr(t, "UpdateApp(bad retention)", s.UpdateApp(ctx, bad), sinks.ErrInvalid)
		}
		got, err = s.App(ctx, a.ID)
		wantErr(t, "App", err, nil)
		check(t, "App after rejected updates", got, want)

		missing := upd
		missing.ID = uuid.New()
		wantErr(t, "UpdateApp(unknown)", s.UpdateApp(ctx, missing), sinks.ErrNotFound)
	})
}

func testAPIKeys(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()

	t.Run("Rotate", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, k0 := mustApp(t, s, tm.ID, at(1))
		b, bKey := mustApp(t, s, tm.ID, at(1))
		k1, k2 := newKey(a.ID, at(2)), newKey(a.ID, at(3))
		for _, k := range []model.APIKey{k1, k2} {
			if err := s.RotateAPIKey(ctx, k); err != nil {
				t.Fatalf("RotateAPIKey: %v", err)
			}
		}
		k0.Revoked, k1.Revoked = true, true
		for _, want := range []model.APIKey{k0, k1, k2} {
			app, key, err := s.AppByAPIKey(ctx, want.Key)
			wantErr(t, "AppByAPIKey", err, nil)
			check(t, "AppByAPIKey app", app, a)
			check(t, "AppByAPIKey key", key, want)
		}
		active, err := s.ActiveAPIKey(ctx, a.ID)
		wantErr(t, "ActiveAPIKey", err, nil)
		check(t, "ActiveAPIKey", active, k2)

		// Rotating a's keys left b's alone.
		active, err = s.ActiveAPIKey(ctx, b.ID)
		wantErr(t, "ActiveAPIKey(other app)", err, nil)
		check(t, "ActiveAPIKey(other app)", active, bKey)

		cases := []struct {
			name string
			key  model.APIKey
			want error
		}{
			{"an old key of the app", model.APIKey{AppID: a.ID, Key: k0.Key, CreatedAt: at(4)}, sinks.ErrConflict},
			{"the active key", model.APIKey{AppID: a.ID, Key: k2.Key, CreatedAt: at(4)}, sinks.ErrConflict},
			{"another app's key", model.APIKey{AppID: a.ID, Key: bKey.Key, CreatedAt: at(4)}, sinks.ErrConflict},
			{"unknown app", newKey(uuid.New(), at(4)), sinks.ErrNotFound},
			{"empty key", model.APIKey{AppID: a.ID, CreatedAt: at(4)}, sinks.ErrInvalid},
			{"revoked key", model.APIKey{AppID: a.ID, Key: newKey(a.ID, at(4)).Key, CreatedAt: at(4), Revoked: true}, sinks.ErrInvalid},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				wantErr(t, "RotateAPIKey", s.RotateAPIKey(ctx, tc.key), tc.want)
				// A failed rotation revokes nothing.
				active, err := s.ActiveAPIKey(ctx, a.ID)
				wantErr(t, "ActiveAPIKey", err, nil)
				check(t, "ActiveAPIKey after a failed rotation", active, k2)
				active, err = s.ActiveAPIKey(ctx, b.ID)
				wantErr(t, "ActiveAPIKey(other app)", err, nil)
				check(t, "ActiveAPIKey(other app) after a failed rotation", active, bKey)
			})
		}
	})

	t.Run("Touch", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, k := mustApp(t, s, tm.ID, at(1))
		steps := []struct {
			at   int
			want int
		}{
			{at: 5, want: 5},
			{at: 3, want: 5}, // earlier: ignored
			{at: 5, want: 5},
			{at: 7, want: 7},
		}
		for _, st := range steps {
			if err := s.TouchAPIKey(ctx, k.Key, at(st.at)); err != nil {
				t.Fatalf("TouchAPIKey: %v", err)
			}
			k.LastSeen = at(st.want)
			_, got, err := s.AppByAPIKey(ctx, k.Key)
			wantErr(t, "AppByAPIKey", err, nil)
			check(t, "key after touch at "+at(st.at).String(), got, k)
		}
		active, err := s.ActiveAPIKey(ctx, a.ID)
		wantErr(t, "ActiveAPIKey", err, nil)
		check(t, "ActiveAPIKey after touches", active, k)
		wantErr(t, "TouchAPIKey(unknown)", s.TouchAPIKey(ctx, "no-such-key", at(8)), sinks.ErrNotFound)
	})
}
