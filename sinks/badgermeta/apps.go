package badgermeta

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func (s *Store) CreateApp(ctx context.Context, a model.App, k model.APIKey) error {
	if err := sinks.CheckNewKey(k, a.ID); err != nil {
		return err
	}
	days, err := retention(a.RetentionDays, true)
	if err != nil {
		return err
	}
	a.RetentionDays = days
	a, k = utcApp(a), utcKey(k)
	// A new app is not onboarded: MarkOnboarded alone sets these (as in Postgres).
	a.Onboarded, a.OnboardedAt, a.OSNames = false, time.Time{}, nil
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pTeam, a.TeamID[:]), "team "+a.TeamID.String()); err != nil {
			return err
		}
		if err := mustBeFree(txn, key(pApp, a.ID[:]), "app id "+a.ID.String()); err != nil {
			return err
		}
		if err := mustBeFree(txn, key(pKey, []byte(k.Key)), "API key"); err != nil {
			return err
		}
		if err := set(txn, key(pApp, a.ID[:]), a); err != nil {
			return err
		}
		if err := setIndex(txn, key(pTeamApp, a.TeamID[:], a.ID[:])); err != nil {
			return err
		}
		return putKey(txn, k)
	})
}

func putKey(txn *badger.Txn, k model.APIKey) error {
	if err := set(txn, key(pKey, []byte(k.Key)), k); err != nil {
		return err
	}
	return setIndex(txn, key(pAppKey, k.AppID[:], []byte(k.Key)))
}

func (s *Store) App(ctx context.Context, id uuid.UUID) (model.App, error) {
	var a model.App
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pApp, id[:]), &a, "app "+id.String())
	})
	return a, err
}

func (s *Store) AppsOfTeam(ctx context.Context, teamID uuid.UUID) ([]model.App, error) {
	return listOfTeam(s, ctx, teamID, pTeamApp, pApp, "app", func(a model.App) (time.Time, uuid.UUID) { return a.CreatedAt, a.ID })
}

// listOfTeam reads the records a team's index names (its apps, its invites), oldest first;
// ErrNotFound for an unknown team.
func listOfTeam[T any](s *Store, ctx context.Context, teamID uuid.UUID, index, rows, what string,
	created func(T) (time.Time, uuid.UUID)) ([]T, error) {
	var out []T
	err := s.view(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pTeam, teamID[:]), "team "+teamID.String()); err != nil {
			return err
		}
		for _, id := range suffixes(txn, key(index, teamID[:])) {
			var v T
			if err := get(txn, key(rows, id), &v, what+" of team "+teamID.String()); err != nil {
				return err
			}
			out = append(out, v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b T) int {
		ta, ia := created(a)
		tb, ib := created(b)
		return byTime(ta, tb, ia, ib)
	})
	return out, nil
}

// AllApps reads every app record; background jobs call it rarely.
func (s *Store) AllApps(ctx context.Context) ([]model.App, error) {
	var out []model.App
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		out, err = list[model.App](txn, []byte(pApp), "app")
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b model.App) int { return byTime(a.CreatedAt, b.CreatedAt, a.ID, b.ID) })
	return out, nil
}

func (s *Store) UpdateApp(ctx context.Context, a model.App) error {
	days, err := retention(a.RetentionDays, false)
	if err != nil {
		return err
	}
	a = utcApp(a)
	return s.update(ctx, func(txn *badger.Txn) error {
		var stored model.App
		k := key(pApp, a.ID[:])
		if err := get(txn, k, &stored, "app "+a.ID.String()); err != nil {
			return err
		}
		stored.Name, stored.UniqueID, stored.Platform, stored.RetentionDays, stored.UpdatedAt = a.Name, a.UniqueID, a.Platform, days, a.UpdatedAt
		return set(txn, k, stored)
	})
}

func (s *Store) AppByAPIKey(ctx context.Context, apiKey string) (model.App, model.APIKey, error) {
	var (
		a model.App
		k model.APIKey
	)
	err := s.view(ctx, func(txn *badger.Txn) error {
		if err := get(txn, key(pKey, []byte(apiKey)), &k, "API key"); err != nil {
			return err
		}
		return get(txn, key(pApp, k.AppID[:]), &a, "app "+k.AppID.String()+" of an API key")
	})
	return a, k, err
}

// keysOf returns every key of the app, revoked or not.
func keysOf(txn *badger.Txn, app uuid.UUID) ([]model.APIKey, error) {
	var out []model.APIKey
	for _, raw := range suffixes(txn, key(pAppKey, app[:])) {
		var k model.APIKey
		if err := get(txn, key(pKey, raw), &k, "API key of app "+app.String()); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

func (s *Store) ActiveAPIKey(ctx context.Context, appID uuid.UUID) (model.APIKey, error) {
	var active model.APIKey
	err := s.view(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, appID[:]), "app "+appID.String()); err != nil {
			return err
		}
		keys, err := keysOf(txn, appID)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if !k.Revoked {
				active = k
				return nil
			}
		}
		return fmt.Errorf("badgermeta: active API key of app %s: %w", appID, sinks.ErrNotFound)
	})
	return active, err
}

// RotateAPIKey reads every key of the app and rewrites the active one, so two concurrent
// rotations conflict in Badger and the loser runs again, revoking the winner's key.
func (s *Store) RotateAPIKey(ctx context.Context, k model.APIKey) error {
	if err := sinks.CheckNewKey(k, k.AppID); err != nil {
		return err
	}
	k = utcKey(k)
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, k.AppID[:]), "app "+k.AppID.String()); err != nil {
			return err
		}
		if err := mustBeFree(txn, key(pKey, []byte(k.Key)), "API key"); err != nil {
			return err
		}
		keys, err := keysOf(txn, k.AppID)
		if err != nil {
			return err
		}
		for _, old := range keys {
			if old.Revoked {
				continue
			}
			old.Revoked = true
			if err := set(txn, key(pKey, []byte(old.Key)), old); err != nil {
				return err
			}
		}
		return putKey(txn, k)
	})
}

func (s *Store) TouchAPIKey(ctx context.Context, apiKey string, at time.Time) error {
	at = at.UTC()
	return s.update(ctx, func(txn *badger.Txn) error {
		var k model.APIKey
		kk := key(pKey, []byte(apiKey))
		if err := get(txn, kk, &k, "API key"); err != nil {
			return err
		}
		if !at.After(k.LastSeen) {
			return nil
		}
		k.LastSeen = at
		return set(txn, kk, k)
	})
}

func (s *Store) CreateAuthSession(ctx context.Context, a model.AuthSession) error {
	a = utcSession(a)
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pUser, a.UserID[:]), "user "+a.UserID.String()); err != nil {
			return err
		}
		if err := mustBeFree(txn, key(pSession, a.ID[:]), "session id "+a.ID.String()); err != nil {
			return err
		}
		if err := set(txn, key(pSession, a.ID[:]), a); err != nil {
			return err
		}
		return setIndex(txn, expiryKey(a))
	})
}

func (s *Store) AuthSession(ctx context.Context, id uuid.UUID) (model.AuthSession, error) {
	var a model.AuthSession
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pSession, id[:]), &a, "session "+id.String())
	})
	return a, err
}

func (s *Store) RotateAuthSession(ctx context.Context, id, oldRefreshID, newRefreshID uuid.UUID, expiresAt time.Time) error {
	expiresAt = expiresAt.UTC()
	return s.update(ctx, func(txn *badger.Txn) error {
		var a model.AuthSession
		k := key(pSession, id[:])
		if err := get(txn, k, &a, "session "+id.String()); err != nil {
			return err
		}
		if a.RefreshID != oldRefreshID {
			return fmt.Errorf("badgermeta: session %s was rotated with another refresh token: %w", id, sinks.ErrConflict)
		}
		if err := del(txn, expiryKey(a)); err != nil {
			return err
		}
		a.RefreshID, a.ExpiresAt = newRefreshID, expiresAt
		if err := set(txn, k, a); err != nil {
			return err
		}
		return setIndex(txn, expiryKey(a))
	})
}

func (s *Store) DeleteAuthSession(ctx context.Context, id uuid.UUID) error {
	return s.update(ctx, func(txn *badger.Txn) error {
		var a model.AuthSession
		k := key(pSession, id[:])
		if err := get(txn, k, &a, "session "+id.String()); err != nil {
			return err
		}
		if err := del(txn, k); err != nil {
			return err
		}
		return del(txn, expiryKey(a))
	})
}

// DeleteExpiredAuthSessions walks the expiry index from the oldest; each transaction removes
// at most expireBatch sessions, so any number fits Badger's transaction size limit. Sessions
// are independent, so committing in batches changes nothing a caller can observe but timing.
func (s *Store) DeleteExpiredAuthSessions(ctx context.Context, now time.Time) (int, error) {
	bound := key(pExpiry, timeKey(now.UTC()))
	prefix := []byte(pExpiry)
	total := 0
	for {
		var n int
		err := s.update(ctx, func(txn *badger.Txn) error {
			n = 0
			ids := make([][]byte, 0, 64)
			opts := badger.DefaultIteratorOptions
			opts.PrefetchValues = false
			opts.Prefix = prefix
			it := txn.NewIterator(opts)
			for it.Seek(prefix); it.ValidForPrefix(prefix) && len(ids) < expireBatch; it.Next() {
				k := it.Item().Key()
				if bytes.Compare(k, bound) >= 0 {
					break
				}
				ids = append(ids, bytes.Clone(k[len(k)-16:]))
			}
			it.Close()
			for _, id := range ids {
				var a model.AuthSession
				if err := get(txn, key(pSession, id), &a, "expired session"); err != nil {
					return err
				}
				if err := del(txn, key(pSession, id)); err != nil {
					return err
				}
				if err := del(txn, expiryKey(a)); err != nil {
					return err
				}
			}
			n = len(ids)
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < expireBatch {
			return total, nil
		}
	}
}
