package metatest

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// newInvite returns an invite of team to email created at c, expiring model.InviteTTL later.
func newInvite(team, by uuid.UUID, email string, role model.Role, c time.Time) model.Invite {
	return model.Invite{ID: uuid.New(), TeamID: team, Email: email, Role: role, InvitedBy: by, CreatedAt: c, UpdatedAt: c, ExpiresAt: c.Add(model.InviteTTL)}
}

// newEmail returns a fresh email with upper-case ASCII letters and a non-ASCII one, é, whose
// case AcceptInvites does not fold.
func newEmail() string { return "José." + uuid.NewString() + "@Example.com" }

// asciiUpper raises a–z only, as the invite rule's folding does the other way.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func mustInvites(t *testing.T, s sinks.MetaStore, invs ...model.Invite) {
	t.Helper()
	if err := s.CreateInvites(t.Context(), invs); err != nil {
		t.Fatalf("CreateInvites: %v", err)
	}
}

// checkInvites fails the test unless Invites(team) returns want.
func checkInvites(t *testing.T, s sinks.MetaStore, what string, team uuid.UUID, want []model.Invite) {
	t.Helper()
	got, err := s.Invites(t.Context(), team)
	wantErr(t, "Invites", err, nil)
	check(t, what, got, want)
}

// sortInvites orders invites as Invites lists them.
func sortInvites(invs []model.Invite) []model.Invite {
	out := slices.Clone(invs)
	slices.SortFunc(out, func(a, b model.Invite) int { return byTime(a.CreatedAt, b.CreatedAt, a.ID, b.ID) })
	return out
}

func testInvites(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()

	t.Run("CreateAndList", func(t *testing.T) {
		owner, tm := mustUser(t, s, at(0))
		_, other := mustUser(t, s, at(0))
		checkInvites(t, s, "Invites of a team without invites", tm.ID, nil)

		later := newInvite(tm.ID, owner.ID, newEmail(), model.RoleAdmin, at(3))
		older := newInvite(tm.ID, owner.ID, newEmail(), model.RoleViewer, at(1))
		tieA := newInvite(tm.ID, owner.ID, newEmail(), model.RoleDeveloper, at(2))
		tieB := newInvite(tm.ID, owner.ID, tieA.Email, model.RoleOwner, at(2))
		if bytes.Compare(tieA.ID[:], tieB.ID[:]) > 0 {
			tieA, tieB = tieB, tieA
		}
		// Listed although expired long ago.
		expired := newInvite(tm.ID, owner.ID, newEmail(), model.RoleViewer, at(-1))
		expired.ExpiresAt = at(-1).Add(time.Second)
		// Updated later than created: both times come back as written.
		expired.UpdatedAt = at(4)
		otherTeam := newInvite(other.ID, owner.ID, later.Email, model.RoleAdmin, at(0))
		mustInvites(t, s, later, tieB, otherTeam)
		mustInvites(t, s, expired, older, tieA)
		wantErr(t, "CreateInvites(empty batch)", s.CreateInvites(ctx, nil), nil)

		checkInvites(t, s, "Invites", tm.ID, []model.Invite{expired, older, tieA, tieB, later})
		checkInvites(t, s, "Invites of the other team", other.ID, []model.Invite{otherTeam})
		for _, want := range []model.Invite{later, older, tieA, tieB, expired, otherTeam} {
			got, err := s.Invite(ctx, want.ID)
			wantErr(t, "Invite", err, nil)
			check(t, "Invite", got, want)
		}
	})

	t.Run("CreateErrors", func(t *testing.T) {
		owner, tm := mustUser(t, s, at(0))
		taken := newInvite(tm.ID, owner.ID, newEmail(), model.RoleViewer, at(1))
		mustInvites(t, s, taken)
		cases := []struct {
			name string
			// bad returns the batch's last invite, made from good (the batch's first).
			bad  func(good model.Invite) model.Invite
			want error
		}{
			{"id taken", func(g model.Invite) model.Invite {
				i := newInvite(g.TeamID, owner.ID, newEmail(), model.RoleViewer, at(3))
				i.ID = taken.ID
				return i
			}, sinks.ErrConflict},
			{"id twice in the batch", func(g model.Invite) model.Invite {
				i := newInvite(g.TeamID, owner.ID, newEmail(), model.RoleViewer, at(3))
				i.ID = g.ID
				return i
			}, sinks.ErrConflict},
			{"unknown team", func(model.Invite) model.Invite {
				return newInvite(uuid.New(), owner.ID, newEmail(), model.RoleViewer, at(3))
			}, sinks.ErrNotFound},
			{"unknown inviter", func(g model.Invite) model.Invite {
				return newInvite(g.TeamID, uuid.New(), newEmail(), model.RoleViewer, at(3))
			}, sinks.ErrNotFound},
			{"unknown role", func(g model.Invite) model.Invite {
				return newInvite(g.TeamID, owner.ID, newEmail(), "boss", at(3))
			}, sinks.ErrInvalid},
			{"empty role", func(g model.Invite) model.Invite {
				return newInvite(g.TeamID, owner.ID, newEmail(), "", at(3))
			}, sinks.ErrInvalid},
			{"empty email", func(g model.Invite) model.Invite {
				return newInvite(g.TeamID, owner.ID, "", model.RoleViewer, at(3))
			}, sinks.ErrInvalid},
			{"NUL in email", func(g model.Invite) model.Invite {
				return newInvite(g.TeamID, owner.ID, "a\x00@example.com", model.RoleViewer, at(3))
			}, sinks.ErrInvalid},
			{"invalid UTF-8 in email", func(g model.Invite) model.Invite {
				return newInvite(g.TeamID, owner.ID, "a\xff@example.com", model.RoleViewer, at(3))
			}, sinks.ErrInvalid},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				team := mustTeam(t, s, at(1), owner.ID)
				good := newInvite(team.ID, owner.ID, newEmail(), model.RoleAdmin, at(2))
				good2 := newInvite(team.ID, owner.ID, newEmail(), model.RoleDeveloper, at(2))
				wantErr(t, "CreateInvites", s.CreateInvites(ctx, []model.Invite{good, good2, tc.bad(good)}), tc.want)
				checkInvites(t, s, "Invites after a rejected batch", team.ID, nil)
				for _, g := range []model.Invite{good, good2} {
					_, err := s.Invite(ctx, g.ID)
					wantErr(t, "Invite(rejected)", err, sinks.ErrNotFound)
				}
				// None of the batch was stored: its good invites can be created now.
				mustInvites(t, s, good, good2)
				checkInvites(t, s, "Invites after creating the good invites", team.ID, sortInvites([]model.Invite{good, good2}))
			})
		}
		checkInvites(t, s, "Invites of the taken id's team", tm.ID, []model.Invite{taken})
		got, err := s.Invite(ctx, taken.ID)
		wantErr(t, "Invite(taken)", err, nil)
		check(t, "Invite(taken)", got, taken)
	})

	t.Run("UpdateAndDelete", func(t *testing.T) {
		owner, tm := mustUser(t, s, at(0))
		_, other := mustUser(t, s, at(0))
		inv := newInvite(tm.ID, owner.ID, newEmail(), model.RoleViewer, at(1))
		keep := newInvite(tm.ID, owner.ID, newEmail(), model.RoleDeveloper, at(2))
		mustInvites(t, s, inv, keep)

		upd := inv
		upd.Role, upd.ExpiresAt, upd.UpdatedAt = model.RoleAdmin, at(1).Add(2*model.InviteTTL), at(5)
		// Not replaced by UpdateInvite: team, email, inviter and creation time.
		upd.TeamID, upd.Email, upd.InvitedBy, upd.CreatedAt = other.ID, "changed."+inv.Email, uuid.New(), at(-50)
		wantErr(t, "UpdateInvite", s.UpdateInvite(ctx, upd), nil)
		want := inv
		want.Role, want.ExpiresAt, want.UpdatedAt = upd.Role, upd.ExpiresAt, upd.UpdatedAt
		got, err := s.Invite(ctx, inv.ID)
		wantErr(t, "Invite", err, nil)
		check(t, "Invite after UpdateInvite", got, want)
		checkInvites(t, s, "Invites after UpdateInvite", tm.ID, []model.Invite{want, keep})
		checkInvites(t, s, "Invites of the other team", other.ID, nil)

		// An update may shorten the invite into the past.
		upd.ExpiresAt, upd.UpdatedAt = at(0), at(6)
		wantErr(t, "UpdateInvite(expire)", s.UpdateInvite(ctx, upd), nil)
		want.ExpiresAt, want.UpdatedAt = at(0), at(6)
		got, err = s.Invite(ctx, inv.ID)
		wantErr(t, "Invite", err, nil)
		check(t, "Invite after expiring it", got, want)

		for _, role := range []model.Role{"", "boss", "Admin"} {
			bad := upd
			bad.Role, bad.UpdatedAt = role, at(7)
			wantErr(t, fmt.Sprintf("UpdateInvite(role %q)", role), s.UpdateInvite(ctx, bad), sinks.ErrInvalid)
		}
		got, err = s.Invite(ctx, inv.ID)
		wantErr(t, "Invite", err, nil)
		check(t, "Invite after rejected updates", got, want)
		missing := upd
		missing.ID = uuid.New()
		wantErr(t, "UpdateInvite(unknown)", s.UpdateInvite(ctx, missing), sinks.ErrNotFound)

		wantErr(t, "DeleteInvite", s.DeleteInvite(ctx, inv.ID), nil)
		_, err = s.Invite(ctx, inv.ID)
		wantErr(t, "Invite(deleted)", err, sinks.ErrNotFound)
		checkInvites(t, s, "Invites after DeleteInvite", tm.ID, []model.Invite{keep})
		wantErr(t, "DeleteInvite(again)", s.DeleteInvite(ctx, inv.ID), sinks.ErrNotFound)
		wantErr(t, "UpdateInvite(deleted)", s.UpdateInvite(ctx, upd), sinks.ErrNotFound)

		// A deleted invite is not accepted; the one left is.
		u, _ := mustUser(t, s, at(0))
		for _, email := range []string{inv.Email, keep.Email} {
			if _, err := s.AcceptInvites(ctx, email, u.ID, at(10)); err != nil {
				t.Fatalf("AcceptInvites: %v", err)
			}
		}
		role, err := s.Role(ctx, tm.ID, u.ID)
		wantErr(t, "Role", err, nil)
		check(t, "Role after accepting the invite left", role, keep.Role)
	})

	t.Run("Accept", testAccept(s))

	t.Run("AcceptErrors", func(t *testing.T) {
		owner, tm := mustUser(t, s, at(0))
		email := newEmail()
		inv := newInvite(tm.ID, owner.ID, email, model.RoleViewer, at(1))
		mustInvites(t, s, inv)
		_, err := s.AcceptInvites(ctx, email, uuid.New(), at(2))
		wantErr(t, "AcceptInvites(unknown user)", err, sinks.ErrNotFound)
		for _, bad := range []string{email + "\x00", "\xff" + email} {
			u, _ := mustUser(t, s, at(0))
			_, err := s.AcceptInvites(ctx, bad, u.ID, at(2))
			wantErr(t, fmt.Sprintf("AcceptInvites(%q)", bad), err, sinks.ErrInvalid)
		}
		checkInvites(t, s, "Invites after failed accepts", tm.ID, []model.Invite{inv})
	})

	t.Run("Times", func(t *testing.T) {
		owner, _ := mustUser(t, s, at(0))
		for _, tc := range oddTimes {
			t.Run(tc.name, func(t *testing.T) {
				team := mustTeam(t, s, tc.t, owner.ID)
				inv := newInvite(team.ID, owner.ID, newEmail(), model.RoleViewer, tc.t)
				inv.UpdatedAt, inv.ExpiresAt = tc.t.Add(time.Hour), tc.t.Add(2*time.Hour)
				mustInvites(t, s, inv)
				got, err := s.Invite(ctx, inv.ID)
				wantErr(t, "Invite", err, nil)
				checkTime(t, "CreatedAt", got.CreatedAt, inv.CreatedAt)
				checkTime(t, "UpdatedAt", got.UpdatedAt, inv.UpdatedAt)
				checkTime(t, "ExpiresAt", got.ExpiresAt, inv.ExpiresAt)

				u, _ := mustUser(t, s, at(0))
				created, err := s.AcceptInvites(ctx, inv.Email, u.ID, tc.t)
				wantErr(t, "AcceptInvites", err, nil)
				if len(created) != 1 {
					t.Fatalf("AcceptInvites = %+v, want one membership", created)
				}
				checkTime(t, "accepted CreatedAt", created[0].CreatedAt, tc.t)
				checkTime(t, "accepted UpdatedAt", created[0].UpdatedAt, tc.t)
				members, err := s.Members(ctx, team.ID)
				wantErr(t, "Members", err, nil)
				i := slices.IndexFunc(members, func(m model.Member) bool { return m.UserID == u.ID })
				if i < 0 {
					t.Fatalf("Members after accepting = %+v, want the user among them", members)
				}
				check(t, "Members after accepting", members[i], created[0])
			})
		}
	})

	t.Run("AcceptConcurrent", func(t *testing.T) {
		const n = 8
		owner, _ := mustUser(t, s, at(0))
		for round := range 3 {
			teams := []model.Team{mustTeam(t, s, at(1), owner.ID), mustTeam(t, s, at(1), owner.ID), mustTeam(t, s, at(1), owner.ID)}
			email := newEmail()
			mustInvites(t, s,
				newInvite(teams[0].ID, owner.ID, email, model.RoleViewer, at(2)),
				newInvite(teams[1].ID, owner.ID, asciiUpper(email), model.RoleDeveloper, at(2)),
				newInvite(teams[1].ID, owner.ID, email, model.RoleAdmin, at(2)),
				newInvite(teams[2].ID, owner.ID, email, model.RoleOwner, at(2)),
			)
			want := map[uuid.UUID]model.Role{teams[0].ID: model.RoleViewer, teams[1].ID: model.RoleAdmin, teams[2].ID: model.RoleOwner}
			u, _ := mustUser(t, s, at(0))
			results := make([][]model.Member, n)
			errs := race(n, func(i int) error {
				var err error
				results[i], err = s.AcceptInvites(ctx, email, u.ID, at(3+i))
				return err
			})
			got := map[uuid.UUID]model.Role{}
			for i, err := range errs {
				wantErr(t, "concurrent AcceptInvites", err, nil)
				for _, m := range results[i] {
					if _, twice := got[m.TeamID]; twice {
						t.Errorf("round %d: membership of team %s returned by two calls", round, m.TeamID)
					}
					got[m.TeamID] = m.Role
					if m.UserID != u.ID {
						t.Errorf("round %d: membership of user %s returned, want %s", round, m.UserID, u.ID)
					}
				}
			}
			check(t, fmt.Sprintf("round %d: memberships created by the race", round), got, want)
			for team, role := range want {
				members, err := s.Members(ctx, team)
				wantErr(t, "Members", err, nil)
				var mine []model.Role
				for _, m := range members {
					if m.UserID == u.ID {
						mine = append(mine, m.Role)
					}
				}
				check(t, fmt.Sprintf("round %d: the user's memberships of a team", round), mine, []model.Role{role})
				checkInvites(t, s, "Invites after the race", team, nil)
			}
		}
	})
}

// testAccept checks AcceptInvites's rules, one case per rule. Every case invites one user by
// the email e to some of three teams, accepts at now and then checks what was created, which
// roles the user has and which invites are left; accepting again must change nothing.
func testAccept(s sinks.MetaStore) func(t *testing.T) {
	type invite struct {
		team    int
		email   func(e string) string // nil: e itself
		role    model.Role
		expires time.Duration // ExpiresAt - now
	}
	now := at(100)
	valid := time.Hour
	same := func(e string) string { return e }
	cases := []struct {
		name    string
		member  map[int]model.Role // the user's roles before accepting
		invites []invite
		accept  func(e string) string // the email given to AcceptInvites
		want    map[int]model.Role    // memberships created
		left    []int                 // indexes of the invites still stored afterwards
	}{
		{
			name:    "one invite",
			invites: []invite{{team: 0, role: model.RoleDeveloper, expires: valid}},
			accept:  same,
			want:    map[int]model.Role{0: model.RoleDeveloper},
		},
		{
			name:    "none",
			accept:  same,
			want:    map[int]model.Role{},
			invites: []invite{{team: 0, email: func(e string) string { return "x" + e }, role: model.RoleViewer, expires: valid}},
			left:    []int{0},
		},
		{
			name: "several teams",
			invites: []invite{
				{team: 2, role: model.RoleOwner, expires: valid},
				{team: 0, role: model.RoleViewer, expires: valid},
				{team: 1, role: model.RoleAdmin, expires: valid},
			},
			accept: same,
			want:   map[int]model.Role{0: model.RoleViewer, 1: model.RoleAdmin, 2: model.RoleOwner},
		},
		{
			name: "expired invites stay",
			invites: []invite{
				{team: 0, role: model.RoleAdmin, expires: 0}, // expires at now: expired
				{team: 1, role: model.RoleAdmin, expires: -time.Microsecond},
				{team: 2, role: model.RoleAdmin, expires: time.Microsecond},
			},
			accept: same,
			want:   map[int]model.Role{2: model.RoleAdmin},
			left:   []int{0, 1},
		},
		{
			name: "expired and valid invite to one team",
			invites: []invite{
				{team: 0, role: model.RoleOwner, expires: -time.Hour},
				{team: 0, role: model.RoleViewer, expires: valid},
			},
			accept: same,
			want:   map[int]model.Role{0: model.RoleViewer},
			left:   []int{0},
		},
		{
			name:   "already a member keeps the role",
			member: map[int]model.Role{0: model.RoleViewer, 1: model.RoleOwner},
			invites: []invite{
				{team: 0, role: model.RoleAdmin, expires: valid},
				{team: 1, role: model.RoleViewer, expires: valid},
				{team: 2, role: model.RoleDeveloper, expires: valid},
			},
			accept: same,
			want:   map[int]model.Role{2: model.RoleDeveloper},
		},
		{
			name: "the highest role of one team's invites wins",
			invites: []invite{
				{team: 0, role: model.RoleViewer, expires: valid},
				{team: 0, role: model.RoleAdmin, expires: valid},
				{team: 0, role: model.RoleDeveloper, expires: valid},
				{team: 1, role: model.RoleOwner, expires: valid},
				{team: 1, role: model.RoleViewer, expires: valid},
			},
			accept: same,
			want:   map[int]model.Role{0: model.RoleAdmin, 1: model.RoleOwner},
		},
		{
			name: "ASCII case is ignored",
			invites: []invite{
				{team: 0, email: asciiUpper, role: model.RoleViewer, expires: valid},
				{team: 1, email: strings.ToLower, role: model.RoleDeveloper, expires: valid},
			},
			accept: func(e string) string { return asciiUpper(e[:3]) + e[3:] },
			want:   map[int]model.Role{0: model.RoleViewer, 1: model.RoleDeveloper},
		},
		{
			// é and É are different letters to the rule, so both backends agree on them.
			name: "non-ASCII case is not folded",
			invites: []invite{
				{team: 0, email: strings.ToUpper, role: model.RoleViewer, expires: valid},
				{team: 1, role: model.RoleAdmin, expires: valid},
			},
			accept: same,
			want:   map[int]model.Role{1: model.RoleAdmin},
			left:   []int{0},
		},
		{
			name: "other emails stay",
			invites: []invite{
				{team: 0, email: func(e string) string { return e + ".org" }, role: model.RoleViewer, expires: valid},
				{team: 1, email: func(e string) string { return "a" + e }, role: model.RoleViewer, expires: valid},
				{team: 2, email: func(e string) string { return e[:len(e)-1] }, role: model.RoleViewer, expires: valid},
				{team: 2, email: func(e string) string { return e + " " }, role: model.RoleViewer, expires: valid},
				{team: 0, role: model.RoleDeveloper, expires: valid},
			},
			accept: same,
			want:   map[int]model.Role{0: model.RoleDeveloper},
			left:   []int{0, 1, 2, 3},
		},
	}
	return func(t *testing.T) {
		ctx := t.Context()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				owner, _ := mustUser(t, s, at(0))
				var teams [3]model.Team
				for i := range teams {
					teams[i] = mustTeam(t, s, at(i), owner.ID)
				}
				u, _ := newUser(at(0))
				u.Email = newEmail()
				if err := s.CreateUser(ctx, u, model.Team{ID: uuid.New(), Name: "own", CreatedAt: at(0), UpdatedAt: at(0)}); err != nil {
					t.Fatalf("CreateUser: %v", err)
				}
				roles := map[int]model.Role{}
				for team, role := range tc.member {
					m := model.Member{TeamID: teams[team].ID, UserID: u.ID, Role: role, CreatedAt: at(1), UpdatedAt: at(1)}
					if err := s.AddMember(ctx, m); err != nil {
						t.Fatalf("AddMember: %v", err)
					}
					roles[team] = role
				}
				invs := make([]model.Invite, len(tc.invites))
				for i, in := range tc.invites {
					email := u.Email
					if in.email != nil {
						email = in.email(email)
					}
					invs[i] = newInvite(teams[in.team].ID, owner.ID, email, in.role, at(2+i))
					invs[i].ExpiresAt = now.Add(in.expires)
				}
				if len(invs) > 0 {
					mustInvites(t, s, invs...)
				}

				created, err := s.AcceptInvites(ctx, tc.accept(u.Email), u.ID, now)
				wantErr(t, "AcceptInvites", err, nil)
				var want []model.Member
				for team, role := range tc.want {
					want = append(want, model.Member{TeamID: teams[team].ID, UserID: u.ID, Role: role, CreatedAt: now, UpdatedAt: now})
					roles[team] = role
				}
				slices.SortFunc(want, func(a, b model.Member) int { return bytes.Compare(a.TeamID[:], b.TeamID[:]) })
				check(t, "memberships created", created, want)

				verify := func(when string) {
					t.Helper()
					for i, team := range teams {
						role, err := s.Role(ctx, team.ID, u.ID)
						if want, ok := roles[i]; ok {
							wantErr(t, "Role", err, nil)
							check(t, fmt.Sprintf("role in team %d %s", i, when), role, want)
						} else {
							wantErr(t, fmt.Sprintf("Role in team %d %s", i, when), err, sinks.ErrNotFound)
						}
						var left []model.Invite
						for j, inv := range invs {
							if inv.TeamID == team.ID && slices.Contains(tc.left, j) {
								left = append(left, inv)
							}
						}
						checkInvites(t, s, fmt.Sprintf("invites of team %d %s", i, when), team.ID, left)
					}
					teamsOfUser, err := s.TeamsOfUser(ctx, u.ID)
					wantErr(t, "TeamsOfUser", err, nil)
					if len(teamsOfUser) != len(roles)+1 {
						t.Errorf("user is in %d teams %s, want their own and %d: %+v", len(teamsOfUser), when, len(roles), teamsOfUser)
					}
				}
				verify("after accepting")
				again, err := s.AcceptInvites(ctx, tc.accept(u.Email), u.ID, now.Add(time.Microsecond))
				wantErr(t, "AcceptInvites(again)", err, nil)
				if len(again) != 0 {
					t.Errorf("accepting again created %+v, want nothing", again)
				}
				verify("after accepting again")
			})
		}
		// Every case's wanted roles name a team it invites to.
		for _, tc := range cases {
			for team := range maps.Keys(tc.want) {
				if !slices.ContainsFunc(tc.invites, func(in invite) bool { return in.team == team }) {
					t.Errorf("case %q wants a membership of team %d it has no invite to", tc.name, team)
				}
			}
		}
	}
}
