package metatest

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// fullExtras returns two extra settings that differ from each other in every field, the first
// also from the default, so a backend that drops or mixes up a field fails.
func fullExtras() (model.SDKConfigExtra, model.SDKConfigExtra) {
	one := model.SDKConfigExtra{
		HTTPSamplingRate:      100.0 / 3,
		ProfileSamplingRate:   0,
		LogAutocollectEnabled: true,
		LogMinSeverity:        model.LogSeverityDebug,
		// Order kept; regular expressions with backslashes, quotes and non-ASCII text as written.
		LogIgnorePatterns: []string{`^GC\s+\d+ms$`, `"quoted" \\ back`, "ü/🚀", "a"},
	}
	two := model.SDKConfigExtra{
		HTTPSamplingRate:      0.01,
		ProfileSamplingRate:   99.99,
		LogAutocollectEnabled: false,
		LogMinSeverity:        model.LogSeverityFatal,
		LogIgnorePatterns:     []string{".*"},
	}
	return one, two
}

// checkExtra fails the test unless SDKConfigExtra(app) returns want, set at wantAt, with a
// non-nil pattern list.
func checkExtra(t *testing.T, x sinks.SDKConfigExtras, what string, app uuid.UUID, want model.SDKConfigExtra, wantAt time.Time) {
	t.Helper()
	got, gotAt, err := x.SDKConfigExtra(t.Context(), app)
	wantErr(t, what, err, nil)
	check(t, what, got, want)
	check(t, what+" time", gotAt, wantAt)
	if err == nil && got.LogIgnorePatterns == nil {
		t.Errorf("%s: LogIgnorePatterns is nil, want an empty non-nil slice", what)
	}
}

// testSDKConfigExtra checks sinks.SDKConfigExtras. Beyond its doc comments it pins down: every
// field comes back as set (floats exactly, patterns in order and byte for byte); extra settings
// and the SDKConfig are kept apart (setting one neither creates nor changes the other); a
// refused set changes nothing; concurrent sets leave one of them whole.
func testSDKConfigExtra(t *testing.T, s sinks.MetaStore) {
	x := as[sinks.SDKConfigExtras](t, s)
	ctx := t.Context()
	one, two := fullExtras()
	def := model.DefaultSDKConfigExtra()

	t.Run("TestData", func(t *testing.T) {
		a, b, d := reflect.ValueOf(one), reflect.ValueOf(two), reflect.ValueOf(def)
		for i := range a.NumField() {
			if reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) || reflect.DeepEqual(a.Field(i).Interface(), d.Field(i).Interface()) {
				t.Errorf("test settings share field %s; they must differ in every field", a.Type().Field(i).Name)
			}
		}
		for _, e := range []model.SDKConfigExtra{one, two, def} {
			if err := e.Validate(); err != nil {
				t.Errorf("test settings are invalid: %v", err)
			}
		}
	})

	t.Run("SetAndGet", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		b, _ := mustApp(t, s, tm.ID, at(1))
		_, _, err := x.SDKConfigExtra(ctx, a.ID)
		wantErr(t, "SDKConfigExtra before any set", err, sinks.ErrNotFound)

		nilList := def
		nilList.LogIgnorePatterns = nil
		steps := []struct {
			name      string
			set, want model.SDKConfigExtra
		}{
			{"every field", one, one},
			{"every field replaced", two, two},
			{"the default", def, def},
			{"a nil pattern list", nilList, def},
			{"every field again", one, one},
		}
		for i, st := range steps {
			if err := x.SetSDKConfigExtra(ctx, a.ID, st.set, at(2+i)); err != nil {
				t.Fatalf("SetSDKConfigExtra(%s): %v", st.name, err)
			}
			checkExtra(t, x, "SDKConfigExtra after setting "+st.name, a.ID, st.want, at(2+i))
		}
		last := at(2 + len(steps) - 1)
		_, _, err = x.SDKConfigExtra(ctx, b.ID)
		wantErr(t, "SDKConfigExtra of another app", err, sinks.ErrNotFound)
		if err := x.SetSDKConfigExtra(ctx, b.ID, two, at(20)); err != nil {
			t.Fatalf("SetSDKConfigExtra(other app): %v", err)
		}
		checkExtra(t, x, "SDKConfigExtra of the other app", b.ID, two, at(20))
		checkExtra(t, x, "SDKConfigExtra after another app's set", a.ID, one, last)

		// Apart from the SDK configuration, both ways.
		_, _, err = s.SDKConfig(ctx, a.ID)
		wantErr(t, "SDKConfig after setting only the extra settings", err, sinks.ErrNotFound)
		cfg := model.DefaultSDKConfig()
		cfg.TraceSamplingRate = 7
		if err := s.SetSDKConfig(ctx, a.ID, cfg, at(30)); err != nil {
			t.Fatalf("SetSDKConfig: %v", err)
		}
		checkExtra(t, x, "SDKConfigExtra after SetSDKConfig", a.ID, one, last)
		if err := x.SetSDKConfigExtra(ctx, a.ID, two, at(31)); err != nil {
			t.Fatalf("SetSDKConfigExtra: %v", err)
		}
		checkConfig(t, s, "SDKConfig after SetSDKConfigExtra", a.ID, cfg, at(30))

		unknown := uuid.New()
		wantErr(t, "SetSDKConfigExtra(unknown app)", x.SetSDKConfigExtra(ctx, unknown, one, at(3)), sinks.ErrNotFound)
		_, _, err = x.SDKConfigExtra(ctx, unknown)
		wantErr(t, "SDKConfigExtra(unknown app)", err, sinks.ErrNotFound)
	})

	t.Run("Invalid", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		if err := x.SetSDKConfigExtra(ctx, a.ID, one, at(2)); err != nil {
			t.Fatalf("SetSDKConfigExtra: %v", err)
		}
		many := make([]string, model.MaxLogIgnorePatterns+1)
		for i := range many {
			many[i] = fmt.Sprintf("p%d", i)
		}
		cases := []struct {
			name string
			edit func(e *model.SDKConfigExtra)
		}{
			{"HTTP rate over 100", func(e *model.SDKConfigExtra) { e.HTTPSamplingRate = 100.5 }},
			{"negative profile rate", func(e *model.SDKConfigExtra) { e.ProfileSamplingRate = -0.1 }},
			{"NaN rate", func(e *model.SDKConfigExtra) { e.HTTPSamplingRate = math.NaN() }},
			{"infinite rate", func(e *model.SDKConfigExtra) { e.ProfileSamplingRate = math.Inf(1) }},
			{"severity between levels", func(e *model.SDKConfigExtra) { e.LogMinSeverity = 15 }},
			{"severity zero", func(e *model.SDKConfigExtra) { e.LogMinSeverity = 0 }},
			{"blank pattern", func(e *model.SDKConfigExtra) { e.LogIgnorePatterns = []string{"ok", " \t"} }},
			{"NUL in a pattern", func(e *model.SDKConfigExtra) { e.LogIgnorePatterns = []string{"a\x00b"} }},
			{"invalid UTF-8 in a pattern", func(e *model.SDKConfigExtra) { e.LogIgnorePatterns = []string{"\xff"} }},
			{"pattern too long", func(e *model.SDKConfigExtra) {
				e.LogIgnorePatterns = []string{strings.Repeat("x", model.MaxLogIgnorePatternLength+1)}
			}},
			{"too many patterns", func(e *model.SDKConfigExtra) { e.LogIgnorePatterns = many }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := two
				tc.edit(&e)
				wantErr(t, "SetSDKConfigExtra", x.SetSDKConfigExtra(ctx, a.ID, e, at(3)), sinks.ErrInvalid)
				checkExtra(t, x, "SDKConfigExtra after a refused set", a.ID, one, at(2))
			})
		}
		// The longest pattern and the most patterns allowed are kept.
		edge := two
		edge.LogIgnorePatterns = append(many[:model.MaxLogIgnorePatterns-1:model.MaxLogIgnorePatterns-1], strings.Repeat("é", model.MaxLogIgnorePatternLength/2))
		if err := x.SetSDKConfigExtra(ctx, a.ID, edge, at(4)); err != nil {
			t.Fatalf("SetSDKConfigExtra(at the bounds): %v", err)
		}
		checkExtra(t, x, "SDKConfigExtra at the bounds", a.ID, edge, at(4))
	})

	t.Run("Times", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		for _, tc := range oddTimes {
			t.Run(tc.name, func(t *testing.T) {
				a, _ := mustApp(t, s, tm.ID, at(1))
				if err := x.SetSDKConfigExtra(ctx, a.ID, def, tc.t); err != nil {
					t.Fatalf("SetSDKConfigExtra: %v", err)
				}
				_, got, err := x.SDKConfigExtra(ctx, a.ID)
				wantErr(t, "SDKConfigExtra", err, nil)
				checkTime(t, "SDKConfigExtra time", got, tc.t)
			})
		}
	})

	t.Run("ConcurrentSets", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		const n = 8
		sets := make([]model.SDKConfigExtra, n)
		for i := range sets {
			sets[i] = one
			sets[i].HTTPSamplingRate = float64(i)
			sets[i].LogIgnorePatterns = []string{fmt.Sprint("set ", i)}
		}
		for _, err := range race(n, func(i int) error { return x.SetSDKConfigExtra(ctx, a.ID, sets[i], at(10+i)) }) {
			wantErr(t, "concurrent SetSDKConfigExtra", err, nil)
		}
		got, _, err := x.SDKConfigExtra(ctx, a.ID)
		wantErr(t, "SDKConfigExtra", err, nil)
		i := int(got.HTTPSamplingRate)
		if i < 0 || i >= n {
			t.Fatalf("HTTPSamplingRate %v after the race is none of those set", got.HTTPSamplingRate)
		}
		// The settings and their time come from the same set.
		checkExtra(t, x, "SDKConfigExtra after the race", a.ID, sets[i], at(10+i))
	})

	t.Run("Deadline", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		dctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
		defer cancel()
		_, _, err := x.SDKConfigExtra(dctx, a.ID)
		wantUnavailableOrNil(t, "SDKConfigExtra", err, true)
		wantUnavailableOrNil(t, "SetSDKConfigExtra", x.SetSDKConfigExtra(dctx, a.ID, one, at(2)), false)
	})
}

// testDeleteChatApp checks sinks.ChatAppDeleter: a deleted chat app is gone (ChatApp answers
// ErrNotFound, a second delete too) and can be set again; other teams' chat apps stay.
func testDeleteChatApp(t *testing.T, s sinks.MetaStore) {
	d, ok := s.(sinks.ChatAppDeleter)
	if !ok {
		t.Fatalf("%T does not implement sinks.ChatAppDeleter", s)
	}
	ctx := t.Context()

	t.Run("Delete", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		_, other := mustUser(t, s, at(0))
		wantErr(t, "DeleteChatApp before any set", d.DeleteChatApp(ctx, tm.ID), sinks.ErrNotFound)
		mine := model.ChatApp{TeamID: tm.ID, WebhookURL: "https://hooks.slack.com/services/T000/B000/XXXX", Enabled: true, UpdatedAt: at(1)}
		theirs := model.ChatApp{TeamID: other.ID, WebhookURL: "https://other.example/hook", Enabled: false, UpdatedAt: at(2)}
		for _, c := range []model.ChatApp{mine, theirs} {
			wantErr(t, "SetChatApp", s.SetChatApp(ctx, c), nil)
		}
		wantErr(t, "DeleteChatApp", d.DeleteChatApp(ctx, tm.ID), nil)
		_, err := s.ChatApp(ctx, tm.ID)
		wantErr(t, "ChatApp after DeleteChatApp", err, sinks.ErrNotFound)
		wantErr(t, "DeleteChatApp again", d.DeleteChatApp(ctx, tm.ID), sinks.ErrNotFound)
		checkChatApp(t, s, "ChatApp of another team after DeleteChatApp", theirs)

		again := mine
		again.Enabled, again.UpdatedAt = false, at(3)
		wantErr(t, "SetChatApp after DeleteChatApp", s.SetChatApp(ctx, again), nil)
		checkChatApp(t, s, "ChatApp set again", again)

		wantErr(t, "DeleteChatApp(unknown team)", d.DeleteChatApp(ctx, uuid.New()), sinks.ErrNotFound)
	})

	t.Run("Deadline", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		wantErr(t, "SetChatApp", s.SetChatApp(ctx, model.ChatApp{TeamID: tm.ID, WebhookURL: "https://x.example/", UpdatedAt: at(1)}), nil)
		dctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
		defer cancel()
		wantUnavailableOrNil(t, "DeleteChatApp", d.DeleteChatApp(dctx, tm.ID), false)
	})
}
