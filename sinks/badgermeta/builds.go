package badgermeta

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// configRec is a stored SDK configuration and when it was set.
type configRec struct {
	Config model.SDKConfig
	At     time.Time
}

func versionKey(app uuid.UUID, versionName, versionCode string) []byte {
	return key(pVerMapping, app[:], []byte(versionName), []byte{0}, []byte(versionCode), []byte{0})
}

// PutBuild writes the build under its (app, version, type) key, so a second put replaces it.
func (s *Store) PutBuild(ctx context.Context, b model.Build) error {
	if b.Size < 0 {
		return fmt.Errorf("badgermeta: build size %d is negative: %w", b.Size, sinks.ErrInvalid)
	}
	if err := sinks.CheckBuildFields(b.VersionName, b.VersionCode, b.BuildType); err != nil {
		return err
	}
	b.UpdatedAt = b.UpdatedAt.UTC()
	k := key(pBuild, b.AppID[:], []byte(b.VersionName), []byte{0}, []byte(b.VersionCode), []byte{0}, []byte(b.BuildType))
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, b.AppID[:]), "app "+b.AppID.String()); err != nil {
			return err
		}
		return set(txn, k, b)
	})
}

func (s *Store) Builds(ctx context.Context, appID uuid.UUID) ([]model.Build, error) {
	var out []model.Build
	err := s.view(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, appID[:]), "app "+appID.String()); err != nil {
			return err
		}
		var err error
		out, err = list[model.Build](txn, key(pBuild, appID[:]), "build of app "+appID.String())
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, compareBuilds)
	return out, nil
}

// compareBuilds orders the most recently updated first, then by version name, version code and
// build type in byte order.
func compareBuilds(a, b model.Build) int {
	if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
		return c
	}
	if c := strings.Compare(a.VersionName, b.VersionName); c != 0 {
		return c
	}
	if c := strings.Compare(a.VersionCode, b.VersionCode); c != 0 {
		return c
	}
	return strings.Compare(a.BuildType, b.BuildType)
}

// AddMappings checks every id and app in the one transaction that writes them; Badger reads a
// transaction's own writes, so an id repeated within the batch is a conflict too.
func (s *Store) AddMappings(ctx context.Context, ms []model.Mapping) error {
	if len(ms) == 0 {
		return s.view(ctx, func(*badger.Txn) error { return nil })
	}
	stored := make([]model.Mapping, len(ms))
	for i, m := range ms {
		if err := sinks.CheckMapping(m); err != nil {
			return err
		}
		m.CreatedAt = m.CreatedAt.UTC()
		stored[i] = m
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		for i := range stored {
			m := &stored[i]
			if i == 0 || m.AppID != stored[i-1].AppID {
				if err := mustExist(txn, key(pApp, m.AppID[:]), "app "+m.AppID.String()); err != nil {
					return err
				}
			}
			k := key(pMapping, m.ID[:])
			if err := mustBeFree(txn, k, "mapping id "+m.ID.String()); err != nil {
				return err
			}
			if err := set(txn, k, m); err != nil {
				return err
			}
			vk := versionKey(m.AppID, m.VersionName, m.VersionCode)
			if err := setIndex(txn, key(string(vk), timeKey(m.CreatedAt), m.ID[:])); err != nil {
				return err
			}
		}
		return nil
	})
}

// Mappings walks the version's index, which is in creation order and then id order already.
func (s *Store) Mappings(ctx context.Context, appID uuid.UUID, versionName, versionCode string) ([]model.Mapping, error) {
	// A NUL would make the index prefix ambiguous; such a version cannot be stored anyway.
	if err := sinks.CheckText("version name", versionName); err != nil {
		return nil, err
	}
	if err := sinks.CheckText("version code", versionCode); err != nil {
		return nil, err
	}
	var out []model.Mapping
	err := s.view(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, appID[:]), "app "+appID.String()); err != nil {
			return err
		}
		for _, sfx := range suffixes(txn, versionKey(appID, versionName, versionCode)) {
			var m model.Mapping
			if err := get(txn, key(pMapping, sfx[len(sfx)-16:]), &m, "mapping of app "+appID.String()); err != nil {
				return err
			}
			out = append(out, m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) SDKConfig(ctx context.Context, appID uuid.UUID) (model.SDKConfig, time.Time, error) {
	var rec configRec
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pConfig, appID[:]), &rec, "SDK config of app "+appID.String())
	})
	if err != nil {
		return model.SDKConfig{}, time.Time{}, err
	}
	return rec.Config, rec.At, nil
}

func (s *Store) SetSDKConfig(ctx context.Context, appID uuid.UUID, c model.SDKConfig, at time.Time) error {
	if err := sinks.CheckSDKConfig(&c); err != nil {
		return err
	}
	rec := configRec{Config: c, At: at.UTC()}
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, appID[:]), "app "+appID.String()); err != nil {
			return err
		}
		return set(txn, key(pConfig, appID[:]), rec)
	})
}

// list decodes every record whose key starts with prefix, in key order.
func list[T any](txn *badger.Txn, prefix []byte, what string) ([]T, error) {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	var out []T
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		var v T
		if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &v) }); err != nil {
			return nil, fmt.Errorf("badgermeta: decode %s: %w", what, err)
		}
		out = append(out, v)
	}
	return out, nil
}
