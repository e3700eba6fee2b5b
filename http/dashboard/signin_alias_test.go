package dashboard

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-dev/svc/http/signin"
	"github.com/svc-dev/svc/http/signin/signintest"
)

// googleRedirect is the redirect URI of the fixture's OpenID Connect client: the dashboard's
// origin and its Google callback.
const googleRedirect = "https://dash.example.com/auth/callback/google"

// twoStepFixture is signInFixture with what the reference dashboard's two-step sign-ins need:
// a state store on a clock the test moves, and the OpenID Connect client's secret and redirect
// URI for the authorization code.
func twoStepFixture(t *testing.T) (*fixture, *signintest.GitHub, *signintest.OIDC, *time.Time) {
	f, gh, idp := signInFixture(t)
	clock := time.Now()
	p := f.api.SignIn.(Providers)
	p.OIDC = &signin.OIDC{Issuer: idp.URL(), ClientID: idp.ClientID(), ClientSecret: idp.ClientSecret(), RedirectURL: googleRedirect}
	p.States = &signin.States{Now: func() time.Time { return clock }}
	f.api.SignIn = p
	return f, gh, idp, &clock
}

// TestSignInGitHubAlias: once the dashboard's {"type": "init"} recorded the state, POST
// /auth/github answers every sign-in body of POST /auth/codehost as it does (same status, same
// error, a session of the same user).
func TestSignInGitHubAlias(t *testing.T) {
	f, gh, _, _ := twoStepFixture(t)
	account := signintest.GitHubUser{ID: 9, Login: "linus", Name: "Linus",
		Emails: []signintest.GitHubEmail{{Email: "linus@example.com", Primary: true, Verified: true}}}
	unverified := signintest.GitHubUser{ID: 10, Login: "anon", Emails: []signintest.GitHubEmail{{Email: "anon@example.com", Primary: true}}}
	cases := []struct {
		name  string
		setup func(code string) // makes code exchangeable at the fake GitHub
		body  map[string]string // "CODE" is replaced by a code of each path's own
		want  int
	}{
		{"good code", func(c string) { gh.AddUser(c, account) }, map[string]string{"type": "code", "code": "CODE"}, 200},
		{"unknown code", nil, map[string]string{"type": "code", "code": "CODE"}, 400},
		{"no verified email", func(c string) { gh.AddUser(c, unverified) }, map[string]string{"type": "code", "code": "CODE"}, 400},
		{"no code", nil, map[string]string{"type": "code"}, 400},
	}
	var users []string
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var bodies []string
			for _, path := range []string{"/auth/codehost", "/auth/github"} {
				code, state := tc.name+path, "state of "+tc.name
				if tc.setup != nil {
					tc.setup(code)
				}
				body := map[string]string{"state": state}
				for k, v := range tc.body {
					body[k] = strings.ReplaceAll(v, "CODE", code)
				}
				if path == "/auth/github" {
					if status, b := f.call(t, http.MethodPost, path, "", map[string]string{"type": "init", "state": state}); status != 200 {
						t.Fatalf("init: %d %s", status, b)
					}
				}
				status, b := f.call(t, http.MethodPost, path, "", body)
				if status != tc.want {
					t.Fatalf("%s: %d %s, want %d", path, status, b, tc.want)
				}
				if status == 200 {
					res := signedIn(t, b)
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
			{"init with a huge state", map[string]string{"type": "init", "state": strings.Repeat("s", signin.MaxStateLen+1)}, "state is longer than"},
			{"code without state", map[string]string{"type": "code", "code": "x"}, "state is required"},
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
		f.api.SignIn = Providers{States: &signin.States{}}
		for _, body := range []map[string]string{{"type": "init", "state": "s"}, {"type": "code", "state": "s", "code": "x"}} {
			status, b := f.call(t, http.MethodPost, "/auth/github", "", body)
			if status != 400 || !strings.Contains(string(b), "not configured") {
				t.Errorf("%v without GitHub settings: %d %s, want 400 naming the missing settings", body, status, b)
			}
		}
	})
}

// TestSignInGoogleAlias: POST /auth/google answers every body of POST /auth/idp as it does, and
// acknowledges {"type": "init"}.
func TestSignInGoogleAlias(t *testing.T) {
	f, _, idp, _ := twoStepFixture(t)
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
					answers = append(answers, signedIn(t, b).UserID)
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
		{"code without state", map[string]string{"type": "code", "code": "4/0Ab"}, 400, "state is required"},
		{"code without code", map[string]string{"type": "code", "state": "s"}, 400, "code is required"},
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

// TestSignInTwoStepState: the code of a two-step sign-in is taken only with a state that an init
// of the same provider recorded on this server, once, within the state's lifetime. Every other
// state is 401 and the code never reaches the provider. GitHub and Google share the mechanism.
func TestSignInTwoStepState(t *testing.T) {
	account := signintest.GitHubUser{ID: 11, Login: "ken", Name: "Ken",
		Emails: []signintest.GitHubEmail{{Email: "ken@example.com", Primary: true, Verified: true}}}
	type step struct {
		init     string // "" none; else the provider whose init records state
		state    string
		code     bool // send {"type": "code"} with state and a code the provider accepts
		badCode  bool // ...with a code the provider refuses instead
		wait     time.Duration
		want     int
		wantBody string
	}
	cases := []struct {
		name  string
		steps []step // provider "" is the case's provider
	}{
		{"init then code", []step{{init: "-", state: "a"}, {code: true, state: "a", want: 200}}},
		{"no init", []step{{code: true, state: "a", want: 401, wantBody: "unknown, expired or already used state"}}},
		{"another state", []step{{init: "-", state: "a"}, {code: true, state: "b", want: 401}, {code: true, state: "a", want: 200}}},
		{"state used twice", []step{{init: "-", state: "a"}, {code: true, state: "a", want: 200}, {code: true, state: "a", want: 401}}},
		{"state of the other provider", []step{{init: "other", state: "a"}, {code: true, state: "a", want: 401}}},
		{"within the state's lifetime", []step{{init: "-", state: "a"}, {wait: 9 * time.Minute}, {code: true, state: "a", want: 200}}},
		{"expired state", []step{{init: "-", state: "a"}, {wait: 11 * time.Minute}, {code: true, state: "a", want: 401}}},
		{"a refused code uses the state up", []step{{init: "-", state: "a"}, {badCode: true, state: "a", want: 400},
			{code: true, state: "a", want: 401}}},
		{"two sign-ins at once", []step{{init: "-", state: "a"}, {init: "-", state: "b"}, {code: true, state: "b", want: 200},
			{code: true, state: "a", want: 200}}},
	}
	for _, provider := range []string{"github", "google"} {
		other := map[string]string{"github": "google", "google": "github"}[provider]
		for _, tc := range cases {
			t.Run(provider+"/"+tc.name, func(t *testing.T) {
				f, gh, idp, clock := twoStepFixture(t)
				for i, s := range tc.steps {
					*clock = clock.Add(s.wait)
					if s.init != "" {
						p := map[bool]string{true: provider, false: other}[s.init == "-"]
						if status, b := f.call(t, http.MethodPost, "/auth/"+p, "", map[string]string{"type": "init", "state": s.state}); status != 200 {
							t.Fatalf("step %d: init: %d %s", i, status, b)
						}
					}
					if !s.code && !s.badCode {
						continue
					}
					code := fmt.Sprintf("code-%d", i)
					tokenRequests := idp.TokenRequests()
					if s.code && provider == "github" {
						gh.AddUser(code, account)
					} else if s.code {
						idp.AddCode(code, googleRedirect, map[string]any{"email": "ken@example.com"})
					}
					status, b := f.call(t, http.MethodPost, "/auth/"+provider, "", map[string]string{"type": "code", "state": s.state, "code": code})
					if status != s.want || !strings.Contains(string(b), s.wantBody) {
						t.Fatalf("step %d: code: %d %s, want %d with %q", i, status, b, s.want, s.wantBody)
					}
					if status == 200 {
						signedIn(t, b)
					}
					if status == 401 && idp.TokenRequests() != tokenRequests {
						t.Fatalf("step %d: the code went to the provider with a state this server did not give out", i)
					}
				}
			})
		}
	}
}

// TestSignInGoogleCode: the reference dashboard's Google sign-in, init from the browser and
// then the provider's authorization code from its callback, exchanged by svc at the provider's
// token endpoint with the client secret.
func TestSignInGoogleCode(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(t *testing.T, f *fixture, idp *signintest.OIDC, code string)
		want     int
		wantBody string // a part of the answer
	}{
		{name: "good code", want: 200, setup: func(t *testing.T, _ *fixture, idp *signintest.OIDC, code string) {
			idp.AddCode(code, googleRedirect, map[string]any{"email": "barbara@example.com", "name": "Barbara Liskov"})
		}},
		{name: "unknown code", want: 400, wantBody: "invalid_grant"},
		{name: "unverified email", want: 400, wantBody: "not verified", setup: func(t *testing.T, _ *fixture, idp *signintest.OIDC, code string) {
			idp.AddCode(code, googleRedirect, map[string]any{"email_verified": false})
		}},
		{name: "token endpoint failing", want: 500, wantBody: "token endpoint", setup: func(t *testing.T, _ *fixture, idp *signintest.OIDC, code string) {
			idp.AddCode(code, googleRedirect, nil)
			idp.FailTokens(http.StatusServiceUnavailable)
		}},
		{name: "provider unreachable", want: 500, wantBody: "identity provider did not complete the sign-in",
			setup: func(t *testing.T, _ *fixture, idp *signintest.OIDC, _ string) { idp.Close() }},
		{name: "redirect URI of another site", want: 500, wantBody: "token endpoint", setup: func(t *testing.T, _ *fixture, idp *signintest.OIDC, code string) {
			idp.AddCode(code, "https://elsewhere.example.com/auth/callback/google", nil)
		}},
		{name: "wrong client secret", want: 500, wantBody: "token endpoint", setup: func(t *testing.T, f *fixture, idp *signintest.OIDC, code string) {
			idp.AddCode(code, googleRedirect, nil)
			p := f.api.SignIn.(Providers)
			p.OIDC = &signin.OIDC{Issuer: idp.URL(), ClientID: idp.ClientID(), ClientSecret: "wrong", RedirectURL: googleRedirect}
			f.api.SignIn = p
		}},
		{name: "no client secret", want: 400, wantBody: "not configured", setup: func(t *testing.T, f *fixture, idp *signintest.OIDC, code string) {
			idp.AddCode(code, googleRedirect, nil)
			p := f.api.SignIn.(Providers)
			p.OIDC = &signin.OIDC{Issuer: idp.URL(), ClientID: idp.ClientID(), RedirectURL: googleRedirect}
			f.api.SignIn = p
		}},
		{name: "no OpenID Connect settings", want: 400, wantBody: "not configured", setup: func(t *testing.T, f *fixture, _ *signintest.OIDC, _ string) {
			p := f.api.SignIn.(Providers)
			p.OIDC = nil
			f.api.SignIn = p
		}},
		{name: "no state store", want: 500, wantBody: "sign-in state", setup: func(t *testing.T, f *fixture, idp *signintest.OIDC, code string) {
			idp.AddCode(code, googleRedirect, nil)
			p := f.api.SignIn.(Providers)
			p.States = nil
			f.api.SignIn = p
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, _, idp, _ := twoStepFixture(t)
			const code, state = "4/0AeanS0b", "eyJyYW5kb20iOiI5ZjAiLCJwYXRoIjoiIn0"
			init := map[string]string{"type": "init", "state": state}
			if status, b := f.call(t, http.MethodPost, "/auth/google", "", init); status != 200 {
				t.Fatalf("init: %d %s", status, b)
			}
			if tc.setup != nil {
				tc.setup(t, f, idp, code)
			}
			resp, b := post(t, f, "/auth/google", map[string]string{"type": "code", "state": state, "code": code})
			if resp.StatusCode != tc.want || !strings.Contains(string(b), tc.wantBody) {
				t.Fatalf("code: %d %s, want %d with %q", resp.StatusCode, b, tc.want, tc.wantBody)
			}
			if resp.StatusCode != 200 {
				var e struct{ Error string }
				if json.Unmarshal(b, &e) != nil || e.Error == "" {
					t.Fatalf("failure without an {error}: %s", b)
				}
				return
			}
			res := signedIn(t, b)
			checkTokens(t, resp, res)
			// The user and their own team exist, and the session is theirs.
			u, err := f.api.Meta.UserByEmail(context.Background(), "barbara@example.com")
			if err != nil || u.ID.String() != res.UserID || u.Name != "Barbara Liskov" {
				t.Fatalf("user %+v, %v; answer %+v", u, err, res)
			}
			team, err := f.api.Meta.OwnTeam(context.Background(), u.ID)
			if err != nil || team.ID.String() != res.OwnTeamID {
				t.Fatalf("own team %+v, %v; answer %s", team, err, res.OwnTeamID)
			}
			if status, s := f.call(t, http.MethodGet, "/auth/session", res.AccessToken, nil); status != 200 || !strings.Contains(string(s), res.OwnTeamID) {
				t.Fatalf("session: %d %s", status, s)
			}
			// Signing in again finds the same user and team.
			f.call(t, http.MethodPost, "/auth/google", "", map[string]string{"type": "init", "state": state + "2"})
			idp.AddCode(code+"2", googleRedirect, map[string]any{"email": "barbara@example.com"})
			status, b := f.call(t, http.MethodPost, "/auth/google", "", map[string]string{"type": "code", "state": state + "2", "code": code + "2"})
			if again := signedIn(t, b); status != 200 || again.UserID != res.UserID || again.OwnTeamID != res.OwnTeamID || again.SessionID == res.SessionID {
				t.Fatalf("second sign-in: %d %s, first %+v", status, b, res)
			}
		})
	}

	t.Run("ID tokens without a client secret", func(t *testing.T) {
		f, _, idp := signInFixture(t) // no client secret
		p := f.api.SignIn.(Providers)
		p.States = &signin.States{}
		f.api.SignIn = p
		if status, b := f.call(t, http.MethodPost, "/auth/google", "", map[string]string{"credential": idp.Token(nil)}); status != 200 {
			t.Fatalf("ID token: %d %s", status, b)
		}
		f.call(t, http.MethodPost, "/auth/google", "", map[string]string{"type": "init", "state": "s"})
		status, b := f.call(t, http.MethodPost, "/auth/google", "", map[string]string{"type": "code", "state": "s", "code": "c"})
		if status != 400 || !strings.Contains(string(b), "authorization code of the identity provider is not configured") ||
			!strings.Contains(string(b), "POST /auth/idp") {
			t.Fatalf("code without a client secret: %d %s, want 400 saying so and what works", status, b)
		}
	})
}

// signedIn reads a sign-in answer and fails unless it has every member.
func signedIn(t *testing.T, b []byte) signInResult {
	t.Helper()
	var res signInResult
	if err := json.Unmarshal(b, &res); err != nil || res.AccessToken == "" || res.RefreshToken == "" || res.SessionID == "" ||
		res.UserID == "" || res.OwnTeamID == "" {
		t.Fatalf("sign-in answer %s", b)
	}
	return res
}

// post sends a JSON body without credentials and returns the response (its headers) and body.
func post(t *testing.T, f *fixture, path string, body any) (*http.Response, []byte) {
	t.Helper()
	js, _ := json.Marshal(body)
	resp, err := http.Post(f.srv.URL+path, "application/json; charset=utf-8", bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp, buf.Bytes()
}

// checkTokens: both tokens carry a numeric exp in the future (the reference dashboard sets its
// cookies' Max-Age from them), the access token's session is the answer's, and the cookies set
// carry the same tokens with a positive Max-Age.
func checkTokens(t *testing.T, resp *http.Response, res signInResult) {
	t.Helper()
	now := time.Now().Unix()
	for name, tok := range map[string]string{"access_token": res.AccessToken, "refresh_token": res.RefreshToken} {
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			t.Fatalf("%s is not a JWT: %s", name, tok)
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			t.Fatalf("%s payload: %v", name, err)
		}
		var claims map[string]any
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.UseNumber()
		if err := dec.Decode(&claims); err != nil {
			t.Fatalf("%s payload %s: %v", name, payload, err)
		}
		exp, ok := claims["exp"].(json.Number)
		if !ok {
			t.Fatalf("%s exp is %T %v, want a number", name, claims["exp"], claims["exp"])
		}
		if n, err := exp.Int64(); err != nil || n <= now {
			t.Fatalf("%s exp %s, want whole seconds after now (%d)", name, exp, now)
		}
		if name == "access_token" && claims["jti"] != nil && claims["jti"] != res.SessionID {
			t.Errorf("access token jti %v, session %s", claims["jti"], res.SessionID)
		}
		var cookie *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == name {
				cookie = c
			}
		}
		if cookie == nil || cookie.Value != tok || cookie.MaxAge <= 0 || !cookie.HttpOnly || cookie.Path != "/" {
			t.Errorf("%s cookie %+v, want the token, HttpOnly, path /, a positive Max-Age", name, cookie)
		}
	}
}
