package metatest

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// checkThresholds fails the test unless ThresholdPrefs(app) returns want.
func checkThresholds(t *testing.T, s sinks.MetaStore, what string, app uuid.UUID, want model.ThresholdPrefs) {
	t.Helper()
	got, err := s.ThresholdPrefs(t.Context(), app)
	wantErr(t, what, err, nil)
	check(t, what, got, want)
}

func testThresholdPrefs(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()
	// Differs from the default in every field; 100/3 has no short decimal form.
	odd := model.ThresholdPrefs{ErrorGoodThreshold: 100.0 / 3, ErrorCautionThreshold: 1e-9, ErrorSpikeMinCountThreshold: 1 << 40, ErrorSpikeMinRateThreshold: 99.999}
	edges := model.ThresholdPrefs{ErrorGoodThreshold: 100, ErrorCautionThreshold: 100, ErrorSpikeMinCountThreshold: 0, ErrorSpikeMinRateThreshold: 0}
	zeros := model.ThresholdPrefs{ErrorSpikeMinRateThreshold: 100}

	t.Run("SetAndGet", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		b, _ := mustApp(t, s, tm.ID, at(1))
		_, err := s.ThresholdPrefs(ctx, a.ID)
		wantErr(t, "ThresholdPrefs before any set", err, sinks.ErrNotFound)
		for i, p := range []model.ThresholdPrefs{model.DefaultThresholdPrefs(), odd, edges, zeros, odd} {
			if err := s.SetThresholdPrefs(ctx, a.ID, p, at(2+i)); err != nil {
				t.Fatalf("SetThresholdPrefs(%+v): %v", p, err)
			}
			checkThresholds(t, s, fmt.Sprintf("ThresholdPrefs after set %d", i), a.ID, p)
		}
		_, err = s.ThresholdPrefs(ctx, b.ID)
		wantErr(t, "ThresholdPrefs of another app", err, sinks.ErrNotFound)
		if err := s.SetThresholdPrefs(ctx, b.ID, edges, at(9)); err != nil {
			t.Fatalf("SetThresholdPrefs(other app): %v", err)
		}
		checkThresholds(t, s, "ThresholdPrefs of the other app", b.ID, edges)
		checkThresholds(t, s, "ThresholdPrefs after another app's set", a.ID, odd)
		wantErr(t, "SetThresholdPrefs(unknown app)", s.SetThresholdPrefs(ctx, uuid.New(), odd, at(9)), sinks.ErrNotFound)
	})

	t.Run("Invalid", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		if err := s.SetThresholdPrefs(ctx, a.ID, odd, at(2)); err != nil {
			t.Fatalf("SetThresholdPrefs: %v", err)
		}
		cases := []struct {
			name string
			edit func(p *model.ThresholdPrefs)
		}{
			{"good over 100", func(p *model.ThresholdPrefs) { p.ErrorGoodThreshold = 100.0001 }},
			{"good negative", func(p *model.ThresholdPrefs) { p.ErrorGoodThreshold, p.ErrorCautionThreshold = -1, -2 }},
			{"good NaN", func(p *model.ThresholdPrefs) { p.ErrorGoodThreshold = math.NaN() }},
			{"caution above good", func(p *model.ThresholdPrefs) { p.ErrorGoodThreshold, p.ErrorCautionThreshold = 80, 80.5 }},
			{"caution negative", func(p *model.ThresholdPrefs) { p.ErrorCautionThreshold = -0.1 }},
			{"caution infinite", func(p *model.ThresholdPrefs) { p.ErrorCautionThreshold = math.Inf(-1) }},
			{"min count negative", func(p *model.ThresholdPrefs) { p.ErrorSpikeMinCountThreshold = -1 }},
			{"min rate over 100", func(p *model.ThresholdPrefs) { p.ErrorSpikeMinRateThreshold = 101 }},
			{"min rate negative", func(p *model.ThresholdPrefs) { p.ErrorSpikeMinRateThreshold = -0.5 }},
			{"min rate NaN", func(p *model.ThresholdPrefs) { p.ErrorSpikeMinRateThreshold = math.NaN() }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := model.DefaultThresholdPrefs()
				tc.edit(&p)
				wantErr(t, "SetThresholdPrefs", s.SetThresholdPrefs(ctx, a.ID, p, at(3)), sinks.ErrInvalid)
				checkThresholds(t, s, "ThresholdPrefs after a rejected set", a.ID, odd)
			})
		}
	})

	t.Run("ConcurrentSets", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		const n = 8
		prefs := make([]model.ThresholdPrefs, n)
		for i := range prefs {
			f := float64(i)
			prefs[i] = model.ThresholdPrefs{ErrorGoodThreshold: 90 + f, ErrorCautionThreshold: 80 + f, ErrorSpikeMinCountThreshold: 100 + i, ErrorSpikeMinRateThreshold: f}
		}
		errs := race(n, func(i int) error { return s.SetThresholdPrefs(ctx, a.ID, prefs[i], at(10+i)) })
		for _, err := range errs {
			wantErr(t, "concurrent SetThresholdPrefs", err, nil)
		}
		got, err := s.ThresholdPrefs(ctx, a.ID)
		wantErr(t, "ThresholdPrefs", err, nil)
		i := got.ErrorSpikeMinCountThreshold - 100
		if i < 0 || i >= n {
			t.Fatalf("ThresholdPrefs %+v after the race is none of those set", got)
		}
		// Every field comes from the same set.
		check(t, "ThresholdPrefs after the race", got, prefs[i])
	})
}

// newShortFilter returns the short filter of app for filters, its code computed as the
// dashboard does: the MD5 of the app id and the filters.
func newShortFilter(app uuid.UUID, filters string, c time.Time) model.ShortFilter {
	sum := md5.Sum(append(app[:], filters...))
	return model.ShortFilter{Code: hex.EncodeToString(sum[:]), AppID: app, Filters: []byte(filters), CreatedAt: c}
}

func checkShortFilter(t *testing.T, s sinks.MetaStore, what string, want model.ShortFilter) {
	t.Helper()
	got, err := s.ShortFilter(t.Context(), want.AppID, want.Code)
	wantErr(t, what, err, nil)
	check(t, what, got, want)
}

func testShortFilters(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()

	t.Run("PutAndGet", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		b, _ := mustApp(t, s, tm.ID, at(1))
		// Keys out of order, spacing and number forms a JSON store would rewrite: the filters
		// come back byte for byte, so the code stays their MD5.
		f := newShortFilter(a.ID, `{"z":1,"a":[1,2.50,1e2],"m":{"k":"ü 🚀 \"q\" \u00e9"}, "versions":["1.0 (1)"]}`, at(2))
		empty := newShortFilter(a.ID, `{}`, at(3))
		spaced := newShortFilter(a.ID, " {\n\t\"a\" : null\n}\n", at(4))
		for _, sf := range []model.ShortFilter{f, empty, spaced} {
			wantErr(t, "PutShortFilter", s.PutShortFilter(ctx, sf), nil)
			checkShortFilter(t, s, "ShortFilter", sf)
		}

		// Putting the code again changes nothing, not even CreatedAt.
		again := f
		again.Filters, again.CreatedAt = bytes.Clone(f.Filters), at(9)
		wantErr(t, "PutShortFilter(again)", s.PutShortFilter(ctx, again), nil)
		checkShortFilter(t, s, "ShortFilter after putting it again", f)

		// The same code standing for other filters is a conflict.
		for _, other := range []string{`{"z":1}`, strings.Replace(string(f.Filters), `"z":1`, `"z": 1`, 1)} {
			clash := f
			clash.Filters = []byte(other)
			wantErr(t, fmt.Sprintf("PutShortFilter(code of other filters %s)", other), s.PutShortFilter(ctx, clash), sinks.ErrConflict)
		}
		checkShortFilter(t, s, "ShortFilter after conflicting puts", f)

		// Codes are per app: another app may use the same code for other filters.
		inB := f
		inB.AppID, inB.Filters, inB.CreatedAt = b.ID, []byte(`{"b":true}`), at(5)
		wantErr(t, "PutShortFilter(same code, other app)", s.PutShortFilter(ctx, inB), nil)
		checkShortFilter(t, s, "ShortFilter of the other app", inB)
		checkShortFilter(t, s, "ShortFilter after the other app's put", f)

		for _, code := range []string{newShortFilter(a.ID, `{"x":1}`, at(0)).Code, strings.ToUpper(f.Code), f.Code[:31], "", "../" + f.Code} {
			_, err := s.ShortFilter(ctx, a.ID, code)
			wantErr(t, fmt.Sprintf("ShortFilter(%q)", code), err, sinks.ErrNotFound)
		}
		_, err := s.ShortFilter(ctx, b.ID, empty.Code)
		wantErr(t, "ShortFilter(code of another app)", err, sinks.ErrNotFound)
		wantErr(t, "PutShortFilter(unknown app)", s.PutShortFilter(ctx, newShortFilter(uuid.New(), `{}`, at(1))), sinks.ErrNotFound)
	})

	t.Run("Invalid", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		cases := []struct {
			name string
			edit func(f *model.ShortFilter)
		}{
			{"empty code", func(f *model.ShortFilter) { f.Code = "" }},
			{"short code", func(f *model.ShortFilter) { f.Code = f.Code[:31] }},
			{"long code", func(f *model.ShortFilter) { f.Code += "0" }},
			{"upper-case code", func(f *model.ShortFilter) { f.Code = strings.ToUpper(f.Code) }},
			{"code not hex", func(f *model.ShortFilter) { f.Code = "g" + f.Code[1:] }},
			{"no filters", func(f *model.ShortFilter) { f.Filters = nil }},
			{"filters blank", func(f *model.ShortFilter) { f.Filters = []byte(" ") }},
			{"filters null", func(f *model.ShortFilter) { f.Filters = []byte("null") }},
			{"filters an array", func(f *model.ShortFilter) { f.Filters = []byte(`[{"a":1}]`) }},
			{"filters a string", func(f *model.ShortFilter) { f.Filters = []byte(`"{}"`) }},
			{"filters cut short", func(f *model.ShortFilter) { f.Filters = []byte(`{"a":`) }},
			{"two objects", func(f *model.ShortFilter) { f.Filters = []byte(`{} {}`) }},
			{"invalid UTF-8", func(f *model.ShortFilter) { f.Filters = []byte("{\"a\":\"\xff\"}") }},
			{"NUL byte", func(f *model.ShortFilter) { f.Filters = []byte("{\"a\":\"\x00\"}") }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				f := newShortFilter(a.ID, `{"a":1}`, at(2))
				tc.edit(&f)
				wantErr(t, "PutShortFilter", s.PutShortFilter(ctx, f), sinks.ErrInvalid)
				if len(f.Code) == 32 {
					_, err := s.ShortFilter(ctx, a.ID, f.Code)
					wantErr(t, "ShortFilter(rejected)", err, sinks.ErrNotFound)
				}
			})
		}
	})

	t.Run("Times", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		for i, tc := range oddTimes {
			f := newShortFilter(a.ID, fmt.Sprintf(`{"i":%d}`, i), tc.t)
			wantErr(t, "PutShortFilter", s.PutShortFilter(ctx, f), nil)
			got, err := s.ShortFilter(ctx, a.ID, f.Code)
			wantErr(t, "ShortFilter", err, nil)
			checkTime(t, tc.name+": CreatedAt", got.CreatedAt, tc.t)
		}
	})

	// Concurrent puts of one code with two sets of filters: the first stored wins, every put of
	// its filters succeeds and every put of the others is ErrConflict.
	t.Run("ConcurrentPuts", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		const n = 8
		for round := range 3 {
			one := newShortFilter(a.ID, fmt.Sprintf(`{"round":%d,"one":1}`, round), at(2))
			two := one
			two.Filters = []byte(fmt.Sprintf(`{"round":%d,"two":2}`, round))
			puts := make([]model.ShortFilter, n)
			for i := range puts {
				puts[i] = one
				if i%2 == 1 {
					puts[i] = two
				}
				puts[i].CreatedAt = at(2 + i)
			}
			errs := race(n, func(i int) error { return s.PutShortFilter(ctx, puts[i]) })
			got, err := s.ShortFilter(ctx, a.ID, one.Code)
			wantErr(t, "ShortFilter", err, nil)
			for i, err := range errs {
				switch {
				case bytes.Equal(puts[i].Filters, got.Filters):
					wantErr(t, fmt.Sprintf("round %d: put %d of the stored filters", round, i), err, nil)
				default:
					wantErr(t, fmt.Sprintf("round %d: put %d of the other filters", round, i), err, sinks.ErrConflict)
				}
			}
			winner := slices.IndexFunc(puts, func(p model.ShortFilter) bool { return p.CreatedAt.Equal(got.CreatedAt) })
			if winner < 0 || !bytes.Equal(puts[winner].Filters, got.Filters) {
				t.Fatalf("round %d: stored %+v is none of the puts", round, got)
			}
			check(t, "ShortFilter after the race", got, puts[winner])
		}
	})
}

func checkChatApp(t *testing.T, s sinks.MetaStore, what string, want model.ChatApp) {
	t.Helper()
	got, err := s.ChatApp(t.Context(), want.TeamID)
	wantErr(t, what, err, nil)
	check(t, what, got, want)
}

func testChatApps(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()

	t.Run("SetAndGet", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		_, other := mustUser(t, s, at(0))
		_, err := s.ChatApp(ctx, tm.ID)
		wantErr(t, "ChatApp before any set", err, sinks.ErrNotFound)
		steps := []model.ChatApp{
			{TeamID: tm.ID, WebhookURL: "https://hooks.slack.com/services/T000/B000/XXXX?a=1&b=2#frag", Enabled: true, UpdatedAt: at(1)},
			{TeamID: tm.ID, WebhookURL: "https://hooks.slack.com/services/T000/B000/XXXX?a=1&b=2#frag", Enabled: false, UpdatedAt: at(2)},
			{TeamID: tm.ID, WebhookURL: "http://127.0.0.1:8080/hook", Enabled: true, UpdatedAt: at(3)},
			// As written: upper-case scheme and host, non-ASCII path.
			{TeamID: tm.ID, WebhookURL: "HTTPS://Chat.Example.com/hooks/ü/🚀", Enabled: true, UpdatedAt: at(1)},
		}
		for i, c := range steps {
			wantErr(t, "SetChatApp", s.SetChatApp(ctx, c), nil)
			checkChatApp(t, s, fmt.Sprintf("ChatApp after set %d", i), c)
		}
		_, err = s.ChatApp(ctx, other.ID)
		wantErr(t, "ChatApp of another team", err, sinks.ErrNotFound)
		otherApp := model.ChatApp{TeamID: other.ID, WebhookURL: "https://other.example/", UpdatedAt: at(4)}
		wantErr(t, "SetChatApp(other team)", s.SetChatApp(ctx, otherApp), nil)
		checkChatApp(t, s, "ChatApp of the other team", otherApp)
		checkChatApp(t, s, "ChatApp after another team's set", steps[len(steps)-1])

		unknown := otherApp
		unknown.TeamID = uuid.New()
		wantErr(t, "SetChatApp(unknown team)", s.SetChatApp(ctx, unknown), sinks.ErrNotFound)
		_, err = s.ChatApp(ctx, unknown.TeamID)
		wantErr(t, "ChatApp(unknown team)", err, sinks.ErrNotFound)
	})

	t.Run("Invalid", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		stored := model.ChatApp{TeamID: tm.ID, WebhookURL: "https://hooks.example/1", Enabled: true, UpdatedAt: at(1)}
		wantErr(t, "SetChatApp", s.SetChatApp(ctx, stored), nil)
		for _, u := range []string{
			"", "hooks.example/1", "/hooks/1", "//hooks.example/1", "ftp://hooks.example/1", "https://", "https:///path",
			"http:hooks.example", "mailto:a@example.com", "javascript:alert(1)", " https://hooks.example/1",
			"https://hooks.example/\x00", "https://hooks.example/\xff", "https://hooks example/",
		} {
			t.Run(fmt.Sprintf("%q", u), func(t *testing.T) {
				c := stored
				c.WebhookURL, c.Enabled, c.UpdatedAt = u, false, at(2)
				wantErr(t, "SetChatApp", s.SetChatApp(ctx, c), sinks.ErrInvalid)
				checkChatApp(t, s, "ChatApp after a rejected set", stored)
			})
		}
	})

	t.Run("Times", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		for _, tc := range oddTimes {
			wantErr(t, "SetChatApp", s.SetChatApp(ctx, model.ChatApp{TeamID: tm.ID, WebhookURL: "https://hooks.example/", UpdatedAt: tc.t}), nil)
			got, err := s.ChatApp(ctx, tm.ID)
			wantErr(t, "ChatApp", err, nil)
			checkTime(t, tc.name+": UpdatedAt", got.UpdatedAt, tc.t)
		}
	})
}

// testAllApps runs on a store of its own, so it knows every app there is.
func testAllApps(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()
	apps, err := s.AllApps(ctx)
	wantErr(t, "AllApps of an empty store", err, nil)
	check(t, "AllApps of an empty store", apps, []model.App(nil))

	_, tm := mustUser(t, s, at(0))
	_, other := mustUser(t, s, at(0))
	mustUser(t, s, at(0)) // a team without apps
	later, _ := mustApp(t, s, tm.ID, at(5))
	older, _ := mustApp(t, s, other.ID, at(1))
	tieA, _ := mustApp(t, s, other.ID, at(3))
	tieB, _ := mustApp(t, s, tm.ID, at(3))
	if bytes.Compare(tieA.ID[:], tieB.ID[:]) > 0 {
		tieA, tieB = tieB, tieA
	}
	apps, err = s.AllApps(ctx)
	wantErr(t, "AllApps", err, nil)
	check(t, "AllApps", apps, []model.App{older, tieA, tieB, later})

	upd := later
	upd.Name, upd.RetentionDays, upd.UpdatedAt = "Renamed", 365, at(9)
	wantErr(t, "UpdateApp", s.UpdateApp(ctx, upd), nil)
	apps, err = s.AllApps(ctx)
	wantErr(t, "AllApps", err, nil)
	check(t, "AllApps after UpdateApp", apps, []model.App{older, tieA, tieB, upd})
}
