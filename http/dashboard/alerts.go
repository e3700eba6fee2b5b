package dashboard

import "github.com/go-chi/chi/v5"

// alertRoutes mounts the alert list (issue #12); alerts are raised by app actors.
func (a *API) alertRoutes(r chi.Router) {}
