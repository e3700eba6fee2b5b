package metatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// testAlerts and testAlertDeliveries check sinks.Alerts, which every MetaStore backend
// implements too. Beyond the interface's doc comments they pin down these choices:
//   - AppAlerts and LatestAlerts of an app without alerts, known or not, are empty lists (only
//     AddAlert says ErrNotFound for an unknown app);
//   - AppAlerts with a limit below 1 or a negative offset, and DueDeliveries with a negative
//     limit, are ErrInvalid; DueDeliveries with limit 0 is empty;
//   - a NUL byte or invalid UTF-8 in an alert's EntityID, Type, Message or URL (AddAlert) or in
//     lastError (PostponeDelivery) is ErrInvalid and changes nothing;
//   - adding a stored id changes nothing even when the rest of the alert differs, its app
//     included, and says not added;
//   - DueDeliveries gives each delivery with its alert as stored;
//   - PostponeDelivery stores attempts, next attempt and error as given: it may move a
//     delivery earlier as well as later.
//
// DueDeliveries spans every app, so each test that adds alerts finishes their deliveries when
// it ends (addAlert), and the tests of a group see only their own pending deliveries.

// farFuture is after every time the tests use.
var farFuture = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)

// west is a zone other than base's and UTC, for arguments given in another zone.
var west = time.FixedZone("UTC-7", -7*60*60)

// newAlert returns the alert of app, type and entity raised for key, created at c.
func newAlert(app model.App, typ, entity, key string, c time.Time) model.Alert {
	return model.Alert{
		ID:        model.AlertID(app.ID, typ, entity, key),
		TeamID:    app.TeamID,
		AppID:     app.ID,
		EntityID:  entity,
		Type:      typ,
		Message:   fmt.Sprintf("%s of %q (%s): «ü 🚀»", typ, entity, key),
		URL:       "https://svc.example.com/apps/" + app.ID.String() + "/issues/" + entity,
		CreatedAt: c,
		UpdatedAt: c,
	}
}

// idWith returns a fresh id whose first byte is first, for tests of the order of ids.
func idWith(first byte) uuid.UUID {
	id := uuid.New()
	id[0] = first
	return id
}

// withID returns a with another id.
func withID(a model.Alert, id uuid.UUID) model.Alert {
	a.ID = id
	return a
}

// addAlert adds a and fails the test unless AddAlert says added as want. The delivery it may
// create is finished when the test ends.
func addAlert(t *testing.T, al sinks.Alerts, a model.Alert, deliver, want bool) {
	t.Helper()
	added, err := al.AddAlert(t.Context(), a, deliver)
	if err != nil {
		t.Fatalf("AddAlert(%s %q at %s, deliver %v): %v", a.Type, a.EntityID, a.CreatedAt, deliver, err)
	}
	if added != want {
		t.Errorf("AddAlert(%s %q at %s, deliver %v) added = %v, want %v", a.Type, a.EntityID, a.CreatedAt, deliver, added, want)
	}
	finishLater(t, al, a.ID)
}

// finishLater finishes the alert's delivery, if any, when the test ends.
func finishLater(t *testing.T, al sinks.Alerts, id uuid.UUID) {
	t.Cleanup(func() {
		if err := al.FinishDelivery(context.Background(), id); err != nil {
			t.Errorf("cleanup: FinishDelivery(%s): %v", id, err)
		}
	})
}

// pending is the delivery AddAlert stores for a: due when a was created, no attempts.
func pending(a model.Alert) model.Delivery { return model.Delivery{Alert: a, NextAttempt: a.CreatedAt} }

func checkAppAlerts(t *testing.T, al sinks.Alerts, what string, app uuid.UUID, from, to time.Time, limit, offset int, want []model.Alert) {
	t.Helper()
	got, err := al.AppAlerts(t.Context(), app, from, to, limit, offset)
	wantErr(t, what, err, nil)
	check(t, what, got, want)
}

// checkLatest compares LatestAlerts, which has no order, ordered by id.
func checkLatest(t *testing.T, al sinks.Alerts, what string, app uuid.UUID, since time.Time, want []model.Alert) {
	t.Helper()
	got, err := al.LatestAlerts(t.Context(), app, since)
	wantErr(t, what, err, nil)
	byID := func(a, b model.Alert) int { return bytes.Compare(a.ID[:], b.ID[:]) }
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	check(t, what, got, want)
}

func checkDue(t *testing.T, al sinks.Alerts, what string, now time.Time, limit int, want []model.Delivery) {
	t.Helper()
	got, err := al.DueDeliveries(t.Context(), now, limit)
	wantErr(t, what, err, nil)
	check(t, what, got, want)
}

// requireEmptyOutbox stops the test when deliveries of another test are pending.
func requireEmptyOutbox(t *testing.T, al sinks.Alerts) {
	t.Helper()
	got, err := al.DueDeliveries(t.Context(), farFuture, 10)
	if err != nil {
		t.Fatalf("DueDeliveries: %v", err)
	}
	if len(got) > 0 {
		t.Fatalf("%d deliveries of other tests are pending, the first of alert %s", len(got), got[0].Alert.ID)
	}
}

// newestFirst is the order of AppAlerts.
func newestFirst(a, b model.Alert) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return bytes.Compare(b.ID[:], a.ID[:])
}

// refAppAlerts is AppAlerts by brute force over every alert added.
func refAppAlerts(all []model.Alert, app uuid.UUID, from, to time.Time, limit, offset int) []model.Alert {
	var in []model.Alert
	for _, a := range all {
		if a.AppID == app && !a.CreatedAt.Before(from) && a.CreatedAt.Before(to) {
			in = append(in, a)
		}
	}
	slices.SortFunc(in, newestFirst)
	if offset >= len(in) {
		return nil
	}
	in = in[offset:]
	return in[:min(limit, len(in))]
}

func testAlerts(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()
	al := as[sinks.Alerts](t, s)
	us := time.Microsecond

	t.Run("AddAndRead", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		checkAppAlerts(t, al, "AppAlerts before any alert", app.ID, at(-100), at(100), 10, 0, nil)
		checkLatest(t, al, "LatestAlerts before any alert", app.ID, at(-100), nil)

		spike := newAlert(app, model.AlertCrashSpike, "group-1", "2024-03-10T10:00:00Z", at(2))
		spike.UpdatedAt = at(3) // both times come back as written
		report := newAlert(app, model.AlertBugReport, uuid.NewString(), "", at(4))
		addAlert(t, al, spike, true, true)
		addAlert(t, al, report, false, true)

		checkAppAlerts(t, al, "AppAlerts", app.ID, at(0), at(10), 10, 0, []model.Alert{report, spike})
		checkLatest(t, al, "LatestAlerts", app.ID, at(0), []model.Alert{spike, report})
		// The bug report was added without a delivery.
		checkDue(t, al, "DueDeliveries", farFuture, 10, []model.Delivery{pending(spike)})
		wantErr(t, "PostponeDelivery of an alert added without delivery",
			al.PostponeDelivery(ctx, report.ID, 1, at(9), "x"), sinks.ErrNotFound)
		wantErr(t, "FinishDelivery of an alert added without delivery", al.FinishDelivery(ctx, report.ID), nil)
		checkDue(t, al, "DueDeliveries after those", farFuture, 10, []model.Delivery{pending(spike)})

		checkAppAlerts(t, al, "AppAlerts of an unknown app", uuid.New(), at(-100), at(100), 10, 0, nil)
		checkLatest(t, al, "LatestAlerts of an unknown app", uuid.New(), at(-100), nil)
	})

	t.Run("Idempotent", func(t *testing.T) {
		cases := []struct {
			name    string
			first   bool                                             // deliver of the first add
			between func(t *testing.T, a model.Alert)                // before the second add
			second  func(a model.Alert, other model.App) model.Alert // the second add's alert
			deliver bool                                             // of the second add
			due     func(a model.Alert) []model.Delivery             // pending afterwards
		}{
			{
				name: "delivering twice", first: true, deliver: true,
				due: func(a model.Alert) []model.Delivery { return []model.Delivery{pending(a)} },
			},
			{
				name: "delivering, then not", first: true, deliver: false,
				due: func(a model.Alert) []model.Delivery { return []model.Delivery{pending(a)} },
			},
			{
				name: "not delivering, then delivering", first: false, deliver: true,
				due: func(model.Alert) []model.Delivery { return nil },
			},
			{
				name: "every other field differs", first: true, deliver: true,
				second: func(a model.Alert, _ model.App) model.Alert {
					a.Type, a.EntityID, a.Message, a.URL = model.AlertANRSpike, "other", "other message", "https://other.example.com/"
					a.TeamID, a.CreatedAt, a.UpdatedAt = uuid.New(), at(-50), at(50)
					return a
				},
				due: func(a model.Alert) []model.Delivery { return []model.Delivery{pending(a)} },
			},
			{
				name: "another app", first: true, deliver: false,
				second: func(a model.Alert, other model.App) model.Alert {
					a.AppID, a.TeamID = other.ID, other.TeamID
					return a
				},
				due: func(a model.Alert) []model.Delivery { return []model.Delivery{pending(a)} },
			},
			{
				name: "after a failed attempt", first: true, deliver: true,
				between: func(t *testing.T, a model.Alert) {
					wantErr(t, "PostponeDelivery", al.PostponeDelivery(ctx, a.ID, 2, at(30), "HTTP 502"), nil)
				},
				due: func(a model.Alert) []model.Delivery {
					return []model.Delivery{{Alert: a, Attempts: 2, NextAttempt: at(30), LastError: "HTTP 502"}}
				},
			},
			{
				name: "after the delivery finished", first: true, deliver: true,
				between: func(t *testing.T, a model.Alert) {
					wantErr(t, "FinishDelivery", al.FinishDelivery(ctx, a.ID), nil)
				},
				due: func(model.Alert) []model.Delivery { return nil },
			},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				requireEmptyOutbox(t, al)
				_, tm := mustUser(t, s, at(0))
				app, _ := mustApp(t, s, tm.ID, at(0))
				other, _ := mustApp(t, s, tm.ID, at(0))
				a := newAlert(app, model.AlertCrashSpike, "group", "2024-03-10T12:00:00Z", at(1))
				addAlert(t, al, a, tc.first, true)
				if tc.between != nil {
					tc.between(t, a)
				}
				again := a
				if tc.second != nil {
					again = tc.second(a, other)
				}
				addAlert(t, al, again, tc.deliver, false)
				addAlert(t, al, a, true, false)
				checkAppAlerts(t, al, "AppAlerts", app.ID, at(-100), at(100), 10, 0, []model.Alert{a})
				checkLatest(t, al, "LatestAlerts", app.ID, at(-100), []model.Alert{a})
				checkAppAlerts(t, al, "AppAlerts of the other app", other.ID, at(-100), at(100), 10, 0, nil)
				checkDue(t, al, "DueDeliveries", farFuture, 10, tc.due(a))
			})
		}
	})

	t.Run("UnknownApp", func(t *testing.T) {
		requireEmptyOutbox(t, al)
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		a := newAlert(model.App{ID: uuid.New(), TeamID: tm.ID}, model.AlertNewCrashGroup, "g", "", at(1))
		for _, deliver := range []bool{true, false} {
			added, err := al.AddAlert(ctx, a, deliver)
			wantErr(t, fmt.Sprintf("AddAlert(unknown app, deliver %v)", deliver), err, sinks.ErrNotFound)
			if added {
				t.Errorf("AddAlert(unknown app, deliver %v) added = true", deliver)
			}
		}
		finishLater(t, al, a.ID)
		checkAppAlerts(t, al, "AppAlerts of the unknown app", a.AppID, at(-100), at(100), 10, 0, nil)
		checkDue(t, al, "DueDeliveries", farFuture, 10, nil)
		// Nothing of it was stored: its id is free.
		a.AppID = app.ID
		addAlert(t, al, a, true, true)
		checkAppAlerts(t, al, "AppAlerts", app.ID, at(-100), at(100), 10, 0, []model.Alert{a})
		checkDue(t, al, "DueDeliveries", farFuture, 10, []model.Delivery{pending(a)})
	})

	t.Run("Window", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		from, to := at(10), at(20)
		times := []time.Time{from.Add(-us), from, from.Add(us), to.Add(-us), to, to.Add(us)}
		as := make([]model.Alert, len(times))
		for i, c := range times {
			as[i] = newAlert(app, model.AlertCrashSpike, fmt.Sprintf("g%d", i), "", c)
			addAlert(t, al, as[i], false, true)
		}
		beforeFrom, atFrom, afterFrom, beforeTo, atTo, afterTo := as[0], as[1], as[2], as[3], as[4], as[5]
		cases := []struct {
			name     string
			from, to time.Time
			want     []model.Alert
		}{
			{"[from, to)", from, to, []model.Alert{beforeTo, afterFrom, atFrom}},
			{"bounds in other zones", from.In(west), to.In(time.UTC), []model.Alert{beforeTo, afterFrom, atFrom}},
			{"one microsecond", from, from.Add(us), []model.Alert{atFrom}},
			{"from a microsecond later", from.Add(us), to, []model.Alert{beforeTo, afterFrom}},
			{"to a microsecond later", from, to.Add(us), []model.Alert{atTo, beforeTo, afterFrom, atFrom}},
			{"a microsecond wider", from.Add(-us), to.Add(2 * us), []model.Alert{afterTo, atTo, beforeTo, afterFrom, atFrom, beforeFrom}},
			{"between two alerts", from.Add(2 * us), to.Add(-us), nil},
			{"from equal to to", from, from, nil},
			{"from after to", to, from, nil},
		}
		for _, tc := range cases {
			checkAppAlerts(t, al, "AppAlerts "+tc.name, app.ID, tc.from, tc.to, 10, 0, tc.want)
		}
	})

	t.Run("OrderOfEqualTimes", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		t1, t2 := at(5), at(6)
		mk := func(i int, c time.Time, id uuid.UUID) model.Alert {
			return withID(newAlert(app, model.AlertBugReport, fmt.Sprintf("r%d", i), "", c), id)
		}
		// High first bytes (0x80, 0xff) sort after low ones as bytes; near and near1 differ in
		// their last byte only.
		near := idWith(0x40)
		near1 := near
		near1[15] ^= 1
		if bytes.Compare(near[:], near1[:]) > 0 {
			near, near1 = near1, near
		}
		t1ff, t180, t17f, t1near1, t1near, t100 := mk(0, t1, idWith(0xff)), mk(1, t1, idWith(0x80)), mk(2, t1, idWith(0x7f)), mk(3, t1, near1), mk(4, t1, near), mk(5, t1, idWith(0x00))
		t2ff, t200 := mk(6, t2, idWith(0xff)), mk(7, t2, idWith(0x00))
		between := mk(8, t1.Add(us), idWith(0x00))
		for _, a := range []model.Alert{t100, t1near, t2ff, t17f, between, t1ff, t200, t1near1, t180} {
			addAlert(t, al, a, false, true)
		}
		want := []model.Alert{t2ff, t200, between, t1ff, t180, t17f, t1near1, t1near, t100}
		checkAppAlerts(t, al, "AppAlerts", app.ID, at(0), at(10), 20, 0, want)
		checkAppAlerts(t, al, "AppAlerts of t1", app.ID, t1, t1.Add(us), 20, 0, want[3:])
		for i := range want {
			checkAppAlerts(t, al, fmt.Sprintf("AppAlerts offset %d limit 1", i), app.ID, at(0), at(10), 1, i, want[i:i+1])
		}
		// The suite's own order (of refAppAlerts) agrees with the one written out.
		sorted := slices.Clone(want)
		slices.Reverse(sorted)
		slices.SortFunc(sorted, newestFirst)
		if !slices.EqualFunc(sorted, want, func(a, b model.Alert) bool { return a.ID == b.ID }) {
			t.Errorf("newestFirst disagrees with the order written out")
		}
	})

	t.Run("Paging", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		other, _ := mustApp(t, s, tm.ID, at(0))
		var all []model.Alert
		for i, m := range []int{1, 2, 2, 3, 4, 4, 5, 5, 5, 6} {
			a := newAlert(app, model.AlertCrashSpike, fmt.Sprintf("g%d", i), "", at(m))
			o := newAlert(other, model.AlertCrashSpike, fmt.Sprintf("g%d", i), "", at(m))
			addAlert(t, al, a, false, true)
			addAlert(t, al, o, false, true)
			all = append(all, a, o)
		}
		cases := []struct {
			from, to      time.Time
			limit, offset int
		}{
			{at(0), at(10), 1, 0}, {at(0), at(10), 3, 0}, {at(0), at(10), 3, 3}, {at(0), at(10), 3, 9},
			{at(0), at(10), 3, 10}, {at(0), at(10), 3, 100}, {at(0), at(10), 10, 0}, {at(0), at(10), 100, 0},
			{at(0), at(10), 2, 5}, {at(0), at(10), 1, 9},
			{at(2), at(5), 2, 0}, {at(2), at(5), 2, 1}, {at(2), at(5), 2, 3}, {at(2), at(5), 5, 4},
			{at(5), at(6), 2, 2}, {at(5), at(6), 1, 3},
		}
		for _, tc := range cases {
			want := refAppAlerts(all, app.ID, tc.from, tc.to, tc.limit, tc.offset)
			what := fmt.Sprintf("AppAlerts [%s, %s) limit %d offset %d", tc.from.Format(time.TimeOnly), tc.to.Format(time.TimeOnly), tc.limit, tc.offset)
			checkAppAlerts(t, al, what, app.ID, tc.from, tc.to, tc.limit, tc.offset, want)
		}
		// Pages of two put together are the whole list, each alert once.
		var pages []model.Alert
		for offset := 0; offset <= 2*len(all); offset += 2 {
			page, err := al.AppAlerts(ctx, app.ID, at(0), at(10), 2, offset)
			wantErr(t, "AppAlerts page", err, nil)
			if len(page) == 0 {
				break
			}
			pages = append(pages, page...)
		}
		check(t, "pages of AppAlerts", pages, refAppAlerts(all, app.ID, at(0), at(10), 100, 0))
	})

	t.Run("AppsIsolated", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		_, tm2 := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(0))
		b, _ := mustApp(t, s, tm.ID, at(0))
		c, _ := mustApp(t, s, tm2.ID, at(0))
		none, _ := mustApp(t, s, tm.ID, at(0))
		// The same type, entity and time in every app: only the derived ids differ.
		var want = map[uuid.UUID][]model.Alert{}
		for i := range 3 {
			for _, app := range []model.App{a, b, c} {
				x := newAlert(app, model.AlertNewCrashGroup, fmt.Sprintf("g%d", i), "", at(i))
				addAlert(t, al, x, false, true)
				want[app.ID] = append([]model.Alert{x}, want[app.ID]...)
			}
		}
		for _, app := range []model.App{a, b, c, none} {
			checkAppAlerts(t, al, "AppAlerts", app.ID, at(-100), at(100), 10, 0, want[app.ID])
			checkLatest(t, al, "LatestAlerts", app.ID, at(-100), want[app.ID])
		}
	})

	t.Run("Latest", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		other, _ := mustApp(t, s, tm.ID, at(0))
		hour := func(i int) string { return at(i).UTC().Format(time.RFC3339) }
		s1 := newAlert(app, model.AlertCrashSpike, "g1", hour(1), at(1))
		s2 := newAlert(app, model.AlertCrashSpike, "g1", hour(2), at(2))
		s3 := newAlert(app, model.AlertCrashSpike, "g1", hour(3), at(3))
		g2 := newAlert(app, model.AlertCrashSpike, "g2", hour(2), at(2))
		g10 := newAlert(app, model.AlertCrashSpike, "g10", hour(1), at(1)) // "g1" is a prefix of it
		anr := newAlert(app, model.AlertANRSpike, "g1", hour(1), at(1))    // the entity of s1 in another type
		newGroup := newAlert(app, model.AlertNewCrashGroup, "g1", "", at(0))
		empty := newAlert(app, model.AlertNewANRGroup, "", "", at(2))
		tieLo := newAlert(app, model.AlertBugReport, "r1", "a", at(4))
		tieHi := newAlert(app, model.AlertBugReport, "r1", "b", at(4))
		if bytes.Compare(tieLo.ID[:], tieHi.ID[:]) > 0 {
			tieLo, tieHi = tieHi, tieLo
		}
		elsewhere := newAlert(other, model.AlertCrashSpike, "g1", hour(5), at(5))
		// Added out of order, the newest of g1 before older ones.
		for _, a := range []model.Alert{s3, tieHi, s1, g10, empty, newGroup, anr, tieLo, g2, s2, elsewhere} {
			addAlert(t, al, a, false, true)
		}
		cases := []struct {
			name  string
			since time.Time
			want  []model.Alert
		}{
			{"since before all", at(-1), []model.Alert{s3, g2, g10, anr, newGroup, empty, tieHi}},
			{"since the first", at(0), []model.Alert{s3, g2, g10, anr, newGroup, empty, tieHi}},
			{"a microsecond after the first", at(0).Add(us), []model.Alert{s3, g2, g10, anr, empty, tieHi}},
			{"since an alert's time", at(1), []model.Alert{s3, g2, g10, anr, empty, tieHi}},
			{"since in another zone", at(1).In(west), []model.Alert{s3, g2, g10, anr, empty, tieHi}},
			{"a microsecond later", at(1).Add(us), []model.Alert{s3, g2, empty, tieHi}},
			{"since the newest spike", at(3), []model.Alert{s3, tieHi}},
			{"since the tie", at(4), []model.Alert{tieHi}},
			{"after all", at(4).Add(us), nil},
		}
		for _, tc := range cases {
			checkLatest(t, al, "LatestAlerts "+tc.name, app.ID, tc.since, tc.want)
		}
		checkLatest(t, al, "LatestAlerts of the other app", other.ID, at(-1), []model.Alert{elsewhere})
	})

	t.Run("Times", func(t *testing.T) {
		requireEmptyOutbox(t, al)
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		cases := []struct {
			name string
			c    time.Time
		}{
			{"microseconds in UTC+2", base},
			{"microseconds in UTC-7", time.Date(2025, 1, 2, 3, 4, 5, 999999000, west)},
			{"before 1970", time.Date(1969, 12, 31, 23, 59, 59, 500001000, time.UTC)},
			{"far future", time.Date(2200, 6, 7, 8, 9, 10, 1000, west)},
		}
		var all []model.Alert
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				a := newAlert(app, model.AlertCrashSpike, tc.name, "", tc.c)
				a.UpdatedAt = tc.c.Add(time.Hour + us)
				addAlert(t, al, a, true, true)
				all = append(all, a)
				checkAppAlerts(t, al, "AppAlerts of its microsecond", app.ID, tc.c, tc.c.Add(us), 10, 0, []model.Alert{a})
				checkAppAlerts(t, al, "AppAlerts up to it", app.ID, tc.c.Add(-time.Hour), tc.c, 10, 0, nil)
				var since []model.Alert // one (type, entity) each
				for _, b := range all {
					if !b.CreatedAt.Before(tc.c) {
						since = append(since, b)
					}
				}
				checkLatest(t, al, "LatestAlerts since it", app.ID, tc.c, since)
				checkDue(t, al, "DueDeliveries at it", tc.c, 10, []model.Delivery{pending(a)})
				checkDue(t, al, "DueDeliveries a microsecond before", tc.c.Add(-us), 10, nil)
				next := tc.c.Add(us).In(west)
				wantErr(t, "PostponeDelivery", al.PostponeDelivery(ctx, a.ID, 1, next, "e"), nil)
				checkDue(t, al, "DueDeliveries after PostponeDelivery", next, 10, []model.Delivery{{Alert: a, Attempts: 1, NextAttempt: next, LastError: "e"}})
			})
		}
		slices.SortFunc(all, newestFirst)
		checkAppAlerts(t, al, "AppAlerts of every time", app.ID, time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), farFuture, 10, 0, all)

		// Nanoseconds come back within a microsecond, in UTC.
		c := time.Date(2025, 1, 2, 3, 4, 5, 123456789, west)
		a := newAlert(app, model.AlertANRSpike, "ns", "", c)
		addAlert(t, al, a, false, true)
		got, err := al.AppAlerts(ctx, app.ID, c.Add(-us), c.Add(us), 10, 0)
		wantErr(t, "AppAlerts around nanoseconds", err, nil)
		if len(got) != 1 || got[0].ID != a.ID {
			t.Fatalf("AppAlerts around an alert created at %s = %+v, want it alone", c, got)
		}
		for name, gt := range map[string]time.Time{"CreatedAt": got[0].CreatedAt, "UpdatedAt": got[0].UpdatedAt} {
			if d := gt.Sub(c).Abs(); d >= us || gt.Location() != time.UTC {
				t.Errorf("%s = %s, want %s within 1µs in UTC", name, gt.Format(time.RFC3339Nano), c.UTC().Format(time.RFC3339Nano))
			}
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		requireEmptyOutbox(t, al)
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		cases := []struct {
			name string
			edit func(a *model.Alert)
		}{
			{"NUL in the message", func(a *model.Alert) { a.Message = "a\x00b" }},
			{"invalid UTF-8 in the message", func(a *model.Alert) { a.Message = "a\xffb" }},
			{"NUL in the entity", func(a *model.Alert) { a.EntityID = "\x00" }},
			{"invalid UTF-8 in the entity", func(a *model.Alert) { a.EntityID = "\xc3" }},
			{"NUL in the type", func(a *model.Alert) { a.Type = model.AlertBugReport + "\x00" }},
			{"NUL in the URL", func(a *model.Alert) { a.URL = "https://x.example.com/\x00" }},
		}
		for i, tc := range cases {
			a := newAlert(app, model.AlertBugReport, fmt.Sprintf("r%d", i), "", at(1))
			tc.edit(&a)
			finishLater(t, al, a.ID)
			added, err := al.AddAlert(ctx, a, true)
			wantErr(t, "AddAlert with "+tc.name, err, sinks.ErrInvalid)
			if added {
				t.Errorf("AddAlert with %s added = true", tc.name)
			}
		}
		checkAppAlerts(t, al, "AppAlerts after invalid adds", app.ID, at(-100), at(100), 10, 0, nil)
		checkDue(t, al, "DueDeliveries after invalid adds", farFuture, 10, nil)

		a := newAlert(app, model.AlertBugReport, "ok", "", at(1))
		addAlert(t, al, a, true, true)
		pages := []struct{ limit, offset int }{{0, 0}, {-1, 0}, {1, -1}, {0, -1}}
		for _, p := range pages {
			_, err := al.AppAlerts(ctx, app.ID, at(-100), at(100), p.limit, p.offset)
			wantErr(t, fmt.Sprintf("AppAlerts with limit %d offset %d", p.limit, p.offset), err, sinks.ErrInvalid)
		}
		_, err := al.DueDeliveries(ctx, farFuture, -1)
		wantErr(t, "DueDeliveries with limit -1", err, sinks.ErrInvalid)
		checkDue(t, al, "DueDeliveries with limit 0", farFuture, 0, nil)
		for _, bad := range []string{"a\x00b", "a\xffb"} {
			wantErr(t, fmt.Sprintf("PostponeDelivery with error %q", bad), al.PostponeDelivery(ctx, a.ID, 1, at(5), bad), sinks.ErrInvalid)
		}
		checkDue(t, al, "DueDeliveries after invalid postpones", farFuture, 10, []model.Delivery{pending(a)})
	})

	t.Run("ConcurrentAdds", func(t *testing.T) {
		requireEmptyOutbox(t, al)
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		a := newAlert(app, model.AlertCrashSpike, "g", "h", at(1))
		finishLater(t, al, a.ID)
		const n = 8
		added := make([]bool, n)
		errs := race(n, func(i int) error {
			var err error
			added[i], err = al.AddAlert(ctx, a, i%2 == 0) // who wins decides on the delivery
			return err
		})
		winner := -1
		for i, err := range errs {
			wantErr(t, "concurrent AddAlert", err, nil)
			if added[i] {
				if winner >= 0 {
					t.Errorf("concurrent AddAlert: calls %d and %d both added the alert", winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatal("concurrent AddAlert: no call added the alert")
		}
		checkAppAlerts(t, al, "AppAlerts", app.ID, at(-100), at(100), 10, 0, []model.Alert{a})
		var due []model.Delivery
		if winner%2 == 0 {
			due = []model.Delivery{pending(a)}
		}
		checkDue(t, al, fmt.Sprintf("DueDeliveries (call %d added it)", winner), farFuture, 10, due)
	})

	t.Run("Deadline", func(t *testing.T) {
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		a := newAlert(app, model.AlertCrashSpike, "g", "h", at(1))
		addAlert(t, al, a, true, true)
		expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
		defer cancel()
		unknown := uuid.New()
		calls := map[string]error{}
		_, calls["AddAlert"] = al.AddAlert(expired, newAlert(app, model.AlertCrashSpike, "g", "h2", at(2)), true)
		_, calls["AddAlert(unknown app)"] = al.AddAlert(expired, newAlert(model.App{ID: unknown}, model.AlertCrashSpike, "g", "h", at(2)), true)
		_, calls["AppAlerts"] = al.AppAlerts(expired, app.ID, at(-100), at(100), 10, 0)
		_, calls["LatestAlerts"] = al.LatestAlerts(expired, app.ID, at(-100))
		_, calls["DueDeliveries"] = al.DueDeliveries(expired, farFuture, 10)
		calls["PostponeDelivery"] = al.PostponeDelivery(expired, a.ID, 1, at(5), "e")
		calls["PostponeDelivery(unknown)"] = al.PostponeDelivery(expired, unknown, 1, at(5), "e")
		calls["FinishDelivery"] = al.FinishDelivery(expired, unknown)
		for name, err := range calls {
			if err == nil {
				continue
			}
			var ue *sinks.UnavailableError
			if !errors.Is(err, sinks.ErrUnavailable) || !errors.As(err, &ue) || ue.Store != sinks.StoreMeta {
				t.Errorf("%s with an expired deadline: %v, want nil or ErrUnavailable of the %s store", name, err, sinks.StoreMeta)
			}
			if errors.Is(err, sinks.ErrNotFound) {
				t.Errorf("%s with an expired deadline: %v is ErrNotFound", name, err)
			}
		}
		finishLater(t, al, newAlert(app, model.AlertCrashSpike, "g", "h2", at(2)).ID)
		// The store still works afterwards.
		got, err := al.AppAlerts(ctx, app.ID, at(1), at(1).Add(us), 10, 0)
		wantErr(t, "AppAlerts after expired calls", err, nil)
		if len(got) != 1 || got[0].ID != a.ID {
			t.Errorf("AppAlerts after expired calls = %+v, want the alert", got)
		}
	})
}

func testAlertDeliveries(t *testing.T, s sinks.MetaStore) {
	ctx := t.Context()
	al := as[sinks.Alerts](t, s)
	us := time.Microsecond

	t.Run("Due", func(t *testing.T) {
		requireEmptyOutbox(t, al)
		_, tm := mustUser(t, s, at(0))
		_, tm2 := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(0))
		b, _ := mustApp(t, s, tm2.ID, at(0))
		mk := func(app model.App, entity string, c time.Time, id uuid.UUID) model.Alert {
			return withID(newAlert(app, model.AlertCrashSpike, entity, "", c), id)
		}
		// At at(1) one of each app; the tie goes to the lower id, in either app.
		lo1 := mk(b, "lo1", at(1), idWith(0x10))
		hi1 := mk(a, "hi1", at(1), idWith(0xe0))
		a2 := mk(a, "a2", at(2), uuid.New())
		b3 := mk(b, "b3", at(3), idWith(0x00))
		a3 := mk(a, "a3", at(3), idWith(0x80))
		b4 := mk(b, "b4", at(4), uuid.New())
		quiet := mk(a, "quiet", at(1).Add(-us), uuid.New()) // stored without delivery
		for _, x := range []model.Alert{b4, a3, hi1, a2, lo1, b3} {
			addAlert(t, al, x, true, true)
		}
		addAlert(t, al, quiet, false, true)
		p := pending
		cases := []struct {
			name  string
			now   time.Time
			limit int
			want  []model.Delivery
		}{
			{"before the first", at(1).Add(-us), 10, nil},
			{"at the first", at(1), 10, []model.Delivery{p(lo1), p(hi1)}},
			{"limit 1", at(1), 1, []model.Delivery{p(lo1)}},
			{"limit 0", farFuture, 0, nil},
			{"a microsecond before the next", at(2).Add(-us), 10, []model.Delivery{p(lo1), p(hi1)}},
			{"now in another zone", at(2).In(west), 10, []model.Delivery{p(lo1), p(hi1), p(a2)}},
			{"a limit within a tie", at(3), 4, []model.Delivery{p(lo1), p(hi1), p(a2), p(b3)}},
			{"all", at(4), 10, []model.Delivery{p(lo1), p(hi1), p(a2), p(b3), p(a3), p(b4)}},
			{"all, limit exact", farFuture, 6, []model.Delivery{p(lo1), p(hi1), p(a2), p(b3), p(a3), p(b4)}},
			{"limit 5", farFuture, 5, []model.Delivery{p(lo1), p(hi1), p(a2), p(b3), p(a3)}},
		}
		for _, tc := range cases {
			checkDue(t, al, fmt.Sprintf("DueDeliveries %s (limit %d)", tc.name, tc.limit), tc.now, tc.limit, tc.want)
		}
	})

	t.Run("Postpone", func(t *testing.T) {
		requireEmptyOutbox(t, al)
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		x := newAlert(app, model.AlertCrashSpike, "x", "", at(1))
		y := newAlert(app, model.AlertBugReport, "y", "", at(2))
		quiet := newAlert(app, model.AlertBugReport, "quiet", "", at(1))
		addAlert(t, al, x, true, true)
		addAlert(t, al, y, true, true)
		addAlert(t, al, quiet, false, true)

		wantErr(t, "PostponeDelivery", al.PostponeDelivery(ctx, x.ID, 1, at(5), "HTTP 500: «boom»"), nil)
		x1 := model.Delivery{Alert: x, Attempts: 1, NextAttempt: at(5), LastError: "HTTP 500: «boom»"}
		checkDue(t, al, "DueDeliveries before the next attempt", at(5).Add(-us), 10, []model.Delivery{pending(y)})
		checkDue(t, al, "DueDeliveries at the next attempt", at(5), 10, []model.Delivery{pending(y), x1})

		// Postponing again replaces attempts, time and error; in another zone it is the same instant.
		next := at(7).In(west)
		wantErr(t, "PostponeDelivery again", al.PostponeDelivery(ctx, x.ID, 2, next, ""), nil)
		x2 := model.Delivery{Alert: x, Attempts: 2, NextAttempt: next}
		checkDue(t, al, "DueDeliveries at the old next attempt", at(5), 10, []model.Delivery{pending(y)})
		checkDue(t, al, "DueDeliveries at the new next attempt", at(7), 10, []model.Delivery{pending(y), x2})

		// Earlier than before is stored as given too.
		wantErr(t, "PostponeDelivery to an earlier time", al.PostponeDelivery(ctx, y.ID, 3, at(0), "x"), nil)
		y3 := model.Delivery{Alert: y, Attempts: 3, NextAttempt: at(0), LastError: "x"}
		checkDue(t, al, "DueDeliveries after moving one earlier", farFuture, 10, []model.Delivery{y3, x2})

		// The same next attempt: by id.
		wantErr(t, "PostponeDelivery to the same time", al.PostponeDelivery(ctx, y.ID, 4, next, "y"), nil)
		y4 := model.Delivery{Alert: y, Attempts: 4, NextAttempt: next, LastError: "y"}
		want := []model.Delivery{x2, y4}
		if bytes.Compare(x.ID[:], y.ID[:]) > 0 {
			want = []model.Delivery{y4, x2}
		}
		checkDue(t, al, "DueDeliveries with a tie", farFuture, 10, want)

		for name, id := range map[string]uuid.UUID{"an unknown alert": uuid.New(), "an alert added without delivery": quiet.ID} {
			wantErr(t, "PostponeDelivery of "+name, al.PostponeDelivery(ctx, id, 1, at(9), "e"), sinks.ErrNotFound)
		}
		wantErr(t, "FinishDelivery", al.FinishDelivery(ctx, x.ID), nil)
		wantErr(t, "PostponeDelivery of a finished delivery", al.PostponeDelivery(ctx, x.ID, 3, at(9), "e"), sinks.ErrNotFound)
		checkDue(t, al, "DueDeliveries after the misses", farFuture, 10, []model.Delivery{y4})
		// The alerts themselves are as added.
		checkAppAlerts(t, al, "AppAlerts", app.ID, at(-100), at(100), 10, 0,
			refAppAlerts([]model.Alert{x, y, quiet}, app.ID, at(-100), at(100), 10, 0))
	})

	t.Run("Finish", func(t *testing.T) {
		requireEmptyOutbox(t, al)
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		x := newAlert(app, model.AlertNewCrashGroup, "x", "", at(1))
		y := newAlert(app, model.AlertNewANRGroup, "y", "", at(2))
		z := newAlert(app, model.AlertBugReport, "z", "", at(3))
		for _, a := range []model.Alert{x, y, z} {
			addAlert(t, al, a, true, true)
		}
		wantErr(t, "FinishDelivery", al.FinishDelivery(ctx, x.ID), nil)
		checkDue(t, al, "DueDeliveries after FinishDelivery", farFuture, 10, []model.Delivery{pending(y), pending(z)})
		wantErr(t, "FinishDelivery again", al.FinishDelivery(ctx, x.ID), nil)
		wantErr(t, "FinishDelivery of an unknown alert", al.FinishDelivery(ctx, uuid.New()), nil)
		// A postponed delivery is finished from where it was moved to.
		wantErr(t, "PostponeDelivery", al.PostponeDelivery(ctx, y.ID, 1, at(9), "e"), nil)
		wantErr(t, "FinishDelivery of a postponed delivery", al.FinishDelivery(ctx, y.ID), nil)
		checkDue(t, al, "DueDeliveries after finishing the postponed one", farFuture, 10, []model.Delivery{pending(z)})
		wantErr(t, "FinishDelivery", al.FinishDelivery(ctx, z.ID), nil)
		checkDue(t, al, "DueDeliveries after finishing all", farFuture, 10, nil)
		// Finishing keeps the alerts.
		want := []model.Alert{z, y, x}
		checkAppAlerts(t, al, "AppAlerts after finishing", app.ID, at(-100), at(100), 10, 0, want)
		checkLatest(t, al, "LatestAlerts after finishing", app.ID, at(-100), want)
	})

	t.Run("ConcurrentPostponeAndFinish", func(t *testing.T) {
		requireEmptyOutbox(t, al)
		_, tm := mustUser(t, s, at(0))
		app, _ := mustApp(t, s, tm.ID, at(0))
		const rounds, n = 4, 6
		for r := range rounds {
			a := newAlert(app, model.AlertCrashSpike, "g", fmt.Sprint(r), at(r))
			addAlert(t, al, a, true, true)
			// Postponers race one finisher: each postpone succeeds before the finish or finds
			// nothing pending after it; the finish always leaves nothing pending.
			errs := race(n, func(i int) error {
				if i == 0 {
					return al.FinishDelivery(ctx, a.ID)
				}
				return al.PostponeDelivery(ctx, a.ID, i, at(r).Add(time.Duration(i)*us), fmt.Sprint(i))
			})
			wantErr(t, "FinishDelivery racing postpones", errs[0], nil)
			_, _, unexpected := tally(errs[1:], sinks.ErrNotFound)
			for _, err := range unexpected {
				t.Errorf("PostponeDelivery racing FinishDelivery: %v, want nil or ErrNotFound", err)
			}
			checkDue(t, al, "DueDeliveries after the race", farFuture, 10, nil)
		}
	})
}
