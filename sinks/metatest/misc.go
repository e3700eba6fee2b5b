package metatest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// testTimes checks precision and zones beyond the microsecond-aligned times of the other tests.
func testTimes(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()
	zone := time.FixedZone("UTC-7", -7*60*60)
	cases := []struct {
		name string
		t    time.Time
	}{
		{"nanoseconds", time.Date(2025, 1, 2, 3, 4, 5, 123456789, zone)},
		{"before 1970", time.Date(1969, 12, 31, 23, 59, 59, 500000000, time.UTC)},
		{"far future", time.Date(2200, 6, 7, 8, 9, 10, 999999000, zone)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, own := newUser(tc.t)
			u.LastSignInAt = tc.t
			if err := s.CreateUser(ctx, u, own); err != nil {
				t.Fatalf("CreateUser: %v", err)
			}
			got, err := s.User(ctx, u.ID)
			wantErr(t, "User", err, nil)
			for name, gt := range map[string]time.Time{"CreatedAt": got.CreatedAt, "UpdatedAt": got.UpdatedAt, "LastSignInAt": got.LastSignInAt} {
				if d := gt.Sub(tc.t).Abs(); d >= time.Microsecond {
					t.Errorf("%s = %s, want %s within 1µs (off by %s)", name, gt.Format(time.RFC3339Nano), tc.t.UTC().Format(time.RFC3339Nano), d)
				}
				if gt.Location() != time.UTC {
					t.Errorf("%s is in zone %q, want UTC", name, gt.Location())
				}
			}
			a := mustSession(t, s, u.ID, tc.t, tc.t)
			sess, err := s.AuthSession(ctx, a.ID)
			wantErr(t, "AuthSession", err, nil)
			if d := sess.ExpiresAt.Sub(tc.t).Abs(); d >= time.Microsecond || sess.ExpiresAt.Location() != time.UTC {
				t.Errorf("ExpiresAt = %s, want %s in UTC", sess.ExpiresAt.Format(time.RFC3339Nano), tc.t.UTC().Format(time.RFC3339Nano))
			}
			// Expiry compares instants, whatever the zone of now.
			n, err := s.DeleteExpiredAuthSessions(ctx, tc.t.Add(-time.Microsecond).In(time.UTC))
			wantErr(t, "DeleteExpiredAuthSessions(before)", err, nil)
			if n != 0 {
				t.Errorf("DeleteExpiredAuthSessions just before the expiry = %d, want 0", n)
			}
			n, err = s.DeleteExpiredAuthSessions(ctx, tc.t.Add(time.Microsecond).In(zone))
			wantErr(t, "DeleteExpiredAuthSessions(after)", err, nil)
			if n != 1 {
				t.Errorf("DeleteExpiredAuthSessions just after the expiry = %d, want 1", n)
			}
		})
	}
}

// testNotFound checks that every method given an unknown id says ErrNotFound.
func testNotFound(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()
	u, tm := mustUser(t, s, at(0))
	a, _ := mustApp(t, s, tm.ID, at(1))
	unknown := uuid.New()
	cases := []struct {
		name string
		call func() error
	}{
		{"User", func() error { _, err := s.User(ctx, unknown); return err }},
		{"UserByEmail", func() error { _, err := s.UserByEmail(ctx, "nobody@example.com"); return err }},
		{"UserByEmail(empty)", func() error { _, err := s.UserByEmail(ctx, ""); return err }},
		{"OwnTeam", func() error { _, err := s.OwnTeam(ctx, unknown); return err }},
		{"UpdateUser", func() error { return s.UpdateUser(ctx, model.User{ID: unknown, Name: "x"}) }},
		{"Team", func() error { _, err := s.Team(ctx, unknown); return err }},
		{"RenameTeam", func() error { return s.RenameTeam(ctx, unknown, "x", at(1)) }},
		{"TeamsOfUser", func() error { _, err := s.TeamsOfUser(ctx, unknown); return err }},
		{"CreateTeam(owner)", func() error {
			return s.CreateTeam(ctx, model.Team{ID: uuid.New(), Name: "x", CreatedAt: at(1), UpdatedAt: at(1)}, unknown)
		}},
		{"AddMember(team)", func() error {
			return s.AddMember(ctx, model.Member{TeamID: unknown, UserID: u.ID, Role: model.RoleViewer, CreatedAt: at(1), UpdatedAt: at(1)})
		}},
		{"AddMember(user)", func() error {
			return s.AddMember(ctx, model.Member{TeamID: tm.ID, UserID: unknown, Role: model.RoleViewer, CreatedAt: at(1), UpdatedAt: at(1)})
		}},
		{"Role(team)", func() error { _, err := s.Role(ctx, unknown, u.ID); return err }},
		{"Role(user)", func() error { _, err := s.Role(ctx, tm.ID, unknown); return err }},
		{"Members", func() error { _, err := s.Members(ctx, unknown); return err }},
		{"SetMemberRole(team)", func() error { return s.SetMemberRole(ctx, unknown, u.ID, model.RoleViewer, at(1)) }},
		{"SetMemberRole(user)", func() error { return s.SetMemberRole(ctx, tm.ID, unknown, model.RoleViewer, at(1)) }},
		{"RemoveMember(team)", func() error { return s.RemoveMember(ctx, unknown, u.ID) }},
		{"RemoveMember(user)", func() error { return s.RemoveMember(ctx, tm.ID, unknown) }},
		{"CreateApp(team)", func() error { app, k := newApp(unknown, at(1)); return s.CreateApp(ctx, app, k) }},
		{"App", func() error { _, err := s.App(ctx, unknown); return err }},
		{"AppsOfTeam", func() error { _, err := s.AppsOfTeam(ctx, unknown); return err }},
		{"UpdateApp", func() error {
			upd := a
			upd.ID = unknown
			return s.UpdateApp(ctx, upd)
		}},
		{"AppByAPIKey", func() error { _, _, err := s.AppByAPIKey(ctx, "msrsh_unknown"); return err }},
		{"ActiveAPIKey", func() error { _, err := s.ActiveAPIKey(ctx, unknown); return err }},
		{"RotateAPIKey", func() error { return s.RotateAPIKey(ctx, newKey(unknown, at(1))) }},
		{"TouchAPIKey", func() error { return s.TouchAPIKey(ctx, "msrsh_unknown", at(1)) }},
		{"PutBuild", func() error { return s.PutBuild(ctx, newBuild(unknown, "1", "1", "apk", 1, at(1))) }},
		{"Builds", func() error { _, err := s.Builds(ctx, unknown); return err }},
		{"AddMappings", func() error { return s.AddMappings(ctx, []model.Mapping{newMapping(unknown, "1", "1", at(1))}) }},
		{"Mappings", func() error { _, err := s.Mappings(ctx, unknown, "1", "1"); return err }},
		{"SDKConfig(unknown app)", func() error { _, _, err := s.SDKConfig(ctx, unknown); return err }},
		{"SDKConfig(never set)", func() error { _, _, err := s.SDKConfig(ctx, a.ID); return err }},
		{"SetSDKConfig", func() error { return s.SetSDKConfig(ctx, unknown, model.DefaultSDKConfig(), at(1)) }},
		{"CreateAuthSession(user)", func() error { return s.CreateAuthSession(ctx, newSession(unknown, at(1), at(2))) }},
		{"AuthSession", func() error { _, err := s.AuthSession(ctx, unknown); return err }},
		{"RotateAuthSession", func() error { return s.RotateAuthSession(ctx, unknown, uuid.New(), uuid.New(), at(2)) }},
		{"DeleteAuthSession", func() error { return s.DeleteAuthSession(ctx, unknown) }},
		{"CreateInvites(team)", func() error {
			return s.CreateInvites(ctx, []model.Invite{newInvite(unknown, u.ID, newEmail(), model.RoleViewer, at(1))})
		}},
		{"CreateInvites(inviter)", func() error {
			return s.CreateInvites(ctx, []model.Invite{newInvite(tm.ID, unknown, newEmail(), model.RoleViewer, at(1))})
		}},
		{"Invite", func() error { _, err := s.Invite(ctx, unknown); return err }},
		{"Invites", func() error { _, err := s.Invites(ctx, unknown); return err }},
		{"UpdateInvite", func() error {
			return s.UpdateInvite(ctx, newInvite(tm.ID, u.ID, newEmail(), model.RoleViewer, at(1)))
		}},
		{"DeleteInvite", func() error { return s.DeleteInvite(ctx, unknown) }},
		{"AcceptInvites(user)", func() error { _, err := s.AcceptInvites(ctx, u.Email, unknown, at(1)); return err }},
		{"ThresholdPrefs(unknown app)", func() error { _, err := s.ThresholdPrefs(ctx, unknown); return err }},
		{"ThresholdPrefs(never set)", func() error { _, err := s.ThresholdPrefs(ctx, a.ID); return err }},
		{"SetThresholdPrefs", func() error {
			return s.SetThresholdPrefs(ctx, unknown, model.DefaultThresholdPrefs(), at(1))
		}},
		{"PutShortFilter", func() error { return s.PutShortFilter(ctx, newShortFilter(unknown, `{}`, at(1))) }},
		{"ShortFilter(unknown app)", func() error {
			_, err := s.ShortFilter(ctx, unknown, newShortFilter(unknown, `{}`, at(1)).Code)
			return err
		}},
		{"ShortFilter(unknown code)", func() error {
			_, err := s.ShortFilter(ctx, a.ID, newShortFilter(a.ID, `{}`, at(1)).Code)
			return err
		}},
		{"ChatApp(unknown team)", func() error { _, err := s.ChatApp(ctx, unknown); return err }},
		{"ChatApp(never set)", func() error { _, err := s.ChatApp(ctx, tm.ID); return err }},
		{"SetChatApp", func() error {
			return s.SetChatApp(ctx, model.ChatApp{TeamID: unknown, WebhookURL: "https://hooks.example/", UpdatedAt: at(1)})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.name, tc.call(), sinks.ErrNotFound)
		})
	}
}

// testConcurrency checks that the atomic methods stay correct when calls race.
func testConcurrency(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()
	const n = 8

	t.Run("RotateAuthSession", func(t *testing.T) {
		for round := range 3 {
			u, _ := mustUser(t, s, at(0))
			a := mustSession(t, s, u.ID, at(0), at(60))
			news := make([]uuid.UUID, n)
			for i := range news {
				news[i] = uuid.New()
			}
			errs := race(n, func(i int) error {
				return s.RotateAuthSession(ctx, a.ID, a.RefreshID, news[i], at(100+i))
			})
			wins, _, unexpected := tally(errs, sinks.ErrConflict)
			if wins != 1 || len(unexpected) > 0 {
				t.Fatalf("round %d: %d of %d rotations with the same refresh id won, want exactly 1 (others ErrConflict); unexpected errors: %v", round, wins, n, unexpected)
			}
			winner := slices.IndexFunc(errs, func(err error) bool { return err == nil })
			got, err := s.AuthSession(ctx, a.ID)
			wantErr(t, "AuthSession", err, nil)
			a.RefreshID, a.ExpiresAt = news[winner], at(100+winner)
			check(t, "AuthSession after the race", got, a)
		}
	})

	// Two owners leave, or step down, at the same time: exactly one may.
	ownerRaces := []struct {
		name string
		op   func(team, user uuid.UUID, i int) error
	}{
		{"RemoveBothOwners", func(team, user uuid.UUID, _ int) error { return s.RemoveMember(ctx, team, user) }},
		{"DemoteBothOwners", func(team, user uuid.UUID, _ int) error {
			return s.SetMemberRole(ctx, team, user, model.RoleAdmin, at(5))
		}},
		{"DemoteOneRemoveOther", func(team, user uuid.UUID, i int) error {
			if i == 0 {
				return s.SetMemberRole(ctx, team, user, model.RoleViewer, at(5))
			}
			return s.RemoveMember(ctx, team, user)
		}},
	}
	for _, rc := range ownerRaces {
		t.Run(rc.name, func(t *testing.T) {
			for round := range 5 {
				first, tm := mustUser(t, s, at(0))
				second := mustMember(t, s, tm.ID, model.RoleOwner, at(1))
				users := []uuid.UUID{first.ID, second.UserID}
				errs := race(2, func(i int) error { return rc.op(tm.ID, users[i], i) })
				wins, _, unexpected := tally(errs, sinks.ErrLastOwner)
				if wins != 1 || len(unexpected) > 0 {
					t.Fatalf("round %d: %d of 2 owners got away, want exactly 1 (the other ErrLastOwner); errors: %v", round, wins, errs)
				}
				members, err := s.Members(ctx, tm.ID)
				wantErr(t, "Members", err, nil)
				owners := 0
				for _, m := range members {
					if m.Role == model.RoleOwner {
						owners++
					}
				}
				if owners != 1 {
					t.Fatalf("round %d: %d owners after the race, want 1: %+v", round, owners, members)
				}
			}
		})
	}

	t.Run("RotateAPIKey", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, k0 := mustApp(t, s, tm.ID, at(1))
		keys := make([]model.APIKey, n)
		for i := range keys {
			keys[i] = newKey(a.ID, at(2+i))
		}
		errs := race(n, func(i int) error { return s.RotateAPIKey(ctx, keys[i]) })
		for _, err := range errs {
			wantErr(t, "concurrent RotateAPIKey", err, nil)
		}
		var active []string
		for _, k := range append([]model.APIKey{k0}, keys...) {
			_, got, err := s.AppByAPIKey(ctx, k.Key)
			wantErr(t, "AppByAPIKey", err, nil)
			if !got.Revoked {
				active = append(active, got.Key)
			}
		}
		if len(active) != 1 {
			t.Fatalf("%d unrevoked keys after %d concurrent rotations, want 1: %v", len(active), n, active)
		}
		got, err := s.ActiveAPIKey(ctx, a.ID)
		wantErr(t, "ActiveAPIKey", err, nil)
		if got.Key != active[0] || got.Revoked {
			t.Errorf("ActiveAPIKey = %+v, want the one unrevoked key %s", got, active[0])
		}
	})

	t.Run("TouchAPIKey", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		_, k := mustApp(t, s, tm.ID, at(1))
		errs := race(n, func(i int) error { return s.TouchAPIKey(ctx, k.Key, at(10+(i*5)%n)) })
		for _, err := range errs {
			wantErr(t, "concurrent TouchAPIKey", err, nil)
		}
		_, got, err := s.AppByAPIKey(ctx, k.Key)
		wantErr(t, "AppByAPIKey", err, nil)
		k.LastSeen = at(10 + n - 1)
		check(t, "key after concurrent touches", got, k)
	})

	t.Run("CreateUserSameEmail", func(t *testing.T) {
		email := "Race." + uuid.NewString() + "@example.com"
		errs := race(n, func(i int) error {
			u, own := newUser(at(0))
			u.Email = email
			if i%2 == 1 {
				u.Email = strings.ToUpper(email)
			}
			return s.CreateUser(ctx, u, own)
		})
		wins, _, unexpected := tally(errs, sinks.ErrConflict)
		if wins != 1 || len(unexpected) > 0 {
			t.Fatalf("%d of %d users with the same email were created, want 1 (others ErrConflict); unexpected errors: %v", wins, n, unexpected)
		}
		if _, err := s.UserByEmail(ctx, email); err != nil {
			t.Errorf("UserByEmail after the race: %v", err)
		}
	})

	t.Run("AddMemberTwice", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		u, _ := mustUser(t, s, at(0))
		roles := []model.Role{model.RoleAdmin, model.RoleDeveloper, model.RoleViewer, model.RoleOwner}
		errs := race(len(roles), func(i int) error {
			return s.AddMember(ctx, model.Member{TeamID: tm.ID, UserID: u.ID, Role: roles[i], CreatedAt: at(1), UpdatedAt: at(1)})
		})
		wins, _, unexpected := tally(errs, sinks.ErrConflict)
		if wins != 1 || len(unexpected) > 0 {
			t.Fatalf("%d of %d concurrent AddMember of one user won, want 1; unexpected errors: %v", wins, len(roles), unexpected)
		}
		winner := slices.IndexFunc(errs, func(err error) bool { return err == nil })
		role, err := s.Role(ctx, tm.ID, u.ID)
		wantErr(t, "Role", err, nil)
		check(t, "Role after the race", role, roles[winner])
	})
}
