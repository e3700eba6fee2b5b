package badgermeta

import (
	"context"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// pNotifPrefs keys users' notification preferences (sinks.NotifPrefs): user id → notifPrefsRec.
// Like the prefixes of store.go it is no prefix of another.
const pNotifPrefs = badgerdb.PrefixMeta + "np/"

var _ sinks.NotifPrefs = (*Store)(nil)

// notifPrefsRec is stored preferences.
type notifPrefsRec struct {
	ErrorSpike, AppHangSpike, BugReport, DailySummary bool
	CreatedAt, UpdatedAt                              time.Time
}

// NotifPrefs reads the user's preferences; see sinks.NotifPrefs.
func (s *Store) NotifPrefs(ctx context.Context, userID uuid.UUID) (model.NotifPrefs, error) {
	var rec notifPrefsRec
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pNotifPrefs, userID[:]), &rec, "notification preferences of user "+userID.String())
	})
	if err != nil {
		return model.NotifPrefs{}, err
	}
	return model.NotifPrefs{ErrorSpike: rec.ErrorSpike, AppHangSpike: rec.AppHangSpike, BugReport: rec.BugReport,
		DailySummary: rec.DailySummary, CreatedAt: rec.CreatedAt.UTC(), UpdatedAt: rec.UpdatedAt.UTC()}, nil
}

// SetNotifPrefs replaces the user's preferences; see sinks.NotifPrefs.
func (s *Store) SetNotifPrefs(ctx context.Context, userID uuid.UUID, p model.NotifPrefs) error {
	if err := sinks.CheckNotifPrefs(p); err != nil {
		return err
	}
	rec := notifPrefsRec{ErrorSpike: p.ErrorSpike, AppHangSpike: p.AppHangSpike, BugReport: p.BugReport, DailySummary: p.DailySummary,
		CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()}
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pUser, userID[:]), "user "+userID.String()); err != nil {
			return err
		}
		return set(txn, key(pNotifPrefs, userID[:]), rec)
	})
}
