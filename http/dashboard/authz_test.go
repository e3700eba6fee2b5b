package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/auth"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
	"github.com/svc-dev/svc/sinks/badgermeta"
	"github.com/svc-dev/svc/sinks/localblob"
)

// fixture is a dashboard API on embedded stores with a team of four members (one per role),
// an outsider, an app, an invite and a chat app pointing at a webhook receiver.
type fixture struct {
	api     *API
	srv     *httptest.Server
	router  chi.Router
	now     time.Time
	team    model.Team
	app     model.App
	invite  model.Invite
	users   map[string]model.User // by role name, plus "outsider"
	tokens  map[string]string     // access tokens by the same names
	webhook *httptest.Server
	posts   chan string
}

var roles = []model.Role{model.RoleOwner, model.RoleAdmin, model.RoleDeveloper, model.RoleViewer}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	db, err := badgerdb.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{now: time.Now().UTC(), users: map[string]model.User{}, tokens: map[string]string{}, posts: make(chan string, 10)}
	f.webhook = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.posts <- string(b)
		w.Write([]byte("ok"))
	}))
	t.Cleanup(f.webhook.Close)
	events := badgerevents.New(db)
	f.api = &API{Meta: badgermeta.New(db), Events: events, Analytics: events, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tokens: &auth.Issuer{AccessSecret: []byte("access-secret-0123456789"), RefreshSecret: []byte("refresh-secret-0123456789"),
			AccessTTL: 30 * time.Minute, RefreshTTL: 7 * 24 * time.Hour},
		RatePerUser: 100000, RateSignInIP: 100000}
	if f.api.Blobs, err = localblob.New(t.TempDir(), "http://svc.example.com", []byte("blob-secret-0123456789")); err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	f.api.Routes(r)
	f.router = r
	f.srv = httptest.NewServer(r)
	t.Cleanup(f.srv.Close)
	ctx := context.Background()
	for _, name := range []string{"owner", "admin", "developer", "viewer", "outsider"} {
		u := model.User{ID: uuid.New(), Name: name, Email: name + "-" + uuid.NewString()[:8] + "@example.com", CreatedAt: f.now, UpdatedAt: f.now}
		if err := f.api.Meta.CreateUser(ctx, u, model.Team{ID: uuid.New(), Name: name + "'s team", CreatedAt: f.now, UpdatedAt: f.now}); err != nil {
			t.Fatal(err)
		}
		f.users[name] = u
		f.tokens[name] = f.signIn(t, u.ID)
	}
	f.team = model.Team{ID: uuid.New(), Name: "shared", CreatedAt: f.now, UpdatedAt: f.now}
	if err := f.api.Meta.CreateTeam(ctx, f.team, f.users["owner"].ID); err != nil {
		t.Fatal(err)
	}
	for _, rl := range roles[1:] {
		if err := f.api.Meta.AddMember(ctx, model.Member{TeamID: f.team.ID, UserID: f.users[string(rl)].ID, Role: rl, CreatedAt: f.now, UpdatedAt: f.now}); err != nil {
			t.Fatal(err)
		}
	}
	f.app = model.App{ID: uuid.New(), TeamID: f.team.ID, Name: "app", RetentionDays: 30, CreatedAt: f.now, UpdatedAt: f.now}
	if err := f.api.Meta.CreateApp(ctx, f.app, model.APIKey{AppID: f.app.ID, Key: model.NewAPIKey(), CreatedAt: f.now}); err != nil {
		t.Fatal(err)
	}
	f.invite = model.Invite{ID: uuid.New(), TeamID: f.team.ID, Email: "new@example.com", Role: model.RoleViewer, InvitedBy: f.users["owner"].ID,
		CreatedAt: f.now, UpdatedAt: f.now, ExpiresAt: f.now.Add(model.InviteTTL)}
	if err := f.api.Meta.CreateInvites(ctx, []model.Invite{f.invite}); err != nil {
		t.Fatal(err)
	}
	if err := f.api.Meta.SetChatApp(ctx, model.ChatApp{TeamID: f.team.ID, WebhookURL: f.webhook.URL, Enabled: true, UpdatedAt: f.now}); err != nil {
		t.Fatal(err)
	}
	return f
}

// signIn makes a session for a user and returns its access token.
func (f *fixture) signIn(t testing.TB, user uuid.UUID) string {
	t.Helper()
	s := model.AuthSession{ID: uuid.New(), UserID: user, RefreshID: uuid.New(), CreatedAt: f.now}
	p, err := f.api.Tokens.Issue(user, s.ID, s.RefreshID)
	if err != nil {
		t.Fatal(err)
	}
	s.ExpiresAt = p.RefreshExpiresAt
	if err := f.api.Meta.CreateAuthSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return p.AccessToken
}

func (f *fixture) call(t *testing.T, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, f.srv.URL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			t.Errorf("%s %s: %d without an {error} body: %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, b
}

// route is one row of the authorization matrix: the lowest role that may call it and a body
// that makes the call succeed.
type route struct {
	min  model.Role
	body func(f *fixture) any
	// allowed is the status of a caller the route admits when it is not 2xx (a route that
	// answers every admitted caller the same refusal, such as svc's missing Slack app).
	allowed int
}

var matrix = map[string]route{
	"PATCH /teams/{teamID}/rename":                  {model.RoleOwner, func(*fixture) any { return map[string]string{"name": "renamed"} }, 0},
	"GET /teams/{teamID}/apps":                      {model.RoleViewer, nil, 0},
	"GET /teams/{teamID}/apps/{appID}":              {model.RoleViewer, nil, 0},
	"POST /teams/{teamID}/apps":                     {model.RoleAdmin, func(*fixture) any { return map[string]string{"name": "new app"} }, 0},
	"GET /teams/{teamID}/invites":                   {model.RoleViewer, nil, 0},
	"POST /teams/{teamID}/invite":                   {model.RoleViewer, func(*fixture) any { return []map[string]string{{"email": "x@example.com", "role": "viewer"}} }, 0},
	"PATCH /teams/{teamID}/invite/{inviteID}":       {model.RoleViewer, func(*fixture) any { return map[string]string{"role": "viewer"} }, 0},
	"DELETE /teams/{teamID}/invite/{inviteID}":      {model.RoleViewer, nil, 0},
	"GET /teams/{teamID}/members":                   {model.RoleViewer, nil, 0},
	"DELETE /teams/{teamID}/members/{memberID}":     {model.RoleAdmin, nil, 0},
	"PATCH /teams/{teamID}/members/{memberID}/role": {model.RoleAdmin, func(*fixture) any { return map[string]string{"role": "developer"} }, 0},
	"GET /teams/{teamID}/authz":                     {model.RoleViewer, nil, 0},
	"GET /teams/{teamID}/usage":                     {model.RoleViewer, nil, 0},
	"GET /teams/{teamID}/chatapp":                   {model.RoleViewer, nil, 0},
	"PATCH /teams/{teamID}/chatapp/status":          {model.RoleOwner, func(f *fixture) any { return map[string]any{"enabled": true, "webhook_url": f.webhook.URL} }, 0},
	"POST /teams/{teamID}/chatapp/test":             {model.RoleOwner, nil, 0},
	"GET /teams/{teamID}/slack":                     {model.RoleViewer, nil, 0},
	"PATCH /teams/{teamID}/slack/status":            {model.RoleOwner, func(*fixture) any { return map[string]bool{"is_active": false} }, 0},
	"POST /teams/{teamID}/slack/test":               {model.RoleOwner, nil, 0},
	"DELETE /teams/{teamID}/slack":                  {model.RoleOwner, nil, 0},
	"PATCH /apps/{appID}/rename":                    {model.RoleAdmin, func(*fixture) any { return map[string]string{"name": "renamed"} }, 0},
	"PATCH /apps/{appID}/apiKey":                    {model.RoleAdmin, nil, 0},
	"GET /apps/{appID}/retention":                   {model.RoleViewer, nil, 0},
	"PATCH /apps/{appID}/retention":                 {model.RoleAdmin, func(*fixture) any { return map[string]int{"retention": 90} }, 0},
	"GET /apps/{appID}/thresholdPrefs":              {model.RoleViewer, nil, 0},
	"PATCH /apps/{appID}/thresholdPrefs":            {model.RoleAdmin, func(*fixture) any { return map[string]float64{"error_good_threshold": 97} }, 0},
	"GET /apps/{appID}/config":                      {model.RoleViewer, nil, 0},
	"PATCH /apps/{appID}/config":                    {model.RoleAdmin, func(*fixture) any { return map[string]float64{"trace_sampling_rate": 50} }, 0},
	"POST /apps/{appID}/shortFilters":               {model.RoleViewer, func(*fixture) any { return map[string]any{"filters": map[string]any{"versions": []string{"1.0"}}} }, 0},
	// Analytics: every member reads them.
	"GET /apps/{appID}/crashGroups":                               {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/anrGroups":                                 {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/errorGroups":                               {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/crashGroups/plots/instances":               {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/anrGroups/plots/instances":                 {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/crashGroups/{groupID}/crashes":             {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/anrGroups/{groupID}/anrs":                  {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/crashGroups/{groupID}/path":                {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/anrGroups/{groupID}/path":                  {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/crashGroups/{groupID}/plots/instances":     {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/anrGroups/{groupID}/plots/instances":       {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/crashGroups/{groupID}/plots/journey":       {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/anrGroups/{groupID}/plots/journey":         {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/journey":                                   {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/metrics":                                   {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/errorGroups/plots/instances":               {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/errorGroups/{groupID}/errors":              {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/errorGroups/{groupID}/path":                {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/errorGroups/{groupID}/plots/instances":     {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/errorGroups/{groupID}/plots/distribution":  {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/health/plots/instances":                    {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/builds":                                    {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/builds/{fileID}/download":                  {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/filters/keys":                              {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/filters/values":                            {model.RoleViewer, nil, 0},
	"GET /teams/{teamID}/slack/connect-url":                       {model.RoleViewer, nil, http.StatusServiceUnavailable},
	"GET /apps/{appID}/filters":                                   {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/spans/roots/names":                         {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/spans":                                     {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/spans/plots/metrics":                       {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/traces/{traceID}":                          {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/networkRequests/domains":                   {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/alerts":                                    {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/networkRequests/paths":                     {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/networkRequests/trends":                    {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/networkRequests/plots/overviewStatusCodes": {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/networkRequests/plots/overviewTimeline":    {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/networkRequests/plots/endpointLatency":     {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/networkRequests/plots/endpointStatusCodes": {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/networkRequests/plots/endpointTimeline":    {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/bugReports":                                {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/bugReports/plots/instances":                {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/bugReports/{bugReportID}":                  {model.RoleViewer, nil, 0},
	"PATCH /apps/{appID}/bugReports/{bugReportID}":                {model.RoleDeveloper, func(*fixture) any { return map[string]int{"status": 1} }, 0},
	"GET /apps/{appID}/sessions":                                  {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/sessions/plots/instances":                  {model.RoleViewer, nil, 0},
	"GET /apps/{appID}/sessions/{sessionID}":                      {model.RoleViewer, nil, 0},
}

// matrixTraceID is the trace fill puts in {traceID}; matrixPrep stores a span of it.
const matrixTraceID = "0123456789abcdef0123456789abcdef"

// matrixPrep gives the routes that succeed only with a query or stored data what they need:
// it returns the path to call instead of the filled pattern.
var matrixPrep = map[string]func(t *testing.T, f *fixture) string{
	"GET /apps/{appID}/bugReports/{bugReportID}":   matrixBugReport,
	"PATCH /apps/{appID}/bugReports/{bugReportID}": matrixBugReport,
	"GET /apps/{appID}/networkRequests/paths": func(t *testing.T, f *fixture) string {
		return f.fill("/apps/{appID}/networkRequests/paths") + "?domain=api.example.com&path=/v1/*"
	},
	"GET /apps/{appID}/networkRequests/plots/endpointLatency": func(t *testing.T, f *fixture) string {
		return f.fill("/apps/{appID}/networkRequests/plots/endpointLatency") + "?domain=api.example.com&path=/v1/*"
	},
	"GET /apps/{appID}/networkRequests/plots/endpointStatusCodes": func(t *testing.T, f *fixture) string {
		return f.fill("/apps/{appID}/networkRequests/plots/endpointStatusCodes") + "?domain=api.example.com&path=/v1/*"
	},
	"GET /apps/{appID}/networkRequests/plots/endpointTimeline": func(t *testing.T, f *fixture) string {
		return f.fill("/apps/{appID}/networkRequests/plots/endpointTimeline") + "?domain=api.example.com&path=/v1/*"
	},
	"GET /apps/{appID}/builds/{fileID}/download": matrixBuildFile,
	"GET /apps/{appID}/filters/keys": func(t *testing.T, f *fixture) string {
		return f.fill("/apps/{appID}/filters/keys") + "?entity=builds"
	},
	"GET /apps/{appID}/filters/values": func(t *testing.T, f *fixture) string {
		return f.fill("/apps/{appID}/filters/values") + "?entity=builds&key_name=version_name"
	},
	"GET /apps/{appID}/spans": func(t *testing.T, f *fixture) string {
		return f.fill("/apps/{appID}/spans") + "?span_name=checkout"
	},
	"GET /apps/{appID}/spans/plots/metrics": func(t *testing.T, f *fixture) string {
		return f.fill("/apps/{appID}/spans/plots/metrics") + "?span_name=checkout"
	},
	"GET /apps/{appID}/sessions/{sessionID}": func(t *testing.T, f *fixture) string {
		e := model.Event{ID: uuid.New(), AppID: f.app.ID, SessionID: uuid.New(), Type: "custom", Timestamp: f.now.UnixNano(),
			Payload: []byte(`{"name":"matrix"}`)}
		if err := f.api.Events.WriteEvents(context.Background(), []model.Event{e}); err != nil {
			t.Fatal(err)
		}
		return f.fill("/apps/{appID}/sessions/") + e.SessionID.String()
	},
	"GET /apps/{appID}/traces/{traceID}": func(t *testing.T, f *fixture) string {
		s := model.Span{AppID: f.app.ID, SpanID: "0123456789abcdef", TraceID: matrixTraceID, SessionID: uuid.New(), Name: "checkout",
			Status: 1, StartTime: f.now.UnixNano(), EndTime: f.now.Add(time.Second).UnixNano(), Duration: 1000}
		if err := f.api.Events.WriteSpans(context.Background(), []model.Span{s}); err != nil {
			t.Fatal(err)
		}
		return f.fill("/apps/{appID}/traces/{traceID}")
	},
}

// matrixBugReport stores a bug report of the fixture's app and returns its path.
// matrixBuildFile stores a mapping file of the app, its record and its bytes, and returns its
// download path.
func matrixBuildFile(t *testing.T, f *fixture) string {
	ctx := context.Background()
	m := model.Mapping{ID: uuid.New(), AppID: f.app.ID, VersionName: "1.0", VersionCode: "1", BuildType: "aab", Type: "proguard",
		Filename: "mapping.txt", BlobKey: "apps/" + f.app.ID.String() + "/mapping.txt", CreatedAt: f.now}
	if err := f.api.Meta.AddMappings(ctx, []model.Mapping{m}); err != nil {
		t.Fatal(err)
	}
	if err := f.api.Blobs.Put(ctx, m.BlobKey, strings.NewReader("a -> b"), 6); err != nil {
		t.Fatal(err)
	}
	return f.fill("/apps/{appID}/builds/") + m.ID.String() + "/download"
}

func matrixBugReport(t *testing.T, f *fixture) string {
	e := model.Event{ID: uuid.New(), AppID: f.app.ID, SessionID: uuid.New(), Type: model.BugReportType,
		Timestamp: f.now.UnixNano(), Payload: []byte(`{"description":"matrix"}`)}
	if err := f.api.Events.WriteEvents(context.Background(), []model.Event{e}); err != nil {
		t.Fatal(err)
	}
	return f.fill("/apps/{appID}/bugReports/") + e.ID.String()
}

// fill puts the fixture's ids into a route pattern. Member routes target the viewer, whom every
// role at or above admin may change.
func (f *fixture) fill(pattern string) string {
	return strings.NewReplacer("{teamID}", f.team.ID.String(), "{appID}", f.app.ID.String(),
		"{inviteID}", f.invite.ID.String(), "{memberID}", f.users["viewer"].ID.String(),
		"{groupID}", "0123456789abcdef0123456789abcdef", "{traceID}", matrixTraceID).Replace(pattern)
}

// TestUnknownAppLooksForeign: on every /apps/{appID} route an app id that does not exist and
// another team's app get the same status and message, so an outsider cannot probe which ids
// exist.
func TestUnknownAppLooksForeign(t *testing.T) {
	f := newFixture(t)
	unknown := uuid.New()
	n := 0
	err := chi.Walk(f.router, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(pattern, "/apps/{appID}") {
			return nil
		}
		n++
		path := f.fill(strings.TrimSuffix(pattern, "/"))
		var body any
		if row, ok := matrix[method+" "+strings.TrimSuffix(pattern, "/")]; ok && row.body != nil {
			body = row.body(f)
		}
		foreignCode, foreign := f.call(t, method, path, f.tokens["outsider"], body)
		unknownCode, unk := f.call(t, method, strings.Replace(path, f.app.ID.String(), unknown.String(), 1), f.tokens["owner"], body)
		if foreignCode != http.StatusForbidden || unknownCode != http.StatusForbidden {
			t.Errorf("%s %s: foreign app %d, unknown app %d; want 403 for both", method, pattern, foreignCode, unknownCode)
		}
		if strings.Replace(string(foreign), f.app.ID.String(), unknown.String(), 1) != string(unk) {
			t.Errorf("%s %s: bodies differ: foreign %s, unknown %s", method, pattern, foreign, unk)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("walk found only %d /apps/{appID} routes", n)
	}
}

// TestAuthorizationMatrix calls every /teams/… and /apps/… route of the router as each kind of
// caller. The routes come from the router itself: a new route without a row here fails.
func TestAuthorizationMatrix(t *testing.T) {
	probe := newFixture(t)
	var routes []string
	err := chi.Walk(probe.router, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(pattern, "/teams/{teamID}") || strings.HasPrefix(pattern, "/apps/{appID}") {
			routes = append(routes, method+" "+strings.TrimSuffix(pattern, "/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) < len(matrix) {
		t.Fatalf("walk found %d routes, the matrix has %d", len(routes), len(matrix))
	}
	callers := []string{"none", "expired", "outsider", "viewer", "developer", "admin", "owner"}
	for _, rt := range routes {
		row, ok := matrix[rt]
		if !ok {
			t.Errorf("route %s has no row in the authorization matrix", rt)
			continue
		}
		method, pattern, _ := strings.Cut(rt, " ")
		for _, who := range callers {
			t.Run(rt+"/"+who, func(t *testing.T) {
				f := newFixture(t) // each call gets a fresh team: some routes change it
				token := f.tokens[who]
				switch who {
				case "none":
					token = ""
				case "expired":
					tk := f.api.Tokens
					old := &auth.Issuer{AccessSecret: tk.AccessSecret, RefreshSecret: tk.RefreshSecret, AccessTTL: tk.AccessTTL,
						RefreshTTL: tk.RefreshTTL, Now: func() time.Time { return f.now.Add(-2 * time.Hour) }}
					token = f.signInWith(t, old, f.users["owner"].ID)
				}
				var body any
				if row.body != nil {
					body = row.body(f)
				}
				path := f.fill(pattern)
				if prep, ok := matrixPrep[rt]; ok {
					path = prep(t, f)
				}
				code, resp := f.call(t, method, path, token, body)
				var want string
				switch {
				case who == "none" || who == "expired":
					want = "401"
				case who == "outsider":
					want = "403"
				case model.Role(who).Rank() < row.min.Rank():
					want = "403"
				case row.allowed != 0:
					want = strconv.Itoa(row.allowed)
				default:
					want = "2xx"
				}
				got := "2xx"
				if code/100 != 2 {
					got = strconv.Itoa(code)
				}
				if got != want {
					t.Fatalf("%s as %s: %d, want %s: %s", rt, who, code, want, resp)
				}
			})
		}
	}
}

// signInWith makes a session whose tokens come from another issuer (an expired clock).
func (f *fixture) signInWith(t *testing.T, is *auth.Issuer, user uuid.UUID) string {
	t.Helper()
	s := model.AuthSession{ID: uuid.New(), UserID: user, RefreshID: uuid.New(), CreatedAt: f.now, ExpiresAt: f.now.Add(time.Hour)}
	p, err := is.Issue(user, s.ID, s.RefreshID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.api.Meta.CreateAuthSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return p.AccessToken
}

func newRouter(a *API) chi.Router {
	r := chi.NewRouter()
	a.Routes(r)
	return r
}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}
