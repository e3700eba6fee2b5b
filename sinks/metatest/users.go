package metatest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func testUsers(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()

	t.Run("CreateAndRead", func(t *testing.T) {
		u, own := newUser(at(0))
		u.LastSignInAt = at(1)
		if err := s.CreateUser(ctx, u, own); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		got, err := s.User(ctx, u.ID)
		wantErr(t, "User", err, nil)
		check(t, "User", got, u)

		for _, email := range []string{u.Email, strings.ToLower(u.Email), strings.ToUpper(u.Email), "uSER." + strings.TrimPrefix(u.Email, "User.")} {
			got, err := s.UserByEmail(ctx, email)
			wantErr(t, "UserByEmail("+email+")", err, nil)
			check(t, "UserByEmail("+email+")", got, u)
		}

		team, err := s.OwnTeam(ctx, u.ID)
		wantErr(t, "OwnTeam", err, nil)
		check(t, "OwnTeam", team, own)
		team, err = s.Team(ctx, own.ID)
		wantErr(t, "Team", err, nil)
		check(t, "Team", team, own)

		role, err := s.Role(ctx, own.ID, u.ID)
		wantErr(t, "Role", err, nil)
		check(t, "Role", role, model.RoleOwner)
		members, err := s.Members(ctx, own.ID)
		wantErr(t, "Members", err, nil)
		check(t, "Members", members, []model.Member{{TeamID: own.ID, UserID: u.ID, Role: model.RoleOwner, CreatedAt: own.CreatedAt, UpdatedAt: own.CreatedAt}})
		teams, err := s.TeamsOfUser(ctx, u.ID)
		wantErr(t, "TeamsOfUser", err, nil)
		check(t, "TeamsOfUser", teams, []model.TeamRole{{Team: own, Role: model.RoleOwner}})
	})

	t.Run("ZeroTimes", func(t *testing.T) {
		u, own := newUser(at(0))
		u.ConfirmedAt, u.LastSignInAt = time.Time{}, time.Time{}
		if err := s.CreateUser(ctx, u, own); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		got, err := s.User(ctx, u.ID)
		wantErr(t, "User", err, nil)
		if !got.ConfirmedAt.IsZero() || !got.LastSignInAt.IsZero() {
			t.Errorf("zero ConfirmedAt, LastSignInAt came back as %v, %v", got.ConfirmedAt, got.LastSignInAt)
		}
		check(t, "User", got, u)
	})

	t.Run("Conflicts", func(t *testing.T) {
		u, own := mustUser(t, s, at(0))
		cases := []struct {
			name string
			edit func(cand *model.User, candTeam *model.Team)
		}{
			{"email upper case", func(c *model.User, _ *model.Team) { c.Email = strings.ToUpper(u.Email) }},
			{"email lower case", func(c *model.User, _ *model.Team) { c.Email = strings.ToLower(u.Email) }},
			{"email identical", func(c *model.User, _ *model.Team) { c.Email = u.Email }},
			{"user id taken", func(c *model.User, _ *model.Team) { c.ID = u.ID }},
			{"own team id taken", func(_ *model.User, ct *model.Team) { ct.ID = own.ID }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				cand, candTeam := newUser(at(1))
				cand.Name, candTeam.Name = "Intruder", "Intruder's team"
				tc.edit(&cand, &candTeam)
				wantErr(t, "CreateUser", s.CreateUser(ctx, cand, candTeam), sinks.ErrConflict)

				// Nothing of the failed call is stored and the existing user is untouched.
				got, err := s.User(ctx, u.ID)
				wantErr(t, "User(existing)", err, nil)
				check(t, "User(existing)", got, u)
				team, err := s.Team(ctx, own.ID)
				wantErr(t, "Team(existing)", err, nil)
				check(t, "Team(existing)", team, own)
				members, err := s.Members(ctx, own.ID)
				wantErr(t, "Members(existing)", err, nil)
				check(t, "Members(existing)", members, []model.Member{{TeamID: own.ID, UserID: u.ID, Role: model.RoleOwner, CreatedAt: own.CreatedAt, UpdatedAt: own.CreatedAt}})
				if cand.ID != u.ID {
					_, err := s.User(ctx, cand.ID)
					wantErr(t, "User(rejected)", err, sinks.ErrNotFound)
				}
				if candTeam.ID != own.ID {
					_, err := s.Team(ctx, candTeam.ID)
					wantErr(t, "Team(rejected)", err, sinks.ErrNotFound)
				}
				if !strings.EqualFold(cand.Email, u.Email) {
					_, err := s.UserByEmail(ctx, cand.Email)
					wantErr(t, "UserByEmail(rejected)", err, sinks.ErrNotFound)
				}
			})
		}
	})

	t.Run("UpdateUser", func(t *testing.T) {
		u, _ := mustUser(t, s, at(0))
		upd := u
		upd.Name = "Renamed"
		upd.ConfirmedAt, upd.LastSignInAt, upd.UpdatedAt = at(5), at(6), at(7)
		// Not replaced by UpdateUser: email and creation time.
		upd.Email = "changed." + u.Email
		upd.CreatedAt = at(-100)
		if err := s.UpdateUser(ctx, upd); err != nil {
			t.Fatalf("UpdateUser: %v", err)
		}
		want := u
		want.Name, want.ConfirmedAt, want.LastSignInAt, want.UpdatedAt = upd.Name, upd.ConfirmedAt, upd.LastSignInAt, upd.UpdatedAt
		got, err := s.User(ctx, u.ID)
		wantErr(t, "User", err, nil)
		check(t, "User", got, want)
		got, err = s.UserByEmail(ctx, u.Email)
		wantErr(t, "UserByEmail(old)", err, nil)
		check(t, "UserByEmail(old)", got, want)
		_, err = s.UserByEmail(ctx, upd.Email)
		wantErr(t, "UserByEmail(ignored new email)", err, sinks.ErrNotFound)

		// Times can be cleared again.
		upd.ConfirmedAt, upd.LastSignInAt, upd.UpdatedAt = time.Time{}, time.Time{}, at(8)
		if err := s.UpdateUser(ctx, upd); err != nil {
			t.Fatalf("UpdateUser: %v", err)
		}
		want.ConfirmedAt, want.LastSignInAt, want.UpdatedAt = time.Time{}, time.Time{}, at(8)
		got, err = s.User(ctx, u.ID)
		wantErr(t, "User", err, nil)
		check(t, "User after clearing", got, want)

		missing := upd
		missing.ID = uuid.New()
		wantErr(t, "UpdateUser(unknown)", s.UpdateUser(ctx, missing), sinks.ErrNotFound)
		_, err = s.User(ctx, missing.ID)
		wantErr(t, "User(after UpdateUser of unknown)", err, sinks.ErrNotFound)
	})
}
