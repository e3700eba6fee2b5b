// Package signin asks an identity provider who a dashboard user is: GitHub through its OAuth web
// flow (POST /auth/codehost) or any OpenID Connect provider (Google by default) through an ID
// token (POST /auth/idp) or an authorization code exchanged at its token endpoint (the reference
// dashboard's POST /auth/google). It only proves an identity; users, sessions and tokens are the
// caller's. States keeps the state of the two-step sign-ins between their start and their code.
//
// Every error is one of two kinds, so the handler can answer the right status:
// errors.Is(err, ErrRejected) means the provider (or its signed token) says no — the request is
// at fault (400). Anything else means the provider could not be reached, answered something we
// cannot read, or svc is misconfigured — the server is at fault (500/503).
package signin

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Identity is who a provider says signed in.
type Identity struct {
	Email   string // verified email address
	Name    string // display name; never empty
	Subject string // the provider's stable user id (GitHub's numeric id, the OIDC "sub")
}

// ErrRejected: the provider refused the sign-in (bad or expired code, bad token signature, wrong
// audience or issuer, expired token, wrong nonce, no verified email).
var ErrRejected = errors.New("sign-in rejected by the identity provider")

const (
	// defaultTimeout bounds each request to a provider when the caller's http.Client has none;
	// go-oidc refetches keys in a goroutine of its own that only a client timeout ends.
	defaultTimeout = 10 * time.Second
	// maxBody bounds every provider response we read. Real ones are a few KiB (Google's JWKS is
	// ~2 KiB, a GitHub user ~1.5 KiB); a provider that sends more is broken or hostile.
	maxBody = 1 << 20
)

// errTooLarge is returned by a response body that passes maxBody.
var errTooLarge = fmt.Errorf("response body larger than %d bytes", maxBody)

// boundedClient returns a copy of c (nil: a default client) whose requests time out and whose
// response bodies fail past maxBody, so neither a slow nor a chatty provider can hold a request
// or memory without bound. The copy shares c's transport and its connection pool.
func boundedClient(c *http.Client) *http.Client {
	var bc http.Client
	if c != nil {
		bc = *c
	}
	if bc.Timeout == 0 {
		bc.Timeout = defaultTimeout
	}
	base := bc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	bc.Transport = limitTransport{base: base}
	return &bc
}

// limitTransport wraps every response body in a limitedBody.
type limitTransport struct{ base http.RoundTripper }

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: maxBody}
	return resp, nil
}

// limitedBody reads at most left bytes and then fails with errTooLarge if more are there, so a
// reader never mistakes a cut body for a complete one.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
