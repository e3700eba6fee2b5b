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

// pConfigExtra keys apps' extra SDK settings (sinks.SDKConfigExtras): app id → configExtraRec.
// Like the prefixes of store.go it is no prefix of another.
const pConfigExtra = badgerdb.PrefixMeta + "cx/"

var (
	_ sinks.SDKConfigExtras = (*Store)(nil)
	_ sinks.ChatAppDeleter  = (*Store)(nil)
)

// configExtraRec is stored extra settings and when they were set.
type configExtraRec struct {
	Extra model.SDKConfigExtra
	At    time.Time
}

// SDKConfigExtra reads the app's extra settings; see sinks.SDKConfigExtras.
func (s *Store) SDKConfigExtra(ctx context.Context, appID uuid.UUID) (model.SDKConfigExtra, time.Time, error) {
	var rec configExtraRec
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pConfigExtra, appID[:]), &rec, "SDK config extra settings of app "+appID.String())
	})
	if err != nil {
		return model.SDKConfigExtra{}, time.Time{}, err
	}
	if rec.Extra.LogIgnorePatterns == nil {
		rec.Extra.LogIgnorePatterns = []string{}
	}
	return rec.Extra, rec.At.UTC(), nil
}

// SetSDKConfigExtra replaces the app's extra settings; see sinks.SDKConfigExtras.
func (s *Store) SetSDKConfigExtra(ctx context.Context, appID uuid.UUID, e model.SDKConfigExtra, at time.Time) error {
	if err := sinks.CheckSDKConfigExtra(&e); err != nil {
		return err
	}
	rec := configExtraRec{Extra: e, At: at.UTC()}
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, appID[:]), "app "+appID.String()); err != nil {
			return err
		}
		return set(txn, key(pConfigExtra, appID[:]), rec)
	})
}

// DeleteChatApp removes the team's chat app; see sinks.ChatAppDeleter.
func (s *Store) DeleteChatApp(ctx context.Context, teamID uuid.UUID) error {
	k := key(pChatApp, teamID[:])
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, k, "chat app of team "+teamID.String()); err != nil {
			return err
		}
		return del(txn, k)
	})
}
