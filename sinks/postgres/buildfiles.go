package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

var _ sinks.BuildFiles = (*Store)(nil)

// foldSQL is model.FoldASCII in SQL: translate() maps A–Z whatever the database's locale,
// where lower() would follow it.
const foldSQL = `translate(%s, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`

// buildColumns are the mappings columns of the filter keys svc stores; the patch keys are
// never set (model.BuildsEntity).
var buildColumns = map[string]string{"version_name": "version_name", "version_code": "version_code", "mapping_type": "type"}

const buildFileCols = `id, app_id, version_name, version_code, build_type, type, filename, blob_key, created_at, coalesce(size, -1)`

func scanBuildFile(row pgx.CollectableRow) (sinks.BuildFile, error) {
	var f sinks.BuildFile
	err := row.Scan(&f.ID, &f.AppID, &f.VersionName, &f.VersionCode, &f.BuildType, &f.Type, &f.Filename, &f.BlobKey, &f.CreatedAt, &f.Size)
	f.CreatedAt = f.CreatedAt.UTC()
	return f, err
}

// filterSQL writes a filter as a condition over mappings rows, appending its values to args
// ($n placeholders). A key without a column is never set, so its condition is a constant.
func filterSQL(x *model.FilterExpr, args *[]any) (string, error) {
	if x.Logic != "" {
		parts := make([]string, len(x.Children))
		for i := range x.Children {
			p, err := filterSQL(&x.Children[i], args)
			if err != nil {
				return "", err
			}
			parts[i] = "(" + p + ")"
		}
		return strings.Join(parts, " "+strings.ToUpper(x.Logic)+" "), nil
	}
	c := x.Cond
	col, ok := buildColumns[c.Key]
	if !ok {
		return strconv.FormatBool(c.MatchValue("", false)), nil
	}
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
	switch c.Op {
	case model.FilterIn:
		return col + " = ANY(" + arg(c.Values) + "::text[])", nil
	case model.FilterNotIn:
		return "NOT (" + col + " = ANY(" + arg(c.Values) + "::text[]))", nil
	case model.FilterContains:
		return "strpos(" + fmt.Sprintf(foldSQL, col) + ", " + arg(model.FoldASCII(c.Values[0])) + "::text) > 0", nil
	case model.FilterStartsWith:
		return "strpos(" + fmt.Sprintf(foldSQL, col) + ", " + arg(model.FoldASCII(c.Values[0])) + "::text) = 1", nil
	case model.FilterIsSet, model.FilterIsNotSet:
		return strconv.FormatBool(c.Op == model.FilterIsSet), nil // every column is NOT NULL
	}
	return "", fmt.Errorf("postgres: filter operator %q: %w", c.Op, sinks.ErrInvalid)
}

// BuildPage picks the newest file per (version, type) with DISTINCT ON, pages the builds by
// their newest file, and returns the files of the page's builds in page order.
func (s *Store) BuildPage(ctx context.Context, q sinks.BuildQuery) ([]sinks.Build, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckBuildQuery(q); err != nil {
		return nil, err
	}
	args := []any{q.App, q.From, q.To, q.Limit, q.Offset}
	where := "TRUE"
	if q.Filter != nil {
		var err error
		if where, err = filterSQL(q.Filter, &args); err != nil {
			return nil, err
		}
	}
	what := "builds of app " + q.App.String()
	rows, err := s.pool.Query(ctx, `
		WITH f AS (
			SELECT DISTINCT ON (version_name, version_code, type) `+buildFileCols+`
			FROM mappings
			WHERE app_id = $1 AND created_at >= $2 AND created_at < $3 AND (`+where+`)
			ORDER BY version_name, version_code, type, created_at DESC, id DESC
		), b AS (
			SELECT version_name, version_code, max(created_at) AS newest FROM f
			GROUP BY version_name, version_code
			ORDER BY newest DESC, version_name COLLATE "C", version_code COLLATE "C"
			LIMIT $4 OFFSET $5
		)
		SELECT f.* FROM b JOIN f ON f.version_name = b.version_name AND f.version_code = b.version_code
		ORDER BY b.newest DESC, b.version_name COLLATE "C", b.version_code COLLATE "C", f.created_at DESC, f.type COLLATE "C"`,
		args...)
	if err != nil {
		return nil, fail(what, err)
	}
	files, err := pgx.CollectRows(rows, scanBuildFile)
	if err != nil {
		return nil, fail(what, err)
	}
	out := []sinks.Build{}
	for _, f := range files {
		if n := len(out); n == 0 || out[n-1].VersionName != f.VersionName || out[n-1].VersionCode != f.VersionCode {
			out = append(out, sinks.Build{VersionName: f.VersionName, VersionCode: f.VersionCode, LastUpdated: f.CreatedAt})
		}
		b := &out[len(out)-1]
		b.Files = append(b.Files, f)
	}
	return out, nil
}

func (s *Store) BuildFile(ctx context.Context, app, id uuid.UUID) (sinks.BuildFile, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	what := "mapping " + id.String() + " of app " + app.String()
	rows, err := s.pool.Query(ctx, `SELECT `+buildFileCols+` FROM mappings WHERE id = $1 AND app_id = $2`, id, app)
	if err != nil {
		return sinks.BuildFile{}, fail(what, err)
	}
	f, err := pgx.CollectExactlyOneRow(rows, scanBuildFile)
	if err != nil {
		return sinks.BuildFile{}, fail(what, err)
	}
	return f, nil
}

func (s *Store) SetBuildFileSize(ctx context.Context, app, id uuid.UUID, size int64) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if size < 0 {
		return fmt.Errorf("postgres: size %d of mapping %s is negative: %w", size, id, sinks.ErrInvalid)
	}
	what := "size of mapping " + id.String() + " of app " + app.String()
	n, err := exec(ctx, s.pool, what, `UPDATE mappings SET size = $3 WHERE id = $1 AND app_id = $2`, id, app, size)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("mapping " + id.String() + " of app " + app.String())
	}
	return nil
}

// BuildValues groups the app's mappings by the key's column; the column name comes from
// sinks.BuildValueKeys, never from the caller's text.
func (s *Store) BuildValues(ctx context.Context, app uuid.UUID, key, search string, limit int) ([]string, bool, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := sinks.CheckBuildValues(key, search, limit); err != nil {
		return nil, false, err
	}
	col := buildColumns[key]
	what := key + " values of app " + app.String()
	rows, err := s.pool.Query(ctx, `
		SELECT `+col+` FROM mappings
		WHERE app_id = $1 AND `+col+` <> '' AND strpos(`+fmt.Sprintf(foldSQL, col)+`, $2::text) > 0
		GROUP BY `+col+`
		ORDER BY max(created_at) DESC, `+col+` COLLATE "C"
		LIMIT $3`,
		app, model.FoldASCII(search), limit+1)
	if err != nil {
		return nil, false, fail(what, err)
	}
	values, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, false, fail(what, err)
	}
	if values == nil {
		values = []string{}
	}
	if len(values) > limit {
		return values[:limit], true, nil
	}
	return values, false, nil
}
