package node

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// This file generates the dataset of the analytics end-to-end test (analytics_test.go): apps,
// versions, sessions with screen walks, crashes of four frameworks, handled exceptions, ANRs,
// launches and user-defined attributes, as SDK-shaped JSON batches. Every event carries its
// truth (class, group, display, screen, launch duration), written by the builder from the rules
// of docs/architecture.md ("Algorithms") and README "Crash and ANR analytics" — never by calling the server's code —
// so that analytics_truth_test.go can derive every expected answer by hand.

// gVer is an app version: name and code.
type gVer struct{ Name, Code string }

func (v gVer) series() string { return v.Name + " (" + v.Code + ")" }

// gDevice is what a session's attribute says about its device; digits is how many fraction
// digits its SDK writes in timestamps (Android 8, iOS 3, others 9).
type gDevice struct {
	name, model, manufacturer, platform, osName, osVersion string
	digits                                                 int
}

type gNet struct{ typ, provider, gen string }

// gUD is one user-defined attribute: key, type name and the JSON text of its value.
type gUD struct{ key, typ, raw string }

type gApp struct {
	label    string
	uniqueID string
	sessions []*gSession
	spans    []gSpan
	// Set once the app exists on a node.
	id    uuid.UUID
	key   string
	email string
}

type gSpan struct {
	session uuid.UUID
	start   int64
	v       gVer
}

type gSession struct {
	app     *gApp
	id      uuid.UUID
	install uuid.UUID
	dev     gDevice
	net     gNet
	locale  string
	ud      []gUD
	events  []*gEvent
	chunks  int // requests that carry its initial events; 0: the generator picks 1–3
}

// gEvent is one generated event and its truth.
type gEvent struct {
	id     uuid.UUID
	s      *gSession
	ts     int64
	typ    string
	v      gVer
	member any
	thread string
	attach []gAttach
	// phase: 0 sent at the start, 1 only in the spool at a restart, 2 sent after the restart.
	phase int

	class                       string // crash, anr, handled or "" (no issue)
	group                       string // hand-computed group id
	gType, gMsg, gMethod, gFile string
	gLine                       int
	severity                    string
	fg                          bool
	screen                      string // the screen the event shows, "" for none
	launch                      string // cold, warm or hot when the launch counts
	launchMs                    float64
	stack                       string       // expected exception.stacktrace; "" when not asserted
	threads                     []threadWant // expected threads; nil when not asserted
}

type gAttach struct {
	id        uuid.UUID
	typ, name string
	upload    []byte // uploaded through the upload URL when set
	uploaded  bool
}

type threadWant struct {
	Name   string   `json:"name"`
	Frames []string `json:"frames"`
}

func (e *gEvent) title() string {
	if e.gFile == "" {
		return e.gType
	}
	return e.gType + "@" + e.gFile
}

func (e *gEvent) day() int64 { return e.ts - mod(e.ts, int64(24*time.Hour)) }

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// fingerprint is the group id of docs/architecture.md, "Algorithms": MD5 of type, then ":message" for js, then
// ":method" and ":file" when not empty.
func fingerprint(typ, msg, method, file string, js bool) string {
	s := typ
	if js && msg != "" {
		s += ":" + msg
	}
	if method != "" {
		s += ":" + method
	}
	if file != "" {
		s += ":" + file
	}
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// gen builds the dataset deterministically from its seed.
type gen struct {
	rng   *rand.Rand
	today int64 // 00:00 UTC of today, Unix ns
}

func (g *gen) id() uuid.UUID {
	var u uuid.UUID
	binary.LittleEndian.PutUint64(u[:8], g.rng.Uint64())
	binary.LittleEndian.PutUint64(u[8:], g.rng.Uint64())
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// dayAt is the instant h hours (and m minutes) into the UTC day daysAgo days before today.
func (g *gen) dayAt(daysAgo int, h, m int) int64 {
	return g.today - int64(daysAgo)*int64(24*time.Hour) + int64(h)*int64(time.Hour) + int64(m)*int64(time.Minute)
}

func pick[T any](g *gen, xs []T) T { return xs[g.rng.IntN(len(xs))] }

// sb builds one session: each event gets the next time of the session's clock.
type sb struct {
	g     *gen
	s     *gSession
	v     gVer
	t     int64
	phase int
}

func (g *gen) session(app *gApp, v gVer, start int64, dev gDevice, net gNet, locale string, ud []gUD) *sb {
	s := &gSession{app: app, id: g.id(), install: g.id(), dev: dev, net: net, locale: locale, ud: ud}
	app.sessions = append(app.sessions, s)
	return &sb{g: g, s: s, v: v, t: start}
}

// add appends an event at the clock's time, cut to the SDK's precision, then advances the
// clock by 0.3–2.3 s, so no two events of a session share an instant.
func (b *sb) add(typ string, member any) *gEvent {
	p := int64(1)
	for i := b.s.dev.digits; i < 9; i++ {
		p *= 10
	}
	e := &gEvent{id: b.g.id(), s: b.s, ts: b.t - mod(b.t, p), typ: typ, v: b.v, member: member, thread: "main", phase: b.phase}
	b.s.events = append(b.s.events, e)
	b.t += int64(300*time.Millisecond) + b.g.rng.Int64N(int64(2*time.Second))
	return e
}

func (b *sb) wait(d time.Duration) *sb { b.t += int64(d); return b }

func (b *sb) start() { b.add("session_start", map[string]any{}) }

func (b *sb) activity(typ, class string) {
	e := b.add("lifecycle_activity", map[string]any{"type": typ, "class_name": class, "intent": nil, "saved_instance_state": false})
	if typ == "created" || typ == "resumed" {
		e.screen = class
	}
}

func (b *sb) fragment(typ, class string) {
	e := b.add("lifecycle_fragment", map[string]any{"type": typ, "class_name": class, "parent_activity": "com.shop.MainActivity", "parent_fragment": nil, "tag": nil})
	if typ == "attached" || typ == "resumed" {
		e.screen = class
	}
}

func (b *sb) viewController(typ, class string) {
	e := b.add("lifecycle_view_controller", map[string]any{"type": typ, "class_name": class})
	if typ == "viewDidLoad" || typ == "viewDidAppear" {
		e.screen = class
	}
}

func (b *sb) swiftUI(typ, class string) {
	e := b.add("lifecycle_swift_ui", map[string]any{"type": typ, "class_name": class})
	if typ == "on_appear" {
		e.screen = class
	}
}

func (b *sb) screenView(name string) {
	b.add("screen_view", map[string]any{"name": name}).screen = name
}

func (b *sb) custom(name string) { b.add("custom", map[string]any{"name": name}) }

func (b *sb) click(id string) {
	b.add("gesture_click", map[string]any{"target": "android.widget.Button", "target_id": id, "width": 200, "height": 80,
		"x": 120.5, "y": 640.25, "touch_down_time": 1000, "touch_up_time": 1080})
}

func (b *sb) memory() {
	b.add("memory_usage", map[string]any{"java_max_heap": 196608, "java_total_heap": 8440, "java_free_heap": 1447,
		"total_pss": 34643, "rss": 143632, "native_total_heap": 26996, "native_free_heap": 2657, "interval": 2013}).thread = "msr-default"
}

// walk shows screens one after the other the way Android SDKs report them: an activity is
// created then resumed (one screen), a fragment attached then resumed, or a screen_view.
func (b *sb) walk(screens ...string) {
	for _, s := range screens {
		switch {
		case strings.HasSuffix(s, "Activity"):
			b.activity("created", s)
			b.activity("resumed", s)
		case strings.HasSuffix(s, "Fragment"):
			b.fragment("attached", s)
			b.fragment("resumed", s)
		default:
			b.screenView(s)
		}
	}
}

// optU64 is an uptime member: nil sends null.
func optU64(v uint64) any {
	if v == 0 {
		return nil
	}
	return v
}

// coldLaunch: the duration is draw − the first non-zero of requested, process, provider,
// counted in (0, 30 s] (docs/architecture.md, "Algorithms").
func (b *sb) coldLaunch(requested, process, provider, draw uint64) {
	e := b.add("cold_launch", map[string]any{"process_start_uptime": optU64(process), "process_start_requested_uptime": optU64(requested),
		"content_provider_attach_uptime": optU64(provider), "on_next_draw_uptime": draw,
		"launched_activity": "com.shop.MainActivity", "has_saved_state": false, "intent_data": nil})
	start := requested
	if start == 0 {
		start = process
	}
	if start == 0 {
		start = provider
	}
	if start != 0 && draw > start && draw-start <= 30_000 {
		e.launch, e.launchMs = "cold", float64(draw-start)
	}
}

// warmLaunch: draw − app_visible in (0, 10 s], not lukewarm (a bool, or a string that says
// true). lukewarm nil leaves the member out.
func (b *sb) warmLaunch(visible, draw uint64, lukewarm any) {
	m := map[string]any{"app_visible_uptime": visible, "on_next_draw_uptime": draw, "launched_activity": "com.shop.MainActivity",
		"has_saved_state": false, "intent_data": nil}
	if lukewarm != nil {
		m["is_lukewarm"] = lukewarm
	}
	e := b.add("warm_launch", m)
	lw := lukewarm == true || lukewarm == "true"
	if !lw && visible != 0 && draw > visible && draw-visible <= 10_000 {
		e.launch, e.launchMs = "warm", float64(draw-visible)
	}
}

// hotLaunch: draw − app_visible, > 0.
func (b *sb) hotLaunch(visible, draw uint64) {
	e := b.add("hot_launch", map[string]any{"app_visible_uptime": visible, "on_next_draw_uptime": draw,
		"launched_activity": "com.shop.MainActivity", "has_saved_state": false, "intent_data": nil})
	if visible != 0 && draw > visible {
		e.launch, e.launchMs = "hot", float64(draw-visible)
	}
}

// how is an issue's handled flag (legacy) or severity, and whether it happened in the
// foreground.
type how struct {
	handled  *bool
	severity string // "" when not sent
	fg       bool
}

func handled(h, fg bool) how         { return how{handled: &h, fg: fg} }
func severity(s string, fg bool) how { return how{severity: s, fg: fg} }

// apply writes the crash rule (severity fatal, or no severity and handled false) and the
// displayed severity into e, and the members into m.
func (h how) apply(e *gEvent, m map[string]any) {
	if h.handled != nil {
		m["handled"] = *h.handled
	}
	if h.severity != "" {
		m["severity"] = h.severity
	}
	m["foreground"] = h.fg
	e.fg = h.fg
	fatal := false
	switch {
	case h.severity != "":
		fatal = h.severity == "fatal"
		e.severity = h.severity
	case h.handled != nil:
		fatal = !*h.handled
		e.severity = map[bool]string{true: "handled", false: "fatal"}[*h.handled]
	}
	if e.typ == "anr" {
		e.class, e.severity = "anr", ""
	} else if fatal {
		e.class = "crash"
	} else {
		e.class = "handled"
	}
}

type jFrame struct {
	class, method, file string
	line                int
}

type jUnit struct {
	typ, msg string
	frames   []jFrame
}

func (f jFrame) json() map[string]any {
	return map[string]any{"class_name": f.class, "method_name": f.method, "file_name": f.file, "line_num": f.line}
}

// text is the frame as Android's StackTraceElement prints it.
func (f jFrame) text() string {
	loc := f.file + ":" + strconv.Itoa(f.line)
	if f.line == -2 {
		loc = "Native Method"
	}
	return "at " + f.class + "." + f.method + "(" + loc + ")"
}

// jvm adds an Android exception or ANR. The group is the innermost exception (the last unit)
// and its first frame; the stack trace lists the units outermost first, with "Caused by: ".
func (b *sb) jvm(kind string, h how, units []jUnit, threads map[string][]jFrame, attach bool) *gEvent {
	m := map[string]any{}
	e := b.add(kind, m)
	h.apply(e, m)
	var us []any
	var stack strings.Builder
	for i, u := range units {
		var fs []any
		if i > 0 {
			stack.WriteString("\nCaused by: ")
		}
		stack.WriteString(u.typ + ": " + u.msg)
		for _, f := range u.frames {
			fs = append(fs, f.json())
			stack.WriteString("\n\t" + f.text())
		}
		us = append(us, map[string]any{"type": u.typ, "message": u.msg, "frames": fs})
	}
	m["exceptions"] = us
	names := make([]string, 0, len(threads))
	for n := range threads {
		names = append(names, n)
	}
	sort.Strings(names)
	ts := []any{}
	e.threads = []threadWant{}
	for _, n := range names {
		var fs []any
		tw := threadWant{Name: n, Frames: []string{}}
		for _, f := range threads[n] {
			fs = append(fs, f.json())
			tw.Frames = append(tw.Frames, f.text())
		}
		ts = append(ts, map[string]any{"name": n, "frames": fs})
		e.threads = append(e.threads, tw)
	}
	m["threads"] = ts
	in := units[len(units)-1]
	f := in.frames[0]
	e.gType, e.gMsg, e.gMethod, e.gFile, e.gLine = in.typ, in.msg, f.method, f.file, f.line
	e.group = fingerprint(e.gType, e.gMsg, e.gMethod, e.gFile, false)
	e.stack = stack.String()
	if attach {
		b.attach(e)
	}
	return e
}

func (b *sb) attach(e *gEvent) {
	a := gAttach{id: b.g.id(), typ: "screenshot", name: "screenshot.png", upload: []byte("png bytes of " + e.id.String())}
	e.attach = append(e.attach, a)
}

type dFrame struct {
	class, method, file, module string
	line, col                   int
}

// dart adds a Flutter exception: the group is exceptions[0] and its first frame. typ "" sends
// no type (as the Flutter SDK does for thrown non-Error objects in the fixtures).
func (b *sb) dart(h how, typ, msg string, frames []dFrame) *gEvent {
	m := map[string]any{"framework": "dart"}
	e := b.add("exception", m)
	h.apply(e, m)
	var fs []any
	for i, f := range frames {
		fs = append(fs, map[string]any{"class_name": f.class, "method_name": f.method, "file_name": f.file, "module_name": f.module,
			"line_num": f.line, "col_num": f.col, "frame_index": i, "in_app": false})
	}
	u := map[string]any{"frames": fs, "thread_sequence": 0}
	if typ != "" {
		u["type"] = typ
	}
	if msg != "" {
		u["message"] = msg
	}
	m["exceptions"] = []any{u}
	e.gType, e.gMsg, e.gMethod, e.gFile, e.gLine = typ, msg, frames[0].method, frames[0].file, frames[0].line
	e.group = fingerprint(e.gType, e.gMsg, e.gMethod, e.gFile, false)
	return e
}

type aFrame struct {
	binary, method, file string
	line                 int
	inApp                bool
}

type aUnit struct {
	typ, signal, msg string
	frames           []aFrame
}

// apple adds an iOS crash: the type is exceptions[0].signal, the frame the first in_app frame
// across all exceptions (else the first frame of exceptions[0]), the message exceptions[0]'s.
func (b *sb) apple(h how, units []aUnit, attach bool) *gEvent {
	m := map[string]any{"framework": "apple", "threads": []any{}}
	e := b.add("exception", m)
	h.apply(e, m)
	var us []any
	var inApp *aFrame
	for _, u := range units {
		var fs []any
		for i, f := range u.frames {
			fj := map[string]any{"frame_index": i, "binary_name": f.binary, "binary_address": "0000000102324000",
				"symbol_address": fmt.Sprintf("00000001028d%04x", 0x885c+i), "offset": 8 + i, "in_app": f.inApp}
			if f.method != "" {
				fj["method_name"] = f.method
			}
			if f.file != "" {
				fj["file_name"], fj["line_num"] = f.file, f.line
			}
			fs = append(fs, fj)
			if f.inApp && inApp == nil {
				inApp = &u.frames[i]
			}
		}
		us = append(us, map[string]any{"type": u.typ, "signal": u.signal, "message": u.msg, "thread_name": "Thread 0 Crashed",
			"thread_sequence": 0, "os_build_number": "25B78", "frames": fs})
	}
	m["exceptions"] = us
	m["binary_images"] = []any{map[string]any{"arch": "arm64", "uuid": "58e1fac954f53cf2945a0f6f2e16786c", "name": "DemoApp",
		"start_addr": "0000000102324000", "end_addr": "0000000102468000", "system": false, "path": "/private/DemoApp.app/DemoApp"}}
	f := units[0].frames[0]
	if inApp != nil {
		f = *inApp
	}
	e.gType, e.gMsg, e.gMethod, e.gFile, e.gLine = units[0].signal, units[0].msg, f.method, f.file, f.line
	e.group = fingerprint(e.gType, e.gMsg, e.gMethod, e.gFile, false)
	if attach {
		b.attach(e)
	}
	return e
}

type sFrame struct {
	method, file string
	line, col    int
}

// js adds a React Native JavaScript exception: exceptions[0] and its first frame, with the
// message in the fingerprint.
func (b *sb) js(h how, typ, msg string, frames []sFrame) *gEvent {
	m := map[string]any{"framework": "js", "threads": []any{}, "is_custom": false}
	e := b.add("exception", m)
	h.apply(e, m)
	var fs []any
	for i, f := range frames {
		fj := map[string]any{"frame_index": i, "file_name": f.file, "line_num": f.line, "col_num": f.col, "in_app": true}
		if f.method != "" {
			fj["method_name"] = f.method
		}
		fs = append(fs, fj)
	}
	m["exceptions"] = []any{map[string]any{"type": typ, "message": msg, "thread_sequence": 0, "thread_name": "main", "frames": fs}}
	e.gType, e.gMsg, e.gMethod, e.gFile, e.gLine = typ, msg, frames[0].method, frames[0].file, frames[0].line
	e.group = fingerprint(e.gType, e.gMsg, e.gMethod, e.gFile, true)
	return e
}

// fmtTS writes ns with digits fraction digits (ns is a multiple of the precision).
func fmtTS(ns int64, digits int) string {
	s := time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z")
	return s[:20+digits] + "Z"
}

func (s *gSession) udJSON() json.RawMessage {
	if len(s.ud) == 0 {
		return json.RawMessage("null")
	}
	parts := make([]string, len(s.ud))
	for i, u := range s.ud {
		k, _ := json.Marshal(u.key)
		parts[i] = string(k) + ":" + u.raw
	}
	return json.RawMessage("{" + strings.Join(parts, ",") + "}")
}

func (s *gSession) attr(v gVer, thread string) map[string]any {
	return map[string]any{
		"installation_id": s.install, "app_version": v.Name, "app_build": v.Code, "app_unique_id": s.app.uniqueID,
		"platform": s.dev.platform, "measure_sdk_version": "0.11.0", "thread_name": thread, "user_id": nil,
		"device_name": s.dev.name, "device_model": s.dev.model, "device_manufacturer": s.dev.manufacturer,
		"device_type": "phone", "device_is_foldable": false, "device_is_physical": true, "device_density_dpi": 440,
		"device_width_px": 1080, "device_height_px": 2400, "device_density": 2.75, "device_locale": s.locale,
		"os_name": s.dev.osName, "os_version": s.dev.osVersion, "network_type": s.net.typ,
		"network_provider": s.net.provider, "network_generation": s.net.gen, "device_cpu_arch": "arm64",
		"device_low_power_mode": false, "device_thermal_throttling_enabled": false,
	}
}

func (e *gEvent) json() json.RawMessage {
	var att any
	if len(e.attach) > 0 {
		var as []any
		for _, a := range e.attach {
			as = append(as, map[string]any{"id": a.id, "type": a.typ, "name": a.name})
		}
		att = as
	}
	m := map[string]any{"id": e.id, "session_id": e.s.id, "timestamp": fmtTS(e.ts, e.s.dev.digits), "type": e.typ,
		e.typ: e.member, "user_triggered": false, "attribute": e.s.attr(e.v, e.thread), "attachments": att,
		"user_defined_attribute": e.s.udJSON()}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func (sp gSpan) json(s *gSession) json.RawMessage {
	m := map[string]any{"name": "Checkout.load", "trace_id": "1fcd8a4fc0b5d216ab80ea890cc8b6d4", "span_id": "819bff7f0cf5741e",
		"parent_id": nil, "session_id": sp.session, "start_time": fmtTS(sp.start, 9), "end_time": fmtTS(sp.start+int64(21*time.Millisecond), 9),
		"duration": 21, "status": 1, "user_defined_attribute": map[string]any{}, "checkpoints": []any{},
		"attributes": map[string]any{"thread_name": "main", "user_id": nil, "device_name": s.dev.name, "device_model": s.dev.model,
			"device_manufacturer": s.dev.manufacturer, "device_locale": s.locale, "os_name": s.dev.osName, "os_version": s.dev.osVersion,
			"platform": s.dev.platform, "app_version": sp.v.Name, "app_build": sp.v.Code, "app_unique_id": s.app.uniqueID,
			"measure_sdk_version": "0.11.0", "installation_id": s.install, "network_type": s.net.typ,
			"network_generation": s.net.gen, "network_provider": s.net.provider}}
	b, _ := json.Marshal(m)
	return b
}

// batchBody is a PUT /events JSON body.
func batchBody(events []*gEvent, spans []json.RawMessage) []byte {
	evs := make([]json.RawMessage, len(events))
	for i, e := range events {
		evs[i] = e.json()
	}
	if spans == nil {
		spans = []json.RawMessage{}
	}
	b, _ := json.Marshal(map[string]any{"events": evs, "spans": spans})
	return b
}

// requests splits the app's events of one phase into request bodies: each session's events,
// in time order, go in 1–3 chunks; pairs of sessions share requests chunk by chunk, and a
// request's events are shuffled (the server orders them).
func (g *gen) requests(app *gApp, phase int) [][]*gEvent {
	var out [][]*gEvent
	var chunked [][][]*gEvent
	for _, s := range app.sessions {
		var evs []*gEvent
		for _, e := range s.events {
			if e.phase == phase {
				evs = append(evs, e)
			}
		}
		if len(evs) == 0 {
			continue
		}
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].ts < evs[j].ts })
		n := s.chunks
		if n == 0 {
			n = 1 + g.rng.IntN(3)
		}
		n = min(n, len(evs))
		var cs [][]*gEvent
		for i := 0; i < n; i++ {
			cs = append(cs, evs[i*len(evs)/n:(i+1)*len(evs)/n])
		}
		chunked = append(chunked, cs)
	}
	for i := 0; i < len(chunked); i += 2 {
		pair := chunked[i:min(i+2, len(chunked))]
		for j := 0; ; j++ {
			var req []*gEvent
			for _, cs := range pair {
				if j < len(cs) {
					req = append(req, cs[j]...)
				}
			}
			if len(req) == 0 {
				break
			}
			g.rng.Shuffle(len(req), func(a, b int) { req[a], req[b] = req[b], req[a] })
			out = append(out, req)
		}
	}
	return out
}

// dataset is the generated data of the test: app A (the rich one) and app B (paging, an early
// handled exception, a session with more than 500 moves, a group shared with app A).
type dataset struct {
	g     *gen
	today int64
	a, b  *gApp
	phase int // events of phases up to this one are in the node

	vA10, vA11, vA20, vB90, vB91 gVer

	// Groups the test addresses directly.
	pay, feedANR, dbANR, npe, hot string

	// The restart session: its last initial chunk is put in the spool again at a restart, and
	// it continues after the restart (phase 2).
	restart *sb
	// The session of app A's span, which has no event.
	spanSession *gSession
	// The initial requests of each app.
	reqs map[*gApp][][]*gEvent
}

var (
	devPixel   = gDevice{"Pixel 7", "Pixel 7", "Google", "android", "android", "34", 8}
	devSamsung = gDevice{"SM-S911B", "Galaxy S23", "samsung", "android", "android", "33", 8}
	devRedmi   = gDevice{"Redmi Note 12", "23021RAAEG", "Xiaomi", "android", "android", "33", 9}
	devIPhone  = gDevice{"iPhone15,2", "iPhone 14 Pro", "Apple", "ios", "ios", "17.4", 3}
	devFlutter = gDevice{"sdk_gphone64_arm64", "sdk_gphone64_arm64", "Google", "flutter", "android", "35", 8}

	netWifi = gNet{"wifi", "unknown", "unknown"}
	netTMo  = gNet{"cellular", "T-Mobile", "5g"}
	netVoda = gNet{"cellular", "Vodafone", "4g"}
)

// The groups' frames.
var (
	payUnits = func(line int) []jUnit {
		return []jUnit{
			{"java.lang.RuntimeException", "checkout failed", []jFrame{{"com.shop.CheckoutActivity", "onPay", "CheckoutActivity.kt", 88}}},
			{"java.lang.IllegalStateException", "payment failed", []jFrame{{"com.shop.pay.PaymentClient", "charge", "PaymentClient.kt", line},
				{"com.shop.CheckoutActivity", "onPay", "CheckoutActivity.kt", 88}}},
		}
	}
	feedUnits = []jUnit{{"sh.measure.android.anr.AnrError", "Application Not Responding for at least 5s", []jFrame{
		{"android.os.MessageQueue", "nativePollOnce", "MessageQueue.java", -2}, {"android.os.Looper", "loop", "Looper.java", 288}}}}
	dbUnits = []jUnit{
		{"java.lang.Exception", "outer", []jFrame{{"android.app.ActivityThread", "main", "ActivityThread.java", 7918}}},
		{"sh.measure.android.anr.AnrError", "Application Not Responding for at least 5s", []jFrame{
			{"android.database.sqlite.SQLiteConnection", "nativeExecute", "SQLiteConnection.java", -2}}}}
	npeUnits = []jUnit{{"java.lang.NullPointerException", "item was null", []jFrame{{"com.shop.ListAdapter", "bind", "ListAdapter.kt", 31}}}}
	ioUnits  = []jUnit{{"java.io.IOException", "timeout", []jFrame{{"okhttp3.internal.connection.RealCall", "execute", "RealCall.kt", 154}}}}
	oomUnits = []jUnit{{"java.lang.OutOfMemoryError", "Failed to allocate", []jFrame{{"android.graphics.Bitmap", "nativeCreate", "Bitmap.java", -2}}}}
	threadsA = map[string][]jFrame{
		"main":   {{"android.os.Handler", "dispatchMessage", "Handler.java", 106}},
		"msr-io": {{"jdk.internal.misc.Unsafe", "park", "Unsafe.java", -2}, {"java.lang.Thread", "run", "Thread.java", 1119}},
	}
	dartFrames = []dFrame{{"MainScreen", "MainScreen._throwString", "screen_main.dart", "package:shop/src/", 136, 5},
		{"_InkResponseState", "_InkResponseState.handleTap", "ink_well.dart", "package:flutter/src/material/", 1185, 21}}
	appleUnits = []aUnit{{"EXC_CRASH", "SIGABRT", "", []aFrame{{"libsystem_kernel.dylib", "", "", 0, false},
		{"DemoApp", "ViewController.buy()", "ViewController.swift", 57, true}}}}
	appleNoInApp = []aUnit{{"NSRangeException", "SIGABRT", "index 1 beyond bounds", []aFrame{{"CoreFoundation", "__exceptionPreprocess", "", 0, false},
		{"libobjc.A.dylib", "objc_exception_throw", "", 0, false}}}}
	jsFrames = []sFrame{{"render", "App.js", 42, 10}, {"", "ReactFiberWorkLoop.js", 200, 8}}
)

// buildDataset generates the dataset for a node started now.
func buildDataset(now time.Time) *dataset {
	today := model.BucketStart(now, model.PlotDays).UnixNano()
	g := &gen{rng: rand.New(rand.NewPCG(20240501, 7)), today: today}
	d := &dataset{g: g, today: today,
		a:    &gApp{label: "A", uniqueID: "com.shop"},
		b:    &gApp{label: "B", uniqueID: "com.edge"},
		vA10: gVer{"1.0", "100"}, vA11: gVer{"1.1", "110"}, vA20: gVer{"2.0", "200"},
		vB90: gVer{"9.0", "900"}, vB91: gVer{"9.1", "910"}}
	d.genA()
	d.genB()
	d.reqs = map[*gApp][][]*gEvent{d.a: g.requests(d.a, 0), d.b: g.requests(d.b, 0)}
	return d
}

// lastChunk is the last request's share of a session's initial events (requests splits
// them into s.chunks equal parts in time order).
func (d *dataset) lastChunk(s *gSession) []*gEvent {
	var evs []*gEvent
	for _, e := range s.events {
		if e.phase == 0 {
			evs = append(evs, e)
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].ts < evs[j].ts })
	n := min(s.chunks, len(evs))
	return evs[(n-1)*len(evs)/n:]
}

var (
	udFree  = []gUD{{"plan", "string", `"free"`}, {"tier", "int64", "1"}, {"score", "float64", "1.25"}, {"beta", "bool", "false"}, {"level", "int64", "3"}}
	udPro   = []gUD{{"plan", "string", `"pro"`}, {"tier", "int64", "3"}, {"score", "float64", "2.75"}, {"beta", "bool", "true"}, {"level", "string", `"gold"`}}
	udPro5  = []gUD{{"plan", "string", `"pro"`}, {"tier", "int64", "5"}, {"score", "float64", "2.5"}, {"beta", "bool", "false"}}
	udEnt   = []gUD{{"plan", "string", `"Enterprise"`}, {"score", "float64", "3.75"}, {"beta", "bool", "true"}}
	udNone  []gUD
	udSets  = [][]gUD{udFree, udPro, udPro5, udEnt, udNone}
	locales = []string{"en-US", "de-DE", "pt-BR"}
)

// genA writes app A: scripted sessions whose answers are written out literally in the test
// (common paths), special cases (midnight, version upgrade, crash before any screen, launches
// that do not count, background issues, an old session outside the default window, a span
// without events), and random browsing sessions for volume.
func (d *dataset) genA() {
	g, a := d.g, d.a
	android := []gDevice{devPixel, devSamsung, devRedmi}
	nets := []gNet{netWifi, netTMo, netVoda}

	// Checkout crashes (group PAY): six sessions of one script, four "open_cart" and two
	// "search" third from the end; the common path is written out in the test.
	payVersions := []gVer{d.vA10, d.vA10, d.vA11, d.vA11, d.vA20, d.vA20}
	payDays := []int{4, 3, 3, 2, 2, 1}
	for i := 0; i < 6; i++ {
		b := g.session(a, payVersions[i], g.dayAt(payDays[i], 9+i, 7*i), android[i%3], nets[i%3], locales[i%3], udSets[i%4])
		b.start()
		b.coldLaunch(0, 5000, 5100, 5000+uint64(400+100*i))
		b.walk("com.shop.MainActivity")
		b.custom(map[bool]string{true: "open_cart", false: "search"}[i < 4])
		b.activity("paused", "com.shop.MainActivity")
		b.walk("com.shop.CheckoutActivity")
		b.memory()
		b.click("btn_pay")
		d.pay = b.jvm("exception", handled(false, i != 2), payUnits(42+i%2), threadsA, i < 3).group
	}

	// ANRs on the feed (group FEED): five sessions of one script; the session goes on after
	// the ANR. One ANR in the background.
	for i := 0; i < 5; i++ {
		v := []gVer{d.vA11, d.vA20, d.vA20, d.vA11, d.vA10}[i]
		b := g.session(a, v, g.dayAt(1+i%4, 11, 13*i), android[(i+1)%3], nets[(i+2)%3], locales[(i+1)%3], udSets[(i+1)%5])
		b.start()
		b.warmLaunch(9000, 9000+uint64(200+50*i), map[bool]any{true: "false", false: nil}[i%2 == 0])
		b.walk("com.shop.MainActivity", "com.shop.FeedFragment")
		b.custom("refresh")
		e := b.jvm("anr", handled(false, i != 3), feedUnits, threadsA, false)
		d.feedANR = e.group
		b.walk("com.shop.DetailFragment")
		b.hotLaunch(20000, 20000+uint64(30+i))
	}

	// ANRs in the database (group DB, nested: the innermost unit groups): two sessions.
	for i := 0; i < 2; i++ {
		b := g.session(a, d.vA20, g.dayAt(2-i, 15, 0), devSamsung, netVoda, "de-DE", udPro)
		b.start()
		b.walk("com.shop.MainActivity", "com.shop.SettingsFragment")
		d.dbANR = b.jvm("anr", handled(false, true), dbUnits, nil, false).group
	}

	// The restart session (v1.1, day 2): Main → List → Detail with handled IO errors; its
	// second chunk is replayed from the spool at a restart and it continues after it.
	r := g.session(a, d.vA11, g.dayAt(2, 10, 0), devPixel, netWifi, "en-US", udFree)
	r.s.chunks = 2
	r.start()
	r.walk("com.shop.MainActivity", "ListFragment")
	r.jvm("exception", handled(true, true), ioUnits, nil, false)
	r.walk("DetailFragment")
	r.jvm("exception", handled(true, true), ioUnits, nil, false)
	d.restart = r

	// A session across midnight (v2.0, day 3 → day 2): moves before and after midnight, a
	// repeated move after midnight, an NPE crash after midnight.
	m := g.session(a, d.vA20, g.dayAt(3, 23, 59), devRedmi, netTMo, "pt-BR", udPro5)
	m.start()
	m.walk("com.shop.MainActivity", "ListFragment", "DetailFragment")
	m.wait(time.Minute)
	m.walk("ListFragment", "DetailFragment", "SettingsFragment")
	d.npe = m.jvm("exception", handled(false, true), npeUnits, nil, false).group

	// A session that updates the app from 1.1 to 2.0 midway.
	u := g.session(a, d.vA11, g.dayAt(2, 14, 0), devPixel, netTMo, "en-US", udEnt)
	u.start()
	u.walk("com.shop.MainActivity", "ListFragment")
	u.jvm("exception", handled(true, true), npeUnits, nil, false)
	u.v = d.vA20
	u.walk("DetailFragment")
	u.jvm("exception", handled(false, false), npeUnits, nil, false) // a background crash

	// iOS sessions: apple crashes (one before any screen), an unhandled-severity NSException
	// (not a crash: severity is not fatal), JS crashes whose groups differ by message only.
	for i := 0; i < 6; i++ {
		v := []gVer{d.vA10, d.vA11, d.vA20}[i%3]
		b := g.session(a, v, g.dayAt(1+i%4, 16, 5*i), devIPhone, nets[i%3], locales[(i+2)%3], udSets[(i+2)%5])
		b.start()
		b.coldLaunch(0, 1742049396000, 0, 1742049396000+uint64(900+40*i))
		switch i % 3 {
		case 0:
			if i == 0 {
				b.apple(severity("fatal", true), appleUnits, true) // before any screen
				continue
			}
			b.viewController("viewDidLoad", "HomeViewController")
			b.viewController("viewDidAppear", "HomeViewController")
			b.swiftUI("on_appear", "CartView")
			b.apple(handled(false, true), appleUnits, false)
		case 1:
			b.viewController("viewDidLoad", "HomeViewController")
			b.screenView("Settings")
			b.apple(severity("unhandled", true), appleNoInApp, false)
			b.swiftUI("on_appear", "CartView")
			b.js(severity("fatal", true), "TypeError", "Cannot read property 'foo' of undefined", jsFrames)
		default:
			b.screenView("Settings")
			b.swiftUI("on_appear", "CartView")
			b.js(severity("handled", true), "TypeError", "Cannot read property 'bar' of undefined", jsFrames)
			b.viewController("viewDidAppear", "HomeViewController")
			b.js(severity("fatal", false), "TypeError", "Cannot read property 'bar' of undefined", jsFrames)
		}
	}

	// Flutter sessions: dart crashes, and a handled dart error without a type.
	for i := 0; i < 4; i++ {
		b := g.session(a, []gVer{d.vA11, d.vA20}[i%2], g.dayAt(1+i%3, 18, 0), devFlutter, netWifi, "en-US", udSets[i%5])
		b.start()
		b.screenView("/home")
		b.screenView("/settings")
		if i%2 == 0 {
			b.dart(handled(false, true), "_TypeError", "Null check operator used on a null value", dartFrames)
		} else {
			b.dart(handled(true, true), "", "are you serious?", dartFrames)
			b.screenView("/home")
		}
	}

	// Launches that do not count: a 40 s cold launch, a lukewarm warm launch (bool and
	// string), a warm launch over 10 s, a hot launch with no visible time.
	l := g.session(a, d.vA10, g.dayAt(3, 7, 0), devSamsung, netWifi, "de-DE", udFree)
	l.start()
	l.coldLaunch(1000, 900, 0, 41000)
	l.warmLaunch(500, 700, true)
	l.warmLaunch(500, 800, "true")
	l.warmLaunch(500, 10600, nil)
	l.hotLaunch(0, 300)
	l.coldLaunch(0, 0, 7000, 7450) // counts: the provider time is the first non-zero
	l.walk("com.shop.MainActivity")

	// An old session, outside the default window (10 days ago).
	o := g.session(a, d.vA10, g.dayAt(10, 12, 0), devPixel, netWifi, "en-US", udFree)
	o.start()
	o.walk("com.shop.MainActivity", "ListFragment")
	o.jvm("exception", handled(false, true), oomUnits, nil, false)

	// A span whose session has no event: it never counts as a session.
	sp := g.session(a, d.vA20, g.dayAt(2, 8, 0), devPixel, netWifi, "en-US", udNone)
	a.sessions = a.sessions[:len(a.sessions)-1]
	a.spans = append(a.spans, gSpan{session: sp.s.id, start: g.dayAt(2, 8, 0), v: d.vA20})
	d.spanSession = sp.s

	// Random browsing sessions.
	screens := []string{"com.shop.MainActivity", "ListFragment", "DetailFragment", "Profile", "SettingsFragment"}
	for i := 0; i < 24; i++ {
		v := pick(g, []gVer{d.vA10, d.vA11, d.vA20})
		day := 1 + g.rng.IntN(4)
		if v == d.vA20 {
			day = 1 + g.rng.IntN(3)
		}
		b := g.session(a, v, g.dayAt(day, 6+g.rng.IntN(16), g.rng.IntN(60)), pick(g, android), pick(g, nets), pick(g, locales), pick(g, udSets))
		b.start()
		switch g.rng.IntN(3) {
		case 0:
			b.coldLaunch(0, 3000, 0, 3000+uint64(300+g.rng.IntN(2000)))
		case 1:
			b.warmLaunch(4000, 4000+uint64(100+g.rng.IntN(900)), nil)
		default:
			b.hotLaunch(6000, 6000+uint64(20+g.rng.IntN(200)))
		}
		n := 2 + g.rng.IntN(6)
		for j := 0; j < n; j++ {
			b.walk(pick(g, screens))
			if g.rng.IntN(3) == 0 {
				b.custom(pick(g, []string{"add_to_cart", "share", "like"}))
			}
			if g.rng.IntN(5) == 0 {
				b.jvm("exception", handled(true, true), ioUnits, nil, false)
			}
			if g.rng.IntN(9) == 0 {
				b.jvm("exception", handled(true, g.rng.IntN(2) == 0), npeUnits, nil, false)
			}
		}
		switch g.rng.IntN(5) {
		case 0:
			b.jvm("exception", handled(false, g.rng.IntN(4) != 0), npeUnits, threadsA, g.rng.IntN(2) == 0)
		case 1:
			b.jvm("exception", handled(false, true), oomUnits, nil, false)
		}
	}
}

// genB writes app B: a crash of app A's PAY group, 65 paging groups with ties, a group with
// 64 instances (ties on time across sessions), an early handled exception pair, and a session
// making more than 500 distinct moves.
func (d *dataset) genB() {
	g, bApp := d.g, d.b

	// The earliest events of app B: two handled exceptions of one group, in one request, 12
	// days ago at 08:00 and 09:00 (no screen, nothing else earlier).
	e := g.session(bApp, d.vB90, g.dayAt(12, 8, 0), devPixel, netWifi, "en-US", udNone)
	e.s.chunks = 1
	e.start()
	earlyUnits := []jUnit{{"java.lang.IllegalArgumentException", "early", []jFrame{{"com.edge.Boot", "init", "Boot.kt", 3}}}}
	e.jvm("exception", handled(true, true), earlyUnits, nil, false)
	e.wait(time.Hour)
	e.jvm("exception", handled(true, true), earlyUnits, nil, false)

	// PAY in app B: never counted for app A.
	p := g.session(bApp, d.vB90, g.dayAt(2, 12, 0), devSamsung, netTMo, "de-DE", udPro)
	p.start()
	p.walk("EdgeActivity")
	p.jvm("exception", handled(false, true), payUnits(7), nil, false)

	// 65 paging groups: E00–E04 three events each whose latest events share one instant
	// (ordered by id), E05–E19 two events, E20–E64 one event.
	tie := g.dayAt(1, 20, 0)
	for i := 0; i < 65; i++ {
		n := 1
		switch {
		case i < 5:
			n = 3
		case i < 20:
			n = 2
		}
		units := []jUnit{{fmt.Sprintf("com.edge.paging.E%02d", i), "page me", []jFrame{{"com.edge.Pager", "page", "Pager.kt", i}}}}
		for k := 0; k < n; k++ {
			b := g.session(bApp, []gVer{d.vB90, d.vB91}[k%2], g.dayAt(1+(i+k)%3, 7, i), devPixel, netWifi, "en-US", udNone)
			if i < 5 && k == n-1 {
				b.t = tie
			}
			b.jvm("exception", handled(false, true), units, nil, false)
		}
	}

	// 64 instances of one group over 16 sessions; sessions pair up on identical times.
	hotUnits := []jUnit{{"com.edge.HotException", "again", []jFrame{{"com.edge.Hot", "spin", "Hot.kt", 1}}}}
	for s := 0; s < 16; s++ {
		start := g.dayAt(1+(s/2)%3, 10, s/2)
		b := g.session(bApp, d.vB91, start, devRedmi, netVoda, "pt-BR", udNone)
		for k := 0; k < 4; k++ {
			d.hot = b.jvm("exception", handled(false, true), hotUnits, nil, false).group
			b.t = start + int64(k+1)*int64(time.Second) // sessions s and s^1 share their times
		}
	}

	// More than 500 distinct moves in one session: pairs (x, y) of 24 screens, x < y.
	w := g.session(bApp, d.vB90, g.dayAt(1, 1, 0), devPixel, netWifi, "en-US", udNone)
	w.s.chunks = 3
	w.start()
	for x := 0; x < 24; x++ {
		for y := x + 1; y < 24; y++ {
			w.screenView(fmt.Sprintf("S%02d", x))
			w.screenView(fmt.Sprintf("S%02d", y))
		}
	}
	w.jvm("exception", handled(false, true), hotUnits, nil, false)
}
