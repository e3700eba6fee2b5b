package model

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestParseBugReportStatus(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want BugReportStatus
		ok   bool
	}{
		{"0", BugReportOpen, true},
		{"1", BugReportClosed, true},
		{"2", 0, false},
		{"", 0, false},
		{"01", 0, false},
		{"open", 0, false},
		{" 1", 0, false},
	} {
		got, ok := ParseBugReportStatus(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseBugReportStatus(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if !BugReportOpen.Valid() || !BugReportClosed.Valid() || BugReportStatus(2).Valid() {
		t.Error("Valid: only 0 and 1 are statuses")
	}
}

func TestBugReportStatusFilter(t *testing.T) {
	for _, tc := range []struct {
		statuses []BugReportStatus
		want     BugReportStatus
		ok       bool
	}{
		{nil, 0, false},
		{[]BugReportStatus{BugReportOpen}, BugReportOpen, true},
		{[]BugReportStatus{BugReportClosed}, BugReportClosed, true},
		{[]BugReportStatus{BugReportClosed, BugReportClosed}, BugReportClosed, true},
		{[]BugReportStatus{BugReportClosed, BugReportOpen}, 0, false},
	} {
		q := BugReportQuery{Statuses: tc.statuses}
		got, ok := q.StatusFilter()
		if got != tc.want || ok != tc.ok {
			t.Errorf("StatusFilter(%v) = %d, %v; want %d, %v", tc.statuses, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBugReportDescription(t *testing.T) {
	for _, tc := range []struct {
		name, payload, want string
	}{
		{"plain", `{"description":"Custom bug report"}`, "Custom bug report"},
		{"absent", `{}`, ""},
		{"empty", `{"description":""}`, ""},
		{"null", `{"description":null}`, ""},
		{"not a string", `{"description":12}`, ""},
		{"nil payload", ``, ""},
		{"later member", `{"x":1,"description":"after"}`, "after"},
		{"escapes", `{"description":"a\/b \"q\" \\ \n\t\r\b\f"}`, "a/b \"q\" \\ \n\t\r\b\f"},
		{"unicode escapes", `{"description":"\u00e9\u20AC\u007f\u0000!"}`, "é€\x7f\x00!"},
		{"surrogate pair", `{"description":"\ud83d\ude00"}`, "😀"},
		{"raw utf-8", `{"description":"çà 😀"}`, "çà 😀"},
		{"key text inside a string", `{"d":"\"description\":\"no\"","description":"yes"}`, "yes"},
		{"string ending in a backslash", `{"d":"x\\","description":"yes"}`, "yes"},
		// The first occurrence in the text, at any depth (visitParamExtractString).
		{"nested first", `{"x":{"description":"inner"},"description":"outer"}`, "inner"},
		{"nested non-string first", `{"x":{"description":1},"description":"outer"}`, ""},
		{"repeated member", `{"description":"a","description":"b"}`, "a"},
		// Unpaired surrogates, as ClickHouse 18.16 decodes them.
		{"lone low surrogate", `{"description":"a\udc00b"}`, "a\xed\xb0\x80b"},
		{"lone high surrogate at the end", `{"description":"a\ud83d"}`, "a"},
		{"high surrogate then text", `{"description":"a\ud83dxyz"}`, "axyz"},
		{"high surrogate then a non-low escape", `{"description":"a\ud83d\u0041b"}`, "ab"},
		{"high high low", `{"description":"a\ud83d\ud83d\ude00b"}`, "a\xed\xb8\x80b"},
		{"high surrogate then another escape", `{"description":"a\ud83d\nb"}`, "anb"},
		{"high surrogate then an escaped quote", `{"description":"a\ud83d\"b"}`, "a"},
		{"unterminated", `{"description":"abc`, ""},
	} {
		if got := BugReportDescription([]byte(tc.payload)); got != tc.want {
			t.Errorf("%s: BugReportDescription(%s) = %q, want %q", tc.name, tc.payload, got, tc.want)
		}
	}
}

func TestBugReportMatch(t *testing.T) {
	app := uuid.New()
	t0 := time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	report := Event{ID: uuid.MustParse("0b9f3c2e-0000-4000-8000-00000000000a"), AppID: app,
		SessionID: uuid.MustParse("5e55a000-0000-4000-8000-000000000001"), Type: BugReportType, Timestamp: t0,
		Attribute: Attributes{AppVersion: "1.2", AppBuild: "12", OSName: "android", OSVersion: "34", DeviceName: "shiba",
			DeviceManufacturer: "Google", DeviceLocale: "en-US", NetworkType: "wifi", UserID: "Ada.L"},
		UserDefined: []UDAttr{{Key: "tier", Type: UDString, Value: "gold"}},
		Payload:     []byte(`{"description":"The Checkout button does nothing"}`)}
	closed := map[uuid.UUID]struct{}{report.ID: {}}
	window := EventFilter{App: app, From: t0, To: t0 + 1}
	ud, err := ParseUDExpr(`{"cmp":{"key":"tier","type":"string","op":"eq","value":"gold"}}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(q *BugReportQuery, e *Event)
		want bool
	}{
		{"window", nil, true},
		{"before the window", func(q *BugReportQuery, _ *Event) { q.From = t0 + 1; q.To = t0 + 2 }, false},
		{"at the window's end", func(q *BugReportQuery, _ *Event) { q.From, q.To = t0-1, t0 }, false},
		{"another app", func(q *BugReportQuery, _ *Event) { q.App = uuid.New() }, false},
		{"another type", func(_ *BugReportQuery, e *Event) { e.Type = "custom" }, false},
		{"version", func(q *BugReportQuery, _ *Event) { q.Versions = []AppVersion{{Name: "1.2", Code: "12"}} }, true},
		{"version pairs, not a cross product", func(q *BugReportQuery, _ *Event) {
			q.Versions = []AppVersion{{Name: "1.2", Code: "13"}, {Name: "1.3", Code: "12"}}
		}, false},
		{"os", func(q *BugReportQuery, _ *Event) { q.OSVersions = []OSVersion{{Name: "android", Version: "34"}} }, true},
		{"os pair", func(q *BugReportQuery, _ *Event) { q.OSVersions = []OSVersion{{Name: "ios", Version: "34"}} }, false},
		{"device", func(q *BugReportQuery, _ *Event) { q.DeviceNames = []string{"oriole", "shiba"} }, true},
		{"locale", func(q *BugReportQuery, _ *Event) { q.Locales = []string{"fr-FR"} }, false},
		{"countries match nothing", func(q *BugReportQuery, _ *Event) { q.Countries = []string{"US"} }, false},
		{"ud", func(q *BugReportQuery, _ *Event) { q.UD = ud }, true},
		{"open, not closed", func(q *BugReportQuery, _ *Event) { q.Statuses = []BugReportStatus{BugReportOpen} }, true},
		{"closed, not closed", func(q *BugReportQuery, _ *Event) { q.Statuses = []BugReportStatus{BugReportClosed} }, false},
		{"closed, closed", func(q *BugReportQuery, _ *Event) {
			q.Statuses, q.Closed = []BugReportStatus{BugReportClosed}, closed
		}, true},
		{"open, closed", func(q *BugReportQuery, _ *Event) {
			q.Statuses, q.Closed = []BugReportStatus{BugReportOpen}, closed
		}, false},
		{"both statuses", func(q *BugReportQuery, _ *Event) {
			q.Statuses, q.Closed = []BugReportStatus{BugReportOpen, BugReportClosed}, closed
		}, true},
		{"free text in the description, any ASCII case", func(q *BugReportQuery, _ *Event) { q.FreeText = "cHECKOUT" }, true},
		{"free text not in the description", func(q *BugReportQuery, _ *Event) { q.FreeText = "crash" }, false},
		{"free text: the user id", func(q *BugReportQuery, _ *Event) { q.FreeText = "ada.l" }, true},
		{"free text: part of the user id", func(q *BugReportQuery, _ *Event) { q.FreeText = "ada" }, false},
		{"free text: the report id in capitals", func(q *BugReportQuery, e *Event) {
			q.FreeText = "0B9F3C2E-0000-4000-8000-00000000000A"
		}, true},
		{"free text: the session id", func(q *BugReportQuery, e *Event) { q.FreeText = e.SessionID.String() }, true},
		{"free text: part of the session id", func(q *BugReportQuery, e *Event) { q.FreeText = "5e55a000" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, e := BugReportQuery{EventFilter: window}, report
			if tc.edit != nil {
				tc.edit(&q, &e)
			}
			if got := q.Match(&e); got != tc.want {
				t.Errorf("Match = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMatchedFreeText(t *testing.T) {
	long := "Steps: open the app, go to the cart, tap Checkout; then nothing happens and the spinner never stops spinning at all"
	e := Event{ID: uuid.MustParse("0b9f3c2e-0000-4000-8000-00000000000a"), SessionID: uuid.MustParse("5e55a000-0000-4000-8000-000000000001"),
		Type: BugReportType, Attribute: Attributes{UserID: "0b9f3c2e-0000-4000-8000-00000000000a"}}
	for _, tc := range []struct {
		name, description, text, want string
	}{
		{"nothing", "short", "zzz", ""},
		{"empty text", "short", "", ""},
		{"whole short description", "Checkout fails", "checkout", "Description: Checkout fails"},
		{"cut both sides", long, "checkout", "Description: …teps: open the app, go to the cart, tap Checkout; then nothing happens and the spinner n…"},
		// 41 é (82 bytes), a space and x at byte 83: 40 bytes back is the middle of an é, so 41.
		{"cut at a rune boundary", "ééééééééééééééééééééééééééééééééééééééééé x", "x", "Description: …éééééééééééééééééééé x"},
		{"id and user id", "", "0B9F3C2E-0000-4000-8000-00000000000A",
			"User Id: 0b9f3c2e-0000-4000-8000-00000000000a Bug Report Id: 0b9f3c2e-0000-4000-8000-00000000000a"},
		{"session", "", "5e55a000-0000-4000-8000-000000000001", "Session Id: 5e55a000-0000-4000-8000-000000000001"},
	} {
		e.Payload = []byte(`{"description":"` + tc.description + `"}`)
		if got := MatchedFreeText(&e, tc.text); got != tc.want {
			t.Errorf("%s: MatchedFreeText(%q) =\n%q, want\n%q", tc.name, tc.text, got, tc.want)
		}
	}
}

func TestCompareBugReports(t *testing.T) {
	a := Event{ID: uuid.MustParse("00000000-0000-4000-8000-000000000001"), Timestamp: 5}
	b := Event{ID: uuid.MustParse("00000000-0000-4000-8000-000000000002"), Timestamp: 5}
	c := Event{ID: uuid.MustParse("00000000-0000-4000-8000-000000000000"), Timestamp: 6}
	evs := []Event{a, b, c}
	slices.SortFunc(evs, func(x, y Event) int { return CompareBugReports(&x, &y) })
	if evs[0].ID != c.ID || evs[1].ID != b.ID || evs[2].ID != a.ID {
		t.Errorf("newest first, then id descending: got %v %v %v", evs[0].ID, evs[1].ID, evs[2].ID)
	}
	counts := []BugReportCount{{Bucket: 2, Version: AppVersion{"1", "1"}}, {Bucket: 1, Version: AppVersion{"2", "2"}},
		{Bucket: 1, Version: AppVersion{"1", "2"}}, {Bucket: 1, Version: AppVersion{"1", "1"}}}
	slices.SortFunc(counts, func(x, y BugReportCount) int { return CompareBugReportCounts(&x, &y) })
	want := []BugReportCount{{Bucket: 1, Version: AppVersion{"1", "1"}}, {Bucket: 1, Version: AppVersion{"1", "2"}},
		{Bucket: 1, Version: AppVersion{"2", "2"}}, {Bucket: 2, Version: AppVersion{"1", "1"}}}
	if !slices.Equal(counts, want) {
		t.Errorf("CompareBugReportCounts: %v, want %v", counts, want)
	}
}
