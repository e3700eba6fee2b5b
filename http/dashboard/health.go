package dashboard

import (
	"net/http"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
)

// healthPlot serves GET /apps/{id}/health/plots/instances, the overview's health chart: per
// bucket, sessions, crashes and ANRs (model.HealthPlot), with every filter of the other plots.
// timezone defaults to UTC like theirs, where the reference dashboard's API refuses its absence.
func (a *API) healthPlot(w http.ResponseWriter, r *http.Request) {
	_, f, by, ok := a.plotParams(w, r)
	if !ok {
		return
	}
	q := model.IssueQuery{EventFilter: f, Classes: []model.IssueClass{model.ClassCrash, model.ClassANR}}
	cells, err := a.Analytics.IssueCells(r.Context(), &q, model.Cells{Bucketed: true, By: by})
	if err != nil {
		a.internal(w, "query health plot", err)
		return
	}
	sessions, err := a.Analytics.SessionBuckets(r.Context(), &f, by)
	if err != nil {
		a.internal(w, "query health plot sessions", err)
		return
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, model.HealthPlot(sessions, cells, by))
}
