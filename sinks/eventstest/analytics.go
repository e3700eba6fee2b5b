package eventstest

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// AnalyticsStore is an event store that answers the analytics queries: both event stores are.
type AnalyticsStore interface {
	sinks.EventStore
	sinks.Analytics
	sinks.Distribution
}

// RunAnalytics checks the sinks.Analytics contract. open must return a fresh, empty store; the
// suite writes one dataset (analytics_data.go) into it and closes it at the end. Each answer
// is compared with a brute-force computation over the dataset by the model's Go definitions
// (Reference); app C's answers are also written out by hand, so that a mistake the
// brute force shares with a store is still caught. Call it inside t.Run("<backend>", …).
func RunAnalytics(t *testing.T, open func(t *testing.T) AnalyticsStore) {
	d := buildAnalyticsData(t)
	w := anaWindowsOf(d)
	checkDataset(t, d, w)
	s := open(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	c := ctx(t)
	for i, b := range d.batches {
		if err := s.WriteEvents(c, b); err != nil {
			t.Fatalf("WriteEvents (batch %d of %d): %v", i+1, len(d.batches), err)
		}
	}
	if err := s.WriteSpans(c, d.spans); err != nil {
		t.Fatalf("WriteSpans: %v", err)
	}
	spans := map[uuid.UUID]int64{}
	for _, sp := range d.spans {
		spans[sp.AppID]++
	}
	for _, app := range []uuid.UUID{d.A, d.B, d.C, d.Z} {
		checkCount(t, s, app, int64(len(d.rows[app])), spans[app])
	}
	if t.Failed() {
		t.FailNow() // without the dataset stored as written, no answer below means anything
	}

	t.Run("HandWritten", func(t *testing.T) { testHandWritten(t, s, d) })
	t.Run("IssueCells", func(t *testing.T) { testIssueCells(t, s, d, w) })
	t.Run("IssueEvents", func(t *testing.T) { testIssueEvents(t, s, d, w) })
	t.Run("SessionBuckets", func(t *testing.T) { testSessionBuckets(t, s, d, w) })
	t.Run("Metrics", func(t *testing.T) { testMetrics(t, s, d, w) })
	t.Run("FilterValues", func(t *testing.T) { testFilterValues(t, s, d) })
	t.Run("SessionWalks", func(t *testing.T) { testSessionWalks(t, s, d, w) })
	t.Run("JourneyFacts", func(t *testing.T) { testJourneyFacts(t, s, d, w) })
	t.Run("PathSessions", func(t *testing.T) { testPathSessions(t, s, d) })
	t.Run("Distribution", func(t *testing.T) { testDistribution(t, s, d, w) })
	// Last: it writes and deletes rows of an app of its own.
	t.Run("JourneyChanges", func(t *testing.T) { testJourneyChanges(t, s) })
}

// anaWindows are app A's query windows, [from, to). Their bounds are timestamps of stored
// events, so an event sits exactly on each bound.
type anaWindows struct {
	full, mid, tie, empty [2]int64
}

func anaWindowsOf(d *anaData) anaWindows {
	rows := d.rows[d.A]
	lo, hi := rows[0].Timestamp, rows[0].Timestamp
	var issues []int64
	for i := range rows {
		lo, hi = min(lo, rows[i].Timestamp), max(hi, rows[i].Timestamp)
		if model.ClassOf(rows[i].Type, &rows[i].Facts) != 0 {
			issues = append(issues, rows[i].Timestamp)
		}
	}
	sort.Slice(issues, func(i, j int) bool { return issues[i] < issues[j] })
	w := anaWindows{
		full:  [2]int64{lo, hi + 1},
		tie:   [2]int64{tieTime, tieTime + 2*int64(time.Millisecond)}, // tied ANRs sit on To
		empty: [2]int64{issues[len(issues)/2], issues[len(issues)/2]},
	}
	// The middle window: from about a fifth of the issue events to about 85% of them, moved
	// until a session in it has walk events before it.
	for i := len(issues) / 5; i < len(issues)/2; i++ {
		w.mid = [2]int64{issues[i], issues[len(issues)*17/20+i-len(issues)/5]}
		q := model.WalkQuery{App: d.A, From: w.mid[0], To: w.mid[1]}
		before := false
		for _, ws := range d.ref.SessionWalks(&q) {
			before = before || len(ws) > 0 && ws[0].Timestamp < q.From
		}
		if before {
			break
		}
	}
	return w
}

// checkDataset fails the suite when the dataset lacks what the cases rely on, so that no case
// passes vacuously.
func checkDataset(t *testing.T, d *anaData, w anaWindows) {
	t.Helper()
	for app, rows := range d.rows {
		ids := map[uuid.UUID]bool{}
		for i := range rows {
			if ids[rows[i].ID] {
				t.Fatalf("dataset: app %s has two events %s", app, rows[i].ID)
			}
			ids[rows[i].ID] = true
		}
	}
	checkTies(t, d)
	rows := d.rows[d.A]
	classes := map[model.IssueClass]int{}
	severities := map[string]bool{}
	frameworks := map[string]bool{}
	launches := map[string]int{}
	udTypes := map[model.UDType]bool{}
	var ties, noUD, noLaunchFacts int
	issueAt := map[int64]int{}
	for i := range rows {
		e := &rows[i]
		c := model.ClassOf(e.Type, &e.Facts)
		classes[c]++
		if c == model.ClassCrash || c == model.ClassHandled {
			severities[e.Facts.Issue.Severity] = true
			g, _ := model.GroupOf(e)
			frameworks[g.Framework] = true
		}
		if c != 0 {
			issueAt[e.Timestamp]++
		}
		launches[e.Facts.LaunchKind]++
		if strings.HasSuffix(e.Type, "_launch") && e.Facts.LaunchKind == "" {
			noLaunchFacts++
		}
		for _, u := range e.UserDefined {
			udTypes[u.Type] = true
		}
		if len(e.UserDefined) == 0 {
			noUD++
		}
	}
	for _, n := range issueAt {
		if n > 1 {
			ties += n
		}
	}
	for _, c := range model.AllIssueClasses {
		if classes[c] < 10 {
			t.Fatalf("dataset: only %d events of class %s", classes[c], c)
		}
	}
	for _, s := range []string{"fatal", "handled", "unhandled", ""} {
		if !severities[s] {
			t.Fatalf("dataset: no exception of severity %q", s)
		}
	}
	for _, f := range []string{model.FrameworkJVM, model.FrameworkApple, model.FrameworkDart, model.FrameworkJS} {
		if !frameworks[f] {
			t.Fatalf("dataset: no %s exception", f)
		}
	}
	for _, k := range []string{model.LaunchCold, model.LaunchWarm, model.LaunchHot} {
		if launches[k] < 3 {
			t.Fatalf("dataset: %d %s launches", launches[k], k)
		}
	}
	if ties < 20 || noUD == 0 || noLaunchFacts == 0 || len(udTypes) != 4 {
		t.Fatalf("dataset: %d issue events share a timestamp, %d without attributes, %d launches without facts, %d attribute types", ties, noUD, noLaunchFacts, len(udTypes))
	}
	ids := map[string]string{}
	for k, g := range d.groups {
		if o, ok := ids[g]; ok {
			t.Fatalf("dataset: issue kinds %s and %s share group %s", k, o, g)
		}
		ids[g] = k
	}
	if w.mid[0] >= w.mid[1] {
		t.Fatalf("dataset: empty middle window %v", w.mid)
	}
}

// checkTies fails the suite unless app A has the ties only the id settles: events of one
// session at one timestamp, a screen and a crash among them in both id orders (which screen the
// crash is on), an event at its session's latest crash's timestamp on each side of it (in the
// path or not), sessions whose latest crash of a group is at one time (path ranking), and two
// versions first seen at one time (FilterValues).
func checkTies(t *testing.T, d *anaData) {
	t.Helper()
	type at struct {
		session uuid.UUID
		ts      int64
	}
	byTime := map[at][]*model.Event{}
	first := map[model.AppVersion]int64{}
	rows := d.rows[d.A]
	for i := range rows {
		e := &rows[i]
		k := at{e.SessionID, e.Timestamp}
		byTime[k] = append(byTime[k], e)
		if f, ok := first[versionOf(e)]; !ok || e.Timestamp < f {
			first[versionOf(e)] = e.Timestamp
		}
	}
	var screenFirst, crashFirst, inPath, outOfPath int
	for _, evs := range byTime {
		for _, c := range evs {
			if model.ClassOf(c.Type, &c.Facts) != model.ClassCrash {
				continue
			}
			for _, o := range evs {
				switch {
				case o == c:
				case o.Facts.Screen != "" && newer(c, o):
					screenFirst++
				case o.Facts.Screen != "":
					crashFirst++
				case newer(c, o):
					inPath++
				default:
					outOfPath++
				}
			}
		}
	}
	ranked, latest := d.ref.pathRanking(d.A, model.ClassCrash, d.groups[ikJSTie])
	rankTies := 0
	for i := 1; i < len(ranked); i++ {
		if latest[ranked[i]].Timestamp == latest[ranked[i-1]].Timestamp {
			rankTies++
		}
	}
	seen := map[int64]bool{}
	versionTies := 0
	for _, f := range first {
		if seen[f] {
			versionTies++
		}
		seen[f] = true
	}
	if screenFirst == 0 || crashFirst == 0 || inPath == 0 || outOfPath == 0 || rankTies < 3 || versionTies == 0 {
		t.Fatalf("dataset: ties at a crash's time: screen first %d, crash first %d, other events before it %d, after it %d; "+
			"sessions tied on their latest crash %d; versions first seen at one time %d", screenFirst, crashFirst, inPath, outOfPath, rankTies, versionTies)
	}
}

// compareKeyed compares unordered results: each key once, none missing or extra, equal fields.
func compareKeyed[T any](t *testing.T, what string, got, want []T, key func(*T) string) {
	t.Helper()
	wm := make(map[string]*T, len(want))
	for i := range want {
		wm[key(&want[i])] = &want[i]
	}
	gm := make(map[string]bool, len(got))
	var problems []string
	for i := range got {
		k := key(&got[i])
		if gm[k] {
			problems = append(problems, "returned twice: "+k)
			continue
		}
		gm[k] = true
		w, ok := wm[k]
		if !ok {
			problems = append(problems, fmt.Sprintf("unexpected %s: %+v", k, got[i]))
			continue
		}
		if d := diff(got[i], *w); d != "" {
			problems = append(problems, k+" differs:\n    "+strings.ReplaceAll(d, "\n", "\n    "))
		}
	}
	for k, w := range wm {
		if !gm[k] {
			problems = append(problems, fmt.Sprintf("missing %s: %+v", k, *w))
		}
	}
	if len(problems) == 0 {
		return
	}
	sort.Strings(problems)
	n := len(problems)
	if n > 12 {
		problems = append(problems[:12], fmt.Sprintf("… and %d more", n-12))
	}
	t.Errorf("%s: %d problems (%d returned, %d expected):\n  %s", what, n, len(got), len(want), strings.Join(problems, "\n  "))
}

func showTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

func cellKey(c *model.IssueCell) string {
	b := "whole window"
	if c.Bucket != 0 {
		b = showTime(c.Bucket)
	}
	return fmt.Sprintf("group %s %s %s (%s) %s", c.GroupID, c.Class, c.Version.Name, c.Version.Code, b)
}

func bucketKey(b *model.SessionBucket) string {
	return fmt.Sprintf("%s (%s) %s", b.Version.Name, b.Version.Code, showTime(b.Bucket))
}

// compareEvents compares an ordered list of events: the ids in order first, then every field.
func compareEvents(t *testing.T, what string, got, want []model.Event) bool {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d events, want %d\n  got  %s\n  want %s", what, len(got), len(want), eventIDs(got), eventIDs(want))
		return false
	}
	for i := range got {
		if got[i].ID != want[i].ID || got[i].AppID != want[i].AppID {
			t.Errorf("%s: event %d is %s of app %s, want %s of app %s\n  got  %s\n  want %s", what, i, got[i].ID, got[i].AppID,
				want[i].ID, want[i].AppID, eventIDs(got), eventIDs(want))
			return false
		}
	}
	ok := true
	for i := range got {
		if d := diff(got[i], normEvent(want[i])); d != "" {
			t.Errorf("%s: event %d (%s) differs from what was written:\n%s", what, i, want[i].ID, d)
			ok = false
		}
	}
	return ok
}

func eventIDs(es []model.Event) string {
	const most = 8
	var b strings.Builder
	for i := range es {
		if i == most {
			fmt.Fprintf(&b, " … %d more", len(es)-most)
			break
		}
		fmt.Fprintf(&b, " %s@%d", es[i].ID, es[i].Timestamp)
	}
	return "[" + b.String() + " ]"
}

func mustUD(t *testing.T, text string) *model.UDExpr {
	t.Helper()
	x, err := model.ParseUDExpr(text)
	if err != nil || x == nil {
		t.Fatalf("ParseUDExpr(%s): %v", text, err)
	}
	return x
}

func udCmp(key, typ, op, value string) string {
	return `{"cmp":{"key":"` + key + `","type":"` + typ + `","op":"` + op + `","value":` + value + `}}`
}

type udCase struct {
	name, expr string
	empty      bool // selects nothing by design
}

// udCases cover every operator of every type, LIKE metacharacters, ASCII-only case folding,
// an int64 beyond float64 precision, a float in exponent form, keys absent on some events or
// of another type there, and nested and/or.
var udCases = []udCase{
	{"plan eq", udCmp("plan", "string", "eq", `"pro"`), false},
	{"plan neq", udCmp("plan", "string", "neq", `"pro"`), false},
	{"plan eq empty string", udCmp("plan", "string", "eq", `""`), false},
	{"plan contains case-insensitive", udCmp("plan", "string", "contains", `"PRO"`), false},
	{"plan contains empty", udCmp("plan", "string", "contains", `""`), false},
	{"plan contains percent", udCmp("plan", "string", "contains", `"0%"`), false},
	{"plan startsWith underscore", udCmp("plan", "string", "startsWith", `"pro_"`), false},
	{"plan startsWith non-ascii lower", udCmp("plan", "string", "startsWith", `"über"`), false},
	{"plan startsWith non-ascii upper", udCmp("plan", "string", "startsWith", `"ÜBER"`), false},
	{"retries eq", udCmp("retries", "int64", "eq", `"7"`), false},
	{"retries neq", udCmp("retries", "int64", "neq", `"7"`), false},
	{"retries gt", udCmp("retries", "int64", "gt", `"0"`), false},
	{"retries lt", udCmp("retries", "int64", "lt", `"0"`), false},
	{"retries gte", udCmp("retries", "int64", "gte", `"42"`), false},
	{"retries lte number literal", udCmp("retries", "int64", "lte", `-4`), false},
	{"retries gt 2^53", udCmp("retries", "int64", "gt", `"9007199254740992"`), false},
	{"retries eq min int64", udCmp("retries", "int64", "eq", `"-9223372036854775808"`), false},
	{"ratio eq", udCmp("ratio", "float64", "eq", `"0.1"`), false},
	{"ratio neq", udCmp("ratio", "float64", "neq", `"3"`), false},
	{"ratio gt", udCmp("ratio", "float64", "gt", `"0.5"`), false},
	{"ratio lt", udCmp("ratio", "float64", "lt", `"-1"`), false},
	{"ratio gte", udCmp("ratio", "float64", "gte", `"1.25"`), false},
	{"ratio lte", udCmp("ratio", "float64", "lte", `"0.001"`), false},
	{"ratio gt exponent", udCmp("ratio", "float64", "gt", `"1e20"`), false},
	{"ratio gt number literal", udCmp("ratio", "float64", "gt", `1`), false},
	{"premium eq", udCmp("premium", "bool", "eq", `"true"`), false},
	{"premium neq literal", udCmp("premium", "bool", "neq", `true`), false},
	{"tag eq (absent on most)", udCmp("tag", "string", "eq", `"beta"`), false},
	{"tag neq (absent is false)", udCmp("tag", "string", "neq", `"beta"`), false},
	{"tag startsWith", udCmp("tag", "string", "startsWith", `"BETA"`), false},
	{"count int64 (a string elsewhere)", udCmp("count", "int64", "gte", `"0"`), false},
	{"count string (an int64 elsewhere)", udCmp("count", "string", "eq", `"1"`), false},
	{"unknown key neq", udCmp("nosuchkey", "string", "neq", `"x"`), true},
	{"other app's key", udCmp("b_only", "int64", "gte", `"0"`), true},
	{"plan as bool", udCmp("plan", "bool", "neq", `"true"`), true},
	{"and", `{"and":[` + udCmp("plan", "string", "contains", `"pro"`) + `,` + udCmp("premium", "bool", "eq", `"true"`) + `]}`, false},
	{"or", `{"or":[` + udCmp("tag", "string", "eq", `"gamma"`) + `,` + udCmp("retries", "int64", "eq", `"42"`) + `]}`, false},
	{"nested", `{"and":[{"or":[` + udCmp("plan", "string", "eq", `"pro"`) + `,` + udCmp("premium", "bool", "eq", `"true"`) + `]},{"or":[` +
		udCmp("retries", "int64", "gte", `"1"`) + `,` + udCmp("ratio", "float64", "lt", `"0"`) + `]},` + udCmp("tag", "string", "neq", `"gamma"`) + `]}`, false},
	{"deep", `{"or":[{"and":[{"or":[` + udCmp("count", "int64", "eq", `"0"`) + `,` + udCmp("count", "string", "eq", `"0"`) + `]},` +
		udCmp("ratio", "float64", "gte", `"0.5"`) + `]},{"and":[` + udCmp("plan", "string", "startsWith", `"ent"`) + `,{"or":[` +
		udCmp("tag", "string", "eq", `"beta"`) + `,` + udCmp("tag", "string", "eq", `"Beta-2"`) + `]}]}]}`, false},
}

type issueCase struct {
	name  string
	q     model.IssueQuery
	empty bool // selects nothing by design
}

func issueCases(t *testing.T, d *anaData, w anaWindows) []issueCase {
	f := func(win [2]int64) model.EventFilter { return model.EventFilter{App: d.A, From: win[0], To: win[1]} }
	with := func(win [2]int64, edit func(q *model.IssueQuery)) model.IssueQuery {
		q := model.IssueQuery{EventFilter: f(win)}
		edit(&q)
		return q
	}
	v := anaVersions
	cases := []issueCase{
		{"all", with(w.full, func(q *model.IssueQuery) {}), false},
		{"window", with(w.mid, func(q *model.IssueQuery) {}), false},
		{"ties", with(w.tie, func(q *model.IssueQuery) {}), false},
		{"empty window", with(w.empty, func(q *model.IssueQuery) {}), true},
		{"inverted window", with([2]int64{w.mid[1], w.mid[0]}, func(q *model.IssueQuery) {}), true},
		{"crash", with(w.mid, func(q *model.IssueQuery) { q.Classes = []model.IssueClass{model.ClassCrash} }), false},
		{"anr", with(w.mid, func(q *model.IssueQuery) { q.Classes = []model.IssueClass{model.ClassANR} }), false},
		{"handled", with(w.mid, func(q *model.IssueQuery) { q.Classes = []model.IssueClass{model.ClassHandled} }), false},
		{"crash and anr", with(w.full, func(q *model.IssueQuery) { q.Classes = []model.IssueClass{model.ClassANR, model.ClassCrash} }), false},
		{"version", with(w.full, func(q *model.IssueQuery) { q.Versions = v[:1] }), false},
		{"version code", with(w.full, func(q *model.IssueQuery) { q.Versions = v[3:4] }), false},
		{"versions crossed", with(w.full, func(q *model.IssueQuery) {
			q.Versions = []model.AppVersion{{Name: "2.0", Code: "20"}, {Name: "1.0", Code: "11"}, {Name: "1.1", Code: "10"}}
		}), false},
		{"versions crossed only", with(w.full, func(q *model.IssueQuery) {
			q.Versions = []model.AppVersion{{Name: "1.0", Code: "11"}, {Name: "1.1", Code: "10"}}
		}), true},
		{"group", with(w.full, func(q *model.IssueQuery) { q.GroupID = d.groups[ikJVMState] }), false},
		{"group handled", with(w.full, func(q *model.IssueQuery) {
			q.GroupID, q.Classes = d.groups[ikJVMState], []model.IssueClass{model.ClassHandled}
		}), false},
		{"group unknown", with(w.full, func(q *model.IssueQuery) { q.GroupID = "0123456789abcdef0123456789abcdef" }), true},
		{"severity fatal", with(w.full, func(q *model.IssueQuery) { q.Severities = []string{"fatal"} }), false},
		{"severities", with(w.mid, func(q *model.IssueQuery) { q.Severities = []string{"unhandled", "handled"} }), false},
		// A severity narrows exceptions only: ANRs stay whatever it says (model.IssueKinds).
		{"anr whatever the severity", with(w.full, func(q *model.IssueQuery) {
			q.Severities, q.Classes = []string{"handled"}, []model.IssueClass{model.ClassANR}
		}), false},
		{"errors and anrs, fatal", with(w.full, func(q *model.IssueQuery) {
			q.Classes, q.Severities = []model.IssueClass{model.ClassCrash, model.ClassHandled, model.ClassANR}, []string{"fatal"}
		}), false},
		{"errors, unhandled and handled", with(w.mid, func(q *model.IssueQuery) {
			q.Classes, q.Severities = []model.IssueClass{model.ClassCrash, model.ClassHandled}, []string{"unhandled", "handled"}
		}), false},
		{"handled class, fatal", with(w.full, func(q *model.IssueQuery) {
			q.Classes, q.Severities = []model.IssueClass{model.ClassHandled}, []string{"fatal"}
		}), true},
		{"device names", with(w.full, func(q *model.IssueQuery) { q.DeviceNames = []string{"sunfish", "iPhone 16 Pro"} }), false},
		{"manufacturer case", with(w.full, func(q *model.IssueQuery) { q.DeviceManufacturers = []string{"Samsung"} }), false},
		{"locales", with(w.full, func(q *model.IssueQuery) { q.Locales = []string{"de-DE", "en_IN"} }), false},
		{"network provider", with(w.full, func(q *model.IssueQuery) { q.NetworkProviders = []string{"Télécom «ÜNÏ»"} }), false},
		{"network types", with(w.full, func(q *model.IssueQuery) { q.NetworkTypes = []string{"cellular", "no_network"} }), false},
		{"network generation", with(w.full, func(q *model.IssueQuery) { q.NetworkGenerations = []string{"5g"} }), false},
		{"countries", with(w.full, func(q *model.IssueQuery) { q.Countries = []string{"IN"} }), true},
		{"everything at once", with(w.mid, func(q *model.IssueQuery) {
			q.Versions = []model.AppVersion{v[0], v[2], v[3]}
			q.Classes = []model.IssueClass{model.ClassCrash, model.ClassHandled}
			q.Severities = []string{"fatal", "unhandled"}
			q.DeviceManufacturers = []string{"Google", "Apple", "samsung"}
			q.NetworkTypes = []string{"wifi", "cellular", "unknown"}
			q.UD = mustUD(t, `{"or":[`+udCmp("premium", "bool", "eq", `"false"`)+`,`+udCmp("retries", "int64", "gte", `"1"`)+`]}`)
		}), false},
	}
	for _, u := range udCases {
		cases = append(cases, issueCase{"ud " + u.name, with(w.full, func(q *model.IssueQuery) { q.UD = mustUD(t, u.expr) }), u.empty})
	}
	// Every case selects what it claims: something (a proper subset, when it filters) or
	// nothing.
	all := len(d.ref.IssueList(&cases[0].q))
	for _, c := range cases {
		n := len(d.ref.IssueList(&c.q))
		if c.empty != (n == 0) || strings.HasPrefix(c.name, "ud ") && n == all {
			t.Fatalf("dataset: issue case %q selects %d of %d events", c.name, n, all)
		}
	}
	return cases
}

// plotZones are the time zones every bucketed check runs in besides UTC: +05:30 without DST
// (a local midnight is 18:30 UTC) and New York, west of UTC with DST. App Z's rows sit on
// their edges (zoneEdges), app A's span local midnights and a month's end in both.
var plotZones = []string{"Asia/Kolkata", "America/New_York"}

// plotBuckets are the buckets of the bucketed checks: every group in UTC, then in each of
// plotZones.
func plotBuckets(t *testing.T) []model.Buckets {
	t.Helper()
	var out []model.Buckets
	for _, zone := range append([]string{""}, plotZones...) {
		for _, g := range []model.PlotTimeGroup{model.PlotMinutes, model.PlotHours, model.PlotDays, model.PlotMonths} {
			b, err := model.ParseBuckets(g.String(), zone)
			if err != nil {
				t.Fatalf("ParseBuckets(%s, %q): %v", g, zone, err)
			}
			out = append(out, b)
		}
	}
	return out
}

type cellShape struct {
	name string
	by   model.Cells
}

// cellShapes are the shapes IssueCells is asked for: the whole window, and each of
// plotBuckets.
func cellShapes(t *testing.T) []cellShape {
	out := []cellShape{{"whole", model.Cells{}}}
	for _, b := range plotBuckets(t) {
		out = append(out, cellShape{b.String(), model.Cells{Bucketed: true, By: b}})
	}
	return out
}

func testIssueCells(t *testing.T, s AnalyticsStore, d *anaData, w anaWindows) {
	cases := issueCases(t, d, w)
	// App B's rows share A's ids and times; its answers are its own.
	cases = append(cases, issueCase{name: "app B", q: model.IssueQuery{EventFilter: model.EventFilter{App: d.B, From: w.full[0], To: w.full[1]}}},
		issueCase{name: "app Z", q: model.IssueQuery{EventFilter: zoneWindow(d)}})
	shapes := cellShapes(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, sh := range shapes {
				got, err := s.IssueCells(ctx(t), &c.q, sh.by)
				if err != nil {
					t.Fatalf("IssueCells(%s): %v", sh.name, err)
				}
				compareKeyed(t, "IssueCells "+sh.name, got, d.ref.IssueCells(&c.q, sh.by), cellKey)
			}
		})
	}
}

func testIssueEvents(t *testing.T, s AnalyticsStore, d *anaData, w anaWindows) {
	cases := issueCases(t, d, w)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			list := d.ref.IssueList(&c.q)
			for _, limit := range []int{1, 5, 1000} {
				page := model.EventPage{Limit: limit}
				got, err := s.IssueEvents(ctx(t), &c.q, page)
				if err != nil {
					t.Fatalf("IssueEvents(limit %d): %v", limit, err)
				}
				compareEvents(t, fmt.Sprintf("first page, limit %d", limit), got, PageOf(list, page))
			}
			if len(list) > 0 && len(list) <= 300 {
				walkPages(t, s, &c.q, list, 50)
			}
		})
	}
	// Long walks with a small limit, both ways: every event once, in order, ties by id.
	for _, c := range cases[:3] {
		t.Run("walk "+c.name, func(t *testing.T) {
			walkPages(t, s, &c.q, d.ref.IssueList(&c.q), 7)
		})
	}
	// Keys that are no stored event: inside a run of tied timestamps, before and after all.
	t.Run("keys", func(t *testing.T) {
		q := &cases[0].q
		list := d.ref.IssueList(q)
		ids := []uuid.UUID{uuid.MustParse("10000000-0000-4000-8000-000000000001"), uuid.MustParse("1fffffff-ffff-4fff-bfff-ffffffffffff"), uuid.MustParse("ffffffff-ffff-4fff-bfff-ffffffffffff"), uuid.Nil}
		var keys []model.EventKey
		for _, id := range ids {
			keys = append(keys, model.EventKey{Timestamp: tieTime, ID: id})
		}
		keys = append(keys, model.EventKey{Timestamp: w.full[1], ID: uuid.Nil}, model.EventKey{Timestamp: w.full[0] - 1, ID: ids[2]},
			model.EventKey{Timestamp: list[0].Timestamp, ID: list[0].ID}, model.EventKey{Timestamp: list[len(list)-1].Timestamp, ID: list[len(list)-1].ID})
		for _, k := range keys {
			for _, back := range []bool{false, true} {
				for _, limit := range []int{1, 3, 1000} {
					page := model.EventPage{Key: &k, Limit: limit, Backward: back}
					got, err := s.IssueEvents(ctx(t), q, page)
					if err != nil {
						t.Fatalf("IssueEvents(%+v): %v", page, err)
					}
					compareEvents(t, fmt.Sprintf("key %s@%d backward=%v limit %d", k.ID, k.Timestamp, back, limit), got, PageOf(list, page))
				}
			}
		}
	})
}

// walkPages pages through q forward from the newest event, then backward from the oldest, and
// checks every page and that the pages put together are list, each event once.
func walkPages(t *testing.T, s AnalyticsStore, q *model.IssueQuery, list []model.Event, limit int) {
	t.Helper()
	var all []model.Event
	page := model.EventPage{Limit: limit}
	for n := 0; ; n++ {
		if n > len(list)/limit+2 {
			t.Fatalf("forward walk (limit %d) has not ended after %d pages", limit, n)
		}
		got, err := s.IssueEvents(ctx(t), q, page)
		if err != nil {
			t.Fatalf("IssueEvents forward page %d: %v", n, err)
		}
		if !compareEvents(t, fmt.Sprintf("forward page %d (limit %d)", n, limit), got, PageOf(list, page)) {
			return
		}
		if len(got) == 0 {
			break
		}
		all = append(all, got...)
		last := got[len(got)-1]
		page.Key = &model.EventKey{Timestamp: last.Timestamp, ID: last.ID}
	}
	if !compareEvents(t, "forward pages together", all, list) {
		return
	}
	oldest := list[len(list)-1]
	page = model.EventPage{Key: &model.EventKey{Timestamp: oldest.Timestamp, ID: oldest.ID}, Limit: limit, Backward: true}
	back := []model.Event{}
	for n := 0; ; n++ {
		if n > len(list)/limit+2 {
			t.Fatalf("backward walk (limit %d) has not ended after %d pages", limit, n)
		}
		got, err := s.IssueEvents(ctx(t), q, page)
		if err != nil {
			t.Fatalf("IssueEvents backward page %d: %v", n, err)
		}
		if !compareEvents(t, fmt.Sprintf("backward page %d (limit %d)", n, limit), got, PageOf(list, page)) {
			return
		}
		if len(got) == 0 {
			break
		}
		back = append(append([]model.Event{}, got...), back...)
		page.Key = &model.EventKey{Timestamp: got[0].Timestamp, ID: got[0].ID}
	}
	compareEvents(t, "backward pages together", back, list[:len(list)-1])
}

func testSessionBuckets(t *testing.T, s AnalyticsStore, d *anaData, w anaWindows) {
	var cases []issueCase
	for _, c := range issueCases(t, d, w) {
		// The event filter of each issue case, without what only issue queries have.
		if len(c.q.Classes) > 0 || c.q.GroupID != "" || len(c.q.Severities) > 0 {
			continue
		}
		cases = append(cases, c)
	}
	cases = append(cases, issueCase{name: "app B", q: model.IssueQuery{EventFilter: model.EventFilter{App: d.B, From: w.full[0], To: w.full[1]}}},
		issueCase{name: "app Z", q: model.IssueQuery{EventFilter: zoneWindow(d)}})
	buckets := plotBuckets(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, b := range buckets {
				got, err := s.SessionBuckets(ctx(t), &c.q.EventFilter, b)
				if err != nil {
					t.Fatalf("SessionBuckets(%s): %v", b, err)
				}
				compareKeyed(t, "SessionBuckets "+b.String(), got, d.ref.SessionBuckets(&c.q.EventFilter, b), bucketKey)
			}
		})
	}
}

func testMetrics(t *testing.T, s AnalyticsStore, d *anaData, w anaWindows) {
	absent := model.AppVersion{Name: "9.9", Code: "99"}
	sameName := model.AppVersion{Name: "2.0", Code: "22"}
	windows := []struct {
		name string
		w    [2]int64
	}{{"all", w.full}, {"window", w.mid}, {"ties", w.tie}, {"empty", w.empty}}
	sels := []struct {
		name string
		v    *model.AppVersion
	}{{"no version", nil}, {"1.0 (10)", &anaVersions[0]}, {"2.0 (21)", &anaVersions[3]}, {"absent version", &absent}, {"2.0 other code", &sameName}}
	for _, app := range []struct {
		name string
		id   uuid.UUID
	}{{"A", d.A}, {"B", d.B}} {
		for _, win := range windows {
			for _, sel := range sels {
				t.Run(app.name+"/"+win.name+"/"+sel.name, func(t *testing.T) {
					got, err := s.Metrics(ctx(t), app.id, win.w[0], win.w[1], sel.v)
					if err != nil {
						t.Fatalf("Metrics: %v", err)
					}
					checkMetrics(t, got, d.ref.Metrics(app.id, win.w[0], win.w[1], sel.v))
				})
			}
		}
	}
}

func checkMetrics(t *testing.T, got, want model.MetricsInput) {
	t.Helper()
	if len(got.OtherSizes) == 0 {
		got.OtherSizes = nil // build sizes are not the store's part
	}
	if d := diff(got, want); d != "" {
		t.Errorf("Metrics differs:\n%s", d)
	}
}

// FilterClassSets are the class sets FilterValues is checked with: every event, each class,
// and the dashboard's type=error (crashes and handled) and type=error,anr.
var FilterClassSets = [][]model.IssueClass{nil, {model.ClassCrash}, {model.ClassANR}, {model.ClassHandled},
	{model.ClassCrash, model.ClassHandled}, {model.ClassCrash, model.ClassANR, model.ClassHandled}}

func testFilterValues(t *testing.T, s AnalyticsStore, d *anaData) {
	for _, app := range []struct {
		name string
		id   uuid.UUID
	}{{"A", d.A}, {"B", d.B}, {"unknown app", uuid.MustParse("00000000-0000-4000-8000-00000000a5a5")}} {
		for _, classes := range FilterClassSets {
			name := fmt.Sprint(classes)
			if classes == nil {
				name = "every event"
			}
			t.Run(app.name+"/"+name, func(t *testing.T) {
				got, err := s.FilterValues(ctx(t), app.id, classes)
				if err != nil {
					t.Fatalf("FilterValues: %v", err)
				}
				want := d.ref.FilterValues(app.id, classes)
				if app.name == "A" && (len(want.Versions) < 3 || len(want.DeviceNames) < 2 || len(want.UDKeys) < 4) {
					t.Fatalf("dataset: too few values to check: %+v", want)
				}
				if df := diff(NormFilterValues(got), want); df != "" {
					t.Errorf("FilterValues differs:\n%s", df)
				}
			})
		}
	}
}

type walkCase struct {
	name string
	q    model.WalkQuery
	none bool // selects no session by design
}

func testSessionWalks(t *testing.T, s AnalyticsStore, d *anaData, w anaWindows) {
	q := func(app uuid.UUID, win [2]int64, group string, class model.IssueClass) model.WalkQuery {
		return model.WalkQuery{App: app, From: win[0], To: win[1], GroupID: group, Class: class}
	}
	cases := []walkCase{
		{"all", q(d.A, w.full, "", 0), false},
		{"window", q(d.A, w.mid, "", 0), false},
		{"ties", q(d.A, w.tie, "", 0), false},
		{"empty window", q(d.A, w.empty, "", 0), true},
		{"crash group", q(d.A, w.mid, d.groups[ikJVMState], model.ClassCrash), false},
		{"crash group of ties", q(d.A, w.tie, d.groups[ikJSTie], model.ClassCrash), false},
		{"anr group", q(d.A, w.full, d.groups[ikANRLock], model.ClassANR), false},
		{"group of another class", q(d.A, w.full, d.groups[ikANRLock], model.ClassCrash), true},
		// Sessions selected by a handled exception: one of them has no walk event at all.
		{"handled group", q(d.A, w.full, d.groups[ikJVMIO], model.ClassHandled), false},
		{"app B", q(d.B, w.full, "", 0), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := d.ref.SessionWalks(&c.q)
			if c.none != (len(want) == 0) {
				t.Fatalf("dataset: walk case selects %d sessions", len(want))
			}
			empty := 0
			for _, ws := range want {
				if len(ws) == 0 {
					empty++
				}
			}
			if c.name == "handled group" && empty == 0 {
				t.Fatalf("dataset: no session selected by a handled exception lacks walk events")
			}
			if c.q.GroupID == "" && !c.none {
				// Some selected session has walk events before From: walks are read whole.
				before := false
				for _, ws := range want {
					before = before || ws[0].Timestamp < c.q.From
				}
				if !before && c.name != "all" && c.name != "app B" {
					t.Fatalf("dataset: no selected session starts before the window")
				}
			}
			checkWalks(t, s, &c.q, want)
		})
	}
	t.Run("fn error stops the walk", func(t *testing.T) {
		stop := errors.New("stop here")
		calls := 0
		err := s.SessionWalks(ctx(t), &cases[0].q, func(uuid.UUID, []model.WalkEvent) error {
			calls++
			return stop
		})
		if !errors.Is(err, stop) || calls != 1 {
			t.Errorf("SessionWalks with fn failing: error %v after %d calls, want %v after 1", err, calls, stop)
		}
	})
}

func checkWalks(t *testing.T, s AnalyticsStore, q *model.WalkQuery, want map[uuid.UUID][]model.WalkEvent) {
	t.Helper()
	got := map[uuid.UUID][]model.WalkEvent{}
	err := s.SessionWalks(ctx(t), q, func(session uuid.UUID, events []model.WalkEvent) error {
		if _, ok := got[session]; ok {
			t.Errorf("session %s walked twice", session)
		}
		// An empty walk is an empty list, however fn gets it.
		got[session] = append([]model.WalkEvent{}, events...) // fn's slice is reused
		return nil
	})
	if err != nil {
		t.Fatalf("SessionWalks: %v", err)
	}
	var problems []string
	for sess, ws := range got {
		for i := 1; i < len(ws); i++ {
			if ws[i].Timestamp < ws[i-1].Timestamp { // ties: the reference has them in id order
				problems = append(problems, fmt.Sprintf("session %s: walk event %d at %d is before the one at %d", sess, i, ws[i].Timestamp, ws[i-1].Timestamp))
				break
			}
		}
		exp, ok := want[sess]
		if !ok {
			problems = append(problems, fmt.Sprintf("session %s is not selected (%d walk events)", sess, len(ws)))
			continue
		}
		if d := diff(ws, exp); d != "" {
			problems = append(problems, fmt.Sprintf("session %s: %s\n    got  %s\n    want %s", sess, strings.ReplaceAll(d, "\n", "; "), showWalk(ws), showWalk(exp)))
		}
	}
	for sess, exp := range want {
		if _, ok := got[sess]; !ok {
			problems = append(problems, fmt.Sprintf("session %s is missing (%d walk events)", sess, len(exp)))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		n := len(problems)
		if n > 10 {
			problems = append(problems[:10], fmt.Sprintf("… and %d more", n-10))
		}
		t.Errorf("SessionWalks: %d of %d sessions wrong (%d walked):\n  %s", n, len(want), len(got), strings.Join(problems, "\n  "))
	}
}

func showWalk(ws []model.WalkEvent) string {
	var b strings.Builder
	for i, w := range ws {
		if i == 10 {
			fmt.Fprintf(&b, " … %d more", len(ws)-10)
			break
		}
		what := "screen " + w.Screen
		if w.Screen == "" {
			what = fmt.Sprintf("%s %s %q", w.Class, w.GroupID, w.Title)
		}
		fmt.Fprintf(&b, " {%d %s (%s) %s}", w.Timestamp, w.Version.Name, w.Version.Code, what)
	}
	return "[" + b.String() + " ]"
}

func testPathSessions(t *testing.T, s AnalyticsStore, d *anaData) {
	cases := []struct {
		name     string
		app      uuid.UUID
		class    model.IssueClass
		group    string
		n, steps int
		none     bool
	}{
		{"crash", d.A, model.ClassCrash, d.groups[ikJVMState], 5, 10, false},
		{"crash one step", d.A, model.ClassCrash, d.groups[ikJSType], 3, 1, false},
		{"crash every session", d.A, model.ClassCrash, d.groups[ikAppleAbrt], 1000, 1000, false},
		{"anr", d.A, model.ClassANR, d.groups[ikANRLock], 100, 100, false},
		{"handled", d.A, model.ClassHandled, d.groups[ikDartFmt], 2, 4, false},
		{"handled of a crash group", d.A, model.ClassHandled, d.groups[ikJVMState], 4, 6, false},
		{"handled without severity", d.A, model.ClassHandled, d.groups[ikJVMLegacy], 3, 3, false},
		{"group of another class", d.A, model.ClassCrash, d.groups[ikJVMIO], 5, 5, true},
		{"unknown group", d.A, model.ClassCrash, "0123456789abcdef0123456789abcdef", 5, 5, true},
		{"app B", d.B, model.ClassCrash, d.groups[ikJVMState], 5, 10, false},
		// The tie sessions' crashes share a timestamp: ids rank them, and decide which events
		// at that timestamp are on the path.
		{"crash ties", d.A, model.ClassCrash, d.groups[ikJSTie], 4, 3, false},
		{"crash ties whole", d.A, model.ClassCrash, d.groups[ikJSTie], 100, 100, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sessions, _ := d.ref.pathRanking(c.app, c.class, c.group)
			if c.none != (len(sessions) == 0) || !c.none && len(sessions) < 2 {
				t.Fatalf("dataset: %d sessions with the group", len(sessions))
			}
			got, err := s.PathSessions(ctx(t), c.app, c.class, c.group, c.n, c.steps)
			if err != nil {
				t.Fatalf("PathSessions: %v", err)
			}
			checkPaths(t, got, d.ref.PathSessions(c.app, c.class, c.group, c.n, c.steps))
		})
	}
}

func checkPaths(t *testing.T, got, want [][]model.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("PathSessions: %d sessions, want %d", len(got), len(want))
	}
	for i := 0; i < min(len(got), len(want)); i++ {
		if !compareEvents(t, fmt.Sprintf("path %d", i), got[i], want[i]) {
			return
		}
	}
}
