package signin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// OIDC verifies OpenID Connect ID tokens (Google's "credential" by default) with go-oidc:
// signature against the provider's published keys, issuer, audience == ClientID, expiry. svc
// checks nothing of the JWT by hand; it only adds the nonce and email rules on top.
//
// With ClientSecret and RedirectURL it also signs in with an authorization code (SignInCode):
// the code is exchanged at the provider's token endpoint (golang.org/x/oauth2) and the ID token
// of the answer is verified the same way.
//
// Discovery runs once, on the first sign-in that succeeds in it; go-oidc then caches the keys
// and refetches them when a token names a key id it has not seen (key rotation). Fields must not
// change after the first sign-in.
type OIDC struct {
	Issuer       string           // default https://accounts.google.com
	ClientID     string           // required: the audience tokens must be issued to
	ClientSecret string           // the client's secret at the token endpoint; "": no SignInCode
	RedirectURL  string           // the redirect_uri the code was issued for; "": no SignInCode
	HTTP         *http.Client     // nil: a default client; a zero Timeout becomes 10 s
	Now          func() time.Time // nil: time.Now; tests move the clock to check expiry

	mu       sync.Mutex // guards verifier and token while discovery runs
	verifier *oidc.IDTokenVerifier
	token    oauth2.Endpoint // the token endpoint and how the client authenticates there
}

// SignIn verifies the ID token credential and returns who it names. When nonce is not empty the
// token's nonce claim must equal it or its lowercase SHA-256 hex (Google One Tap hands the hash
// to Google and the raw value to us). The token must carry an email that is not marked
// unverified.
func (o *OIDC) SignIn(ctx context.Context, credential, nonce string) (Identity, error) {
	if o.ClientID == "" {
		return Identity{}, errors.New("signin: oidc: client id is not configured")
	}
	if credential == "" {
		return Identity{}, fmt.Errorf("%w: oidc: empty credential", ErrRejected)
	}
	if err := o.discover(ctx); err != nil {
		return Identity{}, err
	}
	return o.verify(ctx, credential, nonce)
}

// verify checks an ID token with the discovered verifier and reads who it names.
func (o *OIDC) verify(ctx context.Context, credential, nonce string) (Identity, error) {
	v := o.verifier
	var keys keyFetch
	tok, err := v.Verify(context.WithValue(ctx, keyFetchKey{}, &keys), credential)
	if err != nil {
		if keys.failed || ctx.Err() != nil {
			return Identity{}, fmt.Errorf("signin: oidc: could not fetch the provider's keys: %w", err)
		}
		return Identity{}, fmt.Errorf("%w: %v", ErrRejected, err)
	}
	if nonce != "" && !nonceMatches(tok.Nonce, nonce) {
		return Identity{}, fmt.Errorf("%w: oidc: nonce does not match", ErrRejected)
	}
	var claims struct {
		Email         string     `json:"email"`
		EmailVerified *looseBool `json:"email_verified"`
		Name          string     `json:"name"`
	}
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: oidc: unreadable claims: %v", ErrRejected, err)
	}
	switch {
	case tok.Subject == "":
		return Identity{}, fmt.Errorf("%w: oidc: token has no sub", ErrRejected)
	case claims.Email == "":
		return Identity{}, fmt.Errorf("%w: oidc: token has no email", ErrRejected)
	case claims.EmailVerified != nil && !bool(*claims.EmailVerified):
		return Identity{}, fmt.Errorf("%w: oidc: email %s is not verified", ErrRejected, claims.Email)
	}
	id := Identity{Email: claims.Email, Name: claims.Name, Subject: tok.Subject}
	if id.Name == "" {
		id.Name, _, _ = strings.Cut(claims.Email, "@")
	}
	return id, nil
}

// discover runs discovery the first time and keeps the verifier and the token endpoint. A
// failed discovery is not kept, so the next sign-in tries again.
func (o *OIDC) discover(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.verifier != nil {
		return nil
	}
	issuer := orDefault(o.Issuer, "https://accounts.google.com")
	client := boundedClient(o.HTTP)
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, client), issuer)
	if err != nil {
		return fmt.Errorf("signin: oidc: discovery at %s: %w", issuer, err)
	}
	var meta struct {
		JWKSURL     string   `json:"jwks_uri"`
		Algs        []string `json:"id_token_signing_alg_values_supported"`
		AuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	}
	if err := p.Claims(&meta); err != nil || meta.JWKSURL == "" {
		return fmt.Errorf("signin: oidc: discovery at %s has no jwks_uri (%v)", issuer, err)
	}
	o.token = p.Endpoint()
	o.token.AuthStyle = authStyle(meta.AuthMethods)
	// Key refetches run after this request is gone: their context carries only the client.
	keySet := oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), client), meta.JWKSURL)
	o.verifier = oidc.NewVerifier(issuer, classifyingKeySet{keySet}, &oidc.Config{
		ClientID:             o.ClientID,
		Now:                  o.Now,
		SupportedSigningAlgs: signingAlgs(meta.Algs),
	})
	return nil
}

// signingAlgs keeps the asymmetric algorithms go-oidc knows out of what discovery advertises;
// an empty result makes go-oidc require RS256, the one every provider must support.
func signingAlgs(advertised []string) []string {
	known := map[string]bool{
		oidc.RS256: true, oidc.RS384: true, oidc.RS512: true,
		oidc.ES256: true, oidc.ES384: true, oidc.ES512: true,
		oidc.PS256: true, oidc.PS384: true, oidc.PS512: true, oidc.EdDSA: true,
	}
	var algs []string
	for _, a := range advertised {
		if known[a] {
			algs = append(algs, a)
		}
	}
	return algs
}

// keyFetch records, for one Verify call, that the key set could not be fetched. go-oidc formats
// signature errors with %v, so the cause does not survive to the caller; without this a JWKS
// outage would look like a forged token and be answered 400.
type keyFetch struct{ failed bool }

type keyFetchKey struct{}

// classifyingKeySet is go-oidc's RemoteKeySet, noting fetch failures in the keyFetch the
// context carries. RemoteKeySet wraps (%w) exactly its remote failures ("fetching keys: ...");
// its verdicts on the token itself (malformed, no key verifies it) wrap nothing.
type classifyingKeySet struct{ ks *oidc.RemoteKeySet }

func (k classifyingKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := k.ks.VerifySignature(ctx, jwt)
	if err != nil && errors.Unwrap(err) != nil {
		if f, ok := ctx.Value(keyFetchKey{}).(*keyFetch); ok {
			f.failed = true
		}
	}
	return payload, err
}

// nonceMatches compares in constant time against the nonce and its SHA-256 hex.
func nonceMatches(claim, nonce string) bool {
	sum := sha256.Sum256([]byte(nonce))
	hashed := hex.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(claim), []byte(nonce)) == 1 ||
		subtle.ConstantTimeCompare([]byte(claim), []byte(hashed)) == 1
}

// looseBool reads a JSON boolean or the strings "true"/"false": some providers (AWS Cognito,
// older Azure AD) send email_verified as a string.
type looseBool bool

func (b *looseBool) UnmarshalJSON(data []byte) error {
	switch string(bytes.ToLower(data)) {
	case "true", `"true"`:
		*b = true
	case "false", `"false"`:
		*b = false
	default:
		return fmt.Errorf("email_verified is not a boolean: %.50s", data)
	}
	return nil
}
