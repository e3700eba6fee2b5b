package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors"
)

// The network request endpoints end to end (issue #13): http events with known truth go
// through PUT /events of a started node, and every answer of /networkRequests/… must equal the
// one written down here by hand, on both store setups, from the app actor's endpoint patterns
// and from the store's alike.

// tRequest is one http event of the dataset.
type tRequest struct {
	session        uuid.UUID
	sessionStart   time.Time // zero: the SDK sends no session_start_time
	at             time.Time
	method, url    string
	status         int
	latency        int // ms; -1: no end_time
	version, build string
	osName, osVer  string
	netType        string
}

func (r *tRequest) json() string {
	attr := map[string]any{"installation_id": "inst-" + r.session.String()[:4], "measure_sdk_version": "0.11.0",
		"app_unique_id": "com.example.app", "platform": "android", "app_version": r.version, "app_build": r.build,
		"os_name": r.osName, "os_version": r.osVer, "device_manufacturer": "Google", "device_model": "Pixel 8",
		"device_name": "shiba", "device_locale": "en-US", "network_type": r.netType, "thread_name": "main"}
	if !r.sessionStart.IsZero() {
		attr["session_start_time"] = tsOf(r.sessionStart)
	}
	ab, _ := json.Marshal(attr)
	start := 5_000_000 + r.at.Sub(netT0).Milliseconds()
	member := fmt.Sprintf(`{"url":%q,"method":%q,"status_code":%d,"start_time":%d`, r.url, r.method, r.status, start)
	if r.latency >= 0 {
		member += fmt.Sprintf(`,"end_time":%d`, start+int64(r.latency))
	}
	member += `,"client":"okhttp"}`
	return fmt.Sprintf(`{"id":%q,"session_id":%q,"timestamp":%q,"type":"http","http":%s,"attribute":%s,"user_triggered":false}`,
		uuid.NewString(), r.session, tsOf(r.at), member, ab)
}

// netT0 is 10:00 UTC five days ago, inside the default window; TestNetworkEndpoints sets it.
var netT0 time.Time

// networkDataset: session 1 (version 1.0, android, wifi, sends its start time) makes requests
// 1–7 in its first 13 seconds; session 2 (2.0, ios, cellular, no start time) makes 8–10 an
// hour later.
func networkDataset() []*tRequest {
	s1, s2 := uuid.New(), uuid.New()
	sec := time.Second
	one := func(d time.Duration, method, u string, status, latency int) *tRequest {
		return &tRequest{session: s1, sessionStart: netT0, at: netT0.Add(d), method: method, url: u, status: status,
			latency: latency, version: "1.0", build: "100", osName: "android", osVer: "14", netType: "wifi"}
	}
	two := func(d time.Duration, method, u string, status, latency int) *tRequest {
		return &tRequest{session: s2, at: netT0.Add(time.Hour + d), method: method, url: u, status: status,
			latency: latency, version: "2.0", build: "200", osName: "ios", osVer: "17.4", netType: "cellular"}
	}
	return []*tRequest{
		one(1*sec, "get", "https://api.shop.io/v1/users/1234", 200, 100),
		one(2*sec, "get", "https://api.shop.io/v1/users/5678?x=1", 200, 300),
		one(6*sec, "post", "https://api.shop.io/v1/users/5678", 500, 200),
		one(7*sec, "get", "https://api.shop.io/v1/login", 401, 50),
		one(8*sec, "get", "https://cdn.shop.io/img/a.png", 200, 20),
		one(12*sec, "get", "https://api.shop.io/v1/users/42", 0, 10), // no response: not counted
		one(13*sec, "get", "msr", 0, 1),                              // no host: not a network request
		two(0, "GET", "https://api.shop.io/v1/users/77", 302, 300),
		two(1*sec, "get", "https://API.SHOP.IO/v1/users/77", 200, 1000),
		two(2*sec, "get", "https://cdn.shop.io/img/b.png", 404, 40),
	}
}

func TestNetworkEndpoints(t *testing.T) {
	now := time.Now().UTC()
	netT0 = time.Date(now.Year(), now.Month(), now.Day(), 10, 0, 0, 0, time.UTC).AddDate(0, 0, -5)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, nil)
			var parts []string
			for _, r := range networkDataset() {
				parts = append(parts, r.json())
			}
			// Two requests, so the app actor learns paths from more than one batch.
			half := len(parts) / 2
			for _, b := range []string{strings.Join(parts[:half], ","), strings.Join(parts[half:], ",")} {
				if r := tn.putJSON(t, tn.key, uuid.NewString(), []byte(`{"events":[`+b+`],"spans":[]}`)); r.status != http.StatusOK {
					t.Fatalf("PUT /events: %d %s", r.status, r.body)
				}
			}
			tn.waitFlushed(t)
			check := func(name string) {
				for _, from := range []string{"", "store"} {
					t.Run(name+"/endpoints-from-"+map[string]string{"": "actor", "store": "store"}[from], func(t *testing.T) {
						c := &netClient{spanClient{tn: tn, token: tn.accessToken(t, tn.email), app: tn.app.ID.String()}, from}
						checkNetwork(t, c)
					})
				}
			}
			check("live")
			// A restarted node's app actor rebuilds its paths and patterns from the store.
			old := tn
			tn = restartNode(t, backend, tn, nil)
			tn.app, tn.key, tn.email = old.app, old.key, old.email // the dataset's app, not the new node's own
			check("restarted")
			// It answers itself (not by falling back to the store): every path, exactly.
			rep, err := actors.Live{Dir: tn.Dir}.Endpoints(context.Background(), tn.app.ID)
			if err != nil || !rep.Ok || len(rep.Paths) != 4 {
				t.Errorf("app actor's endpoints after the restart: %v, %v", rep, err)
			}
		})
	}
}

// netClient asks with Svc-Answer-From set to from, so that the endpoint patterns come from the
// store ("store") or from the app actor ("").
type netClient struct {
	spanClient
	from string
}

func (c *netClient) want(t *testing.T, route, query string, want any) {
	t.Helper()
	p := "/apps/" + c.app + "/networkRequests" + route + "?" + query
	r := c.tn.do(t, http.MethodGet, p, c.token, map[string]string{"Svc-Answer-From": c.from}, nil)
	if r.status != http.StatusOK {
		t.Errorf("GET %s: %d %s", p, r.status, r.body)
		return
	}
	var got, exp any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("GET %s: %v", p, err)
	}
	wb, _ := json.Marshal(want)
	_ = json.Unmarshal(wb, &exp)
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("GET %s:\n got  %s\n want %s", p, r.body, wb)
	}
}

func (c *netClient) refuse(t *testing.T, route, query string) {
	t.Helper()
	c.status(t, "/networkRequests"+route, query, http.StatusBadRequest)
}

type jm = map[string]any

func checkNetwork(t *testing.T, c *netClient) {
	day := netT0.Format("2006-01-02")
	hour := func(h int) string { return netT0.Add(time.Duration(h) * time.Hour).Format("2006-01-02T15:00:00") }
	w := "from=" + url.QueryEscape(tsOf(netT0.Add(-time.Hour))) + "&to=" + url.QueryEscape(tsOf(netT0.Add(3*time.Hour)))

	// Domains, the most requested first; the default window holds the dataset too.
	c.want(t, "/domains", w, jm{"results": []string{"api.shop.io", "cdn.shop.io"}})
	c.want(t, "/domains", "", jm{"results": []string{"api.shop.io", "cdn.shop.io"}})
	c.want(t, "/domains", w+"&versions=2.0&version_codes=200&network_types=cellular", jm{"results": []string{"api.shop.io", "cdn.shop.io"}})
	c.want(t, "/domains", w+"&http_methods=POST", jm{"results": []string{"api.shop.io"}})
	c.want(t, "/domains", "from="+url.QueryEscape(tsOf(netT0.Add(-3*time.Hour)))+"&to="+url.QueryEscape(tsOf(netT0)), jm{"results": []string{}})

	// Paths: /v1/users/1234, /5678, /77 are one endpoint; /42 got no response.
	c.want(t, "/paths", "domain=api.shop.io", jm{"results": []string{"/v1/login", "/v1/users/*"}})
	c.want(t, "/paths", "domain=api.shop.io&search=USER", jm{"results": []string{"/v1/users/*"}})
	c.want(t, "/paths", "domain=cdn.shop.io&limit=1", jm{"results": []string{"/img/a.png"}})
	c.want(t, "/paths", "domain=nowhere.io", jm{"results": []string{}})

	// Trends. /v1/users/*: 5 requests (200, 200, 500, 302, 200), latencies 100, 300, 200, 300,
	// 1000 ms: p95 is the element at ⌊0.95·5⌋ = 4 of the sorted latencies, 1000.
	users := jm{"domain": "api.shop.io", "path_pattern": "/v1/users/*", "p95_latency": 1000, "error_rate": 20, "frequency": 5}
	login := jm{"domain": "api.shop.io", "path_pattern": "/v1/login", "p95_latency": 50, "error_rate": 100, "frequency": 1}
	pngA := jm{"domain": "cdn.shop.io", "path_pattern": "/img/a.png", "p95_latency": 20, "error_rate": 0, "frequency": 1}
	pngB := jm{"domain": "cdn.shop.io", "path_pattern": "/img/b.png", "p95_latency": 40, "error_rate": 100, "frequency": 1}
	c.want(t, "/trends", w, jm{"trends_latency": []jm{users, login, pngB, pngA}, "trends_error_rate": []jm{login, pngB, users},
		"trends_frequency": []jm{users, login, pngA, pngB}})
	c.want(t, "/trends", w+"&trends_limit=1", jm{"trends_latency": []jm{users}, "trends_error_rate": []jm{login}, "trends_frequency": []jm{users}})
	c.want(t, "/trends", w+"&os_names=android&os_versions=14&http_methods=post", jm{"trends_latency": []jm{
		{"domain": "api.shop.io", "path_pattern": "/v1/users/*", "p95_latency": 200, "error_rate": 100, "frequency": 1}},
		"trends_error_rate": []jm{{"domain": "api.shop.io", "path_pattern": "/v1/users/*", "p95_latency": 200, "error_rate": 100, "frequency": 1}},
		"trends_frequency":  []jm{{"domain": "api.shop.io", "path_pattern": "/v1/users/*", "p95_latency": 200, "error_rate": 100, "frequency": 1}}})
	c.want(t, "/trends", w+"&versions=9.9&version_codes=9", jm{"trends_latency": []jm{}, "trends_error_rate": []jm{}, "trends_frequency": []jm{}})

	// Overview status codes: 2xx r1 r2 r5 r9, 3xx r8, 4xx r4 r10, 5xx r3.
	c.want(t, "/plots/overviewStatusCodes", w, []jm{{"datetime": day, "total_count": 8, "count_2xx": 4, "count_3xx": 1, "count_4xx": 2, "count_5xx": 1}})
	c.want(t, "/plots/overviewStatusCodes", w+"&plot_time_group=hours", []jm{
		{"datetime": hour(0), "total_count": 5, "count_2xx": 3, "count_3xx": 0, "count_4xx": 1, "count_5xx": 1},
		{"datetime": hour(1), "total_count": 3, "count_2xx": 1, "count_3xx": 1, "count_4xx": 1, "count_5xx": 0}})
	// In Asia/Kolkata (+05:30) 10:00 UTC is 15:30, in the hour from 15:00.
	ist := func(h int) string {
		return netT0.Add(time.Duration(h)*time.Hour - 30*time.Minute).In(time.FixedZone("IST", 5*3600+1800)).Format("2006-01-02T15:04:05")
	}
	c.want(t, "/plots/overviewStatusCodes", w+"&plot_time_group=hours&timezone=Asia/Kolkata", []jm{
		{"datetime": ist(0), "total_count": 5, "count_2xx": 3, "count_3xx": 0, "count_4xx": 1, "count_5xx": 1},
		{"datetime": ist(1), "total_count": 3, "count_2xx": 1, "count_3xx": 1, "count_4xx": 1, "count_5xx": 0}})

	// Overview timeline: only session 1 sends its start. Sessions per endpoint: users 2, the
	// others 1. Elapsed 0–5 s: r1, r2 (users); 5–10 s: r3 (users), r4 (login), r5 (a.png).
	pt := func(e int, d, p string, n float64) jm {
		return jm{"elapsed": e, "domain": d, "path_pattern": p, "count": n}
	}
	c.want(t, "/plots/overviewTimeline", w, jm{"interval": 5, "points": []jm{
		pt(0, "api.shop.io", "/v1/users/*", 1), pt(5, "api.shop.io", "/v1/login", 1),
		pt(5, "api.shop.io", "/v1/users/*", 0.5), pt(5, "cdn.shop.io", "/img/a.png", 1)}})
	c.want(t, "/plots/overviewTimeline", w+"&timeline_limit=1", jm{"interval": 5, "points": []jm{
		pt(0, "api.shop.io", "/v1/users/*", 1), pt(5, "api.shop.io", "/v1/users/*", 0.5)}})

	// Endpoint latency: sorted 100, 200, 300, 300, 1000 → p50 [2] 300, p90 [4] 1000.
	ep := "&domain=api.shop.io&path=" + url.QueryEscape("/v1/users/*")
	lat := func(d string, n, p50, p90, p95, p99 int) jm {
		return jm{"datetime": d, "count": n, "p50": p50, "p90": p90, "p95": p95, "p99": p99}
	}
	c.want(t, "/plots/endpointLatency", w+ep, []jm{lat(day, 5, 300, 1000, 1000, 1000)})
	c.want(t, "/plots/endpointLatency", w+ep+"&plot_time_group=hours", []jm{lat(hour(0), 3, 200, 300, 300, 300), lat(hour(1), 2, 1000, 1000, 1000, 1000)})
	c.want(t, "/plots/endpointLatency", w+ep+"&http_methods=post&http_methods=put", []jm{lat(day, 1, 200, 200, 200, 200)})
	// /v1/** is every endpoint under /v1: 50, 100, 200, 300, 300, 1000.
	c.want(t, "/plots/endpointLatency", w+"&domain=api.shop.io&path="+url.QueryEscape("/v1/**"), []jm{lat(day, 6, 300, 1000, 1000, 1000)})
	c.want(t, "/plots/endpointLatency", w+"&domain=api.shop.io&path=/v2/nothing", []jm{})

	c.want(t, "/plots/endpointStatusCodes", w+ep, jm{"status_codes": []int{200, 302, 500},
		"data_points": []jm{{"datetime": day, "total_count": 5, "count_200": 3, "count_302": 1, "count_500": 1}}})
	c.want(t, "/plots/endpointStatusCodes", w+ep+"&plot_time_group=hours", jm{"status_codes": []int{200, 302, 500},
		"data_points": []jm{{"datetime": hour(0), "total_count": 3, "count_200": 2, "count_500": 1},
			{"datetime": hour(1), "total_count": 2, "count_200": 1, "count_302": 1}}})

	c.want(t, "/plots/endpointTimeline", w+ep, jm{"interval": 5, "points": []jm{
		pt(0, "api.shop.io", "/v1/users/*", 1), pt(5, "api.shop.io", "/v1/users/*", 0.5)}})
	c.want(t, "/plots/endpointTimeline", w+"&domain=api.shop.io&path=/v2/nothing", jm{"interval": 5, "points": []jm{}})

	// Refusals, each with its {error}.
	c.refuse(t, "/paths", "")
	c.refuse(t, "/paths", "domain=api.shop.io&limit=0")
	c.refuse(t, "/trends", w+"&trends_limit=51")
	c.refuse(t, "/plots/overviewTimeline", w+"&timeline_limit=x")
	c.refuse(t, "/plots/endpointLatency", w+"&path=/v1")
	c.refuse(t, "/plots/endpointLatency", w+"&domain=api.shop.io")
	c.refuse(t, "/plots/endpointStatusCodes", w+"&domain=api.shop.io&path="+url.QueryEscape("/v1/**/x"))
	c.refuse(t, "/plots/endpointTimeline", w+ep+"&http_methods=")
	c.refuse(t, "/plots/overviewStatusCodes", w+"&timezone=Mars/Olympus")
	c.refuse(t, "/plots/overviewStatusCodes", w+"&plot_time_group=weeks")
	c.refuse(t, "/domains", "from=yesterday&to=today")
}
