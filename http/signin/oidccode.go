package signin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/oauth2"
)

// ErrCodeNotConfigured: SignInCode was called on an OIDC without ClientSecret or RedirectURL.
// ID tokens (SignIn) are still verified without them.
var ErrCodeNotConfigured = errors.New("signin: oidc: sign-in by authorization code is not configured (it needs the client secret and the redirect URL)")

// CodeEnabled reports whether SignInCode has the settings it needs.
func (o *OIDC) CodeEnabled() bool {
	return o.ClientID != "" && o.ClientSecret != "" && o.RedirectURL != ""
}

// SignInCode exchanges an authorization code of the provider's web flow at its token endpoint
// (grant_type=authorization_code, authenticated with ClientSecret, redirect_uri RedirectURL,
// which must be the one the browser was sent to the provider with) and returns who the ID token
// of the answer names, verified as SignIn verifies one (without a nonce: the token comes
// straight from the provider, not through the browser).
//
// A code the provider refuses (invalid_grant: wrong, expired or already used) is ErrRejected;
// any other refusal (invalid_client, redirect_uri_mismatch, ...) means svc's settings are
// wrong, and an answer without an id_token means the client is not an OpenID Connect one:
// those, like an unreachable provider, are not.
func (o *OIDC) SignInCode(ctx context.Context, code string) (Identity, error) {
	if o.ClientID == "" {
		return Identity{}, errors.New("signin: oidc: client id is not configured")
	}
	if !o.CodeEnabled() {
		return Identity{}, ErrCodeNotConfigured
	}
	if code == "" {
		return Identity{}, fmt.Errorf("%w: oidc: empty code", ErrRejected)
	}
	if err := o.discover(ctx); err != nil {
		return Identity{}, err
	}
	if o.token.TokenURL == "" {
		return Identity{}, fmt.Errorf("signin: oidc: discovery at %s names no token_endpoint", orDefault(o.Issuer, "https://accounts.google.com"))
	}
	cfg := oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Endpoint: o.token,
		RedirectURL: o.RedirectURL, Scopes: []string{"openid", "email", "profile"}}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, boundedClient(o.HTTP)), code)
	if err != nil {
		return Identity{}, exchangeErr(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, errors.New("signin: oidc: the token endpoint answered without an id_token (the sign-in must ask for the openid scope)")
	}
	return o.verify(ctx, raw, "")
}

// exchangeErr sorts a failed code exchange into the user's fault (RFC 6749 §5.2 invalid_grant)
// and the server's (everything else).
func exchangeErr(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return fmt.Errorf("signin: oidc: token endpoint: %w", err)
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	switch {
	case re.ErrorCode == "invalid_grant":
		return fmt.Errorf("%w: oidc: the provider refused the code (invalid_grant: %s)", ErrRejected, re.ErrorDescription)
	case status >= 500 || re.ErrorCode == "temporarily_unavailable" || re.ErrorCode == "server_error":
		return fmt.Errorf("signin: oidc: the token endpoint failed (status %d): %w", status, err)
	}
	return fmt.Errorf("signin: oidc: the token endpoint refused the exchange with status %d (check the client id, client secret and redirect URL): %w", status, err)
}

// authStyle is how the client authenticates at the token endpoint, from discovery's
// token_endpoint_auth_methods_supported; OpenID Connect Discovery 1.0 §3 makes
// client_secret_basic the default when the list is absent.
func authStyle(methods []string) oauth2.AuthStyle {
	switch {
	case len(methods) == 0 || slices.Contains(methods, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	case slices.Contains(methods, "client_secret_post"):
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleAutoDetect
}
