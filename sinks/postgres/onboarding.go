package postgres

import (
	"context"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks"
)

var _ sinks.Onboarding = (*Store)(nil)

// markOnboarded is one conditional statement: it touches the row only when the mark changes
// it, and a concurrent mark is re-read before this one applies (READ COMMITTED re-evaluates the
// row), so no OS name is lost.
const markOnboarded = `UPDATE apps SET
	onboarded    = true,
	onboarded_at = CASE WHEN onboarded THEN onboarded_at ELSE $2 END,
	unique_id    = CASE WHEN onboarded OR unique_id <> '' THEN unique_id ELSE $3 END,
	os_names     = os_names || ARRAY(SELECT u.n FROM unnest($4::text[]) WITH ORDINALITY AS u(n, i)
	                                 WHERE u.n <> ALL (os_names) ORDER BY u.i)
WHERE id = $1 AND (NOT onboarded OR NOT ($4::text[] <@ os_names))`

func (s *Store) MarkOnboarded(ctx context.Context, appID uuid.UUID, m sinks.OnboardingMark) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckOnboardingMark(m); err != nil {
		return err
	}
	names := m.OSNames
	if names == nil {
		names = []string{} // NULL would not compare
	}
	what := "mark app " + appID.String() + " onboarded"
	n, err := exec(ctx, s.pool, what, markOnboarded, appID, m.At, m.UniqueID, names)
	if err != nil || n > 0 {
		s.accessChanged("a" + appID.String())
	}
	if err != nil || n > 0 {
		return err
	}
	ok, err := exists(ctx, s.pool, what, `SELECT 1 FROM apps WHERE id = $1`, appID)
	if err == nil && !ok {
		err = notFound("app " + appID.String())
	}
	return err
}
