package badgermeta

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// asciiLower lowers A–Z only. Invite emails match case-insensitively by this rule in both
// backends: Postgres's lower() follows the database's locale, and Go's strings.ToLower follows
// Unicode, so neither would agree with the other on every non-ASCII address.
func asciiLower(s string) string {
	i := 0
	for i < len(s) && (s[i] < 'A' || s[i] > 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// inviteEmailPrefix is the email index's prefix of every invite for email; the NUL that ends
// the email (sinks.CheckText keeps NUL out of emails) stops "a@x" from matching "a@x.org".
func inviteEmailPrefix(email string) []byte {
	return key(pEmailInvite, []byte(asciiLower(email)), []byte{0})
}

func utcInvite(i model.Invite) model.Invite {
	i.CreatedAt, i.UpdatedAt, i.ExpiresAt = i.CreatedAt.UTC(), i.UpdatedAt.UTC(), i.ExpiresAt.UTC()
	return i
}

// CreateInvites checks every team, inviter and id in the one transaction that writes them;
// Badger reads a transaction's own writes, so an id repeated within the batch is a conflict.
func (s *Store) CreateInvites(ctx context.Context, invs []model.Invite) error {
	if len(invs) == 0 {
		return s.view(ctx, func(*badger.Txn) error { return nil })
	}
	stored := make([]model.Invite, len(invs))
	for i, inv := range invs {
		if err := sinks.CheckInvite(inv); err != nil {
			return err
		}
		stored[i] = utcInvite(inv)
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		for i := range stored {
			inv := &stored[i]
			if i == 0 || inv.TeamID != stored[i-1].TeamID {
				if err := mustExist(txn, key(pTeam, inv.TeamID[:]), "team "+inv.TeamID.String()); err != nil {
					return err
				}
			}
			if i == 0 || inv.InvitedBy != stored[i-1].InvitedBy {
				if err := mustExist(txn, key(pUser, inv.InvitedBy[:]), "inviting user "+inv.InvitedBy.String()); err != nil {
					return err
				}
			}
			k := key(pInvite, inv.ID[:])
			if err := mustBeFree(txn, k, "invite id "+inv.ID.String()); err != nil {
				return err
			}
			if err := set(txn, k, inv); err != nil {
				return err
			}
			if err := setIndex(txn, key(pTeamInvite, inv.TeamID[:], inv.ID[:])); err != nil {
				return err
			}
			if err := setIndex(txn, key(string(inviteEmailPrefix(inv.Email)), inv.ID[:])); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) Invite(ctx context.Context, id uuid.UUID) (model.Invite, error) {
	var inv model.Invite
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pInvite, id[:]), &inv, "invite "+id.String())
	})
	return inv, err
}

func (s *Store) Invites(ctx context.Context, teamID uuid.UUID) ([]model.Invite, error) {
	return listOfTeam(s, ctx, teamID, pTeamInvite, pInvite, "invite", func(i model.Invite) (time.Time, uuid.UUID) { return i.CreatedAt, i.ID })
}

// UpdateInvite leaves the team and email alone, so the indexes stay as they are.
func (s *Store) UpdateInvite(ctx context.Context, inv model.Invite) error {
	if err := sinks.CheckRole(inv.Role); err != nil {
		return err
	}
	inv = utcInvite(inv)
	return s.update(ctx, func(txn *badger.Txn) error {
		var stored model.Invite
		k := key(pInvite, inv.ID[:])
		if err := get(txn, k, &stored, "invite "+inv.ID.String()); err != nil {
			return err
		}
		stored.Role, stored.ExpiresAt, stored.UpdatedAt = inv.Role, inv.ExpiresAt, inv.UpdatedAt
		return set(txn, k, stored)
	})
}

func (s *Store) DeleteInvite(ctx context.Context, id uuid.UUID) error {
	return s.update(ctx, func(txn *badger.Txn) error {
		var inv model.Invite
		if err := get(txn, key(pInvite, id[:]), &inv, "invite "+id.String()); err != nil {
			return err
		}
		return deleteInvite(txn, inv)
	})
}

// deleteInvite removes an invite and its index entries.
func deleteInvite(txn *badger.Txn, inv model.Invite) error {
	if err := del(txn, key(pInvite, inv.ID[:])); err != nil {
		return err
	}
	if err := del(txn, key(pTeamInvite, inv.TeamID[:], inv.ID[:])); err != nil {
		return err
	}
	return del(txn, key(string(inviteEmailPrefix(inv.Email)), inv.ID[:]))
}

// AcceptInvites reads and deletes every invite of the email in one transaction, so of two
// concurrent calls for one email the second conflicts in Badger, runs again and finds none.
// It reads each membership it might create too, so a concurrent AddMember of the same user
// and team makes one of them run again.
func (s *Store) AcceptInvites(ctx context.Context, email string, userID uuid.UUID, now time.Time) ([]model.Member, error) {
	if err := sinks.CheckText("email", email); err != nil {
		return nil, err
	}
	now = now.UTC()
	var created []model.Member
	err := s.update(ctx, func(txn *badger.Txn) error {
		created = created[:0]
		if err := mustExist(txn, key(pUser, userID[:]), "user "+userID.String()); err != nil {
			return err
		}
		best := map[uuid.UUID]model.Role{}
		for _, id := range suffixes(txn, inviteEmailPrefix(email)) {
			var inv model.Invite
			if err := get(txn, key(pInvite, id), &inv, "invite for "+email); err != nil {
				return err
			}
			if inv.Expired(now) {
				continue
			}
			if r, ok := best[inv.TeamID]; !ok || inv.Role.Rank() > r.Rank() {
				best[inv.TeamID] = inv.Role
			}
			if err := deleteInvite(txn, inv); err != nil {
				return err
			}
		}
		for team, role := range best {
			k := key(pMember, team[:], userID[:])
			member, err := exists(txn, k)
			if err != nil {
				return err
			}
			if member {
				continue
			}
			m := model.Member{TeamID: team, UserID: userID, Role: role, CreatedAt: now, UpdatedAt: now}
			if err := set(txn, k, m); err != nil {
				return err
			}
			if err := setIndex(txn, key(pUserTeam, userID[:], team[:])); err != nil {
				return err
			}
			created = append(created, m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(created, func(a, b model.Member) int { return bytes.Compare(a.TeamID[:], b.TeamID[:]) })
	return created, nil
}
