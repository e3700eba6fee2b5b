// Package admin serves the operator API on the admin listener: creating users, apps and tokens
// without an identity provider, for operators and tests, and the debug view of the actors.
// Every route needs the admin token.
package admin

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/http/auth"
	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// API is the operator API.
type API struct {
	Token  string // the admin token callers must present as a bearer token
	Meta   sinks.MetaStore
	Tokens *auth.Issuer
	Actors actors.Directory // for the debug endpoint
	// Cluster is the cluster the node is a member of, for the debug endpoints; nil on a
	// single node.
	Cluster Cluster
	Now     func() time.Time
}

// Routes mounts the API's routes on r.
func (a *API) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(a.RequireToken)
		r.Post("/admin/users", a.createUser)
		r.Post("/admin/apps", a.createApp)
		r.Post("/admin/tokens", a.createToken)
		r.Get("/debug/cluster", a.clusterMembers)
		r.Get("/debug/actors", a.listActors)
		r.Get("/debug/actors/{kind}/*", a.actorState)
	})
}

// RequireToken admits requests that carry the admin token as a bearer token. The node puts it in
// front of every path of the admin listener (metrics and profiles too); Prometheus sends it with
// `authorization: {credentials: …}` in its scrape config.
func (a *API) RequireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || a.Token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(a.Token)) != 1 {
			httpx.Error(w, http.StatusUnauthorized, "admin token missing or wrong: send it as Authorization: Bearer <token> (it is in <data-dir>/admin.token or SVC_ADMIN_TOKEN)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (a *API) now() time.Time {
	if a.Now != nil {
		return a.Now().UTC()
	}
	return time.Now().UTC()
}

// decode reads a small JSON body into v, refusing unknown fields so typos surface.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		httpx.Error(w, http.StatusBadRequest, "malformed JSON body: "+err.Error())
		return false
	}
	return true
}

func (a *API) createUser(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Email string `json:"email"`
		Name  string `json:"name"`
	}
	if !decode(w, r, &req) {
		return
	}
	addr, err := mail.ParseAddress(req.Email)
	if err != nil || addr.Address != strings.TrimSpace(req.Email) {
		httpx.Error(w, http.StatusBadRequest, fmt.Sprintf("email %q is not a valid address", req.Email))
		return
	}
	name := strings.TrimSpace(req.Name)
	if name == "" {
		httpx.Error(w, http.StatusBadRequest, "name is required")
		return
	}
	now := a.now()
	u := model.User{ID: uuid.New(), Name: name, Email: addr.Address, ConfirmedAt: now, CreatedAt: now, UpdatedAt: now}
	team := model.Team{ID: uuid.New(), Name: name + "'s team", CreatedAt: now, UpdatedAt: now}
	if err := a.Meta.CreateUser(r.Context(), u, team); err != nil {
		if errors.Is(err, sinks.ErrConflict) {
			httpx.Error(w, http.StatusConflict, fmt.Sprintf("a user with email %s exists already", u.Email))
			return
		}
		httpx.Error(w, http.StatusInternalServerError, "create user: "+err.Error())
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]string{"user_id": u.ID.String(), "own_team_id": team.ID.String()})
}

func (a *API) createApp(w http.ResponseWriter, r *http.Request) {
	var req struct {
		TeamID string `json:"team_id"`
		Name   string `json:"name"`
	}
	if !decode(w, r, &req) {
		return
	}
	teamID, err := uuid.Parse(req.TeamID)
	if err != nil {
		httpx.Error(w, http.StatusBadRequest, fmt.Sprintf("team_id %q is not a UUID", req.TeamID))
		return
	}
	name := strings.TrimSpace(req.Name)
	if name == "" {
		httpx.Error(w, http.StatusBadRequest, "name is required")
		return
	}
	if _, err := a.Meta.Team(r.Context(), teamID); err != nil {
		if errors.Is(err, sinks.ErrNotFound) {
			httpx.Error(w, http.StatusNotFound, fmt.Sprintf("team %s does not exist", teamID))
			return
		}
		httpx.Error(w, http.StatusInternalServerError, "read team: "+err.Error())
		return
	}
	now := a.now()
	app := model.App{ID: uuid.New(), TeamID: teamID, Name: name, RetentionDays: model.DefaultRetentionDays, CreatedAt: now, UpdatedAt: now}
	key := model.APIKey{AppID: app.ID, Key: model.NewAPIKey(), CreatedAt: now}
	if err := a.Meta.CreateApp(r.Context(), app, key); err != nil {
		httpx.Error(w, http.StatusInternalServerError, "create app: "+err.Error())
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]string{"app_id": app.ID.String(), "api_key": key.Key})
}

func (a *API) createToken(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Email string `json:"email"`
	}
	if !decode(w, r, &req) {
		return
	}
	ctx := r.Context()
	u, err := a.Meta.UserByEmail(ctx, strings.TrimSpace(req.Email))
	if err != nil {
		if errors.Is(err, sinks.ErrNotFound) {
			httpx.Error(w, http.StatusNotFound, fmt.Sprintf("no user with email %q", req.Email))
			return
		}
		httpx.Error(w, http.StatusInternalServerError, "read user: "+err.Error())
		return
	}
	team, err := a.Meta.OwnTeam(ctx, u.ID)
	if err != nil {
		httpx.Error(w, http.StatusInternalServerError, "read own team: "+err.Error())
		return
	}
	now := a.now()
	sess := model.AuthSession{ID: uuid.New(), UserID: u.ID, RefreshID: uuid.New(), CreatedAt: now}
	pair, err := a.Tokens.Issue(u.ID, sess.ID, sess.RefreshID)
	if err != nil {
		httpx.Error(w, http.StatusInternalServerError, err.Error())
		return
	}
	sess.ExpiresAt = pair.RefreshExpiresAt.UTC()
	if err := a.Meta.CreateAuthSession(ctx, sess); err != nil {
		httpx.Error(w, http.StatusInternalServerError, "create session: "+err.Error())
		return
	}
	u.LastSignInAt, u.UpdatedAt = now, now
	if err := a.Meta.UpdateUser(ctx, u); err != nil {
		httpx.Error(w, http.StatusInternalServerError, "update user: "+err.Error())
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]string{
		"access_token":  pair.AccessToken,
		"refresh_token": pair.RefreshToken,
		"session_id":    sess.ID.String(),
		"user_id":       u.ID.String(),
		"own_team_id":   team.ID.String(),
	})
}
