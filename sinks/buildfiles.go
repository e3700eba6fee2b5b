package sinks

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// BuildFiles answers the dashboard's builds page (issue #15) over the mapping records of
// MetaStore.AddMappings. Both metadata backends implement it; the BuildFiles group of
// sinks/metatest.Run checks them against SelectBuilds, which defines the page.
//
// A mapping's size is not known when it is recorded: the build tool uploads the file straight
// to the blob store afterwards, and BlobStore reports no sizes. The caller measures a file it
// finds stored and records the size with SetBuildFileSize, once.
//
// Times come back in UTC with at least microsecond precision. Errors are those of MetaStore
// (ErrUnavailable when the store does not answer). Concurrency: all methods are safe for
// concurrent use.
type BuildFiles interface {
	// BuildPage returns the page of the app's builds that SelectBuilds gives over every stored
	// mapping of the app. An app without mappings, known or not, has no builds. ErrInvalid for what
	// CheckBuildQuery refuses.
	BuildPage(ctx context.Context, q BuildQuery) ([]Build, error)
	// BuildFile returns a mapping with its size. ErrNotFound when id is no mapping of app (a
	// mapping of another app included).
	BuildFile(ctx context.Context, app, id uuid.UUID) (BuildFile, error)
	// SetBuildFileSize records a mapping's size in bytes; setting it again replaces it.
	// ErrNotFound when id is no mapping of app, ErrInvalid for a negative size.
	SetBuildFileSize(ctx context.Context, app, id uuid.UUID, size int64) error
	// BuildValues lists the distinct non-empty values of key ("version_name" or "version_code")
	// among the app's mappings whose value contains search with A–Z folded to a–z
	// (model.FoldASCII; "" matches all), most recently uploaded first (the greatest CreatedAt of
	// a mapping with the value, ties by value in byte order), at most limit; more reports whether
	// others matched. ErrInvalid for another key or a limit below 1.
	BuildValues(ctx context.Context, app uuid.UUID, key, search string, limit int) (values []string, more bool, err error)
}

// SizeUnknown is the Size of a BuildFile whose size was never recorded.
const SizeUnknown = -1

// BuildFile is a mapping file with its size in bytes (SizeUnknown until SetBuildFileSize).
type BuildFile struct {
	model.Mapping
	Size int64
}

// BuildQuery asks for a page of an app's builds.
type BuildQuery struct {
	App uuid.UUID
	// From and To select the files created in [From, To).
	From, To time.Time
	// Filter selects files (model.FilterExpr.MatchMapping); nil selects all.
	Filter        *model.FilterExpr
	Limit, Offset int
}

// Build is one (version name, version code) of an app on the builds page, with its newest
// selected file of each mapping type. svc has no patch builds.
type Build struct {
	VersionName, VersionCode string
	// LastUpdated is the CreatedAt of its newest file.
	LastUpdated time.Time
	// Files are newest first, ties by mapping type in byte order.
	Files []BuildFile
}

// SelectBuilds is the builds page over the files of one app, the definition every backend
// answers alike: the files of q.App created in [q.From, q.To) that q.Filter matches are
// grouped by (version name, version code); of each mapping type a build keeps its newest file
// (the greatest CreatedAt, ties by the greatest id in byte order); builds are ordered by
// LastUpdated descending, then version name and version code in byte order; Offset builds are
// skipped and at most Limit returned. Filters apply to files, before the newest is chosen:
// mapping_type:in:dsym shows builds with their dSYM file only.
func SelectBuilds(files []BuildFile, q BuildQuery) []Build {
	type vkey struct{ name, code string }
	newest := map[vkey]map[string]BuildFile{}
	for _, f := range files {
		if f.AppID != q.App || f.CreatedAt.Before(q.From) || !f.CreatedAt.Before(q.To) || !q.Filter.MatchMapping(f.Mapping) {
			continue
		}
		k := vkey{f.VersionName, f.VersionCode}
		if newest[k] == nil {
			newest[k] = map[string]BuildFile{}
		}
		if old, ok := newest[k][f.Type]; !ok || compareNewest(f, old) < 0 {
			newest[k][f.Type] = f
		}
	}
	builds := make([]Build, 0, len(newest))
	for k, byType := range newest {
		b := Build{VersionName: k.name, VersionCode: k.code}
		for _, f := range byType {
			f.CreatedAt = f.CreatedAt.UTC()
			b.Files = append(b.Files, f)
			if f.CreatedAt.After(b.LastUpdated) {
				b.LastUpdated = f.CreatedAt
			}
		}
		slices.SortFunc(b.Files, func(x, y BuildFile) int {
			return cmp.Or(y.CreatedAt.Compare(x.CreatedAt), strings.Compare(x.Type, y.Type))
		})
		builds = append(builds, b)
	}
	slices.SortFunc(builds, func(x, y Build) int {
		return cmp.Or(y.LastUpdated.Compare(x.LastUpdated), strings.Compare(x.VersionName, y.VersionName), strings.Compare(x.VersionCode, y.VersionCode))
	})
	if q.Offset >= len(builds) {
		return []Build{}
	}
	builds = builds[q.Offset:]
	return builds[:min(len(builds), q.Limit)]
}

// compareNewest orders the newer of two files of one type first.
func compareNewest(x, y BuildFile) int {
	return cmp.Or(y.CreatedAt.Compare(x.CreatedAt), bytes.Compare(y.ID[:], x.ID[:]))
}

// CheckBuildQuery refuses what BuildPage refuses: a limit below 1, a negative offset, a filter
// that model.ParseFilterExpr would refuse for model.BuildsEntity, or a filter value with a NUL
// byte (model.ParseFilterExpr allows one; Postgres text cannot hold it).
func CheckBuildQuery(q BuildQuery) error {
	if q.Limit < 1 || q.Offset < 0 {
		return fmt.Errorf("builds page of limit %d and offset %d: %w", q.Limit, q.Offset, ErrInvalid)
	}
	if q.Filter == nil {
		return nil
	}
	if _, err := model.ParseFilterExpr(q.Filter.String(), model.BuildsEntity); err != nil {
		return fmt.Errorf("builds filter: %w: %w", ErrInvalid, err)
	}
	return checkFilterText(q.Filter)
}

// checkFilterText refuses a filter value Postgres cannot hold (a NUL byte).
func checkFilterText(x *model.FilterExpr) error {
	for _, v := range x.Cond.Values {
		if err := CheckText("builds filter value", v); err != nil {
			return err
		}
	}
	for i := range x.Children {
		if err := checkFilterText(&x.Children[i]); err != nil {
			return err
		}
	}
	return nil
}

// BuildValueKeys are the keys BuildValues lists.
var BuildValueKeys = []string{"version_name", "version_code"}

// CheckBuildValues refuses what BuildValues refuses: a key not in BuildValueKeys, a limit
// below 1, a search Postgres cannot hold.
func CheckBuildValues(key, search string, limit int) error {
	if !slices.Contains(BuildValueKeys, key) {
		return fmt.Errorf("build values of key %q: %w", key, ErrInvalid)
	}
	if limit < 1 {
		return fmt.Errorf("build values limit %d: %w", limit, ErrInvalid)
	}
	return CheckText("build values search", search)
}
