package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/signin"
	"github.com/svc-dev/svc/http/signin/signintest"
	"github.com/svc-dev/svc/model"
)

// signInFixture wires the fixture's API to fake GitHub and OIDC providers.
func signInFixture(t *testing.T) (*fixture, *signintest.GitHub, *signintest.OIDC) {
	f := newFixture(t)
	gh, idp := signintest.NewGitHub(t), signintest.NewOIDC(t)
	f.api.SignIn = Providers{
		GitHub: &signin.GitHub{ClientID: gh.ClientID(), ClientSecret: gh.ClientSecret(), OAuthURL: gh.URL(), APIURL: gh.URL()},
		OIDC:   &signin.OIDC{Issuer: idp.URL(), ClientID: idp.ClientID()},
	}
	return f, gh, idp
}

type signInResult struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	SessionID    string `json:"session_id"`
	UserID       string `json:"user_id"`
	OwnTeamID    string `json:"own_team_id"`
}

func TestSignInCodeHost(t *testing.T) {
	f, gh, _ := signInFixture(t)
	// An invite waits for this person: the first sign-in joins them to the team.
	inv := model.Invite{ID: uuid.New(), TeamID: f.team.ID, Email: "grace@example.com", Role: model.RoleDeveloper, InvitedBy: f.users["owner"].ID,
		CreatedAt: f.now, UpdatedAt: f.now, ExpiresAt: f.now.Add(model.InviteTTL)}
	if err := f.api.Meta.CreateInvites(context.Background(), []model.Invite{inv}); err != nil {
		t.Fatal(err)
	}
	gh.AddUser("code-1", signintest.GitHubUser{ID: 7, Login: "grace", Name: "Grace Hopper",
		Emails: []signintest.GitHubEmail{{Email: "old@example.com", Verified: true}, {Email: "Grace@example.com", Primary: true, Verified: true}}})
	code, b := f.call(t, http.MethodPost, "/auth/codehost", "", map[string]string{"type": "code", "state": "s", "code": "code-1"})
	if code != 200 {
		t.Fatalf("sign-in: %d %s", code, b)
	}
	var res signInResult
	if err := json.Unmarshal(b, &res); err != nil || res.AccessToken == "" || res.RefreshToken == "" || res.SessionID == "" || res.OwnTeamID == "" {
		t.Fatalf("sign-in result %s", b)
	}
	code, b = f.call(t, http.MethodGet, "/auth/session", res.AccessToken, nil)
	if code != 200 || !strings.Contains(string(b), `"name":"Grace Hopper"`) || !strings.Contains(string(b), res.OwnTeamID) {
		t.Fatalf("session: %d %s", code, b)
	}
	code, b = f.call(t, http.MethodGet, "/teams", res.AccessToken, nil)
	if code != 200 || !strings.Contains(string(b), f.team.ID.String()) || !strings.Contains(string(b), `"role":"developer"`) {
		t.Fatalf("the invite was not accepted: %s", b)
	}
	if _, err := f.api.Meta.Invite(context.Background(), inv.ID); err == nil {
		t.Error("accepted invite still listed")
	}
	// The second sign-in finds the same user and own team.
	gh.AddUser("code-2", signintest.GitHubUser{ID: 7, Login: "grace", Emails: []signintest.GitHubEmail{{Email: "grace@example.com", Primary: true, Verified: true}}})
	_, b = f.call(t, http.MethodPost, "/auth/codehost", "", map[string]string{"type": "code", "state": "s", "code": "code-2"})
	var again signInResult
	_ = json.Unmarshal(b, &again)
	if again.UserID != res.UserID || again.OwnTeamID != res.OwnTeamID || again.SessionID == res.SessionID {
		t.Fatalf("second sign-in: %s vs %+v", b, res)
	}
	for _, c := range []struct {
		name string
		body map[string]string
	}{
		{"bad code", map[string]string{"type": "code", "state": "s", "code": "nope"}},
		{"code used twice", map[string]string{"type": "code", "state": "s", "code": "code-1"}},
		{"wrong type", map[string]string{"type": "token", "state": "s", "code": "x"}},
		{"no code", map[string]string{"type": "code", "state": "s"}},
	} {
		if code, b := f.call(t, http.MethodPost, "/auth/codehost", "", c.body); code != 400 {
			t.Errorf("%s: %d %s, want 400", c.name, code, b)
		}
	}
}

func TestSignInIDP(t *testing.T) {
	f, _, idp := signInFixture(t)
	post := func(cred, nonce string) (int, []byte) {
		return f.call(t, http.MethodPost, "/auth/idp", "", map[string]string{"credential": cred, "state": "s", "nonce": nonce})
	}
	code, b := post(idp.Token(map[string]any{"email": "ada@example.com", "nonce": "n-1"}), "n-1")
	if code != 200 {
		t.Fatalf("sign-in: %d %s", code, b)
	}
	cases := []struct {
		name   string
		claims map[string]any
		nonce  string
	}{
		{"wrong audience", map[string]any{"aud": "someone-else"}, ""},
		{"expired", map[string]any{"exp": time.Now().Add(-time.Minute), "iat": time.Now().Add(-time.Hour)}, ""},
		{"wrong nonce", map[string]any{"nonce": "n-1"}, "n-2"},
		{"wrong issuer", map[string]any{"iss": "https://evil.example.com"}, ""},
		{"unverified email", map[string]any{"email_verified": false}, ""},
	}
	for _, c := range cases {
		if code, b := post(idp.Token(c.claims), c.nonce); code != 400 {
			t.Errorf("%s: %d %s, want 400", c.name, code, b)
		}
	}
	if code, b := post("not-a-jwt", ""); code != 400 {
		t.Errorf("garbage credential: %d %s", code, b)
	}
}
