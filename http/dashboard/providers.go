package dashboard

import (
	"context"
	"errors"

	"github.com/svc-dev/svc/http/signin"
)

// errNotConfigured: the server has no settings for the provider asked for.
var errNotConfigured = errors.New("this sign-in method is not configured on this server")

// Providers signs users in with GitHub's OAuth web flow and an OpenID Connect provider; either
// may be nil when its settings are not given.
type Providers struct {
	GitHub *signin.GitHub
	OIDC   *signin.OIDC
}

func identity(id signin.Identity, err error) (Identity, error) {
	if err != nil {
		return Identity{}, err
	}
	return Identity{Email: id.Email, Name: id.Name}, nil
}

// CodeHost implements SignIn.
func (p Providers) CodeHost(ctx context.Context, code string) (Identity, error) {
	if p.GitHub == nil {
		return Identity{}, errNotConfigured
	}
	return identity(p.GitHub.SignIn(ctx, code))
}

// IDP implements SignIn.
func (p Providers) IDP(ctx context.Context, credential, nonce string) (Identity, error) {
	if p.OIDC == nil {
		return Identity{}, errNotConfigured
	}
	return identity(p.OIDC.SignIn(ctx, credential, nonce))
}

// IsRejected implements SignIn.
func (p Providers) IsRejected(err error) bool {
	return errors.Is(err, signin.ErrRejected) || errors.Is(err, errNotConfigured)
}

// CodeHostEnabled reports whether GitHub sign-in has its settings.
func (p Providers) CodeHostEnabled() bool { return p.GitHub != nil }

// IDPEnabled reports whether OpenID Connect sign-in has its settings.
func (p Providers) IDPEnabled() bool { return p.OIDC != nil }

// codeHostEnabled and idpEnabled ask a SignIn that tells (Providers does) whether a method has
// its settings; one that does not tell is taken to have them.
func codeHostEnabled(s SignIn) bool {
	e, ok := s.(interface{ CodeHostEnabled() bool })
	return !ok || e.CodeHostEnabled()
}

func idpEnabled(s SignIn) bool {
	e, ok := s.(interface{ IDPEnabled() bool })
	return !ok || e.IDPEnabled()
}
