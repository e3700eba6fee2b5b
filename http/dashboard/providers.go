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
