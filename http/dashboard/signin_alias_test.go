package dashboard

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/svc-dev/svc/http/signin/signintest"
)

// TestSignInGitHubAlias: POST /auth/github answers every sign-in body of POST /auth/codehost as
// it does (same status, same error, a session of the same user), and acknowledges the
// reference dashboard's {"type": "init"}.
func TestSignInGitHubAlias(t *testing.T) {
	f, gh, _ := signInFixture(t)
	account := signintest.GitHubUser{ID: 9, Login: "linus", Name: "Linus",
		Emails: []signintest.GitHubEmail{{Email: "linus@example.com", Primary: true, Verified: true}}}
	unverified := signintest.GitHubUser{ID: 10, Login: "anon", Emails: []signintest.GitHubEmail{{Email: "anon@example.com", Primary: true}}}
	cases := []struct {
		name  string
		setup func(code string) // makes code exchangeable at the fake GitHub
		body  map[string]string // "CODE" is replaced by a code of each path's own
		want  int
	}{
		{"good code", func(c string) { gh.AddUser(c, account) }, map[string]string{"type": "code", "state": "s", "code": "CODE"}, 200},
		{"good code without state", func(c string) { gh.AddUser(c, account) }, map[string]string{"type": "code", "code": "CODE"}, 200},
		{"unknown code", nil, map[string]string{"type": "code", "state": "s", "code": "CODE"}, 400},
		{"no verified email", func(c string) { gh.AddUser(c, unverified) }, map[string]string{"type": "code", "state": "s", "code": "CODE"}, 400},
		{"no code", nil, map[string]string{"type": "code", "state": "s"}, 400},
	}
	var users []string
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var bodies []string
			for _, path := range []string{"/auth/codehost", "/auth/github"} {
				code := tc.name + path
				if tc.setup != nil {
					tc.setup(code)
				}
				body := map[string]string{}
				for k, v := range tc.body {
					body[k] = strings.ReplaceAll(v, "CODE", code)
				}
				status, b := f.call(t, http.MethodPost, path, "", body)
				if status != tc.want {
					t.Fatalf("%s: %d %s, want %d", path, status, b, tc.want)
				}
				if status == 200 {
					var res signInResult
					if err := json.Unmarshal(b, &res); err != nil || res.AccessToken == "" || res.RefreshToken == "" || res.SessionID == "" || res.OwnTeamID == "" {
						t.Fatalf("%s: sign-in result %s", path, b)
					}
					users = append(users, res.UserID+" "+res.OwnTeamID)
					if code, s := f.call(t, http.MethodGet, "/auth/session", res.AccessToken, nil); code != 200 || !strings.Contains(string(s), "linus@example.com") {
						t.Fatalf("%s: the session does not work: %d %s", path, code, s)
					}
					continue
				}
				bodies = append(bodies, strings.ReplaceAll(string(b), code, "CODE"))
			}
			if len(bodies) == 2 && bodies[0] != bodies[1] {
				t.Errorf("answers differ: /auth/codehost %s, /auth/github %s", bodies[0], bodies[1])
			}
		})
	}
	for _, u := range users {
		if u != users[0] {
			t.Errorf("both paths must sign in the same user with the same own team: %v", users)
		}
	}

	t.Run("init", func(t *testing.T) {
		status, b := f.call(t, http.MethodPost, "/auth/github", "", map[string]string{"type": "init", "state": "eyJyYW5kb20iOiJhYmMiLCJwYXRoIjoiIn0"})
		if status != 200 || strings.TrimSpace(string(b)) != `{"ok":"github oauth init ack"}` {
			t.Errorf("init: %d %s", status, b)
		}
		for _, c := range []struct {
			name string
			body map[string]string
			want string
		}{
			{"init without state", map[string]string{"type": "init"}, "state is required"},
			{"no type", map[string]string{"state": "s", "code": "x"}, `type must be \"init\" or \"code\"`},
			{"unknown type", map[string]string{"type": "token", "state": "s", "code": "x"}, `type must be \"init\" or \"code\"`},
		} {
			if status, b := f.call(t, http.MethodPost, "/auth/github", "", c.body); status != 400 || !strings.Contains(string(b), c.want) {
				t.Errorf("%s: %d %s, want 400 %q", c.name, status, b, c.want)
			}
		}
	})

	t.Run("not configured", func(t *testing.T) {
		f := newFixture(t)
		f.api.SignIn = Providers{}
		for _, body := range []map[string]string{{"type": "init", "state": "s"}, {"type": "code", "state": "s", "code": "x"}} {
			status, b := f.call(t, http.MethodPost, "/auth/github", "", body)
			if status != 400 || !strings.Contains(string(b), "not configured") {
				t.Errorf("%v without GitHub settings: %d %s, want 400 naming the missing settings", body, status, b)
			}
		}
	})
}

// TestSignInGoogleAlias: POST /auth/google answers every body of POST /auth/idp as it does,
// acknowledges {"type": "init"}, and refuses an authorization code (it verifies ID tokens) with
// a 400 that says what to send.
func TestSignInGoogleAlias(t *testing.T) {
	f, _, idp := signInFixture(t)
	cases := []struct {
		name   string
		claims map[string]any
		nonce  string
		want   int
	}{
		{"good token", map[string]any{"email": "grace@example.com", "nonce": "n-1"}, "n-1", 200},
		{"good token, no nonce", map[string]any{"email": "grace@example.com"}, "", 200},
		{"wrong audience", map[string]any{"aud": "someone-else"}, "", 400},
		{"wrong nonce", map[string]any{"nonce": "n-1"}, "n-2", 400},
		{"unverified email", map[string]any{"email_verified": false}, "", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			token := idp.Token(tc.claims)
			var answers []string
			for _, path := range []string{"/auth/idp", "/auth/google"} {
				status, b := f.call(t, http.MethodPost, path, "", map[string]string{"credential": token, "state": "s", "nonce": tc.nonce})
				if status != tc.want {
					t.Fatalf("%s: %d %s, want %d", path, status, b, tc.want)
				}
				if status == 200 {
					var res signInResult
					if err := json.Unmarshal(b, &res); err != nil || res.AccessToken == "" || res.OwnTeamID == "" {
						t.Fatalf("%s: sign-in result %s", path, b)
					}
					answers = append(answers, res.UserID)
					continue
				}
				answers = append(answers, string(b))
			}
			if answers[0] != answers[1] {
				t.Errorf("answers differ: /auth/idp %s, /auth/google %s", answers[0], answers[1])
			}
		})
	}
	for _, c := range []struct {
		name string
		body map[string]string
		want int
		has  string
	}{
		{"init", map[string]string{"type": "init", "state": "s"}, 200, `{"ok":"google oauth init ack"}`},
		{"init without state", map[string]string{"type": "init"}, 400, "state is required"},
		{"authorization code", map[string]string{"type": "code", "state": "s", "code": "4/0Ab"}, 400, `send {\"credential\", \"nonce\"}`},
		{"unknown type", map[string]string{"type": "token", "state": "s"}, 400, `type must be \"init\" or \"code\"`},
		{"no credential", map[string]string{"state": "s"}, 400, "credential is required"},
	} {
		if status, b := f.call(t, http.MethodPost, "/auth/google", "", c.body); status != c.want || !strings.Contains(string(b), c.has) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, status, b, c.want, c.has)
		}
	}
	// A credential wins over a type: the body is /auth/idp's.
	status, b := f.call(t, http.MethodPost, "/auth/google", "", map[string]string{"type": "code", "credential": idp.Token(nil)})
	if status != 200 {
		t.Errorf("a credential with type code: %d %s, want 200", status, b)
	}
}
