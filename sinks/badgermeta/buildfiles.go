package badgermeta

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// pMappingSize keeps the sizes SetBuildFileSize records apart from the mapping records, which
// AddMappings writes once: mapping id → size in bytes.
const pMappingSize = badgerdb.PrefixMeta + "mz/"

var _ sinks.BuildFiles = (*Store)(nil)

// appFiles reads every mapping of the app, with its size, through the version index (whose
// keys start with the app id).
func appFiles(txn *badger.Txn, app uuid.UUID) ([]sinks.BuildFile, error) {
	var out []sinks.BuildFile
	for _, sfx := range suffixes(txn, key(pVerMapping, app[:])) {
		f, err := buildFile(txn, app, uuid.UUID(sfx[len(sfx)-16:]))
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// buildFile reads one mapping of the app with its size; ErrNotFound when it is not the app's.
func buildFile(txn *badger.Txn, app, id uuid.UUID) (sinks.BuildFile, error) {
	what := "mapping " + id.String() + " of app " + app.String()
	f := sinks.BuildFile{Size: sinks.SizeUnknown}
	if err := get(txn, key(pMapping, id[:]), &f.Mapping, what); err != nil {
		return f, err
	}
	if f.AppID != app {
		return f, fmt.Errorf("badgermeta: %s: %w", what, sinks.ErrNotFound)
	}
	if err := get(txn, key(pMappingSize, id[:]), &f.Size, "size of "+what); err != nil && !errors.Is(err, sinks.ErrNotFound) {
		return f, err
	}
	f.CreatedAt = f.CreatedAt.UTC()
	return f, nil
}

// BuildPage reads every mapping of the app and selects in Go: an app has few mapping files.
func (s *Store) BuildPage(ctx context.Context, q sinks.BuildQuery) ([]sinks.Build, error) {
	if err := sinks.CheckBuildQuery(q); err != nil {
		return nil, err
	}
	var files []sinks.BuildFile
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		files, err = appFiles(txn, q.App)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sinks.SelectBuilds(files, q), nil
}

func (s *Store) BuildFile(ctx context.Context, app, id uuid.UUID) (sinks.BuildFile, error) {
	var f sinks.BuildFile
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		f, err = buildFile(txn, app, id)
		return err
	})
	return f, err
}

func (s *Store) SetBuildFileSize(ctx context.Context, app, id uuid.UUID, size int64) error {
	if size < 0 {
		return fmt.Errorf("badgermeta: size %d of mapping %s is negative: %w", size, id, sinks.ErrInvalid)
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		if _, err := buildFile(txn, app, id); err != nil {
			return err
		}
		return set(txn, key(pMappingSize, id[:]), size)
	})
}

// BuildValues keeps each value's latest upload while walking the app's mappings.
func (s *Store) BuildValues(ctx context.Context, app uuid.UUID, k, search string, limit int) ([]string, bool, error) {
	if err := sinks.CheckBuildValues(k, search, limit); err != nil {
		return nil, false, err
	}
	var files []sinks.BuildFile
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		files, err = appFiles(txn, app)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	needle := model.FoldASCII(search)
	latest := map[string]time.Time{}
	for _, f := range files {
		v := f.VersionName
		if k == "version_code" {
			v = f.VersionCode
		}
		if v == "" || !strings.Contains(model.FoldASCII(v), needle) {
			continue
		}
		if t, ok := latest[v]; !ok || f.CreatedAt.After(t) {
			latest[v] = f.CreatedAt
		}
	}
	values := make([]string, 0, len(latest))
	for v := range latest {
		values = append(values, v)
	}
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(latest[b].Compare(latest[a]), strings.Compare(a, b)) })
	if len(values) > limit {
		return values[:limit], true, nil
	}
	return values, false, nil
}
