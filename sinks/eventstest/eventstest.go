// Package eventstest is the conformance suite of the event stores: Run checks sinks.EventStore,
// RunAnalytics sinks.Analytics and RunSpans sinks.Spans (against SpansReference). Every backend's test calls them inside t.Run("<backend>",
// …), so `go test -v` names the backend in each subtest. RunAnalytics compares each answer with
// Reference, the contract's one brute-force reference, which the backends' own tests use on
// data of their own. The package also hands tests the recorded SDK batches (FixturesDir,
// FixtureBatch, RealisticEvents, RealisticSpans).
package eventstest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Run checks the whole EventStore contract. open must return a fresh, empty store; the suite
// closes it when the subtest ends (the backend's own cleanup runs after that).
func Run(t *testing.T, open func(t *testing.T) sinks.EventStore) {
	opened := func(t *testing.T) sinks.EventStore {
		t.Helper()
		s := open(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	}
	t.Run("Ping", func(t *testing.T) {
		if err := opened(t).Ping(ctx(t)); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
	t.Run("EmptyWrites", func(t *testing.T) {
		s := opened(t)
		if err := s.WriteEvents(ctx(t), nil); err != nil {
			t.Errorf("WriteEvents(nil): %v", err)
		}
		if err := s.WriteSpans(ctx(t), []model.Span{}); err != nil {
			t.Errorf("WriteSpans(empty): %v", err)
		}
	})
	t.Run("RoundTripEvents", func(t *testing.T) { testRoundTripEvents(t, opened(t)) })
	t.Run("RoundTripSpans", func(t *testing.T) { testRoundTripSpans(t, opened(t)) })
	t.Run("Fixtures", func(t *testing.T) { testFixtures(t, opened(t)) })
	t.Run("Idempotent", func(t *testing.T) { testIdempotent(t, opened(t)) })
	t.Run("AppsIsolated", func(t *testing.T) { testAppsIsolated(t, opened(t)) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, opened(t)) })
	t.Run("BugReport", func(t *testing.T) { testBugReport(t, opened(t)) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrent(t, opened(t)) })
	t.Run("LargeBatch", func(t *testing.T) { testLargeBatch(t, opened(t)) })
	t.Run("DeleteBefore", func(t *testing.T) { testDeleteBefore(t, opened(t)) })
	t.Run("Usage", func(t *testing.T) { testUsage(t, opened(t)) })
	t.Run("Numbers", func(t *testing.T) { testNumbers(t, opened(t)) }) // numbers.go
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// Odd nanoseconds catch any backend that rounds to micro- or milliseconds.
const tsBase = int64(1_748_257_963_123_456_789)

func fullAttrs(i int) model.Attributes {
	return model.Attributes{
		InstallationID:                 "1fefa265-9e6b-45d8-aa83-23b03070c06e",
		AppVersion:                     "1.2.3-βeta+" + strconv.Itoa(i),
		AppBuild:                       "29137627",
		AppUniqueID:                    "sh.svc.sample",
		Platform:                       "android",
		SDKVersion:                     "0.11.0-SNAPSHOT",
		ThreadName:                     "main ✓",
		UserID:                         "user-ü-42",
		DeviceName:                     "sunfish",
		DeviceModel:                    "Pixel 4a",
		DeviceManufacturer:             "Google",
		DeviceType:                     "phone",
		DeviceIsFoldable:               true,
		DeviceIsPhysical:               true,
		DeviceDensityDPI:               math.MaxUint16,
		DeviceWidthPx:                  1080,
		DeviceHeightPx:                 2138,
		DeviceDensity:                  2.75,
		DeviceLocale:                   "zh-Hant-TW",
		DeviceLowPowerMode:             true,
		DeviceThermalThrottlingEnabled: true,
		OSName:                         "android",
		OSVersion:                      "33",
		OSPageSize:                     math.MaxUint8,
		NetworkType:                    "cellular",
		NetworkProvider:                "Télécom «ÜNÏ»",
		NetworkGeneration:              "5g",
		DeviceCPUArch:                  "arm64-v8a",
		SessionStartTime:               tsBase - 987_654_321,
		// Members without a field, as an SDK sent them: nesting, unicode, escapes, null inside.
		Extra: []byte(`{"patch_id":"60da7d21-2222-4d28-8e3b-e4ec29d7cb31","patch_version":"OTA_1.0.` + strconv.Itoa(i) +
			`","ключ":{"a":[1,-2.5e-300,null,true],"q":"\"\u2028\\ 🚀"}}`),
	}
}

// fullUD has every type, the int64 and float64 extremes and unicode; sorted by key.
func fullUD() []model.UDAttr {
	return []model.UDAttr{
		{Key: "bool_false", Type: model.UDBool, Value: "false"},
		{Key: "bool_true", Type: model.UDBool, Value: "true"},
		{Key: "float_max", Type: model.UDFloat64, Value: strconv.FormatFloat(math.MaxFloat64, 'g', -1, 64)},
		{Key: "float_tiny", Type: model.UDFloat64, Value: strconv.FormatFloat(-math.SmallestNonzeroFloat64, 'g', -1, 64)},
		{Key: "int_max", Type: model.UDInt64, Value: strconv.FormatInt(math.MaxInt64, 10)},
		{Key: "int_min", Type: model.UDInt64, Value: strconv.FormatInt(math.MinInt64, 10)},
		{Key: "string", Type: model.UDString, Value: "héllo, 世界 🚀 \"quoted\" \\ \x00 end"},
		{Key: "string_empty", Type: model.UDString, Value: ""},
		{Key: "ключ", Type: model.UDString, Value: "значение"},
	}
}

// fullEvent has every field set, Facts included: those DeriveFacts gives its payload (group id,
// fatal, foreground) plus a screen and launch facts no real event combines, so that a store
// which drops any fact column fails.
func fullEvent(app uuid.UUID, i int) model.Event {
	e := model.Event{
		ID:            uuid.New(),
		AppID:         app,
		SessionID:     uuid.New(),
		Type:          "exception",
		Timestamp:     tsBase + int64(i)*7_919,
		UserTriggered: true,
		Attribute:     fullAttrs(i),
		UserDefined:   fullUD(),
		Attachments: []model.Attachment{
			{ID: uuid.New(), Name: "screenshot.webp", Type: "screenshot", Extension: "webp", Timestamp: "2025-05-26T11:12:43.52500000Z", BlobKey: "apps/a/screenshot-1.webp",
				Size: 61865, Path: "/var/mobile/Containers/Data/Application/11CC2269/Documents/ü 8ac0dc42"},
			// Size 0 is a real, empty file: it must not come back as SizeUnknown.
			{ID: uuid.New(), Name: "snapshot.json", Type: "layout_snapshot_json", Extension: "json", Timestamp: "2025-05-26T11:12:43.525Z", BlobKey: "apps/a/snap-ü.json",
				Size: 0},
			{ID: uuid.New(), Name: "日志.txt", Type: "log", Size: model.SizeUnknown},
			{ID: uuid.New(), Name: "huge.bin", Type: "log", Size: math.MaxInt64, Path: "C:\\x\\y"},
		},
		Payload: []byte(`{"exceptions":[{"type":"java.lang.IllegalStateException","message":"ünïcode \u2028 \"q\"","frames":[{"line_num":-2,"col_num":-1,"method_name":"run","file_name":"Foo.kt"}]}],"handled":false,"threads":[],"foreground":true}`),
	}
	e.Facts = model.DeriveFacts(&e)
	e.Facts.Screen = "sh.measure.Ünïcode 🚀 Screen"
	e.Facts.LaunchKind, e.Facts.LaunchMs = model.LaunchCold, 1234.5678901234567+float64(i)
	return e
}

func testRoundTripEvents(t *testing.T, s sinks.EventStore) {
	app := uuid.New()
	floats := fullEvent(app, 3)
	floats.Attribute.DeviceDensity = math.MaxFloat32
	tiny := fullEvent(app, 4)
	tiny.Attribute.DeviceDensity = math.SmallestNonzeroFloat32
	tiny.Facts.LaunchMs = math.SmallestNonzeroFloat64
	floats.Facts.LaunchMs = math.MaxFloat64
	// Facts of each kind alone: a crash seen in the background, a screen, a launch.
	background := fullEvent(app, 5)
	background.Facts = model.EventFacts{GroupID: "0123456789abcdef0123456789abcdef", Fatal: true}
	screen := model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "screen_view",
		Timestamp: tsBase + 6, Payload: []byte(`{"name":"Home"}`)}
	screen.Facts = model.DeriveFacts(&screen)
	launch := model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "hot_launch",
		Timestamp: tsBase + 7, Payload: []byte(`{"app_visible_uptime":137180,"on_next_draw_uptime":137208}`)}
	launch.Facts = model.DeriveFacts(&launch)
	// A request: every HTTP fact set, derived from its payload (elapsed 5 s, latency 250 ms);
	// and facts no SDK gives (unicode, an unknown latency, the largest elapsed time and status).
	request := HTTPEvent(app, uuid.New(), tsBase+9, "GET", "https://api.example.com:8443/v1/users/1234?page=2", 503,
		1000, 1250, tsBase-5*int64(time.Second), model.Attributes{InstallationID: "i"})
	requestExtreme := HTTPEvent(app, uuid.New(), tsBase+10, "post", "https://x.io/", 200, 0, 0, 0, model.Attributes{})
	requestExtreme.Facts.HTTP = model.HTTPFacts{Domain: "bücher.example", Path: "/ü/*/🚀", Method: "propfind",
		Status: math.MaxUint16, LatencyMs: -1, ElapsedMs: math.MaxInt64}
	if screen.Facts.Screen != "Home" || launch.Facts.LaunchKind != model.LaunchHot || launch.Facts.LaunchMs != 28 ||
		request.Facts.HTTP != (model.HTTPFacts{Domain: "api.example.com:8443", Path: "/v1/users/*", Method: "get", Status: 503,
			LatencyMs: 250, ElapsedMs: 5000}) {
		t.Fatalf("test events without their facts: %+v, %+v, %+v", screen.Facts, launch.Facts, request.Facts)
	}
	cases := []struct {
		name string
		e    model.Event
	}{
		{"full", fullEvent(app, 1)},
		{"float32-max", floats},
		{"float32-tiny", tiny},
		{"facts-background-crash", background},
		{"facts-screen", screen},
		{"facts-launch", launch},
		{"facts-http", request},
		{"facts-http-extreme", requestExtreme},
		// Only the identity: every optional field absent must come back as its zero value.
		{"zero", model.Event{ID: uuid.New(), AppID: app}},
		// What most SDKs send: no attribute members beyond the known ones, attachments without
		// size or path. No Facts either (as a row written before facts were derived): they must
		// come back zero.
		{"no-extra-no-size", model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "exception",
			Timestamp: tsBase + 2, Attribute: model.Attributes{InstallationID: "i", AppVersion: "1"},
			Attachments: []model.Attachment{
				{ID: uuid.New(), Name: "s.png", Type: "screenshot", Size: model.SizeUnknown},
				{ID: uuid.New(), Name: "t.png", Type: "screenshot", Size: model.SizeUnknown, Path: "/only/a/path"},
				{ID: uuid.New(), Name: "u.png", Type: "screenshot", Size: 1},
			},
			Payload: []byte(`{"handled":true}`)}},
		{"minimal", model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "lifecycle_app", Timestamp: tsBase + 1}},
		// Empty non-nil slices are the same as absent: they come back nil.
		{"empty-slices", model.Event{ID: uuid.New(), AppID: app, Type: "custom", Timestamp: tsBase + 3,
			Attribute:   model.Attributes{Extra: []byte{}},
			UserDefined: []model.UDAttr{}, Attachments: []model.Attachment{}, Payload: []byte{}}},
		{"before-epoch", model.Event{ID: uuid.New(), AppID: app, Type: "custom", Timestamp: -1_000_000_001,
			Payload: []byte(`{"name":"old"}`)}},
		{"max-time", model.Event{ID: uuid.New(), AppID: app, Type: "custom", Timestamp: math.MaxInt64}},
		{"min-time", model.Event{ID: uuid.New(), AppID: app, Type: "custom", Timestamp: math.MinInt64 + 1}},
		{"unicode", model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "gesture_click",
			Timestamp: tsBase + 5, Attribute: model.Attributes{ThreadName: "主线程", DeviceName: "📱 Phöne", UserID: "\u202eevil"},
			UserDefined: []model.UDAttr{{Key: "名前", Type: model.UDString, Value: "値 🎌"}},
			Payload:     []byte(`{"target":"Button «OK»","x":-1.5,"y":3e-7}`)}},
	}
	events := make([]model.Event, len(cases))
	for i, c := range cases {
		events[i] = c.e
	}
	if err := s.WriteEvents(ctx(t), events); err != nil {
		t.Fatalf("WriteEvents: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkEvent(t, s, c.e) })
	}
	checkCount(t, s, app, int64(len(cases)), 0)
}

func checkEvent(t *testing.T, s sinks.EventStore, want model.Event) {
	t.Helper()
	got, err := s.Event(ctx(t), want.AppID, want.ID)
	if err != nil {
		t.Fatalf("Event(%s): %v", want.ID, err)
	}
	want = normEvent(want)
	if d := diff(got, want); d != "" {
		t.Errorf("Event(%s) differs from what was written:\n%s", want.ID, d)
	}
}

// normEvent maps empty optional slices to nil: the zero value is what a store returns for
// "absent".
func normEvent(e model.Event) model.Event {
	if len(e.Attribute.Extra) == 0 {
		e.Attribute.Extra = nil
	}
	if len(e.UserDefined) == 0 {
		e.UserDefined = nil
	}
	if len(e.Attachments) == 0 {
		e.Attachments = nil
	}
	if len(e.Payload) == 0 {
		e.Payload = nil
	}
	return e
}

func normSpan(s model.Span) model.Span {
	if len(s.Attributes.Extra) == 0 {
		s.Attributes.Extra = nil
	}
	if len(s.UserDefined) == 0 {
		s.UserDefined = nil
	}
	if len(s.Checkpoints) == 0 {
		s.Checkpoints = nil
	}
	return s
}

func fullSpan(app uuid.UUID, i int) model.Span {
	return model.Span{
		AppID:     app,
		SpanID:    fmt.Sprintf("%016x", uint64(0xa1b2c3d4e5f60000)+uint64(i)),
		TraceID:   "b6284daf4a993e8ae1695d567e998520",
		SessionID: uuid.New(),
		Name:      "Activity TTID sh.svc.ExceptionDemoActivity ✓",
		Status:    1,
		StartTime: tsBase + int64(i)*104_729,
		EndTime:   tsBase + int64(i)*104_729 + 127_000_001,
		Duration:  127,
		Checkpoints: []model.Checkpoint{
			{Name: "activity_lifecycle_created", Timestamp: tsBase + 1},
			{Name: "activity_lifecycle_started", Timestamp: tsBase + 49_000_003},
			{Name: "résumé", Timestamp: tsBase + 51_000_007},
		},
		Attributes:  fullAttrs(i),
		UserDefined: fullUD(),
	}
}

func testRoundTripSpans(t *testing.T, s sinks.EventStore) {
	app := uuid.New()
	root := fullSpan(app, 1)
	child := fullSpan(app, 2)
	child.ParentID = root.SpanID
	child.Status = 2
	child.Checkpoints = nil
	unset := fullSpan(app, 3)
	unset.Status = 0
	unset.UserDefined = nil
	unset.Duration = math.MaxUint64
	plain := fullSpan(app, 4)
	plain.Attributes.Extra = nil
	cases := []struct {
		name string
		s    model.Span
	}{
		{"root-ok", root},
		{"child-error", child},
		{"unset-status", unset},
		{"no-extra", plain},
		{"zero", model.Span{AppID: app, SpanID: "00000000000000ff"}},
		{"empty-slices", model.Span{AppID: app, SpanID: "00000000000000fe", TraceID: "0af7651916cd43dd8448eb211c80319c",
			Name: "x", StartTime: -5, EndTime: 7, Checkpoints: []model.Checkpoint{}, UserDefined: []model.UDAttr{},
			Attributes: model.Attributes{Extra: []byte{}}}},
	}
	spans := make([]model.Span, len(cases))
	for i, c := range cases {
		spans[i] = c.s
	}
	if err := s.WriteSpans(ctx(t), spans); err != nil {
		t.Fatalf("WriteSpans: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkSpan(t, s, c.s) })
	}
	checkCount(t, s, app, 0, int64(len(cases)))
}

func checkSpan(t *testing.T, s sinks.EventStore, want model.Span) {
	t.Helper()
	got, err := s.Span(ctx(t), want.AppID, want.SpanID)
	if err != nil {
		t.Fatalf("Span(%s): %v", want.SpanID, err)
	}
	want = normSpan(want)
	if d := diff(got, want); d != "" {
		t.Errorf("Span(%s) differs from what was written:\n%s", want.SpanID, d)
	}
}

func checkCount(t *testing.T, s sinks.EventStore, app uuid.UUID, events, spans int64) {
	t.Helper()
	e, sp, err := s.Count(ctx(t), app)
	if err != nil {
		t.Fatalf("Count: %v", err)
	}
	if e != events || sp != spans {
		t.Errorf("Count(%s) = %d events, %d spans; want %d, %d", app, e, sp, events, spans)
	}
}

func testFixtures(t *testing.T, s sinks.EventStore) {
	for _, name := range fixtureFiles {
		t.Run(name[:min(len(name), 48)], func(t *testing.T) {
			app := uuid.New()
			events, spans := FixtureBatch(t, app, name)
			if len(events) == 0 {
				t.Fatalf("fixture %s decoded to no events", name)
			}
			if err := s.WriteEvents(ctx(t), events); err != nil {
				t.Fatalf("WriteEvents: %v", err)
			}
			if err := s.WriteSpans(ctx(t), spans); err != nil {
				t.Fatalf("WriteSpans: %v", err)
			}
			for _, e := range events {
				checkEvent(t, s, e)
			}
			for _, sp := range spans {
				checkSpan(t, s, sp)
			}
			checkCount(t, s, app, int64(len(events)), int64(len(spans)))
		})
	}
}

func testIdempotent(t *testing.T, s sinks.EventStore) {
	app := uuid.New()
	a, b, c := fullEvent(app, 1), fullEvent(app, 2), fullEvent(app, 3)
	sa, sb := fullSpan(app, 1), fullSpan(app, 2)
	steps := []struct {
		name           string
		events         []model.Event
		spans          []model.Span
		wantEv, wantSp int64
	}{
		{"twice in one call", []model.Event{a, b, a}, []model.Span{sa, sa}, 2, 1},
		{"again in a later call", []model.Event{b, a}, []model.Span{sa}, 2, 1},
		{"old and new mixed", []model.Event{c, a, c}, []model.Span{sb, sa, sb}, 3, 2},
	}
	for _, st := range steps {
		if err := s.WriteEvents(ctx(t), st.events); err != nil {
			t.Fatalf("%s: WriteEvents: %v", st.name, err)
		}
		if err := s.WriteSpans(ctx(t), st.spans); err != nil {
			t.Fatalf("%s: WriteSpans: %v", st.name, err)
		}
		e, sp, err := s.Count(ctx(t), app)
		if err != nil {
			t.Fatalf("%s: Count: %v", st.name, err)
		}
		if e != st.wantEv || sp != st.wantSp {
			t.Errorf("%s: Count = %d events, %d spans; want %d, %d", st.name, e, sp, st.wantEv, st.wantSp)
		}
	}
	for _, e := range []model.Event{a, b, c} {
		checkEvent(t, s, e)
	}
	checkSpan(t, s, sa)
	checkSpan(t, s, sb)
}

func testAppsIsolated(t *testing.T, s sinks.EventStore) {
	app1, app2, empty := uuid.New(), uuid.New(), uuid.New()
	e1 := fullEvent(app1, 1)
	e2 := fullEvent(app2, 2)
	e2.ID = e1.ID // same event id, another app: a different row
	e2.Type = "anr"
	extra := fullEvent(app1, 3)
	s1 := fullSpan(app1, 1)
	s2 := fullSpan(app2, 1) // same span id
	s2.Name = "other app's span"
	if err := s.WriteEvents(ctx(t), []model.Event{e1, e2, extra}); err != nil {
		t.Fatalf("WriteEvents: %v", err)
	}
	if err := s.WriteSpans(ctx(t), []model.Span{s1, s2}); err != nil {
		t.Fatalf("WriteSpans: %v", err)
	}
	checkEvent(t, s, e1)
	checkEvent(t, s, e2)
	checkSpan(t, s, s1)
	checkSpan(t, s, s2)
	checkCount(t, s, app1, 2, 1)
	checkCount(t, s, app2, 1, 1)
	checkCount(t, s, empty, 0, 0)
}

func testNotFound(t *testing.T, s sinks.EventStore) {
	app, other := uuid.New(), uuid.New()
	e := fullEvent(app, 1)
	sp := fullSpan(app, 1)
	if err := s.WriteEvents(ctx(t), []model.Event{e}); err != nil {
		t.Fatalf("WriteEvents: %v", err)
	}
	if err := s.WriteSpans(ctx(t), []model.Span{sp}); err != nil {
		t.Fatalf("WriteSpans: %v", err)
	}
	evCases := []struct {
		name    string
		app, id uuid.UUID
	}{
		{"unknown event id", app, uuid.New()},
		{"event of another app", other, e.ID},
		{"nil ids", uuid.Nil, uuid.Nil},
	}
	for _, c := range evCases {
		if _, err := s.Event(ctx(t), c.app, c.id); !errors.Is(err, sinks.ErrNotFound) {
			t.Errorf("%s: Event error = %v, want ErrNotFound", c.name, err)
		}
	}
	spCases := []struct {
		name string
		app  uuid.UUID
		id   string
	}{
		{"unknown span id", app, "0123456789abcdef"},
		{"span of another app", other, sp.SpanID},
		{"empty span id", app, ""},
		{"prefix of a stored id", app, sp.SpanID[:8]},
	}
	for _, c := range spCases {
		if _, err := s.Span(ctx(t), c.app, c.id); !errors.Is(err, sinks.ErrNotFound) {
			t.Errorf("%s: Span error = %v, want ErrNotFound", c.name, err)
		}
	}
}

// testBugReport: BugReport finds the app's bug reports by id, and nothing else: not an event of
// another type, not another app's bug report, not an id never written.
func testBugReport(t *testing.T, s sinks.EventStore) {
	app, other := uuid.New(), uuid.New()
	report := fullEvent(app, 1)
	report.Type = model.BugReportType
	custom := fullEvent(app, 2)
	custom.Type = "custom"
	foreign := report
	foreign.AppID, foreign.ID = other, uuid.New()
	if err := s.WriteEvents(ctx(t), []model.Event{report, custom, foreign}); err != nil {
		t.Fatalf("WriteEvents: %v", err)
	}
	got, err := s.BugReport(ctx(t), app, report.ID)
	if err != nil {
		t.Fatalf("BugReport(%s): %v", report.ID, err)
	}
	if d := diff(got, normEvent(report)); d != "" {
		t.Errorf("BugReport(%s) differs from what was written:\n%s", report.ID, d)
	}
	for _, c := range []struct {
		name    string
		app, id uuid.UUID
	}{
		{"an event of another type", app, custom.ID},
		{"another app's bug report", app, foreign.ID},
		{"a bug report asked of another app", other, report.ID},
		{"an id never written", app, uuid.New()},
	} {
		if _, err := s.BugReport(ctx(t), c.app, c.id); !errors.Is(err, sinks.ErrNotFound) {
			t.Errorf("%s: BugReport error = %v, want ErrNotFound", c.name, err)
		}
	}
}

// testConcurrent: writers whose batches overlap each other's ids, and repeat their own, must
// leave exactly one copy of each row.
func testConcurrent(t *testing.T, s sinks.EventStore) {
	const writers, stride, window, batch = 4, 300, 800, 100
	app := uuid.New()
	total := (writers-1)*stride + window
	events := make([]model.Event, total)
	spans := make([]model.Span, total)
	for i := range events {
		events[i] = fullEvent(app, i)
		events[i].UserDefined = events[i].UserDefined[:2]
		spans[i] = fullSpan(app, i)
	}
	c := ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			lo := w * stride
			// Each writer writes its window twice, in batches, the second time backwards.
			for pass := 0; pass < 2; pass++ {
				for k := 0; k < window; k += batch {
					start := lo + k
					if pass == 1 {
						start = lo + window - batch - k
					}
					if err := s.WriteEvents(c, events[start:start+batch]); err != nil {
						errs <- fmt.Errorf("writer %d: WriteEvents: %w", w, err)
						return
					}
					if err := s.WriteSpans(c, spans[start:start+batch]); err != nil {
						errs <- fmt.Errorf("writer %d: WriteSpans: %w", w, err)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkCount(t, s, app, int64(total), int64(total))
	for _, i := range []int{0, stride, total / 2, total - 1} {
		checkEvent(t, s, events[i])
		checkSpan(t, s, spans[i])
	}
}

func testLargeBatch(t *testing.T, s sinks.EventStore) {
	const n = 20_000
	app := uuid.New()
	events := RealisticEvents(t, app, n)
	spans := RealisticSpans(t, app, n)
	if err := s.WriteEvents(ctx(t), events); err != nil {
		t.Fatalf("WriteEvents(%d): %v", n, err)
	}
	if err := s.WriteSpans(ctx(t), spans); err != nil {
		t.Fatalf("WriteSpans(%d): %v", n, err)
	}
	checkCount(t, s, app, n, n)
	for _, i := range []int{0, 1, n / 3, n / 2, n - 1} {
		checkEvent(t, s, events[i])
		checkSpan(t, s, spans[i])
	}
}

// everyNth is xs[0], xs[k], xs[2k], …: what a suite writes a second time, as a spool replay
// would.
func everyNth[T any](xs []T, k int) []T {
	var out []T
	for i := 0; i < len(xs); i += k {
		out = append(out, xs[i])
	}
	return out
}

// concat is every batch's items, in order.
func concat[T any](batches [][]T) []T {
	var out []T
	for _, b := range batches {
		out = append(out, b...)
	}
	return out
}

// openWritten opens a fresh store for a suite, closes it when the test ends, and writes the
// event batches, then the span batches, one call each.
func openWritten[S sinks.EventStore](t *testing.T, open func(t *testing.T) S, events [][]model.Event, spans [][]model.Span) S {
	t.Helper()
	s := open(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	c := ctx(t)
	for i, w := range events {
		if err := s.WriteEvents(c, w); err != nil {
			t.Fatalf("WriteEvents (call %d of %d): %v", i+1, len(events), err)
		}
	}
	for i, w := range spans {
		if err := s.WriteSpans(c, w); err != nil {
			t.Fatalf("WriteSpans (call %d of %d): %v", i+1, len(spans), err)
		}
	}
	return s
}

// lastBy keeps one item per key, the last written, in the order keys were first written: what a
// store holds after the writes (a replay replaces a row with itself).
func lastBy[T any, K comparable](written []T, key func(*T) K) []T {
	at := map[K]int{}
	var out []T
	for i := range written {
		k := key(&written[i])
		if j, ok := at[k]; ok {
			out[j] = written[i]
			continue
		}
		at[k] = len(out)
		out = append(out, written[i])
	}
	return out
}

// lastEvents is lastBy of events by (app, event id).
func lastEvents(written []model.Event) []model.Event {
	type key struct{ app, id uuid.UUID }
	return lastBy(written, func(e *model.Event) key { return key{e.AppID, e.ID} })
}
