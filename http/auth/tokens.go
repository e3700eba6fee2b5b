// Package auth issues and checks the dashboard's tokens: a short-lived access JWT and a
// longer-lived refresh JWT, both HS256, both naming the session they belong to.
package auth

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// Default lifetimes (docs/architecture.md, "Algorithms").
const (
	DefaultAccessTTL  = 30 * time.Minute
	DefaultRefreshTTL = 7 * 24 * time.Hour
)

// ErrInvalidToken covers every reason a token is refused: bad signature, expired, wrong kind.
var ErrInvalidToken = errors.New("invalid or expired token")

// Claims are what svc reads from a token: the user (sub), the session (jti for access tokens,
// sid for refresh tokens) and, for refresh tokens, which refresh of the session it is (jti).
type Claims struct {
	UserID    uuid.UUID
	SessionID uuid.UUID
	RefreshID uuid.UUID // refresh tokens only
	ExpiresAt time.Time
}

// Issuer signs and verifies tokens. Access and refresh tokens use different secrets, so one
// can never be passed off as the other.
type Issuer struct {
	AccessSecret  []byte
	RefreshSecret []byte
	AccessTTL     time.Duration
	RefreshTTL    time.Duration
	Now           func() time.Time // nil: time.Now

	// verified keeps the claims of access tokens already verified, so that a dashboard sending
	// the same token with every request pays its JSON decoding once (it was a tenth of a live
	// answer's CPU). A token is immutable and signed with AccessSecret, which does not change
	// while the Issuer lives; a kept token still expires at its expiry.
	mu       sync.Mutex
	verified map[string]Claims
}

// maxVerified bounds the tokens kept; past it they start again from none.
const maxVerified = 4096

type refreshClaims struct {
	SessionID string `json:"sid"`
	jwt.RegisteredClaims
}

func (is *Issuer) now() time.Time {
	if is.Now != nil {
		return is.Now()
	}
	return time.Now()
}

// Pair is a freshly issued access and refresh token.
type Pair struct {
	AccessToken      string
	RefreshToken     string
	RefreshExpiresAt time.Time
}

// Issue signs a token pair for a session; refreshID must equal the session's stored RefreshID.
func (is *Issuer) Issue(userID, sessionID, refreshID uuid.UUID) (Pair, error) {
	now := is.now()
	access := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Subject:   userID.String(),
		ID:        sessionID.String(),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(is.AccessTTL)),
	})
	a, err := access.SignedString(is.AccessSecret)
	if err != nil {
		return Pair{}, fmt.Errorf("sign access token: %w", err)
	}
	exp := now.Add(is.RefreshTTL)
	refresh := jwt.NewWithClaims(jwt.SigningMethodHS256, refreshClaims{
		SessionID: sessionID.String(),
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   userID.String(),
			ID:        refreshID.String(),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
	})
	r, err := refresh.SignedString(is.RefreshSecret)
	if err != nil {
		return Pair{}, fmt.Errorf("sign refresh token: %w", err)
	}
	return Pair{AccessToken: a, RefreshToken: r, RefreshExpiresAt: exp}, nil
}

func (is *Issuer) parser() *jwt.Parser {
	return jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(is.now))
}

// ParseAccess verifies an access token.
func (is *Issuer) ParseAccess(token string) (Claims, error) {
	is.mu.Lock()
	c, ok := is.verified[token]
	is.mu.Unlock()
	if ok && is.now().Before(c.ExpiresAt) {
		return c, nil
	}
	c, err := is.parseAccess(token)
	if err != nil {
		return Claims{}, err
	}
	is.mu.Lock()
	if len(is.verified) >= maxVerified || is.verified == nil {
		is.verified = make(map[string]Claims, 64)
	}
	is.verified[token] = c
	is.mu.Unlock()
	return c, nil
}

func (is *Issuer) parseAccess(token string) (Claims, error) {
	var c jwt.RegisteredClaims
	if _, err := is.parser().ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return is.AccessSecret, nil }); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	user, err1 := uuid.Parse(c.Subject)
	sess, err2 := uuid.Parse(c.ID)
	if err1 != nil || err2 != nil {
		return Claims{}, fmt.Errorf("%w: malformed claims", ErrInvalidToken)
	}
	return Claims{UserID: user, SessionID: sess, ExpiresAt: c.ExpiresAt.Time}, nil
}

// ParseRefresh verifies a refresh token.
func (is *Issuer) ParseRefresh(token string) (Claims, error) {
	var c refreshClaims
	if _, err := is.parser().ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return is.RefreshSecret, nil }); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	user, err1 := uuid.Parse(c.Subject)
	sess, err2 := uuid.Parse(c.SessionID)
	ref, err3 := uuid.Parse(c.ID)
	if err1 != nil || err2 != nil || err3 != nil {
		return Claims{}, fmt.Errorf("%w: malformed claims", ErrInvalidToken)
	}
	return Claims{UserID: user, SessionID: sess, RefreshID: ref, ExpiresAt: c.ExpiresAt.Time}, nil
}
