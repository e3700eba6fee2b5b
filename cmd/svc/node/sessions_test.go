package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The session endpoints end to end (issue #12): sessions with known truth go through PUT
// /events of a started node, and every answer of /sessions, /sessions/plots/instances and
// /sessions/{id} must equal the one written down here by hand, on both store setups.

// sessT0 is 10:00 UTC five days ago, inside the default window and the app's retention;
// TestSessionEndpoints sets it.
var sessT0 time.Time

// tDevice is what a session's events say of the app, device and network.
type tDevice struct {
	platform, version, build, osName, osVer string
	manuf, model, name, locale              string
	netType, netProv, netGen                string
}

var (
	pixel   = tDevice{"android", "1.0", "100", "android", "14", "Google", "Pixel 8", "shiba", "en-US", "wifi", "jio", "unknown"}
	iphone  = tDevice{"ios", "2.0", "200", "ios", "17.2", "Apple", "iPhone15,2", "iPhone15,2", "en-GB", "cellular", "verizon", "unknown"}
	samsung = tDevice{"android", "1.0", "100", "android", "14", "Samsung", "SM-S901B", "r0q", "en-US", "cellular", "airtel", "5g"}
)

// attr is the attribute object the SDK sends.
func (d tDevice) attr(install, thread, user string) map[string]any {
	a := map[string]any{"installation_id": install, "measure_sdk_version": "0.11.0", "app_unique_id": "com.example.shop",
		"platform": d.platform, "app_version": d.version, "app_build": d.build, "os_name": d.osName, "os_version": d.osVer,
		"device_manufacturer": d.manuf, "device_model": d.model, "device_name": d.name, "device_locale": d.locale,
		"network_type": d.netType, "network_provider": d.netProv, "network_generation": d.netGen,
		"device_cpu_arch": "arm64-v8a", "thread_name": thread, "device_low_power_mode": false,
		"device_thermal_throttling_enabled": false}
	if user != "" {
		a["user_id"] = user
	}
	return a
}

// attrJSON is the attribute object the timeline shows for it (model.AttributesJSON: the
// ingestion names, false booleans left out).
func (d tDevice) attrJSON(install, thread, user string) map[string]any {
	a := d.attr(install, thread, user)
	delete(a, "measure_sdk_version")
	delete(a, "device_low_power_mode")
	delete(a, "device_thermal_throttling_enabled")
	a["service_sdk_version"] = "0.11.0"
	return a
}

// tEvent is one event of the dataset.
type tEvent struct {
	id       uuid.UUID
	session  uuid.UUID
	dev      tDevice
	at       time.Time
	typ      string
	member   string // the kind's JSON object; "" for none
	thread   string // "" is main
	user     string
	ud       string // JSON object or ""
	attach   []byte // a screenshot uploaded through its upload URL
	attachID uuid.UUID
}

func (e *tEvent) json() string {
	thread := e.thread
	if thread == "" {
		thread = "main"
	}
	ab, _ := json.Marshal(e.dev.attr("inst-"+e.session.String()[:8], thread, e.user))
	member := ""
	if e.member != "" {
		member = fmt.Sprintf(",%q:%s", e.typ, e.member)
	}
	ud := "null"
	if e.ud != "" {
		ud = e.ud
	}
	att := "null"
	if e.attach != nil {
		att = fmt.Sprintf(`[{"id":%q,"type":"screenshot","name":"screenshot.png"}]`, e.attachID)
	}
	return fmt.Sprintf(`{"id":%q,"session_id":%q,"timestamp":%q,"type":%q%s,"attribute":%s,"user_triggered":false,"user_defined_attribute":%s,"attachments":%s}`,
		e.id, e.session, tsOf(e.at), e.typ, member, ab, ud, att)
}

// sessionData is the dataset:
//   - s1 (pixel, 1.0 (100)): session_start T0, an activity created T0+1s, screen Home T0+2s
//     (user ada from here on), a tap on checkout_button T0+5s, an http call on another thread
//     T0+6s, cpu and memory samples T0+7s, a crash with a screenshot T0+9s; a root span
//     "checkout" T0+3s with a child;
//   - s2 (iphone, 2.0 (200)): the app in the background T0+1h, a custom event on thread worker
//     T0+1h+10s (user Bob), a log line T0+1h+15s, a memory sample T0+1h+16s, a bug report
//     T0+1h+20s;
//   - s3 (samsung, 1.0 (100)): session_start T0+2h, an ANR in the background T0+2h+30s, an
//     http call T0+2h+40s;
//   - s4: only a session_start, T0+3h;
//   - s5: no event, a root span "sync" T0+4h;
//   - s6 (pixel): a custom event an hour ago.
type sessionData struct {
	s1, s2, s3, s4, s5, s6 uuid.UUID
	events                 []*tEvent
	spans                  []*tSpan
	crash, bugReport       *tEvent
	recent                 time.Time
}

func sessionDataset(now time.Time) *sessionData {
	d := &sessionData{s1: uuid.New(), s2: uuid.New(), s3: uuid.New(), s4: uuid.New(), s5: uuid.New(), s6: uuid.New()}
	d.recent = now.Add(-time.Hour).Truncate(time.Millisecond)
	at := func(d time.Duration) time.Time { return sessT0.Add(d) }
	ev := func(s uuid.UUID, dev tDevice, t time.Time, typ, member string) *tEvent {
		e := &tEvent{id: uuid.New(), session: s, dev: dev, at: t, typ: typ, member: member}
		d.events = append(d.events, e)
		return e
	}
	sec := time.Second
	ev(d.s1, pixel, at(0), "session_start", "{}")
	ev(d.s1, pixel, at(1*sec), "lifecycle_activity", `{"type":"created","class_name":"sh.shop.MainActivity","intent":null,"saved_instance_state":false}`)
	ev(d.s1, pixel, at(2*sec), "screen_view", `{"name":"Home"}`).user = "ada"
	ev(d.s1, pixel, at(5*sec), "gesture_click", `{"target":"com.google.android.material.button.MaterialButton","target_id":"checkout_button","width":262,"height":126,"x":546.9,"y":1267,"touch_down_time":100,"touch_up_time":160}`).user = "ada"
	h := ev(d.s1, pixel, at(6*sec), "http", `{"url":"https://api.shop.io/v1/cart","method":"get","status_code":200,"start_time":1000,"end_time":1250,"client":"okhttp"}`)
	h.user, h.thread = "ada", "OkHttp Dispatcher"
	ev(d.s1, pixel, at(7*sec), "cpu_usage", `{"num_cores":8,"clock_speed":100,"uptime":1,"utime":1,"stime":1,"cutime":0,"cstime":0,"interval":5000,"percentage_usage":12.5,"start_time":1}`)
	ev(d.s1, pixel, at(7*sec), "memory_usage", `{"java_max_heap":262144,"java_total_heap":16384,"java_free_heap":6486,"total_pss":277588,"rss":330800,"native_total_heap":44596,"native_free_heap":16425,"interval":2123}`)
	d.crash = ev(d.s1, pixel, at(9*sec), "exception", `{"handled":false,"exceptions":[{"type":"java.lang.IllegalStateException","message":"Cart is empty","frames":[{"class_name":"sh.shop.CartActivity","method_name":"onClick","file_name":"CartActivity.kt","line_num":42}]}],"foreground":true}`)
	d.crash.user, d.crash.ud, d.crash.attach, d.crash.attachID = "ada", `{"plan":"pro"}`, []byte("\x89PNG screenshot bytes"), uuid.New()

	hr := time.Hour
	ev(d.s2, iphone, at(hr), "lifecycle_app", `{"type":"background"}`)
	c := ev(d.s2, iphone, at(hr+10*sec), "custom", `{"name":"sync_done"}`)
	c.user, c.thread = "Bob", "worker"
	ev(d.s2, iphone, at(hr+15*sec), "log", `{"severity_text":"info","severity_number":9,"body":"Payment TIMEOUT after 30s"}`).user = "Bob"
	ev(d.s2, iphone, at(hr+16*sec), "memory_usage_absolute", `{"max_memory":4096000,"used_memory":1200345,"interval":5000}`)
	d.bugReport = ev(d.s2, iphone, at(hr+20*sec), "bug_report", `{"description":"Total is wrong"}`)
	d.bugReport.user = "Bob"

	ev(d.s3, samsung, at(2*hr), "session_start", "{}")
	ev(d.s3, samsung, at(2*hr+30*sec), "anr", `{"handled":false,"exceptions":[{"type":"sh.measure.android.anr.AnrError","message":"Application Not Responding for at least 5000 ms.","frames":[{"class_name":"android.os.MessageQueue","method_name":"nativePollOnce","file_name":"MessageQueue.java","line_num":-2}]}],"foreground":false}`)
	ev(d.s3, samsung, at(2*hr+40*sec), "http", `{"url":"https://api.shop.io/v1/sync","method":"post","status_code":204,"start_time":5,"end_time":90,"client":"okhttp"}`)

	ev(d.s4, pixel, at(3*hr), "session_start", "{}")
	ev(d.s6, pixel, d.recent, "custom", `{"name":"recent"}`)

	span := func(s *tSpan, dev tDevice) *tSpan {
		s.version, s.build, s.osName, s.osVer, s.manuf, s.model, s.devName, s.locale = dev.version, dev.build, dev.osName, dev.osVer, dev.manuf, dev.model, dev.name, dev.locale
		s.netType, s.netProv, s.netGen = dev.netType, dev.netProv, dev.netGen
		if s.thread == "" {
			s.thread = "main"
		}
		d.spans = append(d.spans, s)
		return s
	}
	root := span(&tSpan{key: "checkout", name: "checkout", trace: strings.Repeat("a", 32), id: "a000000000000001", session: d.s1, status: 1, start: at(3 * sec), dur: 1200}, pixel)
	span(&tSpan{key: "db", name: "db", trace: root.trace, id: "a000000000000002", paren: root.id, session: d.s1, status: 1, start: at(3*sec + 100*time.Millisecond), dur: 300, thread: "db"}, pixel)
	span(&tSpan{key: "sync", name: "sync", trace: strings.Repeat("b", 32), id: "b000000000000001", session: d.s5, status: 2, start: at(4 * hr), dur: 50}, iphone)
	return d
}

// TestSessionEndpoints: the three session endpoints answer exactly the dataset's truth, with
// every filter, kind, free text, paging, the 400s and the 404, on both store setups.
func TestSessionEndpoints(t *testing.T) {
	now := time.Now().UTC()
	sessT0 = time.Date(now.Year(), now.Month(), now.Day(), 10, 0, 0, 0, time.UTC).AddDate(0, 0, -5)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, nil)
			d := sessionDataset(now)
			var evs, spans []string
			for _, e := range d.events {
				evs = append(evs, e.json())
			}
			for _, s := range d.spans {
				spans = append(spans, s.json("inst-"+s.session.String()[:8]))
			}
			r := tn.putJSON(t, tn.key, uuid.NewString(), []byte(`{"events":[`+strings.Join(evs, ",")+`],"spans":[`+strings.Join(spans, ",")+`]}`))
			if r.status != http.StatusOK {
				t.Fatalf("PUT /events: %d %s", r.status, r.body)
			}
			uploadAttachments(t, tn, r.body, map[uuid.UUID][]byte{d.crash.attachID: d.crash.attach})
			tn.waitFlushed(t)
			c := &spanClient{tn: tn, token: tn.accessToken(t, tn.email), app: tn.app.ID.String()}
			checkSessionList(t, c, d)
			checkSessionPlot(t, c)
			checkSessionDetail(t, c, d)
		})
	}
}

// uploadAttachments PUTs the bytes of each attachment of an ingest answer to its upload URL.
func uploadAttachments(t *testing.T, tn *testNode, answer []byte, files map[uuid.UUID][]byte) {
	t.Helper()
	var v struct {
		Attachments []struct {
			ID        uuid.UUID         `json:"id"`
			UploadURL string            `json:"upload_url"`
			Headers   map[string]string `json:"headers"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(answer, &v); err != nil || len(v.Attachments) != len(files) {
		t.Fatalf("ingest answer %s: %v", answer, err)
	}
	for _, a := range v.Attachments {
		req, _ := http.NewRequest(http.MethodPut, a.UploadURL, bytes.NewReader(files[a.ID]))
		for k, h := range a.Headers {
			req.Header.Set(k, h)
		}
		resp, err := tn.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("upload %s: %d", a.UploadURL, resp.StatusCode)
		}
	}
}

// sessWindow is [T0-1h, T0+1d): every session but s6.
func sessWindow() string {
	return "from=" + url.QueryEscape(tsOf(sessT0.Add(-time.Hour))) + "&to=" + url.QueryEscape(tsOf(sessT0.Add(24*time.Hour)))
}

func checkSessionList(t *testing.T, c *spanClient, d *sessionData) {
	type item = map[string]any
	summary := func(s uuid.UUID, dev tDevice, user string, first, last time.Time, matched string) item {
		return item{"session_id": s.String(), "app_id": c.app, "first_event_time": tsOf(first), "last_event_time": tsOf(last),
			"duration": last.Sub(first).Milliseconds(), "matched_free_text": matched,
			"attribute": item{"app_version": dev.version, "app_build": dev.build, "os_name": dev.osName, "os_version": dev.osVer,
				"device_name": dev.name, "device_model": dev.model, "device_manufacturer": dev.manuf, "user_id": user}}
	}
	at := func(d time.Duration) time.Time { return sessT0.Add(d) }
	s1 := summary(d.s1, pixel, "ada", at(0), at(9*time.Second), "")
	s2 := summary(d.s2, iphone, "Bob", at(time.Hour), at(time.Hour+20*time.Second), "")
	s3 := summary(d.s3, samsung, "", at(2*time.Hour), at(2*time.Hour+40*time.Second), "")
	s6 := summary(d.s6, pixel, "", d.recent, d.recent, "")
	page := func(next, prev bool, items ...item) map[string]any {
		if items == nil {
			items = []item{}
		}
		return map[string]any{"meta": map[string]bool{"next": next, "previous": prev}, "results": items}
	}
	with := func(it item, matched string) item {
		out := item{}
		for k, v := range it {
			out[k] = v
		}
		out["matched_free_text"] = matched
		return out
	}
	w := sessWindow()
	q := func(extra string) string { return w + extra }

	// Newest first; s4 is only a session_start, s5 has no event.
	c.want(t, "/sessions", q(""), page(false, false, s3, s2, s1))
	c.want(t, "/sessions", "", page(false, false, s6, s3, s2, s1)) // the last 7 days
	c.want(t, "/sessions", q("&limit=2"), page(true, false, s3, s2))
	c.want(t, "/sessions", q("&limit=2&offset=2"), page(false, true, s1))
	c.want(t, "/sessions", q("&limit=2&offset=3"), page(false, true))
	c.want(t, "/sessions", q("&limit=3"), page(false, false, s3, s2, s1))
	// A window that starts at s1's tap: what is inside.
	c.want(t, "/sessions", "from="+url.QueryEscape(tsOf(at(5*time.Second)))+"&to="+url.QueryEscape(tsOf(at(90*time.Minute))),
		page(false, false, s2, summary(d.s1, pixel, "ada", at(5*time.Second), at(9*time.Second), "")))
	// A window holding only s4's session_start.
	c.want(t, "/sessions", "from="+url.QueryEscape(tsOf(at(170*time.Minute)))+"&to="+url.QueryEscape(tsOf(at(190*time.Minute))), page(false, false))

	// Filters.
	c.want(t, "/sessions", q("&versions=2.0&version_codes=200"), page(false, false, s2))
	c.want(t, "/sessions", q("&versions=2.0,1.0&version_codes=200,100&limit=1"), page(true, false, s3))
	c.want(t, "/sessions", q("&os_names=android&os_versions=14"), page(false, false, s3, s1))
	c.want(t, "/sessions", q("&os_names=ios&os_versions=14"), page(false, false))
	c.want(t, "/sessions", q("&device_manufacturers=Samsung"), page(false, false, s3))
	c.want(t, "/sessions", q("&device_names=shiba,r0q"), page(false, false, s3, s1))
	c.want(t, "/sessions", q("&locales=en-GB"), page(false, false, s2))
	c.want(t, "/sessions", q("&network_types=cellular"), page(false, false, s3, s2))
	c.want(t, "/sessions", q("&network_providers=jio&network_generations=unknown"), page(false, false, s1))
	c.want(t, "/sessions", q("&countries=IN"), page(false, false))
	c.want(t, "/sessions", q("&ud_expression="+url.QueryEscape(`{"and":[{"cmp":{"key":"plan","type":"string","op":"eq","value":"PRO"}}]}`)), page(false, false))
	c.want(t, "/sessions", q("&ud_expression="+url.QueryEscape(`{"and":[{"cmp":{"key":"plan","type":"string","op":"contains","value":"PRO"}}]}`)), page(false, false, s1))

	// Session kinds, alternatives of one another.
	c.want(t, "/sessions", q("&type=error&severity=fatal"), page(false, false, s1))
	c.want(t, "/sessions", q("&type=error&severity=handled,unhandled"), page(false, false))
	c.want(t, "/sessions", q("&type=anr"), page(false, false, s3))
	c.want(t, "/sessions", q("&type=crash,anr"), page(false, false, s3, s1))
	c.want(t, "/sessions", q("&type=error,anr&severity=fatal"), page(false, false, s3, s1)) // severities narrow exceptions only, as on errorGroups
	c.want(t, "/sessions", q("&type=anr&severity=handled"), page(false, false, s3))
	c.want(t, "/sessions", q("&severity=fatal"), page(false, false, s1))
	c.want(t, "/sessions", q("&bug_report=1"), page(false, false, s2))
	c.want(t, "/sessions", q("&user_interaction=1"), page(false, false, s1))
	c.want(t, "/sessions", q("&foreground=1"), page(false, false, s1))
	c.want(t, "/sessions", q("&background=1"), page(false, false, s3, s2))
	c.want(t, "/sessions", q("&foreground=1&background=1"), page(false, false, s3, s2, s1))
	c.want(t, "/sessions", q("&type=anr&bug_report=1"), page(false, false, s3, s2))
	c.want(t, "/sessions", q("&background=1&versions=1.0&version_codes=100"), page(false, false, s3))
	c.want(t, "/sessions", q("&foreground=0&bug_report=0"), page(false, false, s3, s2, s1))

	// Free text: the first match of each session, in time order, then field order.
	c.want(t, "/sessions", q("&free_text=checkout"), page(false, false, with(s1, "Target Id: checkout_button")))
	c.want(t, "/sessions", q("&free_text=bOB"), page(false, false, with(s2, "User Id: Bob")))
	c.want(t, "/sessions", q("&free_text=bo"), page(false, false))
	c.want(t, "/sessions", q("&free_text=timeout"), page(false, false, with(s2, "Log: Payment TIMEOUT after 30s")))
	c.want(t, "/sessions", q("&free_text=+cart+is+"), page(false, false, with(s1, "Exception Message: Cart is empty")))
	c.want(t, "/sessions", q("&free_text=pollonce"), page(false, false, with(s3, "ANR Method: nativePollOnce")))
	c.want(t, "/sessions", q("&free_text=http"), page(false, false, with(s3, "Type: http"), with(s1, "Type: http")))
	c.want(t, "/sessions", q("&free_text=http&versions=2.0&version_codes=200"), page(false, false))
	c.want(t, "/sessions", q("&free_text="+strings.ToUpper(d.s3.String())), page(false, false, with(s3, "Session Id: "+d.s3.String())))
	c.want(t, "/sessions", q("&free_text=MainActivity&type=error"), page(false, false, with(s1, "Class Name: sh.shop.MainActivity")))
	c.want(t, "/sessions", q("&free_text=MainActivity&type=anr"), page(false, false))

	// Refusals, each with its {error}.
	for _, bad := range []string{"&limit=0", "&limit=1001", "&limit=x", "&offset=-1", "&type=fatal", "&severity=warning",
		"&foreground=yes", "&free_text=" + strings.Repeat("x", 1025), "&versions=1.0", "&os_names=android",
		"&ud_expression=" + url.QueryEscape(`{"and":[`), "&filter_short_code=nope"} {
		c.status(t, "/sessions", q(bad), http.StatusBadRequest)
	}
	c.status(t, "/sessions", "from="+url.QueryEscape(tsOf(sessT0)), http.StatusBadRequest)
}

func checkSessionPlot(t *testing.T, c *spanClient) {
	type pt = map[string]any
	day := sessT0.Format("2006-01-02")
	hour := func(h int) string { return sessT0.Add(time.Duration(h) * time.Hour).Format("2006-01-02T15:00:00") }
	series := func(id string, pts ...pt) map[string]any { return map[string]any{"id": id, "data": pts} }
	w := sessWindow()
	// Each session once, at its first event and its first event's version.
	c.want(t, "/sessions/plots/instances", w, []any{
		series("1.0 (100)", pt{"datetime": day, "instances": 2}), series("2.0 (200)", pt{"datetime": day, "instances": 1})})
	c.want(t, "/sessions/plots/instances", w+"&plot_time_group=hours", []any{
		series("1.0 (100)", pt{"datetime": hour(0), "instances": 1}, pt{"datetime": hour(2), "instances": 1}),
		series("2.0 (200)", pt{"datetime": hour(1), "instances": 1})})
	// In Asia/Kolkata (+05:30) 10:00 UTC is 15:30, in the hour from 15:00.
	ist := func(h int) string {
		return sessT0.Add(time.Duration(h)*time.Hour - 30*time.Minute).In(time.FixedZone("IST", 5*3600+1800)).Format("2006-01-02T15:04:05")
	}
	c.want(t, "/sessions/plots/instances", w+"&plot_time_group=hours&timezone=Asia/Kolkata", []any{
		series("1.0 (100)", pt{"datetime": ist(0), "instances": 1}, pt{"datetime": ist(2), "instances": 1}),
		series("2.0 (200)", pt{"datetime": ist(1), "instances": 1})})
	c.want(t, "/sessions/plots/instances", w+"&type=anr&bug_report=1", []any{
		series("1.0 (100)", pt{"datetime": day, "instances": 1}), series("2.0 (200)", pt{"datetime": day, "instances": 1})})
	c.want(t, "/sessions/plots/instances", w+"&free_text=cart", []any{series("1.0 (100)", pt{"datetime": day, "instances": 1})})
	c.want(t, "/sessions/plots/instances", w+"&countries=IN", []any{})
	for _, bad := range []string{"&plot_time_group=weeks", "&timezone=Mars/Olympus", "&type=x", "&background=2"} {
		c.status(t, "/sessions/plots/instances", w+bad, http.StatusBadRequest)
	}
}

func checkSessionDetail(t *testing.T, c *spanClient, d *sessionData) {
	type obj = map[string]any
	ts := func(dd time.Duration) string { return tsOf(sessT0.Add(dd)) }
	sec := time.Second
	base := func(typ string, at time.Duration, thread string, fields obj) obj {
		m := obj{"event_type": typ, "thread_name": thread, "timestamp": ts(at), "user_defined_attribute": obj{}, "attachments": []any{}}
		for k, v := range fields {
			m[k] = v
		}
		return m
	}
	key := "attachments/" + c.app + "/" + d.crash.attachID.String()
	crash := base("error", 9*sec, "main", obj{"group_id": "3735917066c4b545f49cf2e3dd602c96", "severity": "fatal", "is_custom": false,
		"type": "java.lang.IllegalStateException", "message": "Cart is empty", "method_name": "onClick", "file_name": "CartActivity.kt",
		"line_number": 42, "stacktrace": "java.lang.IllegalStateException: Cart is empty\n\tat sh.shop.CartActivity.onClick(CartActivity.kt:42)",
		"foreground": true, "error": nil, "num_code": nil, "code": "", "meta": nil, "user_triggered": false,
		"user_defined_attribute": obj{"plan": "pro"},
		"attachments":            []any{obj{"id": d.crash.attachID.String(), "name": "screenshot.png", "type": "screenshot", "size": nil, "key": key, "location": "<signed>"}}})
	want := obj{
		"session_id": d.s1.String(), "app_id": c.app, "attribute": pixel.attrJSON("inst-"+d.s1.String()[:8], "main", "ada"),
		"duration":  9000,
		"cpu_usage": []any{obj{"timestamp": ts(7 * sec), "value": 12.5}},
		"memory_usage": []any{obj{"timestamp": ts(7 * sec), "java_max_heap": 262144, "java_total_heap": 16384, "java_free_heap": 6486,
			"total_pss": 277588, "rss": 330800, "native_total_heap": 44596, "native_free_heap": 16425, "interval": 2123}},
		"memory_usage_absolute": []any{},
		"threads": obj{
			"main": []any{
				base("lifecycle_activity", 1*sec, "main", obj{"type": "created", "class_name": "sh.shop.MainActivity", "intent": "", "saved_instance_state": false}),
				base("screen_view", 2*sec, "main", obj{"name": "Home", "user_triggered": false}),
				base("gesture_click", 5*sec, "main", obj{"target": "com.google.android.material.button.MaterialButton", "target_id": "checkout_button",
					"label": "", "semantic_label": "", "width": 262, "height": 126, "x": 546.9, "y": 1267}),
				crash,
			},
			"OkHttp Dispatcher": []any{base("http", 6*sec, "OkHttp Dispatcher", obj{"url": "https://api.shop.io/v1/cart", "method": "get",
				"status_code": 200, "start_time": 1000, "end_time": 1250, "request_body": "", "response_body": "", "failure_reason": "",
				"failure_description": "", "request_headers": nil, "response_headers": nil, "client": "okhttp", "duration": 250, "user_triggered": false})},
		},
		"traces": []any{obj{"trace_id": strings.Repeat("a", 32), "trace_name": "checkout", "thread_name": "main", "start_time": ts(3 * sec),
			"end_time": ts(4200 * time.Millisecond), "duration": 1200}},
	}
	got := c.detail(t, d.s1)
	if got == nil {
		return
	}
	// The screenshot's location: signed, valid for an hour, serving the uploaded bytes.
	loc := ""
	if th, ok := got["threads"].(obj); ok {
		if main, ok := th["main"].([]any); ok && len(main) == 4 {
			if atts, ok := main[3].(obj)["attachments"].([]any); ok && len(atts) == 1 {
				loc, _ = atts[0].(obj)["location"].(string)
				atts[0].(obj)["location"] = "<signed>"
			}
		}
	}
	compareJSON(t, "session s1", got, want)
	if lu, err := url.Parse(loc); err != nil || loc == "" {
		t.Errorf("attachment location %q: %v", loc, err)
	} else {
		if exp, err := strconv.ParseInt(lu.Query().Get("expires"), 10, 64); err != nil || math.Abs(float64(exp-time.Now().Add(time.Hour).Unix())) > 120 {
			t.Errorf("location %q must be valid for an hour", loc)
		}
		resp, err := c.tn.client.Get(loc)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, d.crash.attach) {
			t.Errorf("GET %s: %d %q, want the uploaded screenshot", loc, resp.StatusCode, body)
		}
	}

	// s2: the first event has no user; the first user id is Bob's.
	hr := time.Hour
	compareJSON(t, "session s2", c.detail(t, d.s2), obj{
		"session_id": d.s2.String(), "app_id": c.app, "attribute": iphone.attrJSON("inst-"+d.s2.String()[:8], "main", "Bob"),
		"duration": 20000, "cpu_usage": []any{}, "memory_usage": []any{},
		"memory_usage_absolute": []any{obj{"timestamp": ts(hr + 16*sec), "max_memory": 4096000, "used_memory": 1200345, "interval": 5000}},
		"threads": obj{
			"main": []any{
				base("lifecycle_app", hr, "main", obj{"type": "background"}),
				base("log", hr+15*sec, "main", obj{"severity_text": "info", "severity_number": 9, "body": "Payment TIMEOUT after 30s"}),
				base("bug_report", hr+20*sec, "main", obj{"description": "Total is wrong", "bug_report_id": d.bugReport.id.String()}),
			},
			"worker": []any{base("custom", hr+10*sec, "worker", obj{"name": "sync_done", "user_triggered": false})},
		},
		"traces": []any{},
	})
	// s3: an ANR.
	compareJSON(t, "session s3", c.detail(t, d.s3), obj{
		"session_id": d.s3.String(), "app_id": c.app, "attribute": samsung.attrJSON("inst-"+d.s3.String()[:8], "main", ""),
		"duration": 40000, "cpu_usage": []any{}, "memory_usage": []any{}, "memory_usage_absolute": []any{},
		"threads": obj{"main": []any{
			base("anr", 2*hr+30*sec, "main", obj{"group_id": "7ff849543e297dc55816333fab159be2", "severity": "fatal",
				"type": "sh.measure.android.anr.AnrError", "message": "Application Not Responding for at least 5000 ms.",
				"method_name": "nativePollOnce", "file_name": "MessageQueue.java", "line_number": -2,
				"stacktrace": "sh.measure.android.anr.AnrError: Application Not Responding for at least 5000 ms.\n\tat android.os.MessageQueue.nativePollOnce(Native Method)",
				"foreground": false}),
			base("http", 2*hr+40*sec, "main", obj{"url": "https://api.shop.io/v1/sync", "method": "post", "status_code": 204, "start_time": 5,
				"end_time": 90, "request_body": "", "response_body": "", "failure_reason": "", "failure_description": "",
				"request_headers": nil, "response_headers": nil, "client": "okhttp", "duration": 85, "user_triggered": false}),
		}},
		"traces": []any{},
	})
	// s4: only its session_start; s5: only a trace, its attributes those of the root span.
	compareJSON(t, "session s4", c.detail(t, d.s4), obj{
		"session_id": d.s4.String(), "app_id": c.app, "attribute": pixel.attrJSON("inst-"+d.s4.String()[:8], "main", ""),
		"duration": 0, "cpu_usage": []any{}, "memory_usage": []any{}, "memory_usage_absolute": []any{}, "threads": obj{}, "traces": []any{},
	})
	spanAttr := iphone.attrJSON("inst-"+d.s5.String()[:8], "main", "")
	spanAttr["app_unique_id"], spanAttr["platform"], spanAttr["device_cpu_arch"] = "com.example.app", "android", ""
	compareJSON(t, "session s5", c.detail(t, d.s5), obj{
		"session_id": d.s5.String(), "app_id": c.app, "attribute": spanAttr,
		"duration": 0, "cpu_usage": []any{}, "memory_usage": []any{}, "memory_usage_absolute": []any{}, "threads": obj{},
		"traces": []any{obj{"trace_id": strings.Repeat("b", 32), "trace_name": "sync", "thread_name": "main", "start_time": ts(4 * hr),
			"end_time": ts(4*hr + 50*time.Millisecond), "duration": 50}},
	})
	c.status(t, "/sessions/"+uuid.NewString(), "", http.StatusNotFound)
	c.status(t, "/sessions/not-a-session", "", http.StatusBadRequest)
}

// detail asks for a session's timeline and decodes it.
func (c *spanClient) detail(t *testing.T, session uuid.UUID) map[string]any {
	t.Helper()
	status, body := c.get(t, "/sessions/"+session.String(), "")
	if status != http.StatusOK {
		t.Errorf("GET /sessions/%s: %d %s", session, status, body)
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// compareJSON compares a decoded answer with want as JSON values.
func compareJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	var exp any
	wb, _ := json.Marshal(want)
	_ = json.Unmarshal(wb, &exp)
	if !reflect.DeepEqual(got, exp) {
		gb, _ := json.Marshal(got)
		t.Errorf("%s:\n got  %s\n want %s", what, gb, wb)
	}
}
