package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

func teamJSON(t model.Team, r model.Role) map[string]any {
	m := map[string]any{"id": t.ID, "name": t.Name, "created_at": ts(t.CreatedAt), "updated_at": ts(t.UpdatedAt)}
	if r != "" {
		m["role"] = r
	}
	return m
}

func (a *API) createTeam(w http.ResponseWriter, r *http.Request) {
	name, ok := decodeName(w, r, "team name")
	if !ok {
		return
	}
	now := a.now()
	t := model.Team{ID: uuid.New(), Name: name, CreatedAt: now, UpdatedAt: now}
	if err := a.Meta.CreateTeam(r.Context(), t, userID(r.Context())); err != nil {
		a.storeErr(w, "create team", err)
		return
	}
	httpx.JSON(w, http.StatusCreated, teamJSON(t, model.RoleOwner))
}

func (a *API) listTeams(w http.ResponseWriter, r *http.Request) {
	trs, err := a.Meta.TeamsOfUser(r.Context(), userID(r.Context()))
	if err != nil {
		a.storeErr(w, "list teams", err)
		return
	}
	out := make([]map[string]any, 0, len(trs))
	for _, tr := range trs {
		out = append(out, teamJSON(tr.Team, tr.Role))
	}
	httpx.JSON(w, http.StatusOK, out)
}

func (a *API) renameTeam(w http.ResponseWriter, r *http.Request) {
	name, ok := decodeName(w, r, "team name")
	if !ok {
		return
	}
	t := teamOf(r.Context())
	now := a.now()
	if err := a.Meta.RenameTeam(r.Context(), t.ID, name, now); err != nil {
		a.storeErr(w, "rename team", err)
		return
	}
	t.Name, t.UpdatedAt = name, now
	httpx.JSON(w, http.StatusOK, teamJSON(t, role(r.Context())))
}

// appJSON is the shape of an app, with its active API key so a user can configure an SDK.
func (a *API) appJSON(ctx context.Context, app model.App) (map[string]any, error) {
	m := map[string]any{"id": app.ID, "team_id": app.TeamID, "name": app.Name, "unique_identifier": app.UniqueID,
		"platform": app.Platform, "retention": app.RetentionDays, "created_at": ts(app.CreatedAt), "updated_at": ts(app.UpdatedAt)}
	addOnboarding(m, app)
	k, err := a.Meta.ActiveAPIKey(ctx, app.ID)
	if err != nil && !errors.Is(err, sinks.ErrNotFound) {
		return nil, err
	}
	if err == nil {
		m["api_key"] = keyJSON(k)
	}
	return m, nil
}

// writeApp answers with an app and its active key.
func (a *API) writeApp(w http.ResponseWriter, r *http.Request, status int, app model.App) {
	m, err := a.appJSON(r.Context(), app)
	if err != nil {
		a.internal(w, "read API key", err)
		return
	}
	httpx.JSON(w, status, m)
}

func keyJSON(k model.APIKey) map[string]any {
	return map[string]any{"key": k.Key, "created_at": ts(k.CreatedAt), "last_seen": ts(k.LastSeen), "revoked": k.Revoked}
}

func (a *API) listApps(w http.ResponseWriter, r *http.Request) {
	apps, err := a.Meta.AppsOfTeam(r.Context(), teamOf(r.Context()).ID)
	if err != nil {
		a.storeErr(w, "list apps", err)
		return
	}
	out := make([]map[string]any, 0, len(apps))
	for _, app := range apps {
		m, err := a.appJSON(r.Context(), app)
		if err != nil {
			a.internal(w, "read API key", err)
			return
		}
		out = append(out, m)
	}
	httpx.JSON(w, http.StatusOK, out)
}

func (a *API) getTeamApp(w http.ResponseWriter, r *http.Request) {
	id, ok := parseID(w, r, "appID", "app")
	if !ok {
		return
	}
	app, err := a.Meta.App(r.Context(), id)
	if errors.Is(err, sinks.ErrNotFound) || (err == nil && app.TeamID != teamOf(r.Context()).ID) {
		httpx.Error(w, http.StatusNotFound, fmt.Sprintf("team has no app %s", id))
		return
	}
	if err != nil {
		a.internal(w, "read app", err)
		return
	}
	a.writeApp(w, r, http.StatusOK, app)
}

func (a *API) createApp(w http.ResponseWriter, r *http.Request) {
	name, ok := decodeName(w, r, "app name")
	if !ok {
		return
	}
	now := a.now()
	app := model.App{ID: uuid.New(), TeamID: teamOf(r.Context()).ID, Name: name, RetentionDays: model.DefaultRetentionDays, CreatedAt: now, UpdatedAt: now}
	key := model.APIKey{AppID: app.ID, Key: model.NewAPIKey(), CreatedAt: now}
	if err := a.Meta.CreateApp(r.Context(), app, key); err != nil {
		a.storeErr(w, "create app", err)
		return
	}
	a.writeApp(w, r, http.StatusCreated, app)
}

func (a *API) inviteJSON(i model.Invite) map[string]any {
	return map[string]any{"id": i.ID, "team_id": i.TeamID, "email": i.Email, "role": i.Role, "invited_by": i.InvitedBy,
		"created_at": ts(i.CreatedAt), "updated_at": ts(i.UpdatedAt), "expires_at": ts(i.ExpiresAt), "expired": i.Expired(a.now())}
}

func (a *API) listInvites(w http.ResponseWriter, r *http.Request) {
	invs, err := a.Meta.Invites(r.Context(), teamOf(r.Context()).ID)
	if err != nil {
		a.storeErr(w, "list invites", err)
		return
	}
	out := make([]map[string]any, 0, len(invs))
	emails := map[uuid.UUID]string{} // of the inviters: a team has few
	for _, i := range invs {
		j := a.inviteJSON(i)
		// The reference dashboard's names: who invited (by email) and until when it is valid.
		email, ok := emails[i.InvitedBy]
		if !ok {
			u, err := a.Meta.User(r.Context(), i.InvitedBy)
			switch {
			case err == nil:
				email = u.Email
			case !errors.Is(err, sinks.ErrNotFound): // a deleted inviter shows as ""
				a.storeErr(w, "read inviter", err)
				return
			}
			emails[i.InvitedBy] = email
		}
		j["invited_by_email"], j["valid_until"] = email, j["expires_at"]
		out = append(out, j)
	}
	httpx.JSON(w, http.StatusOK, out)
}

// checkGrant refuses a role the caller may not hand out: unknown, or above their own.
func checkGrant(w http.ResponseWriter, r *http.Request, want model.Role) bool {
	if !want.Valid() {
		httpx.Error(w, http.StatusBadRequest, fmt.Sprintf("role %q is not one of owner, admin, developer, viewer", want))
		return false
	}
	if want.Rank() > role(r.Context()).Rank() {
		httpx.Error(w, http.StatusForbidden, fmt.Sprintf("you cannot grant %s: it ranks above your role %s", want, role(r.Context())))
		return false
	}
	return true
}

// invite answers POST /teams/{id}/invite with a list of {email, role} (a single object is
// accepted too): every invite at or below the caller's role.
func (a *API) invite(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if !decode(w, r, &raw) {
		return
	}
	type item struct {
		Email string     `json:"email"`
		Role  model.Role `json:"role"`
	}
	var items []item
	if err := json.Unmarshal(raw, &items); err != nil {
		var one item
		if err := json.Unmarshal(raw, &one); err != nil {
			httpx.Error(w, http.StatusBadRequest, `want [{"email": …, "role": …}]`)
			return
		}
		items = []item{one}
	}
	if len(items) == 0 || len(items) > 100 {
		httpx.Error(w, http.StatusBadRequest, "invite 1 to 100 people at a time")
		return
	}
	now := a.now()
	invs := make([]model.Invite, 0, len(items))
	for i, it := range items {
		addr, err := mail.ParseAddress(strings.TrimSpace(it.Email))
		if err != nil || addr.Address != strings.TrimSpace(it.Email) {
			httpx.Error(w, http.StatusBadRequest, fmt.Sprintf("invite %d: %q is not an email address", i, it.Email))
			return
		}
		if !checkGrant(w, r, it.Role) {
			return
		}
		invs = append(invs, model.Invite{ID: uuid.New(), TeamID: teamOf(r.Context()).ID, Email: addr.Address, Role: it.Role,
			InvitedBy: userID(r.Context()), CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(model.InviteTTL)})
	}
	if err := a.Meta.CreateInvites(r.Context(), invs); err != nil {
		a.storeErr(w, "create invites", err)
		return
	}
	out := make([]map[string]any, 0, len(invs))
	for _, i := range invs {
		out = append(out, a.inviteJSON(i))
	}
	httpx.JSON(w, http.StatusCreated, out)
}

// teamInvite loads an invite of the route's team that the caller may manage.
func (a *API) teamInvite(w http.ResponseWriter, r *http.Request) (model.Invite, bool) {
	id, ok := parseID(w, r, "inviteID", "invite")
	if !ok {
		return model.Invite{}, false
	}
	inv, err := a.Meta.Invite(r.Context(), id)
	if errors.Is(err, sinks.ErrNotFound) || (err == nil && inv.TeamID != teamOf(r.Context()).ID) {
		httpx.Error(w, http.StatusNotFound, fmt.Sprintf("team has no invite %s", id))
		return inv, false
	}
	if err != nil {
		a.internal(w, "read invite", err)
		return inv, false
	}
	if inv.Role.Rank() > role(r.Context()).Rank() {
		httpx.Error(w, http.StatusForbidden, "this invite is for a role above yours")
		return inv, false
	}
	return inv, true
}

// updateInvite changes an invite's role (optional) and renews it for another 7 days.
func (a *API) updateInvite(w http.ResponseWriter, r *http.Request) {
	inv, ok := a.teamInvite(w, r)
	if !ok {
		return
	}
	var req struct {
		Role *model.Role `json:"role"`
	}
	if r.ContentLength != 0 && !decode(w, r, &req) {
		return
	}
	if req.Role != nil {
		if !checkGrant(w, r, *req.Role) {
			return
		}
		inv.Role = *req.Role
	}
	now := a.now()
	inv.UpdatedAt, inv.ExpiresAt = now, now.Add(model.InviteTTL)
	if err := a.Meta.UpdateInvite(r.Context(), inv); err != nil {
		a.storeErr(w, "update invite", err)
		return
	}
	httpx.JSON(w, http.StatusOK, a.inviteJSON(inv))
}

func (a *API) deleteInvite(w http.ResponseWriter, r *http.Request) {
	inv, ok := a.teamInvite(w, r)
	if !ok {
		return
	}
	if err := a.Meta.DeleteInvite(r.Context(), inv.ID); err != nil {
		a.storeErr(w, "delete invite", err)
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (a *API) listMembers(w http.ResponseWriter, r *http.Request) {
	ms, err := a.Meta.Members(r.Context(), teamOf(r.Context()).ID)
	if err != nil {
		a.storeErr(w, "list members", err)
		return
	}
	out := make([]map[string]any, 0, len(ms))
	for _, m := range ms {
		u, err := a.Meta.User(r.Context(), m.UserID)
		if err != nil {
			a.internal(w, "read member", err)
			return
		}
		out = append(out, map[string]any{"id": u.ID, "name": u.Name, "email": u.Email, "role": m.Role,
			"last_sign_in_at": ts(u.LastSignInAt), "created_at": ts(m.CreatedAt), "updated_at": ts(m.UpdatedAt)})
	}
	httpx.JSON(w, http.StatusOK, out)
}

// target loads the member the route names; callers never act on a member ranked above them.
func (a *API) target(w http.ResponseWriter, r *http.Request) (uuid.UUID, model.Role, bool) {
	id, ok := parseID(w, r, "memberID", "member")
	if !ok {
		return id, "", false
	}
	rl, err := a.Meta.Role(r.Context(), teamOf(r.Context()).ID, id)
	if errors.Is(err, sinks.ErrNotFound) {
		httpx.Error(w, http.StatusNotFound, fmt.Sprintf("user %s is not a member of this team", id))
		return id, "", false
	}
	if err != nil {
		a.internal(w, "read role", err)
		return id, "", false
	}
	if rl.Rank() > role(r.Context()).Rank() {
		httpx.Error(w, http.StatusForbidden, fmt.Sprintf("you cannot change a member whose role (%s) ranks above yours", rl))
		return id, "", false
	}
	return id, rl, true
}

func (a *API) removeMember(w http.ResponseWriter, r *http.Request) {
	id, _, ok := a.target(w, r)
	if !ok {
		return
	}
	if err := a.Meta.RemoveMember(r.Context(), teamOf(r.Context()).ID, id); err != nil {
		a.storeErr(w, "remove member", err)
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (a *API) changeRole(w http.ResponseWriter, r *http.Request) {
	id, _, ok := a.target(w, r)
	if !ok {
		return
	}
	var req struct {
		Role model.Role `json:"role"`
	}
	if !decode(w, r, &req) || !checkGrant(w, r, req.Role) {
		return
	}
	if err := a.Meta.SetMemberRole(r.Context(), teamOf(r.Context()).ID, id, req.Role, a.now()); err != nil {
		a.storeErr(w, "change role", err)
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"ok": true, "role": req.Role})
}

// rolesUpTo lists the roles at or below r, highest first.
func rolesUpTo(r model.Role) []model.Role {
	var out []model.Role
	for _, x := range []model.Role{model.RoleOwner, model.RoleAdmin, model.RoleDeveloper, model.RoleViewer} {
		if x.Rank() <= r.Rank() {
			out = append(out, x)
		}
	}
	return out
}

// authz tells the caller what they may do in the team, so a dashboard can show or hide
// controls; every answer is what the routes allow (TestAuthzMatchesRoutes calls them all). The
// names of svc (role, can_invite, can_manage_chat_app, …) and those the reference web dashboard
// reads (can_invite_roles, can_rename_app, …, members[].authz) are both given.
func (a *API) authz(w http.ResponseWriter, r *http.Request) {
	me := role(r.Context())
	team := teamOf(r.Context())
	admin := me.Rank() >= model.RoleAdmin.Rank()
	ms, err := a.Meta.Members(r.Context(), team.ID)
	if err != nil {
		a.storeErr(w, "list members", err)
		return
	}
	// The chat app can be switched, tested and removed only once a webhook is set, and only
	// with PATCH /teams/{id}/chatapp/status: svc does not connect Slack through OAuth.
	_, err = a.Meta.ChatApp(r.Context(), team.ID)
	if err != nil && !errors.Is(err, sinks.ErrNotFound) {
		a.internal(w, "read chat app", err)
		return
	}
	chatAppSet := err == nil
	owners := 0
	for _, m := range ms {
		if m.Role == model.RoleOwner {
			owners++
		}
	}
	members := make([]map[string]any, 0, len(ms))
	for _, m := range ms {
		u, err := a.Meta.User(r.Context(), m.UserID)
		if err != nil {
			a.internal(w, "read member", err)
			return
		}
		// Admins and owners change and remove members ranked at most as high as themselves;
		// the last owner keeps the owner role (sinks.ErrLastOwner).
		manage := admin && m.Role.Rank() <= me.Rank()
		lastOwner := m.Role == model.RoleOwner && owners == 1
		var to []model.Role
		switch {
		case manage && lastOwner:
			to = []model.Role{model.RoleOwner}
		case manage:
			to = rolesUpTo(me)
		}
		remove := manage && !lastOwner
		members = append(members, map[string]any{
			"user_id": m.UserID, "role": m.Role, "can_change_role_to": to, "can_remove": remove,
			"id": u.ID, "name": u.Name, "email": u.Email, "last_sign_in_at": ts(u.LastSignInAt), "created_at": ts(m.CreatedAt),
			"authz": map[string]any{"current_user_assignable_roles_for_member": to, "current_user_can_remove_member": remove},
		})
	}
	httpx.JSON(w, http.StatusOK, map[string]any{
		"role":                         me,
		"can_invite":                   rolesUpTo(me),
		"can_rename_team":              me == model.RoleOwner,
		"can_manage_chat_app":          me == model.RoleOwner,
		"can_create_app":               admin,
		"can_change_app_settings":      admin,
		"can_change_bug_report_status": me.Rank() >= model.RoleDeveloper.Rank(),
		"members":                      members,

		"can_invite_roles":               rolesUpTo(me),
		"can_update_bug_reports":         me.Rank() >= model.RoleDeveloper.Rank(),
		"can_change_billing":             false, // svc has no billing
		"can_rename_app":                 admin,
		"can_change_retention":           admin,
		"can_rotate_api_key":             admin,
		"can_write_sdk_config":           admin,
		"can_change_app_threshold_prefs": admin,
		"can_manage_slack":               me == model.RoleOwner && chatAppSet,
	})
}

func (a *API) getChatApp(w http.ResponseWriter, r *http.Request) {
	c, err := a.Meta.ChatApp(r.Context(), teamOf(r.Context()).ID)
	if errors.Is(err, sinks.ErrNotFound) {
		httpx.JSON(w, http.StatusOK, map[string]any{"configured": false, "enabled": false, "webhook_url": nil})
		return
	}
	if err != nil {
		a.internal(w, "read chat app", err)
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"configured": true, "enabled": c.Enabled, "webhook_url": c.WebhookURL, "updated_at": ts(c.UpdatedAt)})
}

// setChatApp turns the chat app on or off, and sets its webhook URL when one is given.
func (a *API) setChatApp(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Enabled    *bool   `json:"enabled"`
		WebhookURL *string `json:"webhook_url"`
	}
	if !decode(w, r, &req) {
		return
	}
	team := teamOf(r.Context()).ID
	c, err := a.Meta.ChatApp(r.Context(), team)
	if err != nil && !errors.Is(err, sinks.ErrNotFound) {
		a.internal(w, "read chat app", err)
		return
	}
	c.TeamID = team
	if req.WebhookURL != nil {
		u, err := url.Parse(*req.WebhookURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			httpx.Error(w, http.StatusBadRequest, "webhook_url must be an absolute http(s) URL")
			return
		}
		c.WebhookURL = *req.WebhookURL
	}
	if req.Enabled == nil && req.WebhookURL == nil {
		httpx.Error(w, http.StatusBadRequest, "send enabled and/or webhook_url")
		return
	}
	if req.Enabled != nil {
		c.Enabled = *req.Enabled
	}
	if c.WebhookURL == "" {
		httpx.Error(w, http.StatusBadRequest, "set webhook_url before enabling the chat app")
		return
	}
	c.UpdatedAt = a.now()
	if err := a.Meta.SetChatApp(r.Context(), c); err != nil {
		a.storeErr(w, "set chat app", err)
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"configured": true, "enabled": c.Enabled, "webhook_url": c.WebhookURL, "updated_at": ts(c.UpdatedAt)})
}

// testChatApp posts a message to the team's incoming webhook, as Slack's protocol has it:
// a JSON body {"text": …}, answered by 200.
func (a *API) testChatApp(w http.ResponseWriter, r *http.Request) {
	t := teamOf(r.Context())
	c, err := a.Meta.ChatApp(r.Context(), t.ID)
	if errors.Is(err, sinks.ErrNotFound) || (err == nil && c.WebhookURL == "") {
		httpx.Error(w, http.StatusBadRequest, "no chat app is set for this team")
		return
	}
	if err != nil {
		a.internal(w, "read chat app", err)
		return
	}
	body, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("svc: test message for team %s. Alerts of this team will be posted here.", t.Name)})
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.WebhookURL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	client := a.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		httpx.Error(w, http.StatusBadGateway, "the webhook could not be reached: "+err.Error())
		return
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		httpx.Error(w, http.StatusBadGateway, fmt.Sprintf("the webhook answered %s", resp.Status))
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// usage answers GET /teams/{id}/usage: per app, per month, the sessions, events, spans and
// bytes stored. Optional query: from, to (RFC 3339); default the last 12 months. `monthly`
// lists the months with data; `monthly_app_usage`, the reference web dashboard's shape, every
// month of the window.
func (a *API) usage(w http.ResponseWriter, r *http.Request) {
	to := a.now()
	from := time.Date(to.Year(), to.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -11, 0)
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &from}, {"to", &to}} {
		if v := r.URL.Query().Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				httpx.Error(w, http.StatusBadRequest, p.name+" must be an RFC 3339 timestamp")
				return
			}
			*p.dst = t.UTC()
		}
	}
	if !from.Before(to) {
		httpx.Error(w, http.StatusBadRequest, "from must be before to")
		return
	}
	apps, err := a.Meta.AppsOfTeam(r.Context(), teamOf(r.Context()).ID)
	if err != nil {
		a.storeErr(w, "list apps", err)
		return
	}
	out := make([]map[string]any, 0, len(apps))
	for _, app := range apps {
		months, err := a.Events.Usage(r.Context(), app.ID, from, to)
		if err != nil {
			a.internal(w, "read usage", err)
			return
		}
		ms := make([]map[string]any, 0, len(months))
		for _, m := range months {
			ms = append(ms, map[string]any{"month": m.Month, "sessions": m.Sessions, "events": m.Events, "spans": m.Spans, "bytes": m.Bytes})
		}
		out = append(out, map[string]any{"app_id": app.ID, "app_name": app.Name, "monthly": ms,
			"monthly_app_usage": monthlyAppUsage(months, from, to)})
	}
	httpx.JSON(w, http.StatusOK, out)
}

// monthlyAppUsage is the usage of every UTC month overlapping [from, to), oldest first, months
// without data as zeros, as the reference web dashboard reads it: month_year as "Jan 2006",
// sessions, events, spans and bytes_in.
func monthlyAppUsage(months []model.MonthUsage, from, to time.Time) []map[string]any {
	byMonth := make(map[string]model.MonthUsage, len(months))
	for _, m := range months {
		byMonth[m.Month] = m
	}
	out := []map[string]any{}
	if !from.Before(to) {
		return out
	}
	last := to.Add(-time.Nanosecond)
	end := time.Date(last.Year(), last.Month(), 1, 0, 0, 0, 0, time.UTC)
	for m := time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC); !m.After(end); m = m.AddDate(0, 1, 0) {
		u := byMonth[m.Format("2006-01")]
		out = append(out, map[string]any{"month_year": m.Format("Jan 2006"), "sessions": u.Sessions, "events": u.Events,
			"spans": u.Spans, "bytes_in": u.Bytes})
	}
	return out
}
