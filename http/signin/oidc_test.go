package signin_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-dev/svc/http/signin"
	"github.com/svc-dev/svc/http/signin/signintest"
)

func newOIDCClient(p *signintest.OIDC) *signin.OIDC {
	return &signin.OIDC{Issuer: p.URL(), ClientID: p.ClientID()}
}

func TestOIDCSignIn(t *testing.T) {
	p := signintest.NewOIDC(t)
	other := signintest.NewOIDC(t) // another provider's key, same kid shape
	hashed := sha256.Sum256([]byte("raw-nonce"))
	ada := signin.Identity{Email: "ada@example.com", Name: "Ada Lovelace", Subject: "10769150350006150715113082367"}
	now := time.Now()

	tests := []struct {
		name       string
		credential func() string
		nonce      string
		now        func() time.Time // the verifier's clock; nil: real time
		want       outcome
		wantID     signin.Identity
	}{
		{name: "success", credential: func() string { return p.Token(nil) }, want: ok, wantID: ada},
		{name: "audience list holding the client id", want: ok, wantID: ada,
			credential: func() string { return p.Token(map[string]any{"aud": []string{"other", p.ClientID()}}) }},
		{name: "name falls back to email local part", want: ok,
			wantID:     signin.Identity{Email: "ada@example.com", Name: "ada", Subject: ada.Subject},
			credential: func() string { return p.Token(map[string]any{"name": nil}) }},
		{name: "wrong audience", want: rejected,
			credential: func() string { return p.Token(map[string]any{"aud": "someone-else"}) }},
		{name: "expired", want: rejected,
			credential: func() string {
				return p.Token(map[string]any{"iat": now.Add(-2 * time.Hour), "exp": now.Add(-time.Minute)})
			}},
		{name: "expired by the verifier's clock", want: rejected, now: func() time.Time { return now.Add(2 * time.Hour) },
			credential: func() string { return p.Token(nil) }},
		{name: "valid by the verifier's clock", want: ok, wantID: ada, now: func() time.Time { return now.Add(-2 * time.Hour) },
			credential: func() string {
				return p.Token(map[string]any{"iat": now.Add(-3 * time.Hour), "exp": now.Add(-time.Hour)})
			}},
		{name: "no exp", want: rejected, credential: func() string { return p.Token(map[string]any{"exp": nil}) }},
		{name: "wrong issuer", want: rejected,
			credential: func() string { return p.Token(map[string]any{"iss": "https://accounts.google.com"}) }},
		{name: "signed by another key", want: rejected,
			credential: func() string { return other.Token(map[string]any{"iss": p.URL(), "aud": p.ClientID()}) }},
		{name: "payload changed after signing", want: rejected, credential: func() string {
			parts := strings.Split(p.Token(nil), ".")
			forged := strings.Split(p.Token(map[string]any{"email": "eve@example.com"}), ".")
			return parts[0] + "." + forged[1] + "." + parts[2]
		}},
		{name: "alg none", want: rejected, credential: func() string {
			parts := strings.Split(p.Token(nil), ".")
			return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
		}},
		{name: "not a JWT", want: rejected, credential: func() string { return "not-a-jwt" }},
		{name: "empty credential", want: rejected, credential: func() string { return "" }},
		{name: "nonce equal", nonce: "n-123", want: ok, wantID: ada,
			credential: func() string { return p.Token(map[string]any{"nonce": "n-123"}) }},
		{name: "nonce as SHA-256 hex", nonce: "raw-nonce", want: ok, wantID: ada,
			credential: func() string { return p.Token(map[string]any{"nonce": hex.EncodeToString(hashed[:])}) }},
		{name: "nonce as uppercase SHA-256 hex", nonce: "raw-nonce", want: rejected,
			credential: func() string {
				return p.Token(map[string]any{"nonce": strings.ToUpper(hex.EncodeToString(hashed[:]))})
			}},
		{name: "wrong nonce", nonce: "n-123", want: rejected,
			credential: func() string { return p.Token(map[string]any{"nonce": "n-456"}) }},
		{name: "nonce sent, token has none", nonce: "n-123", want: rejected,
			credential: func() string { return p.Token(nil) }},
		{name: "email_verified false", want: rejected,
			credential: func() string { return p.Token(map[string]any{"email_verified": false}) }},
		{name: `email_verified "false"`, want: rejected,
			credential: func() string { return p.Token(map[string]any{"email_verified": "false"}) }},
		{name: `email_verified "true"`, want: ok, wantID: ada,
			credential: func() string { return p.Token(map[string]any{"email_verified": "true"}) }},
		{name: "email_verified absent", want: ok, wantID: ada,
			credential: func() string { return p.Token(map[string]any{"email_verified": nil}) }},
		{name: "no email", want: rejected, credential: func() string { return p.Token(map[string]any{"email": nil}) }},
		{name: "no sub", want: rejected, credential: func() string { return p.Token(map[string]any{"sub": nil}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newOIDCClient(p)
			c.Now = tc.now
			id, err := c.SignIn(context.Background(), tc.credential(), tc.nonce)
			check(t, err, tc.want)
			if id != tc.wantID {
				t.Fatalf("identity %+v, want %+v", id, tc.wantID)
			}
		})
	}
}

// TestOIDCKeyRotation: discovery runs once; a token naming a key id not seen yet makes go-oidc
// fetch the keys again, and earlier keys keep verifying without another fetch.
func TestOIDCKeyRotation(t *testing.T) {
	p := signintest.NewOIDC(t)
	c := newOIDCClient(p)
	ctx := context.Background()
	oldToken := p.Token(nil)
	step := func(name, token string, wantKeyRequests int) {
		t.Helper()
		if _, err := c.SignIn(ctx, token, ""); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := p.KeyRequests(); got != wantKeyRequests {
			t.Fatalf("%s: %d key requests, want %d", name, got, wantKeyRequests)
		}
	}
	step("first key", oldToken, 1)
	step("first key again, cached", oldToken, 1)
	p.RotateKey()
	step("new key id", p.Token(nil), 2)
	step("new key id again, cached", p.Token(nil), 2)
	step("old key still published", oldToken, 2)
	if got := p.DiscoveryRequests(); got != 1 {
		t.Fatalf("%d discovery requests, want 1", got)
	}
}

// TestOIDCProviderDown: a provider that cannot be reached is an outage, never ErrRejected, and
// keys already fetched keep working while it is down.
func TestOIDCProviderDown(t *testing.T) {
	ctx := context.Background()
	t.Run("before discovery", func(t *testing.T) {
		p := signintest.NewOIDC(t)
		token := p.Token(nil)
		p.Close()
		_, err := newOIDCClient(p).SignIn(ctx, token, "")
		check(t, err, failed)
	})
	t.Run("key refetch", func(t *testing.T) {
		p := signintest.NewOIDC(t)
		c := newOIDCClient(p)
		oldToken := p.Token(nil)
		if _, err := c.SignIn(ctx, oldToken, ""); err != nil {
			t.Fatal(err)
		}
		p.RotateKey()
		newToken := p.Token(nil)
		p.Close()
		_, err := c.SignIn(ctx, newToken, "")
		check(t, err, failed)
		_, err = c.SignIn(ctx, oldToken, "")
		check(t, err, ok)
	})
	t.Run("discovery retried after a failure", func(t *testing.T) {
		p := signintest.NewOIDC(t)
		var up atomic.Bool
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if !up.Load() {
				http.Error(w, "unavailable", http.StatusServiceUnavailable)
				return
			}
			// The keys may live on another host, as Google's do.
			fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q}`, srv.URL, p.URL()+"/jwks")
		}))
		defer srv.Close()
		c := &signin.OIDC{Issuer: srv.URL, ClientID: p.ClientID()}
		token := p.Token(map[string]any{"iss": srv.URL})
		_, err := c.SignIn(ctx, token, "")
		check(t, err, failed)
		up.Store(true)
		_, err = c.SignIn(ctx, token, "")
		check(t, err, ok)
	})
}

// TestOIDCBrokenProvider: discovery or keys that are wrong are an outage, not ErrRejected.
func TestOIDCBrokenProvider(t *testing.T) {
	p := signintest.NewOIDC(t)
	tests := []struct {
		name      string
		discovery func(issuer string) string
		keys      string
		keyStatus int
	}{
		{name: "JWKS answers 500", keys: `{}`, keyStatus: 500,
			discovery: func(iss string) string { return fmt.Sprintf(`{"issuer":%q,"jwks_uri":%q}`, iss, iss+"/jwks") }},
		{name: "JWKS not JSON", keys: `<html>`, keyStatus: 200,
			discovery: func(iss string) string { return fmt.Sprintf(`{"issuer":%q,"jwks_uri":%q}`, iss, iss+"/jwks") }},
		{name: "discovery names another issuer",
			discovery: func(iss string) string {
				return fmt.Sprintf(`{"issuer":"https://elsewhere.example","jwks_uri":%q}`, iss+"/jwks")
			}},
		{name: "discovery without jwks_uri", discovery: func(iss string) string { return fmt.Sprintf(`{"issuer":%q}`, iss) }},
		{name: "discovery not JSON", discovery: func(string) string { return "<html>" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var srv *httptest.Server
			mux := http.NewServeMux()
			mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprint(w, tc.discovery(srv.URL))
			})
			mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.keyStatus)
				fmt.Fprint(w, tc.keys)
			})
			srv = httptest.NewServer(mux)
			defer srv.Close()
			c := &signin.OIDC{Issuer: srv.URL, ClientID: p.ClientID()}
			_, err := c.SignIn(context.Background(), p.Token(map[string]any{"iss": srv.URL}), "")
			check(t, err, failed)
		})
	}
}

// TestOIDCConcurrentFirstUse: sign-ins racing on a fresh client share one discovery.
func TestOIDCConcurrentFirstUse(t *testing.T) {
	p := signintest.NewOIDC(t)
	c := newOIDCClient(p)
	token := p.Token(nil)
	const n = 8
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := c.SignIn(context.Background(), token, "")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		check(t, err, ok)
	}
	if got := p.DiscoveryRequests(); got != 1 {
		t.Fatalf("%d discovery requests, want 1", got)
	}
}

func TestOIDCNotConfigured(t *testing.T) {
	p := signintest.NewOIDC(t)
	_, err := (&signin.OIDC{Issuer: p.URL()}).SignIn(context.Background(), p.Token(nil), "")
	check(t, err, failed)
}

// BenchmarkOIDCSignIn: one verification with discovery done and keys cached (the steady state).
func BenchmarkOIDCSignIn(b *testing.B) {
	p := signintest.NewOIDC(b)
	c := &signin.OIDC{Issuer: p.URL(), ClientID: p.ClientID()}
	token := p.Token(nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.SignIn(ctx, token, ""); err != nil {
			b.Fatal(err)
		}
	}
}
