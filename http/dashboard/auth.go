package dashboard

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func (a *API) signInCodeHost(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Type  string `json:"type"`
		State string `json:"state"`
		Code  string `json:"code"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.Type != "code" {
		httpx.Error(w, http.StatusBadRequest, `type must be "code"`)
		return
	}
	a.codeHost(w, r, req.Code)
}

// codeHost signs in with a code of the code host's OAuth web flow.
func (a *API) codeHost(w http.ResponseWriter, r *http.Request, code string) {
	if code == "" {
		httpx.Error(w, http.StatusBadRequest, "code is required")
		return
	}
	if a.SignIn == nil {
		httpx.Error(w, http.StatusBadRequest, "sign-in with the code host is not configured on this server")
		return
	}
	id, err := a.SignIn.CodeHost(r.Context(), code)
	a.finishSignIn(w, r, id, err)
}

func (a *API) signInIDP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Credential string `json:"credential"`
		State      string `json:"state"`
		Nonce      string `json:"nonce"`
	}
	if !decode(w, r, &req) {
		return
	}
	a.idp(w, r, req.Credential, req.Nonce)
}

// idp signs in with an OpenID Connect ID token.
func (a *API) idp(w http.ResponseWriter, r *http.Request, credential, nonce string) {
	if credential == "" {
		httpx.Error(w, http.StatusBadRequest, "credential is required")
		return
	}
	if a.SignIn == nil {
		httpx.Error(w, http.StatusBadRequest, "sign-in with the identity provider is not configured on this server")
		return
	}
	id, err := a.SignIn.IDP(r.Context(), credential, nonce)
	a.finishSignIn(w, r, id, err)
}

// finishSignIn turns a verified identity into a session: the first sign-in creates the user and
// their own team, pending invites for the email join their teams, and a token pair is issued.
func (a *API) finishSignIn(w http.ResponseWriter, r *http.Request, id Identity, err error) {
	if err != nil {
		if a.SignIn.IsRejected(err) {
			httpx.Error(w, http.StatusBadRequest, "sign-in refused: "+err.Error())
			return
		}
		a.internal(w, "reach the identity provider", err)
		return
	}
	ctx := r.Context()
	now := a.now()
	u, err := a.Meta.UserByEmail(ctx, id.Email)
	var team model.Team
	switch {
	case errors.Is(err, sinks.ErrNotFound):
		name := strings.TrimSpace(id.Name)
		if name == "" {
			name, _, _ = strings.Cut(id.Email, "@")
		}
		u = model.User{ID: uuid.New(), Name: name, Email: id.Email, ConfirmedAt: now, CreatedAt: now, UpdatedAt: now}
		team = model.Team{ID: uuid.New(), Name: name + "'s team", CreatedAt: now, UpdatedAt: now}
		if err := a.Meta.CreateUser(ctx, u, team); err != nil {
			if errors.Is(err, sinks.ErrConflict) { // a concurrent first sign-in won
				u, err = a.Meta.UserByEmail(ctx, id.Email)
			}
			if err != nil {
				a.internal(w, "create user", err)
				return
			}
		}
	case err != nil:
		a.internal(w, "read user", err)
		return
	}
	if team.ID == uuid.Nil {
		if team, err = a.Meta.OwnTeam(ctx, u.ID); err != nil {
			a.internal(w, "read own team", err)
			return
		}
	}
	if _, err := a.Meta.AcceptInvites(ctx, u.Email, u.ID, now); err != nil {
		a.internal(w, "accept invites", err)
		return
	}
	u.LastSignInAt, u.UpdatedAt = now, now
	if err := a.Meta.UpdateUser(ctx, u); err != nil {
		a.internal(w, "update user", err)
		return
	}
	sess := model.AuthSession{ID: uuid.New(), UserID: u.ID, RefreshID: uuid.New(), CreatedAt: now}
	pair, err := a.Tokens.Issue(u.ID, sess.ID, sess.RefreshID)
	if err != nil {
		a.internal(w, "issue tokens", err)
		return
	}
	sess.ExpiresAt = pair.RefreshExpiresAt.UTC()
	if err := a.Meta.CreateAuthSession(ctx, sess); err != nil {
		a.internal(w, "create session", err)
		return
	}
	a.setCookies(w, pair.AccessToken, pair.RefreshToken)
	httpx.JSON(w, http.StatusOK, map[string]any{"access_token": pair.AccessToken, "refresh_token": pair.RefreshToken,
		"session_id": sess.ID, "user_id": u.ID, "own_team_id": team.ID})
}

// setCookies hands the tokens to browsers too; an empty token clears its cookie.
func (a *API) setCookies(w http.ResponseWriter, access, refresh string) {
	for _, c := range []struct {
		name, value string
		ttl         int
	}{{"access_token", access, int(a.Tokens.AccessTTL.Seconds())}, {"refresh_token", refresh, int(a.Tokens.RefreshTTL.Seconds())}} {
		ck := &http.Cookie{Name: c.name, Value: c.value, Path: "/", HttpOnly: true, Secure: a.SecureCookies,
			SameSite: http.SameSiteLaxMode, MaxAge: c.ttl}
		if c.value == "" {
			ck.MaxAge = -1
		}
		http.SetCookie(w, ck)
	}
}

// validateInvite: {valid: true} for a usable invite, 400 for an unknown one (the contract's
// statuses are 200, 400, 410, 429, 500), 410 when expired.
func (a *API) validateInvite(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InviteID string `json:"invite_id"`
	}
	if !decode(w, r, &req) {
		return
	}
	id, err := uuid.Parse(req.InviteID)
	if err != nil {
		httpx.Error(w, http.StatusBadRequest, "invite_id must be a UUID")
		return
	}
	inv, err := a.Meta.Invite(r.Context(), id)
	if errors.Is(err, sinks.ErrNotFound) {
		httpx.Error(w, http.StatusBadRequest, "no such invite")
		return
	}
	if err != nil {
		a.internal(w, "read invite", err)
		return
	}
	if inv.Expired(a.now()) {
		httpx.Error(w, http.StatusGone, "this invite has expired; ask for a new one")
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]bool{"valid": true})
}

// refreshClaims reads the refresh token of a request and checks its session.
func (a *API) refreshSession(w http.ResponseWriter, r *http.Request) (model.AuthSession, uuid.UUID, bool) {
	tok := bearer(r, "refresh_token")
	if tok == "" {
		httpx.Error(w, http.StatusUnauthorized, "send the refresh token as Authorization: Bearer <token> or the refresh_token cookie")
		return model.AuthSession{}, uuid.Nil, false
	}
	c, err := a.Tokens.ParseRefresh(tok)
	if err != nil {
		httpx.Error(w, http.StatusUnauthorized, "refresh token invalid or expired; sign in again")
		return model.AuthSession{}, uuid.Nil, false
	}
	s, err := a.Meta.AuthSession(r.Context(), c.SessionID)
	if errors.Is(err, sinks.ErrNotFound) || (err == nil && (s.UserID != c.UserID || s.RefreshID != c.RefreshID || !a.now().Before(s.ExpiresAt))) {
		httpx.Error(w, http.StatusUnauthorized, "refresh token was used already or its session ended; sign in again")
		return model.AuthSession{}, uuid.Nil, false
	}
	if err != nil {
		a.internal(w, "read session", err)
		return model.AuthSession{}, uuid.Nil, false
	}
	return s, c.RefreshID, true
}

// refresh rotates the session: a new token pair, and the old refresh token stops working.
func (a *API) refresh(w http.ResponseWriter, r *http.Request) {
	s, old, ok := a.refreshSession(w, r)
	if !ok {
		return
	}
	next := uuid.New()
	pair, err := a.Tokens.Issue(s.UserID, s.ID, next)
	if err != nil {
		a.internal(w, "issue tokens", err)
		return
	}
	if err := a.Meta.RotateAuthSession(r.Context(), s.ID, old, next, pair.RefreshExpiresAt.UTC()); err != nil {
		if errors.Is(err, sinks.ErrConflict) || errors.Is(err, sinks.ErrNotFound) {
			httpx.Error(w, http.StatusUnauthorized, "refresh token was used already; sign in again")
			return
		}
		a.internal(w, "rotate session", err)
		return
	}
	a.setCookies(w, pair.AccessToken, pair.RefreshToken)
	httpx.JSON(w, http.StatusOK, map[string]string{"access_token": pair.AccessToken, "refresh_token": pair.RefreshToken})
}

// signOut ends the session of the refresh token: its access tokens stop working at once.
func (a *API) signOut(w http.ResponseWriter, r *http.Request) {
	s, _, ok := a.refreshSession(w, r)
	if !ok {
		return
	}
	if err := a.Meta.DeleteAuthSession(r.Context(), s.ID); err != nil && !errors.Is(err, sinks.ErrNotFound) {
		a.internal(w, "end session", err)
		return
	}
	a.setCookies(w, "", "")
	httpx.JSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// session answers {user} for an active session.
func (a *API) session(w http.ResponseWriter, r *http.Request) {
	u, err := a.Meta.User(r.Context(), userID(r.Context()))
	if errors.Is(err, sinks.ErrNotFound) {
		httpx.Error(w, http.StatusUnauthorized, "the user of this session no longer exists")
		return
	}
	if err != nil {
		a.internal(w, "read user", err)
		return
	}
	team, err := a.Meta.OwnTeam(r.Context(), u.ID)
	if err != nil {
		a.internal(w, "read own team", err)
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"user": map[string]any{"id": u.ID, "own_team_id": team.ID, "name": u.Name,
		"email": u.Email, "avatar_url": nil, // svc keeps no avatar; the dashboard draws initials
		"confirmed_at": ts(u.ConfirmedAt), "last_sign_in_at": ts(u.LastSignInAt),
		"created_at": ts(u.CreatedAt), "updated_at": ts(u.UpdatedAt)}})
}
