package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func TestMonthlyAppUsage(t *testing.T) {
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	stored := []model.MonthUsage{{Month: "2025-12", Sessions: 2, Events: 30, Spans: 4, Bytes: 500}, {Month: "2026-02", Sessions: 1, Events: 1, Spans: 0, Bytes: 9}}
	type row struct {
		MonthYear string `json:"month_year"`
		Sessions  int64  `json:"sessions"`
		Events    int64  `json:"events"`
		Spans     int64  `json:"spans"`
		BytesIn   int64  `json:"bytes_in"`
	}
	cases := []struct {
		name     string
		from, to time.Time
		want     []row
	}{
		{"three months, one without data", day(2025, 12, 1), day(2026, 2, 14), []row{{"Dec 2025", 2, 30, 4, 500}, {"Jan 2026", 0, 0, 0, 0}, {"Feb 2026", 1, 1, 0, 9}}},
		{"window ends at a month's start", day(2025, 12, 15), day(2026, 2, 1), []row{{"Dec 2025", 2, 30, 4, 500}, {"Jan 2026", 0, 0, 0, 0}}},
		{"one instant of a month", day(2026, 2, 1).Add(-time.Nanosecond), day(2026, 2, 1).Add(time.Nanosecond), []row{{"Jan 2026", 0, 0, 0, 0}, {"Feb 2026", 1, 1, 0, 9}}},
		{"across a year", day(2024, 12, 31), day(2025, 1, 2), []row{{"Dec 2024", 0, 0, 0, 0}, {"Jan 2025", 0, 0, 0, 0}}},
		{"empty window", day(2026, 2, 1), day(2026, 2, 1), []row{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(monthlyAppUsage(stored, tc.from, tc.to))
			var got []row
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil || got == nil {
				t.Fatalf("%s: %v", b, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestUsageMonthlyAppUsage: GET /teams/{id}/usage keeps svc's `monthly` and adds the dashboard's
// `monthly_app_usage`: every month of the window (by default the last 12, the current one last).
func TestUsageMonthlyAppUsage(t *testing.T) {
	f := newFixture(t)
	code, b := f.call(t, http.MethodGet, "/teams/"+f.team.ID.String()+"/usage", f.tokens["viewer"], nil)
	if code != 200 {
		t.Fatalf("usage: %d %s", code, b)
	}
	var apps []struct {
		AppID   string            `json:"app_id"`
		AppName string            `json:"app_name"`
		Monthly []json.RawMessage `json:"monthly"`
		Usage   []struct {
			MonthYear string `json:"month_year"`
			Sessions  *int64 `json:"sessions"`
			Events    *int64 `json:"events"`
			Spans     *int64 `json:"spans"`
			BytesIn   *int64 `json:"bytes_in"`
		} `json:"monthly_app_usage"`
	}
	if err := json.Unmarshal(b, &apps); err != nil || len(apps) != 1 {
		t.Fatalf("usage %s: %v", b, err)
	}
	a := apps[0]
	if a.AppID != f.app.ID.String() || a.AppName != f.app.Name || a.Monthly == nil || len(a.Usage) != 12 {
		t.Fatalf("usage %s", b)
	}
	now := time.Now().UTC()
	if last := a.Usage[11].MonthYear; last != now.Format("Jan 2006") {
		t.Errorf("the last month is %q, want the current one %q", last, now.Format("Jan 2006"))
	}
	for i, u := range a.Usage {
		if _, err := time.Parse("Jan 2006", u.MonthYear); err != nil || u.Sessions == nil || u.Events == nil || u.Spans == nil || u.BytesIn == nil {
			t.Errorf("month %d: %+v", i, u)
		}
	}
}

// configAnswer is GET /apps/{id}/config with the members the dashboard reads.
type configAnswer map[string]any

func (f *fixture) config(t *testing.T) configAnswer {
	t.Helper()
	code, b := f.call(t, http.MethodGet, "/apps/"+f.app.ID.String()+"/config", f.tokens["viewer"], nil)
	if code != 200 {
		t.Fatalf("config: %d %s", code, b)
	}
	var c configAnswer
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAppConfigDashboardFields: GET /apps/{id}/config carries the dashboard's http/profile
// sampling rates and log settings beside the SDK configuration; PATCH takes them in the
// sections the dashboard sends, refuses bad values with a 400 naming the field (changing
// nothing), and stores them apart from the SDK configuration.
func TestAppConfigDashboardFields(t *testing.T) {
	f := newFixture(t)
	path := "/apps/" + f.app.ID.String() + "/config"
	c := f.config(t)
	defaults := map[string]any{"http_sampling_rate": 100.0, "profile_sampling_rate": 100.0, "log_autocollect_enabled": false,
		"log_min_severity": 16.0, "log_ignore_patterns": []any{}, "trace_sampling_rate": 100.0, "max_events_in_batch": 10000.0,
		"http_blocked_headers": []any{}, "anr_timeline_sampling_rate": 100.0}
	for k, v := range defaults {
		if !reflect.DeepEqual(c[k], v) {
			t.Errorf("default %s = %v, want %v", k, c[k], v)
		}
	}
	if len(c) != 23 {
		t.Errorf("config has %d members, want the SDK configuration's 18 and 5 more: %v", len(c), c)
	}

	// The sections the dashboard sends, one PATCH each.
	sections := []map[string]any{
		{"crash_take_screenshot": false, "crash_timeline_duration": 60},
		{"trace_sampling_rate": 12.5},
		{"profile_sampling_rate": 0.01},
		{"http_sampling_rate": 33.33, "http_disable_event_for_urls": []string{"https://a.example/*"}, "http_track_request_for_urls": []string{},
			"http_track_response_for_urls": []string{}, "http_blocked_headers": []string{"Authorization"}},
		{"log_autocollect_enabled": true, "log_min_severity": 8, "log_ignore_patterns": []string{`^GC\s`, "noise"}},
	}
	want := configAnswer{}
	for k, v := range c {
		want[k] = v
	}
	for _, sec := range sections {
		code, b := f.call(t, http.MethodPatch, path, f.tokens["admin"], sec)
		if code != 200 {
			t.Fatalf("PATCH %v: %d %s", sec, code, b)
		}
		raw, _ := json.Marshal(sec)
		_ = json.Unmarshal(raw, (*map[string]any)(&want))
		var got configAnswer
		_ = json.Unmarshal(b, &got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("PATCH %v answered %v, want %v", sec, got, want)
		}
	}
	if got := f.config(t); !reflect.DeepEqual(got, want) {
		t.Errorf("GET after the PATCHes = %v, want %v", got, want)
	}

	cases := []struct {
		name string
		body any
		want string
	}{
		{"HTTP rate over 100", map[string]any{"http_sampling_rate": 100.5}, "http_sampling_rate must be a percentage between 0 and 100, got 100.5"},
		{"negative profile rate", map[string]any{"profile_sampling_rate": -1}, "profile_sampling_rate must be a percentage"},
		{"rate as text", map[string]any{"http_sampling_rate": "50"}, "http_sampling_rate"},
		{"severity between levels", map[string]any{"log_min_severity": 15}, "log_min_severity must be one of 8 (debug), 12 (info), 16 (warning), 20 (error), 24 (fatal), got 15"},
		{"blank pattern", map[string]any{"log_ignore_patterns": []string{"ok", " "}}, "log_ignore_patterns[1] must be 1 to 2048 characters"},
		{"pattern list as text", map[string]any{"log_ignore_patterns": "x"}, "log_ignore_patterns"},
		{"autocollect as a number", map[string]any{"log_autocollect_enabled": 1}, "log_autocollect_enabled"},
		{"unknown member", map[string]any{"log_level": 8}, `unknown field \"log_level\"`},
		{"a bad SDK member with a good extra one", map[string]any{"http_sampling_rate": 1, "trace_sampling_rate": 101}, "trace_sampling_rate must be a percentage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, b := f.call(t, http.MethodPatch, path, f.tokens["owner"], tc.body)
			if code != 400 || !strings.Contains(string(b), tc.want) {
				t.Errorf("%d %s, want 400 with %q", code, b, tc.want)
			}
			if got := f.config(t); !reflect.DeepEqual(got, want) {
				t.Errorf("a refused PATCH changed the config: %v, want %v", got, want)
			}
		})
	}

	// Kept apart: a PATCH of extra settings only does not touch the SDK configuration.
	g := newFixture(t)
	if code, b := g.call(t, http.MethodPatch, "/apps/"+g.app.ID.String()+"/config", g.tokens["owner"], map[string]any{"log_min_severity": 24}); code != 200 {
		t.Fatalf("PATCH: %d %s", code, b)
	}
	if _, _, err := g.api.Meta.SDKConfig(context.Background(), g.app.ID); !errors.Is(err, sinks.ErrNotFound) {
		t.Errorf("a PATCH of extra settings only stored an SDK configuration: %v", err)
	}
	e, _, err := g.api.Meta.(sinks.SDKConfigExtras).SDKConfigExtra(context.Background(), g.app.ID)
	if err != nil || e.LogMinSeverity != 24 {
		t.Errorf("stored extra settings %+v, %v", e, err)
	}
}

// TestNotifPrefs: GET /prefs/notifPrefs gives every notification on until the user changes
// them; PATCH applies the booleans sent (the whole object the dashboard read back, times
// included, or some of them), per user; bad bodies are 400 and change nothing.
func TestNotifPrefs(t *testing.T) {
	f := newFixture(t)
	type prefs struct {
		ErrorSpike   *bool   `json:"error_spike"`
		AppHangSpike *bool   `json:"app_hang_spike"`
		BugReport    *bool   `json:"bug_report"`
		DailySummary *bool   `json:"daily_summary"`
		CreatedAt    *string `json:"created_at"`
		UpdatedAt    *string `json:"updated_at"`
	}
	get := func(who string) (prefs, map[string]any) {
		t.Helper()
		code, b := f.call(t, http.MethodGet, "/prefs/notifPrefs", f.tokens[who], nil)
		if code != 200 {
			t.Fatalf("GET as %s: %d %s", who, code, b)
		}
		var p prefs
		var raw map[string]any
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("GET as %s: %v: %s", who, err, b)
		}
		_ = json.Unmarshal(b, &raw)
		return p, raw
	}
	bools := func(p prefs) [4]bool { return [4]bool{*p.ErrorSpike, *p.AppHangSpike, *p.BugReport, *p.DailySummary} }

	p, raw := get("developer")
	if bools(p) != [4]bool{true, true, true, true} || p.CreatedAt == nil || p.UpdatedAt == nil {
		t.Fatalf("defaults %+v", raw)
	}
	if created, _ := time.Parse(time.RFC3339Nano, *p.CreatedAt); !created.Equal(f.users["developer"].CreatedAt) {
		t.Errorf("created_at of defaults %s, want the user's creation %s", *p.CreatedAt, f.users["developer"].CreatedAt)
	}

	// The dashboard sends back what it read, with one switch flipped.
	raw["bug_report"] = false
	code, b := f.call(t, http.MethodPatch, "/prefs/notifPrefs", f.tokens["developer"], raw)
	if code != 200 {
		t.Fatalf("PATCH: %d %s", code, b)
	}
	p, _ = get("developer")
	if bools(p) != [4]bool{true, true, false, true} {
		t.Errorf("after PATCH bug_report false: %+v", bools(p))
	}
	if *p.CreatedAt == *p.UpdatedAt {
		t.Errorf("updated_at %s did not move past created_at", *p.UpdatedAt)
	}
	for _, c := range []struct {
		body map[string]any
		want [4]bool
	}{
		{map[string]any{"error_spike": false}, [4]bool{false, true, false, true}},
		{map[string]any{"daily_summary": false, "app_hang_spike": false}, [4]bool{false, false, false, false}},
		{map[string]any{"error_spike": true, "app_hang_spike": true, "bug_report": true, "daily_summary": true, "unread": 1}, [4]bool{true, true, true, true}},
	} {
		if code, b := f.call(t, http.MethodPatch, "/prefs/notifPrefs", f.tokens["developer"], c.body); code != 200 {
			t.Fatalf("PATCH %v: %d %s", c.body, code, b)
		}
		if p, _ := get("developer"); bools(p) != c.want {
			t.Errorf("after PATCH %v: %v, want %v", c.body, bools(p), c.want)
		}
	}
	before, _ := get("developer")
	for _, c := range []struct {
		name string
		body any
		want string
	}{
		{"nothing to change", map[string]any{"created_at": "2026-01-01T00:00:00.000Z"}, "send at least one of error_spike, app_hang_spike, bug_report, daily_summary"},
		{"not a boolean", map[string]any{"error_spike": "no"}, "error_spike"},
		{"not an object", []bool{true}, "malformed JSON body"},
	} {
		if code, b := f.call(t, http.MethodPatch, "/prefs/notifPrefs", f.tokens["developer"], c.body); code != 400 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s, want 400 with %q", c.name, code, b, c.want)
		}
	}
	if after, _ := get("developer"); !reflect.DeepEqual(after, before) {
		t.Errorf("refused PATCHes changed the preferences: %+v, want %+v", after, before)
	}
	// Per user: another user (an outsider of the team too) still has the defaults.
	for _, who := range []string{"owner", "outsider"} {
		if p, _ := get(who); bools(p) != [4]bool{true, true, true, true} {
			t.Errorf("%s's preferences changed with another user's: %v", who, bools(p))
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodPatch} {
		if code, _ := f.call(t, m, "/prefs/notifPrefs", "", map[string]bool{"error_spike": true}); code != 401 {
			t.Errorf("%s without a token: %d, want 401", m, code)
		}
	}
}

// TestSlackAliases: the reference dashboard's Slack calls answer from the team's chat app:
// GET /slack is null without one and {slack_team_name, is_active, …} with one; PATCH
// /slack/status switches it, POST /slack/test posts to the webhook, DELETE /slack removes it;
// PATCH and DELETE without a chat app are 404.
func TestSlackAliases(t *testing.T) {
	f := newFixture(t)
	team := "/teams/" + f.team.ID.String()
	slack := func() string {
		t.Helper()
		code, b := f.call(t, http.MethodGet, team+"/slack", f.tokens["viewer"], nil)
		if code != 200 {
			t.Fatalf("GET slack: %d %s", code, b)
		}
		return strings.TrimSpace(string(b))
	}
	host := strings.TrimPrefix(f.webhook.URL, "http://")
	if got, want := slack(), `{"is_active":true,"needs_reauth":false,"scopes":"incoming-webhook","slack_team_name":"`+host+`"}`; got != want {
		t.Errorf("GET slack = %s, want %s", got, want)
	}
	if code, b := f.call(t, http.MethodPatch, team+"/slack/status", f.tokens["owner"], map[string]bool{"is_active": false}); code != 200 || !strings.Contains(string(b), `"is_active":false`) {
		t.Fatalf("PATCH status: %d %s", code, b)
	}
	if code, b := f.call(t, http.MethodGet, team+"/chatapp", f.tokens["owner"], nil); code != 200 || !strings.Contains(string(b), `"enabled":false`) || !strings.Contains(string(b), f.webhook.URL) {
		t.Errorf("the chat app after PATCH slack/status: %d %s", code, b)
	}
	if !strings.Contains(slack(), `"is_active":false`) {
		t.Errorf("GET slack after switching off: %s", slack())
	}
	for _, body := range []any{map[string]any{}, map[string]string{"is_active": "yes"}} {
		if code, b := f.call(t, http.MethodPatch, team+"/slack/status", f.tokens["owner"], body); code != 400 {
			t.Errorf("PATCH status %v: %d %s, want 400", body, code, b)
		}
	}
	if code, b := f.call(t, http.MethodPost, team+"/slack/test", f.tokens["owner"], nil); code != 200 {
		t.Fatalf("POST test: %d %s", code, b)
	}
	select {
	case msg := <-f.posts:
		if !strings.Contains(msg, `"text"`) {
			t.Errorf("the webhook got %s", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the webhook got nothing")
	}
	if code, b := f.call(t, http.MethodDelete, team+"/slack", f.tokens["owner"], nil); code != 200 || strings.TrimSpace(string(b)) != `{"ok":true}` {
		t.Fatalf("DELETE: %d %s", code, b)
	}
	if got := slack(); got != "null" {
		t.Errorf("GET slack after DELETE = %s, want null", got)
	}
	if code, b := f.call(t, http.MethodGet, team+"/chatapp", f.tokens["owner"], nil); code != 200 || !strings.Contains(string(b), `"configured":false`) {
		t.Errorf("the chat app after DELETE slack: %d %s", code, b)
	}
	for _, c := range []struct {
		method, path string
		body         any
		want         int
	}{
		{http.MethodDelete, "/slack", nil, 404},
		{http.MethodPatch, "/slack/status", map[string]bool{"is_active": true}, 404},
		{http.MethodPost, "/slack/test", nil, 400},
	} {
		if code, b := f.call(t, c.method, team+c.path, f.tokens["owner"], c.body); code != c.want {
			t.Errorf("%s %s without a chat app: %d %s, want %d", c.method, c.path, code, b, c.want)
		}
	}
	if a := f.authz(t, "owner"); a.CanManageSlack {
		t.Error("can_manage_slack is true without a chat app")
	}
}
