// Package dashboard serves the JSON API that signed-in users call: sign-in and sessions, teams,
// members, invites, apps and their settings (spec/dashboard-api.md). Every failure is
// `{"error": "..."}`; every route under /teams/{id} and /apps/{id} checks the caller's role in
// the team first.
package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/httprate"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/auth"
	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Identity is who an identity provider says signed in.
type Identity struct{ Email, Name string }

// SignIn verifies a sign-in with an outside provider. ErrRejected-like failures are reported
// through IsRejected.
type SignIn interface {
	// CodeHost exchanges a code of the code host's OAuth web flow.
	CodeHost(ctx context.Context, code string) (Identity, error)
	// IDP verifies an OpenID Connect ID token; nonce may be empty.
	IDP(ctx context.Context, credential, nonce string) (Identity, error)
	// IsRejected tells a refusal by the provider (400) from a failure to reach it (500).
	IsRejected(err error) bool
}

// KeyCache is the ingest API's cache of app keys, dropped at once on rotation.
type KeyCache interface{ Invalidate(appID uuid.UUID) }

// API is the dashboard API.
type API struct {
	Meta sinks.MetaStore
	// OnThresholds, when set, is told an app's spike thresholds once they are stored, so that
	// this node's alerts use them from the next batch on.
	OnThresholds func(app uuid.UUID, p model.ThresholdPrefs)
	Events       sinks.EventStore
	Analytics    sinks.Analytics // the event store's dashboard queries
	Spans        sinks.Spans     // the event store's span and trace queries; nil: Events', if it has them
	Live         LiveAnswers     // the app actors; nil: every query goes to the store
	Blobs        sinks.BlobStore // attachment downloads
	// DownloadTTL is how long an attachment's download location works; default 1 hour.
	DownloadTTL time.Duration
	Tokens      *auth.Issuer
	SignIn      SignIn
	Keys        KeyCache
	HTTPClient  *http.Client // for the chat app's test message
	Log         *slog.Logger
	Now         func() time.Time

	// RequestTimeout bounds every request of the API (its store calls end with it, and the
	// request answers 503); 0 means none.
	RequestTimeout time.Duration

	RatePerUser   int // requests per minute per signed-in user
	RateSignInIP  int // requests per minute per client address on sign-in, refresh, invite validation
	SecureCookies bool
}

func (a *API) now() time.Time {
	if a.Now != nil {
		return a.Now().UTC()
	}
	return time.Now().UTC()
}

type ctxKey int

const (
	userKey ctxKey = iota
	sessionKey
	roleKey
	teamKey
	appKey
	accessKey // the sinks.SessionAccess that requireAppUser read, for appMember
)

func userID(ctx context.Context) uuid.UUID  { v, _ := ctx.Value(userKey).(uuid.UUID); return v }
func role(ctx context.Context) model.Role   { v, _ := ctx.Value(roleKey).(model.Role); return v }
func teamOf(ctx context.Context) model.Team { v, _ := ctx.Value(teamKey).(model.Team); return v }
func appOf(ctx context.Context) model.App   { v, _ := ctx.Value(appKey).(model.App); return v }

// Routes mounts the dashboard API on r.
func (a *API) Routes(r chi.Router) {
	limited := func(n int, key httprate.KeyFunc) func(http.Handler) http.Handler {
		return httprate.Limit(n, time.Minute, httprate.WithKeyFuncs(key),
			httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
				httpx.Error(w, http.StatusTooManyRequests, "too many requests; retry after the time in Retry-After")
			}))
	}
	byIP := limited(a.RateSignInIP, httprate.KeyByIP)
	byUser := limited(a.RatePerUser, func(r *http.Request) (string, error) { return userID(r.Context()).String(), nil })

	deadline := httpx.RequestTimeout(a.RequestTimeout)
	r.Route("/auth", func(r chi.Router) {
		r.Use(deadline)
		r.With(byIP).Post("/codehost", a.signInCodeHost)
		r.With(byIP).Post("/idp", a.signInIDP)
		a.authAliasRoutes(r, byIP)
		r.With(byIP).Post("/validateInvite", a.validateInvite)
		r.With(byIP).Post("/refresh", a.refresh)
		r.With(byIP).Delete("/signout", a.signOut)
		r.With(a.requireUser, byUser).Get("/session", a.session)
	})
	r.With(byIP).Post("/slack/connect", noSlackOAuth)
	r.Group(func(r chi.Router) {
		r.Use(deadline, a.requireUser, byUser)
		r.Post("/teams", a.createTeam)
		a.prefsRoutes(r)
		r.Get("/teams", a.listTeams)
		r.Route("/teams/{teamID}", func(r chi.Router) {
			r.Use(a.teamMember)
			r.With(need(model.RoleOwner)).Patch("/rename", a.renameTeam)
			r.Get("/apps", a.listApps)
			r.Get("/apps/{appID}", a.getTeamApp)
			r.With(need(model.RoleAdmin)).Post("/apps", a.createApp)
			r.Get("/invites", a.listInvites)
			r.Post("/invite", a.invite)
			r.Patch("/invite/{inviteID}", a.updateInvite)
			r.Delete("/invite/{inviteID}", a.deleteInvite)
			r.Get("/members", a.listMembers)
			r.With(need(model.RoleAdmin)).Delete("/members/{memberID}", a.removeMember)
			r.With(need(model.RoleAdmin)).Patch("/members/{memberID}/role", a.changeRole)
			r.Get("/authz", a.authz)
			r.Get("/usage", a.usage)
			r.Get("/chatapp", a.getChatApp)
			r.With(need(model.RoleOwner)).Patch("/chatapp/status", a.setChatApp)
			r.With(need(model.RoleOwner)).Post("/chatapp/test", a.testChatApp)
			a.slackRoutes(r)
		})
	})
	// The app routes read the session, the app and the caller's role together (requireAppUser).
	r.Route("/apps/{appID}", func(r chi.Router) {
		r.Use(deadline, a.requireAppUser, byUser, a.appMember)
		r.With(need(model.RoleAdmin)).Patch("/rename", a.renameApp)
		r.With(need(model.RoleAdmin)).Patch("/apiKey", a.rotateKey)
		r.Get("/retention", a.getRetention)
		r.With(need(model.RoleAdmin)).Patch("/retention", a.setRetention)
		r.Get("/thresholdPrefs", a.getThresholds)
		r.With(need(model.RoleAdmin)).Patch("/thresholdPrefs", a.setThresholds)
		r.Get("/config", a.getConfig)
		r.With(need(model.RoleAdmin)).Patch("/config", a.setConfig)
		r.Post("/shortFilters", a.createShortFilter)
		r.Get("/health/plots/instances", a.healthPlot)
		a.analyticsRoutes(r)
		a.spanRoutes(r)
		a.networkRoutes(r)
		a.sessionRoutes(r)
		a.bugReportRoutes(r)
		a.alertRoutes(r)
		a.buildRoutes(r)
	})
}

// bearer returns the token of the Authorization header, else of the named cookie.
func bearer(r *http.Request, cookie string) string {
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(t)
	}
	if c, err := r.Cookie(cookie); err == nil {
		return c.Value
	}
	return ""
}

// requireUser admits a request with a valid access token of a session that is still active:
// signing out ends the session's access tokens at once, not when they expire.
func (a *API) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := a.accessClaims(w, r)
		if !ok {
			return
		}
		s, err := a.Meta.AuthSession(r.Context(), c.SessionID)
		if a.activeSession(w, c, s, err) {
			next.ServeHTTP(w, r.WithContext(withUser(r.Context(), c)))
		}
	})
}

// requireAppUser is requireUser for the routes under /apps/{appID}: it reads the session with
// the app and the caller's role in its team (sinks.AppAccess), one round trip to the metadata
// store instead of three, and leaves the app and role for appMember, which answers for them
// after the rate limit as before. A sign-out, a changed role or a removed membership holds from
// the next request on (on other nodes of a cluster, once PostgreSQL's notice of it arrives:
// sinks.AppAccess).
func (a *API) requireAppUser(next http.Handler) http.Handler {
	st := a.Meta.(sinks.AppAccess) // both metadata stores implement it
	sessionOnly := a.requireUser(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := uuid.Parse(chi.URLParam(r, "appID"))
		if err != nil {
			sessionOnly.ServeHTTP(w, r) // appMember answers 400 for the id
			return
		}
		c, ok := a.accessClaims(w, r)
		if !ok {
			return
		}
		acc, err := st.SessionAppRole(r.Context(), c.SessionID, id, c.UserID)
		if a.activeSession(w, c, acc.Session, err) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(withUser(r.Context(), c), accessKey, acc)))
		}
	})
}

// accessClaims reads the request's access token, or answers 401.
func (a *API) accessClaims(w http.ResponseWriter, r *http.Request) (auth.Claims, bool) {
	tok := bearer(r, "access_token")
	if tok == "" {
		httpx.Error(w, http.StatusUnauthorized, "sign in first: send the access token as Authorization: Bearer <token> or the access_token cookie")
		return auth.Claims{}, false
	}
	c, err := a.Tokens.ParseAccess(tok)
	if err != nil {
		httpx.Error(w, http.StatusUnauthorized, "access token invalid or expired; refresh it or sign in again")
		return auth.Claims{}, false
	}
	return c, true
}

// activeSession tells whether s, read for c's session with error err, is still active; if not,
// it answers 401 (the session is gone, another user's or expired) or 500 or 503 (it could not
// be read).
func (a *API) activeSession(w http.ResponseWriter, c auth.Claims, s model.AuthSession, err error) bool {
	if errors.Is(err, sinks.ErrNotFound) || (err == nil && (s.UserID != c.UserID || !a.now().Before(s.ExpiresAt))) {
		httpx.Error(w, http.StatusUnauthorized, "the session has ended; sign in again")
		return false
	}
	if err != nil {
		a.internal(w, "read session", err)
		return false
	}
	return true
}

// withUser puts c's user and session into ctx.
func withUser(ctx context.Context, c auth.Claims) context.Context {
	return context.WithValue(context.WithValue(ctx, userKey, c.UserID), sessionKey, c.SessionID)
}

func parseID(w http.ResponseWriter, r *http.Request, param, what string) (uuid.UUID, bool) {
	v := chi.URLParam(r, param)
	id, err := uuid.Parse(v)
	if err != nil {
		httpx.Error(w, http.StatusBadRequest, fmt.Sprintf("%s id %q is not a UUID", what, v))
		return uuid.Nil, false
	}
	return id, true
}

// withRole puts the caller's role in the team into the context, or answers 403 for a
// non-member.
func (a *API) withRole(w http.ResponseWriter, r *http.Request, team uuid.UUID) (context.Context, bool) {
	rl, err := a.Meta.Role(r.Context(), team, userID(r.Context()))
	if errors.Is(err, sinks.ErrNotFound) {
		httpx.Error(w, http.StatusForbidden, "you are not a member of this team")
		return nil, false
	}
	if err != nil {
		a.internal(w, "read role", err)
		return nil, false
	}
	return context.WithValue(r.Context(), roleKey, rl), true
}

func (a *API) teamMember(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := parseID(w, r, "teamID", "team")
		if !ok {
			return
		}
		ctx, ok := a.withRole(w, r, id)
		if !ok {
			return
		}
		t, err := a.Meta.Team(ctx, id)
		if err != nil {
			a.internal(w, "read team", err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, teamKey, t)))
	})
}

// appMember puts the app and the caller's role in its team, as requireAppUser read them, into
// the context, or answers 403 when the app is not one of the caller's teams'.
func (a *API) appMember(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := parseID(w, r, "appID", "app")
		if !ok {
			return
		}
		acc, _ := r.Context().Value(accessKey).(sinks.SessionAccess)
		if acc.AppErr != nil && !errors.Is(acc.AppErr, sinks.ErrNotFound) {
			a.internal(w, "read app", acc.AppErr)
			return
		}
		if acc.Role == "" {
			// An unknown app and another team's app get the same 403, so outsiders cannot
			// tell which ids exist.
			httpx.Error(w, http.StatusForbidden, fmt.Sprintf("app %s is not an app of your teams", id))
			return
		}
		ctx := context.WithValue(context.WithValue(r.Context(), roleKey, acc.Role), appKey, acc.App)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// need admits callers whose role ranks at least min.
func need(min model.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if role(r.Context()).Rank() < min.Rank() {
				httpx.Error(w, http.StatusForbidden, fmt.Sprintf("this needs the %s role or higher; yours is %s", min, role(r.Context())))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// decode reads a JSON body of at most 64 KiB into v.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	if err := dec.Decode(v); err != nil {
		bodyError(w, err, "malformed JSON body")
		return false
	}
	return true
}

// bodyError answers a JSON body that could not be decoded: 413 over its limit, 408 when it
// stalled, 400 otherwise, with what (the kind of body) before the decoder's message.
func bodyError(w http.ResponseWriter, err error, what string) {
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		httpx.Error(w, http.StatusBadRequest, "a JSON body is required")
	case errors.As(err, &mbe):
		httpx.Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body exceeds the limit of %d bytes", mbe.Limit))
	case httpx.IsTimeout(err):
		httpx.Error(w, http.StatusRequestTimeout, "the request body stalled or took too long to arrive")
	default:
		httpx.Error(w, http.StatusBadRequest, what+": "+err.Error())
	}
}

// internal answers a failure the caller cannot fix and logs the cause: 503 + Retry-After
// naming the kind of store when a store did not answer (httpx.Unavailable), 500 otherwise.
// The answer never carries the cause, which may name addresses, users and databases.
func (a *API) internal(w http.ResponseWriter, what string, err error) {
	if _, down := httpx.Unavailable(err); down {
		if a.Log != nil {
			a.Log.Warn("dashboard: store unavailable", "op", what, "error", err.Error())
		}
		httpx.StoreUnavailable(w, err)
		return
	}
	if a.Log != nil {
		a.Log.Error("dashboard", "op", what, "error", err.Error())
	}
	httpx.Error(w, http.StatusInternalServerError, what+": internal error")
}

// storeErr answers a store error with the status it means.
func (a *API) storeErr(w http.ResponseWriter, what string, err error) {
	switch {
	case errors.Is(err, sinks.ErrNotFound):
		httpx.Error(w, http.StatusNotFound, what+": not found")
	case errors.Is(err, sinks.ErrLastOwner):
		httpx.Error(w, http.StatusBadRequest, what+": a team must keep at least one owner")
	case errors.Is(err, sinks.ErrInvalid):
		httpx.Error(w, http.StatusBadRequest, what+": "+err.Error())
	case errors.Is(err, sinks.ErrConflict):
		httpx.Error(w, http.StatusConflict, what+": "+err.Error())
	default:
		a.internal(w, what, err)
	}
}

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// decodeName reads a {"name": …} body and checks the name.
func decodeName(w http.ResponseWriter, r *http.Request, what string) (string, bool) {
	var req struct {
		Name string `json:"name"`
	}
	if !decode(w, r, &req) {
		return "", false
	}
	return cleanName(w, req.Name, what)
}

// cleanName trims a name and checks its length.
func cleanName(w http.ResponseWriter, name, what string) (string, bool) {
	n := strings.TrimSpace(name)
	if n == "" || len(n) > 256 {
		httpx.Error(w, http.StatusBadRequest, what+" must be 1 to 256 characters")
		return "", false
	}
	return n, true
}
