package badgermeta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// thresholdsRec is a stored ThresholdPrefs and when it was set.
type thresholdsRec struct {
	Prefs model.ThresholdPrefs
	At    time.Time
}

func (s *Store) ThresholdPrefs(ctx context.Context, appID uuid.UUID) (model.ThresholdPrefs, error) {
	var rec thresholdsRec
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pThresholds, appID[:]), &rec, "thresholds of app "+appID.String())
	})
	return rec.Prefs, err
}

func (s *Store) SetThresholdPrefs(ctx context.Context, appID uuid.UUID, p model.ThresholdPrefs, at time.Time) error {
	if err := sinks.CheckThresholds(p); err != nil {
		return err
	}
	rec := thresholdsRec{Prefs: p, At: at.UTC()}
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, appID[:]), "app "+appID.String()); err != nil {
			return err
		}
		return set(txn, key(pThresholds, appID[:]), rec)
	})
}

// PutShortFilter keeps the first put of a code: a repeat with the same filters changes
// nothing (CreatedAt included), one with other filters is ErrConflict.
func (s *Store) PutShortFilter(ctx context.Context, f model.ShortFilter) error {
	if err := sinks.CheckShortFilter(f); err != nil {
		return err
	}
	f.CreatedAt = f.CreatedAt.UTC()
	k := key(pShortFilter, f.AppID[:], []byte(f.Code))
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, f.AppID[:]), "app "+f.AppID.String()); err != nil {
			return err
		}
		var stored model.ShortFilter
		err := get(txn, k, &stored, "short filter "+f.Code)
		switch {
		case err == nil && bytes.Equal(stored.Filters, f.Filters):
			return nil
		case err == nil:
			return fmt.Errorf("badgermeta: short filter %s of app %s stands for other filters: %w", f.Code, f.AppID, sinks.ErrConflict)
		case !errors.Is(err, sinks.ErrNotFound):
			return err
		}
		return set(txn, k, f)
	})
}

// ShortFilter answers ErrNotFound for a code of the wrong form: no such code can be stored.
func (s *Store) ShortFilter(ctx context.Context, appID uuid.UUID, code string) (model.ShortFilter, error) {
	what := "short filter " + code + " of app " + appID.String()
	if !sinks.ValidShortFilterCode(code) {
		return model.ShortFilter{}, fmt.Errorf("badgermeta: %s: %w", what, sinks.ErrNotFound)
	}
	var f model.ShortFilter
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pShortFilter, appID[:], []byte(code)), &f, what)
	})
	return f, err
}

func (s *Store) ChatApp(ctx context.Context, teamID uuid.UUID) (model.ChatApp, error) {
	var c model.ChatApp
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pChatApp, teamID[:]), &c, "chat app of team "+teamID.String())
	})
	return c, err
}

func (s *Store) SetChatApp(ctx context.Context, c model.ChatApp) error {
	if err := sinks.CheckWebhook(c.WebhookURL); err != nil {
		return err
	}
	c.UpdatedAt = c.UpdatedAt.UTC()
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pTeam, c.TeamID[:]), "team "+c.TeamID.String()); err != nil {
			return err
		}
		return set(txn, key(pChatApp, c.TeamID[:]), c)
	})
}
