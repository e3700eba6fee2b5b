package dashboard

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// TestAppRouteAccess: the app routes read the session, the app and the role with one store call
// (requireAppUser), and answer as before: a changed role, a removed member and a sign-out hold
// from the next request on; a bad app id is 400 only for a caller signed in, and an ended
// session is 401 whatever the app.
func TestAppRouteAccess(t *testing.T) {
	f := newFixture(t)
	app := "/apps/" + f.app.ID.String()
	team := "/teams/" + f.team.ID.String()
	viewer := f.users["viewer"].ID.String()
	steps := []struct {
		name, who, method, path string
		body                    any
		code                    int
		want                    string
	}{
		{"viewer reads", "viewer", http.MethodGet, app + "/config", nil, 200, "max_events_in_batch"},
		{"viewer may not rename", "viewer", http.MethodPatch, app + "/rename", map[string]string{"name": "x"}, 403, "needs the admin role or higher; yours is viewer"},
		{"owner promotes the viewer", "owner", http.MethodPatch, team + "/members/" + viewer + "/role", map[string]string{"role": "admin"}, 200, ""},
		{"the promotion holds at once", "viewer", http.MethodPatch, app + "/rename", map[string]string{"name": "renamed"}, 200, `"name":"renamed"`},
		{"owner removes the viewer", "owner", http.MethodDelete, team + "/members/" + viewer, nil, 200, ""},
		{"the removal holds at once", "viewer", http.MethodGet, app + "/config", nil, 403, "app " + f.app.ID.String() + " is not an app of your teams"},
		{"bad app id", "owner", http.MethodGet, "/apps/nope/config", nil, 400, `app id \"nope\" is not a UUID`},
		{"no token", "none", http.MethodGet, app + "/config", nil, 401, "sign in first"},
	}
	for _, s := range steps {
		code, b := f.call(t, s.method, s.path, f.tokens[s.who], s.body)
		if code != s.code || !strings.Contains(string(b), s.want) {
			t.Errorf("%s: %d %s, want %d with %q", s.name, code, b, s.code, s.want)
		}
	}

	// Sign-out ends access to every app route at once, whatever the app and its id.
	access, refresh := f.refreshToken(t, f.users["developer"].ID)
	if code, b := f.call(t, http.MethodGet, app+"/config", access, nil); code != 200 {
		t.Fatalf("before sign-out: %d %s", code, b)
	}
	if code, b := f.call(t, http.MethodDelete, "/auth/signout", refresh, nil); code != 200 {
		t.Fatalf("signout: %d %s", code, b)
	}
	for _, path := range []string{app + "/config", f.otherApp(t) + "/config", "/apps/nope/config"} {
		if code, b := f.call(t, http.MethodGet, path, access, nil); code != 401 || !strings.Contains(string(b), "the session has ended") {
			t.Errorf("GET %s after sign-out: %d %s, want 401", path, code, b)
		}
	}
}

// otherApp stores an app of the outsider's own team and returns its path.
func (f *fixture) otherApp(t *testing.T) string {
	t.Helper()
	own, err := f.api.Meta.OwnTeam(t.Context(), f.users["outsider"].ID)
	if err != nil {
		t.Fatalf("OwnTeam: %v", err)
	}
	a := model.App{ID: uuid.New(), TeamID: own.ID, Name: "other", RetentionDays: 30, CreatedAt: f.now, UpdatedAt: f.now}
	if err := f.api.Meta.CreateApp(t.Context(), a, model.APIKey{AppID: a.ID, Key: model.NewAPIKey(), CreatedAt: f.now}); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	return "/apps/" + a.ID.String()
}
