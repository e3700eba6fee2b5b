package dashboard

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/sinks"
)

// alertRoutes mounts the alert list (issue #12); alerts are raised by app actors as batches
// arrive and kept in the metadata store (sinks.Alerts).
func (a *API) alertRoutes(r chi.Router) {
	r.Get("/alerts", a.alerts)
}

type alertJSON struct {
	ID        string `json:"id"`
	TeamID    string `json:"team_id"`
	AppID     string `json:"app_id"`
	EntityID  string `json:"entity_id"`
	Type      string `json:"type"`
	Message   string `json:"message"`
	URL       string `json:"url"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// alerts serves GET /apps/{id}/alerts: the app's alerts created in the window (default the last
// 7 days), newest first, paged by limit (1–1000, default 10) and offset.
func (a *API) alerts(w http.ResponseWriter, r *http.Request) {
	st, ok := a.Meta.(sinks.Alerts)
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "this metadata store does not keep alerts")
		return
	}
	p, err := a.readParams(r)
	if err != nil {
		a.fail(w, "read filters", err)
		return
	}
	from, to, err := p.window(a.now())
	if err != nil {
		a.fail(w, "read window", err)
		return
	}
	limit, offset, err := offsetPage(p)
	if err != nil {
		a.fail(w, "read page", err)
		return
	}
	list, err := st.AppAlerts(r.Context(), appOf(r.Context()).ID, time.Unix(0, from), time.Unix(0, to), limit+1, offset)
	if err != nil {
		a.internal(w, "list alerts", err)
		return
	}
	out := pageOf[alertJSON]{Meta: offsetMeta(len(list), limit, offset), Results: []alertJSON{}}
	for _, al := range list[:min(len(list), limit)] {
		out.Results = append(out.Results, alertJSON{ID: al.ID.String(), TeamID: al.TeamID.String(), AppID: al.AppID.String(),
			EntityID: al.EntityID, Type: al.Type, Message: al.Message, URL: al.URL,
			CreatedAt: al.CreatedAt.UTC().Format(time.RFC3339Nano), UpdatedAt: al.UpdatedAt.UTC().Format(time.RFC3339Nano)})
	}
	httpx.JSON(w, http.StatusOK, out)
}
