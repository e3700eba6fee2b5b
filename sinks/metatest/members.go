package metatest

import (
	"bytes"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func testMembers(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()

	t.Run("AddMember", func(t *testing.T) {
		owner, tm := mustUser(t, s, at(0))
		// Stored out of order; Members lists by membership time, then user id.
		admin := mustMember(t, s, tm.ID, model.RoleAdmin, at(3))
		dev := mustMember(t, s, tm.ID, model.RoleDeveloper, at(1))
		viewer := mustMember(t, s, tm.ID, model.RoleViewer, at(2))
		tieA := mustMember(t, s, tm.ID, model.RoleViewer, at(4))
		tieB := mustMember(t, s, tm.ID, model.RoleDeveloper, at(4))
		if bytes.Compare(tieA.UserID[:], tieB.UserID[:]) > 0 {
			tieA, tieB = tieB, tieA
		}
		ownerM := model.Member{TeamID: tm.ID, UserID: owner.ID, Role: model.RoleOwner, CreatedAt: tm.CreatedAt, UpdatedAt: tm.CreatedAt}

		members, err := s.Members(ctx, tm.ID)
		wantErr(t, "Members", err, nil)
		check(t, "Members", members, []model.Member{ownerM, dev, viewer, admin, tieA, tieB})
		for _, m := range []model.Member{ownerM, admin, dev, viewer} {
			role, err := s.Role(ctx, tm.ID, m.UserID)
			wantErr(t, "Role", err, nil)
			check(t, "Role of the "+string(m.Role), role, m.Role)
		}

		// The developer's own team (created at 1) is younger than tm (created at 0).
		devOwn, err := s.OwnTeam(ctx, dev.UserID)
		wantErr(t, "OwnTeam", err, nil)
		teams, err := s.TeamsOfUser(ctx, dev.UserID)
		wantErr(t, "TeamsOfUser", err, nil)
		check(t, "TeamsOfUser", teams, []model.TeamRole{{Team: tm, Role: model.RoleDeveloper}, {Team: devOwn, Role: model.RoleOwner}})
	})

	t.Run("AddMemberErrors", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		m := mustMember(t, s, tm.ID, model.RoleViewer, at(1))
		stranger, _ := mustUser(t, s, at(0))
		cases := []struct {
			name string
			m    model.Member
			want error
		}{
			{"already a member", model.Member{TeamID: tm.ID, UserID: m.UserID, Role: model.RoleAdmin, CreatedAt: at(2), UpdatedAt: at(2)}, sinks.ErrConflict},
			{"unknown role", model.Member{TeamID: tm.ID, UserID: stranger.ID, Role: "boss", CreatedAt: at(2), UpdatedAt: at(2)}, sinks.ErrInvalid},
			{"empty role", model.Member{TeamID: tm.ID, UserID: stranger.ID, CreatedAt: at(2), UpdatedAt: at(2)}, sinks.ErrInvalid},
			{"role in upper case", model.Member{TeamID: tm.ID, UserID: stranger.ID, Role: "Owner", CreatedAt: at(2), UpdatedAt: at(2)}, sinks.ErrInvalid},
			{"unknown team", model.Member{TeamID: uuid.New(), UserID: stranger.ID, Role: model.RoleViewer, CreatedAt: at(2), UpdatedAt: at(2)}, sinks.ErrNotFound},
			{"unknown user", model.Member{TeamID: tm.ID, UserID: uuid.New(), Role: model.RoleViewer, CreatedAt: at(2), UpdatedAt: at(2)}, sinks.ErrNotFound},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				wantErr(t, "AddMember", s.AddMember(ctx, tc.m), tc.want)
			})
		}
		// None of them changed the team.
		role, err := s.Role(ctx, tm.ID, m.UserID)
		wantErr(t, "Role", err, nil)
		check(t, "Role of the member added twice", role, model.RoleViewer)
		_, err = s.Role(ctx, tm.ID, stranger.ID)
		wantErr(t, "Role of the stranger", err, sinks.ErrNotFound)
		members, err := s.Members(ctx, tm.ID)
		wantErr(t, "Members", err, nil)
		if len(members) != 2 {
			t.Errorf("Members after rejected adds: %d members, want 2: %+v", len(members), members)
		}
	})

	t.Run("RoleOfNonMember", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		stranger, _ := mustUser(t, s, at(0))
		_, err := s.Role(ctx, tm.ID, stranger.ID)
		wantErr(t, "Role(non-member)", err, sinks.ErrNotFound)
		_, err = s.Role(ctx, uuid.New(), stranger.ID)
		wantErr(t, "Role(unknown team)", err, sinks.ErrNotFound)
	})

	t.Run("SetMemberRole", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		m := mustMember(t, s, tm.ID, model.RoleViewer, at(1))
		if err := s.SetMemberRole(ctx, tm.ID, m.UserID, model.RoleAdmin, at(9)); err != nil {
			t.Fatalf("SetMemberRole: %v", err)
		}
		m.Role, m.UpdatedAt = model.RoleAdmin, at(9)
		role, err := s.Role(ctx, tm.ID, m.UserID)
		wantErr(t, "Role", err, nil)
		check(t, "Role", role, model.RoleAdmin)
		members, err := s.Members(ctx, tm.ID)
		wantErr(t, "Members", err, nil)
		if len(members) != 2 {
			t.Fatalf("Members: %d, want 2", len(members))
		}
		check(t, "changed member", members[1], m)
		teams, err := s.TeamsOfUser(ctx, m.UserID)
		wantErr(t, "TeamsOfUser", err, nil)
		if i := slices.IndexFunc(teams, func(tr model.TeamRole) bool { return tr.Team.ID == tm.ID }); i < 0 || teams[i].Role != model.RoleAdmin {
			t.Errorf("TeamsOfUser after SetMemberRole = %+v, want team %s with role admin", teams, tm.ID)
		}

		wantErr(t, "SetMemberRole(unknown role)", s.SetMemberRole(ctx, tm.ID, m.UserID, "root", at(10)), sinks.ErrInvalid)
		stranger, _ := mustUser(t, s, at(0))
		wantErr(t, "SetMemberRole(non-member)", s.SetMemberRole(ctx, tm.ID, stranger.ID, model.RoleViewer, at(10)), sinks.ErrNotFound)
		wantErr(t, "SetMemberRole(unknown team)", s.SetMemberRole(ctx, uuid.New(), m.UserID, model.RoleViewer, at(10)), sinks.ErrNotFound)
		_, err = s.Role(ctx, tm.ID, stranger.ID)
		wantErr(t, "Role of the stranger", err, sinks.ErrNotFound)
		members, err = s.Members(ctx, tm.ID)
		wantErr(t, "Members", err, nil)
		if len(members) == 2 {
			check(t, "member after rejected changes", members[1], m)
		} else {
			t.Errorf("Members after rejected changes: %+v", members)
		}
	})

	t.Run("RemoveMember", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		m := mustMember(t, s, tm.ID, model.RoleDeveloper, at(1))
		keep := mustMember(t, s, tm.ID, model.RoleViewer, at(2))
		if err := s.RemoveMember(ctx, tm.ID, m.UserID); err != nil {
			t.Fatalf("RemoveMember: %v", err)
		}
		_, err := s.Role(ctx, tm.ID, m.UserID)
		wantErr(t, "Role(removed)", err, sinks.ErrNotFound)
		members, err := s.Members(ctx, tm.ID)
		wantErr(t, "Members", err, nil)
		if len(members) != 2 || members[1].UserID != keep.UserID {
			t.Errorf("Members after RemoveMember = %+v, want the owner and %s", members, keep.UserID)
		}
		teams, err := s.TeamsOfUser(ctx, m.UserID)
		wantErr(t, "TeamsOfUser", err, nil)
		if len(teams) != 1 || teams[0].Team.ID == tm.ID {
			t.Errorf("TeamsOfUser(removed) = %+v, want only their own team", teams)
		}
		wantErr(t, "RemoveMember(again)", s.RemoveMember(ctx, tm.ID, m.UserID), sinks.ErrNotFound)
		wantErr(t, "RemoveMember(unknown team)", s.RemoveMember(ctx, uuid.New(), m.UserID), sinks.ErrNotFound)

		// A removed user can be added again.
		m.Role, m.CreatedAt, m.UpdatedAt = model.RoleAdmin, at(5), at(5)
		wantErr(t, "AddMember(after removal)", s.AddMember(ctx, m), nil)
		role, err := s.Role(ctx, tm.ID, m.UserID)
		wantErr(t, "Role(re-added)", err, nil)
		check(t, "Role(re-added)", role, model.RoleAdmin)
	})
}

// testLastOwner checks that no sequence of role changes and removals leaves a team without an
// owner, and that any other change is allowed.
func testLastOwner(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()
	type step struct {
		who    string     // "creator" (owner of the team) or a member added by the case
		remove bool       // RemoveMember, else SetMemberRole to role
		role   model.Role // for SetMemberRole
		want   error
	}
	cases := []struct {
		name  string
		add   map[string]model.Role // members to add before the steps
		steps []step
		final map[string]model.Role // every member afterwards
	}{
		{
			name:  "demote the only owner",
			steps: []step{{who: "creator", role: model.RoleAdmin, want: sinks.ErrLastOwner}},
			final: map[string]model.Role{"creator": model.RoleOwner},
		},
		{
			name:  "remove the only owner",
			add:   map[string]model.Role{"a": model.RoleAdmin},
			steps: []step{{who: "creator", remove: true, want: sinks.ErrLastOwner}},
			final: map[string]model.Role{"creator": model.RoleOwner, "a": model.RoleAdmin},
		},
		{
			name:  "the only owner stays owner",
			steps: []step{{who: "creator", role: model.RoleOwner}},
			final: map[string]model.Role{"creator": model.RoleOwner},
		},
		{
			name: "demote one of two owners",
			add:  map[string]model.Role{"b": model.RoleOwner},
			steps: []step{
				{who: "creator", role: model.RoleViewer},
				{who: "b", role: model.RoleAdmin, want: sinks.ErrLastOwner},
				{who: "b", remove: true, want: sinks.ErrLastOwner},
				{who: "creator", remove: true},
			},
			final: map[string]model.Role{"b": model.RoleOwner},
		},
		{
			name: "remove one of two owners",
			add:  map[string]model.Role{"b": model.RoleOwner},
			steps: []step{
				{who: "b", remove: true},
				{who: "creator", remove: true, want: sinks.ErrLastOwner},
			},
			final: map[string]model.Role{"creator": model.RoleOwner},
		},
		{
			name: "promote then leave",
			add:  map[string]model.Role{"c": model.RoleAdmin},
			steps: []step{
				{who: "c", role: model.RoleOwner},
				{who: "creator", remove: true},
				{who: "c", role: model.RoleDeveloper, want: sinks.ErrLastOwner},
			},
			final: map[string]model.Role{"c": model.RoleOwner},
		},
		{
			name: "non-owners are never blocked",
			add:  map[string]model.Role{"d": model.RoleDeveloper, "v": model.RoleViewer},
			steps: []step{
				{who: "d", role: model.RoleViewer},
				{who: "v", role: model.RoleAdmin},
				{who: "d", remove: true},
			},
			final: map[string]model.Role{"creator": model.RoleOwner, "v": model.RoleAdmin},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			creator, tm := mustUser(t, s, at(0))
			ids := map[string]uuid.UUID{"creator": creator.ID}
			for who, role := range tc.add {
				ids[who] = mustMember(t, s, tm.ID, role, at(1)).UserID
			}
			for i, st := range tc.steps {
				var err error
				if st.remove {
					err = s.RemoveMember(ctx, tm.ID, ids[st.who])
				} else {
					err = s.SetMemberRole(ctx, tm.ID, ids[st.who], st.role, at(2+i))
				}
				wantErr(t, "step "+string(rune('1'+i))+" ("+st.who+")", err, st.want)
			}
			members, err := s.Members(ctx, tm.ID)
			wantErr(t, "Members", err, nil)
			got := map[string]model.Role{}
			for _, m := range members {
				for who, id := range ids {
					if id == m.UserID {
						got[who] = m.Role
					}
				}
			}
			check(t, "members afterwards", got, tc.final)
		})
	}
}
