package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// authzAnswer is GET /teams/{id}/authz as both svc and the reference web dashboard read it.
type authzAnswer struct {
	Role                       model.Role   `json:"role"`
	CanInvite                  []model.Role `json:"can_invite"`
	CanRenameTeam              bool         `json:"can_rename_team"`
	CanManageChatApp           bool         `json:"can_manage_chat_app"`
	CanCreateApp               bool         `json:"can_create_app"`
	CanChangeAppSettings       bool         `json:"can_change_app_settings"`
	CanChangeBugReportStatus   bool         `json:"can_change_bug_report_status"`
	CanInviteRoles             []model.Role `json:"can_invite_roles"`
	CanUpdateBugReports        bool         `json:"can_update_bug_reports"`
	CanChangeBilling           *bool        `json:"can_change_billing"`
	CanRenameApp               bool         `json:"can_rename_app"`
	CanChangeRetention         bool         `json:"can_change_retention"`
	CanRotateAPIKey            bool         `json:"can_rotate_api_key"`
	CanWriteSDKConfig          bool         `json:"can_write_sdk_config"`
	CanChangeAppThresholdPrefs bool         `json:"can_change_app_threshold_prefs"`
	CanManageSlack             bool         `json:"can_manage_slack"`
	Members                    []struct {
		UserID          uuid.UUID    `json:"user_id"`
		ID              uuid.UUID    `json:"id"`
		Name            string       `json:"name"`
		Email           string       `json:"email"`
		Role            model.Role   `json:"role"`
		CreatedAt       *string      `json:"created_at"`
		CanChangeRoleTo []model.Role `json:"can_change_role_to"`
		CanRemove       bool         `json:"can_remove"`
		Authz           *struct {
			Assignable []model.Role `json:"current_user_assignable_roles_for_member"`
			CanRemove  bool         `json:"current_user_can_remove_member"`
		} `json:"authz"`
	} `json:"members"`
}

func (f *fixture) authz(t *testing.T, who string) authzAnswer {
	t.Helper()
	code, b := f.call(t, http.MethodGet, "/teams/"+f.team.ID.String()+"/authz", f.tokens[who], nil)
	if code != 200 {
		t.Fatalf("authz as %s: %d %s", who, code, b)
	}
	var a authzAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("authz as %s: %v: %s", who, err, b)
	}
	return a
}

// flagRoute is the call a permission of GET /teams/{id}/authz stands for: a request that
// succeeds (2xx) when the caller may make it.
type flagRoute struct {
	method, pattern string
	body            func(f *fixture) any
	prep            func(t *testing.T, f *fixture) string // the path to call instead of the filled pattern
}

// authzFlags maps every boolean permission of the answer to its route.
var authzFlags = map[string]struct {
	get   func(a authzAnswer) bool
	route flagRoute
}{
	"can_rename_team":     {func(a authzAnswer) bool { return a.CanRenameTeam }, flagRoute{"PATCH", "/teams/{teamID}/rename", func(*fixture) any { return map[string]string{"name": "x"} }, nil}},
	"can_manage_chat_app": {func(a authzAnswer) bool { return a.CanManageChatApp }, flagRoute{"PATCH", "/teams/{teamID}/chatapp/status", func(f *fixture) any { return map[string]string{"webhook_url": f.webhook.URL} }, nil}},
	"can_create_app":      {func(a authzAnswer) bool { return a.CanCreateApp }, flagRoute{"POST", "/teams/{teamID}/apps", func(*fixture) any { return map[string]string{"name": "x"} }, nil}},
	"can_change_app_settings": {func(a authzAnswer) bool { return a.CanChangeAppSettings },
		flagRoute{"PATCH", "/apps/{appID}/rename", func(*fixture) any { return map[string]string{"name": "x"} }, nil}},
	"can_change_bug_report_status": {func(a authzAnswer) bool { return a.CanChangeBugReportStatus },
		flagRoute{"PATCH", "/apps/{appID}/bugReports/{bugReportID}", func(*fixture) any { return map[string]int{"status": 1} }, matrixBugReport}},
	"can_update_bug_reports": {func(a authzAnswer) bool { return a.CanUpdateBugReports },
		flagRoute{"PATCH", "/apps/{appID}/bugReports/{bugReportID}", func(*fixture) any { return map[string]int{"status": 1} }, matrixBugReport}},
	"can_rename_app": {func(a authzAnswer) bool { return a.CanRenameApp },
		flagRoute{"PATCH", "/apps/{appID}/rename", func(*fixture) any { return map[string]string{"name": "x"} }, nil}},
	"can_change_retention": {func(a authzAnswer) bool { return a.CanChangeRetention },
		flagRoute{"PATCH", "/apps/{appID}/retention", func(*fixture) any { return map[string]int{"retention": 90} }, nil}},
	"can_rotate_api_key": {func(a authzAnswer) bool { return a.CanRotateAPIKey }, flagRoute{"PATCH", "/apps/{appID}/apiKey", nil, nil}},
	"can_write_sdk_config": {func(a authzAnswer) bool { return a.CanWriteSDKConfig },
		flagRoute{"PATCH", "/apps/{appID}/config", func(*fixture) any { return map[string]float64{"http_sampling_rate": 5} }, nil}},
	"can_change_app_threshold_prefs": {func(a authzAnswer) bool { return a.CanChangeAppThresholdPrefs },
		flagRoute{"PATCH", "/apps/{appID}/thresholdPrefs", func(*fixture) any { return map[string]float64{"error_good_threshold": 97} }, nil}},
	"can_manage_slack": {func(a authzAnswer) bool { return a.CanManageSlack },
		flagRoute{"PATCH", "/teams/{teamID}/slack/status", func(*fixture) any { return map[string]bool{"is_active": false} }, nil}},
}

// TestAuthzMatchesRoutes proves, for every role, that GET /teams/{id}/authz says exactly what the
// routes allow: each permission is true if and only if its call succeeds (a fresh team per
// call), with and without a chat app; can_invite_roles lists exactly the roles an invite may
// carry; and each member's assignable roles and removal are exactly the role changes and the
// removal the routes accept, the last owner included. svc's names and the reference
// dashboard's agree.
func TestAuthzMatchesRoutes(t *testing.T) {
	for _, chat := range []bool{true, false} {
		for _, me := range roles {
			name := string(me)
			if !chat {
				name += "/no chat app"
			}
			t.Run(name, func(t *testing.T) {
				f := newFixture(t)
				if !chat {
					f.deleteChatApp(t)
				}
				a := f.authz(t, string(me))
				if a.Role != me {
					t.Errorf("role %q, want %q", a.Role, me)
				}
				if a.CanChangeBilling == nil || *a.CanChangeBilling {
					t.Errorf("can_change_billing %v, want false: svc has no billing", a.CanChangeBilling)
				}
				for flag, fl := range authzFlags {
					t.Run(flag, func(t *testing.T) {
						g := newFixture(t)
						if !chat {
							g.deleteChatApp(t)
						}
						path := g.fill(fl.route.pattern)
						if fl.route.prep != nil {
							path = fl.route.prep(t, g)
						}
						var body any
						if fl.route.body != nil {
							body = fl.route.body(g)
						}
						code, b := g.call(t, fl.route.method, path, g.tokens[string(me)], body)
						if allowed := code/100 == 2; allowed != fl.get(a) {
							t.Errorf("%s says %v, but %s %s answered %d: %s", flag, fl.get(a), fl.route.method, fl.route.pattern, code, b)
						}
					})
				}
			})
		}
	}

	for _, me := range roles {
		t.Run(string(me)+"/invites", func(t *testing.T) {
			f := newFixture(t)
			a := f.authz(t, string(me))
			if !slices.Equal(a.CanInvite, a.CanInviteRoles) {
				t.Errorf("can_invite %v and can_invite_roles %v differ", a.CanInvite, a.CanInviteRoles)
			}
			for _, r := range roles {
				code, b := f.call(t, http.MethodPost, "/teams/"+f.team.ID.String()+"/invite", f.tokens[string(me)],
					[]map[string]string{{"email": "new-" + string(r) + "@example.com", "role": string(r)}})
				if allowed := code/100 == 2; allowed != slices.Contains(a.CanInviteRoles, r) {
					t.Errorf("can_invite_roles %v, but inviting a %s answered %d: %s", a.CanInviteRoles, r, code, b)
				}
			}
		})
	}

	// Members: a team of one owner (the last owner), and one of two owners.
	for _, owners := range []int{1, 2} {
		for _, me := range roles {
			t.Run(string(me)+"/members/"+map[int]string{1: "one owner", 2: "two owners"}[owners], func(t *testing.T) {
				setup := func(t *testing.T) *fixture {
					f := newFixture(t)
					if owners == 2 {
						f.addOwner(t)
					}
					return f
				}
				a := setup(t).authz(t, string(me))
				if len(a.Members) != 4+owners-1 {
					t.Fatalf("%d members, want %d", len(a.Members), 4+owners-1)
				}
				// Each call gets a fresh team, whose users are found by name (their role, or outsider).
				for i, m := range a.Members {
					if m.ID != m.UserID || m.Email == "" || m.Name == "" || m.CreatedAt == nil || m.Authz == nil {
						t.Fatalf("member %d lacks the dashboard's fields: %+v", i, m)
					}
					if !slices.Equal(m.CanChangeRoleTo, m.Authz.Assignable) || m.CanRemove != m.Authz.CanRemove {
						t.Errorf("member %s: svc's can_change_role_to %v / can_remove %v differ from authz %+v", m.Role, m.CanChangeRoleTo, m.CanRemove, *m.Authz)
					}
					if m.Authz.Assignable != nil && len(m.Authz.Assignable) == 0 {
						t.Errorf("member %s: assignable roles are [], want null or a list", m.Role)
					}
					for _, r := range roles {
						f := setup(t)
						code, b := f.call(t, http.MethodPatch, "/teams/"+f.team.ID.String()+"/members/"+f.users[m.Name].ID.String()+"/role",
							f.tokens[string(me)], map[string]string{"role": string(r)})
						if allowed := code/100 == 2; allowed != slices.Contains(m.Authz.Assignable, r) {
							t.Errorf("as %s, member %s (%s) may become %v, but making them %s answered %d: %s",
								me, m.Name, m.Role, m.Authz.Assignable, r, code, b)
						}
					}
					f := setup(t)
					code, b := f.call(t, http.MethodDelete, "/teams/"+f.team.ID.String()+"/members/"+f.users[m.Name].ID.String(), f.tokens[string(me)], nil)
					if allowed := code/100 == 2; allowed != m.Authz.CanRemove {
						t.Errorf("as %s, member %s (%s) removable %v, but removing answered %d: %s", me, m.Name, m.Role, m.Authz.CanRemove, code, b)
					}
				}
			})
		}
	}
}

// deleteChatApp removes the fixture team's chat app.
func (f *fixture) deleteChatApp(t *testing.T) {
	t.Helper()
	if code, b := f.call(t, http.MethodDelete, "/teams/"+f.team.ID.String()+"/slack", f.tokens["owner"], nil); code != 200 {
		t.Fatalf("remove the chat app: %d %s", code, b)
	}
}

// addOwner makes the fixture's outsider a second owner of the team, so the first is not the last.
func (f *fixture) addOwner(t *testing.T) {
	t.Helper()
	if err := f.api.Meta.AddMember(context.Background(), model.Member{TeamID: f.team.ID, UserID: f.users["outsider"].ID,
		Role: model.RoleOwner, CreatedAt: f.now, UpdatedAt: f.now}); err != nil {
		t.Fatal(err)
	}
}
