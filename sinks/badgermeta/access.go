package badgermeta

import (
	"context"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// What the dashboard checks before an app route (sinks.AppAccess), read in one transaction.

var _ sinks.AppAccess = (*Store)(nil)

func (s *Store) AppRole(ctx context.Context, appID, userID uuid.UUID) (model.App, model.Role, error) {
	var (
		a  model.App
		rl model.Role
	)
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		a, rl, err = appRole(txn, appID, userID)
		return err
	})
	return a, rl, err
}

// SessionAppRole keeps its admitting answers in the store's access cache (see Store).
func (s *Store) SessionAppRole(ctx context.Context, sessionID, appID, userID uuid.UUID) (sinks.SessionAccess, error) {
	return s.access.Read(sinks.AccessKey{Session: sessionID, App: appID, User: userID}, func() (sinks.SessionAccess, error) {
		return s.sessionAppRole(ctx, sessionID, appID, userID)
	})
}

func (s *Store) sessionAppRole(ctx context.Context, sessionID, appID, userID uuid.UUID) (sinks.SessionAccess, error) {
	var acc sinks.SessionAccess
	err := s.view(ctx, func(txn *badger.Txn) error {
		if err := get(txn, key(pSession, sessionID[:]), &acc.Session, "session "+sessionID.String()); err != nil {
			return err
		}
		acc.App, acc.Role, acc.AppErr = appRole(txn, appID, userID)
		return nil
	})
	if err != nil {
		return sinks.SessionAccess{}, err
	}
	return acc, nil
}

// appRole reads the app and the user's role in its team; ErrNotFound when either is missing.
func appRole(txn *badger.Txn, appID, userID uuid.UUID) (model.App, model.Role, error) {
	var a model.App
	if err := get(txn, key(pApp, appID[:]), &a, "app "+appID.String()); err != nil {
		return model.App{}, "", err
	}
	rl, err := role(txn, a.TeamID, userID)
	if err != nil {
		return model.App{}, "", err
	}
	return a, rl, nil
}
