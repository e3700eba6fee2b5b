package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// The bug report endpoints end to end (issue #12 item 4): bug_report events with known truth
// go through PUT /events of a started node, and every answer of /bugReports, its plot, one
// report and PATCH of its status must equal the one written down here by hand, on both store
// setups; a status change survives a restart of the node.

// bugT0 is 10:00 UTC five days ago, inside the default window; TestBugReportEndpoints sets it.
var bugT0 time.Time

// tReport is one bug report of the dataset, as the SDK sends it.
type tReport struct {
	key            string
	id, session    uuid.UUID
	at             time.Time
	member         string // the bug_report member
	description    string // what it reads as
	version, build string
	osName, osVer  string
	netType, user  string
	ud             string // JSON object or ""
	attach         []tAttachment
}

type tAttachment struct {
	id     uuid.UUID
	name   string
	size   int64  // -1: not sent
	upload []byte // nil: never uploaded
}

func (r *tReport) attrJSON() []byte {
	attr := map[string]any{"installation_id": "inst-1", "measure_sdk_version": "0.11.0", "app_unique_id": "com.example.app",
		"platform": "android", "app_version": r.version, "app_build": r.build, "os_name": r.osName, "os_version": r.osVer,
		"device_manufacturer": "Google", "device_model": "Pixel 8", "device_name": "shiba", "device_locale": "en-US",
		"network_type": r.netType, "thread_name": "main"}
	if r.user != "" {
		attr["user_id"] = r.user
	}
	ab, _ := json.Marshal(attr)
	return ab
}

func (r *tReport) json() string {
	ab := r.attrJSON()
	ud := "null"
	if r.ud != "" {
		ud = r.ud
	}
	var atts []string
	for _, a := range r.attach {
		s := fmt.Sprintf(`{"id":%q,"type":"screenshot","name":%q`, a.id, a.name)
		if a.size >= 0 {
			s += fmt.Sprintf(`,"size":%d`, a.size)
		}
		atts = append(atts, s+"}")
	}
	return fmt.Sprintf(`{"id":%q,"session_id":%q,"timestamp":%q,"type":"bug_report","bug_report":%s,"attribute":%s,"user_defined_attribute":%s,"attachments":[%s],"user_triggered":true}`,
		r.id, r.session, tsOf(r.at), r.member, ab, ud, strings.Join(atts, ","))
}

// bugDataset: session 1 (1.0, android, wifi, user kim) reports r1 (with an uploaded screenshot)
// and r2 on day 1; session 2 (2.0, ios, cellular) reports r3 (a screenshot never uploaded, and
// an escaped line break) on day 1 and r4 on day 2; session 3 (1.0, android) reports r5, which
// has no description, on day 2.
func bugDataset() []*tReport {
	s1, s2, s3 := uuid.New(), uuid.New(), uuid.New()
	one := func(key string, s uuid.UUID, d time.Duration, member, desc string) *tReport {
		return &tReport{key: key, id: uuid.New(), session: s, at: bugT0.Add(d), member: member, description: desc,
			version: "1.0", build: "100", osName: "android", osVer: "14", netType: "wifi"}
	}
	two := func(key string, s uuid.UUID, d time.Duration, member, desc string) *tReport {
		return &tReport{key: key, id: uuid.New(), session: s, at: bugT0.Add(d), member: member, description: desc,
			version: "2.0", build: "200", osName: "ios", osVer: "17.4", netType: "cellular"}
	}
	r1 := one("r1", s1, 0, `{"description":"Checkout button does nothing"}`, "Checkout button does nothing")
	r1.user, r1.ud = "kim", `{"tier":"gold"}`
	r1.attach = []tAttachment{{id: uuid.New(), name: "screenshot.png", size: 5, upload: []byte("\x89PNG!")}}
	r2 := one("r2", s1, 30*time.Minute, `{"description":"App froze on the cart"}`, "App froze on the cart")
	r2.user, r2.ud = "kim", `{"tier":"silver"}`
	r3 := two("r3", s2, time.Hour, `{"description":"Dark mode unreadable\nsecond line"}`, "Dark mode unreadable\nsecond line")
	r3.user = "grace"
	r3.attach = []tAttachment{{id: uuid.New(), name: "snapshot.svg", size: -1}}
	r4 := two("r4", s2, 24*time.Hour, `{"description":"checkout total wrong"}`, "checkout total wrong")
	r5 := one("r5", s3, 26*time.Hour, `{}`, "")
	return []*tReport{r1, r2, r3, r4, r5}
}

// TestBugReportEndpoints: the bug report endpoints answer exactly the dataset's truth, with
// every filter, paging, statuses set by a developer (a viewer gets 403), the 400s and 404s, and
// the statuses survive a restart of the node, on both store setups.
func TestBugReportEndpoints(t *testing.T) {
	now := time.Now().UTC()
	bugT0 = time.Date(now.Year(), now.Month(), now.Day(), 10, 0, 0, 0, time.UTC).AddDate(0, 0, -5)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, analyticsConfig)
			reports := bugDataset()
			by := map[string]*tReport{}
			var parts []string
			for _, r := range reports {
				by[r.key] = r
				parts = append(parts, r.json())
			}
			// Events that are no bug report, with a description all the same.
			other := uuid.New()
			parts = append(parts, fmt.Sprintf(`{"id":%q,"session_id":%q,"timestamp":%q,"type":"custom","custom":{"name":"checkout"},"attribute":%s,"user_triggered":false}`,
				other, reports[0].session, tsOf(bugT0.Add(time.Minute)), reports[0].attrJSON()))
			uploads := map[uuid.UUID][]byte{}
			for _, r := range reports {
				for _, a := range r.attach {
					if a.upload != nil {
						uploads[a.id] = a.upload
					}
				}
			}
			tn.sendWithUploads(t, `{"events":[`+strings.Join(parts, ",")+`],"spans":[]}`, uploads)
			tn.waitFlushed(t)

			team := tn.app.TeamID
			dev, viewer := tn.member(t, team, model.RoleDeveloper), tn.member(t, team, model.RoleViewer)
			c := &bugClient{spanClient: spanClient{tn: tn, token: tn.accessToken(t, tn.email), app: tn.app.ID.String()}, by: by}
			c.checkList(t)
			c.checkPlot(t)
			c.checkOne(t, other)
			c.checkStatus(t, tn.accessToken(t, dev), tn.accessToken(t, viewer))

			// The statuses are in the metadata store: a restarted node answers the same.
			old := tn
			tn = restartNode(t, backend, tn, nil)
			tn.app, tn.key, tn.email = old.app, old.key, old.email
			c.tn, c.token = tn, tn.accessToken(t, tn.email)
			c.checkAfterStatus(t)
		})
	}
}

// sendWithUploads PUTs a JSON batch and uploads the attachments whose bytes are given.
func (tn *testNode) sendWithUploads(t *testing.T, body string, uploads map[uuid.UUID][]byte) {
	t.Helper()
	r := tn.putJSON(t, tn.key, uuid.NewString(), []byte(body))
	if r.status != http.StatusOK {
		t.Fatalf("PUT /events: %d %s", r.status, r.body)
	}
	var v struct {
		Attachments []struct {
			ID        uuid.UUID         `json:"id"`
			UploadURL string            `json:"upload_url"`
			Headers   map[string]string `json:"headers"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatal(err)
	}
	for _, a := range v.Attachments {
		b, ok := uploads[a.ID]
		if !ok {
			continue
		}
		req, _ := http.NewRequest(http.MethodPut, a.UploadURL, bytes.NewReader(b))
		for k, h := range a.Headers {
			req.Header.Set(k, h)
		}
		resp, err := tn.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("upload %s: %d", a.UploadURL, resp.StatusCode)
		}
	}
}

// member adds a new user to the team with the role and returns their email.
func (tn *testNode) member(t *testing.T, team uuid.UUID, role model.Role) string {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	u := model.User{ID: uuid.New(), Name: string(role), Email: string(role) + "-" + uuid.NewString()[:8] + "@example.com", CreatedAt: now, UpdatedAt: now}
	if err := tn.Meta.CreateUser(ctx, u, model.Team{ID: uuid.New(), Name: "own", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := tn.Meta.AddMember(ctx, model.Member{TeamID: team, UserID: u.ID, Role: role, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	return u.Email
}

type bugClient struct {
	spanClient
	by map[string]*tReport
	// changed holds the updated_at of each report whose status was set.
	changed map[string]time.Time
}

type bugAttachmentRes struct {
	ID       uuid.UUID `json:"id"`
	Name     string    `json:"name"`
	Type     string    `json:"type"`
	Size     *int64    `json:"size"`
	Key      string    `json:"key"`
	Location string    `json:"location"`
}

type bugReportRes struct {
	SessionID   uuid.UUID                  `json:"session_id"`
	AppID       uuid.UUID                  `json:"app_id"`
	EventID     uuid.UUID                  `json:"event_id"`
	Status      *int                       `json:"status"`
	Description *string                    `json:"description"`
	Timestamp   string                     `json:"timestamp"`
	UpdatedAt   string                     `json:"updated_at"`
	Attribute   map[string]json.RawMessage `json:"attribute"`
	UD          map[string]any             `json:"user_defined_attribute"`
	Attachments []bugAttachmentRes         `json:"attachments"`
	Matched     *string                    `json:"matched_free_text"`
}

type bugPage struct {
	Meta    pageMetaRes    `json:"meta"`
	Results []bugReportRes `json:"results"`
}

type pageMetaRes struct {
	Next     bool `json:"next"`
	Previous bool `json:"previous"`
}

func bugWindow() string {
	return "from=" + url.QueryEscape(tsOf(bugT0.Add(-time.Hour))) + "&to=" + url.QueryEscape(tsOf(bugT0.Add(48*time.Hour)))
}

// page asks /bugReports and returns the keys of the reports listed, with the page's meta.
func (c *bugClient) page(t *testing.T, query string) ([]string, pageMetaRes, bugPage) {
	t.Helper()
	status, body := c.get(t, "/bugReports", query)
	if status != http.StatusOK {
		t.Fatalf("GET /bugReports?%s: %d %s", query, status, body)
	}
	var p bugPage
	if err := json.Unmarshal(body, &p); err != nil || p.Results == nil {
		t.Fatalf("GET /bugReports?%s: %v, results must be an array: %s", query, err, body)
	}
	var keys []string
	for _, r := range p.Results {
		keys = append(keys, c.keyOf(r.EventID))
	}
	return keys, p.Meta, p
}

func (c *bugClient) keyOf(id uuid.UUID) string {
	for k, r := range c.by {
		if r.id == id {
			return k
		}
	}
	return "unknown " + id.String()
}

// list checks that the query lists exactly the reports of keys, in that order.
func (c *bugClient) list(t *testing.T, query string, keys ...string) {
	t.Helper()
	got, _, _ := c.page(t, query)
	if !slices.Equal(got, keys) {
		t.Errorf("GET /bugReports?%s = %v, want %v", query, got, keys)
	}
}

// checkReport compares one report of an answer with the dataset: every field, with the status
// and its update time given.
func (c *bugClient) checkReport(t *testing.T, what string, got bugReportRes, status int, updated time.Time) {
	t.Helper()
	r := c.by[c.keyOf(got.EventID)]
	if r == nil {
		t.Errorf("%s: unknown report %s", what, got.EventID)
		return
	}
	ts, err := time.Parse(time.RFC3339Nano, got.Timestamp)
	up, uerr := time.Parse(time.RFC3339Nano, got.UpdatedAt)
	if got.SessionID != r.session || got.AppID.String() != c.app || err != nil || !ts.Equal(r.at) || uerr != nil || !up.Equal(updated) ||
		got.Status == nil || *got.Status != status || got.Description == nil || *got.Description != r.description {
		t.Errorf("%s: report %s = session %s app %s at %s updated %s status %v description %q; want %s %s %s %s %d %q", what, r.key,
			got.SessionID, got.AppID, got.Timestamp, got.UpdatedAt, got.Status, deref(got.Description),
			r.session, c.app, tsOf(r.at), tsOf(updated), status, r.description)
	}
	for k, want := range map[string]string{"app_version": r.version, "app_build": r.build, "os_name": r.osName, "os_version": r.osVer,
		"network_type": r.netType, "device_model": "Pixel 8", "installation_id": "inst-1"} {
		if w, _ := json.Marshal(want); string(got.Attribute[k]) != string(w) {
			t.Errorf("%s: report %s attribute.%s = %s, want %s", what, r.key, k, got.Attribute[k], w)
		}
	}
	if w, _ := json.Marshal(r.user); r.user != "" && string(got.Attribute["user_id"]) != string(w) {
		t.Errorf("%s: report %s attribute.user_id = %s, want %s", what, r.key, got.Attribute["user_id"], w)
	}
	wantUD := map[string]any{}
	if r.ud != "" {
		_ = json.Unmarshal([]byte(r.ud), &wantUD)
	}
	if !reflect.DeepEqual(got.UD, wantUD) {
		t.Errorf("%s: report %s user_defined_attribute = %v, want %v", what, r.key, got.UD, wantUD)
	}
	if got.Attachments == nil || len(got.Attachments) != len(r.attach) {
		t.Errorf("%s: report %s has attachments %+v, want %d", what, r.key, got.Attachments, len(r.attach))
		return
	}
	for i, a := range r.attach {
		g := got.Attachments[i]
		wantSize := a.size >= 0 && g.Size != nil && *g.Size == a.size || a.size < 0 && g.Size == nil
		if g.ID != a.id || g.Name != a.name || g.Type != "screenshot" || !wantSize || g.Key != "attachments/"+c.app+"/"+a.id.String() || g.Location == "" {
			t.Errorf("%s: report %s attachment %+v, want %s %s size %d with a key and a location", what, r.key, g, a.id, a.name, a.size)
			continue
		}
		if a.upload != nil {
			resp, err := c.tn.client.Get(g.Location)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, a.upload) {
				t.Errorf("%s: GET %s: %d %q, want the uploaded bytes", what, g.Location, resp.StatusCode, body)
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func (c *bugClient) checkList(t *testing.T) {
	w := bugWindow()
	// Every field of the default window's page; newest first.
	keys, meta, p := c.page(t, "")
	if !slices.Equal(keys, []string{"r5", "r4", "r3", "r2", "r1"}) || meta.Next || meta.Previous {
		t.Fatalf("GET /bugReports = %v %+v, want r5 r4 r3 r2 r1 without next or previous", keys, meta)
	}
	for _, r := range p.Results {
		c.checkReport(t, "list", r, 0, c.by[c.keyOf(r.EventID)].at)
		if r.Matched == nil || *r.Matched != "" {
			t.Errorf("list: matched_free_text %v, want \"\"", deref(r.Matched))
		}
	}
	// Filters, each as on every other endpoint.
	c.list(t, w, "r5", "r4", "r3", "r2", "r1")
	c.list(t, "from="+url.QueryEscape(tsOf(bugT0))+"&to="+url.QueryEscape(tsOf(bugT0.Add(time.Hour))), "r2", "r1") // [from, to)
	c.list(t, w+"&versions=2.0&version_codes=200", "r4", "r3")
	c.list(t, w+"&versions=1.0,2.0&version_codes=200,100") // pairs, not a cross product
	c.list(t, w+"&os_names=android&os_versions=14", "r5", "r2", "r1")
	c.list(t, w+"&network_types=cellular", "r4", "r3")
	c.list(t, w+"&device_names=shiba&locales=en-US&device_manufacturers=Google", "r5", "r4", "r3", "r2", "r1")
	c.list(t, w+"&countries=fr")
	c.list(t, w+"&ud_expression="+url.QueryEscape(`{"and":[{"cmp":{"key":"tier","type":"string","op":"eq","value":"gold"}}]}`), "r1")
	// Free text: descriptions contain it, user ids and ids equal it, ASCII case aside.
	keys, _, p = c.page(t, w+"&free_text=CHECKOUT")
	if !slices.Equal(keys, []string{"r4", "r1"}) || *p.Results[0].Matched != "Description: checkout total wrong" ||
		*p.Results[1].Matched != "Description: Checkout button does nothing" {
		t.Errorf("free_text=CHECKOUT: %v, %s", keys, jsonOf(p.Results))
	}
	keys, _, p = c.page(t, w+"&free_text=+Kim+")
	if !slices.Equal(keys, []string{"r2", "r1"}) || *p.Results[0].Matched != "User Id: kim" {
		t.Errorf("free_text= Kim : %v, %s", keys, jsonOf(p.Results))
	}
	c.list(t, w+"&free_text=ki")
	c.list(t, w+"&free_text=ad", "r3") // in "unreadable"
	c.list(t, w+"&free_text="+strings.ToUpper(c.by["r3"].session.String()), "r4", "r3")
	c.list(t, w+"&free_text="+c.by["r5"].id.String(), "r5")
	c.list(t, w+"&free_text="+url.QueryEscape("unreadable\nsecond"), "r3")
	// Paging by limit and offset.
	for _, pg := range []struct {
		q          string
		keys       []string
		next, prev bool
	}{
		{"limit=2", []string{"r5", "r4"}, true, false},
		{"limit=2&offset=2", []string{"r3", "r2"}, true, true},
		{"limit=2&offset=4", []string{"r1"}, false, true},
		{"limit=5", []string{"r5", "r4", "r3", "r2", "r1"}, false, false},
		{"offset=9", nil, false, true},
	} {
		keys, meta, _ := c.page(t, w+"&"+pg.q)
		if !slices.Equal(keys, pg.keys) || meta.Next != pg.next || meta.Previous != pg.prev {
			t.Errorf("GET /bugReports?%s = %v %+v, want %v next %v previous %v", pg.q, keys, meta, pg.keys, pg.next, pg.prev)
		}
	}
	for _, q := range []string{"limit=0", "limit=1001", "offset=-1", "bug_report_statuses=2", "bug_report_statuses=0,1",
		"bug_report_statuses=open", "from=yesterday&to=today", "versions=1.0", "os_names=android",
		"free_text=" + strings.Repeat("x", 1025), "ud_expression=%7B"} {
		c.status(t, "/bugReports", q, http.StatusBadRequest)
	}
}

func (c *bugClient) checkPlot(t *testing.T) {
	w := bugWindow()
	d1, d2 := bugT0.Format("2006-01-02"), bugT0.AddDate(0, 0, 1).Format("2006-01-02")
	pt := func(dt string, n int) jm { return jm{"datetime": dt, "instances": n} }
	c.want(t, "/bugReports/plots/instances", w, []jm{
		{"id": "1.0 (100)", "data": []jm{pt(d1, 2), pt(d2, 1)}},
		{"id": "2.0 (200)", "data": []jm{pt(d1, 1), pt(d2, 1)}}})
	c.want(t, "/bugReports/plots/instances", "", []jm{ // the default window: the last 7 days
		{"id": "1.0 (100)", "data": []jm{pt(d1, 2), pt(d2, 1)}},
		{"id": "2.0 (200)", "data": []jm{pt(d1, 1), pt(d2, 1)}}})
	hour := func(d time.Duration) string { return bugT0.Add(d).Format("2006-01-02T15:00:00") }
	c.want(t, "/bugReports/plots/instances", w+"&plot_time_group=hours", []jm{
		{"id": "1.0 (100)", "data": []jm{pt(hour(0), 2), pt(hour(26*time.Hour), 1)}},
		{"id": "2.0 (200)", "data": []jm{pt(hour(time.Hour), 1), pt(hour(24*time.Hour), 1)}}})
	// Asia/Kolkata is UTC+05:30: r1 15:30, r2 16:00, r3 16:30, r4 15:30 the next day, r5 17:30.
	ist := func(d time.Duration) string {
		l := bugT0.Add(d).In(time.FixedZone("IST", 5*3600+1800))
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), 0, 0, 0, l.Location()).Format("2006-01-02T15:04:05")
	}
	c.want(t, "/bugReports/plots/instances", w+"&plot_time_group=hours&timezone=Asia/Kolkata", []jm{
		{"id": "1.0 (100)", "data": []jm{pt(ist(0), 1), pt(ist(30*time.Minute), 1), pt(ist(26*time.Hour), 1)}},
		{"id": "2.0 (200)", "data": []jm{pt(ist(time.Hour), 1), pt(ist(24*time.Hour), 1)}}})
	c.want(t, "/bugReports/plots/instances", w+"&free_text=checkout", []jm{
		{"id": "1.0 (100)", "data": []jm{pt(d1, 1)}}, {"id": "2.0 (200)", "data": []jm{pt(d2, 1)}}})
	c.want(t, "/bugReports/plots/instances", w+"&versions=9.9&version_codes=9", []jm{})
	for _, q := range []string{"plot_time_group=weeks", "timezone=Mars/Olympus", "bug_report_statuses=-1", "from=" + url.QueryEscape(tsOf(bugT0))} {
		c.status(t, "/bugReports/plots/instances", q, http.StatusBadRequest)
	}
}

// one asks for one report and returns it.
func (c *bugClient) one(t *testing.T, id uuid.UUID) bugReportRes {
	t.Helper()
	status, body := c.get(t, "/bugReports/"+id.String(), "")
	if status != http.StatusOK {
		t.Fatalf("GET /bugReports/%s: %d %s", id, status, body)
	}
	var r bugReportRes
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Matched != nil {
		t.Errorf("GET /bugReports/%s: one report has no matched_free_text: %s", id, body)
	}
	return r
}

func (c *bugClient) checkOne(t *testing.T, other uuid.UUID) {
	for _, k := range []string{"r1", "r3", "r5"} {
		r := c.by[k]
		c.checkReport(t, "GET one", c.one(t, r.id), 0, r.at)
	}
	c.status(t, "/bugReports/"+uuid.NewString(), "", http.StatusNotFound)
	c.status(t, "/bugReports/"+other.String(), "", http.StatusNotFound) // an event, but no bug report
	c.status(t, "/bugReports/not-a-uuid", "", http.StatusBadRequest)
}

// patch sends PATCH …/bugReports/{id} with body as token and returns the answer.
func (c *bugClient) patch(t *testing.T, token, id, body string) response {
	t.Helper()
	return c.tn.do(t, http.MethodPatch, "/apps/"+c.app+"/bugReports/"+id, token, map[string]string{"Content-Type": "application/json"},
		strings.NewReader(body))
}

// setStatus closes or reopens a report as token and checks the answer: the report with its
// new status, updated now.
func (c *bugClient) setStatus(t *testing.T, token, key string, status int) {
	t.Helper()
	before := time.Now().Truncate(time.Microsecond)
	r := c.patch(t, token, c.by[key].id.String(), fmt.Sprintf(`{"status": %d}`, status))
	after := time.Now()
	if r.status != http.StatusOK {
		t.Fatalf("PATCH %s to %d: %d %s", key, status, r.status, r.body)
	}
	var got bugReportRes
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	up, err := time.Parse(time.RFC3339Nano, got.UpdatedAt)
	if err != nil || up.Before(before) || up.After(after) {
		t.Fatalf("PATCH %s: updated_at %s, want between %s and %s", key, got.UpdatedAt, tsOf(before), tsOf(after))
	}
	c.checkReport(t, "PATCH "+key, got, status, up)
	c.changed[key] = up
}

func (c *bugClient) checkStatus(t *testing.T, devToken, viewerToken string) {
	c.changed = map[string]time.Time{}
	r1 := c.by["r1"].id.String()
	// A viewer may read, never change; the role is checked before the body.
	if r := c.patch(t, viewerToken, r1, `{"status": 1}`); r.status != http.StatusForbidden || !strings.Contains(string(r.body), "developer") {
		t.Errorf("PATCH as a viewer: %d %s, want 403 naming the role needed", r.status, r.body)
	}
	if r := c.patch(t, viewerToken, r1, `{"status": 7}`); r.status != http.StatusForbidden {
		t.Errorf("PATCH as a viewer with a bad status: %d %s, want 403", r.status, r.body)
	}
	for _, body := range []string{`{"status": 2}`, `{"status": -1}`, `{"status": "1"}`, `{"status": 1.0}`, `{"status": true}`,
		`{"status": null}`, `{}`, `[1]`, `not json`, ``} {
		if r := c.patch(t, devToken, r1, body); r.status != http.StatusBadRequest || !json.Valid(r.body) {
			t.Errorf("PATCH %q: %d %s, want 400 with {error}", body, r.status, r.body)
		}
	}
	if r := c.patch(t, devToken, uuid.NewString(), `{"status": 1}`); r.status != http.StatusNotFound {
		t.Errorf("PATCH of an unknown report: %d %s, want 404", r.status, r.body)
	}
	if r := c.patch(t, devToken, "x", `{"status": 1}`); r.status != http.StatusBadRequest {
		t.Errorf("PATCH of a bad id: %d %s, want 400", r.status, r.body)
	}
	// Nothing changed so far.
	c.list(t, bugWindow()+"&bug_report_statuses=1")
	c.list(t, bugWindow()+"&bug_report_statuses=0", "r5", "r4", "r3", "r2", "r1")

	c.setStatus(t, devToken, "r1", 1) // a developer closes r1
	c.setStatus(t, c.token, "r3", 1)  // the owner closes r3…
	c.setStatus(t, devToken, "r4", 1)
	c.setStatus(t, devToken, "r4", 0) // …and r4 is reopened
	c.checkAfterStatus(t)
}

// checkAfterStatus checks the answers once r1 and r3 are closed and r4 reopened.
func (c *bugClient) checkAfterStatus(t *testing.T) {
	w := bugWindow()
	c.list(t, w+"&bug_report_statuses=1", "r3", "r1")
	c.list(t, w+"&bug_report_statuses=0", "r5", "r4", "r2")
	c.list(t, w+"&bug_report_statuses=0&bug_report_statuses=1", "r5", "r4", "r3", "r2", "r1")
	c.list(t, w+"&bug_report_statuses=1&versions=1.0&version_codes=100", "r1")
	c.list(t, w+"&bug_report_statuses=1&free_text=checkout", "r1")
	c.list(t, w+"&bug_report_statuses=0&limit=1&offset=1", "r4")
	_, _, p := c.page(t, w)
	for _, got := range p.Results {
		k := c.keyOf(got.EventID)
		status, updated := 0, c.by[k].at
		if at, ok := c.changed[k]; ok {
			updated = at
			if k != "r4" {
				status = 1
			}
		}
		c.checkReport(t, "list after status changes", got, status, updated)
		if k == "r1" || k == "r3" || k == "r4" {
			c.checkReport(t, "one after status changes", c.one(t, got.EventID), status, updated)
		}
	}
	d1, d2 := bugT0.Format("2006-01-02"), bugT0.AddDate(0, 0, 1).Format("2006-01-02")
	c.want(t, "/bugReports/plots/instances", w+"&bug_report_statuses=1", []jm{
		{"id": "1.0 (100)", "data": []jm{{"datetime": d1, "instances": 1}}},
		{"id": "2.0 (200)", "data": []jm{{"datetime": d1, "instances": 1}}}})
	c.want(t, "/bugReports/plots/instances", w+"&bug_report_statuses=0", []jm{
		{"id": "1.0 (100)", "data": []jm{{"datetime": d1, "instances": 1}, {"datetime": d2, "instances": 1}}},
		{"id": "2.0 (200)", "data": []jm{{"datetime": d2, "instances": 1}}}})
}
