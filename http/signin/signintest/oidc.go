package signintest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"math/big"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// OIDC is a fake OpenID Connect provider: GET /.well-known/openid-configuration, GET /jwks,
// POST /token, and ID tokens signed RS256 with an RSA key made for the test. It serves no
// authorization endpoint (no browser): a test gets an ID token from Token, as the browser would
// from the provider, or makes a code with AddCode, as the provider would hand the browser one,
// and the code is exchanged at POST /token as RFC 6749 §4.1.3 says. Tokens are signed with
// golang-jwt and the JWKS is written by hand from RFC 7517/7518, so they are checked by a library
// (go-oidc, go-jose) that shares no code with the fake.
type OIDC struct {
	t            testing.TB
	srv          *httptest.Server
	clientID     string
	clientSecret string

	mu        sync.Mutex
	keys      []signingKey         // all are published; the last signs
	codes     map[string]codeGrant // authorization code → what it is exchanged for, until exchanged
	failToken int                  // not 0: POST /token answers this status

	discoveryHits, keysHits, tokenHits atomic.Int64
}

// codeGrant is what an authorization code stands for.
type codeGrant struct {
	redirectURI, idToken string
}

type signingKey struct {
	kid  string
	priv *rsa.PrivateKey
}

// NewOIDC starts a fake provider with one signing key; it closes when t ends.
func NewOIDC(t testing.TB) *OIDC {
	t.Helper()
	o := &OIDC{t: t, clientID: randomHex(6) + ".apps.example.com", clientSecret: "GOCSPX-" + randomHex(14),
		codes: map[string]codeGrant{}}
	o.RotateKey()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", o.discovery)
	mux.HandleFunc("GET /jwks", o.jwks)
	mux.HandleFunc("POST /token", o.token)
	o.srv = httptest.NewServer(mux)
	t.Cleanup(o.srv.Close)
	return o
}

// URL is the issuer: the "iss" of its tokens and the base of discovery.
func (o *OIDC) URL() string { return o.srv.URL }

// ClientID is the default audience ("aud") of its tokens.
func (o *OIDC) ClientID() string { return o.clientID }

// ClientSecret is the secret the token endpoint expects of ClientID.
func (o *OIDC) ClientSecret() string { return o.clientSecret }

// Close stops the server now (to test an unreachable provider); it is safe to call twice.
func (o *OIDC) Close() { o.srv.Close() }

// DiscoveryRequests counts GET /.well-known/openid-configuration so far.
func (o *OIDC) DiscoveryRequests() int { return int(o.discoveryHits.Load()) }

// KeyRequests counts GET /jwks so far.
func (o *OIDC) KeyRequests() int { return int(o.keysHits.Load()) }

// TokenRequests counts POST /token so far.
func (o *OIDC) TokenRequests() int { return int(o.tokenHits.Load()) }

// AddCode makes code exchangeable, once, at POST /token for an ID token with claims (as Token
// takes them), when the exchange names redirectURI: the redirect_uri the browser was sent to
// the provider with. Call it from the test's goroutine (it may Fatal).
func (o *OIDC) AddCode(code, redirectURI string, claims map[string]any) {
	o.t.Helper()
	tok := o.Token(claims)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.codes[code] = codeGrant{redirectURI: redirectURI, idToken: tok}
}

// FailTokens makes POST /token answer status with a JSON error body from now on, as a
// provider in trouble does; 0 makes it work again.
func (o *OIDC) FailTokens(status int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failToken = status
}

// RotateKey makes a new RSA key with a new key id. Later tokens are signed with it; the JWKS
// publishes it beside the earlier keys, as Google does while it rotates.
func (o *OIDC) RotateKey() {
	o.t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		o.t.Fatalf("signintest: generating RSA key: %v", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.keys = append(o.keys, signingKey{kid: randomHex(8), priv: priv})
}

// Token signs an RS256 ID token (header kid = the current key). Defaults: iss = URL, aud =
// ClientID, sub "10769150350006150715113082367", email "ada@example.com", email_verified true,
// name "Ada Lovelace", iat now, exp in one hour. claims override them; a nil value removes one; a
// time.Time becomes seconds since the epoch. Call it from the test's goroutine (it may Fatal).
func (o *OIDC) Token(claims map[string]any) string {
	o.t.Helper()
	now := time.Now()
	mc := jwt.MapClaims{
		"iss": o.URL(), "aud": o.clientID, "sub": "10769150350006150715113082367",
		"email": "ada@example.com", "email_verified": true, "name": "Ada Lovelace",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	for k, v := range claims {
		switch v := v.(type) {
		case nil:
			delete(mc, k)
		case time.Time:
			mc[k] = v.Unix()
		default:
			mc[k] = v
		}
	}
	o.mu.Lock()
	key := o.keys[len(o.keys)-1]
	o.mu.Unlock()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, mc)
	tok.Header["kid"] = key.kid
	s, err := tok.SignedString(key.priv)
	if err != nil {
		o.t.Fatalf("signintest: signing ID token: %v", err)
	}
	return s
}

// discovery serves the provider metadata go-oidc reads (OpenID Connect Discovery 1.0 §3).
func (o *OIDC) discovery(w http.ResponseWriter, _ *http.Request) {
	o.discoveryHits.Add(1)
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                o.URL(),
		"authorization_endpoint":                o.URL() + "/authorize",
		"token_endpoint":                        o.URL() + "/token",
		"jwks_uri":                              o.URL() + "/jwks",
		"response_types_supported":              []string{"code", "id_token"},
		"grant_types_supported":                 []string{"authorization_code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic"},
		"claims_supported":                      []string{"iss", "aud", "sub", "exp", "iat", "nonce", "email", "email_verified", "name"},
	})
}

// token is POST /token, the authorization code grant of RFC 6749 §4.1.3: a form-encoded body
// with grant_type=authorization_code, code and redirect_uri; the client authenticates with HTTP
// Basic (client_secret_basic, id and secret form-encoded first, §2.3.1) or with client_id and
// client_secret in the body (client_secret_post), not both. Errors are §5.2's JSON; a
// redirect_uri other than the code's is Google's redirect_uri_mismatch.
func (o *OIDC) token(w http.ResponseWriter, r *http.Request) {
	o.tokenHits.Add(1)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	fail := func(status int, code, desc string) {
		writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
	}
	o.mu.Lock()
	failStatus := o.failToken
	o.mu.Unlock()
	if failStatus != 0 {
		fail(failStatus, "temporarily_unavailable", "the token endpoint is failing (signintest.FailTokens)")
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		fail(http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	form := r.PostForm
	id, secret, basic := r.BasicAuth()
	if basic {
		if form.Has("client_secret") {
			fail(http.StatusBadRequest, "invalid_request", "more than one client authentication method")
			return
		}
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	if id != o.clientID || secret != o.clientSecret {
		if basic {
			w.Header().Set("WWW-Authenticate", `Basic realm="token"`)
		}
		fail(http.StatusUnauthorized, "invalid_client", "The OAuth client was not found or its secret is wrong.")
		return
	}
	if form.Get("grant_type") != "authorization_code" {
		fail(http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type: "+form.Get("grant_type"))
		return
	}
	o.mu.Lock()
	grant, ok := o.codes[form.Get("code")]
	delete(o.codes, form.Get("code"))
	o.mu.Unlock()
	switch {
	case !ok:
		fail(http.StatusBadRequest, "invalid_grant", "Malformed auth code.")
	case form.Get("redirect_uri") != grant.redirectURI:
		fail(http.StatusBadRequest, "redirect_uri_mismatch", "Bad Request")
	default:
		writeJSON(w, http.StatusOK, map[string]any{
			"access_token": "ya29." + randomHex(24), "expires_in": 3599, "token_type": "Bearer",
			"scope":    "openid https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile",
			"id_token": grant.idToken,
		})
	}
}

// jwks serves the public keys as a JWK Set: n and e are unsigned big-endian base64url without
// padding (RFC 7518 §6.3.1).
func (o *OIDC) jwks(w http.ResponseWriter, _ *http.Request) {
	o.keysHits.Add(1)
	o.mu.Lock()
	keys := make([]map[string]string, 0, len(o.keys))
	for _, k := range o.keys {
		pub := k.priv.PublicKey
		keys = append(keys, map[string]string{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": k.kid,
			"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
		})
	}
	o.mu.Unlock()
	w.Header().Set("Cache-Control", "public, max-age=3600")
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}
