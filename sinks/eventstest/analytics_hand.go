package eventstest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// testHandWritten states the answers for app C (handData) and for app A's edge session
// literally, worked out by hand from the contract, and checks the brute force against them
// too: a mistake shared by the brute force and a store fails here.
func testHandWritten(t *testing.T, s AnalyticsStore, d *anaData) {
	h := &d.hand
	C := d.C
	T0, T1 := h.T0, h.T1
	const (
		G1 = "43523acd437b6107f9055381d49a7ba0" // md5("TypeError:boom:render:App.js")
		H1 = "ae8cececbca0999be54d3e55087a1733" // md5("java.io.IOException:readFrom:HttpClient.kt")
		A1 = "51fd34a1191bebcc7f6bb4d64fefdffd" // md5("sh.measure.android.anr.AnrError:deadLock:ExceptionDemoActivity.kt")
	)
	if h.G1 != G1 || h.H1 != H1 || h.A1 != A1 {
		t.Fatalf("hand groups %s %s %s: DeriveFacts no longer gives the documented ids", h.G1, h.H1, h.A1)
	}
	id := func(n int) uuid.UUID { return h.e[n].ID }
	vA, vB, vB2, vC := h.vA, h.vB, h.vB2, h.vC
	g1 := func(line int32) model.IssueDisplay {
		return model.IssueDisplay{Type: "TypeError", Message: "boom", MethodName: "render", FileName: "App.js", LineNumber: line, Severity: "fatal"}
	}
	h1 := model.IssueDisplay{Type: "java.io.IOException", Message: "closed", MethodName: "readFrom", FileName: "HttpClient.kt", LineNumber: 77, Severity: "handled"}
	a1 := model.IssueDisplay{Type: "sh.measure.android.anr.AnrError", Message: "Application Not Responding for at least 5000 ms.", MethodName: "deadLock", FileName: "ExceptionDemoActivity.kt", LineNumber: 66}
	hour := int64(3600) * sec
	win := model.EventFilter{App: C, From: T0 - hour, To: T1 + hour}
	march, april := utcNs(2025, 3, 1, 0, 0, 0, 0), utcNs(2025, 4, 1, 0, 0, 0, 0)
	mar31 := utcNs(2025, 3, 31, 0, 0, 0, 0)
	crash := []model.IssueClass{model.ClassCrash}

	cells := func(t *testing.T, q model.IssueQuery, by model.Cells, want []model.IssueCell) {
		t.Helper()
		got, err := s.IssueCells(ctx(t), &q, by)
		if err != nil {
			t.Fatalf("IssueCells: %v", err)
		}
		compareKeyed(t, "IssueCells", got, want, cellKey)
		compareKeyed(t, "brute force", d.ref.IssueCells(&q, by), want, cellKey)
	}
	t.Run("IssueCells", func(t *testing.T) {
		// G1 has 3 crashes in 1.0 (10): e4, e7 and e9, the latest e9. e14 was written three
		// times and counts once.
		cells(t, model.IssueQuery{EventFilter: win}, model.Cells{}, []model.IssueCell{
			{GroupID: G1, Class: model.ClassCrash, Version: vA, Count: 3, FirstTime: T0 - 30*sec, LastTime: T1 + sec, LastID: id(9), Last: g1(44)},
			{GroupID: G1, Class: model.ClassCrash, Version: vB, Count: 1, FirstTime: T1 + 13*sec, LastTime: T1 + 13*sec, LastID: id(14), Last: g1(45)},
			{GroupID: G1, Class: model.ClassCrash, Version: vB2, Count: 1, FirstTime: T1 + 21*sec, LastTime: T1 + 21*sec, LastID: id(16), Last: g1(46)},
			{GroupID: H1, Class: model.ClassHandled, Version: vB, Count: 1, FirstTime: T1 + 11*sec, LastTime: T1 + 11*sec, LastID: id(12), Last: h1},
			{GroupID: A1, Class: model.ClassANR, Version: vA, Count: 1, FirstTime: T1 + 2*sec, LastTime: T1 + 2*sec, LastID: id(10), Last: a1},
		})
		// e7 on the last nanosecond of March is in March's bucket.
		cells(t, model.IssueQuery{EventFilter: win, Classes: crash}, model.Cells{Bucketed: true, By: model.Buckets{Group: model.PlotMonths}}, []model.IssueCell{
			{GroupID: G1, Class: model.ClassCrash, Version: vA, Bucket: march, Count: 2, FirstTime: T0 - 30*sec, LastTime: T0, LastID: id(7), Last: g1(43)},
			{GroupID: G1, Class: model.ClassCrash, Version: vA, Bucket: april, Count: 1, FirstTime: T1 + sec, LastTime: T1 + sec, LastID: id(9), Last: g1(44)},
			{GroupID: G1, Class: model.ClassCrash, Version: vB, Bucket: april, Count: 1, FirstTime: T1 + 13*sec, LastTime: T1 + 13*sec, LastID: id(14), Last: g1(45)},
			{GroupID: G1, Class: model.ClassCrash, Version: vB2, Bucket: april, Count: 1, FirstTime: T1 + 21*sec, LastTime: T1 + 21*sec, LastID: id(16), Last: g1(46)},
		})
		// [T0-30s, T0): e4 on From is in, e7 on To is out.
		cells(t, model.IssueQuery{EventFilter: model.EventFilter{App: C, From: T0 - 30*sec, To: T0}}, model.Cells{Bucketed: true, By: model.Buckets{Group: model.PlotDays}}, []model.IssueCell{
			{GroupID: G1, Class: model.ClassCrash, Version: vA, Bucket: mar31, Count: 1, FirstTime: T0 - 30*sec, LastTime: T0 - 30*sec, LastID: id(4), Last: g1(42)},
		})
		// Only e14 is of 2.0 (20) and a crash; the UD filter leaves S1's events.
		cells(t, model.IssueQuery{EventFilter: model.EventFilter{App: C, From: win.From, To: win.To, Versions: []model.AppVersion{vB}}, Classes: crash}, model.Cells{}, []model.IssueCell{
			{GroupID: G1, Class: model.ClassCrash, Version: vB, Count: 1, FirstTime: T1 + 13*sec, LastTime: T1 + 13*sec, LastID: id(14), Last: g1(45)},
		})
		cells(t, model.IssueQuery{EventFilter: model.EventFilter{App: C, From: win.From, To: win.To, UD: mustUD(t, udCmp("plan", "string", "eq", `"pro"`))}}, model.Cells{}, []model.IssueCell{
			{GroupID: G1, Class: model.ClassCrash, Version: vA, Count: 2, FirstTime: T0 - 30*sec, LastTime: T0, LastID: id(7), Last: g1(43)},
		})
		// A severity narrows exceptions only: with every class, the ANR stays; severity=handled
		// alone (model.IssueKinds: exceptions) leaves it out.
		cells(t, model.IssueQuery{EventFilter: win, Severities: []string{"handled"}}, model.Cells{}, []model.IssueCell{
			{GroupID: A1, Class: model.ClassANR, Version: vA, Count: 1, FirstTime: T1 + 2*sec, LastTime: T1 + 2*sec, LastID: id(10), Last: a1},
			{GroupID: H1, Class: model.ClassHandled, Version: vB, Count: 1, FirstTime: T1 + 11*sec, LastTime: T1 + 11*sec, LastID: id(12), Last: h1},
		})
		cells(t, model.IssueQuery{EventFilter: win, Classes: []model.IssueClass{model.ClassCrash, model.ClassHandled}, Severities: []string{"handled"}}, model.Cells{}, []model.IssueCell{
			{GroupID: H1, Class: model.ClassHandled, Version: vB, Count: 1, FirstTime: T1 + 11*sec, LastTime: T1 + 11*sec, LastID: id(12), Last: h1},
		})
	})

	t.Run("EdgeBuckets", func(t *testing.T) {
		// App A's edge session: OOM crashes on both sides of a month, hour and minute edge.
		q := model.IssueQuery{EventFilter: model.EventFilter{App: d.A, From: anaBase, To: anaBase + 40*day, DeviceNames: []string{edgeDevice}}}
		want := map[model.PlotTimeGroup]map[string]uint64{
			model.PlotMonths:  {"2025-03-01T00:00:00Z": 1, "2025-04-01T00:00:00Z": 5},
			model.PlotDays:    {"2025-03-31T00:00:00Z": 1, "2025-04-01T00:00:00Z": 1, "2025-04-02T00:00:00Z": 4},
			model.PlotHours:   {"2025-03-31T23:00:00Z": 1, "2025-04-01T00:00:00Z": 1, "2025-04-02T09:00:00Z": 1, "2025-04-02T10:00:00Z": 3},
			model.PlotMinutes: {"2025-03-31T23:59:00Z": 1, "2025-04-01T00:00:00Z": 1, "2025-04-02T09:59:00Z": 1, "2025-04-02T10:00:00Z": 1, "2025-04-02T10:06:00Z": 1, "2025-04-02T10:07:00Z": 1},
		}
		for by, counts := range want {
			got, err := s.IssueCells(ctx(t), &q, model.Cells{Bucketed: true, By: model.Buckets{Group: by}})
			if err != nil {
				t.Fatalf("IssueCells: %v", err)
			}
			for name, cs := range map[string][]model.IssueCell{"store": got, "brute force": d.ref.IssueCells(&q, model.Cells{Bucketed: true, By: model.Buckets{Group: by}})} {
				m := map[string]uint64{}
				for _, c := range cs {
					if c.GroupID != d.groups[ikJVMOOM] || c.Class != model.ClassCrash || c.Version != anaVersions[2] {
						t.Errorf("%s %s: unexpected cell %+v", name, by, c)
					}
					m[showTime(c.Bucket)] += c.Count
				}
				if diff(m, counts) != "" || len(m) != len(counts) {
					t.Errorf("%s %s: counts per bucket %v, want %v", name, by, m, counts)
				}
			}
		}
	})

	t.Run("ZoneBuckets", func(t *testing.T) { testZoneBucketsHand(t, s, d) })

	t.Run("IssueEvents", func(t *testing.T) {
		q := model.IssueQuery{EventFilter: win}
		pages := []struct {
			page model.EventPage
			want []int
		}{
			{model.EventPage{Limit: 3}, []int{16, 14, 12}},
			{model.EventPage{Key: &model.EventKey{Timestamp: T1 + 11*sec, ID: id(12)}, Limit: 3}, []int{10, 9, 7}},
			{model.EventPage{Key: &model.EventKey{Timestamp: T0, ID: id(7)}, Limit: 3}, []int{4}},
			{model.EventPage{Key: &model.EventKey{Timestamp: T0 - 30*sec, ID: id(4)}, Limit: 3}, nil},
			{model.EventPage{Key: &model.EventKey{Timestamp: T0 - 30*sec, ID: id(4)}, Limit: 2, Backward: true}, []int{9, 7}},
			{model.EventPage{Key: &model.EventKey{Timestamp: T1 + 2*sec, ID: id(10)}, Limit: 5, Backward: true}, []int{16, 14, 12}},
			{model.EventPage{Key: &model.EventKey{Timestamp: T1 + 21*sec, ID: id(16)}, Limit: 5, Backward: true}, nil},
		}
		list := d.ref.IssueList(&q)
		for _, p := range pages {
			want := make([]model.Event, len(p.want))
			for i, n := range p.want {
				want[i] = h.e[n]
			}
			got, err := s.IssueEvents(ctx(t), &q, p.page)
			if err != nil {
				t.Fatalf("IssueEvents: %v", err)
			}
			compareEvents(t, "IssueEvents", got, want)
			compareEvents(t, "brute force", PageOf(list, p.page), want)
		}
	})

	t.Run("SessionBuckets", func(t *testing.T) {
		check := func(f model.EventFilter, want []model.SessionBucket) {
			t.Helper()
			got, err := s.SessionBuckets(ctx(t), &f, model.Buckets{})
			if err != nil {
				t.Fatalf("SessionBuckets: %v", err)
			}
			compareKeyed(t, "SessionBuckets", got, want, bucketKey)
			compareKeyed(t, "brute force", d.ref.SessionBuckets(&f, model.Buckets{}), want, bucketKey)
		}
		// S4 counts for 1.0 (10) by its launch and for 2.0 (21) by its crash, which is
		// crashed only in 2.0 (21).
		check(win, []model.SessionBucket{
			{Version: vA, Bucket: mar31, Sessions: 1, Crashed: 1},
			{Version: vA, Bucket: april, Sessions: 2, Crashed: 1, WithANR: 1},
			{Version: vB, Bucket: april, Sessions: 1, Crashed: 1},
			{Version: vB2, Bucket: april, Sessions: 2, Crashed: 1},
			{Version: vC, Bucket: april, Sessions: 1},
		})
		f := win
		f.UD = mustUD(t, udCmp("plan", "string", "eq", `"pro"`))
		check(f, []model.SessionBucket{{Version: vA, Bucket: mar31, Sessions: 1, Crashed: 1}})
	})

	t.Run("Metrics", func(t *testing.T) {
		cases := []struct {
			name     string
			from, to int64
			sel      *model.AppVersion
			want     model.MetricsInput
		}{
			{"1.0 (10)", win.From, win.To, &vA, model.MetricsInput{AllSessions: 6,
				Selected:       model.SessionCounts{Sessions: 3, Crashed: 2, CrashedForeground: 1, ANR: 1, ANRForeground: 1},
				Others:         model.SessionCounts{Sessions: 4, Crashed: 2, CrashedForeground: 2},
				SelectedLaunch: model.Launches{Cold: model.LaunchSummary{Count: 1, P95: 500}, Hot: model.LaunchSummary{Count: 1, P95: 20}},
				OthersLaunch:   model.Launches{Warm: model.LaunchSummary{Count: 1, P95: 300}}}},
			{"no version", win.From, win.To, nil, model.MetricsInput{AllSessions: 6,
				Selected:       model.SessionCounts{Sessions: 6, Crashed: 4, CrashedForeground: 3, ANR: 1, ANRForeground: 1},
				SelectedLaunch: model.Launches{Cold: model.LaunchSummary{Count: 1, P95: 500}, Warm: model.LaunchSummary{Count: 1, P95: 300}, Hot: model.LaunchSummary{Count: 1, P95: 20}}}},
			{"April only", T1, win.To, &vA, model.MetricsInput{AllSessions: 5,
				Selected:       model.SessionCounts{Sessions: 2, Crashed: 1, ANR: 1, ANRForeground: 1},
				Others:         model.SessionCounts{Sessions: 4, Crashed: 2, CrashedForeground: 2},
				SelectedLaunch: model.Launches{Cold: model.LaunchSummary{Count: 1, P95: 500}, Hot: model.LaunchSummary{Count: 1, P95: 20}},
				OthersLaunch:   model.Launches{Warm: model.LaunchSummary{Count: 1, P95: 300}}}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				got, err := s.Metrics(ctx(t), C, c.from, c.to, c.sel)
				if err != nil {
					t.Fatalf("Metrics: %v", err)
				}
				checkMetrics(t, got, c.want)
				if df := diff(d.ref.Metrics(C, c.from, c.to, c.sel), c.want); df != "" {
					t.Errorf("brute force differs:\n%s", df)
				}
			})
		}
	})

	t.Run("FilterValues", func(t *testing.T) {
		one := func(s string) []string { return []string{s} }
		android := model.OSVersion{Name: "android", Version: "33"}
		cases := []struct {
			class model.IssueClass
			want  model.FilterValues
		}{
			// 2.0 (21), 2.0 (20) and 10.0 (5) are first seen together at T1+10s: name, then
			// code, descending.
			{0, model.FilterValues{Versions: []model.AppVersion{vB2, vB, vC, vA},
				OSVersions:  []model.OSVersion{android, {Name: "iOS", Version: "18.3.1"}},
				DeviceNames: []string{"iPhone 16 Pro", "sunfish"}, DeviceManufacturers: []string{"Apple", "Google"},
				Locales: []string{"en-US", "en_IN"}, NetworkProviders: one("unknown"), NetworkTypes: one("wifi"), NetworkGenerations: one("unknown"),
				UDKeys: []model.UDKey{{Key: "plan", Type: "int64"}, {Key: "plan", Type: "string"}, {Key: "premium", Type: "bool"}, {Key: "ratio", Type: "float64"}, {Key: "retries", Type: "int64"}}}},
			{model.ClassCrash, model.FilterValues{Versions: []model.AppVersion{vB2, vB, vA}, OSVersions: []model.OSVersion{android},
				DeviceNames: one("sunfish"), DeviceManufacturers: one("Google"), Locales: one("en-US"), NetworkProviders: one("unknown"),
				NetworkTypes: one("wifi"), NetworkGenerations: one("unknown"), UDKeys: []model.UDKey{{Key: "plan", Type: "string"}}}},
			{model.ClassANR, model.FilterValues{Versions: []model.AppVersion{vA}, OSVersions: []model.OSVersion{android},
				DeviceNames: one("sunfish"), DeviceManufacturers: one("Google"), Locales: one("en-US"), NetworkProviders: one("unknown"),
				NetworkTypes: one("wifi"), NetworkGenerations: one("unknown")}},
			{model.ClassHandled, model.FilterValues{Versions: []model.AppVersion{vB}, OSVersions: []model.OSVersion{android},
				DeviceNames: one("sunfish"), DeviceManufacturers: one("Google"), Locales: one("en-US"), NetworkProviders: one("unknown"),
				NetworkTypes: one("wifi"), NetworkGenerations: one("unknown")}},
		}
		for _, c := range cases {
			var classes []model.IssueClass
			if c.class != 0 {
				classes = []model.IssueClass{c.class}
			}
			got, err := s.FilterValues(ctx(t), C, classes)
			if err != nil {
				t.Fatalf("FilterValues: %v", err)
			}
			if df := diff(NormFilterValues(got), c.want); df != "" {
				t.Errorf("FilterValues(class %q) differs:\n%s", c.class, df)
			}
			if df := diff(d.ref.FilterValues(C, classes), c.want); df != "" {
				t.Errorf("brute force (class %q) differs:\n%s", c.class, df)
			}
		}
	})

	t.Run("SessionWalks", func(t *testing.T) {
		g1w := func(ts int64, v model.AppVersion) model.WalkEvent {
			return model.WalkEvent{Timestamp: ts, Version: v, GroupID: G1, Class: model.ClassCrash, Title: "TypeError@App.js"}
		}
		screen := func(ts int64, v model.AppVersion, name string) model.WalkEvent {
			return model.WalkEvent{Timestamp: ts, Version: v, Screen: name}
		}
		a1w := model.WalkEvent{Timestamp: T1 + 2*sec, Version: vA, GroupID: A1, Class: model.ClassANR, Title: "sh.measure.android.anr.AnrError@ExceptionDemoActivity.kt"}
		cases := []struct {
			name string
			q    model.WalkQuery
			want map[uuid.UUID][]model.WalkEvent
		}{
			// S1 has no walk event in April, S6 none at all; S3's handled exception is no walk
			// event.
			{"April", model.WalkQuery{App: C, From: T1, To: T1 + hour}, map[uuid.UUID][]model.WalkEvent{
				h.S[2]: {g1w(T1+sec, vA), a1w},
				h.S[3]: {screen(T1+10*sec, vB, "Home"), g1w(T1+13*sec, vB)},
				h.S[4]: {g1w(T1+21*sec, vB2)},
				h.S[5]: {screen(T1+10*sec, vC, "Settings")},
			}},
			// Only S1's e7 is in the window, and S1's walk is read whole.
			{"group", model.WalkQuery{App: C, From: T0 - sec, To: T1, GroupID: G1, Class: model.ClassCrash}, map[uuid.UUID][]model.WalkEvent{
				h.S[1]: {screen(T0-60*sec, vA, "Home"), g1w(T0-30*sec, vA), screen(T0-10*sec, vA, "Cart"), g1w(T0, vA)},
			}},
			{"anr group", model.WalkQuery{App: C, From: win.From, To: win.To, GroupID: A1, Class: model.ClassANR}, map[uuid.UUID][]model.WalkEvent{
				h.S[2]: {g1w(T1+sec, vA), a1w},
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				checkWalks(t, s, &c.q, c.want)
				if df := diff(d.ref.SessionWalks(&c.q), c.want); df != "" {
					t.Errorf("brute force differs:\n%s", df)
				}
			})
		}
	})

	t.Run("PathSessions", func(t *testing.T) {
		cases := []struct {
			name     string
			class    model.IssueClass
			group    string
			n, steps int
			want     [][]int
		}{
			// By their latest G1 crash: S4 (e16), S3 (e14), S2 (e9), S1 (e7). S2 stops at e9,
			// before its ANR; S1 leaves out its cpu and memory samples.
			{"two sessions three steps", model.ClassCrash, G1, 2, 3, [][]int{{15, 16}, {12, 13, 14}}},
			{"every session", model.ClassCrash, G1, 10, 10, [][]int{{15, 16}, {11, 12, 13, 14}, {8, 9}, {1, 2, 4, 6, 7}}},
			{"anr", model.ClassANR, A1, 5, 1, [][]int{{10}}},
			{"handled", model.ClassHandled, H1, 1, 2, [][]int{{11, 12}}},
			{"class without the group", model.ClassCrash, H1, 5, 5, nil},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var want [][]model.Event
				for _, p := range c.want {
					var path []model.Event
					for _, n := range p {
						path = append(path, h.e[n])
					}
					want = append(want, path)
				}
				got, err := s.PathSessions(ctx(t), C, c.class, c.group, c.n, c.steps)
				if err != nil {
					t.Fatalf("PathSessions: %v", err)
				}
				checkPaths(t, got, want)
				checkPaths(t, d.ref.PathSessions(C, c.class, c.group, c.n, c.steps), want)
			})
		}
	})
}

// testZoneBucketsHand states app Z's buckets in plotZones literally: one crash (and one
// crashed session) at each of zoneEdges, E1…E16, counted per bucket (hours by their start with
// its offset, as the wall clock repeats an hour; days and months by model.Buckets.Label), by
// IssueCells and SessionBuckets of the store and the brute force.
func testZoneBucketsHand(t *testing.T, s AnalyticsStore, d *anaData) {
	want := map[string]map[model.PlotTimeGroup]map[string]uint64{
		"America/New_York": {
			// E3–E5 share 01:00 EST; E6 is the next hour, 03:00 EDT. 2 November has 01:00 twice
			// (E13 in EDT, E14 in EST).
			model.PlotHours: {
				"2025-03-08T23:00:00-05:00": 1, "2025-03-09T00:00:00-05:00": 1, "2025-03-09T01:00:00-05:00": 3,
				"2025-03-09T03:00:00-04:00": 1, "2025-03-09T23:00:00-04:00": 1, "2025-03-31T14:00:00-04:00": 2,
				"2025-10-31T23:00:00-04:00": 1, "2025-11-01T00:00:00-04:00": 1, "2025-11-02T00:00:00-04:00": 1,
				"2025-11-02T01:00:00-04:00": 1, "2025-11-02T01:00:00-05:00": 1, "2025-11-02T23:00:00-05:00": 1,
				"2025-11-03T00:00:00-05:00": 1,
			},
			// 9 March (23 hours) holds E2–E7, 2 November (25 hours) E12–E15.
			model.PlotDays:   {"2025-03-08": 1, "2025-03-09": 6, "2025-03-31": 2, "2025-10-31": 1, "2025-11-01": 1, "2025-11-02": 4, "2025-11-03": 1},
			model.PlotMonths: {"2025-03-01": 9, "2025-10-01": 1, "2025-11-01": 6},
		},
		"Asia/Kolkata": {
			model.PlotHours: {
				"2025-03-09T10:00:00+05:30": 2, "2025-03-09T11:00:00+05:30": 1, "2025-03-09T12:00:00+05:30": 3,
				"2025-03-10T09:00:00+05:30": 1, "2025-03-31T23:00:00+05:30": 1, "2025-04-01T00:00:00+05:30": 1,
				"2025-11-01T09:00:00+05:30": 2, "2025-11-02T09:00:00+05:30": 1, "2025-11-02T11:00:00+05:30": 1,
				"2025-11-02T12:00:00+05:30": 1, "2025-11-03T10:00:00+05:30": 2,
			},
			model.PlotDays:   {"2025-03-09": 6, "2025-03-10": 1, "2025-03-31": 1, "2025-04-01": 1, "2025-11-01": 2, "2025-11-02": 3, "2025-11-03": 2},
			model.PlotMonths: {"2025-03-01": 8, "2025-04-01": 1, "2025-11-01": 7},
		},
	}
	f := zoneWindow(d)
	q := model.IssueQuery{EventFilter: f}
	for zone, groups := range want {
		for g, counts := range groups {
			b, err := model.ParseBuckets(g.String(), zone)
			if err != nil {
				t.Fatal(err)
			}
			key := func(ns int64) string {
				if g == model.PlotHours {
					return time.Unix(0, ns).In(b.Loc).Format(time.RFC3339)
				}
				return b.Label(time.Unix(0, ns))
			}
			got, err := s.IssueCells(ctx(t), &q, model.Cells{Bucketed: true, By: b})
			if err != nil {
				t.Fatalf("IssueCells(%s): %v", b, err)
			}
			sessions, err := s.SessionBuckets(ctx(t), &f, b)
			if err != nil {
				t.Fatalf("SessionBuckets(%s): %v", b, err)
			}
			for name, cs := range map[string][]model.IssueCell{"store": got, "brute force": d.ref.IssueCells(&q, model.Cells{Bucketed: true, By: b})} {
				m := map[string]uint64{}
				for _, c := range cs {
					m[key(c.Bucket)] += c.Count
					if start := b.Start(time.Unix(0, c.Bucket)).UnixNano(); start != c.Bucket {
						t.Errorf("%s %s: cell bucket %s is not a bucket start", name, b, showTime(c.Bucket))
					}
				}
				if diff(m, counts) != "" || len(m) != len(counts) {
					t.Errorf("%s %s: crashes per bucket %v, want %v", name, b, m, counts)
				}
			}
			for name, bs := range map[string][]model.SessionBucket{"store": sessions, "brute force": d.ref.SessionBuckets(&f, b)} {
				m, crashed := map[string]uint64{}, map[string]uint64{}
				for _, x := range bs {
					m[key(x.Bucket)] += x.Sessions
					crashed[key(x.Bucket)] += x.Crashed
				}
				if diff(m, counts) != "" || len(m) != len(counts) || diff(crashed, counts) != "" {
					t.Errorf("%s %s: sessions per bucket %v, crashed %v, want %v", name, b, m, crashed, counts)
				}
			}
		}
	}
}
