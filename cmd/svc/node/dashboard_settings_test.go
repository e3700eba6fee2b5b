package node

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/signin/signintest"
)

// restartKeeping stops tn and starts a node on the same data directory and stores, keeping tn's
// app, key and owner.
func restartKeeping(t *testing.T, backend string, tn *testNode, tweak func(*Config)) *testNode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := tn.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	cfg := tn.cfg
	next := startNode(t, backend, func(c *Config) {
		if tweak != nil {
			tweak(c)
		}
		c.DataDir, c.ClickHouseDSN, c.PostgresDSN = cfg.DataDir, cfg.ClickHouseDSN, cfg.PostgresDSN
	})
	next.app, next.key, next.email = tn.app, tn.key, tn.email
	return next
}

// call sends a dashboard request with an access token and a JSON body (nil: none).
func (tn *testNode) call(t *testing.T, method, path, token string, body any) response {
	t.Helper()
	var rd io.Reader
	hdr := map[string]string{}
	if body != nil {
		b, _ := json.Marshal(body)
		rd, hdr["Content-Type"] = bytes.NewReader(b), "application/json"
	}
	return tn.do(t, method, path, token, hdr, rd)
}

// TestDashboardSettingsBothStores: the reference web dashboard's sign-in, team, settings,
// usage, preference and Slack calls (issue #15) on a node of each store setup: GitHub sign-in
// through /auth/github with a fake GitHub, the app's dashboard-only SDK settings (kept out of
// GET /config and its ETag), notification preferences, the Slack view of the chat app,
// monthly_app_usage of stored data, and what the settings are after a restart.
func TestDashboardSettingsBothStores(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			gh := signintest.NewGitHub(t)
			withGitHub := func(c *Config) {
				c.GitHubClientID, c.GitHubClientSecret, c.GitHubOAuthURL, c.GitHubAPIURL = gh.ClientID(), gh.ClientSecret(), gh.URL(), gh.URL()
			}
			tn := startNode(t, backend, withGitHub)
			owner := tn.accessToken(t, tn.email)
			team, app := "/teams/"+tn.app.TeamID.String(), "/apps/"+tn.app.ID.String()

			// Sign-in as the dashboard does it: init from the browser, then the code.
			if r := tn.call(t, http.MethodPost, "/auth/github", "", map[string]string{"type": "init", "state": "st"}); r.status != 200 {
				t.Fatalf("init: %d %s", r.status, r.body)
			}
			gh.AddUser("code-1", signintest.GitHubUser{ID: 5, Login: "grace", Emails: []signintest.GitHubEmail{{Email: "grace@example.com", Primary: true, Verified: true}}})
			r := tn.call(t, http.MethodPost, "/auth/github", "", map[string]string{"type": "code", "state": "st", "code": "code-1"})
			signedIn := r.json(t)
			if r.status != 200 || signedIn["access_token"] == nil || signedIn["own_team_id"] == nil {
				t.Fatalf("sign-in: %d %s", r.status, r.body)
			}
			grace := signedIn["access_token"].(string)

			// SDK settings: the dashboard's extra members, not served to SDKs.
			sdkConfig := func() (map[string]any, string) {
				r := tn.do(t, http.MethodGet, "/config", tn.key, nil, nil)
				if r.status != 200 {
					t.Fatalf("GET /config: %d %s", r.status, r.body)
				}
				return r.json(t), r.header.Get("ETag")
			}
			_, etag := sdkConfig()
			extras := map[string]any{"http_sampling_rate": 12.5, "profile_sampling_rate": 0.5, "log_autocollect_enabled": true,
				"log_min_severity": 20.0, "log_ignore_patterns": []any{`^noise\d+$`}}
			if r := tn.call(t, http.MethodPatch, app+"/config", owner, extras); r.status != 200 {
				t.Fatalf("PATCH config: %d %s", r.status, r.body)
			}
			cfg, etagAfter := sdkConfig()
			for k := range extras {
				if _, ok := cfg[k]; ok {
					t.Errorf("GET /config serves %s, which the ingestion contract's SDKs do not read", k)
				}
			}
			if etagAfter != etag {
				t.Errorf("GET /config's ETag moved from %s to %s though only dashboard settings changed", etag, etagAfter)
			}
			if r := tn.call(t, http.MethodPatch, app+"/config", owner, map[string]any{"trace_sampling_rate": 40}); r.status != 200 {
				t.Fatalf("PATCH config: %d %s", r.status, r.body)
			}
			if cfg, e := sdkConfig(); e == etag || cfg["trace_sampling_rate"] != 40.0 {
				t.Errorf("GET /config after a change of trace_sampling_rate: %v, ETag %s", cfg["trace_sampling_rate"], e)
			}
			if r := tn.call(t, http.MethodPatch, app+"/config", owner, map[string]any{"http_sampling_rate": 101}); r.status != 400 {
				t.Errorf("PATCH http_sampling_rate 101: %d %s, want 400", r.status, r.body)
			}

			// Notification preferences, per user.
			if r := tn.call(t, http.MethodPatch, "/prefs/notifPrefs", owner, map[string]any{"daily_summary": false, "bug_report": false}); r.status != 200 {
				t.Fatalf("PATCH notifPrefs: %d %s", r.status, r.body)
			}
			if r := tn.call(t, http.MethodGet, "/prefs/notifPrefs", grace, nil); r.status != 200 || r.json(t)["daily_summary"] != true {
				t.Errorf("another user's preferences: %d %s", r.status, r.body)
			}

			// Slack, over the chat app.
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
			t.Cleanup(hook.Close)
			if r := tn.call(t, http.MethodGet, team+"/slack", owner, nil); r.status != 200 || strings.TrimSpace(string(r.body)) != "null" {
				t.Errorf("GET slack without a chat app: %d %s, want null", r.status, r.body)
			}
			if r := tn.call(t, http.MethodGet, team+"/authz", owner, nil); r.json(t)["can_manage_slack"] != false {
				t.Errorf("can_manage_slack without a chat app: %s", r.body)
			}
			if r := tn.call(t, http.MethodPatch, team+"/chatapp/status", owner, map[string]any{"webhook_url": hook.URL, "enabled": true}); r.status != 200 {
				t.Fatalf("set chat app: %d %s", r.status, r.body)
			}
			if r := tn.call(t, http.MethodGet, team+"/authz", owner, nil); r.json(t)["can_manage_slack"] != true {
				t.Errorf("can_manage_slack with a chat app: %s", r.body)
			}
			if r := tn.call(t, http.MethodPatch, team+"/slack/status", owner, map[string]bool{"is_active": false}); r.status != 200 {
				t.Fatalf("PATCH slack/status: %d %s", r.status, r.body)
			}
			if r := tn.call(t, http.MethodPost, team+"/slack/test", owner, nil); r.status != 200 {
				t.Errorf("POST slack/test: %d %s", r.status, r.body)
			}

			// Usage of stored data.
			if r := tn.putJSON(t, tn.key, uuid.NewString(), conformanceBatch()); r.status != 200 {
				t.Fatalf("PUT /events: %d %s", r.status, r.body)
			}
			tn.waitFlushed(t)
			var usage []struct {
				Monthly []struct {
					Month                          string
					Sessions, Events, Spans, Bytes int64
				} `json:"monthly"`
				MonthlyAppUsage []struct {
					MonthYear string `json:"month_year"`
					Sessions  int64  `json:"sessions"`
					Events    int64  `json:"events"`
					Spans     int64  `json:"spans"`
					BytesIn   int64  `json:"bytes_in"`
				} `json:"monthly_app_usage"`
			}
			if r := tn.call(t, http.MethodGet, team+"/usage", owner, nil); r.status != 200 || json.Unmarshal(r.body, &usage) != nil || len(usage) != 1 {
				t.Fatalf("usage: %d %s", r.status, r.body)
			}
			u := usage[0]
			if len(u.Monthly) != 1 || len(u.MonthlyAppUsage) != 12 {
				t.Fatalf("usage %+v", u)
			}
			cur, m := u.MonthlyAppUsage[11], u.Monthly[0]
			if cur.MonthYear != time.Now().UTC().Format("Jan 2006") || cur.Sessions != m.Sessions || cur.Events != m.Events ||
				cur.Spans != m.Spans || cur.BytesIn != m.Bytes || cur.Events != 5 || cur.Spans != 1 || cur.Sessions != 1 {
				t.Errorf("this month's monthly_app_usage %+v, monthly %+v; want 1 session, 5 events, 1 span", cur, m)
			}
			for _, earlier := range u.MonthlyAppUsage[:11] {
				if earlier.Sessions+earlier.Events+earlier.Spans+earlier.BytesIn != 0 {
					t.Errorf("a month without data counts something: %+v", earlier)
				}
			}

			// After a restart: everything as set; then the chat app is removed for good.
			read := func(tn *testNode) map[string]string {
				out := map[string]string{}
				for _, p := range []string{app + "/config", "/prefs/notifPrefs", team + "/slack"} {
					r := tn.call(t, http.MethodGet, p, owner, nil)
					if r.status != 200 {
						t.Fatalf("GET %s: %d %s", p, r.status, r.body)
					}
					out[p] = string(r.body)
				}
				return out
			}
			before := read(tn)
			if !strings.Contains(before[team+"/slack"], `"is_active":false`) || !strings.Contains(before["/prefs/notifPrefs"], `"daily_summary":false`) ||
				!strings.Contains(before[app+"/config"], `"log_min_severity":20`) {
				t.Fatalf("settings before the restart: %v", before)
			}
			tn = restartKeeping(t, backend, tn, withGitHub)
			if after := read(tn); !reflect.DeepEqual(after, before) {
				t.Errorf("settings after a restart:\n%v\nwant\n%v", after, before)
			}
			if r := tn.call(t, http.MethodDelete, team+"/slack", owner, nil); r.status != 200 {
				t.Fatalf("DELETE slack: %d %s", r.status, r.body)
			}
			tn = restartKeeping(t, backend, tn, withGitHub)
			if r := tn.call(t, http.MethodGet, team+"/slack", owner, nil); strings.TrimSpace(string(r.body)) != "null" {
				t.Errorf("GET slack after DELETE and a restart: %d %s", r.status, r.body)
			}
		})
	}
}
