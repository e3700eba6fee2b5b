package dashboard

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/http/signin"
)

// errNotConfigured: the server has no settings for the provider asked for.
var errNotConfigured = errors.New("this sign-in method is not configured on this server")

// errNoStates: a SignIn without a state store cannot finish the two-step sign-ins.
var errNoStates = errors.New("the sign-in provider keeps no sign-in states (Providers.States is nil)")

// Providers signs users in with GitHub's OAuth web flow and an OpenID Connect provider; either
// may be nil when its settings are not given. States keeps the state of the reference
// dashboard's two-step sign-ins (POST /auth/github and /auth/google, {"type": "init"} then
// {"type": "code"}) between their two requests; without it those answer 500.
type Providers struct {
	GitHub *signin.GitHub
	OIDC   *signin.OIDC
	States *signin.States
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

// IDPCode signs in with an authorization code of the OpenID Connect provider, exchanged at its
// token endpoint with the client secret.
func (p Providers) IDPCode(ctx context.Context, code string) (Identity, error) {
	if !p.IDPCodeEnabled() {
		return Identity{}, errNotConfigured
	}
	return identity(p.OIDC.SignInCode(ctx, code))
}

// IsRejected implements SignIn.
func (p Providers) IsRejected(err error) bool {
	return errors.Is(err, signin.ErrRejected) || errors.Is(err, errNotConfigured)
}

// CodeHostEnabled reports whether GitHub sign-in has its settings.
func (p Providers) CodeHostEnabled() bool { return p.GitHub != nil }

// IDPEnabled reports whether OpenID Connect sign-in has its settings.
func (p Providers) IDPEnabled() bool { return p.OIDC != nil }

// IDPCodeEnabled reports whether OpenID Connect sign-in by authorization code has its settings
// (the client secret and the redirect URL besides the client id).
func (p Providers) IDPCodeEnabled() bool { return p.OIDC != nil && p.OIDC.CodeEnabled() }

// SignInStates is the store of the two-step sign-ins' states.
func (p Providers) SignInStates() *signin.States { return p.States }

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

// idpCode is what a SignIn offers for sign-in with an authorization code of the OpenID Connect
// provider (Providers does); without it that sign-in is not configured.
type idpCode interface {
	IDPCode(ctx context.Context, code string) (Identity, error)
	IDPCodeEnabled() bool
}

func idpCodeEnabled(s SignIn) bool {
	c, ok := s.(idpCode)
	return ok && c.IDPCodeEnabled()
}

// statesOf is the state store of a SignIn that has one (Providers does), else nil.
func statesOf(s SignIn) *signin.States {
	if st, ok := s.(interface{ SignInStates() *signin.States }); ok {
		return st.SignInStates()
	}
	return nil
}

// authAliasRoutes mounts the sign-in paths the reference web dashboard posts to (issue #15):
// POST /auth/github and POST /auth/google, each {"type": "init", "state"} and then
// {"type": "code", "state", "code"}; /auth/google also takes the body of POST /auth/idp.
func (a *API) authAliasRoutes(r chi.Router, limit func(http.Handler) http.Handler) {
	r.With(limit).Post("/github", a.signInGitHub)
	r.With(limit).Post("/google", a.signInGoogle)
}

// twoStep is a body of the reference dashboard's two-step sign-in; Credential and Nonce are
// POST /auth/idp's, which /auth/google also takes.
type twoStep struct {
	Type       string `json:"type"`
	State      string `json:"state"`
	Code       string `json:"code"`
	Credential string `json:"credential"`
	Nonce      string `json:"nonce"`
}

// signInGitHub answers POST /auth/github. {"type": "init", "state"}, which the dashboard sends
// before it sends the browser to GitHub, records the state; {"type": "code", "state", "code"}
// takes that state (once) and then signs in as POST /auth/codehost does.
func (a *API) signInGitHub(w http.ResponseWriter, r *http.Request) {
	var req twoStep
	if !decode(w, r, &req) {
		return
	}
	switch req.Type {
	case "init":
		a.initState(w, req.State, "github", "the code host", codeHostEnabled)
	case "code":
		if a.takeState(w, req, "github", "sign-in with the code host is not configured on this server", codeHostEnabled) {
			a.codeHost(w, r, req.Code)
		}
	default:
		httpx.Error(w, http.StatusBadRequest, `type must be "init" or "code"`)
	}
}

// signInGoogle answers POST /auth/google. {"type": "init", "state"} records the state;
// {"type": "code", "state", "code"} takes it (once), exchanges the authorization code at the
// OpenID Connect provider's token endpoint and signs in with the ID token it answers. A body of
// POST /auth/idp ({"credential", "state", "nonce"}) signs in exactly as /auth/idp does.
func (a *API) signInGoogle(w http.ResponseWriter, r *http.Request) {
	var req twoStep
	if !decode(w, r, &req) {
		return
	}
	switch {
	case req.Type == "init":
		a.initState(w, req.State, "google", "the identity provider", idpEnabled)
	case req.Type == "" || req.Credential != "":
		a.idp(w, r, req.Credential, req.Nonce)
	case req.Type == "code":
		notConfigured := "sign-in with an authorization code of the identity provider is not configured on this server"
		if a.SignIn != nil && idpEnabled(a.SignIn) {
			notConfigured += ` (it needs the provider's client secret); ID tokens are accepted: send {"credential", "nonce"} as POST /auth/idp takes them`
		}
		if !a.takeState(w, req, "google", notConfigured, idpCodeEnabled) {
			return
		}
		id, err := a.SignIn.(idpCode).IDPCode(r.Context(), req.Code)
		if err != nil && !a.SignIn.IsRejected(err) {
			// Not a.internal: a provider's timeout is no store outage (503 naming a store).
			if a.Log != nil {
				a.Log.Error("dashboard: sign-in by code", "error", err.Error())
			}
			httpx.Error(w, http.StatusInternalServerError, "the identity provider did not complete the sign-in: exchanging the code "+
				"at its token endpoint failed (the server log says why); try again")
			return
		}
		a.finishSignIn(w, r, id, err)
	default:
		httpx.Error(w, http.StatusBadRequest, `type must be "init" or "code"`)
	}
}

// stateOK answers 400 unless state is there and of a sane length.
func stateOK(w http.ResponseWriter, state string) bool {
	switch {
	case state == "":
		httpx.Error(w, http.StatusBadRequest, "state is required")
	case len(state) > signin.MaxStateLen:
		httpx.Error(w, http.StatusBadRequest, "state is longer than "+strconv.Itoa(signin.MaxStateLen)+" bytes")
	default:
		return true
	}
	return false
}

// initState records the start of a sign-in with provider, once the server can finish it.
func (a *API) initState(w http.ResponseWriter, state, provider, what string, enabled func(SignIn) bool) {
	if !stateOK(w, state) {
		return
	}
	if a.SignIn == nil || !enabled(a.SignIn) {
		httpx.Error(w, http.StatusBadRequest, "sign-in with "+what+" is not configured on this server")
		return
	}
	st := statesOf(a.SignIn)
	if st == nil {
		a.internal(w, "record the sign-in state", errNoStates)
		return
	}
	st.Put(provider, state)
	httpx.JSON(w, http.StatusOK, map[string]string{"ok": provider + " oauth init ack"})
}

// takeState checks a {"type": "code"} body and takes its state, which an init of the same
// provider must have recorded: an unknown, expired or already used state is 401, and the
// code is not sent to the provider. Without the provider's settings (enabled) it answers 400
// notConfigured. It answers and reports false when the sign-in stops here.
func (a *API) takeState(w http.ResponseWriter, req twoStep, provider, notConfigured string, enabled func(SignIn) bool) bool {
	if !stateOK(w, req.State) {
		return false
	}
	if req.Code == "" {
		httpx.Error(w, http.StatusBadRequest, "code is required")
		return false
	}
	if a.SignIn == nil || !enabled(a.SignIn) {
		httpx.Error(w, http.StatusBadRequest, notConfigured)
		return false
	}
	st := statesOf(a.SignIn)
	if st == nil {
		a.internal(w, "check the sign-in state", errNoStates)
		return false
	}
	if !st.Take(provider, req.State) {
		httpx.Error(w, http.StatusUnauthorized, "unknown, expired or already used state: this server did not see this sign-in start "+
			`(POST /auth/`+provider+` {"type": "init"}) or it has finished; start the sign-in again`)
		return false
	}
	return true
}
