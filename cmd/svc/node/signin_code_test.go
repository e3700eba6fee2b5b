package node

import (
	"net/http"
	"strings"
	"testing"

	"github.com/svc-dev/svc/http/signin/signintest"
)

// TestGoogleCodeSignIn: the reference dashboard's Google sign-in on a node of each store setup,
// with the settings as `svc serve` takes them: --oidc-client-secret turns on sign-in by
// authorization code, whose redirect URI is the dashboard's (--dashboard-url) callback. Without
// the secret the code is refused as not configured and ID tokens still sign in.
func TestGoogleCodeSignIn(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			idp := signintest.NewOIDC(t)
			tn := startNode(t, backend, func(c *Config) {
				c.OIDCIssuer, c.OIDCClientID, c.OIDCClientSecret = idp.URL(), idp.ClientID(), idp.ClientSecret()
			})
			redirect := tn.cfg.DashboardURL + "/auth/callback/google"
			steps := []struct {
				name     string
				body     map[string]string
				code     string // made exchangeable first
				want     int
				wantBody string
			}{
				{"init", map[string]string{"type": "init", "state": "st-1"}, "", 200, "google oauth init ack"},
				{"code", map[string]string{"type": "code", "state": "st-1", "code": "c-1"}, "c-1", 200, `"own_team_id"`},
				{"the state again", map[string]string{"type": "code", "state": "st-1", "code": "c-2"}, "c-2", 401, "state"},
				{"a state never started", map[string]string{"type": "code", "state": "st-9", "code": "c-3"}, "c-3", 401, "state"},
			}
			for _, s := range steps {
				if s.code != "" {
					idp.AddCode(s.code, redirect, map[string]any{"email": "frances@example.com", "name": "Frances Allen"})
				}
				r := tn.call(t, http.MethodPost, "/auth/google", "", s.body)
				if r.status != s.want || !strings.Contains(string(r.body), s.wantBody) {
					t.Fatalf("%s: %d %s, want %d with %q", s.name, r.status, r.body, s.want, s.wantBody)
				}
				if s.name == "code" {
					tok, _ := r.json(t)["access_token"].(string)
					if s := tn.call(t, http.MethodGet, "/auth/session", tok, nil); s.status != 200 || !strings.Contains(string(s.body), "frances@example.com") {
						t.Fatalf("session of the new user: %d %s", s.status, s.body)
					}
				}
			}

			tn = startNode(t, backend, func(c *Config) { c.OIDCIssuer, c.OIDCClientID = idp.URL(), idp.ClientID() })
			tn.call(t, http.MethodPost, "/auth/google", "", map[string]string{"type": "init", "state": "st-2"})
			idp.AddCode("c-4", redirect, nil)
			if r := tn.call(t, http.MethodPost, "/auth/google", "", map[string]string{"type": "code", "state": "st-2", "code": "c-4"}); r.status != 400 ||
				!strings.Contains(string(r.body), "not configured") {
				t.Fatalf("code without --oidc-client-secret: %d %s, want 400 saying it is not configured", r.status, r.body)
			}
			if r := tn.call(t, http.MethodPost, "/auth/google", "", map[string]string{"credential": idp.Token(nil)}); r.status != 200 {
				t.Fatalf("ID token without --oidc-client-secret: %d %s", r.status, r.body)
			}
		})
	}
}
