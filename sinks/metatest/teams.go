package metatest

import (
	"bytes"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func testTeams(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()

	t.Run("CreateTeam", func(t *testing.T) {
		u, own := mustUser(t, s, at(0))
		later := mustTeam(t, s, at(10), u.ID)
		older := mustTeam(t, s, at(-10), u.ID) // stored last, created first
		// Two teams created at the same time come in id order.
		tieA := model.Team{ID: uuid.New(), Name: "tie a", CreatedAt: at(20), UpdatedAt: at(20)}
		tieB := model.Team{ID: uuid.New(), Name: "tie b", CreatedAt: at(20), UpdatedAt: at(20)}
		if bytes.Compare(tieA.ID[:], tieB.ID[:]) > 0 {
			tieA, tieB = tieB, tieA
		}
		for _, tm := range []model.Team{tieB, tieA} {
			if err := s.CreateTeam(ctx, tm, u.ID); err != nil {
				t.Fatalf("CreateTeam: %v", err)
			}
		}

		got, err := s.Team(ctx, later.ID)
		wantErr(t, "Team", err, nil)
		check(t, "Team", got, later)
		members, err := s.Members(ctx, later.ID)
		wantErr(t, "Members", err, nil)
		check(t, "Members", members, []model.Member{{TeamID: later.ID, UserID: u.ID, Role: model.RoleOwner, CreatedAt: later.CreatedAt, UpdatedAt: later.CreatedAt}})
		role, err := s.Role(ctx, later.ID, u.ID)
		wantErr(t, "Role", err, nil)
		check(t, "Role", role, model.RoleOwner)

		teams, err := s.TeamsOfUser(ctx, u.ID)
		wantErr(t, "TeamsOfUser", err, nil)
		var want []model.TeamRole
		for _, tm := range []model.Team{older, own, later, tieA, tieB} {
			want = append(want, model.TeamRole{Team: tm, Role: model.RoleOwner})
		}
		check(t, "TeamsOfUser", teams, want)

		ownNow, err := s.OwnTeam(ctx, u.ID)
		wantErr(t, "OwnTeam", err, nil)
		check(t, "OwnTeam after creating more teams", ownNow, own)
	})

	t.Run("DuplicateID", func(t *testing.T) {
		u, _ := mustUser(t, s, at(0))
		other, _ := mustUser(t, s, at(0))
		tm := mustTeam(t, s, at(1), u.ID)
		dup := model.Team{ID: tm.ID, Name: "dup", CreatedAt: at(2), UpdatedAt: at(2)}
		wantErr(t, "CreateTeam(duplicate id)", s.CreateTeam(ctx, dup, other.ID), sinks.ErrConflict)
		got, err := s.Team(ctx, tm.ID)
		wantErr(t, "Team", err, nil)
		check(t, "Team", got, tm)
		_, err = s.Role(ctx, tm.ID, other.ID)
		wantErr(t, "Role of the rejected owner", err, sinks.ErrNotFound)
	})

	t.Run("UnknownOwner", func(t *testing.T) {
		tm := model.Team{ID: uuid.New(), Name: "orphan", CreatedAt: at(1), UpdatedAt: at(1)}
		wantErr(t, "CreateTeam(unknown owner)", s.CreateTeam(ctx, tm, uuid.New()), sinks.ErrNotFound)
		_, err := s.Team(ctx, tm.ID)
		wantErr(t, "Team(rejected)", err, sinks.ErrNotFound)
	})

	t.Run("RenameTeam", func(t *testing.T) {
		u, own := mustUser(t, s, at(0))
		if err := s.RenameTeam(ctx, own.ID, "Renamed", at(3)); err != nil {
			t.Fatalf("RenameTeam: %v", err)
		}
		want := own
		want.Name, want.UpdatedAt = "Renamed", at(3)
		got, err := s.Team(ctx, own.ID)
		wantErr(t, "Team", err, nil)
		check(t, "Team", got, want)
		teams, err := s.TeamsOfUser(ctx, u.ID)
		wantErr(t, "TeamsOfUser", err, nil)
		check(t, "TeamsOfUser", teams, []model.TeamRole{{Team: want, Role: model.RoleOwner}})
		wantErr(t, "RenameTeam(unknown)", s.RenameTeam(ctx, uuid.New(), "x", at(4)), sinks.ErrNotFound)
	})
}
