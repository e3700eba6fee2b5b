package node

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/cmd/internal/replay"
	"github.com/svc-dev/svc/http/signin/signintest"
	"github.com/svc-dev/svc/model"
)

// TestDashboardCompat (issue #15 item 6) sends every call of the reference web dashboard, as
// /work/shared/spec/measure-dashboard-calls.md and measure-reference-shapes.md list them, to a
// node holding test data, on both store setups, and checks the status and every field the
// dashboard reads with its JSON type (compat_spec_test.go). Each row is one call written as the
// dashboard sends it: method, path, query (from/to with milliseconds and Z, timezone,
// plot_time_group for a 7-day range, limit=5, the error type and severity it sends by default),
// body. Ids in paths come from the data, most from the lists the dashboard takes them from.
//
// Rows do not stop at the first failing one: each reports what it got, so a run lists every
// call that is missing or answers a shape the dashboard cannot read.
func TestDashboardCompat(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			env := loadCompat(t, backend)
			for _, row := range compatRows() {
				t.Run(row.name, func(t *testing.T) { env.run(t, row) })
			}
		})
	}
}

// compatRow is one call of the dashboard. Path, query and body may hold {placeholders} that
// compatEnv.fill replaces with the test data's ids.
type compatRow struct {
	name   string // the dashboard's fetcher or the call's section in the documents
	method string
	path   string
	query  string
	body   string
	auth   string                                           // "" the app's owner; "none"; "bad"; "refresh:<session>"; "access:<session>"
	status int                                              // the status the documents give
	any2xx bool                                             // the dashboard takes any 2xx (the checklist's "JSON 2xx body only")
	fields []string                                         // field specs of the answer (compat_spec_test.go)
	raw    bool                                             // the answer is a file, not JSON
	check  func(e *compatEnv, r response, doc any) []string // more than types; nil: none
}

// compatSessions are sign-in sessions of the owner besides the one of most rows: the refresh and
// sign-out rows end theirs.
var compatSessions = []string{"refresh", "signout"}

// compatEnv is a started node with the test data, and what the rows' placeholders stand for.
type compatEnv struct {
	tn       *testNode
	owner    string                       // the owner's access token
	sessions map[string]map[string]string // compatSessions: admin sign-in answers
	vals     map[string]string
	lazy     map[string]func(e *compatEnv) (string, error) // resolved when a row first needs one
	errs     map[string]error
	gh       *signintest.GitHub
}

// compatNewcomer is the email the invite rows invite.
const compatNewcomer = "newcomer@example.com"

// loadCompat starts a node and loads the test data once: every recorded SDK body of testdata/sdk
// replayed with fresh ids and its times moved to ten minutes ago (so the dashboard's default
// 7-day range holds them) with every attachment uploaded, http requests of a known endpoint, a
// build of the newest version with a mapping file, a second team member, a team without apps, a
// Slack webhook and sign-in sessions.
func loadCompat(t *testing.T, backend string) *compatEnv {
	t.Helper()
	gh := signintest.NewGitHub(t)
	oidc := signintest.NewOIDC(t)
	tn := startNode(t, backend, func(c *Config) {
		analyticsConfig(c)
		c.RateLimitSignIn = 1 << 20
		c.GitHubClientID, c.GitHubClientSecret, c.GitHubOAuthURL, c.GitHubAPIURL = gh.ClientID(), gh.ClientSecret(), gh.URL(), gh.URL()
		c.OIDCIssuer, c.OIDCClientID = oidc.URL(), oidc.ClientID()
		// Sign-in by Google's authorization code needs the client secret (#15).
		setSetting(c, "oidc-client-secret", oidc.ClientSecret())
	})
	e := &compatEnv{tn: tn, sessions: map[string]map[string]string{}, vals: map[string]string{}, errs: map[string]error{}, gh: gh}
	e.owner = tn.accessToken(t, tn.email)
	for _, s := range compatSessions {
		e.sessions[s] = e.signIn(t, tn.email)
	}

	// The recorded bodies, as SDKs sent them, with fresh ids and recent times.
	at := time.Now().Add(-10 * time.Minute)
	rw := replay.NewRewriter()
	for _, p := range fixtures(t) {
		tpl, err := replay.ParseTemplate(filepath.Base(p), readFile(t, p))
		if err != nil {
			t.Fatal(err)
		}
		e.send(t, rw.Render(nil, tpl, at.UnixNano()))
	}
	// Requests of one endpoint, so that the endpoint rows have one to ask about.
	sess := uuid.New()
	var reqs []string
	for i, status := range []int{200, 200, 404, 500, 200, 201} {
		ts := at.Add(time.Duration(i-10) * time.Second)
		reqs = append(reqs, fmt.Sprintf(`{"id":%q,"session_id":%q,"timestamp":%q,"type":"http","user_triggered":false,`+
			`"http":{"url":"https://api.compat.io/v1/items/%d","method":"get","status_code":%d,"start_time":%d,"end_time":%d,"client":"okhttp"},`+
			`"attribute":{"installation_id":"compat-inst","measure_sdk_version":"0.11.0","app_unique_id":"com.example.compat","platform":"android",`+
			`"app_version":"1.0","app_build":"100","os_name":"android","os_version":"14","device_manufacturer":"Google","device_model":"Pixel 8",`+
			`"device_name":"shiba","device_locale":"en-US","network_type":"wifi","thread_name":"main","session_start_time":%q}}`,
			uuid.NewString(), sess, ts.UTC().Format("2006-01-02T15:04:05.000Z"), 1000+i, status, 100_000+i*1000, 100_000+i*1000+50*(i+1),
			at.Add(-time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")))
	}
	e.send(t, []byte(`{"events":[`+strings.Join(reqs, ",")+`],"spans":[]}`))
	tn.waitFlushed(t)

	team, app := tn.app.TeamID.String(), tn.app.ID.String()
	e.vals["team"], e.vals["app"] = team, app
	e.vals["domain"] = "api.compat.io"

	// The newest version's build with a ProGuard mapping, uploaded as a build tool does.
	filters := e.getJSON(t, "/apps/"+app+"/filters?ud_attr_keys=1")
	names, codes := fieldValues(filters, "versions[].name"), fieldValues(filters, "versions[].code")
	if len(names) == 0 || len(codes) == 0 {
		t.Fatalf("GET /filters names no version after the data was sent: %v", filters)
	}
	e.vals["version"], e.vals["versionCode"] = fmt.Sprint(names[0]), fmt.Sprint(codes[0])
	build := fmt.Sprintf(`{"version_name":%q,"version_code":%q,"build_size":1048576,"build_type":"aab","mappings":[{"type":"proguard","filename":"mapping.txt"}]}`,
		e.vals["version"], e.vals["versionCode"])
	r := tn.do(t, http.MethodPut, "/builds", tn.key, map[string]string{"Content-Type": "application/json"}, strings.NewReader(build))
	if r.status != http.StatusOK {
		t.Fatalf("PUT /builds: %d %s", r.status, r.body)
	}
	var up struct {
		Mappings []struct {
			UploadURL string            `json:"upload_url"`
			Headers   map[string]string `json:"headers"`
		} `json:"mappings"`
	}
	if err := json.Unmarshal(r.body, &up); err != nil || len(up.Mappings) != 1 {
		t.Fatalf("PUT /builds: %s", r.body)
	}
	e.upload(t, up.Mappings[0].UploadURL, up.Mappings[0].Headers, []byte("com.example.A -> a:\n    void run() -> b\n"))

	// A second member (the role and removal rows change and remove them), a team without apps,
	// and a Slack webhook that answers.
	dev := tn.member(t, tn.app.TeamID, model.RoleDeveloper)
	e.lazy = compatResolvers(dev)
	r = tn.call(t, http.MethodPost, "/teams", e.owner, map[string]string{"name": "Compat empty team"})
	var empty struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.body, &empty); err != nil || empty.ID == "" {
		t.Fatalf("POST /teams: %d %s", r.status, r.body)
	}
	e.vals["emptyTeam"] = empty.ID
	r = tn.call(t, http.MethodPost, "/teams/"+team+"/apps", e.owner, map[string]string{"name": "Compat app without data"})
	var emptyApp struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.body, &emptyApp); err != nil || emptyApp.ID == "" {
		t.Fatalf("POST /teams/{id}/apps: %d %s", r.status, r.body)
	}
	e.vals["emptyApp"] = emptyApp.ID
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(hook.Close)
	if r := tn.call(t, http.MethodPatch, "/teams/"+team+"/chatapp/status", e.owner, map[string]any{"webhook_url": hook.URL + "/slack", "enabled": true}); r.status != http.StatusOK {
		t.Fatalf("set the chat app: %d %s", r.status, r.body)
	}
	gh.AddUser("compat-code", signintest.GitHubUser{ID: 77, Login: "lin", Name: "Lin",
		Emails: []signintest.GitHubEmail{{Email: "lin@example.com", Primary: true, Verified: true}}})
	// The dashboard's range: the last 7 days up to now, after everything above.
	now := time.Now().UTC()
	e.vals["from"] = now.Add(-7 * 24 * time.Hour).Format("2006-01-02T15:04:05.000Z")
	e.vals["to"] = now.Format("2006-01-02T15:04:05.000Z")
	e.vals["window"] = "from=" + url.QueryEscape(e.vals["from"]) + "&to=" + url.QueryEscape(e.vals["to"]) + "&timezone=" + url.QueryEscape("Asia/Kolkata")
	oidc.AddCode("compat-google-code", tn.cfg.DashboardURL+"/auth/callback/google", map[string]any{"email": "grace@example.com", "name": "Grace"})
	return e
}

// setSetting sets the setting named flag on c as --flag=value does; false when this build has
// no such setting (the rows that need it then fail as the feature is missing).
func setSetting(c *Config, name, value string) bool {
	for _, s := range Settings {
		if s.Flag == name {
			fs := flag.NewFlagSet(name, flag.ContinueOnError)
			s.bind(fs, c, s)
			return fs.Set(name, value) == nil
		}
	}
	return false
}

// send PUTs one JSON batch with the app key and uploads every attachment it announces.
func (e *compatEnv) send(t *testing.T, body []byte) {
	t.Helper()
	r := e.tn.putJSON(t, e.tn.key, uuid.NewString(), body)
	if r.status != http.StatusOK {
		t.Fatalf("PUT /events: %d %s", r.status, r.body)
	}
	var v struct {
		Attachments []struct {
			UploadURL string            `json:"upload_url"`
			Headers   map[string]string `json:"headers"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("PUT /events: %s", r.body)
	}
	for _, a := range v.Attachments {
		e.upload(t, a.UploadURL, a.Headers, []byte("\x89PNG compat"))
	}
}

func (e *compatEnv) upload(t *testing.T, u string, hdr map[string]string, b []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, u, bytes.NewReader(b))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.tn.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("upload to %s: %d", u, resp.StatusCode)
	}
}

// signIn signs the user in through the admin API and returns the whole answer (access and
// refresh token, session id, user id, own team).
func (e *compatEnv) signIn(t *testing.T, email string) map[string]string {
	t.Helper()
	tok := strings.TrimSpace(string(readFile(t, filepath.Join(e.tn.cfg.DataDir, "admin.token"))))
	req, _ := http.NewRequest(http.MethodPost, "http://"+e.tn.AdminAddr()+"/admin/tokens", strings.NewReader(`{"email":"`+email+`"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := e.tn.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v["refresh_token"] == "" {
		t.Fatalf("admin token: %d %v", resp.StatusCode, err)
	}
	return v
}

func (e *compatEnv) getJSON(t *testing.T, path string) any {
	t.Helper()
	r := e.tn.do(t, http.MethodGet, path, e.owner, nil, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return v
}

// lookup GETs path as the owner and returns the first string at field; it is how the
// placeholders take ids from the lists the dashboard takes them from.
func (e *compatEnv) lookup(path, field string, match func(elem any) bool) (string, error) {
	p, err := e.fill(path)
	if err != nil {
		return "", err
	}
	req, _ := http.NewRequest(http.MethodGet, e.tn.base+p, nil)
	req.Header.Set("Authorization", "Bearer "+e.owner)
	resp, err := e.tn.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d %s", p, resp.StatusCode, compatClip(b))
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("GET %s: %v", p, err)
	}
	elems, leaf, _ := strings.Cut(field, "|")
	for _, el := range fieldValues(doc, elems) {
		if match != nil && !match(el) {
			continue
		}
		v := el
		if leaf != "" {
			vs := fieldValues(el, leaf)
			if len(vs) == 0 {
				continue
			}
			v = vs[0]
		}
		if s, ok := v.(string); ok && s != "" {
			return s, nil
		}
	}
	return "", fmt.Errorf("GET %s: no %s in %s", p, field, compatClip(b))
}

// memberWith matches a list element whose member is v.
func memberWith(name, v string) func(any) bool {
	return func(el any) bool {
		m, ok := el.(map[string]any)
		return ok && m[name] == v
	}
}

// compatResolvers are the placeholders taken from the data; dev is the second member's email.
func compatResolvers(dev string) map[string]func(e *compatEnv) (string, error) {
	return map[string]func(e *compatEnv) (string, error){
		// Error groups as the errors page lists them; the detail pages are opened from there.
		"group": func(e *compatEnv) (string, error) {
			return e.lookup("/apps/{app}/errorGroups?{window}&type=error", "results[]|id", nil)
		},
		"anrGroup": func(e *compatEnv) (string, error) {
			return e.lookup("/apps/{app}/errorGroups?{window}&type=anr", "results[]|id", nil)
		},
		"session": func(e *compatEnv) (string, error) {
			return e.lookup("/apps/{app}/sessions?{window}&type=error&limit=5", "results[]|session_id", nil)
		},
		"spanName": func(e *compatEnv) (string, error) { return e.lookup("/apps/{app}/spans/roots/names", "results[]", nil) },
		"spanNameQ": func(e *compatEnv) (string, error) {
			name, err := e.resolve("spanName")
			return spanNameParam(name), err
		},
		"trace": func(e *compatEnv) (string, error) {
			// Encoded once, so that the trace row does not hang on the spans row's double encoding.
			name, err := e.resolve("spanName")
			if err != nil {
				return "", err
			}
			return e.lookup("/apps/{app}/spans?{window}&span_name="+url.QueryEscape(name)+"&limit=5", "results[]|trace_id", nil)
		},
		"bugReport": func(e *compatEnv) (string, error) {
			return e.lookup("/apps/{app}/bugReports?{window}&limit=5", "results[]|event_id", nil)
		},
		"attachment": func(e *compatEnv) (string, error) {
			// The first uploaded attachment of a bug report, as the bug report page shows it.
			for i := 0; i < 20; i++ {
				id, err := e.lookup(fmt.Sprintf("/apps/{app}/bugReports?{window}&limit=1&offset=%d", i), "results[]|event_id", nil)
				if err != nil {
					return "", err
				}
				if loc, err := e.lookup("/apps/{app}/bugReports/"+id, "attachments[]|location", nil); err == nil {
					return loc, nil
				}
			}
			return "", errors.New("no bug report has an attachment with a location")
		},
		"buildFile": func(e *compatEnv) (string, error) {
			return e.lookup("/apps/{app}/builds?{window}&limit=10&offset=0", "results[].files[]|id", nil)
		},
		"path": func(e *compatEnv) (string, error) {
			return e.lookup("/apps/{app}/networkRequests/paths?domain={domain}&search=&from={fromQ}&to={toQ}", "results[]", nil)
		},
		"pathQ": func(e *compatEnv) (string, error) {
			p, err := e.resolve("path")
			return url.QueryEscape(p), err
		},
		"buildsExpr": func(e *compatEnv) (string, error) {
			v, err := e.resolve("version")
			return url.QueryEscape(`version_name:in:["` + v + `"] AND mapping_type:in:[proguard]`), err
		},
		"fromQ": func(e *compatEnv) (string, error) { return url.QueryEscape(e.vals["from"]), nil },
		"toQ":   func(e *compatEnv) (string, error) { return url.QueryEscape(e.vals["to"]), nil },
		"code": func(e *compatEnv) (string, error) {
			body, _ := e.fill(compatShortFilter)
			r, err := e.tn.client.Do(mustRequest(http.MethodPost, e.tn.base+"/apps/"+e.vals["app"]+"/shortFilters", body, e.owner))
			if err != nil {
				return "", err
			}
			defer r.Body.Close()
			var v map[string]any
			if err := json.NewDecoder(r.Body).Decode(&v); err != nil || r.StatusCode != http.StatusOK {
				return "", fmt.Errorf("POST shortFilters: %d %v", r.StatusCode, err)
			}
			s, _ := v["filter_short_code"].(string)
			return s, nil
		},
		"invite": func(e *compatEnv) (string, error) {
			return e.lookup("/teams/{team}/invites", "[]|id", memberWith("email", compatNewcomer))
		},
		"member": func(e *compatEnv) (string, error) {
			return e.lookup("/teams/{team}/members", "[]|id", memberWith("email", dev))
		},
	}
}

func mustRequest(method, u, body, token string) *http.Request {
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// spanNameParam is a span name as the dashboard puts it in a query: encodeURIComponent first,
// then URLSearchParams encodes it again.
func spanNameParam(name string) string {
	inner := strings.ReplaceAll(url.QueryEscape(name), "+", "%20")
	return url.QueryEscape(inner)
}

// compatShortFilter is the body saveListFiltersToServer sends for the overview's "Latest" version.
const compatShortFilter = `{"filters":{"versions":["{version}"],"version_codes":["{versionCode}"],"os_names":[],"os_versions":[],` +
	`"countries":[],"network_providers":[],"network_types":[],"network_generations":[],"locales":[],"device_manufacturers":[],"device_names":[]}}`

var placeholder = regexp.MustCompile(`\{([A-Za-z]+)\}`)

func (e *compatEnv) resolve(name string) (string, error) {
	if v, ok := e.vals[name]; ok {
		return v, nil
	}
	if err, ok := e.errs[name]; ok {
		return "", err
	}
	f, ok := e.lazy[name]
	if !ok {
		return "", fmt.Errorf("no placeholder {%s}", name)
	}
	v, err := f(e)
	if err != nil {
		err = fmt.Errorf("{%s}: %w", name, err)
		e.errs[name] = err
		return "", err
	}
	e.vals[name] = v
	return v, nil
}

// fill replaces the placeholders of s; a {name} that is no placeholder (JSON) stays.
func (e *compatEnv) fill(s string) (string, error) {
	var first error
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		name := m[1 : len(m)-1]
		if _, known := e.vals[name]; !known {
			if _, lazy := e.lazy[name]; !lazy {
				return m
			}
		}
		v, err := e.resolve(name)
		if err != nil && first == nil {
			first = err
		}
		return v
	})
	return out, first
}

func (e *compatEnv) token(auth string) string {
	kind, name, _ := strings.Cut(auth, ":")
	switch kind {
	case "":
		return e.owner
	case "none":
		return ""
	case "bad":
		return "not-a-token"
	case "refresh":
		return e.sessions[name]["refresh_token"]
	case "access":
		return e.sessions[name]["access_token"]
	}
	panic("unknown auth " + auth)
}

// run sends one row's call and checks the answer.
func (e *compatEnv) run(t *testing.T, row compatRow) {
	p, err := e.fill(row.path)
	if err != nil {
		t.Fatalf("%s %s: the data has no id for it: %v", row.method, row.path, err)
	}
	q, err := e.fill(row.query)
	if err != nil {
		t.Fatalf("%s %s?%s: the data has no value for it: %v", row.method, row.path, row.query, err)
	}
	body, err := e.fill(row.body)
	if err != nil {
		t.Fatalf("%s %s body: %v", row.method, row.path, err)
	}
	u := p
	if !strings.HasPrefix(u, "http") {
		u = e.tn.base + p
	}
	if q != "" {
		u += "?" + q
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(row.method, u, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	if tok := e.token(row.auth); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := e.tn.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", row.method, u, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := response{status: resp.StatusCode, header: resp.Header, body: b}
	call := row.method + " " + strings.TrimPrefix(u, e.tn.base)
	if r.status != row.status && !(row.any2xx && r.status/100 == 2) {
		t.Errorf("%s: status %d, want %d; body %s", call, r.status, row.status, compatClip(b))
		return
	}
	var doc any
	if !row.raw {
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Errorf("%s: the body is not JSON (the dashboard parses it): %q", call, compatClip(b))
			return
		}
	}
	fields := row.fields
	if row.status >= 400 && fields == nil {
		fields = []string{"error:string"}
	}
	bad := checkFields(doc, fields)
	if row.check != nil {
		bad = append(bad, row.check(e, r, doc)...)
	}
	bad = dedupe(bad)
	if len(bad) > 0 {
		t.Errorf("%s: %d mismatches with what the dashboard reads:\n  %s\nbody %s", call, len(bad), strings.Join(bad, "\n  "), compatClip(b))
	}
}

// dedupe keeps the first of equal lines and says how many there were.
func dedupe(lines []string) []string {
	n := map[string]int{}
	var out []string
	for _, l := range lines {
		if n[l]++; n[l] == 1 {
			out = append(out, l)
		}
	}
	for i, l := range out {
		if n[l] > 1 {
			out[i] = fmt.Sprintf("%s (×%d)", l, n[l])
		}
	}
	return out
}

func compatClip(b []byte) string {
	if len(b) > 1500 {
		return string(b[:1500]) + "…"
	}
	return string(b)
}

// Checks beyond types.

// plotTimes: the plot datetimes at path have the shape of the plot_time_group (no offset, no Z):
// the dashboard parses them with a time format chosen from the same group.
func plotTimes(path, group string) func(*compatEnv, response, any) []string {
	re := map[string]*regexp.Regexp{
		"minutes": regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:00$`),
		"hours":   regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:00:00$`),
		"days":    regexp.MustCompile(`^\d{4}-\d\d-\d\d$`),
		"months":  regexp.MustCompile(`^\d{4}-\d\d-01$`),
	}[group]
	return func(_ *compatEnv, _ response, doc any) []string {
		var bad []string
		for _, v := range fieldValues(doc, path) {
			if s, _ := v.(string); !re.MatchString(s) {
				bad = append(bad, fmt.Sprintf("%s %q is not a %s bucket as the dashboard parses it (%s)", path, v, group, re))
			}
		}
		return bad
	}
}

// oneOf: every value at path is one of want.
func oneOf(path string, want ...string) func(*compatEnv, response, any) []string {
	return func(_ *compatEnv, _ response, doc any) []string {
		var bad []string
		for _, v := range fieldValues(doc, path) {
			if s, _ := v.(string); !slices.Contains(want, s) {
				bad = append(bad, fmt.Sprintf("%s is %v, want one of %q", path, v, want))
			}
		}
		return bad
	}
}

func checks(cs ...func(*compatEnv, response, any) []string) func(*compatEnv, response, any) []string {
	return func(e *compatEnv, r response, doc any) []string {
		var bad []string
		for _, c := range cs {
			bad = append(bad, c(e, r, doc)...)
		}
		return bad
	}
}

// jwtExp: the tokens at the paths are JWTs whose payload has a numeric exp (Next.js sets the
// cookies' Max-Age from it).
func jwtExp(paths ...string) func(*compatEnv, response, any) []string {
	return func(_ *compatEnv, _ response, doc any) []string {
		var bad []string
		for _, p := range paths {
			for _, v := range fieldValues(doc, p) {
				s, _ := v.(string)
				parts := strings.Split(s, ".")
				var claims map[string]any
				if len(parts) != 3 {
					bad = append(bad, p+" is not a JWT")
					continue
				}
				payload, err := base64.RawURLEncoding.DecodeString(parts[1])
				if err == nil {
					err = json.Unmarshal(payload, &claims)
				}
				if _, ok := claims["exp"].(float64); err != nil || !ok {
					bad = append(bad, fmt.Sprintf("%s: the JWT payload has no numeric exp (%v)", p, err))
				}
			}
		}
		return bad
	}
}

// sameTwice: a second identical call answers the same bytes (the dashboard compares its polled
// app lists by JSON.stringify).
func sameTwice(e *compatEnv, r response, _ any) []string {
	resp, err := e.tn.client.Do(mustRequest(http.MethodGet, e.tn.base+"/teams/"+e.vals["team"]+"/apps", "", e.owner))
	if err != nil {
		return []string{err.Error()}
	}
	defer resp.Body.Close()
	again, _ := io.ReadAll(resp.Body)
	if !bytes.Equal(again, r.body) {
		return []string{fmt.Sprintf("a second GET answered other bytes:\n  %s\n  %s", compatClip(r.body), compatClip(again))}
	}
	return nil
}

// equals: the value at path is want.
func equals(path string, want any) func(*compatEnv, response, any) []string {
	return func(e *compatEnv, _ response, doc any) []string {
		if s, ok := want.(string); ok {
			want, _ = e.fill(s)
		}
		vs := fieldValues(doc, path)
		if len(vs) != 1 || vs[0] != want {
			return []string{fmt.Sprintf("%s is %v, want %v", path, vs, want)}
		}
		return nil
	}
}

// App fields the dashboard reads (measure-dashboard-calls.md §1), under prefix.
func appFields(prefix string) []string {
	var out []string
	for _, f := range []string{"id:string", "name:string", "onboarded:bool", "api_key.key:string", "unique_identifier:string|null",
		"os_names:array|null", "?os_names[]:string", "created_at:string"} {
		if rest, opt := strings.CutPrefix(f, "?"); opt {
			out = append(out, "?"+prefix+rest)
		} else {
			out = append(out, prefix+f)
		}
	}
	return out
}

// pageFields: the offset-paged envelope with results (which the test data fills) and the
// fields of each result.
func pageFields(results ...string) []string {
	out := []string{"meta:object", "meta.next:bool", "meta.previous:bool", "results:array"}
	for _, r := range results {
		out = append(out, "results[]."+r)
	}
	return out
}

// seriesFields: a version plot, which the test data fills; points have the fields.
func seriesFields(points ...string) []string {
	out := []string{":array", "[].id:string", "[].data:array"}
	for _, p := range points {
		out = append(out, "[].data[]."+p)
	}
	return out
}

// metricFields: one comparison member of /metrics (measure-dashboard-calls.md §4).
func metricFields(member, value string, nullable bool) []string {
	prefix, top := "", member+":object"
	if nullable {
		prefix, top = "?", member+":object|null"
	}
	return []string{top, prefix + member + "." + value + ":number", prefix + member + ".unselected_" + value + ":number",
		prefix + member + ".no_data:bool", prefix + member + ".unselected_no_data:bool"}
}

var sdkConfigFields = []string{"trace_sampling_rate:number", "launch_sampling_rate:number", "journey_sampling_rate:number",
	"http_sampling_rate:number", "profile_sampling_rate:number", "crash_timeline_duration:number", "anr_timeline_duration:number",
	"bug_report_timeline_duration:number", "crash_take_screenshot:bool", "anr_take_screenshot:bool",
	"http_disable_event_for_urls:array", "http_track_request_for_urls:array", "http_track_response_for_urls:array",
	"http_blocked_headers:array", "screenshot_mask_level:string", "log_autocollect_enabled:bool", "log_min_severity:number",
	"log_ignore_patterns:array"}

var attributeFields = []string{"attribute:object", "attribute.app_version:string", "attribute.app_build:string",
	"attribute.os_name:string", "attribute.os_version:string", "attribute.device_manufacturer:string", "attribute.device_model:string"}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func prefixed(prefix string, fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = prefix + f
	}
	return out
}

// compatRows is the table: every call of both documents, reads first, then the calls that
// change something, in an order where each change leaves the next row its data.
func compatRows() []compatRow {
	const (
		get, post, patch, del = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
		ok                    = http.StatusOK
		win                   = "{window}"
		errs                  = "type=error,anr&severity=fatal" // the errors page's default selection
	)
	return []compatRow{
		// §1 and §12: teams and apps.
		{name: "GET teams", method: get, path: "/teams", status: ok, fields: []string{":array", "[].id:string", "[].name:string"}},
		{name: "GET team apps (fetchAppsFromServer)", method: get, path: "/teams/{team}/apps", status: ok,
			fields: append([]string{":array"}, appFields("[].")...), check: sameTwice},
		// The reference answers 404, which the dashboard maps to []; "a 200 [] would also work".
		{name: "GET team apps of a team without apps", method: get, path: "/teams/{emptyTeam}/apps", status: ok, fields: []string{":array"}},
		{name: "GET team app", method: get, path: "/teams/{team}/apps/{app}", status: ok, fields: appFields(""),
			check: equals("id", "{app}")},

		// §5: filters, builds, filter keys and values.
		{name: "GET filters of event pages", method: get, path: "/apps/{app}/filters", query: "ud_attr_keys=1", status: ok, fields: filterFields},
		{name: "GET filters of traces pages", method: get, path: "/apps/{app}/filters", query: "ud_attr_keys=1&span=1", status: ok, fields: filterFields},
		{name: "GET filters of errors pages and onboarding", method: get, path: "/apps/{app}/filters", query: "ud_attr_keys=1&type=error,anr", status: ok, fields: filterFields},
		{name: "GET filter keys of builds", method: get, path: "/apps/{app}/filters/keys", query: "entity=builds", status: ok,
			fields: []string{"keys:array", "keys[].name:string", "keys[].label:string", "keys[].description:string", "keys[].key_group:string",
				"keys[].value_type:string", "keys[].operators:array", "keys[].operators[]:string", "keys[].value_suggestion_mode:string",
				"key_groups:array", "key_groups[]:string"},
			check: oneOf("keys[].value_suggestion_mode", "full_list", "sample", "none")},
		{name: "GET filter keys of an unknown entity", method: get, path: "/apps/{app}/filters/keys", query: "entity=nope", status: http.StatusBadRequest},
		{name: "GET filter values of version_name", method: get, path: "/apps/{app}/filters/values", query: "entity=builds&key_name=version_name&search=&limit=50",
			status: ok, fields: []string{"values:array", "values[].text:string", "values[].label:string|absent", "truncated:bool"}},
		{name: "GET filter values of mapping_type", method: get, path: "/apps/{app}/filters/values", query: "entity=builds&key_name=mapping_type",
			status: ok, fields: []string{"values:array", "values[].text:string", "values[].label:string|absent", "truncated:bool"}},
		{name: "GET builds (fetchBuildsWithFilter)", method: get, path: "/apps/{app}/builds", query: win + "&limit=10&offset=0", status: ok,
			fields: pageFields("version_name:string", "version_code:string", "patch_id:string|absent", "patch_version:string|absent",
				"files:array", "files[].id:string", "files[].mapping_type:string", "files[].last_updated:string", "files[].download_url:string"),
			check: downloadURLs},
		{name: "GET builds with a filter expression", method: get, path: "/apps/{app}/builds",
			query: win + "&limit=10&offset=0&filter_expr={buildsExpr}", status: ok,
			fields: pageFields("version_name:string", "files[].id:string")},
		{name: "GET builds with a bad filter expression", method: get, path: "/apps/{app}/builds",
			query: win + "&limit=10&offset=0&filter_expr=" + url.QueryEscape("version_name:bogus:1"), status: http.StatusBadRequest,
			fields: []string{"error:string", "filter_expr_issues:array", "filter_expr_issues[].message:string", "filter_expr_issues[].span:object|absent",
				"?filter_expr_issues[].span.start:int", "?filter_expr_issues[].span.end:int"},
			check: equals("error", "invalid_filter_expr")},
		{name: "GET build file download", method: get, path: "/apps/{app}/builds/{buildFile}/download", status: ok, raw: true, check: fileDownload},

		// §2: errorGroups.
		{name: "GET errorGroups (fetchErrorsOverviewFromServer)", method: get, path: "/apps/{app}/errorGroups", query: win + "&limit=5&offset=0&" + errs,
			status: ok, fields: pageFields("id:string", "type:string", "error_type:string", "severity:string", "message:string", "method_name:string",
				"file_name:string", "count:number", "percentage_contribution:number"),
			check: checks(oneOf("results[].error_type", "exception", "anr"), oneOf("results[].severity", "fatal", "unhandled", "handled"))},
		{name: "GET errorGroups plot (fetchErrorsOverviewPlotFromServer)", method: get, path: "/apps/{app}/errorGroups/plots/instances",
			query: win + "&plot_time_group=hours&" + errs, status: ok, fields: seriesFields("datetime:string", "instances:number"),
			check: plotTimes("[].data[].datetime", "hours")},
		{name: "GET errorGroup errors of an exception (fetchErrorsDetailsFromServer)", method: get, path: "/apps/{app}/errorGroups/{group}/errors",
			query: win + "&limit=1&offset=0", status: ok,
			fields: concat(pageFields("id:string", "session_id:string", "timestamp:string", "type:string", "severity:string",
				"exception:object", "exception.title:string", "exception.stacktrace:string", "exception.message:string", "anr:null|absent",
				"num_code:number|null", "code:string", "meta:object|null", "user_defined_attribute:object|null",
				"attribute:object", "attribute.app_version:string", "attribute.device_manufacturer:string", "attribute.device_model:string",
				"attribute.network_type:string", "attribute.thread_name:string", "attribute.os_name:string",
				"attachments:array", "threads:array"),
				[]string{"?results[].attachments[].key:string", "?results[].attachments[].location:string",
					"?results[].threads[].name:string", "?results[].threads[].frames:array", "?results[].threads[].frames[]:string"})},
		{name: "GET errorGroup errors of an ANR", method: get, path: "/apps/{app}/errorGroups/{anrGroup}/errors", query: win + "&limit=1&offset=0", status: ok,
			fields: concat(pageFields("id:string", "session_id:string", "timestamp:string", "type:string", "severity:string",
				"anr:object", "anr.title:string", "anr.stacktrace:string", "exception:null|absent", "attribute:object",
				"attribute.app_version:string", "attribute.thread_name:string", "attachments:array", "threads:array"),
				[]string{"?results[].threads[].name:string", "?results[].threads[].frames[]:string"})},
		{name: "GET errorGroup common path", method: get, path: "/apps/{app}/errorGroups/{group}/path", status: ok,
			fields: []string{"sessions_analyzed:number", "steps:array", "?steps[].description:string", "?steps[].thread_name:string", "?steps[].confidence_pct:number"}},
		{name: "GET errorGroup common path of an unknown group", method: get, path: "/apps/{app}/errorGroups/0123456789abcdef0123456789abcdef/path", status: ok,
			fields: []string{"sessions_analyzed:number", "steps:array"}},
		{name: "GET errorGroup plot (fetchErrorsDetailsPlotFromServer)", method: get, path: "/apps/{app}/errorGroups/{group}/plots/instances",
			query: win + "&plot_time_group=hours", status: ok, fields: seriesFields("datetime:string", "instances:number"),
			check: plotTimes("[].data[].datetime", "hours")},
		{name: "GET errorGroup distribution", method: get, path: "/apps/{app}/errorGroups/{group}/plots/distribution", query: win, status: ok,
			fields: []string{"app_version:object", "os_version:object", "country:object", "network_type:object", "locale:object", "device:object",
				"app_version.*:number", "?os_version.*:number", "?country.*:number", "?network_type.*:number", "?locale.*:number", "?device.*:number"}},

		// An app that has no data yet: "no data" is null where the dashboard says so.
		{name: "GET filters of an app without data (onboarding)", method: get, path: "/apps/{emptyApp}/filters", query: "ud_attr_keys=1&type=error,anr",
			status: ok, fields: []string{"versions:null", "os_versions:array|null", "ud_attrs:object", "ud_attrs.key_types:array|null",
				"ud_attrs.operator_types:object|null"}},
		{name: "GET errorGroups of an app without data", method: get, path: "/apps/{emptyApp}/errorGroups", query: win + "&limit=5&offset=0&" + errs,
			status: ok, fields: []string{"meta.next:bool", "meta.previous:bool", "results:array|null", "?results[].id:string"}},
		{name: "GET errorGroups plot of an app without data", method: get, path: "/apps/{emptyApp}/errorGroups/plots/instances",
			query: win + "&plot_time_group=hours&" + errs, status: ok, fields: []string{":null"}},
		{name: "GET health plot of an app without data", method: get, path: "/apps/{emptyApp}/health/plots/instances", query: win + "&plot_time_group=hours",
			status: ok, fields: []string{":array", "[].id:string", "[].data:array"}, check: seriesIDs("sessions", "crashes", "anrs")},
		{name: "GET errorGroups without a token", method: get, path: "/apps/{app}/errorGroups", query: win, auth: "none", status: http.StatusUnauthorized},
		{name: "GET errorGroups with a bad token", method: get, path: "/apps/{app}/errorGroups", query: win, auth: "bad", status: http.StatusUnauthorized},

		// §3 and §4: health plot and metrics.
		{name: "GET health plot (fetchAppHealthPlotFromServer)", method: get, path: "/apps/{app}/health/plots/instances", query: win + "&plot_time_group=hours",
			status: ok, fields: []string{":array", "[].id:string", "[].data:array", "[].data[].datetime:string", "[].data[].instances:number"},
			check: checks(oneOf("[].id", "sessions", "crashes", "anrs"), plotTimes("[].data[].datetime", "hours"), seriesIDs("sessions", "crashes", "anrs"))},
		// The reference refuses a missing timezone; svc buckets in UTC, as every other plot.
		{name: "GET health plot without timezone", method: get, path: "/apps/{app}/health/plots/instances",
			query: "from={fromQ}&to={toQ}&plot_time_group=hours", status: ok,
			fields: []string{":array", "[].id:string", "[].data:array"}, check: checks(seriesIDs("sessions", "crashes", "anrs"))},
		{name: "GET metrics (fetchMetricsFromServer)", method: get, path: "/apps/{app}/metrics", query: win + "&filter_short_code={code}", status: ok,
			fields: concat([]string{"adoption:object", "adoption.adoption:number", "adoption.selected_version:number", "adoption.all_versions:number", "adoption.no_data:bool"},
				metricFields("crash_free_sessions", "crash_free_sessions", false),
				metricFields("perceived_crash_free_sessions", "perceived_crash_free_sessions", false),
				metricFields("anr_free_sessions", "anr_free_sessions", true),
				metricFields("perceived_anr_free_sessions", "perceived_anr_free_sessions", true),
				metricFields("cold_launch", "p95", false), metricFields("warm_launch", "p95", false), metricFields("hot_launch", "p95", false),
				[]string{"sizes:object", "sizes.no_data:bool", "sizes.selected_app_size:number", "sizes.delta:number"})},

		// measure-reference-shapes.md §2: sessions.
		{name: "GET sessions (fetchSessionReplayOverviewFromServer)", method: get, path: "/apps/{app}/sessions", query: win + "&limit=5&offset=0", status: ok,
			fields: concat(pageFields("session_id:string", "app_id:string", "first_event_time:string", "duration:number", "matched_free_text:string"),
				prefixed("results[].", attributeFields))},
		{name: "GET sessions of session types", method: get, path: "/apps/{app}/sessions",
			query: win + "&limit=5&offset=0&type=error,anr&severity=fatal,unhandled,handled&bug_report=1&user_interaction=1", status: ok,
			fields: pageFields("session_id:string", "duration:number")},
		{name: "GET sessions plot (fetchSessionReplayOverviewPlotFromServer)", method: get, path: "/apps/{app}/sessions/plots/instances",
			query: win + "&plot_time_group=hours", status: ok, fields: seriesFields("datetime:string", "instances:number"),
			check: plotTimes("[].data[].datetime", "hours")},
		{name: "GET session (fetchSessionReplayFromServer)", method: get, path: "/apps/{app}/sessions/{session}", status: ok,
			fields: concat([]string{"session_id:string", "app_id:string", "duration:number", "cpu_usage:array|null", "memory_usage:array|null",
				"memory_usage_absolute:array|null", "threads:object", "threads.*[].event_type:string", "threads.*[].thread_name:string",
				"threads.*[].timestamp:string", "traces:array|null", "?traces[].trace_id:string", "?traces[].trace_name:string",
				"?traces[].start_time:string", "?traces[].end_time:string", "?traces[].duration:number"}, attributeFields)},

		// measure-reference-shapes.md §3: spans and traces.
		{name: "GET root span names", method: get, path: "/apps/{app}/spans/roots/names", status: ok, fields: []string{"results:array", "results[]:string"}},
		{name: "GET spans (fetchSpansFromServer)", method: get, path: "/apps/{app}/spans", query: win + "&span_name={spanNameQ}&limit=5&offset=0&span_name={spanNameQ}",
			status: ok, fields: pageFields("app_id:string", "span_name:string", "span_id:string", "trace_id:string", "status:number", "start_time:string",
				"end_time:string", "duration:number", "app_version:string", "app_build:string", "os_name:string", "os_version:string",
				"device_model:string", "device_manufacturer:string")},
		{name: "GET span metrics plot", method: get, path: "/apps/{app}/spans/plots/metrics", query: win + "&span_name={spanNameQ}&plot_time_group=hours&span_name={spanNameQ}",
			status: ok, fields: seriesFields("datetime:string", "p50:number|null", "p90:number|null", "p95:number|null", "p99:number|null"),
			check: plotTimes("[].data[].datetime", "hours")},
		{name: "GET trace (fetchTraceFromServer)", method: get, path: "/apps/{app}/traces/{trace}", status: ok,
			fields: []string{"app_id:string", "trace_id:string", "session_id:string", "user_id:string", "start_time:string", "end_time:string",
				"duration:number", "app_version:string", "os_version:string", "device_manufacturer:string", "device_model:string", "network_type:string",
				"spans:array", "spans[].span_name:string", "spans[].span_id:string", "spans[].parent_id:string", "spans[].status:number",
				"spans[].start_time:string", "spans[].end_time:string", "spans[].duration:number", "spans[].thread_name:string",
				"spans[].device_low_power_mode:bool", "spans[].device_thermal_throttling_enabled:bool", "spans[].user_defined_attributes:object|null",
				"spans[].checkpoints:array|null", "?spans[].checkpoints[].name:string", "?spans[].checkpoints[].timestamp:string"}},

		// measure-reference-shapes.md §4: bug reports.
		{name: "GET bug reports (fetchBugReportsOverviewFromServer)", method: get, path: "/apps/{app}/bugReports", query: win + "&limit=5&offset=0", status: ok,
			fields: concat(pageFields("session_id:string", "app_id:string", "event_id:string", "status:number", "description:string", "timestamp:string",
				"updated_at:string", "matched_free_text:string", "user_defined_attribute:object|null"), prefixed("results[].", attributeFields))},
		{name: "GET bug reports of a status", method: get, path: "/apps/{app}/bugReports", query: win + "&bug_report_statuses=0&limit=5&offset=0", status: ok,
			fields: pageFields("event_id:string", "status:number")},
		{name: "GET bug reports plot", method: get, path: "/apps/{app}/bugReports/plots/instances", query: win + "&bug_report_statuses=0&plot_time_group=hours",
			status: ok, fields: seriesFields("datetime:string", "instances:number"), check: plotTimes("[].data[].datetime", "hours")},
		{name: "GET bug report (fetchBugReportFromServer)", method: get, path: "/apps/{app}/bugReports/{bugReport}", status: ok,
			fields: concat([]string{"session_id:string", "app_id:string", "event_id:string", "status:number", "description:string", "timestamp:string",
				"updated_at:string", "user_defined_attribute:object|null", "attachments:array|null", "?attachments[].location:string",
				"attribute.network_type:string", "attribute.device_locale:string"}, attributeFields)},

		// measure-reference-shapes.md §5: alerts.
		{name: "GET alerts (fetchAlertsOverviewFromServer)", method: get, path: "/apps/{app}/alerts", query: win + "&limit=5&offset=0", status: ok,
			fields: pageFields("id:string", "message:string", "created_at:string", "url:string")},

		// measure-reference-shapes.md §6: network requests.
		{name: "GET network domains", method: get, path: "/apps/{app}/networkRequests/domains", query: "from={fromQ}&to={toQ}", status: ok,
			fields: []string{"results:array", "results[]:string"}},
		{name: "GET network paths", method: get, path: "/apps/{app}/networkRequests/paths", query: "domain={domain}&search=items&from={fromQ}&to={toQ}",
			status: ok, fields: []string{"results:array", "results[]:string"}},
		{name: "GET network trends", method: get, path: "/apps/{app}/networkRequests/trends", query: win + "&trends_limit=15", status: ok,
			fields: concat(trendFields("trends_latency"), trendFields("trends_error_rate"), trendFields("trends_frequency"))},
		{name: "GET network overview timeline", method: get, path: "/apps/{app}/networkRequests/plots/overviewTimeline", query: win + "&timeline_limit=10",
			status: ok, fields: []string{"interval:number", "points:array", "points[].elapsed:number", "points[].domain:string",
				"points[].path_pattern:string", "points[].count:number"}},
		{name: "GET network overview status codes", method: get, path: "/apps/{app}/networkRequests/plots/overviewStatusCodes", query: win + "&plot_time_group=hours",
			status: ok, fields: []string{":array", "[].datetime:string", "[].total_count:number", "[].count_2xx:number", "[].count_3xx:number",
				"[].count_4xx:number", "[].count_5xx:number"}, check: plotTimes("[].datetime", "hours")},
		{name: "GET network endpoint latency", method: get, path: "/apps/{app}/networkRequests/plots/endpointLatency",
			query: win + "&plot_time_group=hours&domain={domain}&path={pathQ}", status: ok,
			fields: []string{":array", "[].datetime:string", "[].count:number", "[].p50:number", "[].p90:number", "[].p95:number", "[].p99:number"},
			check:  plotTimes("[].datetime", "hours")},
		{name: "GET network endpoint status codes", method: get, path: "/apps/{app}/networkRequests/plots/endpointStatusCodes",
			query: win + "&plot_time_group=hours&http_methods=get&domain={domain}&path={pathQ}", status: ok,
			fields: []string{"status_codes:array", "status_codes[]:int", "data_points:array", "data_points[].datetime:string", "data_points[].total_count:number"},
			check:  plotTimes("data_points[].datetime", "hours")},
		{name: "GET network endpoint timeline", method: get, path: "/apps/{app}/networkRequests/plots/endpointTimeline",
			query: win + "&domain={domain}&path={pathQ}", status: ok,
			fields: []string{":object", "interval:number", "points:array", "points[].elapsed:number", "points[].count:number"}},

		// §12: attachments the browser fetches without a token.
		{name: "GET attachment location", method: get, path: "{attachment}", auth: "none", status: ok, raw: true},

		// §10, §6, §8, §9: settings, preferences, members, usage.
		{name: "GET SDK config (fetchSdkConfigFromServer)", method: get, path: "/apps/{app}/config", status: ok, fields: sdkConfigFields},
		{name: "GET notification prefs", method: get, path: "/prefs/notifPrefs", status: ok,
			fields: []string{"error_spike:bool", "app_hang_spike:bool", "bug_report:bool", "daily_summary:bool"}},
		{name: "GET authz (fetchAuthzAndMembersFromServer)", method: get, path: "/teams/{team}/authz", status: ok,
			fields: []string{"can_invite_roles:array", "can_invite_roles[]:string", "can_update_bug_reports:bool", "can_change_billing:bool",
				"can_create_app:bool", "can_rename_app:bool", "can_change_retention:bool", "can_rotate_api_key:bool", "can_write_sdk_config:bool",
				"can_rename_team:bool", "can_manage_slack:bool", "can_change_app_threshold_prefs:bool", "members:array", "members[].id:string",
				"members[].email:string", "members[].role:string", "members[].authz:object",
				"members[].authz.current_user_assignable_roles_for_member:array|null", "members[].authz.current_user_can_remove_member:bool"}},
		{name: "GET members", method: get, path: "/teams/{team}/members", status: ok,
			fields: []string{":array", "[].id:string", "[].name:string|null", "[].email:string", "[].role:string", "[].last_sign_in_at:string|null", "[].created_at:string"}},
		{name: "GET usage (fetchUsageFromServer)", method: get, path: "/teams/{team}/usage", status: ok,
			fields: []string{":array", "[].app_id:string", "[].app_name:string", "[].monthly_app_usage:array", "[].monthly_app_usage[].month_year:string",
				"[].monthly_app_usage[].sessions:number", "[].monthly_app_usage[].events:number", "[].monthly_app_usage[].spans:number"},
			check: usageMonths},
		// The reference answers 404 (its "No data yet"); svc's contract answers the empty list.
		{name: "GET usage of a team without apps", method: get, path: "/teams/{emptyTeam}/usage", status: ok, fields: []string{":array"}},
		{name: "GET journey", method: get, path: "/apps/{app}/journey", query: win, status: ok,
			fields: []string{"links:array|null", "nodes:array|null", "totalIssues:number", "?links[].source:string", "?links[].target:string",
				"?links[].value:number", "?nodes[].id:string", "?nodes[].issues:object"}},
		{name: "GET retention", method: get, path: "/apps/{app}/retention", status: ok, fields: []string{":object"}},
		{name: "GET threshold prefs", method: get, path: "/apps/{app}/thresholdPrefs", status: ok, fields: []string{":object"}},

		// Slack (§7), answered by the team's chat app.
		{name: "GET slack", method: get, path: "/teams/{team}/slack", status: ok,
			fields: []string{":object", "slack_team_name:string", "is_active:bool", "needs_reauth:bool"}},
		{name: "GET slack connect-url (svc has no Slack app)", method: get, path: "/teams/{team}/slack/connect-url", status: http.StatusServiceUnavailable,
			fields: []string{"error:string"}},
		{name: "POST slack test", any2xx: true, method: post, path: "/teams/{team}/slack/test", status: ok, fields: []string{":any"}},
		{name: "PATCH slack status", any2xx: true, method: patch, path: "/teams/{team}/slack/status", body: `{"is_active":false}`, status: ok, fields: []string{":any"}},
		{name: "DELETE slack", any2xx: true, method: del, path: "/teams/{team}/slack", status: ok, fields: []string{":any"}},
		{name: "DELETE slack when none", method: del, path: "/teams/{team}/slack", status: http.StatusNotFound},
		{name: "GET slack when none", method: get, path: "/teams/{team}/slack", status: ok, fields: []string{":null"}},
		// The reference checks the state (401); svc has no Slack app to install at all.
		{name: "POST slack connect (svc has no Slack app)", method: post, path: "/slack/connect", auth: "none",
			body: `{"code":"slack-code","state":"bm90LWEtc3RhdGU.c2ln"}`, status: http.StatusServiceUnavailable, fields: []string{"error:string"}},

		// Changes, each answering JSON the dashboard parses (or a status it reads).
		{name: "POST shortFilters (saveListFiltersToServer)", method: post, path: "/apps/{app}/shortFilters", body: compatShortFilter, status: ok,
			fields: []string{"filter_short_code:string"}},
		{name: "PATCH notification prefs", any2xx: true, method: patch, path: "/prefs/notifPrefs",
			body:   `{"error_spike":true,"app_hang_spike":false,"bug_report":true,"daily_summary":false,"created_at":"2026-01-01T00:00:00.000Z","updated_at":"2026-01-01T00:00:00.000Z"}`,
			status: ok, fields: []string{":any"}},
		{name: "PATCH SDK config crash section", any2xx: true, method: patch, path: "/apps/{app}/config", body: `{"crash_take_screenshot":true,"crash_timeline_duration":120}`,
			status: ok, fields: []string{":any"}},
		{name: "PATCH SDK config http section", any2xx: true, method: patch, path: "/apps/{app}/config",
			body:   `{"http_sampling_rate":50.25,"http_disable_event_for_urls":["https://ads.example.com/*"],"http_track_request_for_urls":[],"http_track_response_for_urls":[],"http_blocked_headers":["Authorization"]}`,
			status: ok, fields: []string{":any"}},
		{name: "PATCH SDK config mask level", any2xx: true, method: patch, path: "/apps/{app}/config", body: `{"screenshot_mask_level":"all_text"}`,
			status: ok, fields: []string{":any"}},
		{name: "PATCH SDK config logs section", any2xx: true, method: patch, path: "/apps/{app}/config",
			body: `{"log_autocollect_enabled":true,"log_min_severity":12,"log_ignore_patterns":["^debug"]}`, status: ok, fields: []string{":any"}},
		{name: "PATCH retention", any2xx: true, method: patch, path: "/apps/{app}/retention", body: `{"retention":90}`, status: ok, fields: []string{":any"}},
		{name: "PATCH threshold prefs", any2xx: true, method: patch, path: "/apps/{app}/thresholdPrefs",
			body:   `{"error_good_threshold":95,"error_caution_threshold":85,"error_spike_min_count_threshold":100,"error_spike_min_rate_threshold":0.5}`,
			status: ok, fields: []string{":any"}},
		{name: "PATCH bug report status (updateBugReportStatusFromServer)", any2xx: true, method: patch, path: "/apps/{app}/bugReports/{bugReport}", body: `{"status":1}`,
			status: ok, raw: true},
		{name: "POST invite", any2xx: true, method: post, path: "/teams/{team}/invite", body: `[{"email":"` + compatNewcomer + `","role":"developer"}]`, status: ok,
			fields: []string{":any"}},
		{name: "GET invites (fetchPendingInvitesFromServer)", method: get, path: "/teams/{team}/invites", status: ok,
			fields: []string{":array", "[].id:string", "[].email:string", "[].invited_by_email:string", "[].role:string", "[].valid_until:string|null"}},
		{name: "POST validateInvite", method: post, path: "/auth/validateInvite", auth: "none", body: `{"invite_id":"{invite}"}`, status: ok,
			fields: []string{"valid:bool"}},
		// The contract's statuses are 200, 400 and 410 (the reference's 404 is not one); the
		// dashboard takes any error as "invalid invite".
		{name: "POST validateInvite of an unknown invite", method: post, path: "/auth/validateInvite", auth: "none",
			body: `{"invite_id":"6f1c9a43-5a0e-4b8e-9b6d-2f4c1e0a7d55"}`, status: http.StatusBadRequest, fields: []string{"error:string"}},
		{name: "PATCH invite (resend)", any2xx: true, method: patch, path: "/teams/{team}/invite/{invite}", status: ok, fields: []string{":any"}},
		{name: "DELETE invite", any2xx: true, method: del, path: "/teams/{team}/invite/{invite}", status: ok, fields: []string{":any"}},
		{name: "PATCH member role", any2xx: true, method: patch, path: "/teams/{team}/members/{member}/role", body: `{"role":"viewer"}`, status: ok,
			fields: []string{":any"}},
		{name: "DELETE member", any2xx: true, method: del, path: "/teams/{team}/members/{member}", status: ok, fields: []string{":any"}},
		{name: "POST teams", method: post, path: "/teams", body: `{"name":"Compat second team"}`, status: http.StatusCreated,
			fields: []string{"id:string", "name:string"}},
		{name: "POST team app (create_app)", method: post, path: "/teams/{team}/apps", body: `{"name":"Compat second app"}`, status: http.StatusCreated,
			fields: append(appFields(""), "team_id:string")},
		{name: "PATCH team rename", method: patch, path: "/teams/{team}/rename", body: `{"name":"Compat renamed team"}`, status: ok, raw: true},
		{name: "PATCH app rename", method: patch, path: "/apps/{app}/rename", body: `{"name":"Compat renamed app"}`, status: ok, raw: true},
		{name: "PATCH app apiKey", method: patch, path: "/apps/{app}/apiKey", status: ok, raw: true},

		// Billing is off in the dashboard's build for svc: every billing call is 404 {error}.
		{name: "GET billing info", method: get, path: "/teams/{team}/billing/info", status: http.StatusNotFound},
		{name: "PATCH billing checkout", method: patch, path: "/teams/{team}/billing/checkout", body: `{"success_url":"https://dash.example.com/ok"}`,
			status: http.StatusNotFound},
		{name: "PATCH billing downgrade", method: patch, path: "/teams/{team}/billing/downgrade", status: http.StatusNotFound},
		{name: "PATCH billing undo-downgrade", method: patch, path: "/teams/{team}/billing/undo-downgrade", status: http.StatusNotFound},
		{name: "POST billing portal", method: post, path: "/teams/{team}/billing/portal", body: `{"return_url":"https://dash.example.com/"}`,
			status: http.StatusNotFound},

		// §11: sign-in and the session. The code exchanges reach fake providers.
		{name: "POST auth github init", method: post, path: "/auth/github", auth: "none", body: `{"type":"init","state":"` + compatState + `"}`,
			status: ok, fields: []string{"ok:string"}},
		{name: "POST auth github code", method: post, path: "/auth/github", auth: "none",
			body: `{"type":"code","state":"` + compatState + `","code":"compat-code"}`, status: ok, fields: signInFields,
			check: jwtExp("access_token", "refresh_token")},
		{name: "POST auth google init", method: post, path: "/auth/google", auth: "none", body: `{"type":"init","state":"` + compatState + `"}`,
			status: ok, fields: []string{"ok:string"}},
		{name: "POST auth google code", method: post, path: "/auth/google", auth: "none",
			body: `{"type":"code","state":"` + compatState + `","code":"compat-google-code"}`, status: ok, fields: signInFields,
			check: jwtExp("access_token", "refresh_token")},
		{name: "GET auth session (fetchCurrentSession)", method: get, path: "/auth/session", status: ok,
			fields: []string{"user:object", "user.id:string", "user.own_team_id:string", "user.name:string", "user.email:string", "user.avatar_url:string|null"}},
		{name: "POST auth refresh", method: post, path: "/auth/refresh", auth: "refresh:refresh", status: ok,
			fields: []string{"access_token:string", "refresh_token:string"}, check: jwtExp("access_token", "refresh_token")},
		{name: "POST auth refresh with a bad token", method: post, path: "/auth/refresh", auth: "bad", status: http.StatusUnauthorized},
		{name: "GET auth session without a token", method: get, path: "/auth/session", auth: "none", status: http.StatusUnauthorized},
		{name: "DELETE auth signout", method: del, path: "/auth/signout", auth: "refresh:signout", status: ok, fields: []string{"ok:bool"}},
		{name: "GET auth session after signout", method: get, path: "/auth/session", auth: "access:signout", status: http.StatusUnauthorized},
		{name: "DELETE auth signout with a bad token", method: del, path: "/auth/signout", auth: "bad", status: http.StatusUnauthorized},
	}
}

// compatState is a state as the dashboard makes it: base64url of {"random": 64 hex, "path": ""}.
var compatState = base64.RawURLEncoding.EncodeToString([]byte(`{"random":"` + strings.Repeat("c0ffee42", 8) + `","path":""}`))

var signInFields = []string{"access_token:string", "refresh_token:string", "session_id:string", "user_id:string", "own_team_id:string"}

var filterFields = []string{"versions:array", "versions[].name:string", "versions[].code:string", "os_versions:array|null",
	"?os_versions[].name:string", "?os_versions[].version:string", "countries:array|null|absent", "network_providers:array|null|absent",
	"network_types:array|null|absent", "network_generations:array|null|absent", "locales:array|null|absent",
	"device_manufacturers:array|null|absent", "device_names:array|null|absent", "ud_attrs:object", "ud_attrs.key_types:array|null",
	"?ud_attrs.key_types[].key:string", "?ud_attrs.key_types[].type:string", "ud_attrs.operator_types:object|null"}

func trendFields(member string) []string {
	return []string{member + ":array", member + "[].domain:string", member + "[].path_pattern:string", member + "[].p95_latency:number",
		member + "[].error_rate:number", member + "[].frequency:number"}
}

// seriesIDs: the plot has exactly the series named, in any order.
func seriesIDs(want ...string) func(*compatEnv, response, any) []string {
	return func(_ *compatEnv, _ response, doc any) []string {
		var got []string
		for _, v := range fieldValues(doc, "[].id") {
			got = append(got, fmt.Sprint(v))
		}
		slices.Sort(got)
		w := slices.Clone(want)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			return []string{fmt.Sprintf("series %q, want %q", got, w)}
		}
		return nil
	}
}

// downloadURLs: a file's download_url is relative to the API root, without /api: the dashboard
// puts /api in front.
func downloadURLs(e *compatEnv, _ response, doc any) []string {
	var bad []string
	for _, v := range fieldValues(doc, "results[].files[].download_url") {
		s, _ := v.(string)
		if !strings.HasPrefix(s, "/apps/"+e.vals["app"]+"/builds/") || !strings.HasSuffix(s, "/download") {
			bad = append(bad, fmt.Sprintf("download_url %q is not /apps/{app}/builds/{file}/download", s))
		}
	}
	return bad
}

// fileDownload: the mapping file comes as an attachment with its bytes.
func fileDownload(_ *compatEnv, r response, _ any) []string {
	var bad []string
	if cd := r.header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") || !strings.Contains(cd, "mapping.txt") {
		bad = append(bad, fmt.Sprintf("Content-Disposition %q, want an attachment named mapping.txt", cd))
	}
	if !bytes.Contains(r.body, []byte("com.example.A -> a:")) {
		bad = append(bad, fmt.Sprintf("the body is not the uploaded mapping: %q", compatClip(r.body)))
	}
	return bad
}

// usageMonths: months read "Jan 2006", the current month last (the dashboard's default).
func usageMonths(_ *compatEnv, _ response, doc any) []string {
	var bad []string
	re := regexp.MustCompile(`^[A-Z][a-z]{2} \d{4}$`)
	cur := time.Now().UTC().Format("Jan 2006")
	for _, app := range fieldValues(doc, "[]") {
		months := fieldValues(app, "monthly_app_usage[].month_year")
		for _, m := range months {
			if s, _ := m.(string); !re.MatchString(s) {
				bad = append(bad, fmt.Sprintf("month_year %q is not like %q", m, cur))
			}
		}
		if len(months) == 0 || months[len(months)-1] != cur {
			bad = append(bad, fmt.Sprintf("the last month is %v, want the current month %q", months[max(len(months)-1, 0):], cur))
		}
	}
	return bad
}
