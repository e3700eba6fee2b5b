package dashboard

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// analyticsPaths are the analytics routes whose query parameters the fuzzer varies.
var analyticsPaths = []string{"/crashGroups", "/anrGroups", "/errorGroups", "/crashGroups/plots/instances",
	"/crashGroups/0123456789abcdef0123456789abcdef/crashes", "/anrGroups/0123456789abcdef0123456789abcdef/path",
	"/crashGroups/0123456789abcdef0123456789abcdef/plots/journey", "/journey", "/metrics", "/health/plots/instances", "/filters",
	"/spans/roots/names", "/spans", "/spans/plots/metrics", "/traces/0123456789abcdef0123456789abcdef",
	"/networkRequests/domains", "/networkRequests/paths", "/networkRequests/trends",
	"/networkRequests/plots/overviewStatusCodes", "/networkRequests/plots/overviewTimeline",
	"/networkRequests/plots/endpointLatency", "/networkRequests/plots/endpointStatusCodes",
	"/networkRequests/plots/endpointTimeline", "/alerts",
	"/bugReports", "/bugReports/plots/instances", "/bugReports/00000000-0000-4000-8000-000000000000",
	"/sessions", "/sessions/plots/instances", "/sessions/00000000-0000-4000-8000-000000000000",
	"/errorGroups/plots/instances", "/errorGroups/0123456789abcdef0123456789abcdef/errors",
	"/errorGroups/0123456789abcdef0123456789abcdef/path", "/errorGroups/0123456789abcdef0123456789abcdef/plots/instances",
	"/errorGroups/0123456789abcdef0123456789abcdef/plots/distribution", "/builds", "/filters/keys", "/filters/values"}

// FuzzAnalyticsQuery: no query string makes an analytics endpoint panic or answer 5xx; a refused
// one is a 400 with {error}. The store is the embedded one, with an empty app.
func FuzzAnalyticsQuery(f *testing.F) {
	seeds := []string{
		"from=2026-01-01T00:00:00Z&to=2026-01-08T00:00:00Z",
		"versions=1.0,2.0&version_codes=1,2&limit=-5&key_id=x",
		"limit=1000&plot_time_group=minutes&timezone=Asia/Kolkata",
		`ud_expression={"and":[{"cmp":{"key":"k","type":"int64","op":"gt","value":"9223372036854776000"}}]}`,
		"type=crash,anr&severity=fatal&countries=in&key_timestamp=2026-01-01T00:00:00.123456789Z",
		"filter_short_code=0123456789abcdef0123456789abcdef&bigraph=0",
		"from=2026-01-01&to=x&limit=abc&versions=,",
		"span_name=load&span_statuses=0&span_statuses=2&os_names=android&os_versions=34&offset=3&limit=5",
		"domain=api.example.com&path=/v1/**&http_methods=get&http_methods=POST&search=us&trends_limit=3&timeline_limit=2",
		"bug_report_statuses=0&bug_report_statuses=1&free_text=%20Checkout%5C%22%25_&offset=2&limit=3&plot_time_group=hours&timezone=America/New_York",
		"type=error,anr&severity=fatal&bug_report=1&user_interaction=0&foreground=1&background=true&free_text=%C3%9C%27%00&offset=1&limit=1000",
		"offset=3&limit=1&type=error&severity=unhandled,handled&custom=false&span=1&ud_attr_keys=1",
		`entity=builds&key_name=version_name&search=1.&limit=201&filter_expr=version_name:in:["1.0","2\"x"] AND (mapping_type:not_in:proguard OR patch_id:is_set)`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), s)
	}
	fx := newFixture(f)
	token := fx.tokens["owner"]
	f.Fuzz(func(t *testing.T, route uint8, query string) {
		path := "/apps/" + fx.app.ID.String() + analyticsPaths[int(route)%len(analyticsPaths)]
		u := &url.URL{Path: path, RawQuery: query}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL, req.RequestURI = u, u.RequestURI()
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		fx.router.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s?%s: %d %s", path, query, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && rec.Code != http.StatusTooManyRequests && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s?%s: %d without a JSON body: %s", path, query, rec.Code, rec.Body)
		}
	})
}
