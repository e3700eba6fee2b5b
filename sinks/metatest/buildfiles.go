package metatest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// testBuildFiles checks sinks.BuildFiles, which every MetaStore backend implements too, against
// sinks.SelectBuilds. Beyond the interface's doc comments it pins down these choices:
//   - BuildPage and BuildValues of an app without mappings, known or not, are empty lists, never
//     nil;
//   - a filter's contains and starts_with fold A–Z only (é and É differ), as model.FoldASCII;
//   - BuildFile and SetBuildFileSize of another app's mapping are ErrNotFound, like an unknown id;
//   - a size recorded shows in BuildFile and in BuildPage.
func testBuildFiles(t *testing.T, s sinks.MetaStore) {
	bf, ok := s.(sinks.BuildFiles)
	if !ok {
		t.Fatalf("%T does not implement sinks.BuildFiles", s)
	}
	ctx := t.Context()
	_, tm := mustUser(t, s, at(0))

	// file returns a mapping record of app, of a version and type, created at c.
	file := func(app model.App, name, code, typ string, c time.Time) model.Mapping {
		m := newMapping(app.ID, name, code, c)
		m.Type, m.Filename = typ, typ+".bin"
		return m
	}
	add := func(t *testing.T, ms ...model.Mapping) {
		t.Helper()
		if err := s.AddMappings(ctx, ms); err != nil {
			t.Fatalf("AddMappings: %v", err)
		}
	}
	unknown := func(m model.Mapping) sinks.BuildFile { return sinks.BuildFile{Mapping: m, Size: sinks.SizeUnknown} }
	utc := func(m model.Mapping) model.Mapping { m.CreatedAt = m.CreatedAt.UTC(); return m }
	page := func(t *testing.T, q sinks.BuildQuery) []sinks.Build {
		t.Helper()
		got, err := bf.BuildPage(ctx, q)
		if err != nil {
			t.Fatalf("BuildPage(%+v): %v", q, err)
		}
		return got
	}
	parse := func(t *testing.T, text string) *model.FilterExpr {
		t.Helper()
		x, err := model.ParseFilterExpr(text, model.BuildsEntity)
		if err != nil {
			t.Fatalf("ParseFilterExpr(%q): %v", text, err)
		}
		return x
	}

	t.Run("Page", func(t *testing.T) {
		a, _ := mustApp(t, s, tm.ID, at(0))
		other, _ := mustApp(t, s, tm.ID, at(0))
		v1old := file(a, "1.0", "1", "proguard", at(1))
		v1dsym := file(a, "1.0", "1", "dsym", at(2))
		v1new := file(a, "1.0", "1", "proguard", at(3))
		v2 := file(a, "2.0", "2", "elf_debug", at(4))
		v3 := file(a, "0.9", "9", "jsbundle", at(0))
		v1code2 := file(a, "1.0", "2", "proguard", at(2)) // another code: another build
		add(t, v1old, v1dsym, v1new, v2, v3, v1code2, file(other, "2.0", "2", "elf_debug", at(5)))
		all := sinks.BuildQuery{App: a.ID, From: at(-60), To: at(60), Limit: 10}
		want := []sinks.Build{
			{VersionName: "2.0", VersionCode: "2", LastUpdated: utc(v2).CreatedAt, Files: []sinks.BuildFile{unknown(utc(v2))}},
			{VersionName: "1.0", VersionCode: "1", LastUpdated: utc(v1new).CreatedAt, Files: []sinks.BuildFile{unknown(utc(v1new)), unknown(utc(v1dsym))}},
			{VersionName: "1.0", VersionCode: "2", LastUpdated: utc(v1code2).CreatedAt, Files: []sinks.BuildFile{unknown(utc(v1code2))}},
			{VersionName: "0.9", VersionCode: "9", LastUpdated: utc(v3).CreatedAt, Files: []sinks.BuildFile{unknown(utc(v3))}},
		}
		check(t, "every build", page(t, all), want)

		q := all
		q.Limit, q.Offset = 2, 1
		check(t, "limit 2 offset 1", page(t, q), want[1:3])
		q.Offset = 4
		check(t, "offset past the end", page(t, q), []sinks.Build{})

		// The window selects files before the newest of a type is chosen; To is exclusive.
		q = all
		q.From, q.To = at(1), at(3)
		check(t, "window [1, 3)", page(t, q), []sinks.Build{
			{VersionName: "1.0", VersionCode: "1", LastUpdated: utc(v1dsym).CreatedAt, Files: []sinks.BuildFile{unknown(utc(v1dsym)), unknown(utc(v1old))}},
			{VersionName: "1.0", VersionCode: "2", LastUpdated: utc(v1code2).CreatedAt, Files: []sinks.BuildFile{unknown(utc(v1code2))}},
		})

		// So does the filter.
		q = all
		q.Filter = parse(t, "mapping_type:in:dsym OR version_name:starts_with:0.")
		check(t, "dsym or 0.*", page(t, q), []sinks.Build{
			{VersionName: "1.0", VersionCode: "1", LastUpdated: utc(v1dsym).CreatedAt, Files: []sinks.BuildFile{unknown(utc(v1dsym))}},
			{VersionName: "0.9", VersionCode: "9", LastUpdated: utc(v3).CreatedAt, Files: []sinks.BuildFile{unknown(utc(v3))}},
		})
		q.Filter = parse(t, "patch_id:is_set")
		check(t, "patch_id:is_set", page(t, q), []sinks.Build{})
		q.Filter = parse(t, "patch_id:is_not_set AND patch_version:not_in:x AND version_code:not_in:[1,9]")
		check(t, "patch keys never set", page(t, q), []sinks.Build{want[0], want[2]})

		q = all
		q.App = uuid.New()
		check(t, "an unknown app", page(t, q), []sinks.Build{})
	})

	t.Run("Ties", func(t *testing.T) {
		a, _ := mustApp(t, s, tm.ID, at(0))
		// Two files of one type at one time: the greater id wins.
		x, y := file(a, "1", "1", "proguard", at(5)), file(a, "1", "1", "proguard", at(5))
		x.ID, y.ID = uuid.MustParse("00000000-0000-4000-8000-000000000001"), uuid.MustParse("ff000000-0000-4000-8000-000000000000")
		x.BlobKey, y.BlobKey = "mappings/x", "mappings/y"
		// Builds whose newest files share a time: version name, then code, in byte order.
		b1, b2, b3 := file(a, "B", "1", "dsym", at(5)), file(a, "a", "1", "dsym", at(5)), file(a, "B", "0", "dsym", at(5))
		// Files of one build at one time: by type.
		e := file(a, "1", "1", "elf_debug", at(5))
		add(t, x, y, b1, b2, b3, e)
		five := utc(x).CreatedAt
		got := page(t, sinks.BuildQuery{App: a.ID, From: at(0), To: at(10), Limit: 10})
		check(t, "ties", got, []sinks.Build{
			{VersionName: "1", VersionCode: "1", LastUpdated: five, Files: []sinks.BuildFile{unknown(utc(e)), unknown(utc(y))}},
			{VersionName: "B", VersionCode: "0", LastUpdated: five, Files: []sinks.BuildFile{unknown(utc(b3))}},
			{VersionName: "B", VersionCode: "1", LastUpdated: five, Files: []sinks.BuildFile{unknown(utc(b1))}},
			{VersionName: "a", VersionCode: "1", LastUpdated: five, Files: []sinks.BuildFile{unknown(utc(b2))}},
		})
	})

	t.Run("AgainstSelectBuilds", func(t *testing.T) {
		a, _ := mustApp(t, s, tm.ID, at(0))
		rng := rand.New(rand.NewPCG(15, 15))
		names := []string{"1.0", "1.0-Beta", "1.0-beta", "2.0", "Éclair", "éclair", "10.0 (rc)", "2.0-BETA.1"}
		codes := []string{"1", "10", "2", "100"}
		types := []string{"proguard", "dsym", "elf_debug", "jsbundle"}
		var files []sinks.BuildFile
		var ms []model.Mapping
		for range 80 {
			m := file(a, names[rng.IntN(len(names))], codes[rng.IntN(len(codes))], types[rng.IntN(len(types))], at(rng.IntN(12)))
			ms = append(ms, m)
			files = append(files, unknown(utc(m)))
		}
		add(t, ms...)
		filters := []string{
			"", "version_name:in:[1.0,2.0]", "version_name:not_in:1.0-Beta", "version_name:contains:BETA", "version_name:contains:clair",
			"version_name:contains:É", "version_name:starts_with:1.0", "version_name:starts_with:éC", "version_code:in:[1,100]",
			"version_code:not_in:10", "mapping_type:in:[dsym,jsbundle]", "mapping_type:not_in:proguard",
			"patch_version:in:1", "patch_version:not_in:1", "patch_version:contains:1", "patch_id:in:3f2a0c1e-8b7d-4e5f-9a6b-0c1d2e3f4a5b",
			"patch_id:not_in:3f2a0c1e-8b7d-4e5f-9a6b-0c1d2e3f4a5b", "patch_id:is_set", "patch_id:is_not_set",
			"(version_name:contains:beta OR mapping_type:in:dsym) AND version_code:not_in:[1,2]",
			`version_name:in:"10.0 (rc)" OR (mapping_type:in:elf_debug AND (version_code:in:1 OR version_name:starts_with:2))`,
		}
		windows := [][2]int{{0, 12}, {3, 7}, {5, 6}, {11, 40}}
		pages := [][2]int{{1000, 0}, {3, 0}, {3, 2}, {1, 7}}
		for _, text := range filters {
			for _, w := range windows {
				for _, p := range pages {
					q := sinks.BuildQuery{App: a.ID, From: at(w[0]), To: at(w[1]), Limit: p[0], Offset: p[1]}
					if text != "" {
						q.Filter = parse(t, text)
					}
					check(t, fmt.Sprintf("%q window %v page %v", text, w, p), page(t, q), sinks.SelectBuilds(files, q))
				}
			}
		}
	})

	t.Run("FileAndSize", func(t *testing.T) {
		a, _ := mustApp(t, s, tm.ID, at(0))
		other, _ := mustApp(t, s, tm.ID, at(0))
		m := file(a, "1", "1", "dsym", at(1))
		add(t, m)
		got, err := bf.BuildFile(ctx, a.ID, m.ID)
		wantErr(t, "BuildFile", err, nil)
		check(t, "file before its size", got, unknown(utc(m)))
		_, err = bf.BuildFile(ctx, other.ID, m.ID)
		wantErr(t, "BuildFile of another app", err, sinks.ErrNotFound)
		_, err = bf.BuildFile(ctx, a.ID, uuid.New())
		wantErr(t, "BuildFile of an unknown id", err, sinks.ErrNotFound)

		wantErr(t, "SetBuildFileSize", bf.SetBuildFileSize(ctx, a.ID, m.ID, 7), nil)
		wantErr(t, "SetBuildFileSize again", bf.SetBuildFileSize(ctx, a.ID, m.ID, 1<<40), nil)
		wantErr(t, "SetBuildFileSize negative", bf.SetBuildFileSize(ctx, a.ID, m.ID, -1), sinks.ErrInvalid)
		wantErr(t, "SetBuildFileSize of another app", bf.SetBuildFileSize(ctx, other.ID, m.ID, 1), sinks.ErrNotFound)
		wantErr(t, "SetBuildFileSize of an unknown id", bf.SetBuildFileSize(ctx, a.ID, uuid.New(), 1), sinks.ErrNotFound)
		sized := sinks.BuildFile{Mapping: utc(m), Size: 1 << 40}
		got, err = bf.BuildFile(ctx, a.ID, m.ID)
		wantErr(t, "BuildFile", err, nil)
		check(t, "file with its size", got, sized)
		check(t, "page with the size", page(t, sinks.BuildQuery{App: a.ID, From: at(0), To: at(2), Limit: 1}),
			[]sinks.Build{{VersionName: "1", VersionCode: "1", LastUpdated: sized.CreatedAt, Files: []sinks.BuildFile{sized}}})
	})

	t.Run("Values", func(t *testing.T) {
		a, _ := mustApp(t, s, tm.ID, at(0))
		other, _ := mustApp(t, s, tm.ID, at(0))
		add(t,
			file(a, "1.0-beta", "10", "proguard", at(1)),
			file(a, "2.0", "20", "proguard", at(3)),
			file(a, "1.0-beta", "11", "dsym", at(4)), // 1.0-beta's latest upload
			file(a, "Éclair", "30", "dsym", at(2)),
			file(a, "B", "30", "dsym", at(2)), // ties at(2): byte order, B before É
			file(other, "9.9", "99", "dsym", at(9)),
		)
		cases := []struct {
			key, search string
			limit       int
			want        []string
			more        bool
		}{
			{"version_name", "", 10, []string{"1.0-beta", "2.0", "B", "Éclair"}, false},
			{"version_name", "", 2, []string{"1.0-beta", "2.0"}, true},
			{"version_name", "", 4, []string{"1.0-beta", "2.0", "B", "Éclair"}, false},
			{"version_name", "BETA", 10, []string{"1.0-beta"}, false},
			{"version_name", "éclair", 10, []string{}, false}, // É is not folded
			{"version_name", "Éc", 10, []string{"Éclair"}, false},
			{"version_code", "", 10, []string{"11", "20", "30", "10"}, false},
			{"version_code", "1", 1, []string{"11"}, true},
		}
		for _, c := range cases {
			got, more, err := bf.BuildValues(ctx, a.ID, c.key, c.search, c.limit)
			wantErr(t, "BuildValues", err, nil)
			check(t, fmt.Sprintf("BuildValues(%s, %q, %d)", c.key, c.search, c.limit), got, c.want)
			if more != c.more {
				t.Errorf("BuildValues(%s, %q, %d): more %v, want %v", c.key, c.search, c.limit, more, c.more)
			}
		}
		got, more, err := bf.BuildValues(ctx, uuid.New(), "version_name", "", 5)
		wantErr(t, "BuildValues of an unknown app", err, nil)
		check(t, "values of an unknown app", got, []string{})
		if more {
			t.Error("values of an unknown app: more")
		}
		for _, c := range []struct {
			key   string
			limit int
		}{{"mapping_type", 5}, {"patch_id", 5}, {"", 5}, {"version_name", 0}} {
			_, _, err := bf.BuildValues(ctx, a.ID, c.key, "", c.limit)
			wantErr(t, fmt.Sprintf("BuildValues(%q, limit %d)", c.key, c.limit), err, sinks.ErrInvalid)
		}
		_, _, err = bf.BuildValues(ctx, a.ID, "version_name", "a\x00", 5)
		wantErr(t, "BuildValues with NUL in the search", err, sinks.ErrInvalid)
	})

	t.Run("Invalid", func(t *testing.T) {
		a, _ := mustApp(t, s, tm.ID, at(0))
		ok := sinks.BuildQuery{App: a.ID, From: at(0), To: at(1), Limit: 1}
		bad := map[string]func(q *sinks.BuildQuery){
			"limit 0":         func(q *sinks.BuildQuery) { q.Limit = 0 },
			"negative offset": func(q *sinks.BuildQuery) { q.Offset = -1 },
			"unknown key": func(q *sinks.BuildQuery) {
				q.Filter = &model.FilterExpr{Cond: model.FilterCond{Key: "os_name", Op: model.FilterIn, Values: []string{"x"}}}
			},
			"operator of another key": func(q *sinks.BuildQuery) {
				q.Filter = &model.FilterExpr{Cond: model.FilterCond{Key: "version_code", Op: model.FilterContains, Values: []string{"x"}}}
			},
			"NUL in a value": func(q *sinks.BuildQuery) { q.Filter = parse(t, "version_name:in:\"a\x00\"") },
		}
		for name, change := range bad {
			q := ok
			change(&q)
			_, err := bf.BuildPage(ctx, q)
			wantErr(t, "BuildPage with "+name, err, sinks.ErrInvalid)
		}
	})
}
