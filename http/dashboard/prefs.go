package dashboard

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Notification preferences of the signed-in user (issue #15), kept in the metadata store
// (sinks.NotifPrefs): GET and PATCH /prefs/notifPrefs, in the reference web dashboard's shape.

// prefsRoutes mounts /prefs; r requires a signed-in user.
func (a *API) prefsRoutes(r chi.Router) {
	r.Get("/prefs/notifPrefs", a.getNotifPrefs)
	r.Patch("/prefs/notifPrefs", a.setNotifPrefs)
}

func notifPrefsJSON(p model.NotifPrefs) map[string]any {
	return map[string]any{"error_spike": p.ErrorSpike, "app_hang_spike": p.AppHangSpike, "bug_report": p.BugReport,
		"daily_summary": p.DailySummary, "created_at": ts(p.CreatedAt), "updated_at": ts(p.UpdatedAt)}
}

// notifPrefs reads the caller's preferences. Never set, they are model.DefaultNotifPrefs as of
// the user's creation (the reference system stores them when it creates the user).
func (a *API) notifPrefs(w http.ResponseWriter, r *http.Request) (p model.NotifPrefs, ok bool) {
	np, ok := a.Meta.(sinks.NotifPrefs)
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "this metadata store does not keep notification preferences")
		return p, false
	}
	me := userID(r.Context())
	p, err := np.NotifPrefs(r.Context(), me)
	if err == nil {
		return p, true
	}
	if !errors.Is(err, sinks.ErrNotFound) {
		a.internal(w, "read notification preferences", err)
		return p, false
	}
	u, err := a.Meta.User(r.Context(), me)
	if err != nil {
		a.internal(w, "read user", err)
		return p, false
	}
	p = model.DefaultNotifPrefs()
	p.CreatedAt, p.UpdatedAt = u.CreatedAt, u.CreatedAt
	return p, true
}

func (a *API) getNotifPrefs(w http.ResponseWriter, r *http.Request) {
	if p, ok := a.notifPrefs(w, r); ok {
		httpx.JSON(w, http.StatusOK, notifPrefsJSON(p))
	}
}

// setNotifPrefs applies the preferences sent ({"error_spike", "app_hang_spike", "bug_report",
// "daily_summary"}, booleans, at least one) over the current ones. Other members are ignored:
// the dashboard sends back the whole object it read, times included.
func (a *API) setNotifPrefs(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ErrorSpike   *bool `json:"error_spike"`
		AppHangSpike *bool `json:"app_hang_spike"`
		BugReport    *bool `json:"bug_report"`
		DailySummary *bool `json:"daily_summary"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.ErrorSpike == nil && req.AppHangSpike == nil && req.BugReport == nil && req.DailySummary == nil {
		httpx.Error(w, http.StatusBadRequest, "send at least one of error_spike, app_hang_spike, bug_report, daily_summary as a boolean")
		return
	}
	p, ok := a.notifPrefs(w, r)
	if !ok {
		return
	}
	for _, f := range []struct {
		v   *bool
		dst *bool
	}{{req.ErrorSpike, &p.ErrorSpike}, {req.AppHangSpike, &p.AppHangSpike}, {req.BugReport, &p.BugReport}, {req.DailySummary, &p.DailySummary}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	now := a.now()
	if p.CreatedAt.IsZero() || p.CreatedAt.After(now) {
		p.CreatedAt = now
	}
	p.UpdatedAt = now
	if err := a.Meta.(sinks.NotifPrefs).SetNotifPrefs(r.Context(), userID(r.Context()), p); err != nil {
		a.storeErr(w, "set notification preferences", err)
		return
	}
	httpx.JSON(w, http.StatusOK, notifPrefsJSON(p))
}
