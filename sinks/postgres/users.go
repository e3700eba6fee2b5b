package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

const userCols = `id, name, email, confirmed_at, last_sign_in_at, created_at, updated_at`

func scanUser(row pgx.Row) (model.User, error) {
	var (
		u                    model.User
		confirmed, lastLogin *time.Time
	)
	err := row.Scan(&u.ID, &u.Name, &u.Email, &confirmed, &lastLogin, &u.CreatedAt, &u.UpdatedAt)
	u.ConfirmedAt, u.LastSignInAt = utcOrZero(confirmed), utcOrZero(lastLogin)
	u.CreatedAt, u.UpdatedAt = u.CreatedAt.UTC(), u.UpdatedAt.UTC()
	return u, err
}

const teamCols = `t.id, t.name, t.created_at, t.updated_at`

func scanTeam(row pgx.Row, extra ...any) (model.Team, error) {
	var t model.Team
	err := row.Scan(append([]any{&t.ID, &t.Name, &t.CreatedAt, &t.UpdatedAt}, extra...)...)
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	return t, err
}

func (s *Store) CreateUser(ctx context.Context, u model.User, ownTeam model.Team) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	return s.inTx(ctx, "create user", func(tx pgx.Tx) error {
		if err := insertTeam(ctx, tx, ownTeam); err != nil {
			return err
		}
		_, err := exec(ctx, tx, "create user "+u.ID.String(),
			`INSERT INTO users (id, name, email, own_team_id, confirmed_at, last_sign_in_at, created_at, updated_at)
			 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			u.ID, u.Name, u.Email, ownTeam.ID, nullTime(u.ConfirmedAt), nullTime(u.LastSignInAt), u.CreatedAt, u.UpdatedAt)
		if err != nil {
			return err
		}
		return insertOwner(ctx, tx, ownTeam, u.ID)
	})
}

func insertTeam(ctx context.Context, tx pgx.Tx, t model.Team) error {
	_, err := exec(ctx, tx, "create team "+t.ID.String(),
		`INSERT INTO teams (id, name, created_at, updated_at) VALUES ($1, $2, $3, $4)`,
		t.ID, t.Name, t.CreatedAt, t.UpdatedAt)
	return err
}

// insertOwner adds the owner membership of a new team, dated like the team.
func insertOwner(ctx context.Context, tx pgx.Tx, t model.Team, owner uuid.UUID) error {
	_, err := exec(ctx, tx, "add owner "+owner.String()+" to team "+t.ID.String(),
		`INSERT INTO team_members (team_id, user_id, role, created_at, updated_at) VALUES ($1, $2, 'owner', $3, $3)`,
		t.ID, owner, t.CreatedAt)
	return err
}

func (s *Store) User(ctx context.Context, id uuid.UUID) (model.User, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE id = $1`, id))
	if err != nil {
		return model.User{}, fail("user "+id.String(), err)
	}
	return u, nil
}

func (s *Store) UserByEmail(ctx context.Context, email string) (model.User, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE lower(email) = lower($1)`, email))
	if err != nil {
		return model.User{}, fail(fmt.Sprintf("user with email %q", email), err)
	}
	return u, nil
}

func (s *Store) OwnTeam(ctx context.Context, userID uuid.UUID) (model.Team, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	t, err := scanTeam(s.pool.QueryRow(ctx,
		`SELECT `+teamCols+` FROM users u JOIN teams t ON t.id = u.own_team_id WHERE u.id = $1`, userID))
	if err != nil {
		return model.Team{}, fail("own team of user "+userID.String(), err)
	}
	return t, nil
}

func (s *Store) UpdateUser(ctx context.Context, u model.User) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	n, err := exec(ctx, s.pool, "update user "+u.ID.String(),
		`UPDATE users SET name = $2, confirmed_at = $3, last_sign_in_at = $4, updated_at = $5 WHERE id = $1`,
		u.ID, u.Name, nullTime(u.ConfirmedAt), nullTime(u.LastSignInAt), u.UpdatedAt)
	if err == nil && n == 0 {
		err = notFound("user " + u.ID.String())
	}
	return err
}

func (s *Store) CreateTeam(ctx context.Context, t model.Team, ownerID uuid.UUID) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	return s.inTx(ctx, "create team", func(tx pgx.Tx) error {
		if err := insertTeam(ctx, tx, t); err != nil {
			return err
		}
		return insertOwner(ctx, tx, t, ownerID)
	})
}

func (s *Store) Team(ctx context.Context, id uuid.UUID) (model.Team, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	t, err := scanTeam(s.pool.QueryRow(ctx, `SELECT `+teamCols+` FROM teams t WHERE t.id = $1`, id))
	if err != nil {
		return model.Team{}, fail("team "+id.String(), err)
	}
	return t, nil
}

func (s *Store) RenameTeam(ctx context.Context, id uuid.UUID, name string, at time.Time) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	n, err := exec(ctx, s.pool, "rename team "+id.String(),
		`UPDATE teams SET name = $2, updated_at = $3 WHERE id = $1`, id, name, at)
	if err == nil && n == 0 {
		err = notFound("team " + id.String())
	}
	return err
}

func (s *Store) TeamsOfUser(ctx context.Context, userID uuid.UUID) ([]model.TeamRole, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "teams of user " + userID.String()
	rows, err := s.pool.Query(ctx,
		`SELECT `+teamCols+`, m.role FROM team_members m JOIN teams t ON t.id = m.team_id
		 WHERE m.user_id = $1 ORDER BY t.created_at, t.id`, userID)
	if err != nil {
		return nil, fail(what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.TeamRole, error) {
		var tr model.TeamRole
		var err error
		tr.Team, err = scanTeam(row, &tr.Role)
		return tr, err
	})
	if err != nil {
		return nil, fail(what, err)
	}
	if len(out) == 0 {
		ok, err := exists(ctx, s.pool, what, `SELECT 1 FROM users WHERE id = $1`, userID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, notFound("user " + userID.String())
		}
	}
	return out, nil
}

func (s *Store) AddMember(ctx context.Context, m model.Member) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckRole(m.Role); err != nil {
		return err
	}
	_, err := exec(ctx, s.pool, "add user "+m.UserID.String()+" to team "+m.TeamID.String(),
		`INSERT INTO team_members (team_id, user_id, role, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)`,
		m.TeamID, m.UserID, string(m.Role), m.CreatedAt, m.UpdatedAt)
	return err
}

func (s *Store) Role(ctx context.Context, teamID, userID uuid.UUID) (model.Role, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var role string
	err := s.pool.QueryRow(ctx, `SELECT role FROM team_members WHERE team_id = $1 AND user_id = $2`, teamID, userID).Scan(&role)
	if err != nil {
		return "", fail("membership of user "+userID.String()+" in team "+teamID.String(), err)
	}
	return model.Role(role), nil
}

func (s *Store) Members(ctx context.Context, teamID uuid.UUID) ([]model.Member, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "members of team " + teamID.String()
	rows, err := s.pool.Query(ctx,
		`SELECT team_id, user_id, role, created_at, updated_at FROM team_members
		 WHERE team_id = $1 ORDER BY created_at, user_id`, teamID)
	if err != nil {
		return nil, fail(what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Member, error) {
		var m model.Member
		err := row.Scan(&m.TeamID, &m.UserID, &m.Role, &m.CreatedAt, &m.UpdatedAt)
		m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
		return m, err
	})
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

// lockMember locks the team's row, so that changes to the team's memberships that check for
// the last owner run one after the other, and returns the member's current role. In READ
// COMMITTED each later statement of the transaction sees what the previous lock holder
// committed.
func lockMember(ctx context.Context, tx pgx.Tx, teamID, userID uuid.UUID) (model.Role, error) {
	what := "membership of user " + userID.String() + " in team " + teamID.String()
	var one int
	if err := tx.QueryRow(ctx, `SELECT 1 FROM teams WHERE id = $1 FOR NO KEY UPDATE`, teamID).Scan(&one); err != nil {
		return "", fail("team "+teamID.String(), err)
	}
	var role string
	if err := tx.QueryRow(ctx, `SELECT role FROM team_members WHERE team_id = $1 AND user_id = $2`, teamID, userID).Scan(&role); err != nil {
		return "", fail(what, err)
	}
	return model.Role(role), nil
}

// checkOtherOwner returns ErrLastOwner unless the team has an owner besides userID.
func checkOtherOwner(ctx context.Context, tx pgx.Tx, teamID, userID uuid.UUID) error {
	ok, err := exists(ctx, tx, "owners of team "+teamID.String(),
		`SELECT 1 FROM team_members WHERE team_id = $1 AND user_id <> $2 AND role = 'owner'`, teamID, userID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("postgres: user %s is the last owner of team %s: %w", userID, teamID, sinks.ErrLastOwner)
	}
	return nil
}

func (s *Store) SetMemberRole(ctx context.Context, teamID, userID uuid.UUID, role model.Role, at time.Time) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckRole(role); err != nil {
		return err
	}
	defer s.accessChanged("m" + teamID.String() + "/" + userID.String())
	return s.inTx(ctx, "set member role", func(tx pgx.Tx) error {
		current, err := lockMember(ctx, tx, teamID, userID)
		if err != nil {
			return err
		}
		if current == model.RoleOwner && role != model.RoleOwner {
			if err := checkOtherOwner(ctx, tx, teamID, userID); err != nil {
				return err
			}
		}
		_, err = exec(ctx, tx, "set role of user "+userID.String()+" in team "+teamID.String(),
			`UPDATE team_members SET role = $3, updated_at = $4 WHERE team_id = $1 AND user_id = $2`,
			teamID, userID, string(role), at)
		return err
	})
}

func (s *Store) RemoveMember(ctx context.Context, teamID, userID uuid.UUID) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	defer s.accessChanged("m" + teamID.String() + "/" + userID.String())
	return s.inTx(ctx, "remove member", func(tx pgx.Tx) error {
		current, err := lockMember(ctx, tx, teamID, userID)
		if err != nil {
			return err
		}
		if current == model.RoleOwner {
			if err := checkOtherOwner(ctx, tx, teamID, userID); err != nil {
				return err
			}
		}
		_, err = exec(ctx, tx, "remove user "+userID.String()+" from team "+teamID.String(),
			`DELETE FROM team_members WHERE team_id = $1 AND user_id = $2`, teamID, userID)
		return err
	})
}
