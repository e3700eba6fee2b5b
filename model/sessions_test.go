package model

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/uuid"
)

var sessApp = uuid.MustParse("00000000-0000-4000-8000-0000000000aa")

// sessEvent is an event of app sessApp with its facts derived, as ingest stores it.
func sessEvent(typ, payload string, ts int64, edit func(e *Event)) Event {
	e := Event{ID: uuid.New(), AppID: sessApp, SessionID: uuid.MustParse("00000000-0000-4000-8000-000000000001"),
		Type: typ, Timestamp: ts, Attribute: Attributes{AppVersion: "1.0", AppBuild: "1", OSName: "android", OSVersion: "34"}}
	if payload != "" {
		e.Payload = []byte(payload)
	}
	if edit != nil {
		edit(&e)
	}
	e.Facts = DeriveFacts(&e)
	return e
}

const (
	crashPayload   = `{"handled":false,"exceptions":[{"type":"java.lang.IllegalStateException","message":"Cart is empty","frames":[{"class_name":"a.B","method_name":"onClick","file_name":"B.kt","line_num":3}]}],"foreground":true}`
	handledPayload = `{"severity":"unhandled","framework":"dart","exceptions":[{"type":"FormatException","message":"bad","frames":[]}],"foreground":false}`
	anrPayload     = `{"handled":false,"exceptions":[{"type":"AnrError","message":"blocked","frames":[]}],"foreground":false}`
)

func TestSessionQueryMatchEvent(t *testing.T) {
	q := SessionQuery{EventFilter: EventFilter{App: sessApp, From: 100, To: 200}, OSVersions: []OSVersion{{"android", "34"}}}
	cases := []struct {
		name string
		e    Event
		want bool
	}{
		{"in window", sessEvent("custom", `{"name":"x"}`, 100, nil), true},
		{"session_start", sessEvent("session_start", "", 150, nil), false},
		{"at To", sessEvent("custom", `{"name":"x"}`, 200, nil), false},
		{"before From", sessEvent("custom", `{"name":"x"}`, 99, nil), false},
		{"other app", sessEvent("custom", `{"name":"x"}`, 150, func(e *Event) { e.AppID = uuid.New() }), false},
		{"other OS version", sessEvent("custom", `{"name":"x"}`, 150, func(e *Event) { e.Attribute.OSVersion = "33" }), false},
		{"OS name of a pair", sessEvent("custom", `{"name":"x"}`, 150, func(e *Event) { e.Attribute.OSName = "ios" }), false},
	}
	for _, c := range cases {
		if got := q.MatchEvent(&c.e); got != c.want {
			t.Errorf("%s: MatchEvent = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSessionKinds(t *testing.T) {
	cases := []struct {
		name    string
		e       Event
		classes []IssueClass
		sev     []string
		want    SessionKinds
	}{
		{"crash", sessEvent("exception", crashPayload, 1, nil), nil, nil, KindIssue | KindForeground},
		{"crash, classes crash", sessEvent("exception", crashPayload, 1, nil), []IssueClass{ClassCrash}, nil, KindIssue | KindForeground},
		{"crash, classes anr", sessEvent("exception", crashPayload, 1, nil), []IssueClass{ClassANR}, nil, KindForeground},
		{"crash, severity fatal", sessEvent("exception", crashPayload, 1, nil), nil, []string{"fatal"}, KindIssue | KindForeground},
		{"unhandled is handled class", sessEvent("exception", handledPayload, 1, nil), []IssueClass{ClassHandled}, []string{"unhandled"}, KindIssue},
		{"unhandled, severity fatal", sessEvent("exception", handledPayload, 1, nil), nil, []string{"fatal"}, 0},
		{"anr", sessEvent("anr", anrPayload, 1, nil), []IssueClass{ClassANR}, nil, KindIssue},
		{"severities narrow exceptions only", sessEvent("anr", anrPayload, 1, nil), []IssueClass{ClassANR}, []string{"fatal"}, KindIssue},
		{"exception without group", sessEvent("exception", `[]`, 1, nil), nil, nil, 0},
		{"bug report", sessEvent("bug_report", `{"description":"x"}`, 1, nil), nil, nil, KindBugReport},
		{"click", sessEvent("gesture_click", `{"x":1,"y":2}`, 1, nil), nil, nil, KindInteraction | KindForeground},
		{"scroll", sessEvent("gesture_scroll", `{"x":1,"y":2,"end_x":1,"end_y":2}`, 1, nil), nil, nil, KindInteraction | KindForeground},
		{"screen", sessEvent("screen_view", `{"name":"Home"}`, 1, nil), nil, nil, KindForeground},
		{"cold launch", sessEvent("cold_launch", `{}`, 1, nil), nil, nil, KindForeground},
		{"app foreground", sessEvent("lifecycle_app", `{"type":"foreground"}`, 1, nil), nil, nil, KindForeground},
		{"app background", sessEvent("lifecycle_app", `{"type":"background"}`, 1, nil), nil, nil, 0},
		{"http", sessEvent("http", `{"url":"https://a.io","method":"get"}`, 1, nil), nil, nil, 0},
		{"custom", sessEvent("custom", `{"name":"x"}`, 1, nil), nil, nil, 0},
	}
	for _, c := range cases {
		q := SessionQuery{Classes: c.classes, Severities: c.sev}
		if got := q.KindsOf(&c.e); got != c.want {
			t.Errorf("%s: KindsOf = %b, want %b", c.name, got, c.want)
		}
	}
}

func TestSessionKindsMatch(t *testing.T) {
	cases := []struct {
		name string
		q    SessionQuery
		k    SessionKinds
		want bool
	}{
		{"no kinds asked", SessionQuery{}, 0, true},
		{"issue", SessionQuery{Issue: true}, KindIssue, true},
		{"issue missing", SessionQuery{Issue: true}, KindBugReport | KindForeground, false},
		{"alternatives", SessionQuery{Issue: true, BugReport: true}, KindBugReport, true},
		{"interaction", SessionQuery{UserInteraction: true}, KindInteraction, true},
		{"foreground", SessionQuery{Foreground: true}, KindForeground, true},
		{"foreground missing", SessionQuery{Foreground: true}, KindIssue, false},
		{"background", SessionQuery{Background: true}, KindIssue, true},
		{"background, foreground shown", SessionQuery{Background: true}, KindForeground, false},
		{"both is every session", SessionQuery{Foreground: true, Background: true}, 0, true},
		{"background or bug report", SessionQuery{Background: true, BugReport: true}, KindForeground | KindBugReport, true},
	}
	for _, c := range cases {
		if got := c.q.KindsMatch(c.k); got != c.want {
			t.Errorf("%s: KindsMatch(%b) = %v, want %v", c.name, c.k, got, c.want)
		}
	}
}

func TestPayloadString(t *testing.T) {
	cases := []struct {
		payload, key, want string
	}{
		{`{"name":"Home"}`, "name", "Home"},
		{`{"name":"caf\u00e9 \"x\" \ud83d\ude80"}`, "name", `café "x" 🚀`},
		{`{"a":{"name":"nested"},"name":"top"}`, "name", "nested"}, // the first, as ClickHouse
		{`{"a":{"name":"nested"}}`, "name", "nested"},
		{`{"name":"\ud83d"}`, "name", ""}, // a lone high surrogate is dropped, as ClickHouse
		{`{"surname":"x","name":"y"}`, "name", "y"},
		{`{"name":null}`, "name", ""},
		{`{"name":3}`, "name", ""},
		{`[]`, "name", ""},
		{``, "name", ""},
	}
	for _, c := range cases {
		if got := PayloadString([]byte(c.payload), c.key); got != c.want {
			t.Errorf("PayloadString(%s, %s) = %q, want %q", c.payload, c.key, got, c.want)
		}
	}
}

func TestMatchText(t *testing.T) {
	user := func(e *Event) { e.Attribute.UserID = "Ada-42" }
	cases := []struct {
		name, text string
		e          Event
		want       TextMatch
		ok         bool
	}{
		{"session id, any case", "00000000-0000-4000-8000-00000000000A", sessEvent("custom", `{"name":"x"}`, 1, func(e *Event) {
			e.SessionID = uuid.MustParse("00000000-0000-4000-8000-00000000000a")
		}), TextMatch{Label: "Session Id", Value: "00000000-0000-4000-8000-00000000000a"}, true},
		{"part of a session id", "00000000-0000", sessEvent("custom", `{"name":"x"}`, 1, nil), TextMatch{}, false},
		{"user id exactly", "ada-42", sessEvent("custom", `{"name":"x"}`, 1, user), TextMatch{Label: "User Id", Value: "Ada-42"}, true},
		{"part of a user id", "ada", sessEvent("custom", `{"name":"x"}`, 1, user), TextMatch{}, false},
		{"type", "CUSTOM", sessEvent("custom", `{"name":"x"}`, 1, nil), TextMatch{Label: "Type", Value: "custom"}, true},
		{"custom name", "cart", sessEvent("custom", `{"name":"Add_To_CART"}`, 1, nil), TextMatch{Label: "Custom Event", Value: "Add_To_CART"}, true},
		{"exception type before message", "illegal", sessEvent("exception", crashPayload, 1, nil),
			TextMatch{Label: "Exception Type", Value: "java.lang.IllegalStateException"}, true},
		{"exception message", "cart is", sessEvent("exception", crashPayload, 1, nil), TextMatch{Label: "Exception Message", Value: "Cart is empty"}, true},
		{"exception method", "onclick", sessEvent("exception", crashPayload, 1, nil), TextMatch{Label: "Exception Method", Value: "onClick"}, true},
		{"exception file", "b.kt", sessEvent("exception", crashPayload, 1, nil), TextMatch{Label: "Exception File", Value: "B.kt"}, true},
		{"anr message", "blocked", sessEvent("anr", anrPayload, 1, nil), TextMatch{Label: "ANR Message", Value: "blocked"}, true},
		{"string line", "timeout", sessEvent("string", `{"string":"Payment TIMEOUT"}`, 1, nil), TextMatch{Label: "Log", Value: "Payment TIMEOUT"}, true},
		{"log body", "warm", sessEvent("log", `{"body":"cache warm","severity_number":9}`, 1, nil), TextMatch{Label: "Log", Value: "cache warm"}, true},
		{"class name", "checkout", sessEvent("lifecycle_activity", `{"type":"resumed","class_name":"a.CheckoutActivity"}`, 1, nil),
			TextMatch{Label: "Class Name", Value: "a.CheckoutActivity"}, true},
		{"target before target id", "button", sessEvent("gesture_click", `{"target":"MaterialButton","target_id":"buy_button","x":1,"y":1}`, 1, nil),
			TextMatch{Label: "Target", Value: "MaterialButton"}, true},
		{"target id", "buy", sessEvent("gesture_click", `{"target":"MaterialButton","target_id":"buy_button","x":1,"y":1}`, 1, nil),
			TextMatch{Label: "Target Id", Value: "buy_button"}, true},
		{"non-ASCII letters keep their case", "über", sessEvent("custom", `{"name":"Überweisung"}`, 1, nil), TextMatch{}, false},
		{"non-ASCII letters as sent", "Über", sessEvent("custom", `{"name":"Überweisung"}`, 1, nil), TextMatch{Label: "Custom Event", Value: "Überweisung"}, true},
		{"screen names are not searched", "home", sessEvent("screen_view", `{"name":"Home"}`, 1, nil), TextMatch{}, false},
		{"http urls are not searched", "a.io", sessEvent("http", `{"url":"https://a.io","method":"get"}`, 1, nil), TextMatch{}, false},
		{"a member of another type", "x", sessEvent("navigation", `{"to":"x","name":"x"}`, 1, nil), TextMatch{}, false},
	}
	for _, c := range cases {
		got, ok := MatchText(&c.e, c.text)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: MatchText(%q) = %+v, %v; want %+v, %v", c.name, c.text, got, ok, c.want, c.ok)
		}
	}
}

func TestExcerptAndText(t *testing.T) {
	long := strings.Repeat("a", 300) + "NEEDLE" + strings.Repeat("b", 300)       // 606 bytes
	multiByte := strings.Repeat("€", 100) + "needle!" + strings.Repeat("ü", 150) // 300 + 7 + 300 bytes
	cases := []struct {
		name, value, text string
		excerpt           TextMatch
		shown             string
	}{
		{"short", "cache warm", "warm", TextMatch{Label: "Log", Value: "cache warm"}, "Log: cache warm"},
		{"400 bytes and the text's are whole", strings.Repeat("x", 401), "x", TextMatch{Label: "Log", Value: strings.Repeat("x", 401)},
			"Log: " + strings.Repeat("x", 100) + "…"},
		{"match near the start", "needle" + strings.Repeat("z", 500), "needle",
			TextMatch{Label: "Log", Value: "needle" + strings.Repeat("z", 400), After: true},
			"Log: needle" + strings.Repeat("z", 94) + "…"},
		{"match in the middle", long, "needle", TextMatch{Label: "Log", Value: long[140:546], Before: true, After: true},
			"Log: …" + strings.Repeat("a", 40) + "NEEDLE" + strings.Repeat("b", 54) + "…"},
		{"match near the end", strings.Repeat("q", 500) + "needle", "NEEDLE",
			TextMatch{Label: "Log", Value: strings.Repeat("q", 160) + "needle", Before: true},
			"Log: …" + strings.Repeat("q", 40) + "needle"},
		// The excerpt is bytes 140–545 (400 and the 6 of the text): it starts with the last byte
		// of the 47th € and ends with the first byte of the 120th ü; Text drops both halves,
		// leaving 53 € and 119 ü, and shows 40 € before the match.
		{"cut inside characters", multiByte, "needle", TextMatch{Label: "Log", Value: multiByte[140:546], Before: true, After: true},
			"Log: …" + strings.Repeat("€", 40) + "needle!" + strings.Repeat("ü", 53) + "…"},
	}
	for _, c := range cases {
		ex := Excerpt("Log", c.value, c.text)
		if ex != c.excerpt {
			t.Errorf("%s: Excerpt = %+v\nwant %+v", c.name, ex, c.excerpt)
		}
		if got := ex.Text(c.text); got != c.shown {
			t.Errorf("%s: Text = %q\nwant %q", c.name, got, c.shown)
		}
	}
}

func TestFoldASCII(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": "abc", "ABC-Üx": "abc-Üx", "Σ": "Σ", "a\xffB": "a\xffb"} {
		if got := FoldASCII(in); got != want {
			t.Errorf("FoldASCII(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSessionAcc: the summary and the selection do not depend on the order the events come in,
// nor on copies of an event, and keep nothing of the events' buffers.
func TestSessionAcc(t *testing.T) {
	base := int64(1_000_000_000)
	id := func(n byte) uuid.UUID { return uuid.UUID{15: n, 6: 0x40, 8: 0x80} }
	mk := func(n byte, typ, payload string, ts int64, edit func(e *Event)) Event {
		e := sessEvent(typ, payload, base+ts, edit)
		e.ID = id(n)
		return e
	}
	v2 := func(e *Event) { e.Attribute.AppVersion, e.Attribute.AppBuild = "2.0", "2" }
	events := []Event{
		mk(3, "session_start", "", 0, nil),
		mk(2, "custom", `{"name":"checkout"}`, 10, func(e *Event) { e.Attribute.UserID = "u1"; e.Attribute.DeviceName = "tied" }),
		mk(1, "custom", `{"name":"checkout again"}`, 10, func(e *Event) { e.Attribute.UserID = "u0" }), // tie: id 1 is first
		mk(4, "exception", crashPayload, 20, v2),
		mk(5, "cpu_usage", `{"percentage_usage":1}`, 30, nil),
		mk(6, "custom", `{"name":"late"}`, 500, nil), // outside the window
	}
	q := SessionQuery{EventFilter: EventFilter{App: sessApp, From: base, To: base + 100}, Issue: true,
		Classes: []IssueClass{ClassCrash}, FreeText: "CHECKOUT"}
	want := SessionSummary{SessionID: events[0].SessionID, First: base, Last: base + 30,
		Device: SessionDevice{AppVersion: "1.0", AppBuild: "1", OSName: "android", OSVersion: "34"},
		UserID: "u0", Match: TextMatch{Label: "Custom Event", Value: "checkout again"}}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		evs := append([]Event(nil), events...)
		evs = append(evs, events[r.IntN(len(events))]) // a copy of one
		r.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		var a SessionAcc
		for i := range evs {
			a.Add(&q, &evs[i])
		}
		if !a.Selected(&q) {
			t.Fatalf("round %d: not selected", round)
		}
		if got := a.Summary(want.SessionID); got != want {
			t.Fatalf("round %d: Summary = %+v\nwant %+v", round, got, want)
		}
	}
	// Selection.
	cases := []struct {
		name string
		edit func(q *SessionQuery)
		want bool
	}{
		{"as above", nil, true},
		{"crash of another version", func(q *SessionQuery) { q.Versions = []AppVersion{{"1.0", "1"}} }, false},
		{"version of the crash", func(q *SessionQuery) { q.Versions = []AppVersion{{"2.0", "2"}}; q.FreeText = "" }, true},
		{"text and crash in events of different versions", func(q *SessionQuery) { q.Versions = []AppVersion{{"2.0", "2"}} }, false},
		{"ANR asked", func(q *SessionQuery) { q.Classes = []IssueClass{ClassANR} }, false},
		{"background", func(q *SessionQuery) { q.Issue, q.Background = false, true }, false},
		{"text missing", func(q *SessionQuery) { q.FreeText = "nope" }, false},
		{"text outside the window", func(q *SessionQuery) { q.FreeText = "late" }, false},
		{"only the session_start", func(q *SessionQuery) { q.To = base + 1; q.Issue, q.FreeText = false, "" }, false},
	}
	for _, c := range cases {
		q2 := q
		if c.edit != nil {
			c.edit(&q2)
		}
		var a SessionAcc
		for i := range events {
			a.Add(&q2, &events[i])
		}
		if got := a.Selected(&q2); got != c.want {
			t.Errorf("%s: Selected = %v, want %v", c.name, got, c.want)
		}
	}
	// Strings are copies: overwriting the events' buffers changes nothing.
	buf := []byte("sh.Name")
	e := mk(7, "custom", `{"name":"x"}`, 1, nil)
	e.Attribute.DeviceName = unsafe.String(&buf[0], len(buf))
	var a SessionAcc
	a.Add(&SessionQuery{EventFilter: EventFilter{App: sessApp, From: base, To: base + 100}}, &e)
	copy(buf, "XXXXXXX")
	if got := a.Summary(e.SessionID).Device.DeviceName; got != "sh.Name" {
		t.Errorf("device name aliases the event: %q", got)
	}
}

func TestCompareSessionsNewestAndPlot(t *testing.T) {
	hour := int64(time.Hour)
	t0 := time.Date(2025, 3, 8, 23, 30, 0, 0, time.UTC).UnixNano()
	s := func(n byte, first int64, v string) SessionSummary {
		return SessionSummary{SessionID: uuid.UUID{15: n}, First: first, Device: SessionDevice{AppVersion: v, AppBuild: "1"}}
	}
	list := []SessionSummary{s(1, t0, "1.0"), s(3, t0, "1.0"), s(2, t0+hour, "2.0"), s(4, t0-6*hour, "1.0")}
	slices.SortFunc(list, func(a, b SessionSummary) int { return CompareSessionsNewest(&a, &b) })
	var order []byte
	for _, x := range list {
		order = append(order, x.SessionID[15])
	}
	if string(order) != "\x02\x03\x01\x04" {
		t.Errorf("newest first: %v, want [2 3 1 4]", order)
	}
	utc := SessionPlotOf(list, Buckets{Group: PlotDays})
	day := time.Date(2025, 3, 8, 0, 0, 0, 0, time.UTC).UnixNano()
	want := []SessionPlotCell{{AppVersion{"1.0", "1"}, day, 3}, {AppVersion{"2.0", "1"}, day + 24*hour, 1}}
	if len(utc) != len(want) || utc[0] != want[0] || utc[1] != want[1] {
		t.Errorf("plot by UTC day = %+v, want %+v", utc, want)
	}
	ist, _ := ParseBuckets("days", "Asia/Kolkata") // 23:30 UTC is 05:00 the next day, 17:30 is 23:00
	got := SessionPlotOf(list, ist)
	istDay := time.Date(2025, 3, 9, 0, 0, 0, 0, ist.Loc).UnixNano()
	want = []SessionPlotCell{{AppVersion{"1.0", "1"}, istDay - 24*hour, 1}, {AppVersion{"1.0", "1"}, istDay, 2}, {AppVersion{"2.0", "1"}, istDay, 1}}
	if len(got) != len(want) {
		t.Fatalf("plot by day in Kolkata = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("plot by day in Kolkata [%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}
