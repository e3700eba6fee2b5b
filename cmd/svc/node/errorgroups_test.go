package node

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The errorGroups endpoints beside the list, end to end (issue #15): crashes, handled and
// unhandled exceptions and ANRs of three groups and two versions go through PUT /events of a
// started node, and every answer of the overview plot and of a group's errors, path, plot and
// distribution must equal the one written down here by hand, on both store setups.

// errT0 is 10:00 UTC five days ago, inside the default window; TestErrorGroupEndpoints sets it.
var errT0 time.Time

// Group ids (model.GroupOf's fingerprints) of the dataset's issues.
const (
	cartGroup = "3735917066c4b545f49cf2e3dd602c96" // IllegalStateException "Cart is empty" at CartActivity.onClick
	anrGroup  = "7ff849543e297dc55816333fab159be2" // AnrError at MessageQueue.nativePollOnce
)

// pixel2 is pixel after an upgrade: another version and OS version.
var pixel2 = func() tDevice {
	d := pixel
	d.version, d.build, d.osVer = "2.0", "200", "15"
	return d
}()

const (
	cartException = `"exceptions":[{"type":"java.lang.IllegalStateException","message":"Cart is empty","frames":[{"class_name":"sh.shop.CartActivity","method_name":"onClick","file_name":"CartActivity.kt","line_num":42}]}]`
	anrException  = `"exceptions":[{"type":"sh.measure.android.anr.AnrError","message":"Application Not Responding for at least 5000 ms.","frames":[{"class_name":"android.os.MessageQueue","method_name":"nativePollOnce","file_name":"MessageQueue.java","line_num":-2}]}]`
)

// errorData is the dataset, every event on thread main:
//   - s1 (pixel, 1.0 (100)): session_start T0, screen Home T0+2s, a tap on checkout_button
//     T0+5s, then e1, a crash of the cart group with a screenshot and ud plan=pro, T0+9s;
//   - s2 (pixel2, 2.0 (200)): screen Home T0+1h-5s, the tap T0+1h-2s, e2, the cart exception
//     handled, T0+1h, and e4, unhandled, T0+1h+30s;
//   - s3 (samsung, 1.0 (100)): session_start T0+2h-10s, screen Home T0+2h-5s, the tap
//     T0+2h-2s, e3, a crash of the cart group with a thread dump, T0+2h, and e5, an ANR, T0+2h+30s;
//   - s4 (pixel2): session_start T0+3h, e6, an ANR, T0+3h+10s, and e7, a handled IOException
//     of a third group, T0+3h+20s.
type errorData struct {
	s1, s2, s3, s4         uuid.UUID
	e1, e2, e3, e4, e5, e6 *tEvent
	events                 []*tEvent
}

func errorDataset() *errorData {
	d := &errorData{s1: uuid.New(), s2: uuid.New(), s3: uuid.New(), s4: uuid.New()}
	at := func(dd time.Duration) time.Time { return errT0.Add(dd) }
	ev := func(s uuid.UUID, dev tDevice, dd time.Duration, typ, member string) *tEvent {
		e := &tEvent{id: uuid.New(), session: s, dev: dev, at: at(dd), typ: typ, member: member}
		d.events = append(d.events, e)
		return e
	}
	sec, hr := time.Second, time.Hour
	home, tap := `{"name":"Home"}`, `{"target":"android.widget.Button","target_id":"checkout_button","width":262,"height":126,"x":546.9,"y":1267,"touch_down_time":100,"touch_up_time":160}`

	ev(d.s1, pixel, 0, "session_start", "{}")
	ev(d.s1, pixel, 2*sec, "screen_view", home)
	ev(d.s1, pixel, 5*sec, "gesture_click", tap)
	d.e1 = ev(d.s1, pixel, 9*sec, "exception", `{"handled":false,`+cartException+`,"foreground":true}`)
	d.e1.ud, d.e1.attach, d.e1.attachID = `{"plan":"pro"}`, []byte("\x89PNG cart"), uuid.New()

	ev(d.s2, pixel2, hr-5*sec, "screen_view", home)
	ev(d.s2, pixel2, hr-2*sec, "gesture_click", tap)
	d.e2 = ev(d.s2, pixel2, hr, "exception", `{"handled":true,"severity":"handled",`+cartException+`,"foreground":true}`)
	d.e4 = ev(d.s2, pixel2, hr+30*sec, "exception", `{"handled":false,"severity":"unhandled",`+cartException+`,"foreground":true}`)

	ev(d.s3, samsung, 2*hr-10*sec, "session_start", "{}")
	ev(d.s3, samsung, 2*hr-5*sec, "screen_view", home)
	ev(d.s3, samsung, 2*hr-2*sec, "gesture_click", tap)
	d.e3 = ev(d.s3, samsung, 2*hr, "exception", `{"handled":false,`+cartException+
		`,"threads":[{"name":"FinalizerDaemon","frames":[{"class_name":"java.lang.Object","method_name":"wait","line_num":-2}]}],"foreground":true}`)
	d.e5 = ev(d.s3, samsung, 2*hr+30*sec, "anr", `{"handled":false,`+anrException+`,"foreground":false}`)

	ev(d.s4, pixel2, 3*hr, "session_start", "{}")
	d.e6 = ev(d.s4, pixel2, 3*hr+10*sec, "anr", `{"handled":false,`+anrException+`,"foreground":true}`)
	ev(d.s4, pixel2, 3*hr+20*sec, "exception", `{"handled":true,"exceptions":[{"type":"java.io.IOException","message":"timeout","frames":[{"class_name":"sh.shop.Net","method_name":"call","file_name":"Net.kt","line_num":7}]}],"foreground":true}`)
	return d
}

// TestErrorGroupEndpoints: the overview plot and the four group detail endpoints of
// errorGroups answer exactly the dataset's truth, with filters, paging, empty states and the
// 400s, on both store setups.
func TestErrorGroupEndpoints(t *testing.T) {
	now := time.Now().UTC()
	errT0 = time.Date(now.Year(), now.Month(), now.Day(), 10, 0, 0, 0, time.UTC).AddDate(0, 0, -5)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, nil)
			d := errorDataset()
			evs := make([]string, len(d.events))
			for i, e := range d.events {
				evs[i] = e.json()
			}
			r := tn.putJSON(t, tn.key, uuid.NewString(), []byte(`{"events":[`+strings.Join(evs, ",")+`]}`))
			if r.status != http.StatusOK {
				t.Fatalf("PUT /events: %d %s", r.status, r.body)
			}
			uploadAttachments(t, tn, r.body, map[uuid.UUID][]byte{d.e1.attachID: d.e1.attach})
			tn.waitFlushed(t)
			c := &spanClient{tn: tn, token: tn.accessToken(t, tn.email), app: tn.app.ID.String()}
			checkErrorOverviewPlot(t, c)
			checkErrorGroupPlot(t, c)
			checkErrorEvents(t, c, d)
			checkErrorPath(t, c)
			checkErrorDistribution(t, c)
		})
	}
}

// errWindow is [T0-1h, T0+1d): the whole dataset.
func errWindow() string {
	return "from=" + url.QueryEscape(tsOf(errT0.Add(-time.Hour))) + "&to=" + url.QueryEscape(tsOf(errT0.Add(24*time.Hour)))
}

// badParam asks for a refusal: 400 with an {error} that names the parameter.
func (c *spanClient) badParam(t *testing.T, route, query, param string) {
	t.Helper()
	status, body := c.get(t, route, query)
	var e struct{ Error string }
	if status != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, param) {
		t.Errorf("GET %s?%s: %d %s, want 400 naming %s", route, query, status, body, param)
	}
}

func checkErrorOverviewPlot(t *testing.T, c *spanClient) {
	type pt = map[string]any
	const route = "/errorGroups/plots/instances"
	day := errT0.Format("2006-01-02")
	hour := func(h int) string { return errT0.Add(time.Duration(h) * time.Hour).Format("2006-01-02T15:00:00") }
	p := func(datetime string, n int) pt {
		return pt{"datetime": datetime, "instances": n, "error_free_sessions": 0}
	}
	series := func(id string, pts ...pt) map[string]any { return map[string]any{"id": id, "data": pts} }
	w := errWindow()

	// Every class: 1.0 (100) has e1, e3, e5; 2.0 (200) e2, e4, e6 and the IOException.
	c.want(t, route, w, []any{series("1.0(100)", p(day, 3)), series("2.0(200)", p(day, 4))})
	c.want(t, route, w+"&plot_time_group=hours", []any{
		series("1.0(100)", p(hour(0), 1), p(hour(2), 2)),
		series("2.0(200)", p(hour(1), 2), p(hour(3), 2))})
	// The dashboard's defaults: crashes and ANRs.
	c.want(t, route, w+"&type=error,anr&severity=fatal", []any{series("1.0(100)", p(day, 3)), series("2.0(200)", p(day, 1))})
	c.want(t, route, w+"&severity=fatal&custom=false", []any{series("1.0(100)", p(day, 2))})
	c.want(t, route, w+"&type=error&severity=handled,unhandled", []any{series("2.0(200)", p(day, 3))})
	c.want(t, route, w+"&type=error&severity=unhandled", []any{series("2.0(200)", p(day, 1))})
	c.want(t, route, w+"&type=anr&severity=handled", []any{series("1.0(100)", p(day, 1)), series("2.0(200)", p(day, 1))})
	c.want(t, route, w+"&network_types=cellular", []any{series("1.0(100)", p(day, 2))})
	c.want(t, route, w+"&versions=2.0&version_codes=200&type=anr", []any{series("2.0(200)", p(day, 1))})
	// No data is null.
	c.want(t, route, w+"&countries=IN", nil)
	c.want(t, route, "from="+url.QueryEscape(tsOf(errT0.Add(4*time.Hour)))+"&to="+url.QueryEscape(tsOf(errT0.Add(5*time.Hour))), nil)

	c.badParam(t, route, w+"&type=fatal", "type")
	c.badParam(t, route, w+"&severity=warning", "severity")
	c.badParam(t, route, w+"&custom=true", "custom")
	c.badParam(t, route, w+"&plot_time_group=weeks", "plot_time_group")
	c.badParam(t, route, w+"&timezone=Mars/Olympus", "timezone")
	c.badParam(t, route, "from="+url.QueryEscape(tsOf(errT0)), "to")
}

func checkErrorGroupPlot(t *testing.T, c *spanClient) {
	type pt = map[string]any
	route := "/errorGroups/" + cartGroup + "/plots/instances"
	day := errT0.Format("2006-01-02")
	hour := func(h int) string { return errT0.Add(time.Duration(h) * time.Hour).Format("2006-01-02T15:00:00") }
	series := func(id string, pts ...pt) map[string]any { return map[string]any{"id": id, "data": pts} }
	w := errWindow()

	// The cart group, every class: e1 and e3 in 1.0 (100), e2 and e4 in 2.0 (200).
	c.want(t, route, w, []any{series("1.0 (100)", pt{"datetime": day, "instances": 2}), series("2.0 (200)", pt{"datetime": day, "instances": 2})})
	c.want(t, route, w+"&plot_time_group=hours", []any{
		series("1.0 (100)", pt{"datetime": hour(0), "instances": 1}, pt{"datetime": hour(2), "instances": 1}),
		series("2.0 (200)", pt{"datetime": hour(1), "instances": 2})})
	// In Asia/Kolkata (+05:30) 10:00 UTC is 15:30, in the hour from 15:00.
	ist := func(h int) string {
		return errT0.Add(time.Duration(h)*time.Hour - 30*time.Minute).In(time.FixedZone("IST", 5*3600+1800)).Format("2006-01-02T15:04:05")
	}
	c.want(t, route, w+"&plot_time_group=hours&timezone=Asia/Kolkata", []any{
		series("1.0 (100)", pt{"datetime": ist(0), "instances": 1}, pt{"datetime": ist(2), "instances": 1}),
		series("2.0 (200)", pt{"datetime": ist(1), "instances": 2})})
	c.want(t, "/errorGroups/"+anrGroup+"/plots/instances", w, []any{
		series("1.0 (100)", pt{"datetime": day, "instances": 1}), series("2.0 (200)", pt{"datetime": day, "instances": 1})})
	c.want(t, route, w+"&device_manufacturers=Samsung", []any{series("1.0 (100)", pt{"datetime": day, "instances": 1})})
	// No data is null: an unknown group, a filter that selects nothing.
	c.want(t, "/errorGroups/0123456789abcdef0123456789abcdef/plots/instances", w, nil)
	c.want(t, route, w+"&locales=fr-FR", nil)

	c.badParam(t, "/errorGroups/not-a-group/plots/instances", w, "group id")
	c.badParam(t, route, w+"&plot_time_group=weeks", "plot_time_group")
}

func checkErrorEvents(t *testing.T, c *spanClient, d *errorData) {
	type obj = map[string]any
	ms := func(e *tEvent) string { return e.at.UTC().Format("2006-01-02T15:04:05.000Z") }
	cart := obj{"title": "java.lang.IllegalStateException@CartActivity.kt", "message": "Cart is empty",
		"stacktrace": "java.lang.IllegalStateException: Cart is empty\n\tat sh.shop.CartActivity.onClick(CartActivity.kt:42)"}
	exception := func(e *tEvent, severity string) obj {
		return obj{"id": e.id.String(), "session_id": e.session.String(), "timestamp": ms(e), "type": "exception",
			"attribute": e.dev.attrJSON("inst-"+e.session.String()[:8], "main", ""), "severity": severity,
			"exception": cart, "num_code": nil, "code": "", "meta": nil, "user_defined_attribute": obj{},
			"attachments": []any{}, "threads": []any{}}
	}
	anr := func(e *tEvent) obj {
		return obj{"id": e.id.String(), "session_id": e.session.String(), "timestamp": ms(e), "type": "anr",
			"attribute": e.dev.attrJSON("inst-"+e.session.String()[:8], "main", ""), "severity": "fatal",
			"anr": obj{"title": "sh.measure.android.anr.AnrError@MessageQueue.java", "message": "Application Not Responding for at least 5000 ms.",
				"stacktrace": "sh.measure.android.anr.AnrError: Application Not Responding for at least 5000 ms.\n\tat android.os.MessageQueue.nativePollOnce(Native Method)"},
			"attachments": []any{}, "threads": []any{}}
	}
	e1 := exception(d.e1, "fatal")
	e1["user_defined_attribute"] = obj{"plan": "pro"}
	e1["attachments"] = []any{obj{"id": d.e1.attachID.String(), "name": "screenshot.png", "type": "screenshot", "size": nil,
		"key": "attachments/" + c.app + "/" + d.e1.attachID.String(), "location": "<signed>"}}
	e2, e4 := exception(d.e2, "handled"), exception(d.e4, "unhandled")
	e3 := exception(d.e3, "fatal")
	e3["threads"] = []any{obj{"name": "FinalizerDaemon", "frames": []any{"at java.lang.Object.wait(Native Method)"}}}
	page := func(next, prev bool, items ...obj) obj {
		var results any
		if items != nil {
			results = items
		}
		return obj{"meta": obj{"next": next, "previous": prev}, "results": results}
	}
	route := "/errorGroups/" + cartGroup + "/errors"
	w := errWindow()

	// Newest first, every class of the group; the default limit is 10.
	got := c.errorsPage(t, route, w)
	if loc := signedLocation(t, c, got, d.e1); loc != "" {
		resp, err := c.tn.client.Get(loc)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, d.e1.attach) {
			t.Errorf("GET %s: %d %q, want the uploaded screenshot", loc, resp.StatusCode, body)
		}
	}
	compareJSON(t, "errors", got, page(false, false, e3, e4, e2, e1))
	c.want(t, route, w+"&limit=2", page(true, false, e3, e4))
	c.want(t, route, w+"&limit=2&offset=1", page(true, true, e4, e2))
	c.want(t, route, w+"&limit=1&offset=2", page(true, true, e2))
	got = c.errorsPage(t, route, w+"&limit=4")
	signedLocation(t, c, got, d.e1)
	compareJSON(t, "errors, limit 4", got, page(false, false, e3, e4, e2, e1))
	c.want(t, route, w+"&network_types=cellular", page(false, false, e3))
	c.want(t, route, w+"&versions=2.0&version_codes=200&limit=1&offset=1", page(false, true, e2))
	// ANRs carry anr and none of the exception members.
	c.want(t, "/errorGroups/"+anrGroup+"/errors", w, page(false, false, anr(d.e6), anr(d.e5)))
	// Empty: past the end, an unknown group, a filter that selects nothing.
	c.want(t, route, w+"&offset=4", page(false, true))
	c.want(t, "/errorGroups/0123456789abcdef0123456789abcdef/errors", w, page(false, false))
	c.want(t, route, w+"&countries=IN", page(false, false))

	c.badParam(t, route, w+"&limit=0", "limit")
	c.badParam(t, route, w+"&limit=1001", "limit")
	c.badParam(t, route, w+"&offset=-1", "offset")
	c.badParam(t, route, w+"&versions=1.0", "version")
	c.badParam(t, "/errorGroups/CART/errors", w, "group id")
}

// errorsPage asks for a page of errors and decodes it.
func (c *spanClient) errorsPage(t *testing.T, route, query string) map[string]any {
	t.Helper()
	status, body := c.get(t, route, query)
	var v map[string]any
	if status != http.StatusOK || json.Unmarshal(body, &v) != nil {
		t.Fatalf("GET %s?%s: %d %s", route, query, status, body)
	}
	return v
}

// signedLocation returns the download location of e's attachment in a page of errors, and puts
// "<signed>" in its place.
func signedLocation(t *testing.T, c *spanClient, page map[string]any, e *tEvent) string {
	t.Helper()
	results, _ := page["results"].([]any)
	for _, r := range results {
		item, _ := r.(map[string]any)
		if item["id"] != e.id.String() {
			continue
		}
		if atts, ok := item["attachments"].([]any); ok && len(atts) == 1 {
			a, _ := atts[0].(map[string]any)
			loc, _ := a["location"].(string)
			a["location"] = "<signed>"
			if _, err := url.Parse(loc); err != nil || loc == "" {
				t.Errorf("attachment location %q: %v", loc, err)
				return ""
			}
			return loc
		}
	}
	t.Errorf("no attachment of %s in %v", e.id, page)
	return ""
}

func checkErrorPath(t *testing.T, c *spanClient) {
	type obj = map[string]any
	step := func(desc string, pct float64) obj {
		return obj{"description": desc, "thread_name": "main", "confidence_pct": pct}
	}
	crash := "Crash: java.lang.IllegalStateException - Cart is empty"
	// The cart group's latest event per session, newest first: s3's crash, s2's unhandled
	// exception (after the handled one), s1's crash. Counted from the issue back: the crash in
	// 2 of 3, the tap in 2 (s2 has its handled exception there), Home in 2, session_start in 2.
	c.want(t, "/errorGroups/"+cartGroup+"/path", "", obj{"sessions_analyzed": 3, "steps": []obj{
		step("Session started", 66.7), step("Screen viewed: Home", 66.7), step("User tapped on checkout_button", 66.7), step(crash, 66.7)}})
	// The ANR group: s4's ANR, then s3's. Before the ANR s4 has only its session_start, s3 its
	// crash: a tie at 50 %, the smaller type (exception) wins; s3 alone goes further back.
	anr := "ANR: sh.measure.android.anr.AnrError - Application Not Responding for at least 5000 ms."
	c.want(t, "/errorGroups/"+anrGroup+"/path", "", obj{"sessions_analyzed": 2, "steps": []obj{
		step("Session started", 50), step("Screen viewed: Home", 50), step("User tapped on checkout_button", 50), step(crash, 50), step(anr, 100)}})
	c.want(t, "/errorGroups/0123456789abcdef0123456789abcdef/path", "", obj{"sessions_analyzed": 0, "steps": []obj{}})
	c.badParam(t, "/errorGroups/xyz/path", "", "group id")
}

func checkErrorDistribution(t *testing.T, c *spanClient) {
	type counts = map[string]int
	dist := func(app, os, net, locale, device counts) map[string]counts {
		return map[string]counts{"app_version": app, "os_version": os, "country": {}, "network_type": net, "locale": locale, "device": device}
	}
	route := "/errorGroups/" + cartGroup + "/plots/distribution"
	w := errWindow()
	// e1 (pixel), e2 and e4 (pixel2), e3 (samsung).
	c.want(t, route, w, dist(counts{"1.0 (100)": 2, "2.0 (200)": 2}, counts{"android 14": 2, "android 15": 2},
		counts{"wifi": 3, "cellular": 1}, counts{"en-US": 4}, counts{"Google - shiba": 3, "Samsung - r0q": 1}))
	c.want(t, route, w+"&network_types=cellular", dist(counts{"1.0 (100)": 1}, counts{"android 14": 1},
		counts{"cellular": 1}, counts{"en-US": 1}, counts{"Samsung - r0q": 1}))
	c.want(t, route, w+"&versions=2.0&version_codes=200", dist(counts{"2.0 (200)": 2}, counts{"android 15": 2},
		counts{"wifi": 2}, counts{"en-US": 2}, counts{"Google - shiba": 2}))
	c.want(t, "/errorGroups/"+anrGroup+"/plots/distribution", w, dist(counts{"1.0 (100)": 1, "2.0 (200)": 1},
		counts{"android 14": 1, "android 15": 1}, counts{"wifi": 1, "cellular": 1}, counts{"en-US": 2}, counts{"Google - shiba": 1, "Samsung - r0q": 1}))
	// Six empty maps: an unknown group, countries (events carry none), a window without events.
	empty := dist(counts{}, counts{}, counts{}, counts{}, counts{})
	c.want(t, "/errorGroups/0123456789abcdef0123456789abcdef/plots/distribution", w, empty)
	c.want(t, route, w+"&countries=IN", empty)
	c.want(t, route, "from="+url.QueryEscape(tsOf(errT0.Add(4*time.Hour)))+"&to="+url.QueryEscape(tsOf(errT0.Add(5*time.Hour))), empty)

	c.badParam(t, route, w+"&versions=1.0", "version")
	c.badParam(t, route, w+"&ud_expression=%7B", "ud_expression")
	c.badParam(t, "/errorGroups/nope/plots/distribution", w, "group id")
}
