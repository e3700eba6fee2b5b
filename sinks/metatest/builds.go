package metatest

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func newBuild(app uuid.UUID, versionName, versionCode, buildType string, size int64, c time.Time) model.Build {
	return model.Build{AppID: app, VersionName: versionName, VersionCode: versionCode, BuildType: buildType, Size: size, UpdatedAt: c}
}

func mustPutBuild(t *testing.T, s sinks.MetaStore, b model.Build) {
	t.Helper()
	if err := s.PutBuild(t.Context(), b); err != nil {
		t.Fatalf("PutBuild(%s %s %s): %v", b.VersionName, b.VersionCode, b.BuildType, err)
	}
}

// checkBuilds fails the test unless Builds(app) returns want.
func checkBuilds(t *testing.T, s sinks.MetaStore, what string, app uuid.UUID, want []model.Build) {
	t.Helper()
	got, err := s.Builds(t.Context(), app)
	wantErr(t, "Builds", err, nil)
	check(t, what, got, want)
}

// newMapping returns a proguard mapping record of a version of app, created at c.
func newMapping(app uuid.UUID, versionName, versionCode string, c time.Time) model.Mapping {
	id := uuid.New()
	return model.Mapping{
		ID: id, AppID: app, VersionName: versionName, VersionCode: versionCode, BuildType: "aab",
		Type: "proguard", Filename: "mapping.txt", BlobKey: "mappings/" + app.String() + "/" + id.String(), CreatedAt: c,
	}
}

// checkMappings fails the test unless Mappings(app, name, code) returns want.
func checkMappings(t *testing.T, s sinks.MetaStore, what string, app uuid.UUID, name, code string, want []model.Mapping) {
	t.Helper()
	got, err := s.Mappings(t.Context(), app, name, code)
	wantErr(t, "Mappings", err, nil)
	check(t, what, got, want)
}

func testBuilds(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()

	t.Run("PutAndList", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		b, _ := mustApp(t, s, tm.ID, at(1))
		checkBuilds(t, s, "Builds of an app without builds", a.ID, nil)

		apk := newBuild(a.ID, "1.0", "1", "apk", 100, at(2))
		aab := newBuild(a.ID, "1.0", "1", "aab", 200, at(3))
		nextCode := newBuild(a.ID, "1.0", "10", "apk", 300, at(4))
		nextName := newBuild(a.ID, "1.0-β 🚀", "1", "ipa", 1<<40, at(5))
		// Same key in another app: a row of its own, never mixed with a's.
		other := newBuild(b.ID, "1.0", "1", "apk", 7, at(6))
		apkAgain := apk
		apkAgain.Size, apkAgain.UpdatedAt = 150, at(7)
		// A put with an earlier time still replaces: the contract says replace, not max.
		aabAgain := aab
		aabAgain.Size, aabAgain.UpdatedAt = 0, at(0)
		steps := []struct {
			name string
			put  model.Build
			want []model.Build // Builds(a) after the put
		}{
			{"first", apk, []model.Build{apk}},
			{"another build type", aab, []model.Build{aab, apk}},
			{"another version code", nextCode, []model.Build{nextCode, aab, apk}},
			{"another version name", nextName, []model.Build{nextName, nextCode, aab, apk}},
			{"same key, other app", other, []model.Build{nextName, nextCode, aab, apk}},
			{"same key again", apkAgain, []model.Build{apkAgain, nextName, nextCode, aab}},
			{"same key again, earlier", aabAgain, []model.Build{apkAgain, nextName, nextCode, aabAgain}},
		}
		for _, st := range steps {
			mustPutBuild(t, s, st.put)
			checkBuilds(t, s, "Builds after "+st.name, a.ID, st.want)
		}
		checkBuilds(t, s, "Builds of the other app", b.ID, []model.Build{other})
	})

	// Builds of equal UpdatedAt are ordered by version name, version code and build type in
	// byte order (not a locale's: "B" < "a", "10" < "2").
	t.Run("Ties", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		want := []model.Build{
			newBuild(a.ID, "B", "1", "apk", 1, at(2)),
			newBuild(a.ID, "a", "10", "aab", 2, at(2)),
			newBuild(a.ID, "a", "10", "apk", 3, at(2)),
			newBuild(a.ID, "a", "2", "apk", 4, at(2)),
			newBuild(a.ID, "b", "1", "apk", 5, at(2)),
		}
		for _, i := range []int{4, 2, 0, 3, 1} {
			mustPutBuild(t, s, want[i])
		}
		newer := newBuild(a.ID, "z", "1", "apk", 6, at(3))
		mustPutBuild(t, s, newer)
		checkBuilds(t, s, "Builds with equal times", a.ID, append([]model.Build{newer}, want...))
	})

	t.Run("Errors", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		stored := newBuild(a.ID, "1.0", "1", "apk", 100, at(2))
		mustPutBuild(t, s, stored)
		cases := []struct {
			name string
			edit func(b *model.Build)
			want error
		}{
			{"unknown app", func(b *model.Build) { b.AppID = uuid.New() }, sinks.ErrNotFound},
			{"negative size", func(b *model.Build) { b.Size = -1 }, sinks.ErrInvalid},
			{"unknown build type", func(b *model.Build) { b.BuildType = "exe" }, sinks.ErrInvalid},
			{"empty build type", func(b *model.Build) { b.BuildType = "" }, sinks.ErrInvalid},
			{"NUL in version name", func(b *model.Build) { b.VersionName = "1.0\x00" }, sinks.ErrInvalid},
			{"invalid UTF-8 in version code", func(b *model.Build) { b.VersionCode = "1\xff" }, sinks.ErrInvalid},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				b := stored
				b.Size, b.UpdatedAt = 999, at(9)
				tc.edit(&b)
				wantErr(t, "PutBuild", s.PutBuild(ctx, b), tc.want)
				checkBuilds(t, s, "Builds after a rejected put", a.ID, []model.Build{stored})
			})
		}
		_, err := s.Builds(ctx, uuid.New())
		wantErr(t, "Builds(unknown app)", err, sinks.ErrNotFound)
	})

	t.Run("Times", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		for _, tc := range oddTimes {
			t.Run(tc.name, func(t *testing.T) {
				a, _ := mustApp(t, s, tm.ID, at(1))
				mustPutBuild(t, s, newBuild(a.ID, "1", "1", "apk", 1, tc.t))
				got, err := s.Builds(ctx, a.ID)
				wantErr(t, "Builds", err, nil)
				if len(got) != 1 {
					t.Fatalf("Builds = %+v, want one build", got)
				}
				checkTime(t, "UpdatedAt", got[0].UpdatedAt, tc.t)
			})
		}
	})

	t.Run("ConcurrentPuts", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		const n = 8
		errs := race(n, func(i int) error {
			return s.PutBuild(ctx, newBuild(a.ID, "1.0", "1", "apk", int64(100+i), at(10+i)))
		})
		for _, err := range errs {
			wantErr(t, "concurrent PutBuild", err, nil)
		}
		got, err := s.Builds(ctx, a.ID)
		wantErr(t, "Builds", err, nil)
		if len(got) != 1 {
			t.Fatalf("%d rows after %d concurrent puts of one build, want 1: %+v", len(got), n, got)
		}
		// Size and UpdatedAt come from the same put.
		i := int(got[0].Size - 100)
		if i < 0 || i >= n {
			t.Fatalf("Size %d after the race is none of the sizes put", got[0].Size)
		}
		check(t, "build after the race", got[0], newBuild(a.ID, "1.0", "1", "apk", int64(100+i), at(10+i)))
	})
}

func testMappings(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()

	t.Run("AddAndList", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		b, _ := mustApp(t, s, tm.ID, at(1))
		checkMappings(t, s, "Mappings before any", a.ID, "1.0", "1", nil)
		wantErr(t, "AddMappings(empty)", s.AddMappings(ctx, nil), nil)

		newer := newMapping(a.ID, "1.0", "1", at(3))
		older := newMapping(a.ID, "1.0", "1", at(2))
		older.Type, older.BuildType, older.Filename = "dsym", "ipa", "App.app.dSYM.zip"
		tieA, tieB := newMapping(a.ID, "1.0", "1", at(4)), newMapping(a.ID, "1.0", "1", at(4))
		tieA.Type, tieB.Type = "elf_debug", "jsbundle"
		if bytes.Compare(tieA.ID[:], tieB.ID[:]) > 0 {
			tieA, tieB = tieB, tieA
		}
		// Versions whose parts run together alike must stay apart.
		ab, abc := newMapping(a.ID, "ab", "c", at(2)), newMapping(a.ID, "a", "bc", at(2))
		code10 := newMapping(a.ID, "1.0", "10", at(2))
		unicode := newMapping(a.ID, "2.0-β", "🚀", at(2))
		unicode.Filename = "mapping-ü.txt"
		otherApp := newMapping(b.ID, "1.0", "1", at(1))
		if err := s.AddMappings(ctx, []model.Mapping{newer, tieB, ab, code10, otherApp}); err != nil {
			t.Fatalf("AddMappings: %v", err)
		}
		if err := s.AddMappings(ctx, []model.Mapping{older, abc, tieA, unicode}); err != nil {
			t.Fatalf("AddMappings: %v", err)
		}
		lists := []struct {
			app        uuid.UUID
			name, code string
			want       []model.Mapping
		}{
			{a.ID, "1.0", "1", []model.Mapping{older, newer, tieA, tieB}},
			{a.ID, "1.0", "10", []model.Mapping{code10}},
			{a.ID, "ab", "c", []model.Mapping{ab}},
			{a.ID, "a", "bc", []model.Mapping{abc}},
			{a.ID, "2.0-β", "🚀", []model.Mapping{unicode}},
			{a.ID, "1.0", "", nil},
			{a.ID, "1", "0", nil},
			{a.ID, "2.0", "1", nil},
			{b.ID, "1.0", "1", []model.Mapping{otherApp}},
			{b.ID, "1.0", "10", nil},
		}
		for _, l := range lists {
			checkMappings(t, s, fmt.Sprintf("Mappings(%q, %q)", l.name, l.code), l.app, l.name, l.code, l.want)
		}
		_, err := s.Mappings(ctx, uuid.New(), "1.0", "1")
		wantErr(t, "Mappings(unknown app)", err, sinks.ErrNotFound)
	})

	t.Run("AllOrNone", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		taken := newMapping(a.ID, "0.1", "1", at(1))
		if err := s.AddMappings(ctx, []model.Mapping{taken}); err != nil {
			t.Fatalf("AddMappings: %v", err)
		}
		cases := []struct {
			name string
			// bad returns the batch's last record, made from good (the batch's first).
			bad  func(good model.Mapping) model.Mapping
			want error
		}{
			{"id taken", func(g model.Mapping) model.Mapping {
				m := newMapping(a.ID, g.VersionName, g.VersionCode, at(3))
				m.ID = taken.ID
				return m
			}, sinks.ErrConflict},
			{"id twice in the batch", func(g model.Mapping) model.Mapping {
				m := newMapping(a.ID, g.VersionName, g.VersionCode, at(3))
				m.ID = g.ID
				return m
			}, sinks.ErrConflict},
			{"unknown app", func(g model.Mapping) model.Mapping {
				return newMapping(uuid.New(), g.VersionName, g.VersionCode, at(3))
			}, sinks.ErrNotFound},
			{"unknown type", func(g model.Mapping) model.Mapping {
				m := newMapping(a.ID, g.VersionName, g.VersionCode, at(3))
				m.Type = "pdb"
				return m
			}, sinks.ErrInvalid},
			{"unknown build type", func(g model.Mapping) model.Mapping {
				m := newMapping(a.ID, g.VersionName, g.VersionCode, at(3))
				m.BuildType = "zip"
				return m
			}, sinks.ErrInvalid},
			{"bad blob key", func(g model.Mapping) model.Mapping {
				m := newMapping(a.ID, g.VersionName, g.VersionCode, at(3))
				m.BlobKey = "mappings/../secret"
				return m
			}, sinks.ErrInvalid},
			{"NUL in file name", func(g model.Mapping) model.Mapping {
				m := newMapping(a.ID, g.VersionName, g.VersionCode, at(3))
				m.Filename = "a\x00b"
				return m
			}, sinks.ErrInvalid},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				version := fmt.Sprint("1.", i)
				good := newMapping(a.ID, version, "1", at(2))
				good2 := newMapping(a.ID, version, "1", at(2))
				wantErr(t, "AddMappings", s.AddMappings(ctx, []model.Mapping{good, good2, tc.bad(good)}), tc.want)
				checkMappings(t, s, "Mappings after a rejected batch", a.ID, version, "1", nil)
				// None of the batch was stored: its good records can be added now.
				if err := s.AddMappings(ctx, []model.Mapping{good, good2}); err != nil {
					t.Fatalf("AddMappings of the good records after the rejected batch: %v", err)
				}
				want := []model.Mapping{good, good2}
				slices.SortFunc(want, func(x, y model.Mapping) int { return byTime(x.CreatedAt, y.CreatedAt, x.ID, y.ID) })
				checkMappings(t, s, "Mappings after adding the good records", a.ID, version, "1", want)
			})
		}
		checkMappings(t, s, "Mappings of the taken id's version", a.ID, "0.1", "1", []model.Mapping{taken})
		for _, v := range []string{"1\x00", "1\xff"} {
			_, err := s.Mappings(ctx, a.ID, v, "1")
			wantErr(t, fmt.Sprintf("Mappings(%q)", v), err, sinks.ErrInvalid)
		}
	})

	t.Run("Times", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		var want []model.Mapping
		for _, tc := range oddTimes {
			want = append(want, newMapping(a.ID, "1", "1", tc.t))
		}
		if err := s.AddMappings(ctx, want); err != nil {
			t.Fatalf("AddMappings: %v", err)
		}
		slices.SortFunc(want, func(x, y model.Mapping) int { return x.CreatedAt.Compare(y.CreatedAt) })
		got, err := s.Mappings(ctx, a.ID, "1", "1")
		wantErr(t, "Mappings", err, nil)
		if len(got) != len(want) {
			t.Fatalf("Mappings = %+v, want %d records", got, len(want))
		}
		for i := range got {
			if got[i].ID != want[i].ID {
				t.Errorf("Mappings[%d] is %s created at %s, want %s created at %s", i, got[i].ID, got[i].CreatedAt, want[i].ID, want[i].CreatedAt)
			}
			checkTime(t, fmt.Sprintf("Mappings[%d].CreatedAt", i), got[i].CreatedAt, want[i].CreatedAt)
		}
	})

	t.Run("ConcurrentSameID", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		const n = 8
		id := uuid.New()
		batches := make([][]model.Mapping, n)
		for i := range batches {
			m := newMapping(a.ID, "1", "1", at(2+i))
			m.ID = id
			batches[i] = []model.Mapping{newMapping(a.ID, "1", "1", at(2+i)), m}
		}
		errs := race(n, func(i int) error { return s.AddMappings(ctx, batches[i]) })
		wins, _, unexpected := tally(errs, sinks.ErrConflict)
		if wins != 1 || len(unexpected) > 0 {
			t.Fatalf("%d of %d batches sharing an id were stored, want 1 (others ErrConflict); unexpected errors: %v", wins, n, unexpected)
		}
		winner := slices.IndexFunc(errs, func(err error) bool { return err == nil })
		want := slices.Clone(batches[winner])
		slices.SortFunc(want, func(x, y model.Mapping) int { return byTime(x.CreatedAt, y.CreatedAt, x.ID, y.ID) })
		checkMappings(t, s, "Mappings after the race", a.ID, "1", "1", want)
	})
}

// fullConfigs returns two configurations that differ from each other in every field, the first
// also from the default, so a backend that drops or mixes up a field fails.
func fullConfigs() (model.SDKConfig, model.SDKConfig) {
	one := model.SDKConfig{
		MaxEventsInBatch:          1,
		CrashTimelineDuration:     0,
		ANRTimelineDuration:       3600,
		BugReportTimelineDuration: 17,
		TraceSamplingRate:         100.0 / 3,
		JourneySamplingRate:       0.1,
		ScreenshotMaskLevel:       "sensitive_fields_only",
		CPUUsageInterval:          1,
		MemoryUsageInterval:       3600,
		CrashTakeScreenshot:       false,
		ANRTakeScreenshot:         false,
		ANRTimelineSamplingRate:   1e-7,
		LaunchSamplingRate:        0,
		GestureClickTakeSnapshot:  false,
		HTTPDisableEventForURLs:   []string{"https://example.com/*", "*.internal"},
		HTTPTrackRequestForURLs:   []string{`https://api.example.com/ü/🚀?q="x"&y=<z>\`},
		HTTPTrackResponseForURLs:  []string{"a", "b", "c"},
		HTTPBlockedHeaders:        []string{"Authorization", "Cookie"},
	}
	two := model.SDKConfig{
		MaxEventsInBatch:          9999,
		CrashTimelineDuration:     60,
		ANRTimelineDuration:       0,
		BugReportTimelineDuration: 3600,
		TraceSamplingRate:         0.5,
		JourneySamplingRate:       99.99,
		ScreenshotMaskLevel:       "all_text",
		CPUUsageInterval:          3600,
		MemoryUsageInterval:       1,
		CrashTakeScreenshot:       true,
		ANRTakeScreenshot:         true,
		ANRTimelineSamplingRate:   50,
		LaunchSamplingRate:        12.5,
		GestureClickTakeSnapshot:  true,
		HTTPDisableEventForURLs:   []string{"x"},
		HTTPTrackRequestForURLs:   []string{"https://a.example/", "https://b.example/"},
		HTTPTrackResponseForURLs:  []string{"d"},
		HTTPBlockedHeaders:        []string{"X-Secret"},
	}
	return one, two
}

// nilLists names the string lists of c that are nil: GET /config must serve [] for an empty list,
// never null, so a read returns empty lists as empty non-nil slices.
func nilLists(c model.SDKConfig) []string {
	var out []string
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Slice && f.IsNil() {
			out = append(out, v.Type().Field(i).Name)
		}
	}
	return out
}

// checkConfig fails the test unless SDKConfig(app) returns want, set at wantAt.
func checkConfig(t *testing.T, s sinks.MetaStore, what string, app uuid.UUID, want model.SDKConfig, wantAt time.Time) {
	t.Helper()
	got, gotAt, err := s.SDKConfig(t.Context(), app)
	wantErr(t, what, err, nil)
	check(t, what, got, want)
	check(t, what+" time", gotAt, wantAt)
	if nils := nilLists(got); err == nil && len(nils) > 0 {
		t.Errorf("%s: lists %v are nil, want empty non-nil slices", what, nils)
	}
}

func testSDKConfig(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()
	one, two := fullConfigs()
	def := model.DefaultSDKConfig()
	t.Run("TestData", func(t *testing.T) {
		a, b, d := reflect.ValueOf(one), reflect.ValueOf(two), reflect.ValueOf(def)
		for i := range a.NumField() {
			name := a.Type().Field(i).Name
			if reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) || reflect.DeepEqual(a.Field(i).Interface(), d.Field(i).Interface()) {
				t.Errorf("test configs share field %s; they must differ in every field", name)
			}
		}
		for _, c := range []model.SDKConfig{one, two} {
			if err := c.Validate(); err != nil {
				t.Errorf("test config is invalid: %v", err)
			}
		}
	})

	t.Run("SetAndGet", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		b, _ := mustApp(t, s, tm.ID, at(1))
		_, _, err := s.SDKConfig(ctx, a.ID)
		wantErr(t, "SDKConfig before any set", err, sinks.ErrNotFound)

		withNil := def
		withNil.HTTPDisableEventForURLs, withNil.HTTPTrackRequestForURLs, withNil.HTTPTrackResponseForURLs, withNil.HTTPBlockedHeaders = nil, nil, nil, nil
		someEmpty := one
		someEmpty.HTTPDisableEventForURLs, someEmpty.HTTPBlockedHeaders = []string{}, nil
		steps := []struct {
			name string
			set  model.SDKConfig
			want model.SDKConfig
		}{
			{"every field", one, one},
			{"every field replaced", two, two},
			{"the default", def, def},
			{"nil lists", withNil, def},
			{"some lists empty", someEmpty, func() model.SDKConfig { c := someEmpty; c.HTTPBlockedHeaders = []string{}; return c }()},
			{"every field again", one, one},
		}
		for i, st := range steps {
			if err := s.SetSDKConfig(ctx, a.ID, st.set, at(2+i)); err != nil {
				t.Fatalf("SetSDKConfig(%s): %v", st.name, err)
			}
			checkConfig(t, s, "SDKConfig after setting "+st.name, a.ID, st.want, at(2+i))
		}
		_, _, err = s.SDKConfig(ctx, b.ID)
		wantErr(t, "SDKConfig of another app", err, sinks.ErrNotFound)
		if err := s.SetSDKConfig(ctx, b.ID, two, at(20)); err != nil {
			t.Fatalf("SetSDKConfig(other app): %v", err)
		}
		checkConfig(t, s, "SDKConfig of the other app", b.ID, two, at(20))
		checkConfig(t, s, "SDKConfig after another app's set", a.ID, one, at(2+len(steps)-1))

		wantErr(t, "SetSDKConfig(unknown app)", s.SetSDKConfig(ctx, uuid.New(), one, at(3)), sinks.ErrNotFound)
		_, _, err = s.SDKConfig(ctx, uuid.New())
		wantErr(t, "SDKConfig(unknown app)", err, sinks.ErrNotFound)
	})

	t.Run("Invalid", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		if err := s.SetSDKConfig(ctx, a.ID, one, at(2)); err != nil {
			t.Fatalf("SetSDKConfig: %v", err)
		}
		cases := []struct {
			name string
			edit func(c *model.SDKConfig)
		}{
			{"no events in a batch", func(c *model.SDKConfig) { c.MaxEventsInBatch = 0 }},
			{"timeline over an hour", func(c *model.SDKConfig) { c.CrashTimelineDuration = model.MaxTimelineSeconds + 1 }},
			{"rate over 100", func(c *model.SDKConfig) { c.TraceSamplingRate = 100.5 }},
			{"negative rate", func(c *model.SDKConfig) { c.LaunchSamplingRate = -1 }},
			{"NaN rate", func(c *model.SDKConfig) { c.JourneySamplingRate = math.NaN() }},
			{"unknown mask level", func(c *model.SDKConfig) { c.ScreenshotMaskLevel = "none" }},
			{"blank URL", func(c *model.SDKConfig) { c.HTTPTrackRequestForURLs = []string{" "} }},
			{"NUL in a URL", func(c *model.SDKConfig) { c.HTTPDisableEventForURLs = []string{"https://x/\x00"} }},
			{"invalid UTF-8 in a header", func(c *model.SDKConfig) { c.HTTPBlockedHeaders = []string{"X-\xff"} }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := two
				tc.edit(&c)
				wantErr(t, "SetSDKConfig", s.SetSDKConfig(ctx, a.ID, c, at(3)), sinks.ErrInvalid)
				checkConfig(t, s, "SDKConfig after a rejected set", a.ID, one, at(2))
			})
		}
	})

	t.Run("Times", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		for _, tc := range oddTimes {
			t.Run(tc.name, func(t *testing.T) {
				a, _ := mustApp(t, s, tm.ID, at(1))
				if err := s.SetSDKConfig(ctx, a.ID, def, tc.t); err != nil {
					t.Fatalf("SetSDKConfig: %v", err)
				}
				_, got, err := s.SDKConfig(ctx, a.ID)
				wantErr(t, "SDKConfig", err, nil)
				checkTime(t, "SDKConfig time", got, tc.t)
			})
		}
	})

	t.Run("ConcurrentSets", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		const n = 8
		configs := make([]model.SDKConfig, n)
		for i := range configs {
			configs[i] = one
			configs[i].MaxEventsInBatch = 100 + i
		}
		errs := race(n, func(i int) error { return s.SetSDKConfig(ctx, a.ID, configs[i], at(10+i)) })
		for _, err := range errs {
			wantErr(t, "concurrent SetSDKConfig", err, nil)
		}
		got, _, err := s.SDKConfig(ctx, a.ID)
		wantErr(t, "SDKConfig", err, nil)
		i := got.MaxEventsInBatch - 100
		if i < 0 || i >= n {
			t.Fatalf("MaxEventsInBatch %d after the race is none of those set", got.MaxEventsInBatch)
		}
		// The configuration and its time come from the same set.
		checkConfig(t, s, "SDKConfig after the race", a.ID, configs[i], at(10+i))
	})
}

// byTime orders by time, then id, as the list methods do.
func byTime(at1, at2 time.Time, id1, id2 uuid.UUID) int {
	if c := at1.Compare(at2); c != 0 {
		return c
	}
	return bytes.Compare(id1[:], id2[:])
}

// oddTimes are times beyond the microsecond-aligned ones of the other tests.
var oddTimes = []struct {
	name string
	t    time.Time
}{
	{"nanoseconds", time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.FixedZone("UTC-7", -7*60*60))},
	{"before 1970", time.Date(1969, 12, 31, 23, 59, 59, 500000000, time.UTC)},
	{"far future", time.Date(2200, 6, 7, 8, 9, 10, 999999000, time.FixedZone("UTC+5", 5*60*60))},
}

// checkTime fails the test unless got is want within a microsecond, in UTC.
func checkTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if d := got.Sub(want).Abs(); d >= time.Microsecond {
		t.Errorf("%s = %s, want %s within 1µs (off by %s)", what, got.Format(time.RFC3339Nano), want.UTC().Format(time.RFC3339Nano), d)
	}
	if got.Location() != time.UTC {
		t.Errorf("%s is in zone %q, want UTC", what, got.Location())
	}
}
