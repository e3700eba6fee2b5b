package eventstest

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// This file builds the dataset of RunAnalytics: three apps whose rows are known exactly.
//
//   - app A: generated from a fixed seed: sessions on devices, networks and versions of
//     real SDKs, screens, launches, crashes of the four frameworks, handled exceptions of
//     every severity, ANRs, user-defined attributes of the four types, timestamp ties across
//     sessions and within them (which only the event id settles), and events on bucket edges.
//     The expected answers are computed by brute force (Reference) from the model's Go
//     definitions.
//   - app B: a copy of half of app A's rows with the SAME event and session ids and times but
//     other values: a backend that mixes apps, or keys rows by event id alone, answers wrong
//     for A.
//   - app C: a few hand-written sessions whose answers are written out literally in the
//     suite, so that a mistake shared by the brute force and a store is still caught.

// anaVersions are app A's versions; two share a name, so the code must count.
var anaVersions = []model.AppVersion{{Name: "1.0", Code: "10"}, {Name: "1.1", Code: "11"}, {Name: "2.0", Code: "20"}, {Name: "2.0", Code: "21"}}

type anaDevice struct{ name, model, manufacturer, osName, osVersion, platform, locale, arch string }

// anaDevices: the same device under two manufacturer spellings (filters compare exactly), and
// one SDK that sent no device members.
var anaDevices = []anaDevice{
	{"sunfish", "Pixel 4a", "Google", "android", "33", "android", "en-US", "arm64-v8a"},
	{"emu64a", "sdk_gphone64_arm64", "Google", "android", "36", "android", "de-DE", "arm64-v8a"},
	{"a52q", "SM-A525F", "samsung", "android", "34", "android", "zh-Hant-TW", "arm64-v8a"},
	{"a52q", "SM-A525F", "Samsung", "android", "34", "android", "en-US", "arm64-v8a"},
	{"iPhone 16 Pro", "iPhone17,1", "Apple", "iOS", "18.3.1", "ios", "en_IN", "arm64e"},
	{"iPhone 12", "iPhone13,2", "Apple", "iOS", "17.5", "ios", "fr-FR", "arm64e"},
	{"", "", "", "android", "33", "android", "", ""},
}

type anaNetwork struct{ typ, provider, generation string }

var anaNetworks = []anaNetwork{
	{"wifi", "unknown", "unknown"},
	{"cellular", "Vodafone", "4g"},
	{"cellular", "Télécom «ÜNÏ»", "5g"},
	{"no_network", "", ""},
	{"unknown", "unknown", "unknown"},
}

// UD values. plan holds LIKE metacharacters and non-ASCII case pairs; retries an int64 no
// float64 holds exactly; ratio floats in canonical 'g' text, an exponent included.
var (
	anaPlans   = []string{"free", "pro", "Pro Max", "PRO-trial", "pro_max", "enterprise", "Über", "über plan", "50% off", ""}
	anaRetries = []int64{-3, 0, 1, 7, 42, 9007199254740993, -9223372036854775808}
	anaRatios  = []float64{0.1, 0.5, 1.25, -2.5, 1e-3, 3, 1e21}
	anaTags    = []string{"beta", "Beta-2", "gamma"}
)

// Issue kinds of app A: the four frameworks, every class and severity, and one group that is a
// crash in some events and handled in others (the group id ignores fatality).
const (
	ikJVMState  = "jvm-state"  // crash; handled in 1 of 8
	ikJVMOOM    = "jvm-oom"    // crash
	ikJVMIO     = "jvm-io"     // handled (legacy handled flag)
	ikJVMLegacy = "jvm-legacy" // neither severity nor handled flag: handled class, no severity
	ikAppleAbrt = "apple-abrt" // crash (handled false)
	ikAppleSegv = "apple-segv" // crash (severity fatal)
	ikDartFmt   = "dart-format"
	ikDartState = "dart-state"
	ikJSType    = "js-type"
	ikJSHandled = "js-handled"
	ikANRPoll   = "anr-poll"
	ikANRLock   = "anr-lock"
	ikJSTie     = "js-tie" // only in the tie sessions
)

var anaIssueKinds = []string{ikJVMState, ikJVMOOM, ikJVMIO, ikJVMLegacy, ikAppleAbrt, ikAppleSegv,
	ikDartFmt, ikDartState, ikJSType, ikJSHandled, ikANRPoll, ikANRLock}

type anaGen struct {
	r *rand.Rand
	n int // events made, for varied messages
}

func (g *anaGen) uuid() uuid.UUID {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[:8], g.r.Uint64())
	binary.BigEndian.PutUint64(u[8:], g.r.Uint64())
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

func jstr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func jbool(b bool) string { return strconv.FormatBool(b) }

// issuePayload is an exception or anr member shaped like the SDKs' (see the fragment
// fixtures): frames, threads and binary images the grouping must skip, the framework's
// severity flags, foreground.
func (g *anaGen) issuePayload(kind string, fg bool) (typ, payload string) {
	g.n++
	i := g.n
	jvm := func(inner, msg, class, method, file string, line int, flags string) string {
		return `{"exceptions":[{"type":"java.lang.RuntimeException","message":"java.lang.reflect.InvocationTargetException","frames":[{"class_name":"com.android.internal.os.RuntimeInit$MethodAndArgsCaller","method_name":"run","file_name":"RuntimeInit.java","line_num":558}]},` +
			`{"type":` + jstr(inner) + `,"message":` + jstr(msg) + `,"frames":[{"class_name":` + jstr(class) + `,"method_name":` + jstr(method) + `,"file_name":` + jstr(file) + `,"line_num":` + strconv.Itoa(line) + `},{"class_name":"android.view.View","method_name":"performClick","file_name":"View.java","line_num":7542}]}],` +
			`"threads":[{"name":"Thread-2","frames":[{"class_name":"java.lang.Object","method_name":"wait","file_name":"Object.java","line_num":-2}]}]` + flags + `,"foreground":` + jbool(fg) + `}`
	}
	apple := func(signal, msg, method, file string, line int, flags string) string {
		return `{"framework":"apple"` + flags + `,"exceptions":[{"type":"NSRangeException","message":` + jstr(msg) + `,"signal":` + jstr(signal) + `,"thread_name":"Thread 0 Crashed","thread_sequence":0,"frames":[` +
			`{"frame_index":0,"binary_name":"libsystem_kernel.dylib","binary_address":"1044f4000","symbol_address":"00000001044fd108","offset":37128,"in_app":false,"method_name":"","file_name":"","line_num":0},` +
			`{"frame_index":1,"binary_name":"DemoApp","binary_address":"102770000","symbol_address":"0000000103123478","offset":10171512,"in_app":true,"method_name":` + jstr(method) + `,"file_name":` + jstr(file) + `,"line_num":` + strconv.Itoa(line) + `}]}],` +
			`"threads":[{"sequence":1,"name":"Thread 1","frames":[{"frame_index":0,"in_app":false,"binary_name":"libsystem_pthread.dylib"}]}],"binary_images":[{"name":"DemoApp","arch":"arm64"}],"foreground":` + jbool(fg) + `}`
	}
	dart := func(typ, msg, method, file string, line int, severity string) string {
		return `{"framework":"dart","severity":` + jstr(severity) + `,"exceptions":[{"type":` + jstr(typ) + `,"message":` + jstr(msg) + `,"frames":[{"class_name":"MainScreen","method_name":` + jstr(method) + `,"file_name":` + jstr(file) + `,"line_num":` + strconv.Itoa(line) + `,"module_name":"package:svc_example/src/","col_num":5,"frame_index":0},{"class_name":"_InkResponseState","method_name":"_InkResponseState.handleTap","file_name":"ink_well.dart","line_num":1185,"frame_index":1}]}],"foreground":` + jbool(fg) + `}`
	}
	js := func(typ, msg, method, file string, col int, severity string) string {
		return `{"framework":"js","severity":` + jstr(severity) + `,"is_custom":false,"exceptions":[{"type":` + jstr(typ) + `,"message":` + jstr(msg) + `,"thread_sequence":0,"frames":[{"method_name":` + jstr(method) + `,"file_name":` + jstr(file) + `,"line_num":1,"col_num":` + strconv.Itoa(col) + `,"in_app":true},{"method_name":"executeDispatch","file_name":"app:///main.jsbundle","line_num":1,"col_num":268018,"in_app":true}]}],"foreground":` + jbool(fg) + `}`
	}
	anr := func(method, file string, line int) string {
		return `{"exceptions":[{"type":"sh.measure.android.anr.AnrError","message":"Application Not Responding for at least 5000 ms.","frames":[{"class_name":"sh.svc.sample.ExceptionDemoActivity","method_name":` + jstr(method) + `,"file_name":` + jstr(file) + `,"line_num":` + strconv.Itoa(line) + `},{"class_name":"android.os.Looper","method_name":"loop","file_name":"Looper.java","line_num":288}]}],` +
			`"threads":[{"name":"FinalizerDaemon","frames":[{"class_name":"java.lang.Object","method_name":"wait","file_name":"Object.java","line_num":-2}]}],"foreground":` + jbool(fg) + `}`
	}
	switch kind {
	case ikJVMState:
		flags := `,"handled":false`
		if g.r.IntN(8) == 0 {
			flags = `,"handled":true`
		}
		return "exception", jvm("java.lang.IllegalStateException", "Cart is empty ("+strconv.Itoa(i)+")", "sh.svc.sample.CheckoutActivity", "onClick", "CheckoutActivity.kt", 40+i%7, flags)
	case ikJVMOOM:
		return "exception", jvm("java.lang.OutOfMemoryError", "Failed to allocate a "+strconv.Itoa(1000+i)+" byte allocation", "sh.svc.sample.ImageLoader", "decodeBitmap", "ImageLoader.kt", 100+i%3, `,"handled":false`)
	case ikJVMIO:
		return "exception", jvm("java.io.IOException", "unexpected end of stream on "+strconv.Itoa(i), "sh.svc.sample.HttpClient", "readFrom", "HttpClient.kt", 77, `,"handled":true`)
	case ikJVMLegacy:
		return "exception", jvm("java.lang.NumberFormatException", "For input string: \""+strconv.Itoa(i)+"x\"", "sh.svc.sample.Parser", "parse", "Parser.kt", 12, "")
	case ikAppleAbrt:
		return "exception", apple("SIGABRT", "*** -[__NSArray0 objectAtIndex:]: index "+strconv.Itoa(i%5)+" beyond bounds for empty array", "uncaught_exception_handler", "PLCrashReporter.m", 361, `,"handled":false`)
	case ikAppleSegv:
		return "exception", apple("SIGSEGV", "", "-[DetailViewController viewDidLoad]", "DetailViewController.swift", 88+i%4, `,"severity":"fatal"`)
	case ikDartFmt:
		return "exception", dart("FormatException", "Invalid radix-10 number (at character "+strconv.Itoa(1+i%9)+")", "MainScreen._parse", "screen_main.dart", 136, "unhandled")
	case ikDartState:
		return "exception", dart("StateError", "Bad state: No element", "CartModel.first", "cart_model.dart", 21, "fatal")
	case ikJSType:
		return "exception", js("TypeError", "Cannot read property 'foo' of undefined", "render", "App.js", 1000+i, "fatal")
	case ikJSHandled:
		return "exception", js("Error", "Simulated handled error", "trackHandledError", "app:///main.jsbundle", 1027518, "handled")
	case ikJSTie:
		return "exception", js("Error", "Simultaneous failure", "flush", "app:///main.jsbundle", 4242, "fatal")
	case ikANRPoll:
		return "anr", anr("nativePollOnce", "MessageQueue.java", -2)
	case ikANRLock:
		return "anr", anr("deadLock$lambda$10", "ExceptionDemoActivity.kt", 60+i%9)
	}
	panic("unknown issue kind " + kind)
}

// launchPayload is a launch member; about one in five has a duration LaunchDuration rejects,
// so that its event carries no launch facts.
func (g *anaGen) launchPayload(typ string) string {
	up := 1_000_000 + g.r.Int64N(1_000_000_000)
	s := strconv.FormatInt
	switch typ {
	case "cold_launch":
		d := 200 + g.r.Int64N(4000)
		if g.r.IntN(6) == 0 {
			d = 30_001 + g.r.Int64N(10_000) // longer than any counted cold launch
		}
		return `{"process_start_uptime":` + s(up, 10) + `,"process_start_requested_uptime":null,"content_provider_attach_uptime":` + s(up+81, 10) +
			`,"on_next_draw_uptime":` + s(up+d, 10) + `,"launched_activity":"sh.svc.sample.MainActivity","has_saved_state":false,"intent_data":null}`
	case "warm_launch":
		lukewarm := g.r.IntN(5) == 0
		return `{"app_visible_uptime":` + s(up, 10) + `,"on_next_draw_uptime":` + s(up+50+g.r.Int64N(2000), 10) +
			`,"launched_activity":"sh.svc.sample.MainActivity","has_saved_state":true,"intent_data":null,"is_lukewarm":` + jbool(lukewarm) + `}`
	default:
		return `{"app_visible_uptime":` + s(up, 10) + `,"on_next_draw_uptime":` + s(up+1+g.r.Int64N(300), 10) +
			`,"launched_activity":"sh.svc.sample.ComposeNavigationActivity","has_saved_state":false,"intent_data":null}`
	}
}

var anaScreens = []string{"Home", "Cart", "Checkout", "Settings", "/", "Détails 🚀"}
var anaActivities = []string{"sh.svc.sample.MainActivity", "sh.svc.sample.CheckoutActivity"}

// otherPayload is a non-issue event member of the given type.
func (g *anaGen) otherPayload(typ string) string {
	switch typ {
	case "screen_view":
		return `{"name":` + jstr(anaScreens[g.r.IntN(len(anaScreens))]) + `}`
	case "lifecycle_activity": // created and resumed show a screen, the others do not
		states := []string{"created", "resumed", "paused", "stopped"}
		return `{"type":"` + states[g.r.IntN(len(states))] + `","class_name":` + jstr(anaActivities[g.r.IntN(len(anaActivities))]) + `}`
	case "lifecycle_fragment":
		states := []string{"attached", "resumed", "paused", "detached"}
		return `{"type":"` + states[g.r.IntN(len(states))] + `","class_name":"ProductFragment","parent_activity":"sh.svc.sample.MainActivity","parent_fragment":null,"tag":null}`
	case "gesture_click":
		return `{"target":"com.google.android.material.button.MaterialButton","target_id":"checkout","width":262,"height":126,"x":546.9,"y":1267.0,"touch_down_time":34741475,"touch_up_time":34741529}`
	case "http":
		return `{"url":"https://api.example.com/cart","method":"get","status_code":200,"start_time":1750233311676,"end_time":1750233312946,"client":"okhttp"}`
	case "cpu_usage":
		return `{"num_cores":8,"clock_speed":100,"start_time":129108296,"uptime":1291103072,"utime":2014,"cutime":0,"cstime":0,"stime":183,"interval":3003,"percentage_usage":2.3333333333333335}`
	case "memory_usage":
		return `{"java_max_heap":262144,"java_total_heap":16384,"java_free_heap":6486,"total_pss":277588,"rss":330800,"native_total_heap":44596,"native_free_heap":16425,"interval":2123}`
	case "custom":
		return `{"name":"add_to_cart"}`
	case "lifecycle_app":
		return `{"type":"foreground"}`
	}
	panic("unknown event type " + typ)
}

// anaKinds are the event types of a session step with their weights.
var anaKinds = []struct {
	typ    string
	weight int
}{
	{"screen_view", 14}, {"lifecycle_activity", 12}, {"lifecycle_fragment", 4}, {"gesture_click", 10},
	{"http", 8}, {"cpu_usage", 8}, {"memory_usage", 8}, {"custom", 5}, {"warm_launch", 2},
	{"hot_launch", 2}, {"issue", 14}, {"lifecycle_app", 3},
}

func (g *anaGen) kind() string {
	total := 0
	for _, k := range anaKinds {
		total += k.weight
	}
	n := g.r.IntN(total)
	for _, k := range anaKinds {
		if n < k.weight {
			return k.typ
		}
		n -= k.weight
	}
	panic("unreachable")
}

func anaAttrs(v model.AppVersion, d anaDevice, n anaNetwork, install string) model.Attributes {
	return model.Attributes{
		InstallationID: install, AppVersion: v.Name, AppBuild: v.Code, AppUniqueID: "sh.svc.sample",
		Platform: d.platform, SDKVersion: "0.11.0", ThreadName: "main", DeviceName: d.name, DeviceModel: d.model,
		DeviceManufacturer: d.manufacturer, DeviceType: "phone", DeviceIsPhysical: true, DeviceDensityDPI: 440,
		DeviceWidthPx: 1080, DeviceHeightPx: 2138, DeviceDensity: 2.75, DeviceLocale: d.locale, OSName: d.osName,
		OSVersion: d.osVersion, OSPageSize: 4, NetworkType: n.typ, NetworkProvider: n.provider,
		NetworkGeneration: n.generation, DeviceCPUArch: d.arch,
	}
}

// sessionUD is a session's user-defined attributes; each event varies retries and ratio and
// carries tag only sometimes. count is an int64 in some sessions and a string in others.
type sessionUD struct {
	plan     string
	premium  bool
	countStr bool
	count    int64
}

func (g *anaGen) eventUD(s *sessionUD) []model.UDAttr {
	if g.r.IntN(20) == 0 {
		return nil // an event without attributes
	}
	ud := []model.UDAttr{
		{Key: "plan", Type: model.UDString, Value: s.plan},
		{Key: "premium", Type: model.UDBool, Value: jbool(s.premium)},
		{Key: "ratio", Type: model.UDFloat64, Value: strconv.FormatFloat(anaRatios[g.r.IntN(len(anaRatios))], 'g', -1, 64)},
		{Key: "retries", Type: model.UDInt64, Value: strconv.FormatInt(anaRetries[g.r.IntN(len(anaRetries))], 10)},
	}
	if s.countStr {
		ud = append(ud, model.UDAttr{Key: "count", Type: model.UDString, Value: strconv.FormatInt(s.count, 10)})
	} else {
		ud = append(ud, model.UDAttr{Key: "count", Type: model.UDInt64, Value: strconv.FormatInt(s.count, 10)})
	}
	if g.r.IntN(5) < 2 {
		ud = append(ud, model.UDAttr{Key: "tag", Type: model.UDString, Value: anaTags[g.r.IntN(len(anaTags))]})
	}
	sort.Slice(ud, func(i, j int) bool { return ud[i].Key < ud[j].Key })
	return ud
}

func anaEvent(app, session, id uuid.UUID, ts int64, typ, payload string, attr model.Attributes, ud []model.UDAttr) model.Event {
	e := model.Event{ID: id, AppID: app, SessionID: session, Type: typ, Timestamp: ts, Attribute: attr, UserDefined: ud}
	if payload != "" {
		e.Payload = []byte(payload)
	}
	e.Facts = model.DeriveFacts(&e) // as ingest does
	return e
}

const (
	sec = int64(time.Second)
	day = 24 * int64(time.Hour)
)

func utcNs(y int, m time.Month, d, h, mi, s, ns int) int64 {
	return time.Date(y, m, d, h, mi, s, ns, time.UTC).UnixNano()
}

// anaBase is where app A's sessions start; they run for 22 days across the end of March.
var anaBase = utcNs(2025, 3, 20, 8, 0, 0, 123_456_789)

// Bucket edges of app A's edge session: the last nanosecond before an edge and the edge.
var (
	edgeMonth = utcNs(2025, 4, 1, 0, 0, 0, 0)
	edgeHour  = utcNs(2025, 4, 2, 10, 0, 0, 0)
	edgeMin   = utcNs(2025, 4, 2, 10, 7, 0, 0)
)

// zoneEdges are app Z's crash times (and app Z's span starts in RunSpans), on the edges of
// buckets in plotZones, in 2025: New York's local midnight before and after its DST change of
// 9 March (02:00 EST → 03:00 EDT at 07:00Z, a 23-hour day) and of 2 November (02:00 EDT → 01:00
// EST at 06:00Z, a 25-hour day with 01:00 twice), its month edge on 1 November, and Kolkata's
// (+05:30) midnight and month edge on 1 April and an hour edge at 06:30Z. testHandWritten
// states their buckets literally.
var zoneEdges = []int64{
	utcNs(2025, 3, 9, 4, 59, 59, 999_999_999),   // E1: 8 March 23:59:59.999999999 EST
	utcNs(2025, 3, 9, 5, 0, 0, 0),               // E2: 9 March 00:00 EST
	utcNs(2025, 3, 9, 6, 29, 59, 999_999_999),   // E3: 01:29:59 EST, 11:59:59 IST
	utcNs(2025, 3, 9, 6, 30, 0, 0),              // E4: 01:30 EST, 12:00 IST
	utcNs(2025, 3, 9, 6, 59, 59, 999_999_999),   // E5: the last nanosecond of EST
	utcNs(2025, 3, 9, 7, 0, 0, 0),               // E6: 03:00 EDT
	utcNs(2025, 3, 10, 3, 59, 59, 999_999_999),  // E7: 9 March 23:59:59.999999999 EDT
	utcNs(2025, 3, 31, 18, 29, 59, 999_999_999), // E8: 31 March 23:59:59.999999999 IST
	utcNs(2025, 3, 31, 18, 30, 0, 0),            // E9: 1 April 00:00 IST
	utcNs(2025, 11, 1, 3, 59, 59, 999_999_999),  // E10: 31 October 23:59:59.999999999 EDT
	utcNs(2025, 11, 1, 4, 0, 0, 0),              // E11: 1 November 00:00 EDT
	utcNs(2025, 11, 2, 4, 0, 0, 0),              // E12: 2 November 00:00 EDT
	utcNs(2025, 11, 2, 5, 30, 0, 0),             // E13: 01:30 EDT
	utcNs(2025, 11, 2, 6, 30, 0, 0),             // E14: 01:30 EST
	utcNs(2025, 11, 3, 4, 59, 59, 999_999_999),  // E15: 2 November 23:59:59.999999999 EST
	utcNs(2025, 11, 3, 5, 0, 0, 0),              // E16: 3 November 00:00 EST
}

// zoneWindow is a window holding every row of app Z.
func zoneWindow(d *anaData) model.EventFilter {
	return model.EventFilter{App: d.Z, From: zoneEdges[0], To: zoneEdges[len(zoneEdges)-1] + 1}
}

// edgeDevice is the device name of app A's edge session only, so a filter isolates it.
const edgeDevice = "edge-device"

// tieTime is when every tie session has its crash, handled exception and (some) ANR.
var tieTime = utcNs(2025, 4, 5, 12, 30, 0, 500_000_001)

// tieIDs make the order of tied events depend on every byte: a store that compares UUIDs by
// halves, or either half as a little-endian number, orders them differently from bytes.
var tieIDs = []uuid.UUID{
	{0x11, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0},
	{0x10, 0, 0, 0, 0, 0, 0x40, 0, 0xbf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	{0x20, 0, 0, 0, 0, 0, 0x40, 0x01, 0x80, 0, 0, 0, 0, 0, 0, 1},
	{0x10, 0, 0, 0, 0, 0, 0x40, 0x02, 0x80, 0, 0, 0, 0, 0, 0, 2},
	{0x10, 0, 0, 0, 0, 0, 0x40, 0x02, 0x80, 0, 0, 0, 0, 0, 0, 1},
}

// anaData is the dataset: the rows each app holds once stored, and how they are written.
type anaData struct {
	A, B, C uuid.UUID
	Z       uuid.UUID                   // crashes on the edges of zone buckets (zoneEdges)
	rows    map[uuid.UUID][]model.Event // per app, each row once
	batches [][]model.Event             // the WriteEvents calls, with rows repeated
	spans   []model.Span
	groups  map[string]string // issue kind → group id
	hand    handData
	ref     *Reference // over every row written (batches, repeats included)
}

func buildAnalyticsData(t *testing.T) *anaData {
	t.Helper()
	g := &anaGen{r: rand.New(rand.NewPCG(20250401, 7))}
	d := &anaData{A: g.uuid(), B: g.uuid(), C: g.uuid(), rows: map[uuid.UUID][]model.Event{}, groups: map[string]string{}}

	var a []model.Event
	var spans []model.Span
	// Generated sessions.
	for s := 0; s < 140; s++ {
		sess := g.uuid()
		install := g.uuid().String()
		vi := g.r.IntN(len(anaVersions))
		upgrade := vi < len(anaVersions)-1 && g.r.IntN(8) == 0
		dev := anaDevices[g.r.IntN(len(anaDevices))]
		net := anaNetworks[g.r.IntN(len(anaNetworks))]
		ud := sessionUD{plan: anaPlans[g.r.IntN(len(anaPlans))], premium: g.r.IntN(3) == 0,
			countStr: g.r.IntN(4) == 0, count: int64(g.r.IntN(5)) - 1}
		n := 4 + g.r.IntN(26)
		ts := anaBase + g.r.Int64N(22*day)
		for k := 0; k < n; k++ {
			if k > 0 {
				ts += 1 + g.r.Int64N(90*sec)
			}
			if upgrade && k == n/2 {
				vi++
			}
			if g.r.IntN(7) == 0 {
				net = anaNetworks[g.r.IntN(len(anaNetworks))]
			}
			attr := anaAttrs(anaVersions[vi], dev, net, install)
			typ := "cold_launch"
			if k > 0 || g.r.IntN(4) == 0 {
				typ = g.kind()
			}
			var payload string
			switch typ {
			case "issue":
				typ, payload = g.issuePayload(anaIssueKinds[g.r.IntN(len(anaIssueKinds))], g.r.IntN(3) > 0)
			case "cold_launch", "warm_launch", "hot_launch":
				payload = g.launchPayload(typ)
			default:
				payload = g.otherPayload(typ)
			}
			a = append(a, anaEvent(d.A, sess, g.uuid(), ts, typ, payload, attr, g.eventUD(&ud)))
		}
		if s%10 == 0 { // spans of the session, which no analytics count
			spans = append(spans, anaSpan(d.A, sess, g, ts, anaVersions[vi]))
		}
	}
	// A session with spans only, inside every window: it must not count.
	spans = append(spans, anaSpan(d.A, g.uuid(), g, anaBase+5*day, anaVersions[0]))

	// Tie sessions: crashes of one group, handled exceptions and ANRs at the very same
	// nanosecond in different sessions, ordered by id alone. Within each session a screen and
	// a custom event share the crash's nanosecond with ids one bit off the crash's, so the id
	// decides whether the crash happened on the new screen and whether the custom event is on
	// the crash's path.
	for s := 0; s < 9; s++ {
		sess := g.uuid()
		v := anaVersions[s%len(anaVersions)]
		attr := anaAttrs(v, anaDevices[s%3], anaNetworks[s%len(anaNetworks)], g.uuid().String())
		ud := sessionUD{plan: anaPlans[s%len(anaPlans)], count: int64(s)}
		a = append(a, anaEvent(d.A, sess, g.uuid(), tieTime-(1+int64(s))*sec, "screen_view", `{"name":"Checkout"}`, attr, g.eventUD(&ud)))
		id := g.uuid()
		if s < len(tieIDs) {
			id = tieIDs[s]
		}
		typ, p := g.issuePayload(ikJSTie, s%2 == 0)
		a = append(a, anaEvent(d.A, sess, id, tieTime, typ, p, attr, g.eventUD(&ud)))
		screenID, customID := id, id
		screenID[15] ^= 1
		customID[14] ^= 0x80
		a = append(a, anaEvent(d.A, sess, screenID, tieTime, "screen_view", `{"name":"Receipt"}`, attr, g.eventUD(&ud)))
		a = append(a, anaEvent(d.A, sess, customID, tieTime, "custom", `{"name":"pay"}`, attr, g.eventUD(&ud)))
		typ, p = g.issuePayload(ikJVMIO, true)
		a = append(a, anaEvent(d.A, sess, g.uuid(), tieTime+int64(time.Millisecond), typ, p, attr, g.eventUD(&ud)))
		if s%3 == 0 {
			typ, p = g.issuePayload(ikANRPoll, true)
			a = append(a, anaEvent(d.A, sess, g.uuid(), tieTime+2*int64(time.Millisecond), typ, p, attr, g.eventUD(&ud)))
		}
	}

	// The edge session: crashes on the last nanosecond of a month, hour and minute and on the
	// first of the next, on a device of its own.
	{
		sess := g.uuid()
		dev := anaDevices[0]
		dev.name = edgeDevice
		attr := anaAttrs(anaVersions[2], dev, anaNetworks[0], g.uuid().String())
		a = append(a, anaEvent(d.A, sess, g.uuid(), edgeMonth-10*sec, "screen_view", `{"name":"Home"}`, attr, nil))
		for _, ts := range []int64{edgeMonth - 1, edgeMonth, edgeHour - 1, edgeHour, edgeMin - 1, edgeMin} {
			typ, p := g.issuePayload(ikJVMOOM, true)
			a = append(a, anaEvent(d.A, sess, g.uuid(), ts, typ, p, attr, nil))
		}
	}

	// A session with a handled exception and no walk event: SessionWalks of its group calls fn
	// with nothing.
	{
		attr := anaAttrs(anaVersions[0], anaDevices[1], anaNetworks[1], g.uuid().String())
		sess := g.uuid()
		a = append(a, anaEvent(d.A, sess, g.uuid(), anaBase+7*day, "custom", `{"name":"sync"}`, attr, nil))
		typ, p := g.issuePayload(ikJVMIO, false)
		a = append(a, anaEvent(d.A, sess, g.uuid(), anaBase+7*day+sec, typ, p, attr, nil))
	}

	// Two versions first seen at the same nanosecond, in two sessions: FilterValues orders them
	// by name, then code.
	for _, v := range []model.AppVersion{{Name: "3.0", Code: "30"}, {Name: "3.0", Code: "31"}} {
		attr := anaAttrs(v, anaDevices[0], anaNetworks[0], g.uuid().String())
		a = append(a, anaEvent(d.A, g.uuid(), g.uuid(), anaBase+9*day, "custom", `{"name":"first"}`, attr, nil))
	}

	// Rows as a store written before facts were derived: an exception and a launch with no
	// facts. Analytics read facts, so they are neither issues nor launches.
	{
		attr := anaAttrs(anaVersions[0], anaDevices[0], anaNetworks[0], "legacy")
		sess := g.uuid()
		e := anaEvent(d.A, sess, g.uuid(), anaBase+3*day, "exception", `{"exceptions":[{"type":"Legacy","frames":[]}],"handled":false,"foreground":true}`, attr, nil)
		e.Facts = model.EventFacts{}
		a = append(a, e)
		e = anaEvent(d.A, sess, g.uuid(), anaBase+3*day+sec, "cold_launch", `{"process_start_uptime":100,"on_next_draw_uptime":400}`, attr, nil)
		e.Facts = model.EventFacts{}
		a = append(a, e)
	}
	d.rows[d.A] = a

	// App B: half of A's rows under B, same ids, sessions and times, other versions,
	// devices and attributes.
	var b []model.Event
	for i := 0; i < len(a); i += 2 {
		e := a[i]
		e.AppID = d.B
		e.Attribute.AppBuild += "b"
		e.Attribute.DeviceName = "b-" + e.Attribute.DeviceName
		e.Attribute.DeviceLocale = "b-" + e.Attribute.DeviceLocale
		e.UserDefined = []model.UDAttr{{Key: "b_only", Type: model.UDInt64, Value: strconv.Itoa(i)}}
		b = append(b, e)
	}
	spans = append(spans, anaSpan(d.B, a[0].SessionID, g, a[0].Timestamp, anaVersions[0]))
	d.rows[d.B] = b

	d.hand = buildHand(d.C)
	d.rows[d.C] = d.hand.events

	// App Z: a fatal crash in a session of its own at each of zoneEdges.
	{
		d.Z = g.uuid()
		attr := anaAttrs(anaVersions[1], anaDevices[0], anaNetworks[0], g.uuid().String())
		var z []model.Event
		for _, ts := range zoneEdges {
			typ, p := g.issuePayload(ikJVMOOM, true)
			z = append(z, anaEvent(d.Z, g.uuid(), g.uuid(), ts, typ, p, attr, nil))
		}
		d.rows[d.Z] = z
	}

	for _, k := range append(anaIssueKinds, ikJSTie) {
		typ, p := g.issuePayload(k, true)
		e := model.Event{Type: typ, Payload: []byte(p)}
		gr, ok := model.GroupOf(&e)
		if !ok {
			t.Fatalf("dataset: issue kind %s has no group", k)
		}
		d.groups[k] = gr.ID
	}

	// Writes: every row of the three apps shuffled into batches; some rows twice in the same
	// batch, some again in a later call (replays).
	var all []model.Event
	for _, app := range []uuid.UUID{d.A, d.B, d.C, d.Z} {
		all = append(all, d.rows[app]...)
	}
	g.r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	const batch = 400
	var replay []model.Event
	for i := 0; i < len(all); i += batch {
		end := min(i+batch, len(all))
		bt := append([]model.Event(nil), all[i:end]...)
		for j := i; j < end; j++ {
			switch g.r.IntN(20) {
			case 0:
				bt = append(bt, all[j])
			case 1:
				replay = append(replay, all[j])
			}
		}
		d.batches = append(d.batches, bt)
	}
	replay = append(replay, d.hand.e[14], d.hand.e[14])
	d.batches = append(d.batches, replay)
	d.spans = spans
	var written []model.Event
	for _, b := range d.batches {
		written = append(written, b...)
	}
	d.ref = NewReference(written)
	return d
}

func anaSpan(app, session uuid.UUID, g *anaGen, ts int64, v model.AppVersion) model.Span {
	id := g.uuid()
	return model.Span{AppID: app, SpanID: strings.ReplaceAll(id.String(), "-", "")[:16],
		TraceID: strings.ReplaceAll(g.uuid().String(), "-", ""), SessionID: session, Name: "http GET /cart", Status: 1,
		StartTime: ts, EndTime: ts + 5*sec, Duration: 5000,
		Attributes: anaAttrs(v, anaDevices[0], anaNetworks[0], "span")}
}

// handData is app C, written by hand; the suite states its answers literally. e[i] is the
// event numbered i in the comments (e[0] unused).
//
//	T0 = 2025-03-31T23:59:59.999999999Z, T1 = 2025-04-01T00:00:00Z; G1 a js TypeError (crash),
//	H1 a handled jvm IOException, A1 an ANR.
//	S1 (1.0/10):  e1 screen Home T0-60s, e2 click T0-50s, e3 cpu T0-40s, e4 G1 fg T0-30s,
//	              e5 memory T0-20s, e6 screen Cart T0-10s, e7 G1 fg T0
//	S2 (1.0/10):  e8 cold launch 500 ms T1, e9 G1 background T1+1s, e10 A1 fg T1+2s
//	S3 (2.0/20):  e11 screen Home T1+10s, e12 H1 T1+11s, e13 warm launch 300 ms T1+12s,
//	              e14 G1 fg T1+13s (written three times)
//	S4:           e15 hot launch 20 ms (1.0/10) T1+20s, e16 G1 fg (2.0/21) T1+21s
//	S5 (10.0/5):  e17 screen Settings T1+10s (iOS device)
//	S6 (2.0/21):  e18 custom T1+10s
type handData struct {
	events          []model.Event
	e               [19]model.Event
	S               [7]uuid.UUID
	T0, T1          int64
	vA, vB, vB2, vC model.AppVersion
	G1, H1, A1      string
}

func buildHand(app uuid.UUID) handData {
	h := handData{T0: utcNs(2025, 3, 31, 23, 59, 59, 999_999_999), T1: utcNs(2025, 4, 1, 0, 0, 0, 0),
		vA: model.AppVersion{Name: "1.0", Code: "10"}, vB: model.AppVersion{Name: "2.0", Code: "20"},
		vB2: model.AppVersion{Name: "2.0", Code: "21"}, vC: model.AppVersion{Name: "10.0", Code: "5"}}
	id := func(n int) uuid.UUID {
		return uuid.MustParse("c0000000-0000-4000-8000-0000000000" + strconv.Itoa(10+n))
	}
	for i := 1; i < len(h.S); i++ {
		h.S[i] = uuid.MustParse("5e5510a0-0000-4000-8000-00000000000" + strconv.Itoa(i))
	}
	android := anaAttrs(h.vA, anaDevices[0], anaNetworks[0], "hand-install")
	ios := anaAttrs(h.vC, anaDevices[4], anaNetworks[0], "hand-install-ios")
	with := func(a model.Attributes, v model.AppVersion) model.Attributes {
		a.AppVersion, a.AppBuild = v.Name, v.Code
		return a
	}
	plan := []model.UDAttr{{Key: "plan", Type: model.UDString, Value: "pro"}}
	g1 := func(fg bool, line int) string {
		return `{"framework":"js","severity":"fatal","exceptions":[{"type":"TypeError","message":"boom","frames":[{"method_name":"render","file_name":"App.js","line_num":` +
			strconv.Itoa(line) + `,"col_num":7,"in_app":true}]}],"foreground":` + jbool(fg) + `}`
	}
	h1 := `{"exceptions":[{"type":"java.io.IOException","message":"closed","frames":[{"class_name":"sh.svc.HttpClient","method_name":"readFrom","file_name":"HttpClient.kt","line_num":77}]}],"handled":true,"foreground":true}`
	a1 := `{"exceptions":[{"type":"sh.measure.android.anr.AnrError","message":"Application Not Responding for at least 5000 ms.","frames":[{"class_name":"sh.svc.Demo","method_name":"deadLock","file_name":"ExceptionDemoActivity.kt","line_num":66}]}],"threads":[],"foreground":true}`
	T0, T1 := h.T0, h.T1
	rows := []struct {
		n       int
		s       int
		ts      int64
		typ     string
		payload string
		attr    model.Attributes
		ud      []model.UDAttr
	}{
		{1, 1, T0 - 60*sec, "screen_view", `{"name":"Home"}`, android, plan},
		{2, 1, T0 - 50*sec, "gesture_click", `{"target":"Button","x":1,"y":2}`, android, plan},
		{3, 1, T0 - 40*sec, "cpu_usage", `{"interval":3003,"percentage_usage":2.5}`, android, plan},
		{4, 1, T0 - 30*sec, "exception", g1(true, 42), android, plan},
		{5, 1, T0 - 20*sec, "memory_usage_absolute", `{"interval":2123,"max_memory":1048576,"used_memory":330800}`, android, plan},
		{6, 1, T0 - 10*sec, "screen_view", `{"name":"Cart"}`, android, plan},
		{7, 1, T0, "exception", g1(true, 43), android, plan},
		{8, 2, T1, "cold_launch", `{"process_start_uptime":1000,"on_next_draw_uptime":1500}`, android, nil},
		{9, 2, T1 + 1*sec, "exception", g1(false, 44), android, nil},
		{10, 2, T1 + 2*sec, "anr", a1, android, nil},
		{11, 3, T1 + 10*sec, "screen_view", `{"name":"Home"}`, with(android, h.vB), []model.UDAttr{{Key: "retries", Type: model.UDInt64, Value: "3"}}},
		{12, 3, T1 + 11*sec, "exception", h1, with(android, h.vB), nil},
		{13, 3, T1 + 12*sec, "warm_launch", `{"app_visible_uptime":2000,"on_next_draw_uptime":2300,"is_lukewarm":false}`, with(android, h.vB), nil},
		{14, 3, T1 + 13*sec, "exception", g1(true, 45), with(android, h.vB), nil},
		{15, 4, T1 + 20*sec, "hot_launch", `{"app_visible_uptime":3000,"on_next_draw_uptime":3020}`, android, nil},
		{16, 4, T1 + 21*sec, "exception", g1(true, 46), with(android, h.vB2), nil},
		{17, 5, T1 + 10*sec, "screen_view", `{"name":"Settings"}`, ios, []model.UDAttr{{Key: "premium", Type: model.UDBool, Value: "true"}}},
		{18, 6, T1 + 10*sec, "custom", `{"name":"open"}`, with(android, h.vB2), []model.UDAttr{{Key: "plan", Type: model.UDInt64, Value: "2"}, {Key: "ratio", Type: model.UDFloat64, Value: "0.5"}}},
	}
	for _, r := range rows {
		h.e[r.n] = anaEvent(app, h.S[r.s], id(r.n), r.ts, r.typ, r.payload, r.attr, r.ud)
		h.events = append(h.events, h.e[r.n])
	}
	h.G1, h.H1, h.A1 = h.e[4].Facts.GroupID, h.e[12].Facts.GroupID, h.e[10].Facts.GroupID
	return h
}
