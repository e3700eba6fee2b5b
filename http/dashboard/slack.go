package dashboard

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// The reference web dashboard's Slack calls (issue #15), answered by the team's chat app: svc
// posts alerts to a Slack-compatible incoming webhook set with PATCH /teams/{id}/chatapp/status,
// and does not connect Slack workspaces through OAuth. So there is no connect-url: GET
// /teams/{id}/authz says can_manage_slack only once a webhook is set, and the dashboard then
// switches, tests and removes it with these routes.

// slackRoutes mounts /teams/{id}/slack; r is the team's router.
func (a *API) slackRoutes(r chi.Router) {
	r.Get("/slack", a.getSlack)
	r.With(need(model.RoleOwner)).Patch("/slack/status", a.setSlackStatus)
	r.With(need(model.RoleOwner)).Post("/slack/test", a.testChatApp)
	r.With(need(model.RoleOwner)).Delete("/slack", a.deleteSlack)
	r.Get("/slack/connect-url", noSlackOAuth)
}

// noSlackOAuth answers the Slack app installation calls (connect-url, and the OAuth callback's
// POST /slack/connect): svc posts to an incoming webhook and has no Slack app to install.
func noSlackOAuth(w http.ResponseWriter, _ *http.Request) {
	httpx.Error(w, http.StatusServiceUnavailable, "svc has no Slack app to install: set the team's incoming webhook with PATCH /teams/{id}/chatapp/status instead")
}

// slackJSON is a chat app as the dashboard reads a Slack integration. An incoming webhook names
// no workspace; its host stands for one, and its OAuth scope is Slack's incoming-webhook.
func slackJSON(c model.ChatApp) map[string]any {
	name := c.WebhookURL
	if u, err := url.Parse(c.WebhookURL); err == nil && u.Host != "" {
		name = u.Host
	}
	return map[string]any{"slack_team_name": name, "is_active": c.Enabled, "scopes": "incoming-webhook", "needs_reauth": false}
}

// chatApp reads the team's chat app; found is false (and nothing answered) when it has none.
func (a *API) chatApp(w http.ResponseWriter, r *http.Request) (c model.ChatApp, found, ok bool) {
	c, err := a.Meta.ChatApp(r.Context(), teamOf(r.Context()).ID)
	if errors.Is(err, sinks.ErrNotFound) {
		return c, false, true
	}
	if err != nil {
		a.internal(w, "read chat app", err)
		return c, false, false
	}
	return c, true, true
}

// noSlack answers 404 for a team without a chat app.
func noSlack(w http.ResponseWriter) {
	httpx.Error(w, http.StatusNotFound, "this team has no Slack webhook; set one with PATCH /teams/{id}/chatapp/status {\"webhook_url\"}")
}

// getSlack answers GET /teams/{id}/slack: null without a chat app.
func (a *API) getSlack(w http.ResponseWriter, r *http.Request) {
	c, found, ok := a.chatApp(w, r)
	switch {
	case !ok:
	case !found:
		httpx.JSON(w, http.StatusOK, nil)
	default:
		httpx.JSON(w, http.StatusOK, slackJSON(c))
	}
}

// setSlackStatus answers PATCH /teams/{id}/slack/status {"is_active": bool}: it turns the chat
// app on or off.
func (a *API) setSlackStatus(w http.ResponseWriter, r *http.Request) {
	var req struct {
		IsActive *bool `json:"is_active"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.IsActive == nil {
		httpx.Error(w, http.StatusBadRequest, "is_active (a boolean) is required")
		return
	}
	c, found, ok := a.chatApp(w, r)
	if !ok {
		return
	}
	if !found {
		noSlack(w)
		return
	}
	c.Enabled, c.UpdatedAt = *req.IsActive, a.now()
	if err := a.Meta.SetChatApp(r.Context(), c); err != nil {
		a.storeErr(w, "set chat app", err)
		return
	}
	httpx.JSON(w, http.StatusOK, slackJSON(c))
}

// deleteSlack answers DELETE /teams/{id}/slack: it removes the chat app, webhook and all.
func (a *API) deleteSlack(w http.ResponseWriter, r *http.Request) {
	d, ok := a.Meta.(sinks.ChatAppDeleter)
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "this metadata store cannot remove a chat app")
		return
	}
	err := d.DeleteChatApp(r.Context(), teamOf(r.Context()).ID)
	if errors.Is(err, sinks.ErrNotFound) {
		noSlack(w)
		return
	}
	if err != nil {
		a.internal(w, "remove chat app", err)
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]bool{"ok": true})
}
