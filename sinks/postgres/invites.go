package postgres

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// emailMatch compares invite emails case-insensitively by lowering A–Z only: lower() under
// "C" does that whatever the database's locale (the Badger backend lowers the same way), and
// it is the expression of the invites_email_lower_idx index.
const emailMatch = `lower(email COLLATE "C") = lower($1::text COLLATE "C")`

const inviteCols = `id, team_id, email, role, invited_by, created_at, updated_at, expires_at`

func scanInvite(row pgx.Row) (model.Invite, error) {
	var i model.Invite
	err := row.Scan(&i.ID, &i.TeamID, &i.Email, &i.Role, &i.InvitedBy, &i.CreatedAt, &i.UpdatedAt, &i.ExpiresAt)
	i.CreatedAt, i.UpdatedAt, i.ExpiresAt = i.CreatedAt.UTC(), i.UpdatedAt.UTC(), i.ExpiresAt.UTC()
	return i, err
}

// CreateInvites inserts the batch in one statement, which is atomic: a taken or repeated id
// (unique violation) or an unknown team or inviter (foreign key violation) stores none of it.
func (s *Store) CreateInvites(ctx context.Context, invs []model.Invite) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if len(invs) == 0 {
		return nil
	}
	var (
		ids, teams, inviters = make([]uuid.UUID, len(invs)), make([]uuid.UUID, len(invs)), make([]uuid.UUID, len(invs))
		emails, roles        = make([]string, len(invs)), make([]string, len(invs))
		created, updated     = make([]time.Time, len(invs)), make([]time.Time, len(invs))
		expires              = make([]time.Time, len(invs))
	)
	for i, inv := range invs {
		if err := sinks.CheckInvite(inv); err != nil {
			return err
		}
		ids[i], teams[i], emails[i], roles[i], inviters[i], created[i], updated[i], expires[i] =
			inv.ID, inv.TeamID, inv.Email, string(inv.Role), inv.InvitedBy, inv.CreatedAt, inv.UpdatedAt, inv.ExpiresAt
	}
	_, err := exec(ctx, s.pool, fmt.Sprintf("create %d invites", len(invs)),
		`INSERT INTO invites (`+inviteCols+`)
		 SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::uuid[], $6::timestamptz[], $7::timestamptz[], $8::timestamptz[])`,
		ids, teams, emails, roles, inviters, created, updated, expires)
	return err
}

func (s *Store) Invite(ctx context.Context, id uuid.UUID) (model.Invite, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	inv, err := scanInvite(s.pool.QueryRow(ctx, `SELECT `+inviteCols+` FROM invites WHERE id = $1`, id))
	if err != nil {
		return model.Invite{}, fail("invite "+id.String(), err)
	}
	return inv, nil
}

func (s *Store) Invites(ctx context.Context, teamID uuid.UUID) ([]model.Invite, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "invites of team " + teamID.String()
	rows, err := s.pool.Query(ctx, `SELECT `+inviteCols+` FROM invites WHERE team_id = $1 ORDER BY created_at, id`, teamID)
	if err != nil {
		return nil, fail(what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Invite, error) { return scanInvite(row) })
	if err != nil {
		return nil, fail(what, err)
	}
	if len(out) == 0 {
		ok, err := exists(ctx, s.pool, what, `SELECT 1 FROM teams WHERE id = $1`, teamID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, notFound("team " + teamID.String())
		}
	}
	return out, nil
}

func (s *Store) UpdateInvite(ctx context.Context, inv model.Invite) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckRole(inv.Role); err != nil {
		return err
	}
	n, err := exec(ctx, s.pool, "update invite "+inv.ID.String(),
		`UPDATE invites SET role = $2, expires_at = $3, updated_at = $4 WHERE id = $1`,
		inv.ID, string(inv.Role), inv.ExpiresAt, inv.UpdatedAt)
	if err == nil && n == 0 {
		err = notFound("invite " + inv.ID.String())
	}
	return err
}

func (s *Store) DeleteInvite(ctx context.Context, id uuid.UUID) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	n, err := exec(ctx, s.pool, "delete invite "+id.String(), `DELETE FROM invites WHERE id = $1`, id)
	if err == nil && n == 0 {
		err = notFound("invite " + id.String())
	}
	return err
}

// AcceptInvites deletes the email's unexpired invites and adds the memberships in one
// transaction. The DELETE locks the invites it removes: a concurrent call for the same email
// waits for it and then finds them gone, so each invite is accepted once. ON CONFLICT DO
// NOTHING keeps the role of a team the user is already in, even one joined meanwhile.
func (s *Store) AcceptInvites(ctx context.Context, email string, userID uuid.UUID, now time.Time) ([]model.Member, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckText("email", email); err != nil {
		return nil, err
	}
	what := "accept invites of user " + userID.String()
	var created []model.Member
	err := s.inTx(ctx, what, func(tx pgx.Tx) error {
		created = created[:0]
		ok, err := exists(ctx, tx, what, `SELECT 1 FROM users WHERE id = $1`, userID)
		if err != nil {
			return err
		}
		if !ok {
			return notFound("user " + userID.String())
		}
		rows, err := tx.Query(ctx, `DELETE FROM invites WHERE `+emailMatch+` AND expires_at > $2 RETURNING team_id, role`, email, now)
		if err != nil {
			return fail(what, err)
		}
		best := map[uuid.UUID]model.Role{}
		var (
			team uuid.UUID
			role model.Role
		)
		_, err = pgx.ForEachRow(rows, []any{&team, &role}, func() error {
			if r, ok := best[team]; !ok || role.Rank() > r.Rank() {
				best[team] = role
			}
			return nil
		})
		if err != nil {
			return fail(what, err)
		}
		if len(best) == 0 {
			return nil
		}
		teams, roles := make([]uuid.UUID, 0, len(best)), make([]string, 0, len(best))
		for t, r := range best {
			teams, roles = append(teams, t), append(roles, string(r))
		}
		rows, err = tx.Query(ctx,
			`INSERT INTO team_members (team_id, user_id, role, created_at, updated_at)
			 SELECT t, $3::uuid, r, $4::timestamptz, $4::timestamptz FROM unnest($1::uuid[], $2::text[]) AS i (t, r)
			 ON CONFLICT (team_id, user_id) DO NOTHING
			 RETURNING team_id, user_id, role, created_at, updated_at`, teams, roles, userID, now)
		if err != nil {
			return fail(what, err)
		}
		created, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Member, error) {
			var m model.Member
			err := row.Scan(&m.TeamID, &m.UserID, &m.Role, &m.CreatedAt, &m.UpdatedAt)
			m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
			return m, err
		})
		if err != nil {
			return fail(what, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(created, func(a, b model.Member) int { return bytes.Compare(a.TeamID[:], b.TeamID[:]) })
	return created, nil
}
