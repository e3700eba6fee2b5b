package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The span and trace endpoints end to end (issue #13): spans with known truth go through PUT
// /events of a started node, and every answer of /spans/roots/names, /spans,
// /spans/plots/metrics and /traces/{id} must equal the one written down here by hand, on both
// store setups.

// spanT0 is the dataset's reference instant, 10:00 UTC five days ago (inside the default window
// and the app's retention); every span but one lies around it. TestSpanEndpoints sets it.
var spanT0 time.Time

// tSpan is one span of the dataset, as the SDK sends it.
type tSpan struct {
	key              string // the test's name for it
	name             string
	trace, id, paren string
	session          uuid.UUID
	status           int
	start            time.Time
	dur              int // ms; end = start + dur
	version, build   string
	osName, osVer    string
	manuf, model     string
	devName, locale  string
	netType, netProv string
	netGen, thread   string
	userID           string
	lowPower         bool
	ud               string // JSON object or ""
	checkpoints      [][2]any
}

func (s *tSpan) end() time.Time { return s.start.Add(time.Duration(s.dur) * time.Millisecond) }

func tsOf(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (s *tSpan) json(install string) string {
	parent := "null"
	if s.paren != "" {
		parent = `"` + s.paren + `"`
	}
	attr := map[string]any{"installation_id": install, "measure_sdk_version": "0.11.0", "app_unique_id": "com.example.app",
		"platform": "android", "app_version": s.version, "app_build": s.build, "os_name": s.osName, "os_version": s.osVer,
		"device_manufacturer": s.manuf, "device_model": s.model, "device_name": s.devName, "device_locale": s.locale,
		"network_type": s.netType, "network_provider": s.netProv, "network_generation": s.netGen, "thread_name": s.thread,
		"device_low_power_mode": s.lowPower, "device_thermal_throttling_enabled": false}
	if s.userID != "" {
		attr["user_id"] = s.userID
	}
	ab, _ := json.Marshal(attr)
	ud := "null"
	if s.ud != "" {
		ud = s.ud
	}
	var cps []string
	for _, c := range s.checkpoints {
		cps = append(cps, fmt.Sprintf(`{"name":%q,"timestamp":%q}`, c[0], tsOf(c[1].(time.Time))))
	}
	return fmt.Sprintf(`{"name":%q,"trace_id":%q,"span_id":%q,"parent_id":%s,"session_id":%q,"status":%d,"start_time":%q,"end_time":%q,"duration":%d,"attributes":%s,"user_defined_attribute":%s,"checkpoints":[%s]}`,
		s.name, s.trace, s.id, parent, s.session, s.status, tsOf(s.start), tsOf(s.end()), s.dur, ab, ud, strings.Join(cps, ","))
}

// spanDataset is the dataset: trace A (a root "checkout" with a child "checkout" and a
// grandchild "db_query"), trace B (a root "checkout" with a child "http"), five more
// "checkout" roots in traces of their own, a "launch" and a "search" root, and one root of
// today for the default window.
func spanDataset(now time.Time) []*tSpan {
	s1, s2, s3 := uuid.New(), uuid.New(), uuid.New()
	at := func(m int) time.Time { return spanT0.Add(time.Duration(m) * time.Minute) }
	ms := func(m int) time.Time { return spanT0.Add(time.Duration(m) * time.Millisecond) }
	android := func(s *tSpan) *tSpan {
		s.version, s.build, s.osName, s.osVer, s.manuf, s.model, s.devName, s.locale = "1.0", "1", "android", "34", "Google", "Pixel 7", "panther", "en-US"
		s.netType, s.netProv, s.netGen, s.thread = "wifi", "jio", "unknown", "main"
		if s.session == uuid.Nil {
			s.session = s1
		}
		return s
	}
	ios := func(s *tSpan) *tSpan {
		s.version, s.build, s.osName, s.osVer, s.manuf, s.model, s.devName, s.locale = "2.0", "20", "ios", "17.2", "Apple", "iPhone15,2", "iPhone15,2", "en-GB"
		s.netType, s.netProv, s.netGen, s.thread = "wifi", "verizon", "unknown", "main"
		s.session = s2
		return s
	}
	traceA, traceB := strings.Repeat("a", 32), strings.Repeat("b", 32)
	r1 := android(&tSpan{key: "r1", name: "checkout", trace: traceA, id: "a000000000000001", status: 1, start: spanT0, dur: 1200,
		userID: "u-42", lowPower: true, ud: `{"plan":"pro","items":3,"premium":true,"ratio":2.5}`,
		checkpoints: [][2]any{{"cart_loaded", ms(100)}, {"paid", ms(900)}}})
	a2 := android(&tSpan{key: "a2", name: "checkout", trace: traceA, id: "a000000000000002", paren: r1.id, status: 2, start: ms(200), dur: 500, userID: "u-42"})
	a3 := android(&tSpan{key: "a3", name: "db_query", trace: traceA, id: "a000000000000003", paren: a2.id, status: 0, start: ms(300), dur: 100, userID: "u-42"})
	a3.thread = "db"
	r2 := android(&tSpan{key: "r2", name: "checkout", trace: strings.Repeat("c", 31) + "2", id: "c000000000000002", status: 1, start: at(10), dur: 100, ud: `{"plan":"free","items":1}`})
	r3 := android(&tSpan{key: "r3", name: "checkout", trace: strings.Repeat("c", 31) + "3", id: "c000000000000003", status: 0, start: at(20), dur: 200, ud: `{"plan":"pro","items":5}`, session: s3})
	r3.osVer, r3.manuf, r3.model, r3.devName, r3.netType, r3.netGen = "33", "Samsung", "SM-S901B", "r0q", "cellular", "5g"
	r4 := android(&tSpan{key: "r4", name: "checkout", trace: strings.Repeat("c", 31) + "4", id: "c000000000000004", status: 2, start: at(30), dur: 300, ud: `{"plan":"free"}`})
	r5 := android(&tSpan{key: "r5", name: "checkout", trace: strings.Repeat("c", 31) + "5", id: "c000000000000005", status: 1, start: at(40), dur: 400})
	r6 := ios(&tSpan{key: "r6", name: "checkout", trace: traceB, id: "b000000000000001", status: 2, start: at(60), dur: 3000, ud: `{"plan":"free","items":1}`})
	r6.netType, r6.netGen = "cellular", "4g"
	b2 := ios(&tSpan{key: "b2", name: "http", trace: traceB, id: "b000000000000002", paren: r6.id, status: 1, start: at(60).Add(10 * time.Millisecond), dur: 800,
		checkpoints: [][2]any{{"dns", at(60).Add(20 * time.Millisecond)}}})
	b2.thread = "okhttp"
	r7 := ios(&tSpan{key: "r7", name: "checkout", trace: strings.Repeat("c", 31) + "7", id: "c000000000000007", status: 1, start: at(80), dur: 700, ud: `{"plan":"pro"}`})
	r8 := android(&tSpan{key: "r8", name: "checkout", trace: strings.Repeat("c", 31) + "8", id: "c000000000000008", status: 1, start: at(24 * 60), dur: 900})
	launch := android(&tSpan{key: "launch", name: "launch", trace: strings.Repeat("d", 32), id: "d000000000000001", status: 1, start: at(120), dur: 50})
	search := android(&tSpan{key: "search", name: "search", trace: strings.Repeat("e", 32), id: "e000000000000001", status: 1, start: at(-60), dur: 60})
	recent := android(&tSpan{key: "recent", name: "recent_screen", trace: strings.Repeat("f", 32), id: "f000000000000001", status: 1,
		start: now.Add(-time.Hour).Truncate(time.Millisecond), dur: 10})
	return []*tSpan{r1, a2, a3, r2, r3, r4, r5, r6, b2, r7, r8, launch, search, recent}
}

// TestSpanEndpoints: the four span and trace endpoints answer exactly the dataset's truth, with
// every filter, paging, the 400s and the 404, on both store setups.
func TestSpanEndpoints(t *testing.T) {
	now := time.Now().UTC()
	spanT0 = time.Date(now.Year(), now.Month(), now.Day(), 10, 0, 0, 0, time.UTC).AddDate(0, 0, -5)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, nil)
			spans := spanDataset(now)
			by := map[string]*tSpan{}
			var parts []string
			for _, s := range spans {
				by[s.key] = s
				parts = append(parts, s.json(uuid.NewString()))
			}
			// Two requests: the spans of one trace may arrive apart.
			half := len(parts) / 2
			for _, b := range []string{strings.Join(parts[:half], ","), strings.Join(parts[half:], ",")} {
				if r := tn.putJSON(t, tn.key, uuid.NewString(), []byte(`{"events":[],"spans":[`+b+`]}`)); r.status != http.StatusOK {
					t.Fatalf("PUT /events: %d %s", r.status, r.body)
				}
			}
			tn.waitFlushed(t)
			c := &spanClient{tn: tn, token: tn.accessToken(t, tn.email), app: tn.app.ID.String()}
			checkSpanNames(t, c)
			checkSpanList(t, c, by)
			checkSpanPlot(t, c)
			checkTraces(t, c, by)
		})
	}
}

type spanClient struct {
	tn         *testNode
	token, app string
}

// get asks the app's route with the query (a raw query string) and returns status and body.
func (c *spanClient) get(t *testing.T, route, query string) (int, []byte) {
	t.Helper()
	p := "/apps/" + c.app + route
	if query != "" {
		p += "?" + query
	}
	r := c.tn.do(t, http.MethodGet, p, c.token, nil, nil)
	if r.status == http.StatusOK && r.header.Get("Svc-Answered-By") != "store" {
		t.Errorf("GET %s: Svc-Answered-By %q, want store", p, r.header.Get("Svc-Answered-By"))
	}
	if r.status != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(r.body, &e) != nil || e.Error == "" {
			t.Errorf("GET %s: %d without {error}: %s", p, r.status, r.body)
		}
	}
	return r.status, r.body
}

// want asks and compares the 200 answer with want as JSON values.
func (c *spanClient) want(t *testing.T, route, query string, want any) {
	t.Helper()
	status, body := c.get(t, route, query)
	if status != http.StatusOK {
		t.Errorf("GET %s?%s: %d %s", route, query, status, body)
		return
	}
	var got, exp any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("GET %s?%s: %v", route, query, err)
	}
	wb, _ := json.Marshal(want)
	_ = json.Unmarshal(wb, &exp)
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("GET %s?%s:\n got  %s\n want %s", route, query, body, wb)
	}
}

func (c *spanClient) status(t *testing.T, route, query string, want int) {
	t.Helper()
	if status, body := c.get(t, route, query); status != want {
		t.Errorf("GET %s?%s: %d, want %d: %s", route, query, status, want, body)
	}
}

func checkSpanNames(t *testing.T, c *spanClient) {
	// Most recently seen root first: recent_screen (today), checkout (T0+1d), launch (T0+2h),
	// search (T0-1h); db_query and http are never roots.
	c.want(t, "/spans/roots/names", "", map[string]any{"results": []string{"recent_screen", "checkout", "launch", "search"}})
}

// spanWindow is [T0-1h, T0+1d): r8 (at T0+1d exactly) is outside.
func spanWindow() string {
	return "from=" + url.QueryEscape(tsOf(spanT0.Add(-time.Hour))) + "&to=" + url.QueryEscape(tsOf(spanT0.Add(24*time.Hour)))
}

func checkSpanList(t *testing.T, c *spanClient, by map[string]*tSpan) {
	item := func(k string) map[string]any {
		s := by[k]
		return map[string]any{"app_id": c.app, "span_name": s.name, "span_id": s.id, "trace_id": s.trace, "status": s.status,
			"start_time": tsOf(s.start), "end_time": tsOf(s.end()), "duration": s.dur, "app_version": s.version,
			"app_build": s.build, "os_name": s.osName, "os_version": s.osVer, "device_model": s.model, "device_manufacturer": s.manuf}
	}
	page := func(next, prev bool, keys ...string) map[string]any {
		items := []any{}
		for _, k := range keys {
			items = append(items, item(k))
		}
		return map[string]any{"meta": map[string]bool{"next": next, "previous": prev}, "results": items}
	}
	q := func(extra string) string { return "span_name=checkout&" + spanWindow() + extra }

	// Roots only (a2 is a "checkout" child), newest first.
	c.want(t, "/spans", q(""), page(false, false, "r7", "r6", "r5", "r4", "r3", "r2", "r1"))
	// Paging.
	c.want(t, "/spans", q("&limit=3"), page(true, false, "r7", "r6", "r5"))
	c.want(t, "/spans", q("&limit=3&offset=3"), page(true, true, "r4", "r3", "r2"))
	c.want(t, "/spans", q("&limit=3&offset=6"), page(false, true, "r1"))
	c.want(t, "/spans", q("&limit=3&offset=7"), page(false, true))
	c.want(t, "/spans", q("&limit=7"), page(false, false, "r7", "r6", "r5", "r4", "r3", "r2", "r1"))
	// Filters.
	c.want(t, "/spans", q("&versions=2.0&version_codes=20"), page(false, false, "r7", "r6"))
	c.want(t, "/spans", q("&versions=1.0,2.0&version_codes=1,20&limit=2"), page(true, false, "r7", "r6"))
	c.want(t, "/spans", q("&os_names=android&os_versions=33"), page(false, false, "r3"))
	c.want(t, "/spans", q("&os_names=android,ios&os_versions=33,17.2"), page(false, false, "r7", "r6", "r3"))
	c.want(t, "/spans", q("&os_names=ios&os_versions=33"), page(false, false))
	c.want(t, "/spans", q("&device_manufacturers=Samsung"), page(false, false, "r3"))
	c.want(t, "/spans", q("&device_names=panther"), page(false, false, "r5", "r4", "r2", "r1"))
	c.want(t, "/spans", q("&network_types=cellular"), page(false, false, "r6", "r3"))
	c.want(t, "/spans", q("&network_generations=4g"), page(false, false, "r6"))
	c.want(t, "/spans", q("&network_providers=verizon"), page(false, false, "r7", "r6"))
	c.want(t, "/spans", q("&locales=en-GB"), page(false, false, "r7", "r6"))
	c.want(t, "/spans", q("&countries=in"), page(false, false))
	c.want(t, "/spans", q("&span_statuses=2"), page(false, false, "r6", "r4"))
	c.want(t, "/spans", q("&span_statuses=0&span_statuses=2"), page(false, false, "r6", "r4", "r3"))
	c.want(t, "/spans", q("&span_statuses=1&versions=1.0&version_codes=1"), page(false, false, "r5", "r2", "r1"))
	ud := func(x string) string { return "&ud_expression=" + url.QueryEscape(x) }
	c.want(t, "/spans", q(ud(`{"cmp":{"key":"plan","type":"string","op":"eq","value":"pro"}}`)), page(false, false, "r7", "r3", "r1"))
	c.want(t, "/spans", q(ud(`{"and":[{"cmp":{"key":"items","type":"int64","op":"gt","value":"2"}},{"cmp":{"key":"plan","type":"string","op":"startsWith","value":"PR"}}]}`)),
		page(false, false, "r3", "r1"))
	c.want(t, "/spans", q(ud(`{"cmp":{"key":"premium","type":"bool","op":"eq","value":"true"}}`)), page(false, false, "r1"))
	// Other windows: one holding r8, and the default (the last 7 days) holding every root.
	c.want(t, "/spans", "span_name=checkout&from="+url.QueryEscape(tsOf(spanT0.Add(time.Hour)))+"&to="+url.QueryEscape(tsOf(spanT0.Add(48*time.Hour))),
		page(false, false, "r8", "r7", "r6"))
	c.want(t, "/spans", "span_name=checkout", page(false, false, "r8", "r7", "r6", "r5", "r4", "r3", "r2", "r1"))
	c.want(t, "/spans", "span_name=recent_screen", page(false, false, "recent"))
	c.want(t, "/spans", q("&span_name=launch"), page(false, false, "r7", "r6", "r5", "r4", "r3", "r2", "r1")) // the first value counts
	c.want(t, "/spans", "span_name=launch&"+spanWindow(), page(false, false, "launch"))
	c.want(t, "/spans", "span_name=db_query&"+spanWindow(), page(false, false)) // a child only
	// A short filter brings its versions.
	r := c.tn.do(t, http.MethodPost, "/apps/"+c.app+"/shortFilters", c.token, map[string]string{"Content-Type": "application/json"},
		strings.NewReader(`{"filters":{"versions":["2.0"],"version_codes":["20"]}}`))
	var sf struct {
		Code string `json:"filter_short_code"`
	}
	if err := json.Unmarshal(r.body, &sf); err != nil || sf.Code == "" {
		t.Fatalf("shortFilters: %d %s", r.status, r.body)
	}
	c.want(t, "/spans", q("&filter_short_code="+sf.Code), page(false, false, "r7", "r6"))

	// 400s.
	for _, bad := range []string{
		spanWindow(), "span_name=&" + spanWindow(), q("&span_statuses=3"), q("&span_statuses=0,1"), q("&span_statuses=x"),
		q("&limit=0"), q("&limit=1001"), q("&limit=-1"), q("&limit=x"), q("&offset=-1"), q("&offset=x"),
		q("&os_names=android"), q("&os_versions=33"), q("&os_names=android,ios&os_versions=33"),
		q("&versions=1.0"), "span_name=checkout&from=" + url.QueryEscape(tsOf(spanT0)),
		"span_name=checkout&from=2025-03-10&to=2025-03-11", q(ud(`{"cmp":{"key":"plan","type":"string","op":"gt","value":"x"}}`)),
		q("&device_names=a,,b"), q("&filter_short_code=nope"),
	} {
		c.status(t, "/spans", bad, http.StatusBadRequest)
	}
}

func checkSpanPlot(t *testing.T, c *spanClient) {
	type pt struct {
		Datetime           string `json:"datetime"`
		P50, P90, P95, P99 int
	}
	series := func(id string, pts ...pt) map[string]any {
		data := []map[string]any{}
		for _, p := range pts {
			data = append(data, map[string]any{"datetime": p.Datetime, "p50": p.P50, "p90": p.P90, "p95": p.P95, "p99": p.P99})
		}
		return map[string]any{"id": id, "data": data}
	}
	q := func(extra string) string { return "span_name=checkout&" + spanWindow() + extra }
	day0, day1 := spanT0.Format("2006-01-02"), spanT0.AddDate(0, 0, 1).Format("2006-01-02")
	// Hours: 1.0 (1) at 10:00 holds r1..r5, durations sorted 100 200 300 400 1200: index
	// ⌊0.5·5⌋ = 2 (300), ⌊0.9·5⌋ = ⌊0.95·5⌋ = ⌊0.99·5⌋ = 4 (1200). 2.0 (20) at 11:00 holds r6 and
	// r7: 700 3000, index 1 for every level.
	hours := []any{
		series("1.0 (1)", pt{day0 + "T10:00:00", 300, 1200, 1200, 1200}),
		series("2.0 (20)", pt{day0 + "T11:00:00", 3000, 3000, 3000, 3000}),
	}
	c.want(t, "/spans/plots/metrics", q("&plot_time_group=hours"), hours)
	c.want(t, "/spans/plots/metrics", q("&plot_time_group=hours&timezone=UTC"), hours)
	c.want(t, "/spans/plots/metrics", q("&plot_time_group=hours&timezone=Etc%2FUTC"), hours)
	// In Asia/Kolkata (+05:30) 10:00Z is 15:30: 1.0 (1) has r1..r3 (1200 100 200) at 15:00 and
	// r4, r5 (300 400) at 16:00; 2.0 (20) r6 and r7 (11:00Z, 11:20Z) at 16:00.
	c.want(t, "/spans/plots/metrics", q("&plot_time_group=hours&timezone=Asia%2FKolkata"), []any{
		series("1.0 (1)", pt{day0 + "T15:00:00", 200, 1200, 1200, 1200}, pt{day0 + "T16:00:00", 400, 400, 400, 400}),
		series("2.0 (20)", pt{day0 + "T16:00:00", 3000, 3000, 3000, 3000}),
	})
	// In Pacific/Kiritimati (+14) 10:00Z is midnight of the next day: r1..r7 on day0+1, r8 on
	// day0+2.
	day2 := spanT0.AddDate(0, 0, 2).Format("2006-01-02")
	c.want(t, "/spans/plots/metrics", "span_name=checkout&plot_time_group=days&timezone=Pacific%2FKiritimati&from="+url.QueryEscape(tsOf(spanT0.Add(-time.Hour)))+"&to="+url.QueryEscape(tsOf(spanT0.Add(48*time.Hour))),
		[]any{
			series("1.0 (1)", pt{day1, 300, 1200, 1200, 1200}, pt{day2, 900, 900, 900, 900}),
			series("2.0 (20)", pt{day1, 3000, 3000, 3000, 3000}),
		})
	for _, tz := range []string{"Mars%2FOlympus", "..%2Fetc%2Fpasswd", "Local", "asia%2Fkolkata"} {
		c.status(t, "/spans/plots/metrics", q("&plot_time_group=hours&timezone="+tz), http.StatusBadRequest)
	}
	// Days over two days: r8 adds the next day to 1.0 (1).
	c.want(t, "/spans/plots/metrics", "span_name=checkout&plot_time_group=days&from="+url.QueryEscape(tsOf(spanT0.Add(-time.Hour)))+"&to="+url.QueryEscape(tsOf(spanT0.Add(48*time.Hour))),
		[]any{
			series("1.0 (1)", pt{day0, 300, 1200, 1200, 1200}, pt{day1, 900, 900, 900, 900}),
			series("2.0 (20)", pt{day0, 3000, 3000, 3000, 3000}),
		})
	// Default group (days), status ok only: 1.0 (1) r1 r2 r5 → 100 400 1200: index 1 (400)
	// for 0.5, 2 (1200) for the rest; 2.0 (20) r7 → 700.
	c.want(t, "/spans/plots/metrics", q("&span_statuses=1"), []any{
		series("1.0 (1)", pt{day0, 400, 1200, 1200, 1200}),
		series("2.0 (20)", pt{day0, 700, 700, 700, 700}),
	})
	// Minutes, one version, a device filter and status error: r4 (10:30) alone.
	c.want(t, "/spans/plots/metrics", q("&plot_time_group=minutes&versions=1.0&version_codes=1&device_names=panther&span_statuses=2"), []any{
		series("1.0 (1)", pt{day0 + "T10:30:00", 300, 300, 300, 300}),
	})
	c.want(t, "/spans/plots/metrics", q("&ud_expression="+url.QueryEscape(`{"cmp":{"key":"plan","type":"string","op":"eq","value":"free"}}`)), []any{
		series("1.0 (1)", pt{day0, 300, 300, 300, 300}), // r2 100, r4 300: index 1
		series("2.0 (20)", pt{day0, 3000, 3000, 3000, 3000}),
	})
	c.want(t, "/spans/plots/metrics", q("&countries=in"), []any{})
	c.want(t, "/spans/plots/metrics", "span_name=nothing&"+spanWindow(), []any{})
	for _, bad := range []string{spanWindow(), q("&plot_time_group=weeks"), q("&span_statuses=5"), q("&os_names=ios"), q("&versions=1.0")} {
		c.status(t, "/spans/plots/metrics", bad, http.StatusBadRequest)
	}
}

func checkTraces(t *testing.T, c *spanClient, by map[string]*tSpan) {
	span := func(k string, ud any) map[string]any {
		s := by[k]
		cps := []any{}
		for _, cp := range s.checkpoints {
			cps = append(cps, map[string]any{"name": cp[0], "timestamp": tsOf(cp[1].(time.Time))})
		}
		return map[string]any{"span_name": s.name, "span_id": s.id, "parent_id": s.paren, "status": s.status,
			"start_time": tsOf(s.start), "end_time": tsOf(s.end()), "duration": s.dur, "thread_name": s.thread,
			"device_low_power_mode": s.lowPower, "device_thermal_throttling_enabled": false,
			"user_defined_attributes": ud, "checkpoints": cps}
	}
	none := map[string]any{}
	r1, r6 := by["r1"], by["r6"]
	// Trace A: spans newest first (a3, a2, r1); the trace's fields from its root r1, its end the
	// root's (T0+1.2s, later than a2's and a3's).
	c.want(t, "/traces/"+r1.trace, "", map[string]any{
		"app_id": c.app, "trace_id": r1.trace, "session_id": r1.session.String(), "user_id": "u-42",
		"start_time": tsOf(spanT0), "end_time": tsOf(spanT0.Add(1200 * time.Millisecond)), "duration": 1200,
		"app_version": "1.0(1)", "os_version": "android 34", "device_manufacturer": "Google", "device_model": "Pixel 7",
		"network_type": "wifi",
		"spans": []any{span("a3", none), span("a2", none),
			span("r1", map[string]any{"plan": "pro", "items": 3, "premium": true, "ratio": 2.5})},
	})
	// Trace B: the child b2 starts after its root; the trace ends with the root (T0+1h+3s).
	c.want(t, "/traces/"+r6.trace, "", map[string]any{
		"app_id": c.app, "trace_id": r6.trace, "session_id": r6.session.String(), "user_id": "",
		"start_time": tsOf(r6.start), "end_time": tsOf(r6.end()), "duration": 3000,
		"app_version": "2.0(20)", "os_version": "ios 17.2", "device_manufacturer": "Apple", "device_model": "iPhone15,2",
		"network_type": "cellular",
		"spans":        []any{span("b2", none), span("r6", map[string]any{"plan": "free", "items": 1})},
	})
	c.status(t, "/traces/"+strings.Repeat("9", 32), "", http.StatusNotFound)
	for _, bad := range []string{strings.Repeat("A", 32), strings.Repeat("a", 31), strings.Repeat("a", 33), "not-a-trace", strings.Repeat("g", 32)} {
		c.status(t, "/traces/"+bad, "", http.StatusBadRequest)
	}
	// Another app's trace is unknown here.
	_, otherKey := c.tn.newApp(t)
	s := *by["r5"]
	s.trace, s.id = strings.Repeat("7", 32), "7000000000000001"
	if r := c.tn.putJSON(t, otherKey, uuid.NewString(), []byte(`{"events":[],"spans":[`+s.json(uuid.NewString())+`]}`)); r.status != http.StatusOK {
		t.Fatalf("PUT /events: %d %s", r.status, r.body)
	}
	c.tn.waitFlushed(t)
	c.status(t, "/traces/"+s.trace, "", http.StatusNotFound)
}
