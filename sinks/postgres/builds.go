package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// PutBuild upserts on the primary key, so concurrent puts of one build leave one row.
func (s *Store) PutBuild(ctx context.Context, b model.Build) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if b.Size < 0 {
		return fmt.Errorf("postgres: build size %d is negative: %w", b.Size, sinks.ErrInvalid)
	}
	if err := sinks.CheckBuildFields(b.VersionName, b.VersionCode, b.BuildType); err != nil {
		return err
	}
	_, err := exec(ctx, s.pool, "put build of app "+b.AppID.String(),
		`INSERT INTO builds (app_id, version_name, version_code, build_type, size, updated_at)
		 VALUES ($1, $2, $3, $4, $5, $6)
		 ON CONFLICT (app_id, version_name, version_code, build_type)
		 DO UPDATE SET size = EXCLUDED.size, updated_at = EXCLUDED.updated_at`,
		b.AppID, b.VersionName, b.VersionCode, b.BuildType, b.Size, b.UpdatedAt)
	return err
}

func (s *Store) Builds(ctx context.Context, appID uuid.UUID) ([]model.Build, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "builds of app " + appID.String()
	rows, err := s.pool.Query(ctx,
		`SELECT app_id, version_name, version_code, build_type, size, updated_at FROM builds WHERE app_id = $1
		 ORDER BY updated_at DESC, version_name COLLATE "C", version_code COLLATE "C", build_type COLLATE "C"`, appID)
	if err != nil {
		return nil, fail(what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Build, error) {
		var b model.Build
		err := row.Scan(&b.AppID, &b.VersionName, &b.VersionCode, &b.BuildType, &b.Size, &b.UpdatedAt)
		b.UpdatedAt = b.UpdatedAt.UTC()
		return b, err
	})
	if err != nil {
		return nil, fail(what, err)
	}
	if len(out) == 0 {
		if err := s.mustHaveApp(ctx, appID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mustHaveApp returns ErrNotFound when the app does not exist; the list methods call it only
// when they found no rows.
func (s *Store) mustHaveApp(ctx context.Context, appID uuid.UUID) error {
	ok, err := exists(ctx, s.pool, "app "+appID.String(), `SELECT 1 FROM apps WHERE id = $1`, appID)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("app " + appID.String())
	}
	return nil
}

// AddMappings inserts the batch in one statement, which is atomic: a taken or repeated id
// (unique violation) or an unknown app (foreign key violation) stores none of it.
func (s *Store) AddMappings(ctx context.Context, ms []model.Mapping) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if len(ms) == 0 {
		return nil
	}
	var (
		ids, apps                                = make([]uuid.UUID, len(ms)), make([]uuid.UUID, len(ms))
		names, codes, types, mtypes, files, keys = make([]string, len(ms)), make([]string, len(ms)), make([]string, len(ms)), make([]string, len(ms)), make([]string, len(ms)), make([]string, len(ms))
		created                                  = make([]time.Time, len(ms))
	)
	for i, m := range ms {
		if err := sinks.CheckMapping(m); err != nil {
			return err
		}
		ids[i], apps[i], names[i], codes[i], types[i], mtypes[i], files[i], keys[i], created[i] =
			m.ID, m.AppID, m.VersionName, m.VersionCode, m.BuildType, m.Type, m.Filename, m.BlobKey, m.CreatedAt
	}
	_, err := exec(ctx, s.pool, fmt.Sprintf("add %d mappings", len(ms)),
		`INSERT INTO mappings (id, app_id, version_name, version_code, build_type, type, filename, blob_key, created_at)
		 SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[])`,
		ids, apps, names, codes, types, mtypes, files, keys, created)
	return err
}

func (s *Store) Mappings(ctx context.Context, appID uuid.UUID, versionName, versionCode string) ([]model.Mapping, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckText("version name", versionName); err != nil {
		return nil, err
	}
	if err := sinks.CheckText("version code", versionCode); err != nil {
		return nil, err
	}
	what := "mappings of app " + appID.String()
	rows, err := s.pool.Query(ctx,
		`SELECT id, app_id, version_name, version_code, build_type, type, filename, blob_key, created_at FROM mappings
		 WHERE app_id = $1 AND version_name = $2 AND version_code = $3 ORDER BY created_at, id`,
		appID, versionName, versionCode)
	if err != nil {
		return nil, fail(what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Mapping, error) {
		var m model.Mapping
		err := row.Scan(&m.ID, &m.AppID, &m.VersionName, &m.VersionCode, &m.BuildType, &m.Type, &m.Filename, &m.BlobKey, &m.CreatedAt)
		m.CreatedAt = m.CreatedAt.UTC()
		return m, err
	})
	if err != nil {
		return nil, fail(what, err)
	}
	if len(out) == 0 {
		if err := s.mustHaveApp(ctx, appID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) SDKConfig(ctx context.Context, appID uuid.UUID) (model.SDKConfig, time.Time, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "SDK config of app " + appID.String()
	var (
		raw []byte
		at  time.Time
		c   model.SDKConfig
	)
	if err := s.pool.QueryRow(ctx, `SELECT config, updated_at FROM sdk_configs WHERE app_id = $1`, appID).Scan(&raw, &at); err != nil {
		return model.SDKConfig{}, time.Time{}, fail(what, err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return model.SDKConfig{}, time.Time{}, fmt.Errorf("postgres: decode %s: %w", what, err)
	}
	return c, at.UTC(), nil
}

// SetSDKConfig upserts the app's row; the foreign key makes an unknown app ErrNotFound.
func (s *Store) SetSDKConfig(ctx context.Context, appID uuid.UUID, c model.SDKConfig, at time.Time) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckSDKConfig(&c); err != nil {
		return err
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("postgres: encode SDK config: %w", err)
	}
	_, err = exec(ctx, s.pool, "set SDK config of app "+appID.String(),
		`INSERT INTO sdk_configs (app_id, config, updated_at) VALUES ($1, $2, $3)
		 ON CONFLICT (app_id) DO UPDATE SET config = EXCLUDED.config, updated_at = EXCLUDED.updated_at`,
		appID, json.RawMessage(raw), at)
	return err
}
