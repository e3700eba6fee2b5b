package badgermeta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func (s *Store) CreateUser(ctx context.Context, u model.User, ownTeam model.Team) error {
	u, ownTeam = utcUser(u), utcTeam(ownTeam)
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustBeFree(txn, key(pUser, u.ID[:]), "user id "+u.ID.String()); err != nil {
			return err
		}
		if err := mustBeFree(txn, emailKey(u.Email), "email "+u.Email); err != nil {
			return err
		}
		if err := mustBeFree(txn, key(pTeam, ownTeam.ID[:]), "team id "+ownTeam.ID.String()); err != nil {
			return err
		}
		if err := set(txn, key(pUser, u.ID[:]), userRec{User: u, OwnTeam: ownTeam.ID}); err != nil {
			return err
		}
		if err := txn.Set(emailKey(u.Email), u.ID[:]); err != nil {
			return fmt.Errorf("badgermeta: write email index: %w", err)
		}
		return s.putTeamWithOwner(txn, ownTeam, u.ID)
	})
}

// putTeamWithOwner writes a new team and its owner's membership, dated like the team.
func (s *Store) putTeamWithOwner(txn *badger.Txn, t model.Team, owner uuid.UUID) error {
	if err := set(txn, key(pTeam, t.ID[:]), t); err != nil {
		return err
	}
	m := model.Member{TeamID: t.ID, UserID: owner, Role: model.RoleOwner, CreatedAt: t.CreatedAt, UpdatedAt: t.CreatedAt}
	if err := set(txn, key(pMember, t.ID[:], owner[:]), m); err != nil {
		return err
	}
	return setIndex(txn, key(pUserTeam, owner[:], t.ID[:]))
}

func (s *Store) User(ctx context.Context, id uuid.UUID) (model.User, error) {
	var r userRec
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pUser, id[:]), &r, "user "+id.String())
	})
	return r.User, err
}

func (s *Store) UserByEmail(ctx context.Context, email string) (model.User, error) {
	var r userRec
	err := s.view(ctx, func(txn *badger.Txn) error {
		item, err := txn.Get(emailKey(email))
		if err != nil {
			if errors.Is(err, badger.ErrKeyNotFound) {
				return fmt.Errorf("badgermeta: user with email %q: %w", email, sinks.ErrNotFound)
			}
			return fmt.Errorf("badgermeta: read email index: %w", err)
		}
		b, err := item.ValueCopy(nil)
		if err != nil {
			return fmt.Errorf("badgermeta: read email index: %w", err)
		}
		return get(txn, key(pUser, b), &r, "user with email "+email)
	})
	return r.User, err
}

func (s *Store) OwnTeam(ctx context.Context, userID uuid.UUID) (model.Team, error) {
	var t model.Team
	err := s.view(ctx, func(txn *badger.Txn) error {
		var r userRec
		if err := get(txn, key(pUser, userID[:]), &r, "user "+userID.String()); err != nil {
			return err
		}
		return get(txn, key(pTeam, r.OwnTeam[:]), &t, "own team of user "+userID.String())
	})
	return t, err
}

func (s *Store) UpdateUser(ctx context.Context, u model.User) error {
	u = utcUser(u)
	return s.update(ctx, func(txn *badger.Txn) error {
		var r userRec
		k := key(pUser, u.ID[:])
		if err := get(txn, k, &r, "user "+u.ID.String()); err != nil {
			return err
		}
		r.Name, r.ConfirmedAt, r.LastSignInAt, r.UpdatedAt = u.Name, u.ConfirmedAt, u.LastSignInAt, u.UpdatedAt
		return set(txn, k, r)
	})
}

func (s *Store) CreateTeam(ctx context.Context, t model.Team, ownerID uuid.UUID) error {
	t = utcTeam(t)
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pUser, ownerID[:]), "owner "+ownerID.String()); err != nil {
			return err
		}
		if err := mustBeFree(txn, key(pTeam, t.ID[:]), "team id "+t.ID.String()); err != nil {
			return err
		}
		return s.putTeamWithOwner(txn, t, ownerID)
	})
}

func (s *Store) Team(ctx context.Context, id uuid.UUID) (model.Team, error) {
	var t model.Team
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pTeam, id[:]), &t, "team "+id.String())
	})
	return t, err
}

func (s *Store) RenameTeam(ctx context.Context, id uuid.UUID, name string, at time.Time) error {
	return s.update(ctx, func(txn *badger.Txn) error {
		var t model.Team
		k := key(pTeam, id[:])
		if err := get(txn, k, &t, "team "+id.String()); err != nil {
			return err
		}
		t.Name, t.UpdatedAt = name, at.UTC()
		return set(txn, k, t)
	})
}

func (s *Store) TeamsOfUser(ctx context.Context, userID uuid.UUID) ([]model.TeamRole, error) {
	var out []model.TeamRole
	err := s.view(ctx, func(txn *badger.Txn) error {
		out = out[:0]
		if err := mustExist(txn, key(pUser, userID[:]), "user "+userID.String()); err != nil {
			return err
		}
		for _, teamID := range suffixes(txn, key(pUserTeam, userID[:])) {
			var tr model.TeamRole
			if err := get(txn, key(pTeam, teamID), &tr.Team, "team of user "+userID.String()); err != nil {
				return err
			}
			var m model.Member
			if err := get(txn, key(pMember, teamID, userID[:]), &m, "membership of user "+userID.String()); err != nil {
				return err
			}
			tr.Role = m.Role
			out = append(out, tr)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b model.TeamRole) int { return byTime(a.Team.CreatedAt, b.Team.CreatedAt, a.Team.ID, b.Team.ID) })
	return out, nil
}

func (s *Store) AddMember(ctx context.Context, m model.Member) error {
	if err := sinks.CheckRole(m.Role); err != nil {
		return err
	}
	m = utcMember(m)
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pTeam, m.TeamID[:]), "team "+m.TeamID.String()); err != nil {
			return err
		}
		if err := mustExist(txn, key(pUser, m.UserID[:]), "user "+m.UserID.String()); err != nil {
			return err
		}
		k := key(pMember, m.TeamID[:], m.UserID[:])
		if err := mustBeFree(txn, k, "membership of user "+m.UserID.String()+" in team "+m.TeamID.String()); err != nil {
			return err
		}
		if err := set(txn, k, m); err != nil {
			return err
		}
		return setIndex(txn, key(pUserTeam, m.UserID[:], m.TeamID[:]))
	})
}

func (s *Store) Role(ctx context.Context, teamID, userID uuid.UUID) (model.Role, error) {
	var rl model.Role
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		rl, err = role(txn, teamID, userID)
		return err
	})
	return rl, err
}

// role reads the user's role in the team; ErrNotFound when not a member.
func role(txn *badger.Txn, teamID, userID uuid.UUID) (model.Role, error) {
	var m model.Member
	err := get(txn, key(pMember, teamID[:], userID[:]), &m, "membership of user "+userID.String()+" in team "+teamID.String())
	return m.Role, err
}

func (s *Store) Members(ctx context.Context, teamID uuid.UUID) ([]model.Member, error) {
	var out []model.Member
	err := s.view(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pTeam, teamID[:]), "team "+teamID.String()); err != nil {
			return err
		}
		var err error
		out, err = members(txn, teamID)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b model.Member) int { return byTime(a.CreatedAt, b.CreatedAt, a.UserID, b.UserID) })
	return out, nil
}

// leavesOwner returns ErrLastOwner when m is the team's only owner. It reads every membership
// of the team, so a concurrent change to any of them makes the caller's transaction conflict
// and run again.
func leavesOwner(txn *badger.Txn, m model.Member) error {
	if m.Role != model.RoleOwner {
		return nil
	}
	all, err := members(txn, m.TeamID)
	if err != nil {
		return err
	}
	owners := 0
	for _, o := range all {
		if o.Role == model.RoleOwner {
			owners++
		}
	}
	if owners <= 1 {
		return fmt.Errorf("badgermeta: user %s is the last owner of team %s: %w", m.UserID, m.TeamID, sinks.ErrLastOwner)
	}
	return nil
}

func (s *Store) SetMemberRole(ctx context.Context, teamID, userID uuid.UUID, role model.Role, at time.Time) error {
	if err := sinks.CheckRole(role); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		var m model.Member
		k := key(pMember, teamID[:], userID[:])
		if err := get(txn, k, &m, "membership of user "+userID.String()+" in team "+teamID.String()); err != nil {
			return err
		}
		if role != model.RoleOwner {
			if err := leavesOwner(txn, m); err != nil {
				return err
			}
		}
		m.Role, m.UpdatedAt = role, at.UTC()
		return set(txn, k, m)
	})
}

func (s *Store) RemoveMember(ctx context.Context, teamID, userID uuid.UUID) error {
	return s.update(ctx, func(txn *badger.Txn) error {
		var m model.Member
		k := key(pMember, teamID[:], userID[:])
		if err := get(txn, k, &m, "membership of user "+userID.String()+" in team "+teamID.String()); err != nil {
			return err
		}
		if err := leavesOwner(txn, m); err != nil {
			return err
		}
		if err := del(txn, k); err != nil {
			return err
		}
		return del(txn, key(pUserTeam, userID[:], teamID[:]))
	})
}
