// Package signintest runs fake identity providers that speak the real protocols over real HTTP,
// so sign-in code and the handlers above it are tested without reaching GitHub or Google: a
// GitHub (OAuth web flow token exchange, GET /user, GET /user/emails) and an OpenID Connect
// provider (discovery, JWKS, RS256 ID tokens, the authorization code grant at its token endpoint). Both are httptest servers on 127.0.0.1, closed
// when the test ends, and safe for concurrent use.
package signintest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// GitHubUser is an account of the fake GitHub.
type GitHubUser struct {
	ID     int64
	Login  string
	Name   string // "" is served as null, as GitHub does for accounts without a name
	Emails []GitHubEmail
}

// GitHubEmail is one entry of GET /user/emails.
type GitHubEmail struct {
	Email             string
	Primary, Verified bool
}

// GitHub is a fake github.com + api.github.com. Codes are single use, like GitHub's: a code
// exchanged once answers bad_verification_code the next time.
type GitHub struct {
	srv          *httptest.Server
	clientID     string
	clientSecret string

	mu     sync.Mutex
	codes  map[string]GitHubUser // OAuth code → account, until exchanged
	tokens map[string]GitHubUser // access token → account
}

// NewGitHub starts a fake GitHub with a random client id and secret; it closes when t ends.
func NewGitHub(t testing.TB) *GitHub {
	t.Helper()
	g := &GitHub{
		clientID:     "Iv1." + randomHex(8),
		clientSecret: randomHex(20),
		codes:        map[string]GitHubUser{},
		tokens:       map[string]GitHubUser{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login/oauth/access_token", g.accessToken)
	mux.HandleFunc("GET /user", g.user)
	mux.HandleFunc("GET /user/emails", g.emails)
	g.srv = httptest.NewServer(mux)
	t.Cleanup(g.srv.Close)
	return g
}

// URL is the server's base URL: use it as both OAuthURL and APIURL.
func (g *GitHub) URL() string { return g.srv.URL }

// ClientID is the OAuth app client id the fake expects.
func (g *GitHub) ClientID() string { return g.clientID }

// ClientSecret is the OAuth app client secret the fake expects.
func (g *GitHub) ClientSecret() string { return g.clientSecret }

// AddUser makes code exchangeable (once) for a token of account u.
func (g *GitHub) AddUser(code string, u GitHubUser) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.codes[code] = u
}

// Close stops the server now (to test an unreachable provider); it is safe to call twice.
func (g *GitHub) Close() { g.srv.Close() }

// accessToken is POST /login/oauth/access_token. GitHub reads the parameters from the query or
// the form body, answers 200 even for errors, and answers form-encoded unless asked for JSON.
func (g *GitHub) accessToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	reply := url.Values{}
	switch {
	case r.Form.Get("client_id") != g.clientID || r.Form.Get("client_secret") != g.clientSecret:
		reply.Set("error", "incorrect_client_credentials")
		reply.Set("error_description", "The client_id and/or client_secret passed are incorrect.")
		reply.Set("error_uri", "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#incorrect-client-credentials")
	default:
		g.mu.Lock()
		u, ok := g.codes[r.Form.Get("code")]
		delete(g.codes, r.Form.Get("code"))
		token := "gho_" + randomHex(18)
		if ok {
			g.tokens[token] = u
		}
		g.mu.Unlock()
		if !ok {
			reply.Set("error", "bad_verification_code")
			reply.Set("error_description", "The code passed is incorrect or expired.")
			reply.Set("error_uri", "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code")
			break
		}
		reply.Set("access_token", token)
		reply.Set("token_type", "bearer")
		reply.Set("scope", "user:email")
	}
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		obj := map[string]string{}
		for k := range reply {
			obj[k] = reply.Get(k)
		}
		writeJSON(w, http.StatusOK, obj)
		return
	}
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	_, _ = w.Write([]byte(reply.Encode()))
}

// account finds the token's account, answering GitHub's 401 when there is none.
func (g *GitHub) account(w http.ResponseWriter, r *http.Request) (GitHubUser, bool) {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		token, _ = strings.CutPrefix(auth, "token ")
	}
	g.mu.Lock()
	u, ok := g.tokens[token]
	g.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{
			"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401",
		})
	}
	return u, ok
}

// user is GET /user, with the fields GitHub always sends for a user.
func (g *GitHub) user(w http.ResponseWriter, r *http.Request) {
	u, ok := g.account(w, r)
	if !ok {
		return
	}
	var name any // null when unset
	if u.Name != "" {
		name = u.Name
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"login": u.Login, "id": u.ID, "node_id": "U_" + u.Login, "type": "User", "site_admin": false,
		"name": name, "email": nil, "html_url": "https://github.com/" + u.Login,
	})
}

// emails is GET /user/emails.
func (g *GitHub) emails(w http.ResponseWriter, r *http.Request) {
	u, ok := g.account(w, r)
	if !ok {
		return
	}
	list := make([]map[string]any, 0, len(u.Emails))
	for _, e := range u.Emails {
		list = append(list, map[string]any{
			"email": e.Email, "primary": e.Primary, "verified": e.Verified, "visibility": nil,
		})
	}
	writeJSON(w, http.StatusOK, list)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
