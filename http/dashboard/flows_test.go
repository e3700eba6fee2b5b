package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// refreshToken makes a session for user and returns its refresh token.
func (f *fixture) refreshToken(t *testing.T, user uuid.UUID) (string, string) {
	t.Helper()
	s := model.AuthSession{ID: uuid.New(), UserID: user, RefreshID: uuid.New(), CreatedAt: f.now}
	p, err := f.api.Tokens.Issue(user, s.ID, s.RefreshID)
	if err != nil {
		t.Fatal(err)
	}
	s.ExpiresAt = p.RefreshExpiresAt
	if err := f.api.Meta.CreateAuthSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return p.AccessToken, p.RefreshToken
}

func TestRefreshRotationAndSignOut(t *testing.T) {
	f := newFixture(t)
	access, refresh := f.refreshToken(t, f.users["owner"].ID)
	if code, b := f.call(t, http.MethodGet, "/auth/session", access, nil); code != 200 || !strings.Contains(string(b), f.users["owner"].Email) {
		t.Fatalf("session: %d %s", code, b)
	}
	code, b := f.call(t, http.MethodPost, "/auth/refresh", refresh, nil)
	if code != 200 {
		t.Fatalf("refresh: %d %s", code, b)
	}
	var pair struct{ AccessToken, RefreshToken string }
	var raw map[string]string
	_ = json.Unmarshal(b, &raw)
	pair.AccessToken, pair.RefreshToken = raw["access_token"], raw["refresh_token"]
	if pair.AccessToken == "" || pair.RefreshToken == "" || len(raw) != 2 {
		t.Fatalf("token pair %s", b)
	}
	// The old refresh token stops working; the new one works once.
	if code, _ := f.call(t, http.MethodPost, "/auth/refresh", refresh, nil); code != 401 {
		t.Fatalf("old refresh token: %d", code)
	}
	if code, _ := f.call(t, http.MethodGet, "/auth/session", pair.AccessToken, nil); code != 200 {
		t.Fatalf("new access token: %d", code)
	}
	// An access token is not a refresh token.
	if code, _ := f.call(t, http.MethodPost, "/auth/refresh", pair.AccessToken, nil); code != 401 {
		t.Fatalf("access token as refresh token: %d", code)
	}
	// Sign-out ends the session: its access tokens stop working at once.
	if code, b := f.call(t, http.MethodDelete, "/auth/signout", pair.RefreshToken, nil); code != 200 || !strings.Contains(string(b), `"ok":true`) {
		t.Fatalf("signout: %d %s", code, b)
	}
	if code, _ := f.call(t, http.MethodGet, "/auth/session", pair.AccessToken, nil); code != 401 {
		t.Fatalf("access token after signout: %d", code)
	}
	if code, _ := f.call(t, http.MethodPost, "/auth/refresh", pair.RefreshToken, nil); code != 401 {
		t.Fatalf("refresh after signout: %d", code)
	}
	// Cookies work as well as the header.
	_, refresh2 := f.refreshToken(t, f.users["admin"].ID)
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/auth/refresh", nil)
	req.AddCookie(&http.Cookie{Name: "refresh_token", Value: refresh2})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("refresh by cookie: %d", resp.StatusCode)
	}
	var accessCookie string
	for _, c := range resp.Cookies() {
		if c.Name == "access_token" {
			accessCookie = c.Value
		}
	}
	req, _ = http.NewRequest(http.MethodGet, f.srv.URL+"/auth/session", nil)
	req.AddCookie(&http.Cookie{Name: "access_token", Value: accessCookie})
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("session by cookie: %d", resp.StatusCode)
	}
}

func TestValidateInvite(t *testing.T) {
	f := newFixture(t)
	expired := model.Invite{ID: uuid.New(), TeamID: f.team.ID, Email: "late@example.com", Role: model.RoleViewer, InvitedBy: f.users["owner"].ID,
		CreatedAt: f.now.Add(-8 * 24 * time.Hour), UpdatedAt: f.now.Add(-8 * 24 * time.Hour), ExpiresAt: f.now.Add(-24 * time.Hour)}
	if err := f.api.Meta.CreateInvites(context.Background(), []model.Invite{expired}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		body any
		code int
	}{
		{map[string]string{"invite_id": f.invite.ID.String()}, 200},
		{map[string]string{"invite_id": uuid.NewString()}, 400},
		{map[string]string{"invite_id": expired.ID.String()}, 410},
		{map[string]string{"invite_id": "nope"}, 400},
		{nil, 400},
	}
	for _, c := range cases {
		code, b := f.call(t, http.MethodPost, "/auth/validateInvite", "", c.body)
		if code != c.code {
			t.Errorf("%v: %d %s, want %d", c.body, code, b, c.code)
		}
		if code == 200 && strings.TrimSpace(string(b)) != `{"valid":true}` {
			t.Errorf("body %s", b)
		}
	}
}

func TestMembersAndRoles(t *testing.T) {
	f := newFixture(t)
	team := "/teams/" + f.team.ID.String()
	steps := []struct {
		name   string
		who    string
		method string
		path   string
		body   any
		code   int
	}{
		{"admin cannot promote to owner", "admin", http.MethodPatch, "/members/" + f.users["viewer"].ID.String() + "/role", map[string]string{"role": "owner"}, 403},
		{"admin cannot change the owner", "admin", http.MethodPatch, "/members/" + f.users["owner"].ID.String() + "/role", map[string]string{"role": "viewer"}, 403},
		{"admin cannot remove the owner", "admin", http.MethodDelete, "/members/" + f.users["owner"].ID.String(), nil, 403},
		{"unknown role", "owner", http.MethodPatch, "/members/" + f.users["viewer"].ID.String() + "/role", map[string]string{"role": "god"}, 400},
		{"last owner cannot step down", "owner", http.MethodPatch, "/members/" + f.users["owner"].ID.String() + "/role", map[string]string{"role": "admin"}, 400},
		{"last owner cannot leave", "owner", http.MethodDelete, "/members/" + f.users["owner"].ID.String(), nil, 400},
		{"developer invites a viewer", "developer", http.MethodPost, "/invite", []map[string]string{{"email": "v@example.com", "role": "viewer"}}, 201},
		{"developer cannot invite an admin", "developer", http.MethodPost, "/invite", []map[string]string{{"email": "a@example.com", "role": "admin"}}, 403},
		{"bad email", "owner", http.MethodPost, "/invite", []map[string]string{{"email": "not an email", "role": "viewer"}}, 400},
		{"promote admin to owner", "owner", http.MethodPatch, "/members/" + f.users["admin"].ID.String() + "/role", map[string]string{"role": "owner"}, 200},
		{"now the first owner may step down", "owner", http.MethodPatch, "/members/" + f.users["owner"].ID.String() + "/role", map[string]string{"role": "admin"}, 200},
		{"admin removes a viewer", "owner", http.MethodDelete, "/members/" + f.users["viewer"].ID.String(), nil, 200},
		{"removed member loses access", "viewer", http.MethodGet, "/apps", nil, 403},
		{"bad team id", "owner", http.MethodGet, "/../teams/nope/apps", nil, 400},
	}
	for _, s := range steps {
		path := team + s.path
		if strings.HasPrefix(s.path, "/../") {
			path = strings.TrimPrefix(s.path, "/..")
		}
		if code, b := f.call(t, s.method, path, f.tokens[s.who], s.body); code != s.code {
			t.Fatalf("%s: %d %s, want %d", s.name, code, b, s.code)
		}
	}
}

func TestAppSettings(t *testing.T) {
	f := newFixture(t)
	app := "/apps/" + f.app.ID.String()
	owner := f.tokens["owner"]
	cases := []struct {
		name   string
		method string
		path   string
		body   any
		code   int
		want   string
	}{
		{"default retention", http.MethodGet, "/retention", nil, 200, `"retention":30`},
		{"retention too short", http.MethodPatch, "/retention", map[string]int{"retention": 29}, 400, "between 30 and 365"},
		{"retention too long", http.MethodPatch, "/retention", map[string]int{"retention": 366}, 400, "between 30 and 365"},
		{"retention set", http.MethodPatch, "/retention", map[string]int{"retention": 365}, 200, `"retention":365`},
		{"retention kept", http.MethodGet, "/retention", nil, 200, `"retention":365`},
		{"config bound", http.MethodPatch, "/config", map[string]any{"trace_sampling_rate": 101}, 400, "trace_sampling_rate"},
		{"config unknown member", http.MethodPatch, "/config", map[string]any{"nope": 1}, 400, "unknown field"},
		{"config set", http.MethodPatch, "/config", map[string]any{"max_events_in_batch": 500}, 200, `"max_events_in_batch":500`},
		{"config kept, others default", http.MethodGet, "/config", nil, 200, `"crash_timeline_duration":300`},
		{"thresholds default", http.MethodGet, "/thresholdPrefs", nil, 200, `"error_good_threshold":95`},
		{"thresholds caution above good", http.MethodPatch, "/thresholdPrefs", map[string]float64{"error_caution_threshold": 99}, 400, "must not exceed"},
		{"thresholds set", http.MethodPatch, "/thresholdPrefs", map[string]float64{"error_good_threshold": 99, "error_caution_threshold": 90}, 200, `"error_caution_threshold":90`},
		{"rename empty", http.MethodPatch, "/rename", map[string]string{"name": " "}, 400, "app name"},
		{"rename", http.MethodPatch, "/rename", map[string]string{"name": "Shop"}, 200, `"name":"Shop"`},
		{"unknown app", http.MethodGet, "/../" + uuid.NewString() + "/config", nil, 403, "not an app of your teams"},
		{"body over the limit", http.MethodPatch, "/rename", map[string]string{"name": strings.Repeat("x", 70<<10)}, 413, "exceeds the limit"},
		{"config body over the limit", http.MethodPatch, "/config", map[string]string{"http_urls": strings.Repeat("x", 300<<10)}, 413, "exceeds the limit"},
		{"severity outside its vocabulary", http.MethodGet, "/errorGroups?severity=%27%20OR%201%3D1%20--", nil, 400, "severity"},
		{"severity of the vocabulary", http.MethodGet, "/errorGroups?severity=fatal,unhandled,handled", nil, 200, "results"},
	}
	for _, c := range cases {
		path := app + c.path
		if strings.HasPrefix(c.path, "/../") {
			path = "/apps/" + strings.TrimPrefix(c.path, "/../")
		}
		code, b := f.call(t, c.method, path, owner, c.body)
		if code != c.code || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, code, b, c.code, c.want)
		}
	}
	// Short filter codes are deterministic: same filters in any order, same code.
	var codes []string
	for _, body := range []string{`{"filters":{"versions":["1"],"countries":["in"]}}`, `{"filters":{"countries":["in"],"versions":["1"]}}`} {
		var v any
		_ = json.Unmarshal([]byte(body), &v)
		code, b := f.call(t, http.MethodPost, app+"/shortFilters", owner, v)
		var out map[string]string
		_ = json.Unmarshal(b, &out)
		if code != 200 || len(out["filter_short_code"]) != 32 {
			t.Fatalf("short filter: %d %s", code, b)
		}
		codes = append(codes, out["filter_short_code"])
	}
	if codes[0] != codes[1] {
		t.Fatalf("codes differ: %v", codes)
	}
	stored, err := f.api.Meta.ShortFilter(context.Background(), f.app.ID, codes[0])
	if err != nil || !strings.Contains(string(stored.Filters), `"countries"`) {
		t.Fatalf("stored filter %+v %v", stored, err)
	}
	// Key rotation revokes the old key.
	old, _ := f.api.Meta.ActiveAPIKey(context.Background(), f.app.ID)
	code, b := f.call(t, http.MethodPatch, app+"/apiKey", owner, nil)
	if code != 200 || strings.Contains(string(b), old.Key) {
		t.Fatalf("rotate: %d %s", code, b)
	}
	if _, k, err := f.api.Meta.AppByAPIKey(context.Background(), old.Key); err != nil || !k.Revoked {
		t.Fatalf("old key not revoked: %+v %v", k, err)
	}
}

func TestChatApp(t *testing.T) {
	f := newFixture(t)
	team := "/teams/" + f.team.ID.String()
	if code, b := f.call(t, http.MethodPost, team+"/chatapp/test", f.tokens["owner"], nil); code != 200 {
		t.Fatalf("test message: %d %s", code, b)
	}
	select {
	case msg := <-f.posts:
		var v map[string]string
		if err := json.Unmarshal([]byte(msg), &v); err != nil || !strings.Contains(v["text"], f.team.Name) {
			t.Fatalf("webhook got %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the webhook received nothing")
	}
	if code, _ := f.call(t, http.MethodPatch, team+"/chatapp/status", f.tokens["owner"], map[string]any{"webhook_url": "ftp://x"}); code != 400 {
		t.Fatalf("bad url: %d", code)
	}
	f.webhook.Close() // the receiver is gone: the test message says so
	if code, b := f.call(t, http.MethodPost, team+"/chatapp/test", f.tokens["owner"], nil); code != 502 || !strings.Contains(string(b), "could not be reached") {
		t.Fatalf("unreachable webhook: %d %s", code, b)
	}
}

func TestRateLimits(t *testing.T) {
	f := newFixture(t)
	f.api.RatePerUser, f.api.RateSignInIP = 5, 3
	f.rebuild(t)
	var code int
	for i := 0; i < 6; i++ {
		code, _ = f.call(t, http.MethodGet, "/teams", f.tokens["viewer"], nil)
	}
	if code != 429 {
		t.Fatalf("6th request in a minute with a limit of 5: %d", code)
	}
	if code, _ := f.call(t, http.MethodGet, "/teams", f.tokens["admin"], nil); code != 200 {
		t.Fatalf("another user is not limited: %d", code)
	}
	for i := 0; i < 4; i++ {
		code, _ = f.call(t, http.MethodPost, "/auth/validateInvite", "", map[string]string{"invite_id": f.invite.ID.String()})
	}
	if code != 429 {
		t.Fatalf("4th invite validation with a limit of 3: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/teams", nil)
	req.Header.Set("Authorization", "Bearer "+f.tokens["viewer"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
}

// rebuild remounts the router after the API's settings changed.
func (f *fixture) rebuild(t *testing.T) {
	t.Helper()
	f.srv.Close()
	r := newRouter(f.api)
	f.router = r
	f.srv = newServer(t, r)
}
