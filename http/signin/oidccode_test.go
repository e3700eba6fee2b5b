package signin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/svc-dev/svc/http/signin"
	"github.com/svc-dev/svc/http/signin/signintest"
)

const redirectURL = "https://dash.example.com/auth/callback/google"

func newCodeClient(p *signintest.OIDC) *signin.OIDC {
	return &signin.OIDC{Issuer: p.URL(), ClientID: p.ClientID(), ClientSecret: p.ClientSecret(), RedirectURL: redirectURL}
}

// TestOIDCSignInCode: an authorization code is exchanged at the provider's token endpoint and
// the ID token of the answer is verified as an ID token sent by the browser is. The user's
// fault (a bad code, a token that does not verify) is ErrRejected; svc's settings and the
// provider's troubles are not.
func TestOIDCSignInCode(t *testing.T) {
	p := signintest.NewOIDC(t)
	ada := signin.Identity{Email: "ada@example.com", Name: "Ada Lovelace", Subject: "10769150350006150715113082367"}
	tests := []struct {
		name   string
		setup  func(code string) // makes code exchangeable, or breaks something
		code   string            // "" sends an empty code; default: the case's name
		client func(c *signin.OIDC)
		want   outcome
		wantID signin.Identity
		wantIn string // a part of the error
	}{
		{name: "success", setup: func(c string) { p.AddCode(c, redirectURL, nil) }, want: ok, wantID: ada},
		{name: "claims of the token", want: ok,
			setup: func(c string) {
				p.AddCode(c, redirectURL, map[string]any{"email": "grace@example.com", "name": "Grace"})
			},
			wantID: signin.Identity{Email: "grace@example.com", Name: "Grace", Subject: ada.Subject}},
		{name: "unknown code", want: rejected, wantIn: "invalid_grant"},
		{name: "empty code", code: "-", want: rejected},
		{name: "token for another audience", want: rejected,
			setup: func(c string) { p.AddCode(c, redirectURL, map[string]any{"aud": "someone-else"}) }},
		{name: "unverified email", want: rejected,
			setup: func(c string) { p.AddCode(c, redirectURL, map[string]any{"email_verified": false}) }},
		{name: "code issued for another redirect URI", want: failed, wantIn: "redirect_uri_mismatch",
			setup: func(c string) { p.AddCode(c, "https://elsewhere.example.com/auth/callback/google", nil) }},
		{name: "wrong client secret", want: failed, wantIn: "invalid_client",
			setup:  func(c string) { p.AddCode(c, redirectURL, nil) },
			client: func(c *signin.OIDC) { c.ClientSecret = "wrong" }},
		{name: "token endpoint failing", want: failed, wantIn: "503",
			setup: func(c string) { p.AddCode(c, redirectURL, nil); p.FailTokens(http.StatusServiceUnavailable) }},
		{name: "no client secret", want: failed, wantIn: "not configured",
			setup:  func(c string) { p.AddCode(c, redirectURL, nil) },
			client: func(c *signin.OIDC) { c.ClientSecret = "" }},
		{name: "no redirect URL", want: failed, wantIn: "not configured",
			setup:  func(c string) { p.AddCode(c, redirectURL, nil) },
			client: func(c *signin.OIDC) { c.RedirectURL = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer p.FailTokens(0)
			code := tc.name
			if tc.code == "-" {
				code = ""
			}
			if tc.setup != nil {
				tc.setup(code)
			}
			c := newCodeClient(p)
			if tc.client != nil {
				tc.client(c)
			}
			id, err := c.SignInCode(context.Background(), code)
			check(t, err, tc.want)
			if id != tc.wantID {
				t.Fatalf("identity %+v, want %+v", id, tc.wantID)
			}
			if err != nil && !strings.Contains(err.Error(), tc.wantIn) {
				t.Fatalf("error %q does not say %q", err, tc.wantIn)
			}
		})
	}
	t.Run("not configured is told apart", func(t *testing.T) {
		c := newCodeClient(p)
		c.ClientSecret = ""
		if c.CodeEnabled() {
			t.Fatal("CodeEnabled without a secret")
		}
		if _, err := c.SignInCode(context.Background(), "x"); !errors.Is(err, signin.ErrCodeNotConfigured) {
			t.Fatalf("err %v, want ErrCodeNotConfigured", err)
		}
		// ID tokens are still verified.
		if _, err := c.SignIn(context.Background(), p.Token(nil), ""); err != nil {
			t.Fatalf("ID token without a client secret: %v", err)
		}
	})
	t.Run("code used twice", func(t *testing.T) {
		c := newCodeClient(p)
		p.AddCode("once", redirectURL, nil)
		_, err := c.SignInCode(context.Background(), "once")
		check(t, err, ok)
		_, err = c.SignInCode(context.Background(), "once")
		check(t, err, rejected)
	})
	t.Run("provider down", func(t *testing.T) {
		down := signintest.NewOIDC(t)
		down.AddCode("c", redirectURL, nil)
		c := newCodeClient(down)
		down.Close()
		_, err := c.SignInCode(context.Background(), "c")
		check(t, err, failed)
	})
}

// TestFakeTokenEndpoint holds the fake to RFC 6749 §4.1.3 as a client without oauth2 sends it:
// client_secret_post, a form body, and the refusals a real provider answers.
func TestFakeTokenEndpoint(t *testing.T) {
	p := signintest.NewOIDC(t)
	post := func(form url.Values, contentType, basicID, basicSecret string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.URL()+"/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", contentType)
		if basicID != "" {
			req.SetBasicAuth(url.QueryEscape(basicID), url.QueryEscape(basicSecret))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatalf("answer is not JSON: %v", err)
		}
		if resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("Cache-Control %q, want no-store", resp.Header.Get("Cache-Control"))
		}
		return resp.StatusCode, v
	}
	grant := func(code string, extra url.Values) url.Values {
		f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURL}}
		for k, v := range extra {
			f[k] = v
		}
		return f
	}
	secretPost := url.Values{"client_id": {p.ClientID()}, "client_secret": {p.ClientSecret()}}
	const form = "application/x-www-form-urlencoded"
	tests := []struct {
		name          string
		code          string // made exchangeable first when not ""
		form          url.Values
		contentType   string
		basic         bool
		wantStatus    int
		wantError     string
		wantIDToken   bool
		codeStillGood bool
	}{
		{name: "client_secret_post", code: "c1", form: grant("c1", secretPost), contentType: form, wantStatus: 200, wantIDToken: true},
		{name: "client_secret_basic", code: "c2", form: grant("c2", nil), contentType: form, basic: true, wantStatus: 200, wantIDToken: true},
		{name: "JSON body", code: "c3", form: grant("c3", secretPost), contentType: "application/json", wantStatus: 400, wantError: "invalid_request", codeStillGood: true},
		{name: "two client authentications", code: "c4", form: grant("c4", secretPost), contentType: form, basic: true, wantStatus: 400, wantError: "invalid_request", codeStillGood: true},
		{name: "no client authentication", code: "c5", form: grant("c5", nil), contentType: form, wantStatus: 401, wantError: "invalid_client", codeStillGood: true},
		{name: "another grant type", code: "c6", form: grant("c6", url.Values{"grant_type": {"password"}, "client_id": secretPost["client_id"], "client_secret": secretPost["client_secret"]}),
			contentType: form, wantStatus: 400, wantError: "unsupported_grant_type", codeStillGood: true},
		{name: "unknown code", form: grant("nope", secretPost), contentType: form, wantStatus: 400, wantError: "invalid_grant"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.code != "" {
				p.AddCode(tc.code, redirectURL, nil)
			}
			id, secret := "", ""
			if tc.basic {
				id, secret = p.ClientID(), p.ClientSecret()
			}
			status, v := post(tc.form, tc.contentType, id, secret)
			if status != tc.wantStatus || (tc.wantError != "" && v["error"] != tc.wantError) {
				t.Fatalf("%d %v, want %d %q", status, v, tc.wantStatus, tc.wantError)
			}
			if tok, _ := v["id_token"].(string); (tok != "") != tc.wantIDToken || (tc.wantIDToken && (v["access_token"] == "" || v["token_type"] != "Bearer")) {
				t.Fatalf("answer %v", v)
			}
			if tc.code != "" {
				status, _ := post(grant(tc.code, secretPost), form, "", "")
				if (status == 200) != tc.codeStillGood {
					t.Fatalf("exchanging the code afterwards: %d, want it to work: %v", status, tc.codeStillGood)
				}
			}
		})
	}
}
