package signintest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// OIDC is a fake OpenID Connect provider: GET /.well-known/openid-configuration and GET /jwks,
// and ID tokens signed RS256 with an RSA key made for the test. It serves no authorization or
// token endpoint: a sign-in test gets its ID token from Token, as the browser would from the
// provider. Tokens are signed with golang-jwt and the JWKS is written by hand from RFC 7517/7518,
// so they are checked by a library (go-oidc, go-jose) that shares no code with the fake.
type OIDC struct {
	t        testing.TB
	srv      *httptest.Server
	clientID string

	mu   sync.Mutex
	keys []signingKey // all are published; the last signs

	discoveryHits, keysHits atomic.Int64
}

type signingKey struct {
	kid  string
	priv *rsa.PrivateKey
}

// NewOIDC starts a fake provider with one signing key; it closes when t ends.
func NewOIDC(t testing.TB) *OIDC {
	t.Helper()
	o := &OIDC{t: t, clientID: randomHex(6) + ".apps.example.com"}
	o.RotateKey()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", o.discovery)
	mux.HandleFunc("GET /jwks", o.jwks)
	o.srv = httptest.NewServer(mux)
	t.Cleanup(o.srv.Close)
	return o
}

// URL is the issuer: the "iss" of its tokens and the base of discovery.
func (o *OIDC) URL() string { return o.srv.URL }

// ClientID is the default audience ("aud") of its tokens.
func (o *OIDC) ClientID() string { return o.clientID }

// Close stops the server now (to test an unreachable provider); it is safe to call twice.
func (o *OIDC) Close() { o.srv.Close() }

// DiscoveryRequests counts GET /.well-known/openid-configuration so far.
func (o *OIDC) DiscoveryRequests() int { return int(o.discoveryHits.Load()) }

// KeyRequests counts GET /jwks so far.
func (o *OIDC) KeyRequests() int { return int(o.keysHits.Load()) }

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
		"jwks_uri":                              o.URL() + "/jwks",
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"claims_supported":                      []string{"iss", "aud", "sub", "exp", "iat", "nonce", "email", "email_verified", "name"},
	})
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
