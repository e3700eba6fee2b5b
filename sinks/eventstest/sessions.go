package eventstest

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// SessionStore is an event store that answers the session queries: both event stores are.
type SessionStore interface {
	sinks.EventStore
	sinks.Sessions
}

// SessionsReference is the brute-force answer of sinks.Sessions over a set of events and spans,
// by the model's Go definitions. Backends' own tests and the node's tests may use it.
type SessionsReference struct {
	events []model.Event // one per (app, event id): the last written
	spans  []model.Span  // one per (app, span id): the last written
}

// NewSessionsReference keeps the last of the events and spans written with each id, as a store
// does.
func NewSessionsReference(events []model.Event, spans []model.Span) *SessionsReference {
	return &SessionsReference{events: lastEvents(events), spans: NewSpansReference(spans).spans}
}

// Selected are the summaries of every session q selects, newest first.
func (r *SessionsReference) Selected(q *model.SessionQuery) []model.SessionSummary {
	accs := map[uuid.UUID]*model.SessionAcc{}
	for i := range r.events {
		e := &r.events[i]
		if e.AppID != q.App {
			continue
		}
		a := accs[e.SessionID]
		if a == nil {
			a = &model.SessionAcc{}
			accs[e.SessionID] = a
		}
		a.Add(q, e)
	}
	out := []model.SessionSummary{}
	for sid, a := range accs {
		if a.Selected(q) {
			out = append(out, a.Summary(sid))
		}
	}
	slices.SortFunc(out, func(a, b model.SessionSummary) int { return model.CompareSessionsNewest(&a, &b) })
	return out
}

// SessionPage is sinks.Sessions.SessionPage.
func (r *SessionsReference) SessionPage(q *model.SessionQuery, limit, offset int) []model.SessionSummary {
	all := r.Selected(q)
	if offset >= len(all) {
		return []model.SessionSummary{}
	}
	return all[offset:min(len(all), offset+limit)]
}

// SessionPlot is sinks.Sessions.SessionPlot.
func (r *SessionsReference) SessionPlot(q *model.SessionQuery, b model.Buckets) []model.SessionPlotCell {
	return model.SessionPlotOf(r.Selected(q), b)
}

// SessionEvents is sinks.Sessions.SessionEvents.
func (r *SessionsReference) SessionEvents(app, session uuid.UUID) []model.Event {
	out := []model.Event{}
	for _, e := range r.events {
		if e.AppID == app && e.SessionID == session {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b model.Event) int { return timeOrder(&a, &b) })
	return out
}

// SessionRootSpans is sinks.Sessions.SessionRootSpans.
func (r *SessionsReference) SessionRootSpans(app, session uuid.UUID) []model.Span {
	out := []model.Span{}
	for _, s := range r.spans {
		if s.AppID == app && s.SessionID == session && s.ParentID == "" {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b model.Span) int { return model.CompareSpansNewest(&a, &b) })
	return out
}

// sessData is the dataset of RunSessions.
type sessData struct {
	A, B, C  uuid.UUID
	events   [][]model.Event // one WriteEvents call each
	spans    [][]model.Span  // one WriteSpans call each
	ref      *SessionsReference
	lo, hi   int64       // app A's event times, min and max
	sessions []uuid.UUID // app A's sessions
	long     uuid.UUID   // the session with the long log line
}

// sessDay is the first day of app A: its sessions run for three days across the start of
// daylight saving time in America/New_York (2025-03-09) and local midnights in Asia/Kolkata.
var sessDay = time.Date(2025, 3, 8, 0, 0, 0, 0, time.UTC).UnixNano() + 345_679

// Payload values free text looks for: names, log lines, classes and targets with mixed case,
// non-ASCII letters and LIKE metacharacters.
var (
	sessCustomNames = []string{"add_to_cart", "Checkout_Tapped", "50%_off_banner", "Überweisung"}
	sessLogLines    = []string{"Payment TIMEOUT after 30s", "cache warm", "user opened Détails", "retry #3 of sync_job"}
	sessClasses     = []string{"sh.svc.sample.MainActivity", "sh.svc.sample.CheckoutActivity", "ProductFragment", "CartViewController"}
	sessTargets     = []string{"com.google.android.material.button.MaterialButton", "androidx.compose.ui.platform.AndroidComposeView", "UIButton"}
	sessTargetIDs   = []string{"checkout_button", "", "buy_now", "Cart-Icon"}
	sessThreads     = []string{"main", "main", "main", "OkHttp Dispatcher", "worker-1"}
)

// sessLong is a log line longer than model.ExcerptBytes with the text "needle-Ω" in its middle,
// amid two-byte characters, so that excerpts cut inside characters.
var sessLong = strings.Repeat("é", 150) + " needle-Ω " + strings.Repeat("ü", 220)

// sessPayload is the member of an event type that anaGen does not make.
func (g *anaGen) sessPayload(typ string) string {
	pick := func(xs []string) string { return xs[g.r.IntN(len(xs))] }
	switch typ {
	case "gesture_long_click":
		return `{"target":` + jstr(pick(sessTargets)) + `,"target_id":` + jstr(pick(sessTargetIDs)) + `,"width":10,"height":20,"x":1.5,"y":2}`
	case "gesture_scroll":
		return `{"target":` + jstr(pick(sessTargets)) + `,"target_id":null,"x":1,"y":2,"end_x":3,"end_y":400.25,"direction":"down"}`
	case "gesture_click":
		return `{"target":` + jstr(pick(sessTargets)) + `,"target_id":` + jstr(pick(sessTargetIDs)) + `,"width":262,"height":126,"x":546.9,"y":1267.0}`
	case "custom":
		return `{"name":` + jstr(pick(sessCustomNames)) + `}`
	case "string":
		return `{"severity_text":"info","string":` + jstr(pick(sessLogLines)) + `}`
	case "log":
		return `{"severity_text":"error","severity_number":17,"body":` + jstr(pick(sessLogLines)) + `}`
	case "lifecycle_activity":
		return `{"type":"resumed","class_name":` + jstr(pick(sessClasses[:2])) + `,"intent":null,"saved_instance_state":false}`
	case "lifecycle_fragment":
		return `{"type":"attached","class_name":"ProductFragment","parent_activity":"sh.svc.sample.MainActivity","parent_fragment":null,"tag":null}`
	case "lifecycle_view_controller":
		return `{"type":"viewDidAppear","class_name":"CartViewController"}`
	case "lifecycle_app":
		return `{"type":` + jstr(pick([]string{"foreground", "background", "background"})) + `}`
	case "bug_report":
		return `{"description":"The cart total is wrong"}`
	case "navigation":
		return `{"from":"home","to":"cart","source":"compose"}`
	case "network_change":
		return `{"network_type":"cellular","previous_network_type":"wifi","network_generation":"4g","previous_network_generation":"unknown","network_provider":"Vodafone"}`
	case "memory_usage_absolute":
		return `{"max_memory":4096000,"used_memory":1200345,"interval":5000}`
	case "trim_memory":
		return `{"level":"TRIM_MEMORY_UI_HIDDEN"}`
	case "cold_launch", "warm_launch", "hot_launch":
		return g.launchPayload(typ)
	}
	return g.otherPayload(typ)
}

// sessKinds are the event types of app A's sessions with their weights; "issue" is an exception
// or anr of anaIssueKinds.
var sessKinds = []struct {
	typ    string
	weight int
}{
	{"screen_view", 6}, {"lifecycle_activity", 5}, {"lifecycle_fragment", 2}, {"lifecycle_view_controller", 2},
	{"gesture_click", 4}, {"gesture_long_click", 2}, {"gesture_scroll", 2}, {"http", 6}, {"cpu_usage", 6},
	{"memory_usage", 4}, {"memory_usage_absolute", 2}, {"custom", 4}, {"string", 3}, {"log", 3}, {"bug_report", 1},
	{"navigation", 2}, {"network_change", 1}, {"lifecycle_app", 4}, {"cold_launch", 1}, {"warm_launch", 1},
	{"hot_launch", 1}, {"issue", 5}, {"trim_memory", 1},
}

// backgroundKinds are what a session in the background sends.
var backgroundKinds = []string{"http", "cpu_usage", "memory_usage", "custom", "log", "lifecycle_app", "trim_memory"}

func (g *anaGen) sessKind() string {
	total := 0
	for _, k := range sessKinds {
		total += k.weight
	}
	n := g.r.IntN(total)
	for _, k := range sessKinds {
		if n < k.weight {
			return k.typ
		}
		n -= k.weight
	}
	panic("unreachable")
}

// buildSessionData makes app A at random (fixed seed): sessions that are only a session_start,
// sessions in the background, sessions of every event kind, a version upgrade inside a
// session, networks that change, user ids that appear late or change case, per-event
// user-defined attributes, thread names, ties in time within a session and between sessions'
// first events, and the long log line; root spans and children for some sessions. App B holds
// copies of some of A's sessions with the same session and event ids but other values; app C
// is hand-written (testSessionsHand). Some events and spans are written twice.
func buildSessionData() *sessData {
	d := &sessData{A: uuid.New(), B: uuid.New(), C: uuid.New()}
	g := &anaGen{r: rand.New(rand.NewPCG(41, 17))}
	r := g.r
	var evs []model.Event
	var spans []model.Span
	start := sessDay
	for si := 0; si < 140; si++ {
		if si%9 != 4 { // every ninth session starts when the one before did: a tie
			start += int64(r.IntN(70*60)) * int64(time.Second)
		}
		sid := g.uuid()
		d.sessions = append(d.sessions, sid)
		v := anaVersions[r.IntN(len(anaVersions))]
		upgrade := r.IntN(10) == 0
		dev := anaDevices[r.IntN(len(anaDevices))]
		net := anaNetworks[r.IntN(len(anaNetworks))]
		switchNet := r.IntN(4) == 0
		user := ""
		userFrom := 1 << 30
		switch r.IntN(3) {
		case 1:
			user, userFrom = "user-"+strconv.Itoa(r.IntN(30)), 0
		case 2:
			user, userFrom = "User-"+strconv.Itoa(r.IntN(30)), 3
		}
		ud := &sessionUD{plan: anaPlans[r.IntN(len(anaPlans))], premium: r.IntN(2) == 0, countStr: r.IntN(3) == 0, count: int64(r.IntN(5))}
		mode := r.IntN(12) // 0: only a session_start; 1: in the background; else a session in use
		n := 3 + r.IntN(22)
		if mode == 0 {
			n = 1
		}
		ts := start
		for i := 0; i < n; i++ {
			if i > 0 && r.IntN(8) != 0 { // one in eight at the time of the event before
				ts += int64(r.IntN(120_000)) * int64(time.Millisecond)
			}
			typ := "session_start"
			switch {
			case i == 0 && r.IntN(6) != 0: // most sessions begin with their session_start
			case mode == 1:
				typ = backgroundKinds[r.IntN(len(backgroundKinds))]
			case mode != 0 || i > 0:
				typ = g.sessKind()
			}
			var payload string
			switch typ {
			case "session_start":
			case "issue":
				typ, payload = g.issuePayload(anaIssueKinds[r.IntN(len(anaIssueKinds))], r.IntN(3) != 0)
			case "log":
				payload = g.sessPayload(typ)
				if d.long == uuid.Nil && si > 20 {
					payload, d.long = `{"severity_text":"info","severity_number":9,"body":`+jstr(sessLong)+`}`, sid
				}
			default:
				payload = g.sessPayload(typ)
			}
			ver := v
			if upgrade && i > n/2 {
				ver = anaVersions[(slices.Index(anaVersions, v)+1)%len(anaVersions)]
			}
			nw := net
			if switchNet && i > n/3 {
				nw = anaNetworks[(slices.Index(anaNetworks, net)+1)%len(anaNetworks)]
			}
			a := anaAttrs(ver, dev, nw, "inst-"+sid.String()[:6])
			a.ThreadName = sessThreads[r.IntN(len(sessThreads))]
			if i >= userFrom {
				a.UserID = user
			}
			e := anaEvent(d.A, sid, g.uuid(), ts, typ, payload, a, g.eventUD(ud))
			e.UserTriggered = r.IntN(3) == 0
			evs = append(evs, e)
		}
		if r.IntN(3) == 0 { // root spans, each with a child
			for k := r.IntN(3); k >= 0; k-- {
				root := anaSpan(d.A, sid, g, start+int64(r.IntN(60_000))*int64(time.Millisecond), v)
				root.ParentID = ""
				child := anaSpan(d.A, sid, g, root.StartTime+int64(time.Millisecond), v)
				child.TraceID, child.ParentID = root.TraceID, root.SpanID
				spans = append(spans, root, child)
			}
		}
	}
	d.lo, d.hi = evs[0].Timestamp, evs[0].Timestamp
	for _, e := range evs {
		d.lo, d.hi = min(d.lo, e.Timestamp), max(d.hi, e.Timestamp)
	}
	// App B: ten of A's sessions again, same ids, another version and user.
	var bEvs []model.Event
	for _, e := range evs {
		if slices.Index(d.sessions, e.SessionID) < 10 {
			e.AppID = d.B
			e.Attribute.AppVersion, e.Attribute.UserID = "9.9", "someone-else"
			bEvs = append(bEvs, e)
		}
	}
	var bSpans []model.Span
	for _, s := range spans[:min(len(spans), 6)] {
		s.AppID = d.B
		bSpans = append(bSpans, s)
	}
	handEvs, handSpans := handSessions(d.C)
	d.events = [][]model.Event{evs, bEvs, everyNth(evs, 13), handEvs}
	d.spans = [][]model.Span{spans, bSpans, everyNth(spans, 5), handSpans}
	d.ref = NewSessionsReference(concat(d.events), concat(d.spans))
	return d
}

// RunSessions checks the sinks.Sessions contract. open must return a fresh, empty store; the
// suite writes one dataset into it and closes it at the end. Each answer is compared with
// SessionsReference; app C's answers are also written out by hand (testSessionsHand). Call it
// inside t.Run("<backend>", …).
func RunSessions(t *testing.T, open func(t *testing.T) SessionStore) {
	d := buildSessionData()
	s := openWritten(t, open, d.events, d.spans)
	c := ctx(t)
	t.Run("HandWritten", func(t *testing.T) { testSessionsHand(t, s, d) })
	zones := []model.Buckets{{Group: model.PlotHours}, {Group: model.PlotDays}, {Group: model.PlotMinutes}, {Group: model.PlotMonths}}
	for _, name := range []string{"Asia/Kolkata", "America/New_York"} {
		for _, g := range []string{"hours", "days"} {
			b, err := model.ParseBuckets(g, name)
			if err != nil {
				t.Fatalf("ParseBuckets(%s, %s): %v", g, name, err)
			}
			zones = append(zones, b)
		}
	}
	for _, qc := range sessionQueries(t, d) {
		t.Run("Query/"+qc.name, func(t *testing.T) {
			all := d.ref.Selected(&qc.q)
			if !qc.empty && len(all) == 0 {
				t.Fatalf("selects nothing; the dataset must make it select some")
			}
			if qc.empty && len(all) != 0 {
				t.Fatalf("selects %d sessions; it is meant to select none", len(all))
			}
			for _, p := range [][2]int{{1000, 0}, {1, 0}, {7, 0}, {7, 7}, {3, len(all) - 2}, {10, len(all)}} {
				if p[1] < 0 {
					continue
				}
				got, err := s.SessionPage(c, &qc.q, p[0], p[1])
				if err != nil {
					t.Fatalf("SessionPage: %v", err)
				}
				if df := diff(got, d.ref.SessionPage(&qc.q, p[0], p[1])); df != "" {
					t.Errorf("SessionPage(limit %d, offset %d):\n%s", p[0], p[1], df)
				}
			}
			for _, b := range zones {
				got, err := s.SessionPlot(c, &qc.q, b)
				if err != nil {
					t.Fatalf("SessionPlot(%v): %v", b, err)
				}
				if df := diff(got, d.ref.SessionPlot(&qc.q, b)); df != "" {
					t.Errorf("SessionPlot(%v):\n%s", b, df)
				}
			}
		})
	}
	t.Run("SessionEvents", func(t *testing.T) {
		check := func(app, session uuid.UUID) {
			got, err := s.SessionEvents(c, app, session)
			if err != nil {
				t.Fatalf("SessionEvents: %v", err)
			}
			compareEvents(t, "SessionEvents("+session.String()+")", got, d.ref.SessionEvents(app, session))
		}
		for _, sid := range d.sessions {
			check(d.A, sid)
		}
		for _, sid := range d.sessions[:12] {
			check(d.B, sid)
		}
		check(d.A, uuid.New())
	})
	t.Run("SessionRootSpans", func(t *testing.T) {
		any := false
		for _, app := range []uuid.UUID{d.A, d.B} {
			for _, sid := range append(slices.Clone(d.sessions), uuid.New()) {
				got, err := s.SessionRootSpans(c, app, sid)
				if err != nil {
					t.Fatalf("SessionRootSpans: %v", err)
				}
				want := d.ref.SessionRootSpans(app, sid)
				any = any || len(want) > 0
				if df := diff(got, want); df != "" {
					t.Errorf("SessionRootSpans(%s, %s):\n%s", app, sid, df)
				}
			}
		}
		if !any {
			t.Error("no session has root spans; the dataset must give some")
		}
	})
	t.Run("BadPage", func(t *testing.T) {
		q := model.SessionQuery{EventFilter: model.EventFilter{App: d.A, From: d.lo, To: d.hi + 1}}
		for _, p := range [][2]int{{0, 0}, {-1, 0}, {1, -1}} {
			if _, err := s.SessionPage(c, &q, p[0], p[1]); err == nil {
				t.Errorf("SessionPage(limit %d, offset %d): no error", p[0], p[1])
			}
		}
	})
}

type sessionQueryCase struct {
	name  string
	q     model.SessionQuery
	empty bool // selects nothing by design
}

// sessionQueries are the cases of app A: each filter and kind alone, free texts, some together,
// and windows that cut sessions or whose bounds are event times.
func sessionQueries(t *testing.T, d *sessData) []sessionQueryCase {
	full := model.EventFilter{App: d.A, From: d.lo, To: d.hi + 1}
	mid := model.EventFilter{App: d.A, From: d.lo + (d.hi-d.lo)/3, To: d.lo + (d.hi-d.lo)*2/3}
	var times []int64
	for _, e := range d.ref.events {
		if e.AppID == d.A {
			times = append(times, e.Timestamp)
		}
	}
	slices.Sort(times)
	exact := model.EventFilter{App: d.A, From: times[len(times)/4], To: times[len(times)*3/4]}
	var out []sessionQueryCase
	add := func(name string, f model.EventFilter, edit func(q *model.SessionQuery), empty bool) {
		q := model.SessionQuery{EventFilter: f}
		if edit != nil {
			edit(&q)
		}
		out = append(out, sessionQueryCase{name: name, q: q, empty: empty})
	}
	add("full", full, nil, false)
	add("mid", mid, nil, false)
	add("exact-bounds", exact, nil, false)
	add("empty-window", model.EventFilter{App: d.A, From: times[9], To: times[9]}, nil, true)
	add("other-app", model.EventFilter{App: d.B, From: d.lo, To: d.hi + 1}, nil, false)
	add("versions", full, func(q *model.SessionQuery) { q.Versions = anaVersions[1:3] }, false)
	add("version-cross", full, func(q *model.SessionQuery) { q.Versions = []model.AppVersion{{Name: "1.0", Code: "11"}} }, true)
	add("os", full, func(q *model.SessionQuery) {
		q.OSVersions = []model.OSVersion{{Name: "android", Version: "34"}, {Name: "iOS", Version: "17.5"}}
	}, false)
	add("os-pair-only", full, func(q *model.SessionQuery) { q.OSVersions = []model.OSVersion{{Name: "iOS", Version: "34"}} }, true)
	add("device-names", full, func(q *model.SessionQuery) { q.DeviceNames = []string{"a52q", "iPhone 12"} }, false)
	add("manufacturers", full, func(q *model.SessionQuery) { q.DeviceManufacturers = []string{"samsung"} }, false)
	add("locales", full, func(q *model.SessionQuery) { q.Locales = []string{"en-US"} }, false)
	add("network-types", full, func(q *model.SessionQuery) { q.NetworkTypes = []string{"cellular"} }, false)
	add("network-providers", full, func(q *model.SessionQuery) { q.NetworkProviders = []string{"Télécom «ÜNÏ»"} }, false)
	add("network-generations", full, func(q *model.SessionQuery) { q.NetworkGenerations = []string{"", "5g"} }, false)
	add("countries", full, func(q *model.SessionQuery) { q.Countries = []string{"IN"} }, true)
	add("ud-string", full, func(q *model.SessionQuery) { q.UD = mustUD(t, udCmp("plan", "string", "contains", `"pro"`)) }, false)
	add("ud-or", full, func(q *model.SessionQuery) {
		q.UD = mustUD(t, `{"or":[`+udCmp("retries", "int64", "gte", `"42"`)+`,`+udCmp("tag", "string", "eq", `"gamma"`)+`]}`)
	}, false)
	// Kinds.
	add("issue", full, func(q *model.SessionQuery) { q.Issue = true }, false)
	add("crash", full, func(q *model.SessionQuery) { q.Issue, q.Classes = true, []model.IssueClass{model.ClassCrash} }, false)
	add("anr", full, func(q *model.SessionQuery) { q.Issue, q.Classes = true, []model.IssueClass{model.ClassANR} }, false)
	add("error-fatal", full, func(q *model.SessionQuery) {
		q.Issue, q.Classes, q.Severities = true, []model.IssueClass{model.ClassCrash, model.ClassHandled}, []string{"fatal"}
	}, false)
	add("severity-unhandled-handled", full, func(q *model.SessionQuery) { q.Issue, q.Severities = true, []string{"unhandled", "handled"} }, false)
	add("anr-with-severity", full, func(q *model.SessionQuery) {
		q.Issue, q.Classes, q.Severities = true, []model.IssueClass{model.ClassANR}, []string{"fatal"}
	}, false) // severities narrow exceptions only: the ANR sessions, as on errorGroups
	add("bug-report", full, func(q *model.SessionQuery) { q.BugReport = true }, false)
	add("user-interaction", full, func(q *model.SessionQuery) { q.UserInteraction = true }, false)
	add("foreground", full, func(q *model.SessionQuery) { q.Foreground = true }, false)
	add("background", full, func(q *model.SessionQuery) { q.Background = true }, false)
	add("foreground-or-background", full, func(q *model.SessionQuery) { q.Foreground, q.Background = true, true }, false)
	add("anr-or-bug-report", full, func(q *model.SessionQuery) {
		q.Issue, q.Classes, q.BugReport = true, []model.IssueClass{model.ClassANR}, true
	}, false)
	add("background-mid", mid, func(q *model.SessionQuery) { q.Background = true }, false)
	// Free text.
	for _, ft := range []struct {
		text  string
		empty bool
	}{
		{"checkout", false}, {"TIMEOUT", false}, {"détails", false}, {"DÉTAILS", true}, {"50%", false},
		{"IllegalState", false}, {"Cart is EMPTY", false}, {"ANR", false}, {"user-7", false}, {"USER-7", false},
		{"user-", true}, {"materialbutton", false}, {"Cart-Icon", false}, {"gesture_scroll", false},
		{"needle-Ω", false}, {"Ω", false}, {"nothing at all", true}, {"überweisung", true}, {"Überweisung", false},
		{strings.ToUpper(d.ref.Selected(&model.SessionQuery{EventFilter: full})[7].SessionID.String()), false}, {"sh.svc", false},
		// Long texts: the excerpt grows with them (model.Excerpt).
		{sessLong[200:321], false}, {sessLong[:601], false},
	} {
		add("free-text/"+ft.text[:min(len(ft.text), 24)], full, func(q *model.SessionQuery) { q.FreeText = ft.text }, ft.empty)
	}
	add("together", mid, func(q *model.SessionQuery) {
		q.Versions = anaVersions[:3]
		q.NetworkTypes = []string{"wifi", "cellular", "unknown"}
		q.Issue, q.Foreground = true, true
		q.FreeText = "a"
	}, false)
	add("together-ud-background", full, func(q *model.SessionQuery) {
		q.UD = mustUD(t, udCmp("premium", "bool", "eq", `"true"`))
		q.Background, q.BugReport = true, true
	}, false)
	return out
}

// handSessions is app C, on 2025-06-02 (UTC):
//   - c1 (1.0 (1), Pixel 7): session_start 10:00:00, screen_view Home 10:00:01 (user ada),
//     gesture_click on buy 10:00:05, a custom event whose payload holds a nested "name" before
//     its own 10:00:06, a fatal exception in the foreground 10:00:09 on thread "worker",
//     cpu_usage 10:00:10; a root span at 10:00:02 and its child.
//   - c2: only a session_start at 11:00.
//   - c3 (2.0 (2), iPhone): lifecycle_app background 12:00:00, http 12:00:30, an ANR in the
//     background 12:01:00 (user "Bob").
//   - c4 (2.0 (2), iPhone): bug_report 13:00:00 and a long log line 13:00:00 (same time; the
//     log's id is smaller).
//   - c5: no event, two root spans at 14:00 and 14:05.
func handSessions(app uuid.UUID) ([]model.Event, []model.Span) {
	at := func(h, m, s int) int64 { return time.Date(2025, 6, 2, h, m, s, 0, time.UTC).UnixNano() }
	c1, c2, c3, c4, c5 := handID(1), handID(2), handID(3), handID(4), handID(5)
	pixel := model.Attributes{AppVersion: "1.0", AppBuild: "1", OSName: "android", OSVersion: "34", DeviceName: "panther",
		DeviceModel: "Pixel 7", DeviceManufacturer: "Google", ThreadName: "main", NetworkType: "wifi"}
	iphone := model.Attributes{AppVersion: "2.0", AppBuild: "2", OSName: "ios", OSVersion: "17.2", DeviceName: "iPhone15,2",
		DeviceModel: "iPhone15,2", DeviceManufacturer: "Apple", ThreadName: "main", NetworkType: "cellular"}
	ev := func(id byte, session uuid.UUID, ts int64, typ, payload string, a model.Attributes) model.Event {
		return anaEvent(app, session, handID(100+int(id)), ts, typ, payload, a, nil)
	}
	ada, worker, bob := pixel, pixel, iphone
	ada.UserID = "ada"
	worker.ThreadName = "worker"
	bob.UserID = "Bob"
	g := &anaGen{r: rand.New(rand.NewPCG(1, 2))}
	_, crash := g.issuePayload(ikJVMOOM, true)
	_, anr := g.issuePayload(ikANRPoll, false)
	events := []model.Event{
		ev(1, c1, at(10, 0, 0), "session_start", "", pixel),
		ev(2, c1, at(10, 0, 1), "screen_view", `{"name":"Home"}`, ada),
		ev(3, c1, at(10, 0, 5), "gesture_click", `{"target":"MaterialButton","target_id":"buy","width":10,"height":10,"x":1,"y":2}`, ada),
		ev(4, c1, at(10, 0, 9), "exception", crash, worker),
		ev(13, c1, at(10, 0, 6), "custom", `{"attrs":{"name":"Inner Name"},"name":"outer"}`, pixel),
		ev(5, c1, at(10, 0, 10), "cpu_usage", `{"num_cores":8,"clock_speed":100,"uptime":1,"utime":1,"stime":1,"cutime":0,"cstime":0,"interval":5000,"percentage_usage":12.5,"start_time":1}`, pixel),
		ev(6, c2, at(11, 0, 0), "session_start", "", pixel),
		ev(7, c3, at(12, 0, 0), "lifecycle_app", `{"type":"background"}`, iphone),
		ev(8, c3, at(12, 0, 30), "http", `{"url":"https://api.c.io/sync","method":"post","status_code":204,"start_time":100,"end_time":350,"client":"URLSession"}`, iphone),
		ev(9, c3, at(12, 1, 0), "anr", anr, bob),
		ev(11, c4, at(13, 0, 0), "log", `{"severity_text":"info","severity_number":9,"body":`+jstr(sessLong)+`}`, iphone),
		ev(12, c4, at(13, 0, 0), "bug_report", `{"description":"Total is wrong"}`, iphone),
	}
	root := model.Span{AppID: app, SpanID: "c100000000000001", TraceID: "000000000000000000000000000000c1", SessionID: c1,
		Name: "checkout", Status: 1, StartTime: at(10, 0, 2), EndTime: at(10, 0, 3), Duration: 1000, Attributes: pixel}
	child := root
	child.SpanID, child.ParentID, child.Name = "c100000000000002", root.SpanID, "http"
	s5a := model.Span{AppID: app, SpanID: "c500000000000001", TraceID: "000000000000000000000000000000c5", SessionID: c5,
		Name: "sync", Status: 1, StartTime: at(14, 0, 0), EndTime: at(14, 0, 1), Duration: 1000, Attributes: iphone}
	s5b := s5a
	s5b.SpanID, s5b.TraceID, s5b.StartTime, s5b.EndTime = "c500000000000002", "000000000000000000000000000000c6", at(14, 5, 0), at(14, 5, 2)
	return events, []model.Span{root, child, s5a, s5b}
}

// handID is a UUID whose last byte is n (and nothing else but the version bits).
func handID(n int) uuid.UUID {
	return uuid.UUID{0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, byte(n >> 8), byte(n)}
}

// testSessionsHand checks app C's answers, written out by hand.
func testSessionsHand(t *testing.T, s SessionStore, d *sessData) {
	c := ctx(t)
	day := time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC).UnixNano()
	at := func(h, m, s int) int64 {
		return day + int64(h)*int64(time.Hour) + int64(m)*int64(time.Minute) + int64(s)*int64(time.Second)
	}
	c1, c3, c4 := handID(1), handID(3), handID(4)
	pixel := model.SessionDevice{AppVersion: "1.0", AppBuild: "1", OSName: "android", OSVersion: "34", DeviceName: "panther",
		DeviceModel: "Pixel 7", DeviceManufacturer: "Google"}
	iphone := model.SessionDevice{AppVersion: "2.0", AppBuild: "2", OSName: "ios", OSVersion: "17.2", DeviceName: "iPhone15,2",
		DeviceModel: "iPhone15,2", DeviceManufacturer: "Apple"}
	s1 := model.SessionSummary{SessionID: c1, First: at(10, 0, 0), Last: at(10, 0, 10), Device: pixel, UserID: "ada"}
	s3 := model.SessionSummary{SessionID: c3, First: at(12, 0, 0), Last: at(12, 1, 0), Device: iphone, UserID: "Bob"}
	s4 := model.SessionSummary{SessionID: c4, First: at(13, 0, 0), Last: at(13, 0, 0), Device: iphone}
	page := func(name string, q model.SessionQuery, limit, offset int, want ...model.SessionSummary) {
		t.Helper()
		q.App = d.C
		if q.From == 0 {
			q.From, q.To = day, day+24*int64(time.Hour)
		}
		got, err := s.SessionPage(c, &q, limit, offset)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want == nil {
			want = []model.SessionSummary{}
		}
		if df := diff(got, want); df != "" {
			t.Errorf("%s:\n%s", name, df)
		}
	}
	// c2 is only a session_start; c5 has no event.
	page("all", model.SessionQuery{}, 10, 0, s4, s3, s1)
	page("limit 2", model.SessionQuery{}, 2, 0, s4, s3)
	page("offset 2", model.SessionQuery{}, 2, 2, s1)
	page("offset 3", model.SessionQuery{}, 2, 3)
	// The window cuts c1 after its screen_view: first and last are those inside.
	s1cut := s1
	s1cut.First, s1cut.Last = at(10, 0, 5), at(10, 0, 10)
	page("window from 10:00:05", model.SessionQuery{EventFilter: model.EventFilter{From: at(10, 0, 5), To: at(12, 0, 0)}}, 10, 0, s1cut)
	// A window holding only c1's session_start.
	page("window of session_starts", model.SessionQuery{EventFilter: model.EventFilter{From: at(10, 0, 0), To: at(10, 0, 1)}}, 10, 0)
	page("crash", model.SessionQuery{Issue: true, Classes: []model.IssueClass{model.ClassCrash}}, 10, 0, s1)
	page("anr", model.SessionQuery{Issue: true, Classes: []model.IssueClass{model.ClassANR}}, 10, 0, s3)
	page("bug report", model.SessionQuery{BugReport: true}, 10, 0, s4)
	page("interaction", model.SessionQuery{UserInteraction: true}, 10, 0, s1)
	// c1 shows a screen; c3 went to the background and had its ANR there; c4 shows nothing.
	page("foreground", model.SessionQuery{Foreground: true}, 10, 0, s1)
	page("background", model.SessionQuery{Background: true}, 10, 0, s4, s3)
	page("background or crash", model.SessionQuery{Background: true, Issue: true, Classes: []model.IssueClass{model.ClassCrash}}, 10, 0, s4, s3, s1)
	// versions=2.0 with a crash: c1's crash is of 1.0.
	page("version 2.0 crash", model.SessionQuery{EventFilter: model.EventFilter{Versions: []model.AppVersion{{Name: "2.0", Code: "2"}}},
		Issue: true, Classes: []model.IssueClass{model.ClassCrash}}, 10, 0)
	// Free text: the user id exactly, in any ASCII case; the first match of the session.
	s3bob := s3
	s3bob.Match = model.TextMatch{Label: "User Id", Value: "Bob"}
	page("free text bob", model.SessionQuery{FreeText: "bOB"}, 10, 0, s3bob)
	page("free text bo", model.SessionQuery{FreeText: "bo"}, 10, 0)
	s1buy := s1
	s1buy.Match = model.TextMatch{Label: "Target Id", Value: "buy"}
	page("free text buy", model.SessionQuery{FreeText: "BUY"}, 10, 0, s1buy)
	s1oom := s1
	s1oom.Match = model.TextMatch{Label: "Exception Type", Value: "java.lang.OutOfMemoryError"}
	page("free text memory", model.SessionQuery{FreeText: "memory"}, 10, 0, s1oom)
	// A payload member is read as ClickHouse's visitParamExtractString reads it: the first
	// "name" of the custom event's payload is the nested one.
	s1inner := s1
	s1inner.Match = model.TextMatch{Label: "Custom Event", Value: "Inner Name"}
	page("free text inner", model.SessionQuery{FreeText: "inner NAME"}, 10, 0, s1inner)
	page("free text outer", model.SessionQuery{FreeText: "outer"}, 10, 0)
	// The long log line: 150 é (300 bytes), then " needle-Ω " (needle at byte 301), then 220 ü.
	// The excerpt is its 406 bytes (400 and the text's 6) from 160 before the match: from byte
	// 141, the second byte of an é.
	i := strings.Index(sessLong, "needle")
	s4long := s4
	s4long.Match = model.TextMatch{Label: "Log", Value: sessLong[i-160 : i-160+406], Before: true, After: true}
	page("free text needle", model.SessionQuery{FreeText: "NEEDLE"}, 10, 0, s4long)
	// Its text drops that half é: 79 é, " needle-Ω ", 118 ü; needle is the 81st character, and
	// the 100 shown start 40 before it: 39 é, the 10 of " needle-Ω ", 51 ü.
	if got := s4long.Match.Text("NEEDLE"); got != "Log: …"+strings.Repeat("é", 39)+" needle-Ω "+strings.Repeat("ü", 51)+"…" {
		t.Errorf("matched_free_text of the long line = %q", got)
	}
	// The session id, exactly.
	s4id := s4
	s4id.Match = model.TextMatch{Label: "Session Id", Value: c4.String()}
	page("free text session id", model.SessionQuery{FreeText: strings.ToUpper(c4.String())}, 10, 0, s4id)

	q := model.SessionQuery{EventFilter: model.EventFilter{App: d.C, From: day, To: day + 24*int64(time.Hour)}}
	plot, err := s.SessionPlot(c, &q, model.Buckets{Group: model.PlotHours})
	if err != nil {
		t.Fatal(err)
	}
	want := []model.SessionPlotCell{
		{Version: model.AppVersion{Name: "1.0", Code: "1"}, Bucket: at(10, 0, 0), Count: 1},
		{Version: model.AppVersion{Name: "2.0", Code: "2"}, Bucket: at(12, 0, 0), Count: 1},
		{Version: model.AppVersion{Name: "2.0", Code: "2"}, Bucket: at(13, 0, 0), Count: 1},
	}
	if df := diff(plot, want); df != "" {
		t.Errorf("SessionPlot by hour:\n%s", df)
	}
	ist, err := model.ParseBuckets("days", "Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	plot, err = s.SessionPlot(c, &q, ist)
	if err != nil {
		t.Fatal(err)
	}
	istDay := day - (5*int64(time.Hour) + 30*int64(time.Minute)) // 2025-06-02 00:00 +05:30
	want = []model.SessionPlotCell{
		{Version: model.AppVersion{Name: "1.0", Code: "1"}, Bucket: istDay, Count: 1},
		{Version: model.AppVersion{Name: "2.0", Code: "2"}, Bucket: istDay, Count: 2},
	}
	if df := diff(plot, want); df != "" {
		t.Errorf("SessionPlot by day in Asia/Kolkata:\n%s", df)
	}

	evs, err := s.SessionEvents(c, d.C, c4)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].ID != handID(111) || evs[1].ID != handID(112) {
		t.Errorf("SessionEvents(c4) = %s, want the log (…6f) then the bug report (…70)", eventIDs(evs))
	}
	roots, err := s.SessionRootSpans(c, d.C, handID(5))
	if err != nil {
		t.Fatal(err)
	}
	if len(roots) != 2 || roots[0].SpanID != "c500000000000002" || roots[1].SpanID != "c500000000000001" {
		t.Errorf("SessionRootSpans(c5) = %v, want c5…02 then c5…01", roots)
	}
	roots, err = s.SessionRootSpans(c, d.C, c1)
	if err != nil {
		t.Fatal(err)
	}
	if len(roots) != 1 || roots[0].SpanID != "c100000000000001" {
		t.Errorf("SessionRootSpans(c1) = %v, want the root c1…01 only", roots)
	}
}
