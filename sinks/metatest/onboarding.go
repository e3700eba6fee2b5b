package metatest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// checkApp fails the test unless every way of reading the app (App, AppsOfTeam, AllApps,
// AppByAPIKey) returns want.
func checkApp(t *testing.T, s sinks.MetaStore, what string, key string, want model.App) {
	t.Helper()
	ctx := t.Context()
	got, err := s.App(ctx, want.ID)
	wantErr(t, what+": App", err, nil)
	check(t, what+": App", got, want)
	apps, err := s.AppsOfTeam(ctx, want.TeamID)
	wantErr(t, what+": AppsOfTeam", err, nil)
	if i := slices.IndexFunc(apps, func(a model.App) bool { return a.ID == want.ID }); i < 0 {
		t.Errorf("%s: AppsOfTeam does not list the app", what)
	} else {
		check(t, what+": AppsOfTeam", apps[i], want)
	}
	all, err := s.AllApps(ctx)
	wantErr(t, what+": AllApps", err, nil)
	if i := slices.IndexFunc(all, func(a model.App) bool { return a.ID == want.ID }); i < 0 {
		t.Errorf("%s: AllApps does not list the app", what)
	} else {
		check(t, what+": AllApps", all[i], want)
	}
	got, _, err = s.AppByAPIKey(ctx, key)
	wantErr(t, what+": AppByAPIKey", err, nil)
	check(t, what+": AppByAPIKey", got, want)
}

// testOnboarding checks sinks.Onboarding. Beyond its doc comments it pins down: a new app is
// not onboarded whatever CreateApp is given (Onboarded false, OnboardedAt zero, OSNames empty);
// every read of an app (App, AppsOfTeam, AllApps, AppByAPIKey) carries the onboarding fields;
// OnboardedAt comes back in UTC; UpdateApp keeps them; a refused mark changes nothing.
func testOnboarding(t *testing.T, s sinks.MetaStore) {
	o := as[sinks.Onboarding](t, s)
	ctx := t.Context()

	t.Run("MarkOnboarded", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, k := newApp(tm.ID, at(1))
		given := a
		given.Onboarded, given.OnboardedAt, given.OSNames = true, at(2), []string{"android"}
		if err := s.CreateApp(ctx, given, k); err != nil {
			t.Fatalf("CreateApp: %v", err)
		}
		checkApp(t, s, "a new app", k.Key, a)

		mark := sinks.OnboardingMark{At: at(5), UniqueID: "com.example.app", OSNames: []string{"android"}}
		wantErr(t, "MarkOnboarded(first)", o.MarkOnboarded(ctx, a.ID, mark), nil)
		want := a
		want.Onboarded, want.OnboardedAt, want.UniqueID, want.OSNames = true, at(5), "com.example.app", []string{"android"}
		checkApp(t, s, "after the first mark", k.Key, want)

		// Later marks keep the time and the unique id; only new OS names are added, in order.
		later := sinks.OnboardingMark{At: at(9), UniqueID: "com.example.other", OSNames: []string{"android"}}
		wantErr(t, "MarkOnboarded(same OS)", o.MarkOnboarded(ctx, a.ID, later), nil)
		checkApp(t, s, "after a mark with nothing new", k.Key, want)
		later.OSNames = []string{"ios", "android", "ipados"}
		wantErr(t, "MarkOnboarded(new OS names)", o.MarkOnboarded(ctx, a.ID, later), nil)
		want.OSNames = []string{"android", "ios", "ipados"}
		checkApp(t, s, "after a mark with new OS names", k.Key, want)
		later.OSNames = nil
		wantErr(t, "MarkOnboarded(no OS name)", o.MarkOnboarded(ctx, a.ID, later), nil)
		checkApp(t, s, "after a mark without OS names", k.Key, want)

		// UpdateApp changes the settings and keeps the onboarding.
		upd := want
		upd.Name, upd.RetentionDays, upd.UpdatedAt = "Renamed", 60, at(20)
		upd.Onboarded, upd.OnboardedAt, upd.OSNames = false, time.Time{}, nil
		wantErr(t, "UpdateApp", s.UpdateApp(ctx, upd), nil)
		want.Name, want.RetentionDays, want.UpdatedAt = "Renamed", 60, at(20)
		checkApp(t, s, "after UpdateApp", k.Key, want)

		// Another app of the team is not touched.
		other, otherKey := mustApp(t, s, tm.ID, at(3))
		checkApp(t, s, "another app", otherKey.Key, other)

		wantErr(t, "MarkOnboarded(unknown app)", o.MarkOnboarded(ctx, uuid.New(), mark), sinks.ErrNotFound)
	})

	t.Run("UniqueID", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		// A unique id set before is kept.
		a, k := mustApp(t, s, tm.ID, at(1))
		a.UniqueID, a.UpdatedAt = "com.example.set", at(2)
		wantErr(t, "UpdateApp", s.UpdateApp(ctx, a), nil)
		wantErr(t, "MarkOnboarded", o.MarkOnboarded(ctx, a.ID, sinks.OnboardingMark{At: at(3), UniqueID: "com.example.batch", OSNames: []string{"ios"}}), nil)
		a.Onboarded, a.OnboardedAt, a.OSNames = true, at(3), []string{"ios"}
		checkApp(t, s, "an app with a unique id", k.Key, a)

		// A mark without one onboards the app and leaves it empty; a later mark does not set it.
		b, bk := mustApp(t, s, tm.ID, at(1))
		wantErr(t, "MarkOnboarded(no unique id)", o.MarkOnboarded(ctx, b.ID, sinks.OnboardingMark{At: at(4)}), nil)
		b.Onboarded, b.OnboardedAt = true, at(4)
		checkApp(t, s, "an app onboarded without a unique id", bk.Key, b)
		wantErr(t, "MarkOnboarded(unique id later)", o.MarkOnboarded(ctx, b.ID, sinks.OnboardingMark{At: at(5), UniqueID: "com.example.late", OSNames: []string{"android"}}), nil)
		b.OSNames = []string{"android"}
		checkApp(t, s, "an app onboarded before its unique id came", bk.Key, b)
	})

	t.Run("Invalid", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, k := mustApp(t, s, tm.ID, at(1))
		many := make([]string, sinks.MaxOSNames+1)
		for i := range many {
			many[i] = fmt.Sprintf("os%d", i)
		}
		for name, m := range map[string]sinks.OnboardingMark{
			"no time":           {UniqueID: "com.example", OSNames: []string{"android"}},
			"NUL in unique id":  {At: at(2), UniqueID: "com.\x00example"},
			"bad UTF-8 id":      {At: at(2), UniqueID: "com.\xffexample"},
			"empty OS name":     {At: at(2), OSNames: []string{""}},
			"uppercase OS name": {At: at(2), OSNames: []string{"iOS"}},
			"repeated OS name":  {At: at(2), OSNames: []string{"ios", "android", "ios"}},
			"NUL in OS name":    {At: at(2), OSNames: []string{"and\x00roid"}},
			"bad UTF-8 OS name": {At: at(2), OSNames: []string{"\xff"}},
			"too many OS names": {At: at(2), OSNames: many},
		} {
			wantErr(t, "MarkOnboarded("+name+")", o.MarkOnboarded(ctx, a.ID, m), sinks.ErrInvalid)
		}
		checkApp(t, s, "after refused marks", k.Key, a)
	})

	t.Run("Concurrent", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		const n = 8
		errs := race(n, func(i int) error {
			return o.MarkOnboarded(ctx, a.ID, sinks.OnboardingMark{At: at(10 + i), UniqueID: fmt.Sprintf("id%d", i),
				OSNames: []string{"shared", fmt.Sprintf("os%d", i)}})
		})
		for i, err := range errs {
			wantErr(t, fmt.Sprintf("MarkOnboarded %d", i), err, nil)
		}
		got, err := s.App(ctx, a.ID)
		wantErr(t, "App", err, nil)
		// One mark came first: its time and unique id; every OS name once.
		first := -1
		for i := range n {
			if got.OnboardedAt.Equal(at(10 + i)) {
				first = i
			}
		}
		if !got.Onboarded || first < 0 || got.UniqueID != fmt.Sprintf("id%d", first) {
			t.Errorf("after concurrent marks: onboarded %v at %s, unique id %q: want one mark's time and id",
				got.Onboarded, got.OnboardedAt, got.UniqueID)
		}
		if len(got.OSNames) != n+1 || got.OSNames[0] != "shared" {
			t.Errorf("after concurrent marks OSNames = %v, want shared first, then os0..os%d once each", got.OSNames, n-1)
		}
		for i := range n {
			if !slices.Contains(got.OSNames, fmt.Sprintf("os%d", i)) {
				t.Errorf("after concurrent marks OSNames = %v lacks os%d", got.OSNames, i)
			}
		}
	})
}
