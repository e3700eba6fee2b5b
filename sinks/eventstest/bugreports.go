package eventstest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// BugReportStore is an event store that answers the bug report queries: both event stores are.
type BugReportStore interface {
	sinks.EventStore
	sinks.BugReports
}

// BugReportsReference is the brute-force answer of sinks.BugReports over a set of events, by
// the model's Go definitions. Backends' own tests and the node's tests may use it.
type BugReportsReference struct {
	events []model.Event // one per (app, event id): the last written
}

// NewBugReportsReference keeps the last of the events written with each (app, id), as a store
// does.
func NewBugReportsReference(written []model.Event) *BugReportsReference {
	return &BugReportsReference{events: lastEvents(written)}
}

func (r *BugReportsReference) selected(q *model.BugReportQuery) []model.Event {
	var out []model.Event
	for i := range r.events {
		if q.Match(&r.events[i]) {
			out = append(out, r.events[i])
		}
	}
	slices.SortFunc(out, func(a, b model.Event) int { return model.CompareBugReports(&a, &b) })
	return out
}

// BugReports is sinks.BugReports.BugReports.
func (r *BugReportsReference) BugReports(q *model.BugReportQuery, limit, offset int) []model.Event {
	all := r.selected(q)
	if offset >= len(all) {
		return nil
	}
	return all[offset:min(len(all), offset+limit)]
}

// BugReportCounts is sinks.BugReports.BugReportCounts.
func (r *BugReportsReference) BugReportCounts(q *model.BugReportQuery, b model.Buckets) []model.BugReportCount {
	type key struct {
		v      model.AppVersion
		bucket int64
	}
	counts := map[key]uint64{}
	for _, e := range r.selected(q) {
		counts[key{model.AppVersion{Name: e.Attribute.AppVersion, Code: e.Attribute.AppBuild}, b.Start(time.Unix(0, e.Timestamp)).UnixNano()}]++
	}
	out := []model.BugReportCount{}
	for k, n := range counts {
		out = append(out, model.BugReportCount{Version: k.v, Bucket: k.bucket, Count: n})
	}
	slices.SortFunc(out, func(a, b model.BugReportCount) int { return model.CompareBugReportCounts(&a, &b) })
	return out
}

// BugReportEvent makes a bug report of app in session at ts (Unix ns) whose bug_report member
// is payload, as stored (compact JSON; `{"description":"…"}` for what SDKs send).
func BugReportEvent(app, session, id uuid.UUID, ts int64, payload string, a model.Attributes) model.Event {
	e := model.Event{ID: id, AppID: app, SessionID: session, Type: model.BugReportType, Timestamp: ts, UserTriggered: true,
		Attribute: a, Payload: []byte(payload)}
	e.Facts = model.DeriveFacts(&e)
	return e
}

// bugData is the dataset of RunBugReports.
type bugData struct {
	A, B, C uuid.UUID
	written [][]model.Event
	ref     *BugReportsReference
	lo, hi  int64 // app A's report times, min and max
	closed  map[uuid.UUID]struct{}
	reports []model.Event // app A's reports, as written first
}

// bugPayloads are the bug_report members of the dataset, as stored (raw JSON): what SDKs send,
// escapes of every kind, texts with LIKE's wildcards, members other than description, and the
// unpaired surrogates whose decoding model.BugReportDescription pins down.
var bugPayloads = []string{
	`{"description":"Checkout button does nothing"}`,
	`{"description":"App crashed when I tapped \"Pay\""}`,
	`{"description":"Line one\nline two: the CHECKOUT spinner"}`,
	`{"description":"Path a\/b\/c is wrong"}`,
	`{"description":"Caf\u00e9 menu shows ??"}`,
	`{"description":"Emoji \ud83d\ude00 broke the layout"}`,
	`{"description":"Raw UTF-8: café crème 😀"}`,
	`{"description":"100% of the time_ it fails"}`,
	`{"description":"C:\\Users\\ada is shown"}`,
	`{"description":"lone \udc00 low surrogate"}`,
	`{"description":"lone high \ud83d then text"}`,
	`{"description":"high then escape \ud83d\nnext"}`,
	`{"description":"cut \ud83d\" after pay"}`,
	`{"description":""}`,
	`{"description":null}`,
	`{}`,
	`{"meta":{"description":"inner checkout"},"description":"outer"}`,
	`{"severity":"high","description":"Tab order is off","extra":[1,2]}`,
	`{"description":"` + strings.Repeat("long text ", 150) + `needle` + strings.Repeat(" more text", 150) + `"}`,
}

var (
	bugUsers   = []string{"", "ada", "Ada.Lovelace", "grace_h", "USER-42"}
	bugDevices = []string{"sunfish", "iPhone15,2"}
)

// bugDay is the first day of the dataset: with the next two days it crosses local midnights in
// Asia/Kolkata and the start of daylight saving time in America/New_York (2025-03-09).
var bugDay = time.Date(2025, 3, 8, 0, 0, 0, 0, time.UTC).UnixNano() + 456_789

// buildBugData makes app A's reports at random (fixed seed): every payload of bugPayloads, ties
// in time, every filter attribute varied, users in several cases, attachments on some; a third
// of them closed. Some reports are written twice; app A also has events of other types whose
// payload has a description. App B has copies of a few of A's reports; app C is hand-written
// (testBugReportsHand).
func buildBugData() *bugData {
	d := &bugData{A: uuid.New(), B: uuid.New(), C: uuid.New(), closed: map[uuid.UUID]struct{}{}}
	r := rand.New(rand.NewPCG(41, 5))
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	sessions := make([]uuid.UUID, 15)
	for i := range sessions {
		sessions[i] = uuid.New()
	}
	ts := bugDay
	var evs []model.Event
	for i := range 280 {
		if i%7 != 0 { // every seventh report at the time of the one before: ties
			ts += int64(r.IntN(40*60)) * int64(time.Second) / 2
		}
		v := spanVersions[r.IntN(len(spanVersions))]
		os := spanOSes[r.IntN(len(spanOSes))]
		a := model.Attributes{InstallationID: "inst", AppVersion: v.Name, AppBuild: v.Code, OSName: os.Name, OSVersion: os.Version,
			DeviceName: pick(bugDevices), DeviceManufacturer: pick([]string{"Google", "Apple"}), DeviceModel: "m",
			DeviceLocale: pick([]string{"en-US", "fr-FR"}), NetworkType: pick([]string{"wifi", "cellular"}),
			NetworkProvider: pick([]string{"", "Orange"}), NetworkGeneration: pick([]string{"", "4g", "5g"}),
			UserID: pick(bugUsers), ThreadName: "main"}
		payload := bugPayloads[i%len(bugPayloads)]
		if i >= len(bugPayloads) {
			payload = bugPayloads[r.IntN(len(bugPayloads))]
		}
		e := BugReportEvent(d.A, sessions[r.IntN(len(sessions))], uuid.New(), ts, payload, a)
		if r.IntN(4) != 0 {
			e.UserDefined = []model.UDAttr{{Key: "n", Type: model.UDInt64, Value: strconv.Itoa(r.IntN(10))},
				{Key: "tier", Type: model.UDString, Value: pick([]string{"gold", "silver"})}}
		}
		if r.IntN(3) == 0 {
			for k := range 1 + r.IntN(2) {
				id := uuid.New()
				e.Attachments = append(e.Attachments, model.Attachment{ID: id, Name: fmt.Sprintf("screenshot-%d.png", k),
					Type: "screenshot", BlobKey: "attachments/" + d.A.String() + "/" + id.String(), Size: int64(1000 + r.IntN(9000))})
			}
		}
		if r.IntN(3) == 0 {
			d.closed[e.ID] = struct{}{}
		}
		evs = append(evs, e)
	}
	d.reports = slices.Clone(evs)
	d.lo, d.hi = evs[0].Timestamp, ts
	// Not bug reports, with a description all the same; their ids are among the closed too.
	for i := range 3 {
		e := model.Event{ID: uuid.New(), AppID: d.A, SessionID: sessions[i], Type: "custom", Timestamp: bugDay + int64(i),
			Payload: []byte(`{"name":"checkout","description":"Checkout button does nothing"}`)}
		d.closed[e.ID] = struct{}{}
		evs = append(evs, e)
	}
	d.closed[uuid.New()] = struct{}{} // an id of no event
	for i := range 5 {                // app B: A's reports in another app
		e := evs[i]
		e.ID, e.AppID = uuid.New(), d.B
		evs = append(evs, e)
	}
	d.written = [][]model.Event{evs, everyNth(evs, 19), handReports(d.C)}
	d.ref = NewBugReportsReference(concat(d.written))
	return d
}

// RunBugReports checks the sinks.BugReports contract. open must return a fresh, empty store;
// the suite writes one dataset into it and closes it at the end. Each answer is compared with
// BugReportsReference; app C's answers are also written out by hand (testBugReportsHand). Call
// it inside t.Run("<backend>", …).
func RunBugReports(t *testing.T, open func(t *testing.T) BugReportStore) {
	d := buildBugData()
	s := openWritten(t, open, d.written, nil)
	c := ctx(t)
	t.Run("HandWritten", func(t *testing.T) { testBugReportsHand(t, s, d) })
	t.Run("Descriptions", func(t *testing.T) {
		// Every payload's description as the store matches it: each report's description, in
		// full and in capitals, selects that report (and the others with the same text).
		seen := map[string]bool{}
		for _, e := range d.reports[:len(bugPayloads)] {
			desc := model.BugReportDescription(e.Payload)
			if desc == "" || seen[desc] {
				continue
			}
			seen[desc] = true
			upper := strings.Map(func(r rune) rune { // A–Z only: case is folded for ASCII letters alone
				if r >= 'a' && r <= 'z' {
					return r - ('a' - 'A')
				}
				return r
			}, desc)
			if !utf8.ValidString(desc) {
				upper = desc // strings.Map would replace the invalid bytes
			}
			for _, text := range []string{desc, upper} {
				q := model.BugReportQuery{EventFilter: model.EventFilter{App: d.A, From: d.lo, To: d.hi + 1}, FreeText: text}
				got, err := s.BugReports(c, &q, 1000, 0)
				if err != nil {
					t.Fatalf("BugReports: %v", err)
				}
				want := d.ref.BugReports(&q, 1000, 0)
				if !slices.ContainsFunc(want, func(w model.Event) bool { return w.ID == e.ID }) {
					t.Fatalf("free text %q: the reference does not select the report it comes from", text)
				}
				compareEvents(t, fmt.Sprintf("free text %q", text), got, want)
			}
		}
	})
	queries := bugQueries(t, d)
	t.Run("BugReports", func(t *testing.T) {
		for _, q := range queries {
			all := d.ref.BugReports(&q.q, 1<<30, 0)
			if !q.empty && len(all) == 0 {
				t.Fatalf("%s: selects nothing; the dataset must make it select some", q.name)
			}
			for _, p := range [][2]int{{1000, 0}, {1, 0}, {5, 0}, {5, 5}, {3, len(all) - 2}, {10, len(all)}} {
				if p[1] < 0 {
					continue
				}
				got, err := s.BugReports(c, &q.q, p[0], p[1])
				if err != nil {
					t.Fatalf("%s: BugReports: %v", q.name, err)
				}
				compareEvents(t, fmt.Sprintf("%s limit %d offset %d", q.name, p[0], p[1]), got, d.ref.BugReports(&q.q, p[0], p[1]))
			}
		}
	})
	zones := []model.Buckets{{Group: model.PlotMinutes}, {Group: model.PlotHours}, {Group: model.PlotDays}, {Group: model.PlotMonths}}
	for _, name := range []string{"Asia/Kolkata", "America/New_York"} {
		for _, g := range []string{"minutes", "hours", "days", "months"} {
			b, err := model.ParseBuckets(g, name)
			if err != nil {
				t.Fatalf("ParseBuckets(%s, %s): %v", g, name, err)
			}
			zones = append(zones, b)
		}
	}
	t.Run("BugReportCounts", func(t *testing.T) {
		for _, q := range queries {
			for _, b := range zones {
				got, err := s.BugReportCounts(c, &q.q, b)
				if err != nil {
					t.Fatalf("%s: BugReportCounts: %v", q.name, err)
				}
				want := d.ref.BugReportCounts(&q.q, b)
				if len(got) == 0 && len(want) == 0 {
					continue
				}
				if df := diff(got, want); df != "" {
					t.Errorf("%s by %s in %v:\n%s", q.name, b.Group, b.Loc, df)
				}
			}
		}
	})
}

type bugQueryCase struct {
	name  string
	q     model.BugReportQuery
	empty bool // selects nothing by design
}

// bugQueries are the filter cases of app A: each filter alone, some together, statuses,
// free texts of every kind, and windows whose bounds are report times.
func bugQueries(t *testing.T, d *bugData) []bugQueryCase {
	full := model.EventFilter{App: d.A, From: d.lo, To: d.hi + 1}
	mid := model.EventFilter{App: d.A, From: d.lo + (d.hi-d.lo)/4, To: d.lo + (d.hi-d.lo)*3/4}
	times := make([]int64, len(d.reports))
	for i, e := range d.reports {
		times[i] = e.Timestamp
	}
	exact := model.EventFilter{App: d.A, From: times[len(times)/3], To: times[len(times)*2/3]}
	var someClosed, someOpen model.Event
	for _, e := range d.reports {
		if _, ok := d.closed[e.ID]; ok {
			someClosed = e
		} else {
			someOpen = e
		}
	}
	q := func(f model.EventFilter, edit func(q *model.BugReportQuery)) model.BugReportQuery {
		bq := model.BugReportQuery{EventFilter: f}
		if edit != nil {
			edit(&bq)
		}
		return bq
	}
	text := func(s string) func(q *model.BugReportQuery) { return func(q *model.BugReportQuery) { q.FreeText = s } }
	status := func(closed map[uuid.UUID]struct{}, sts ...model.BugReportStatus) func(q *model.BugReportQuery) {
		return func(q *model.BugReportQuery) { q.Statuses, q.Closed = sts, closed }
	}
	return []bugQueryCase{
		{name: "full", q: q(full, nil)},
		{name: "mid", q: q(mid, nil)},
		{name: "exact-bounds", q: q(exact, nil)},
		{name: "empty-window", q: q(model.EventFilter{App: d.A, From: times[5], To: times[5]}, nil), empty: true},
		{name: "versions", q: q(full, func(q *model.BugReportQuery) { q.Versions = spanVersions[:2] })},
		{name: "version-cross", q: q(full, func(q *model.BugReportQuery) { q.Versions = []model.AppVersion{{Name: "1.0", Code: "11"}} }), empty: true},
		{name: "os", q: q(full, func(q *model.BugReportQuery) { q.OSVersions = spanOSes[1:] })},
		{name: "device-names", q: q(full, func(q *model.BugReportQuery) { q.DeviceNames = []string{"sunfish"} })},
		{name: "manufacturers", q: q(full, func(q *model.BugReportQuery) { q.DeviceManufacturers = []string{"Apple"} })},
		{name: "locales", q: q(full, func(q *model.BugReportQuery) { q.Locales = []string{"fr-FR"} })},
		{name: "network", q: q(full, func(q *model.BugReportQuery) {
			q.NetworkTypes, q.NetworkProviders, q.NetworkGenerations = []string{"wifi"}, []string{"Orange"}, []string{"", "5g"}
		})},
		{name: "countries", q: q(full, func(q *model.BugReportQuery) { q.Countries = []string{"FR"} }), empty: true},
		{name: "ud", q: q(full, func(q *model.BugReportQuery) {
			q.UD = mustUD(t, `{"or":[`+udCmp("n", "int64", "gte", `"7"`)+`,`+udCmp("tier", "string", "eq", `"gold"`)+`]}`)
		})},
		{name: "open", q: q(full, status(d.closed, model.BugReportOpen))},
		{name: "closed", q: q(full, status(d.closed, model.BugReportClosed))},
		{name: "closed-twice", q: q(mid, status(d.closed, model.BugReportClosed, model.BugReportClosed))},
		{name: "both-statuses", q: q(full, status(d.closed, model.BugReportClosed, model.BugReportOpen))},
		{name: "closed-none-closed", q: q(full, status(map[uuid.UUID]struct{}{}, model.BugReportClosed)), empty: true},
		{name: "open-none-closed", q: q(full, status(nil, model.BugReportOpen))},
		{name: "text-word", q: q(full, text("checkout"))},
		{name: "text-capitals", q: q(full, text("CHECKOUT BUTTON"))},
		{name: "text-quotes", q: q(full, text(`"pay"`))},
		{name: "text-slash", q: q(full, text("a/b/c"))},
		{name: "text-escaped-e-acute", q: q(full, text("CAFé"))},
		{name: "text-non-ascii-case", q: q(full, text("CAFÉ")), empty: true},
		{name: "text-emoji", q: q(full, text("😀"))},
		{name: "text-newline", q: q(full, text("one\nline"))},
		{name: "text-percent", q: q(full, text("100%"))},
		{name: "text-underscore", q: q(full, text("time_ it"))},
		{name: "text-like-wildcards", q: q(full, text("100_ of")), empty: true},
		{name: "text-backslash", q: q(full, text(`C:\USERS`))},
		{name: "text-long", q: q(full, text("text needle more"))},
		{name: "text-nested-first", q: q(full, text("inner")), empty: false},
		{name: "text-nested-outer", q: q(full, text("outer")), empty: true},
		{name: "text-lone-low", q: q(full, text("lone \xed\xb0\x80 low"))},
		{name: "text-lone-high", q: q(full, text("high  then text"))}, // the surrogate is dropped
		{name: "text-high-escape", q: q(full, text("escape nnext"))},
		{name: "text-cut-at-quote", q: q(full, text("after pay")), empty: true},
		{name: "text-user", q: q(full, text("ADA"))},
		{name: "text-user-part", q: q(full, text("lovelace")), empty: true},
		{name: "text-report-id", q: q(full, text(strings.ToUpper(someOpen.ID.String())))},
		{name: "text-session-id", q: q(full, text(someClosed.SessionID.String()))},
		{name: "text-nothing", q: q(full, text("zzz-nothing")), empty: true},
		{name: "together", q: q(mid, func(q *model.BugReportQuery) {
			q.Versions, q.NetworkTypes, q.Statuses, q.Closed = spanVersions[1:], []string{"wifi"}, []model.BugReportStatus{model.BugReportOpen}, d.closed
			q.FreeText = "e"
			q.UD = mustUD(t, udCmp("n", "int64", "lt", `"8"`))
		})},
		{name: "other-app", q: q(model.EventFilter{App: d.B, From: d.lo, To: d.hi + 1}, nil)},
	}
}

// Hand-written reports of app C, on 2025-06-02 from 10:00 UTC (ids in byte order c1 < … < c5).
var (
	handC1 = uuid.MustParse("00000000-0000-4000-8000-0000000000c1")
	handC2 = uuid.MustParse("00000000-0000-4000-8000-0000000000c2")
	handC3 = uuid.MustParse("00000000-0000-4000-8000-0000000000c3")
	handC4 = uuid.MustParse("00000000-0000-4000-8000-0000000000c4")
	handC5 = uuid.MustParse("00000000-0000-4000-8000-0000000000c5")
)

// handReports is app C: five reports in two versions, c2 and c3 at the same time, c5 at 00:00
// UTC the next day and c4 at 06:00 UTC the next day; the user ids are u1 (c1), U1 (c4) and u10.
func handReports(app uuid.UUID) []model.Event {
	t0 := time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	hour := int64(time.Hour)
	s := uuid.MustParse("00000000-0000-4000-8000-00000000005e")
	v30 := model.Attributes{AppVersion: "3.0", AppBuild: "300", OSName: "ios", OSVersion: "18.0", UserID: "u10"}
	v31 := model.Attributes{AppVersion: "3.1", AppBuild: "310", OSName: "ios", OSVersion: "18.1"}
	c1, c4 := v30, v31
	c1.UserID, c4.UserID = "u1", "U1"
	return []model.Event{
		BugReportEvent(app, s, handC1, t0, `{"description":"Login fails"}`, c1),
		BugReportEvent(app, s, handC2, t0+hour, `{"description":"Checkout is slow"}`, v30),
		BugReportEvent(app, s, handC3, t0+hour, `{"description":"checkout crashes"}`, v31),
		BugReportEvent(app, s, handC4, t0+20*hour, `{"description":""}`, c4),
		BugReportEvent(app, s, handC5, t0+14*hour, `{"description":"Dark mode"}`, v30),
	}
}

// testBugReportsHand checks app C's answers, written out by hand.
func testBugReportsHand(t *testing.T, s BugReportStore, d *bugData) {
	c := ctx(t)
	day := time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)
	all := model.EventFilter{App: d.C, From: day.UnixNano(), To: day.AddDate(0, 0, 2).UnixNano()}
	closed := map[uuid.UUID]struct{}{handC2: {}, handC5: {}}
	ids := func(what string, q model.BugReportQuery, limit, offset int, want ...uuid.UUID) {
		t.Helper()
		got, err := s.BugReports(c, &q, limit, offset)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var g []uuid.UUID
		for _, e := range got {
			g = append(g, e.ID)
		}
		if !slices.Equal(g, want) {
			t.Errorf("%s = %v, want %v", what, g, want)
		}
	}
	q := func(edit func(q *model.BugReportQuery)) model.BugReportQuery {
		bq := model.BugReportQuery{EventFilter: all}
		if edit != nil {
			edit(&bq)
		}
		return bq
	}
	// Newest first; c2 and c3 tie on time and c3's id is greater.
	ids("all", q(nil), 10, 0, handC4, handC5, handC3, handC2, handC1)
	ids("limit 2 offset 1", q(nil), 2, 1, handC5, handC3)
	ids("offset past the end", q(nil), 2, 5)
	ids("closed", q(func(q *model.BugReportQuery) {
		q.Statuses, q.Closed = []model.BugReportStatus{model.BugReportClosed}, closed
	}), 10, 0, handC5, handC2)
	ids("open", q(func(q *model.BugReportQuery) {
		q.Statuses, q.Closed = []model.BugReportStatus{model.BugReportOpen}, closed
	}), 10, 0, handC4, handC3, handC1)
	ids("free text CHECKOUT", q(func(q *model.BugReportQuery) { q.FreeText = "CHECKOUT" }), 10, 0, handC3, handC2)
	ids("free text u1 (user ids u1 and U1)", q(func(q *model.BugReportQuery) { q.FreeText = "u1" }), 10, 0, handC4, handC1)
	ids("window [10:00, 11:00)", q(func(q *model.BugReportQuery) {
		q.From, q.To = day.Add(10*time.Hour).UnixNano(), day.Add(11*time.Hour).UnixNano()
	}), 10, 0, handC1)

	counts := func(what string, bq model.BugReportQuery, b model.Buckets, want []model.BugReportCount) {
		t.Helper()
		got, err := s.BugReportCounts(c, &bq, b)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if df := diff(got, want); df != "" {
			t.Errorf("%s:\n%s", what, df)
		}
	}
	v30, v31 := model.AppVersion{Name: "3.0", Code: "300"}, model.AppVersion{Name: "3.1", Code: "310"}
	ns := func(t time.Time) int64 { return t.UnixNano() }
	counts("by UTC day", q(nil), model.Buckets{Group: model.PlotDays}, []model.BugReportCount{
		{Version: v30, Bucket: ns(day), Count: 2}, {Version: v31, Bucket: ns(day), Count: 1},
		{Version: v30, Bucket: ns(day.AddDate(0, 0, 1)), Count: 1}, {Version: v31, Bucket: ns(day.AddDate(0, 0, 1)), Count: 1}})
	// Asia/Kolkata is UTC+05:30: c1 15:30, c2 and c3 16:30 on June 2; c5 05:30, c4 11:30 on June 3.
	ist, err := model.ParseBuckets("days", "Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	istDay := time.Date(2025, 6, 2, 0, 0, 0, 0, ist.Loc)
	counts("by day in Asia/Kolkata", q(nil), ist, []model.BugReportCount{
		{Version: v30, Bucket: ns(istDay), Count: 2}, {Version: v31, Bucket: ns(istDay), Count: 1},
		{Version: v30, Bucket: ns(istDay.AddDate(0, 0, 1)), Count: 1}, {Version: v31, Bucket: ns(istDay.AddDate(0, 0, 1)), Count: 1}})
	// America/New_York is UTC−04:00 in June: c1 06:00, c2 and c3 07:00, c5 20:00 on June 2; c4
	// 02:00 on June 3.
	ny, err := model.ParseBuckets("days", "America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	nyDay := time.Date(2025, 6, 2, 0, 0, 0, 0, ny.Loc)
	counts("by day in America/New_York", q(nil), ny, []model.BugReportCount{
		{Version: v30, Bucket: ns(nyDay), Count: 3}, {Version: v31, Bucket: ns(nyDay), Count: 1},
		{Version: v31, Bucket: ns(nyDay.AddDate(0, 0, 1)), Count: 1}})
	counts("open ones by UTC hour", q(func(q *model.BugReportQuery) {
		q.Statuses, q.Closed = []model.BugReportStatus{model.BugReportOpen}, closed
	}), model.Buckets{Group: model.PlotHours}, []model.BugReportCount{
		{Version: v30, Bucket: ns(day.Add(10 * time.Hour)), Count: 1}, {Version: v31, Bucket: ns(day.Add(11 * time.Hour)), Count: 1},
		{Version: v31, Bucket: ns(day.Add(30 * time.Hour)), Count: 1}})
	counts("none", q(func(q *model.BugReportQuery) { q.FreeText = "nothing like it" }), model.Buckets{}, []model.BugReportCount{})
}
