package badgermeta

import (
	"context"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

var _ sinks.Onboarding = (*Store)(nil)

// MarkOnboarded reads the app and writes it back only when the mark changes it; concurrent marks
// conflict in Badger and the loser runs again on what the winner stored.
func (s *Store) MarkOnboarded(ctx context.Context, appID uuid.UUID, m sinks.OnboardingMark) error {
	if err := sinks.CheckOnboardingMark(m); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		var a model.App
		k := key(pApp, appID[:])
		if err := get(txn, k, &a, "app "+appID.String()); err != nil {
			return err
		}
		changed := false
		if !a.Onboarded {
			a.Onboarded, a.OnboardedAt, changed = true, m.At.UTC(), true
			if a.UniqueID == "" {
				a.UniqueID = m.UniqueID
			}
		}
		for _, n := range m.OSNames {
			if !slices.Contains(a.OSNames, n) {
				a.OSNames, changed = append(a.OSNames, n), true
			}
		}
		if !changed {
			return nil
		}
		return set(txn, k, a)
	})
}
