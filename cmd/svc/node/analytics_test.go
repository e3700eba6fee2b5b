package node

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/dashboard"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/spool"
)

// The crash and ANR analytics end to end (issue 3): a generated dataset with known truth
// (analytics_gen_test.go) goes through PUT /events of a real node, and every analytics
// endpoint must give exactly the answer derived by hand from that truth
// (analytics_truth_test.go), on both backends, live and from the store alike, before and
// after restarts.

// analyticsBackends names the subtests by event store; harness is startNode's backend.
var analyticsBackends = []struct{ name, harness string }{
	{"badger", "embedded"},
	{"clickhouse", "clickhouse+postgres"},
}

// recordJSON is the spool record kind of a JSON PUT /events body (http/ingest's recordJSON):
// the restart test writes records the way the ingest handler does.
const recordJSON = 1

const day = int64(24 * time.Hour)

// aClient asks a node's dashboard API about the dataset's apps.
type aClient struct {
	tn     *testNode
	d      *dataset
	tokens map[*gApp]string
}

func (c *aClient) url(app *gApp, p string, q url.Values) string {
	s := "/apps/" + app.id.String() + p
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

func (c *aClient) get(t *testing.T, app *gApp, p string, q url.Values, hdr map[string]string) response {
	t.Helper()
	return c.tn.do(t, http.MethodGet, c.url(app, p, q), c.tokens[app], hdr, nil)
}

// ok GETs and decodes a 200 answer into v.
func (c *aClient) ok(t *testing.T, app *gApp, p string, q url.Values, v any) response {
	t.Helper()
	r := c.get(t, app, p, q, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", c.url(app, p, q), r.status, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("GET %s: %v: %s", c.url(app, p, q), err, r.body)
		}
	}
	return r
}

// liveStore asks twice, normally and with Svc-Answer-From: store, and requires identical
// bodies; the normal answer must come from want ("live" or "store"). It returns the bodies
// to check (one when they agree).
func (c *aClient) liveStore(t *testing.T, app *gApp, p string, q url.Values, want string) [][]byte {
	t.Helper()
	u := c.url(app, p, q)
	live := c.get(t, app, p, q, nil)
	store := c.get(t, app, p, q, map[string]string{dashboard.HeaderAnswerFrom: "store"})
	if live.status != http.StatusOK || store.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s / store %d %s", u, live.status, live.body, store.status, store.body)
	}
	if by := store.header.Get(dashboard.HeaderAnsweredBy); by != "store" {
		t.Errorf("GET %s with %s: store: answered by %q", u, dashboard.HeaderAnswerFrom, by)
	}
	if by := live.header.Get(dashboard.HeaderAnsweredBy); want != "" && by != want {
		t.Errorf("GET %s: answered by %q, want %q", u, by, want)
	}
	if !bytes.Equal(live.body, store.body) {
		t.Errorf("GET %s: live and store answers differ:\n live: %s\nstore: %s", u, clip(live.body), clip(store.body))
		return [][]byte{live.body, store.body}
	}
	return [][]byte{live.body}
}

func clip(b []byte) string {
	if len(b) > 3000 {
		return string(b[:3000]) + "…"
	}
	return string(b)
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return clip(b)
}

// load registers the dataset's apps on the node (app A is the harness's app), sends their
// initial events, the span and the builds, uploads attachments and waits until the store holds
// everything and the app actors agree with it.
func (d *dataset) load(t *testing.T, tn *testNode) *aClient {
	t.Helper()
	d.a.id, d.a.key, d.a.email = tn.app.ID, tn.key, tn.email
	app, key := tn.newApp(t)
	d.b.id, d.b.key, d.b.email = app.ID, key, tn.lastEmail
	c := &aClient{tn: tn, d: d}
	c.login(t)
	for _, app := range []*gApp{d.a, d.b} {
		for _, evs := range d.reqs[app] {
			c.send(t, app, evs, nil)
		}
	}
	c.send(t, d.a, nil, []json.RawMessage{d.a.spans[0].json(d.spanSession)})
	for _, b := range []string{
		`{"version_name":"1.0","version_code":"100","build_size":1000,"build_type":"apk"}`,
		`{"version_name":"1.1","version_code":"110","build_size":"2000","build_type":"apk"}`,
		`{"version_name":"2.0","version_code":"200","build_size":3500,"build_type":"aab"}`,
		`{"version_name":"1.0","version_code":"100","build_size":1100,"build_type":"aab"}`, // 1.0's newest build
	} {
		r := tn.do(t, http.MethodPut, "/builds", d.a.key, map[string]string{"Content-Type": "application/json"}, strings.NewReader(b))
		if r.status != http.StatusOK {
			t.Fatalf("PUT /builds %s: %d %s", b, r.status, r.body)
		}
		time.Sleep(5 * time.Millisecond) // builds are ordered by update time
	}
	c.settle(t)
	return c
}

func (c *aClient) login(t *testing.T) {
	c.tokens = map[*gApp]string{c.d.a: c.tn.accessToken(t, c.d.a.email), c.d.b: c.tn.accessToken(t, c.d.b.email)}
}

// send PUTs one request and uploads the attachments it has bytes for.
func (c *aClient) send(t *testing.T, app *gApp, evs []*gEvent, spans []json.RawMessage) {
	t.Helper()
	r := c.tn.putJSON(t, app.key, uuid.NewString(), batchBody(evs, spans))
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
		for _, e := range evs {
			for i := range e.attach {
				if e.attach[i].id != a.ID || e.attach[i].upload == nil {
					continue
				}
				req, _ := http.NewRequest(http.MethodPut, a.UploadURL, bytes.NewReader(e.attach[i].upload))
				for k, h := range a.Headers {
					req.Header.Set(k, h)
				}
				resp, err := c.tn.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("upload %s: %d", a.UploadURL, resp.StatusCode)
				}
				e.attach[i].uploaded = true
			}
		}
	}
}

// settle waits for the store to hold every accepted batch, then (for at most 10 s) for the
// app actors, which learn of batches asynchronously, to agree with it on the widest answers.
func (c *aClient) settle(t *testing.T) { c.settleApps(t, c.d.a, c.d.b) }

func (c *aClient) settleApps(t *testing.T, apps ...*gApp) {
	t.Helper()
	c.tn.waitFlushed(t)
	q := url.Values{"from": {"1970-01-01T00:00:00Z"}, "to": {"2100-01-01T00:00:00Z"}, "limit": {"1000"}}
	deadline := time.Now().Add(10 * time.Second)
	for _, app := range apps {
		for _, p := range []string{"/errorGroups", "/journey"} {
			for {
				live := c.get(t, app, p, q, nil)
				store := c.get(t, app, p, q, map[string]string{dashboard.HeaderAnswerFrom: "store"})
				if bytes.Equal(live.body, store.body) || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
}

// Windows of the suite.
type window struct {
	name string
	q    aq
}

func (d *dataset) windows() []window {
	D := func(n int) int64 { return d.today - int64(n)*day }
	return []window{
		{"default", aq{from: D(6), to: D(-1)}},
		{"days 4-2", aq{window: true, from: D(4), to: D(1)}},
		{"day 2", aq{window: true, from: D(2), to: D(1)}},
		{"wide", aq{window: true, from: D(12), to: D(-1)}},
		{"empty", aq{window: true, from: D(40), to: D(35)}},
		{"unaligned", aq{window: true, from: D(3) + 12*int64(time.Hour), to: D(1) + int64(18*time.Hour+30*time.Minute+500*time.Millisecond)}},
		{"unaligned beyond the data", aq{window: true, from: D(20) + int64(3*time.Hour+17*time.Minute), to: D(-1) + 5*int64(time.Hour)}},
		// The dashboard's shape: the last days to the millisecond, ending after the data.
		{"unaligned from", aq{window: true, from: D(4) + int64(12*time.Hour+2*time.Millisecond), to: D(-1) + 5*int64(time.Hour)}},
		{"inside a day", aq{window: true, from: D(2) + int64(time.Hour), to: D(2) + 20*int64(time.Hour)}},
	}
}

func (d *dataset) defaultQ() aq { return d.windows()[0].q }

func with(q aq, f func(*aq)) aq { f(&q); return q }

// groupRes is one group of a list as the API answers it.
type groupRes struct {
	AppID      string  `json:"app_id"`
	ID         string  `json:"id"`
	Type       string  `json:"type"`
	Message    string  `json:"message"`
	MethodName string  `json:"method_name"`
	FileName   string  `json:"file_name"`
	LineNumber int     `json:"line_number"`
	Count      int     `json:"count"`
	Percentage float64 `json:"percentage_contribution"`
	UpdatedAt  string  `json:"updated_at"`
	ErrorType  *string `json:"error_type"`
	Severity   *string `json:"severity"`
}

type groupPage struct {
	Meta struct {
		Next     bool `json:"next"`
		Previous bool `json:"previous"`
	} `json:"meta"`
	Results []groupRes `json:"results"`
}

var groupKeys = []string{"app_id", "count", "file_name", "id", "line_number", "message", "method_name", "percentage_contribution", "type", "updated_at"}

func wantGroupRes(app *gApp, g wantGroup, errorGroups bool) groupRes {
	e := g.last
	r := groupRes{AppID: app.id.String(), ID: g.id, Type: e.gType, Message: e.gMsg, MethodName: e.gMethod, FileName: e.gFile,
		LineNumber: e.gLine, Count: g.count, Percentage: g.pct, UpdatedAt: strconv.FormatInt(e.ts, 10)}
	if errorGroups {
		et, sev := "exception", e.severity // the reference dashboard's source pill
		if e.class == "anr" {
			et, sev = "anr", "fatal"
		}
		r.ErrorType, r.Severity = &et, &sev
	}
	return r
}

// decodeGroups reads a group page, checks its keys and turns updated_at into Unix ns.
func decodeGroups(t *testing.T, what string, body []byte, errorGroups bool) groupPage {
	t.Helper()
	var raw struct {
		Meta    map[string]bool   `json:"meta"`
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(body, &raw); err != nil || raw.Results == nil || len(raw.Meta) != 2 {
		t.Fatalf("%s: not a page {meta{next,previous}, results[]}: %v %s", what, err, clip(body))
	}
	want := groupKeys
	if errorGroups {
		want = append(append([]string{}, groupKeys...), "error_type", "severity")
	}
	for _, r := range raw.Results {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(r, &m)
		if len(m) != len(want) {
			t.Errorf("%s: a group has keys %v, want %v", what, keysOf(m), want)
			break
		}
		for _, k := range want {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: a group lacks %q: %s", what, k, r)
			}
		}
	}
	var p groupPage
	_ = json.Unmarshal(body, &p)
	for i := range p.Results {
		ts, err := time.Parse(time.RFC3339Nano, p.Results[i].UpdatedAt)
		if err != nil {
			t.Errorf("%s: updated_at %q is not RFC 3339", what, p.Results[i].UpdatedAt)
		}
		p.Results[i].UpdatedAt = strconv.FormatInt(ts.UnixNano(), 10)
	}
	return p
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// checkGroups compares a whole group list (limit large enough) with the truth.
func checkGroups(t *testing.T, what string, body []byte, app *gApp, want []wantGroup, errorGroups bool) {
	t.Helper()
	p := decodeGroups(t, what, body, errorGroups)
	if p.Meta.Next || p.Meta.Previous {
		t.Errorf("%s: meta %+v on a whole list", what, p.Meta)
	}
	ws := make([]groupRes, len(want))
	for i, g := range want {
		ws[i] = wantGroupRes(app, g, errorGroups)
	}
	diffList(t, what, p.Results, ws)
}

// diffList reports the first difference between two lists.
func diffList[T any](t *testing.T, what string, got, want []T) {
	t.Helper()
	if reflect.DeepEqual(got, want) || len(got) == 0 && len(want) == 0 {
		return
	}
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			t.Errorf("%s: %d items, want %d; missing %s", what, len(got), len(want), jsonOf(want[i]))
			return
		case i >= len(want):
			t.Errorf("%s: %d items, want %d; extra %s", what, len(got), len(want), jsonOf(got[i]))
			return
		case !reflect.DeepEqual(got[i], want[i]):
			t.Errorf("%s: item %d of %d:\n got %s\nwant %s", what, i, len(want), jsonOf(got[i]), jsonOf(want[i]))
			return
		}
	}
}

// groupEndpoints are the three lists: path, default classes, errorGroups' extra fields.
var groupEndpoints = []struct {
	path    string
	classes []string
	errors  bool
}{
	{"/crashGroups", []string{"crash"}, false},
	{"/anrGroups", []string{"anr"}, false},
	{"/errorGroups", []string{"crash", "anr", "handled"}, true},
}

// listCases are the attribute filter lists of the suite.
var listCases = []map[string][]string{
	{"device_names": {"Pixel 7"}},
	{"device_names": {"SM-S911B", "sdk_gphone64_arm64"}},
	{"device_manufacturers": {"samsung", "Xiaomi"}},
	{"locales": {"de-DE"}},
	{"network_providers": {"T-Mobile"}},
	{"network_types": {"wifi"}},
	{"network_generations": {"4g", "5g"}},
	{"countries": {"DE"}},
	{"device_names": {"Pixel 7", "Redmi Note 12"}, "locales": {"en-US", "pt-BR"}, "network_types": {"wifi"}},
}

func (c *aClient) groupList(t *testing.T, app *gApp, ep string, classes []string, errs bool, q aq) {
	t.Helper()
	q.limit = 1000
	want := c.d.groups(app, q, q.classes(classes...))
	for _, b := range c.liveStore(t, app, ep, q.values(), c.d.answeredBy(app, q)) {
		checkGroups(t, ep+"?"+q.values().Encode(), b, app, want, errs)
	}
}

func (c *aClient) testGroupLists(t *testing.T) {
	d := c.d
	for _, ep := range groupEndpoints {
		t.Run(strings.TrimPrefix(ep.path, "/"), func(t *testing.T) {
			for _, w := range d.windows() {
				for _, vs := range [][]gVer{nil, {d.vA20}, {d.vA10, d.vA11}, {{"1.0", "110"}}} {
					c.groupList(t, d.a, ep.path, ep.classes, ep.errors, with(w.q, func(q *aq) { q.versions = vs }))
				}
			}
			for _, lc := range listCases {
				c.groupList(t, d.a, ep.path, ep.classes, ep.errors, with(d.defaultQ(), func(q *aq) { q.lists = lc }))
			}
			for _, u := range udCases {
				c.groupList(t, d.a, ep.path, ep.classes, ep.errors, with(d.defaultQ(), func(q *aq) { q.ud = &u }))
			}
			c.groupList(t, d.a, ep.path, ep.classes, ep.errors, with(d.windows()[5].q, func(q *aq) {
				q.versions, q.lists, q.ud = []gVer{d.vA11, d.vA20}, listCases[8], &udCases[2]
			}))
			c.groupList(t, d.b, ep.path, ep.classes, ep.errors, d.defaultQ())
			// plot_time_group and timezone are accepted and change nothing in a list, which is
			// answered live in any zone (d.answeredBy) and equals the store's answer.
			c.groupList(t, d.a, ep.path, ep.classes, ep.errors, with(d.defaultQ(), func(q *aq) { q.tg = "hours" }))
			c.groupList(t, d.a, ep.path, ep.classes, ep.errors, with(d.defaultQ(), func(q *aq) { q.tg, q.tz = "days", "Asia/Kolkata" }))
			// The default page: the first 10 groups, meta.next when there are more.
			want := d.groups(d.a, d.defaultQ(), ep.classes)
			for _, b := range c.liveStore(t, d.a, ep.path, nil, "live") {
				p := decodeGroups(t, ep.path, b, ep.errors)
				n := min(10, len(want))
				ws := make([]groupRes, n)
				for i := range ws {
					ws[i] = wantGroupRes(d.a, want[i], ep.errors)
				}
				diffList(t, ep.path+" (default page)", p.Results, ws)
				if p.Meta.Next != (len(want) > 10) || p.Meta.Previous {
					t.Errorf("%s default page: meta %+v with %d groups", ep.path, p.Meta, len(want))
				}
			}
		})
	}
	// Sanity anchors written out: app A's crash groups include PAY with six crashes of three
	// versions, and the group shared with app B counts only app A's crashes.
	var p groupPage
	for _, b := range c.liveStore(t, d.a, "/crashGroups", url.Values{"limit": {"1000"}}, "live") {
		p = decodeGroups(t, "crashGroups", b, false)
	}
	found := false
	for _, g := range p.Results {
		if g.ID == d.pay {
			found = true
			if g.Count != 6 || g.Type != "java.lang.IllegalStateException" || g.MethodName != "charge" || g.FileName != "PaymentClient.kt" {
				t.Errorf("PAY group: %+v, want 6 crashes of java.lang.IllegalStateException at charge (PaymentClient.kt)", g)
			}
		}
	}
	if !found {
		t.Errorf("no PAY group (%s) in app A's crash groups", d.pay)
	}
}

func (c *aClient) testErrorGroups(t *testing.T) {
	d := c.d
	all := []string{"crash", "anr", "handled"}
	for _, q := range []aq{
		with(d.defaultQ(), func(q *aq) { q.types = []string{"crash"} }),
		with(d.defaultQ(), func(q *aq) { q.types = []string{"handled"} }),
		with(d.defaultQ(), func(q *aq) { q.types = []string{"anr", "handled"} }),
		with(d.defaultQ(), func(q *aq) { q.types = []string{"crash", "anr", "handled"} }),
		with(d.defaultQ(), func(q *aq) { q.severities = []string{"fatal"} }),
		with(d.defaultQ(), func(q *aq) { q.severities = []string{"handled", "unhandled"} }),
		with(d.defaultQ(), func(q *aq) { q.types, q.severities = []string{"anr"}, []string{"fatal"} }),
		with(d.windows()[1].q, func(q *aq) {
			q.types, q.severities, q.versions = []string{"crash", "handled"}, []string{"fatal"}, []gVer{d.vA11}
		}),
		// The reference dashboard's vocabulary: error is every exception, a severity narrows
		// exceptions only, and an ANR is selected by its type whatever the severities.
		with(d.defaultQ(), func(q *aq) { q.types, q.severities = []string{"error", "anr"}, []string{"fatal"} }),
		with(d.defaultQ(), func(q *aq) { q.types, q.severities = []string{"anr"}, []string{"handled"} }),
		with(d.defaultQ(), func(q *aq) { q.types, q.severities = []string{"error"}, []string{"unhandled", "handled"} }),
		with(d.defaultQ(), func(q *aq) { q.types, q.severities = []string{"error"}, []string{"unhandled"} }),
		with(d.defaultQ(), func(q *aq) { q.types, q.severities = []string{"error"}, []string{"fatal"} }),
		with(d.defaultQ(), func(q *aq) { q.types = []string{"error"} }),
		with(d.defaultQ(), func(q *aq) { q.types = []string{"error", "anr"} }),
		with(d.defaultQ(), func(q *aq) {
			q.types, q.severities = []string{"error", "anr"}, []string{"fatal", "unhandled", "handled"}
		}),
		with(d.defaultQ(), func(q *aq) { q.types, q.severities = []string{"crash", "error"}, []string{"fatal"} }),
		with(d.defaultQ(), func(q *aq) { q.types, q.severities = []string{"handled"}, []string{"fatal"} }),
		with(d.windows()[1].q, func(q *aq) {
			q.types, q.severities, q.versions = []string{"error", "anr"}, []string{"fatal"}, []gVer{d.vA10, d.vA11}
		}),
		with(d.windows()[5].q, func(q *aq) {
			q.types, q.severities, q.lists = []string{"error", "anr"}, []string{"fatal"}, listCases[6]
		}),
	} {
		c.groupList(t, d.a, "/errorGroups", all, true, q)
	}
	// The dashboard's default asks for crashes and ANRs: both must be in the dataset's answer,
	// and handled exceptions not, so the cases above tell the meanings apart.
	kinds := map[string]int{}
	for _, g := range d.groups(d.a, with(d.defaultQ(), func(q *aq) { q.types, q.severities = []string{"error", "anr"}, []string{"fatal"} }), all) {
		kinds[g.last.class]++
	}
	if kinds["crash"] == 0 || kinds["anr"] == 0 {
		t.Fatalf("dataset: type=error,anr&severity=fatal must list crash and ANR groups, lists %v", kinds)
	}
	if len(d.groups(d.a, with(d.defaultQ(), func(q *aq) { q.types, q.severities = []string{"error"}, []string{"unhandled"} }), all)) == 0 {
		t.Fatalf("dataset: type=error&severity=unhandled lists no group")
	}
	// The mixed group (NPE: crashes and handled exceptions) counts only its crashes in
	// crashGroups and all of its events in errorGroups, typed by its latest event.
	crashes := d.groups(d.a, d.defaultQ(), []string{"crash"})
	errs := d.groups(d.a, d.defaultQ(), all)
	var cn, en int
	var et string
	for _, g := range crashes {
		if g.id == d.npe {
			cn = g.count
		}
	}
	for _, g := range errs {
		if g.id == d.npe {
			en, et = g.count, g.last.class
		}
	}
	if cn == 0 || en <= cn {
		t.Fatalf("dataset: NPE must have crashes (%d) and handled exceptions (%d in all)", cn, en)
	}
	t.Logf("NPE: %d crashes, %d errors, latest %s", cn, en, et)
	// The early-bound case of app B: its first events are two handled exceptions an hour
	// apart in one request; a window starting between them holds only the second.
	early := with(d.defaultQ(), func(q *aq) {
		q.window, q.from, q.to, q.types = true, d.today-12*day+int64(8*time.Hour+30*time.Minute), d.today-11*day, []string{"handled"}
	})
	t.Run("WindowStartsBetweenTwoHandledExceptions", func(t *testing.T) {
		if n := d.groups(d.b, early, all); len(n) != 1 || n[0].count != 1 {
			t.Fatalf("dataset: early window must hold one handled exception, has %+v", n)
		}
		c.groupList(t, d.b, "/errorGroups", all, true, early)
		c.groupList(t, d.b, "/errorGroups", all, true, with(early, func(q *aq) { q.types = nil }))
	})
}

// instanceRes is one instance as the API answers it.
type instanceRes struct {
	ID        uuid.UUID                  `json:"id"`
	SessionID uuid.UUID                  `json:"session_id"`
	Timestamp string                     `json:"timestamp"`
	Type      string                     `json:"type"`
	Attribute map[string]json.RawMessage `json:"attribute"`
	Exception *struct {
		Title      string `json:"title"`
		Stacktrace string `json:"stacktrace"`
		Message    string `json:"message"`
	} `json:"exception"`
	Attachments []struct {
		ID       uuid.UUID `json:"id"`
		Name     string    `json:"name"`
		Type     string    `json:"type"`
		Key      string    `json:"key"`
		Location string    `json:"location"`
	} `json:"attachments"`
	Threads []threadWant `json:"threads"`
}

type instancePage struct {
	Meta struct {
		Next     bool `json:"next"`
		Previous bool `json:"previous"`
	} `json:"meta"`
	Results []instanceRes `json:"results"`
}

func (c *aClient) instancePage(t *testing.T, app *gApp, p string, q url.Values) instancePage {
	t.Helper()
	var page instancePage
	r := c.ok(t, app, p, q, &page)
	if page.Results == nil {
		t.Fatalf("GET %s: results must be an array: %s", c.url(app, p, q), clip(r.body))
	}
	return page
}

// checkInstance compares one instance with its event, field by field.
func (c *aClient) checkInstance(t *testing.T, what string, got instanceRes, e *gEvent) {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, got.Timestamp)
	if got.ID != e.id || got.SessionID != e.s.id || err != nil || ts.UnixNano() != e.ts || got.Type != e.gType {
		t.Errorf("%s: instance %s/%s at %s type %q, want %s/%s at %s type %q", what, got.ID, got.SessionID, got.Timestamp, got.Type,
			e.id, e.s.id, time.Unix(0, e.ts).UTC().Format(time.RFC3339Nano), e.gType)
		return
	}
	if got.Exception == nil || got.Exception.Title != e.title() || got.Exception.Message != e.gMsg ||
		e.stack != "" && got.Exception.Stacktrace != e.stack || got.Exception.Stacktrace == "" {
		t.Errorf("%s: instance %s exception %+v, want title %q message %q stacktrace %q", what, e.id, got.Exception, e.title(), e.gMsg, e.stack)
	}
	if got.Threads == nil || e.threads != nil && !reflect.DeepEqual(got.Threads, e.threads) {
		t.Errorf("%s: instance %s threads %s, want %s", what, e.id, jsonOf(got.Threads), jsonOf(e.threads))
	}
	attr := e.s.attr(e.v, e.thread)
	for _, k := range []string{"app_version", "app_build", "app_unique_id", "platform", "device_name", "device_model",
		"device_manufacturer", "device_locale", "os_name", "os_version", "network_type", "network_provider", "network_generation",
		"thread_name", "installation_id"} {
		want, _ := json.Marshal(attr[k])
		if string(got.Attribute[k]) != string(want) {
			t.Errorf("%s: instance %s attribute.%s = %s, want %s", what, e.id, k, got.Attribute[k], want)
		}
	}
	if string(got.Attribute["service_sdk_version"]) != `"0.11.0"` {
		t.Errorf("%s: instance %s attribute.service_sdk_version = %s", what, e.id, got.Attribute["service_sdk_version"])
	}
	if len(got.Attachments) != len(e.attach) {
		t.Errorf("%s: instance %s has %d attachments, want %d", what, e.id, len(got.Attachments), len(e.attach))
		return
	}
	for i, a := range e.attach {
		g := got.Attachments[i]
		if g.ID != a.id || g.Name != a.name || g.Type != a.typ || g.Key != "attachments/"+e.s.app.id.String()+"/"+a.id.String() || g.Location == "" {
			t.Errorf("%s: instance %s attachment %+v, want %s %s %s with a location", what, e.id, g, a.id, a.name, a.typ)
			continue
		}
		lu, err := url.Parse(g.Location)
		if err != nil {
			t.Errorf("%s: location %q: %v", what, g.Location, err)
			continue
		}
		if exp, err := strconv.ParseInt(lu.Query().Get("expires"), 10, 64); err != nil || math.Abs(float64(exp-time.Now().Add(time.Hour).Unix())) > 120 {
			t.Errorf("%s: location %q must be valid for an hour", what, g.Location)
		}
		if a.uploaded {
			resp, err := c.tn.client.Get(g.Location)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, a.upload) {
				t.Errorf("%s: GET %s: %d %q, want the uploaded bytes", what, g.Location, resp.StatusCode, clip(body))
			}
		}
	}
}

// groupOf returns the group id of the first event matching the predicate.
func (d *dataset) groupOf(app *gApp, f func(e *gEvent) bool) string {
	for _, e := range d.events(app) {
		if f(e) {
			return e.group
		}
	}
	panic("dataset: no such group")
}

func (c *aClient) testInstances(t *testing.T) {
	d := c.d
	jsFoo := d.groupOf(d.a, func(e *gEvent) bool { return e.gType == "TypeError" && strings.Contains(e.gMsg, "foo") })
	jsBar := d.groupOf(d.a, func(e *gEvent) bool { return e.gType == "TypeError" && strings.Contains(e.gMsg, "bar") })
	apple := d.groupOf(d.a, func(e *gEvent) bool { return e.gType == "SIGABRT" && e.gFile != "" })
	dart := d.groupOf(d.a, func(e *gEvent) bool { return e.gType == "_TypeError" })
	oom := d.groupOf(d.a, func(e *gEvent) bool { return e.gType == "java.lang.OutOfMemoryError" })
	if jsFoo == jsBar {
		t.Fatal("js groups must differ by message")
	}
	cases := []struct {
		class, group string
	}{
		{"crash", d.pay}, {"crash", d.npe}, {"crash", jsFoo}, {"crash", jsBar}, {"crash", apple}, {"crash", dart}, {"crash", oom},
		{"anr", d.feedANR}, {"anr", d.dbANR},
		{"crash", d.feedANR}, {"anr", d.pay}, // another class's group: nothing
	}
	qs := []aq{
		d.defaultQ(),
		d.windows()[3].q,
		d.windows()[5].q,
		with(d.defaultQ(), func(q *aq) { q.versions = []gVer{d.vA20} }),
		with(d.defaultQ(), func(q *aq) { q.lists = listCases[0] }),
		with(d.defaultQ(), func(q *aq) { q.lists = listCases[7] }),
		with(d.defaultQ(), func(q *aq) { q.ud = &udCases[2] }),
		with(d.defaultQ(), func(q *aq) { q.tg = "hours" }),
	}
	for _, cs := range cases {
		p := "/crashGroups/" + cs.group + "/crashes"
		if cs.class == "anr" {
			p = "/anrGroups/" + cs.group + "/anrs"
		}
		for _, q := range qs {
			q.limit = 1000
			want := d.instances(d.a, q, []string{cs.class}, cs.group)
			page := c.instancePage(t, d.a, p, q.values())
			what := p + "?" + q.values().Encode()
			if page.Meta.Next || page.Meta.Previous {
				t.Errorf("%s: meta %+v on a whole list", what, page.Meta)
			}
			if len(page.Results) != len(want) {
				got := make([]string, len(page.Results))
				for i, r := range page.Results {
					got[i] = r.ID.String()
				}
				t.Errorf("%s: %d instances %v, want %d", what, len(page.Results), got, len(want))
				continue
			}
			for i := range want {
				c.checkInstance(t, what, page.Results[i], want[i])
			}
		}
	}
	if n := len(d.instances(d.a, d.defaultQ(), []string{"crash"}, d.pay)); n != 6 {
		t.Errorf("dataset: PAY has %d crashes in the default window, want 6", n)
	}
}

func (c *aClient) testPlots(t *testing.T) {
	d := c.d
	D := func(n int) int64 { return d.today - int64(n)*day }
	qs := []aq{
		d.defaultQ(),
		d.windows()[3].q,
		d.windows()[5].q,
		with(d.defaultQ(), func(q *aq) { q.versions = []gVer{d.vA20} }),
		with(d.defaultQ(), func(q *aq) { q.lists = listCases[1] }),
		with(d.defaultQ(), func(q *aq) { q.ud = &udCases[1] }),
		with(d.windows()[2].q, func(q *aq) { q.tg = "hours" }),
		with(d.windows()[3].q, func(q *aq) { q.tg = "months" }),
		with(d.windows()[3].q, func(q *aq) { q.tg = "days" }),
		{window: true, from: D(2) + 9*int64(time.Hour), to: D(2) + 15*int64(time.Hour), tg: "minutes"},
		// In Asia/Kolkata (+05:30): local days straddle UTC days, hours start at :30 UTC.
		with(d.defaultQ(), func(q *aq) { q.tz = "Asia/Kolkata" }),
		with(d.windows()[2].q, func(q *aq) { q.tg, q.tz = "hours", "Asia/Kolkata" }),
		with(d.windows()[3].q, func(q *aq) { q.tg, q.tz = "days", "Asia/Kolkata" }),
		with(d.windows()[3].q, func(q *aq) { q.tg, q.tz = "months", "Asia/Kolkata" }),
		with(d.defaultQ(), func(q *aq) { q.tz, q.versions = "Asia/Kolkata", []gVer{d.vA20} }),
		{window: true, from: D(2) + 9*int64(time.Hour), to: D(2) + 15*int64(time.Hour), tg: "minutes", tz: "Asia/Kolkata"},
	}
	for _, q := range qs {
		var health []wantSeries
		c.ok(t, d.a, "/health/plots/instances", q.values(), &health)
		if want := d.health(d.a, q); !reflect.DeepEqual(health, want) {
			t.Errorf("/health/plots/instances?%s:\n got %s\nwant %s", q.values().Encode(), jsonOf(health), jsonOf(want))
		}
		for _, cl := range []struct{ class, path string }{{"crash", "/crashGroups/plots/instances"}, {"anr", "/anrGroups/plots/instances"}} {
			var got []wantSeries
			c.ok(t, d.a, cl.path, q.values(), &got)
			diffList(t, cl.path+"?"+q.values().Encode(), got, d.overview(d.a, q, cl.class))
		}
		for _, g := range []struct{ class, group string }{{"crash", d.pay}, {"crash", d.npe}, {"anr", d.feedANR}} {
			p := "/crashGroups/" + g.group + "/plots/instances"
			if g.class == "anr" {
				p = "/anrGroups/" + g.group + "/plots/instances"
			}
			var got []wantSeries
			r := c.ok(t, d.a, p, q.values(), &got)
			if bytes.Contains(r.body, []byte("free_sessions")) {
				t.Errorf("%s: group plot points have datetime and instances only: %s", p, clip(r.body))
			}
			diffList(t, p+"?"+q.values().Encode(), got, d.groupPlot(d.a, q, g.class, g.group))
		}
	}
	// A point's crash-free share is computed: some point of the default crash plot is below
	// 100 and above 0.
	mid := false
	for _, s := range d.overview(d.a, d.defaultQ(), "crash") {
		for _, p := range s.Data {
			mid = mid || *p.CrashFree > 0 && *p.CrashFree < 100
		}
	}
	if !mid {
		t.Error("dataset: the crash plot needs a point with crashed and crash-free sessions")
	}
}

type pathRes struct {
	SessionsAnalyzed int `json:"sessions_analyzed"`
	Steps            []struct {
		Description   string  `json:"description"`
		ThreadName    string  `json:"thread_name"`
		ConfidencePct float64 `json:"confidence_pct"`
	} `json:"steps"`
}

func (c *aClient) testPaths(t *testing.T) {
	d := c.d
	type step = struct {
		Description   string  `json:"description"`
		ThreadName    string  `json:"thread_name"`
		ConfidencePct float64 `json:"confidence_pct"`
	}
	// Written out from the scripts in genA: six checkout sessions (four open_cart, two
	// search); the memory sample is left out; app B's crash of the same group is not app A's.
	pay := pathRes{SessionsAnalyzed: 6, Steps: []step{
		{"Session started", "main", 100},
		{"Cold launch: com.shop.MainActivity", "main", 100},
		{"Activity created: com.shop.MainActivity", "main", 100},
		{"Activity resumed: com.shop.MainActivity", "main", 100},
		{"Custom event: open_cart", "main", 66.7},
		{"Activity paused: com.shop.MainActivity", "main", 100},
		{"Activity created: com.shop.CheckoutActivity", "main", 100},
		{"Activity resumed: com.shop.CheckoutActivity", "main", 100},
		{"User tapped on btn_pay", "main", 100},
		{"Crash: java.lang.IllegalStateException - payment failed", "main", 100},
	}}
	feed := pathRes{SessionsAnalyzed: 5, Steps: []step{
		{"Session started", "main", 100},
		{"Warm launch: com.shop.MainActivity", "main", 100},
		{"Activity created: com.shop.MainActivity", "main", 100},
		{"Activity resumed: com.shop.MainActivity", "main", 100},
		{"Fragment attached: com.shop.FeedFragment", "main", 100},
		{"Fragment resumed: com.shop.FeedFragment", "main", 100},
		{"Custom event: refresh", "main", 100},
		{"ANR: sh.measure.android.anr.AnrError - Application Not Responding for at least 5s", "main", 100},
	}}
	none := pathRes{Steps: []step{}}
	for _, cs := range []struct {
		p    string
		want pathRes
	}{
		{"/crashGroups/" + d.pay + "/path", pay},
		{"/anrGroups/" + d.feedANR + "/path", feed},
		{"/crashGroups/" + d.feedANR + "/path", none},
		{"/crashGroups/" + strings.Repeat("0", 32) + "/path", none},
	} {
		var got pathRes
		c.ok(t, d.a, cs.p, nil, &got)
		if !reflect.DeepEqual(got, cs.want) {
			t.Errorf("%s:\n got %s\nwant %s", cs.p, jsonOf(got), jsonOf(cs.want))
		}
	}
}

func (c *aClient) testJourneys(t *testing.T) {
	d := c.d
	for _, app := range []*gApp{d.a, d.b} {
		for _, w := range d.windows() {
			for _, vs := range [][]gVer{nil, {d.vA20}, {d.vA10, d.vA11}} {
				for _, bigraph := range []bool{true, false} {
					q := with(w.q, func(q *aq) { q.versions = vs })
					v := q.values()
					v.Set("bigraph", map[bool]string{true: "1", false: "0"}[bigraph])
					want := d.journey(app, q, bigraph, "", "")
					for _, b := range c.liveStore(t, app, "/journey", v, d.answeredBy(app, q)) {
						var got jGraph
						if err := json.Unmarshal(b, &got); err != nil {
							t.Fatalf("journey: %v %s", err, clip(b))
						}
						c.diffJourney(t, app.label+" /journey?"+v.Encode(), got, want)
					}
				}
			}
		}
	}
	// Without bigraph the default is 1.
	for _, b := range c.liveStore(t, d.a, "/journey", nil, "live") {
		var got jGraph
		_ = json.Unmarshal(b, &got)
		c.diffJourney(t, "/journey", got, d.journey(d.a, d.defaultQ(), true, "", ""))
	}
	// App B has a session with more than 500 distinct moves: only the first 500 count.
	moves := 0
	for _, l := range d.journey(d.b, d.windows()[3].q, true, "", "").Links {
		moves += l.Value
	}
	if moves < 500 {
		t.Errorf("dataset: app B must make more than 500 moves, has %d", moves)
	}
	// Group journeys.
	for _, cs := range []struct {
		class, group string
		q            aq
		app          *gApp
	}{
		{"crash", d.pay, d.defaultQ(), d.a},
		{"crash", d.pay, d.windows()[1].q, d.a},
		{"crash", d.pay, with(d.defaultQ(), func(q *aq) { q.lists = listCases[0] }), d.a},
		{"crash", d.pay, with(d.defaultQ(), func(q *aq) { q.versions = []gVer{d.vA20} }), d.a},
		{"crash", d.npe, d.windows()[3].q, d.a},
		{"crash", d.npe, with(d.windows()[5].q, func(q *aq) { q.ud = &udCases[2] }), d.a},
		{"anr", d.feedANR, d.defaultQ(), d.a},
		{"anr", d.feedANR, with(d.defaultQ(), func(q *aq) { q.versions = []gVer{d.vA11} }), d.a},
		{"anr", d.dbANR, with(d.defaultQ(), func(q *aq) { q.lists = listCases[3] }), d.a},
		{"crash", d.hot, d.defaultQ(), d.b},
	} {
		p := "/crashGroups/" + cs.group + "/plots/journey"
		if cs.class == "anr" {
			p = "/anrGroups/" + cs.group + "/plots/journey"
		}
		for _, bigraph := range []bool{true, false} {
			v := cs.q.values()
			v.Set("bigraph", map[bool]string{true: "1", false: "0"}[bigraph])
			var got jGraph
			r := c.ok(t, cs.app, p, v, &got)
			other := `"anrs"`
			if cs.class == "anr" {
				other = `"crashes"`
			}
			if bytes.Contains(r.body, []byte(other)) {
				t.Errorf("%s: a %s journey lists only its kind: %s", p, cs.class, clip(r.body))
			}
			c.diffJourney(t, p+"?"+v.Encode(), got, d.journey(cs.app, cs.q, bigraph, cs.class, cs.group))
		}
	}
}

func (c *aClient) diffJourney(t *testing.T, what string, got, want jGraph) {
	t.Helper()
	if got.TotalIssues != want.TotalIssues {
		t.Errorf("%s: totalIssues %d, want %d", what, got.TotalIssues, want.TotalIssues)
	}
	if got.Links == nil || got.Nodes == nil {
		t.Errorf("%s: links and nodes must be arrays", what)
	}
	if !reflect.DeepEqual(got.Links, want.Links) && len(got.Links)+len(want.Links) > 0 {
		// Say which links differ, not only where the order first differs.
		m := map[[2]string][2]int{}
		for _, l := range got.Links {
			v := m[[2]string{l.Source, l.Target}]
			v[0] = l.Value
			m[[2]string{l.Source, l.Target}] = v
		}
		for _, l := range want.Links {
			v := m[[2]string{l.Source, l.Target}]
			v[1] = l.Value
			m[[2]string{l.Source, l.Target}] = v
		}
		var diffs []string
		for k, v := range m {
			if v[0] != v[1] {
				diffs = append(diffs, fmt.Sprintf("%s→%s: %d, want %d", k[0], k[1], v[0], v[1]))
			}
		}
		sort.Strings(diffs)
		if len(diffs) == 0 {
			diffs = []string{"same links, other order"}
		}
		t.Errorf("%s: links differ: %s", what, strings.Join(diffs, "; "))
	}
	diffList(t, what+" nodes", got.Nodes, want.Nodes)
}

func (c *aClient) testMetrics(t *testing.T) {
	d := c.d
	D := func(n int) int64 { return d.today - int64(n)*day }
	type size struct {
		avg, sel, delta int64
		nan             bool
	}
	v99 := gVer{"9.9", "1"}
	cases := []struct {
		name  string
		q     aq
		sel   *gVer
		sizes size
	}{
		{"default", d.defaultQ(), nil, size{2200, 0, 0, true}},
		{"2.0", with(d.defaultQ(), func(q *aq) { q.versions = []gVer{d.vA20} }), &d.vA20, size{1550, 3500, 1950, false}},
		{"first of 1.1 and 2.0", with(d.defaultQ(), func(q *aq) { q.versions = []gVer{d.vA11, d.vA20} }), &d.vA11, size{2300, 2000, -300, false}},
		{"1.0 on days 4-2", with(d.windows()[1].q, func(q *aq) { q.versions = []gVer{d.vA10} }), &d.vA10, size{2750, 1100, -1650, false}},
		{"1.1 unaligned", with(d.windows()[5].q, func(q *aq) { q.versions = []gVer{d.vA11} }), &d.vA11, size{2300, 2000, -300, false}},
		{"wide", d.windows()[3].q, nil, size{2200, 0, 0, true}},
		{"unknown version", with(d.defaultQ(), func(q *aq) { q.versions = []gVer{v99} }), &v99, size{2200, 0, 0, true}},
		{"no data", aq{window: true, from: D(40), to: D(35)}, nil, size{2200, 0, 0, true}},
		{"no data for 2.0", aq{window: true, from: D(40), to: D(35), versions: []gVer{d.vA20}}, &d.vA20, size{1550, 3500, 1950, false}},
	}
	for _, cs := range cases {
		want := d.metrics(d.a, cs.q.from, cs.q.to, cs.sel)
		want.Sizes.Average, want.Sizes.Selected, want.Sizes.Delta, want.Sizes.NaN = cs.sizes.avg, cs.sizes.sel, cs.sizes.delta, cs.sizes.nan
		var got metricsJSON
		r := c.ok(t, d.a, "/metrics", cs.q.values(), &got)
		var members map[string]map[string]any
		_ = json.Unmarshal(r.body, &members)
		for _, m := range []string{"adoption", "anr_free_sessions", "crash_free_sessions", "perceived_anr_free_sessions",
			"perceived_crash_free_sessions", "cold_launch", "warm_launch", "hot_launch", "sizes"} {
			if _, ok := members[m]["nan"]; !ok {
				t.Errorf("metrics %s: member %s missing or without nan: %s", cs.name, m, r.body)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("metrics %s (%s):\n got %s\nwant %s", cs.name, cs.q.values().Encode(), jsonOf(got), jsonOf(want))
		}
	}
	// Anchors: the default window's sessions are every session of app A with an event in the
	// last 7 days (the span's session and the old one are not).
	n := 0
	for _, s := range d.a.sessions {
		for _, e := range d.sessionEvents(s) {
			if e.ts >= D(6) {
				n++
				break
			}
		}
	}
	if m := d.metrics(d.a, D(6), D(-1), nil); m.Adoption.AllVersions != n || m.CrashFree.Value <= 0 || m.CrashFree.Value >= 100 ||
		m.ColdLaunch.NaN || m.WarmLaunch.NaN || m.HotLaunch.NaN {
		t.Errorf("dataset: default metrics %+v (want %d sessions, some crashed, launches of each kind)", m, n)
	}
}

func (c *aClient) testFilters(t *testing.T) {
	d := c.d
	for _, cs := range []struct {
		app   *gApp
		q     string
		class string
		keys  bool
	}{
		{d.a, "", "", false},
		{d.a, "ud_attr_keys=1", "", true},
		{d.a, "crash=1", "crash", false},
		{d.a, "anr=1", "anr", false},
		{d.a, "crash=1&ud_attr_keys=1", "crash", true},
		{d.a, "anr=1&ud_attr_keys=1", "anr", true},
		{d.b, "ud_attr_keys=1", "", true},
		// The reference dashboard's vocabulary: error = crashes and handled exceptions.
		{d.a, "type=error,anr&ud_attr_keys=1", "crash,anr,handled", true},
		{d.a, "type=error", "crash,handled", false},
		{d.a, "type=anr&span=1", "anr", false},
	} {
		q, _ := url.ParseQuery(cs.q)
		var got filtersBody
		c.ok(t, cs.app, "/filters", q, &got)
		want := d.filters(cs.app, cs.class, cs.keys)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s /filters?%s:\n got %s\nwant %s", cs.app.label, cs.q, jsonOf(got), jsonOf(want))
		}
	}
	var got filtersBody
	c.ok(t, d.a, "/filters", nil, &got)
	if want := []map[string]string{{"code": "200", "name": "2.0"}, {"code": "110", "name": "1.1"}, {"code": "100", "name": "1.0"}}; !reflect.DeepEqual(got.Versions, want) {
		t.Errorf("/filters versions %v, want newest first %v", got.Versions, want)
	}
	c.ok(t, d.a, "/filters", url.Values{"ud_attr_keys": {"1"}}, &got)
	if want := []map[string]string{{"key": "beta", "type": "bool"}, {"key": "level", "type": "int64"}, {"key": "level", "type": "string"},
		{"key": "plan", "type": "string"}, {"key": "score", "type": "float64"}, {"key": "tier", "type": "int64"}}; !reflect.DeepEqual(got.UDAttrs.KeyTypes, want) {
		t.Errorf("/filters ud key types %v, want %v", got.UDAttrs.KeyTypes, want)
	}
}

// testUDExpression: valid expressions are checked by the group lists, instances and plots;
// here the expressions that must be refused, and the depth limit.
func (c *aClient) testUDExpression(t *testing.T) {
	d := c.d
	nest := func(n int) string {
		s := cmpJSON("plan", "string", "eq", "pro")
		for i := 1; i < n; i++ {
			s = `{"and":[` + s + `]}`
		}
		return s
	}
	deep := udCase{"8 levels", nest(8), func(u map[string]gUD) bool { s, ok := udString(u, "plan"); return ok && s == "pro" }}
	c.groupList(t, d.a, "/crashGroups", []string{"crash"}, false, with(d.defaultQ(), func(q *aq) { q.ud = &deep }))
	for _, bad := range []string{
		nest(9),
		`{"and":[]}`,
		`{"or":{}}`,
		`{"cmp":{"key":"beta","type":"bool","op":"gt","value":"true"}}`,
		`{"cmp":{"key":"plan","type":"string","op":"lt","value":"pro"}}`,
		`{"cmp":{"key":"plan","type":"date","op":"eq","value":"pro"}}`,
		`{"cmp":{"key":"tier","type":"int64","op":"eq","value":"three"}}`,
		`{"cmp":{"key":"plan","type":"string","op":"eq","value":"pro"},"or":[]}`,
		`{"not":[]}`,
		`{"and":[` + cmpJSON("plan", "string", "eq", "pro"),
		`plan = pro`,
	} {
		for _, p := range []string{"/crashGroups", "/anrGroups", "/errorGroups", "/crashGroups/" + d.pay + "/crashes",
			"/crashGroups/plots/instances", "/crashGroups/" + d.pay + "/plots/journey"} {
			c.bad(t, d.a, p, url.Values{"ud_expression": {bad}}, "ud_expression")
		}
	}
}

// bad requires a 400 {error} answer whose text contains want.
func (c *aClient) bad(t *testing.T, app *gApp, p string, q url.Values, want string) {
	t.Helper()
	r := c.get(t, app, p, q, nil)
	var v map[string]any
	_ = json.Unmarshal(r.body, &v)
	msg, _ := v["error"].(string)
	if r.status != http.StatusBadRequest || msg == "" || len(v) != 1 || !strings.Contains(msg, want) {
		t.Errorf("GET %s: %d %s, want 400 {error} mentioning %q", c.url(app, p, q), r.status, r.body, want)
	}
}

func (c *aClient) testShortFilters(t *testing.T) {
	d := c.d
	filters := map[string]any{
		"versions": []string{"1.1", "2.0"}, "version_codes": "110,200",
		"device_names": []string{"Pixel 7", "SM-S911B"}, "ud_expression": udCases[2].expr,
	}
	body, _ := json.Marshal(map[string]any{"filters": filters})
	r := c.tn.do(t, http.MethodPost, c.url(d.a, "/shortFilters", nil), c.tokens[d.a], map[string]string{"Content-Type": "application/json"}, bytes.NewReader(body))
	var v struct {
		Code string `json:"filter_short_code"`
	}
	if err := json.Unmarshal(r.body, &v); r.status != http.StatusOK || err != nil || v.Code == "" {
		t.Fatalf("POST shortFilters: %d %s", r.status, r.body)
	}
	norm, _ := json.Marshal(filters) // sorted keys
	sum := md5.Sum(append([]byte(d.a.id.String()), norm...))
	if v.Code != hex.EncodeToString(sum[:]) {
		t.Errorf("filter_short_code %s, want the MD5 of the app id and the sorted filters %s", v.Code, hex.EncodeToString(sum[:]))
	}
	q := with(d.defaultQ(), func(q *aq) {
		q.versions, q.lists, q.ud = []gVer{d.vA11, d.vA20}, map[string][]string{"device_names": {"Pixel 7", "SM-S911B"}}, &udCases[2]
	})
	code := url.Values{"filter_short_code": {v.Code}, "limit": {"1000"}}
	for _, ep := range groupEndpoints {
		want := d.groups(d.a, q, ep.classes)
		for _, b := range c.liveStore(t, d.a, ep.path, code, "store") {
			checkGroups(t, ep.path+" with a short code", b, d.a, want, ep.errors)
		}
	}
	// A parameter in the query wins over the code's.
	q2 := with(q, func(q *aq) { q.lists = map[string][]string{"device_names": {"Redmi Note 12"}} })
	code2 := url.Values{"filter_short_code": {v.Code}, "limit": {"1000"}, "device_names": {"Redmi Note 12"}}
	for _, b := range c.liveStore(t, d.a, "/errorGroups", code2, "store") {
		checkGroups(t, "errorGroups with a short code and device_names", b, d.a, d.groups(d.a, q2, []string{"crash", "anr", "handled"}), true)
	}
	var plot []wantSeries
	c.ok(t, d.a, "/crashGroups/plots/instances", url.Values{"filter_short_code": {v.Code}}, &plot)
	diffList(t, "crash plot with a short code", plot, d.overview(d.a, q, "crash"))
	page := c.instancePage(t, d.a, "/crashGroups/"+d.npe+"/crashes", code)
	want := d.instances(d.a, q, []string{"crash"}, d.npe)
	if len(page.Results) != len(want) {
		t.Errorf("NPE crashes with a short code: %d, want %d", len(page.Results), len(want))
	} else {
		for i := range want {
			c.checkInstance(t, "NPE crashes with a short code", page.Results[i], want[i])
		}
	}
	// A value with a comma cannot be sent in a comma-separated query parameter ("iPhone15,2"
	// is a real device name), but a short filter holds lists as arrays.
	r = c.tn.do(t, http.MethodPost, c.url(d.a, "/shortFilters", nil), c.tokens[d.a], map[string]string{"Content-Type": "application/json"},
		strings.NewReader(`{"filters":{"device_names":["iPhone15,2"]}}`))
	if err := json.Unmarshal(r.body, &v); r.status != http.StatusOK || err != nil || v.Code == "" {
		t.Fatalf("POST shortFilters: %d %s", r.status, r.body)
	}
	q3 := with(d.defaultQ(), func(q *aq) { q.lists = map[string][]string{"device_names": {"iPhone15,2"}} })
	for _, b := range c.liveStore(t, d.a, "/errorGroups", url.Values{"filter_short_code": {v.Code}, "limit": {"1000"}}, "store") {
		checkGroups(t, "errorGroups of iPhone15,2", b, d.a, d.groups(d.a, q3, []string{"crash", "anr", "handled"}), true)
	}
	c.bad(t, d.a, "/crashGroups", url.Values{"filter_short_code": {strings.Repeat("ab", 16)}}, "filter_short_code")
	// A code is the app's own: app B does not know app A's.
	c.bad(t, d.b, "/crashGroups", url.Values{"filter_short_code": {v.Code}}, "filter_short_code")
}

func (c *aClient) testBadRequests(t *testing.T) {
	d := c.d
	g := "/crashGroups/" + d.pay
	lists := []string{"/crashGroups", "/anrGroups", "/errorGroups"}
	all := append(append([]string{}, lists...), g+"/crashes", "/anrGroups/"+d.feedANR+"/anrs", "/crashGroups/plots/instances",
		"/anrGroups/plots/instances", g+"/plots/instances", g+"/plots/journey", "/journey", "/metrics")
	for _, p := range all {
		c.bad(t, d.a, p, url.Values{"from": {"2024-05-01T00:00:00Z"}}, "from and to")
		c.bad(t, d.a, p, url.Values{"to": {"2024-05-01T00:00:00Z"}}, "from and to")
		c.bad(t, d.a, p, url.Values{"from": {"yesterday"}, "to": {"2024-05-01T00:00:00Z"}}, "from")
		c.bad(t, d.a, p, url.Values{"from": {"2024-05-02T00:00:00Z"}, "to": {"2024-05-01T00:00:00.123456789Z"}}, "before")
		c.bad(t, d.a, p, url.Values{"from": {"2024-05-01T00:00:00Z"}, "to": {"2024-05-01T00:00:00Z"}}, "before")
		c.bad(t, d.a, p, url.Values{"versions": {"1.0"}}, "version")
		c.bad(t, d.a, p, url.Values{"version_codes": {"100"}}, "version")
		c.bad(t, d.a, p, url.Values{"versions": {"1.0,1.1"}, "version_codes": {"100"}}, "version")
		c.bad(t, d.a, p, url.Values{"versions": {"1.0,,1.1"}, "version_codes": {"100,110,200"}}, "versions")
	}
	for _, p := range append(append([]string{}, lists...), g+"/crashes") {
		for _, l := range []string{"0", "1001", "-1001", "ten", "1.5"} {
			c.bad(t, d.a, p, url.Values{"limit": {l}}, "limit")
		}
		c.bad(t, d.a, p, url.Values{"limit": {"-5"}}, "key_id")
		c.bad(t, d.a, p, url.Values{"device_names": {"Pixel 7,"}}, "device_names")
		c.bad(t, d.a, p, url.Values{"plot_time_group": {"weeks"}}, "plot_time_group")
		c.bad(t, d.a, p, url.Values{"timezone": {"Mars/Olympus"}}, "timezone")
	}
	for _, p := range lists {
		c.bad(t, d.a, p, url.Values{"key_id": {strings.Repeat("0", 32)}, "limit": {"5"}}, "key_id")
	}
	c.bad(t, d.a, "/errorGroups", url.Values{"type": {"fatal"}}, "type")
	c.bad(t, d.a, "/errorGroups", url.Values{"type": {"crash,"}}, "type")
	c.bad(t, d.a, "/errorGroups", url.Values{"type": {"error,exception"}}, `type "exception"`)
	c.bad(t, d.a, "/errorGroups", url.Values{"type": {"error"}, "severity": {"fatal,crash"}}, `severity "crash"`)
	c.bad(t, d.a, "/errorGroups", url.Values{"type": {"error,anr"}, "custom": {"true"}}, "custom")
	c.bad(t, d.a, g+"/crashes", url.Values{"key_id": {uuid.NewString()}}, "key")
	c.bad(t, d.a, g+"/crashes", url.Values{"key_timestamp": {"2024-05-01T00:00:00Z"}}, "key")
	c.bad(t, d.a, g+"/crashes", url.Values{"key_id": {"nope"}, "key_timestamp": {"2024-05-01T00:00:00Z"}}, "key_id")
	c.bad(t, d.a, g+"/crashes", url.Values{"key_id": {uuid.NewString()}, "key_timestamp": {"May 1"}}, "key_timestamp")
	for _, p := range []string{"/crashGroups/NOT-A-GROUP/crashes", "/anrGroups/" + strings.ToUpper(d.feedANR) + "/anrs",
		"/crashGroups/abc/path", "/anrGroups/abc/plots/instances", "/crashGroups/abc/plots/journey"} {
		c.bad(t, d.a, p, nil, "group id")
	}
	for _, p := range []string{"/journey", g + "/plots/journey"} {
		c.bad(t, d.a, p, url.Values{"bigraph": {"2"}}, "bigraph")
	}
	c.bad(t, d.a, "/filters", url.Values{"crash": {"1"}, "anr": {"1"}}, "crash")
	c.bad(t, d.a, "/filters", url.Values{"crash": {"yes"}}, "crash")
	c.bad(t, d.a, "/filters", url.Values{"type": {"error,bugs"}}, "bugs")
	c.bad(t, d.a, "/filters", url.Values{"crash": {"1"}, "type": {"anr"}}, "type")
	c.bad(t, d.a, "/crashGroups/plots/instances", url.Values{"plot_time_group": {"weeks"}}, "plot_time_group")
	for _, p := range []string{"/crashGroups/plots/instances", "/anrGroups/plots/instances", g + "/plots/instances"} {
		for _, tz := range []string{"Mars/Olympus", "../etc/passwd", "/etc/localtime", "Local", strings.Repeat("Asia/", 30)} {
			c.bad(t, d.a, p, url.Values{"timezone": {tz}, "plot_time_group": {"hours"}}, "timezone")
		}
	}
}

// testPaging walks app B's long lists forward page by page to the end, then backward to the
// start: every item once, in order, meta right at both ends.
func (c *aClient) testPaging(t *testing.T) {
	d := c.d
	const limit = 7
	// Groups: live and store, and a store-only (filtered) list.
	for _, cs := range []struct {
		path string
		q    aq
	}{
		{"/crashGroups", d.defaultQ()},
		{"/errorGroups", with(d.defaultQ(), func(q *aq) { q.lists = map[string][]string{"network_types": {"wifi", "cellular"}} })},
	} {
		want := d.groups(d.b, cs.q, []string{"crash", "anr", "handled"})
		if cs.path == "/crashGroups" {
			want = d.groups(d.b, cs.q, []string{"crash"})
		}
		if len(want) < 60 {
			t.Fatalf("dataset: app B has %d groups, want at least 60", len(want))
		}
		by := d.answeredBy(d.b, cs.q)
		page := func(key string, n int) groupPage {
			v := cs.q.values()
			v.Set("limit", strconv.Itoa(n))
			if key != "" {
				v.Set("key_id", key)
			}
			bs := c.liveStore(t, d.b, cs.path, v, by)
			return decodeGroups(t, cs.path+"?"+v.Encode(), bs[0], cs.path == "/errorGroups")
		}
		var fwd []string
		p := page("", limit)
		for i := 0; ; i++ {
			if p.Meta.Previous != (i > 0) {
				t.Errorf("%s forward page %d: meta.previous %v", cs.path, i, p.Meta.Previous)
			}
			for _, g := range p.Results {
				fwd = append(fwd, g.ID)
			}
			if !p.Meta.Next || i > 100 {
				break
			}
			if len(p.Results) != limit {
				t.Errorf("%s forward page %d: %d items and meta.next", cs.path, i, len(p.Results))
			}
			p = page(p.Results[len(p.Results)-1].ID, limit)
		}
		wantIDs := make([]string, len(want))
		for i, g := range want {
			wantIDs[i] = g.id
		}
		diffList(t, cs.path+" forward", fwd, wantIDs)
		// Backward from the last page's first item.
		first := len(fwd) - len(p.Results)
		if first < 0 || first >= len(fwd) {
			t.Fatalf("%s: no last page", cs.path)
		}
		back := append([]string{}, fwd[first:]...)
		key := fwd[first]
		for i := 0; i < 100; i++ {
			p = page(key, -limit)
			if !p.Meta.Next || len(p.Results) == 0 {
				t.Errorf("%s backward page %d: meta %+v, %d items", cs.path, i, p.Meta, len(p.Results))
				break
			}
			ids := make([]string, len(p.Results))
			for j, g := range p.Results {
				ids[j] = g.ID
			}
			back = append(ids, back...)
			key = ids[0]
			if !p.Meta.Previous {
				break
			}
		}
		diffList(t, cs.path+" backward", back, wantIDs)
	}
	// Instances of the hot group (ties on time across sessions), and of a filtered query.
	for _, q := range []aq{d.defaultQ(), with(d.defaultQ(), func(q *aq) { q.versions = []gVer{d.vB91} })} {
		want := d.instances(d.b, q, []string{"crash"}, d.hot)
		if len(want) < 60 {
			t.Fatalf("dataset: hot has %d instances, want at least 60", len(want))
		}
		p := "/crashGroups/" + d.hot + "/crashes"
		get := func(key *instanceRes, n int) instancePage {
			v := q.values()
			if n != 0 {
				v.Set("limit", strconv.Itoa(n))
			}
			if key != nil {
				v.Set("key_id", key.ID.String())
				v.Set("key_timestamp", key.Timestamp)
			}
			return c.instancePage(t, d.b, p, v)
		}
		// Without limit a page has 10 instances.
		if pg := get(nil, 0); len(pg.Results) != 10 || !pg.Meta.Next || pg.Meta.Previous || pg.Results[9].ID != want[9].id {
			t.Errorf("instances default page: %d items, meta %+v", len(pg.Results), pg.Meta)
		}
		var fwd []instanceRes
		pg := get(nil, limit)
		for i := 0; ; i++ {
			if pg.Meta.Previous != (i > 0) {
				t.Errorf("instances forward page %d: meta.previous %v", i, pg.Meta.Previous)
			}
			fwd = append(fwd, pg.Results...)
			if !pg.Meta.Next || i > 100 {
				break
			}
			pg = get(&pg.Results[len(pg.Results)-1], limit)
		}
		ids := func(rs []instanceRes) []uuid.UUID {
			out := make([]uuid.UUID, len(rs))
			for i, r := range rs {
				out[i] = r.ID
			}
			return out
		}
		wantIDs := make([]uuid.UUID, len(want))
		for i, e := range want {
			wantIDs[i] = e.id
		}
		diffList(t, "instances forward", ids(fwd), wantIDs)
		first := len(fwd) - len(pg.Results)
		if first < 0 || first >= len(fwd) {
			t.Fatal("instances: no last page")
		}
		back := append([]instanceRes{}, fwd[first:]...)
		for i := 0; i < 100; i++ {
			pg = get(&back[0], -limit)
			if !pg.Meta.Next || len(pg.Results) == 0 {
				t.Errorf("instances backward page %d: meta %+v, %d items", i, pg.Meta, len(pg.Results))
				break
			}
			back = append(append([]instanceRes{}, pg.Results...), back...)
			if !pg.Meta.Previous {
				break
			}
		}
		diffList(t, "instances backward", ids(back), wantIDs)
	}
}

// snapshot is every group list and journey answer of both apps, live and from the store.
func (c *aClient) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, app := range []*gApp{c.d.a, c.d.b} {
		for _, w := range c.d.windows() {
			for _, p := range []string{"/crashGroups", "/anrGroups", "/errorGroups", "/journey"} {
				v := w.q.values()
				v.Set("limit", "1000")
				for _, hdr := range []map[string]string{nil, {dashboard.HeaderAnswerFrom: "store"}} {
					r := c.get(t, app, p, v, hdr)
					out[fmt.Sprintf("%s %s?%s %v", app.label, p, v.Encode(), hdr)] = string(r.body)
				}
			}
		}
	}
	return out
}

// checkAll compares the group lists and journeys of both apps over every window with the
// truth, live and from the store.
func (c *aClient) checkAll(t *testing.T) {
	t.Helper()
	for _, app := range []*gApp{c.d.a, c.d.b} {
		for _, w := range c.d.windows() {
			for _, ep := range groupEndpoints {
				c.groupList(t, app, ep.path, ep.classes, ep.errors, w.q)
			}
			want := c.d.journey(app, w.q, true, "", "")
			for _, b := range c.liveStore(t, app, "/journey", w.q.values(), c.d.answeredBy(app, w.q)) {
				var got jGraph
				_ = json.Unmarshal(b, &got)
				c.diffJourney(t, app.label+" journey "+w.name, got, want)
			}
		}
	}
}

// analyticsConfig lets the suite's thousands of dashboard requests through the per-user rate
// limit.
func analyticsConfig(c *Config) { c.RateLimitUser = 1 << 20 }

// restartNode stops tn and starts a node on the same data directory and stores; tweaks
// change the new node's config further.
func restartNode(t *testing.T, backend string, tn *testNode, between func(dataDir string), tweaks ...func(*Config)) *testNode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := tn.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	cfg := tn.cfg
	if between != nil {
		between(cfg.DataDir)
	}
	return startNode(t, backend, func(c *Config) {
		analyticsConfig(c)
		c.DataDir, c.ClickHouseDSN, c.PostgresDSN = cfg.DataDir, cfg.ClickHouseDSN, cfg.PostgresDSN
		for _, tw := range tweaks {
			tw(c)
		}
	})
}

// testRestart: a restart changes no answer (the actors rebuild from the store); a restart
// whose spool holds a batch the store already has and one it has not counts each once; a
// session continues after the restart from where it was.
//
// The nodes are started on t, the backend's test, so that they outlive each check's subtest.
func (c *aClient) testRestart(t *testing.T, backend string) {
	d := c.d
	// A clean restart: every answer stays as it was, live and from the store.
	before := c.snapshot(t)
	c.tn = restartNode(t, backend, c.tn, nil)
	c.login(t)
	c.settle(t)
	t.Run("RestartClean", func(t *testing.T) {
		after := c.snapshot(t)
		for k, v := range before {
			if after[k] != v {
				t.Errorf("after a restart %s changed:\nbefore %s\n after %s", k, clip([]byte(v)), clip([]byte(after[k])))
			}
		}
		c.checkAll(t)
	})

	// Spool replay: a record whose rows the store has (the restart session's last request,
	// flushed but not acknowledged when the node stopped) and one it has not (a new session).
	d.phase = 1
	nb := d.g.session(d.a, d.vA20, d.today-day+13*int64(time.Hour), devSamsung, netTMo, "de-DE", udPro)
	nb.phase = 1
	nb.start()
	nb.walk("com.shop.MainActivity", "Profile", "SettingsFragment")
	nb.jvm("exception", handled(false, true), npeUnits, nil, false)
	nb.walk("Profile")
	dup := d.lastChunk(d.restart.s)
	c.tn = restartNode(t, backend, c.tn, func(dataDir string) {
		sp, recs, err := spool.Open(filepath.Join(dataDir, "spool"), spool.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 0 {
			t.Errorf("the spool holds %d records after a clean shutdown", len(recs))
		}
		for _, evs := range [][]*gEvent{dup, nb.s.events} {
			if err := sp.Append(&spool.Record{AppID: d.a.id, RequestID: uuid.New(), Kind: recordJSON, Body: batchBody(evs, nil)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := sp.Close(); err != nil {
			t.Fatal(err)
		}
	})
	c.login(t)
	c.settle(t)
	t.Run("RestartSpoolReplay", c.checkAll)

	// The restart session goes on: back to ListFragment (a move it has not made), to
	// DetailFragment again (a move it made before the restart: not counted again), and a
	// crash there.
	d.phase = 2
	r := d.restart
	r.phase = 2
	r.wait(time.Minute)
	r.walk("ListFragment", "DetailFragment")
	r.jvm("exception", handled(false, true), npeUnits, nil, false)
	var cont []*gEvent
	for _, e := range r.s.events {
		if e.phase == 2 {
			cont = append(cont, e)
		}
	}
	c.send(t, d.a, cont, nil)
	c.settle(t)
	t.Run("RestartSessionContinues", c.checkAll)
}

// TestAnalytics runs the whole analytics suite on each event store.
func TestAnalytics(t *testing.T) {
	for _, be := range analyticsBackends {
		t.Run(be.name, func(t *testing.T) {
			began := time.Now()
			tn := startNode(t, be.harness, analyticsConfig)
			d := buildDataset(time.Now())
			c := d.load(t, tn)
			t.Logf("loaded %d+%d events in %v", len(d.events(d.a)), len(d.events(d.b)), time.Since(began))
			t.Run("GroupLists", c.testGroupLists)
			t.Run("ErrorGroups", c.testErrorGroups)
			t.Run("Instances", c.testInstances)
			t.Run("Plots", c.testPlots)
			t.Run("Paths", c.testPaths)
			t.Run("Journeys", c.testJourneys)
			t.Run("Metrics", c.testMetrics)
			t.Run("Filters", c.testFilters)
			t.Run("UDExpression", c.testUDExpression)
			t.Run("ShortFilters", c.testShortFilters)
			t.Run("BadRequests", c.testBadRequests)
			t.Run("Paging", c.testPaging)
			c.testRestart(t, be.harness)
			t.Logf("%s: %v", be.name, time.Since(began))
		})
	}
}

// TestAnalyticsFixtures: on the recorded SDK corpus, every group list and journey over
// midnight-aligned windows is answered live, and exactly as the store answers it.
func TestAnalyticsFixtures(t *testing.T) {
	for _, be := range analyticsBackends {
		t.Run(be.name, func(t *testing.T) {
			tn := startNode(t, be.harness, analyticsConfig)
			app := &gApp{label: "fixtures", id: tn.app.ID, key: tn.key, email: tn.email}
			c := &aClient{tn: tn, d: &dataset{}, tokens: map[*gApp]string{app: tn.accessToken(t, tn.email)}}
			lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
			days := map[int64]bool{}
			versions := map[gVer]bool{}
			issues := 0
			for _, path := range fixtures(t) {
				body := readFile(t, path)
				if r := tn.putJSON(t, tn.key, uuid.NewString(), body); r.status != http.StatusOK {
					t.Fatalf("%s: %d %s", filepath.Base(path), r.status, r.body)
				}
				b, err := model.DecodeBatch(body, tn.app.ID, false)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range b.Events {
					lo, hi = min(lo, e.Timestamp), max(hi, e.Timestamp)
					days[e.Timestamp-mod(e.Timestamp, day)] = true
					versions[gVer{e.Attribute.AppVersion, e.Attribute.AppBuild}] = true
					if e.Type == "exception" || e.Type == "anr" {
						issues++
					}
				}
			}
			if issues == 0 {
				t.Fatal("the fixtures hold no exception or anr")
			}
			c.settleApps(t, app)
			windows := []aq{{window: true, from: lo - mod(lo, day), to: hi - mod(hi, day) + day}}
			for d := range days {
				windows = append(windows, aq{window: true, from: d, to: d + day})
			}
			var vs [][]gVer
			vs = append(vs, nil)
			for v := range versions {
				vs = append(vs, []gVer{v})
			}
			nonEmpty := false
			for _, w := range windows {
				for _, v := range vs {
					q := with(w, func(q *aq) { q.versions, q.limit = v, 1000 })
					for _, p := range []string{"/crashGroups", "/anrGroups", "/errorGroups"} {
						bs := c.liveStore(t, app, p, q.values(), "live")
						nonEmpty = nonEmpty || bytes.Contains(bs[0], []byte(`"count"`))
					}
					for _, bg := range []string{"1", "0"} {
						jv := with(w, func(q *aq) { q.versions = v }).values()
						jv.Set("bigraph", bg)
						if bs := c.liveStore(t, app, "/journey", jv, "live"); len(bs) == 2 {
							var live, store jGraph
							_ = json.Unmarshal(bs[0], &live)
							_ = json.Unmarshal(bs[1], &store)
							c.diffJourney(t, "live journey vs store journey ?"+jv.Encode(), live, store)
						}
					}
				}
			}
			if !nonEmpty {
				t.Error("no group list of the fixtures had a group")
			}
		})
	}
}

// TestAnalyticsOutOfOrderBatches: SDKs retry a refused batch later, so a session's batches
// can arrive out of time order. Journeys follow a session's screens in event-time order
// (README), live as from the store.
func TestAnalyticsOutOfOrderBatches(t *testing.T) {
	for _, be := range analyticsBackends {
		t.Run(be.name, func(t *testing.T) {
			tn := startNode(t, be.harness, analyticsConfig)
			now := time.Now()
			today := now.UTC().Truncate(24 * time.Hour).UnixNano()
			g := &gen{rng: rand.New(rand.NewPCG(7, 7)), today: today}
			app := &gApp{label: "ooo", uniqueID: "com.ooo", id: tn.app.ID, key: tn.key, email: tn.email}
			d := &dataset{g: g, today: today, a: app, b: &gApp{}}
			b := g.session(app, gVer{"3.0", "300"}, g.dayAt(2, 10, 0), devPixel, netWifi, "en-US", udFree)
			b.start()
			b.screenView("A")
			b.screenView("B")
			b.screenView("C")
			b.jvm("exception", handled(false, true), npeUnits, nil, false)
			b.screenView("D")
			ev := b.s.events // start, A, B, C, crash, D
			c := &aClient{tn: tn, d: d, tokens: map[*gApp]string{app: tn.accessToken(t, tn.email)}}
			c.send(t, app, []*gEvent{ev[0], ev[1], ev[3]}, nil) // start, A, C
			c.send(t, app, []*gEvent{ev[2], ev[4], ev[5]}, nil) // B, crash, D: retried later
			c.settleApps(t, app)
			q := aq{from: today - 6*day, to: today + day}
			want := d.journey(app, q, true, "", "")
			if len(want.Links) != 3 {
				t.Fatalf("truth: %+v", want)
			}
			for _, body := range c.liveStore(t, app, "/journey", nil, "live") {
				var got jGraph
				_ = json.Unmarshal(body, &got)
				c.diffJourney(t, "journey of out-of-order batches", got, want)
			}
			c.groupList(t, app, "/crashGroups", []string{"crash"}, false, q)
		})
	}
}

// TestAnalyticsDataset checks that the generated dataset has the situations the suite relies
// on, so that no assertion of TestAnalytics passes for want of data.
func TestAnalyticsDataset(t *testing.T) {
	d := buildDataset(time.Now())
	all := []string{"crash", "anr", "handled"}
	dq := d.defaultQ()
	sessions := func(q aq) int {
		n := 0
		for _, s := range d.a.sessions {
			for _, e := range s.events {
				if q.match(e) {
					n++
					break
				}
			}
		}
		return n
	}
	total := sessions(dq)
	for _, u := range udCases {
		if n := sessions(with(dq, func(q *aq) { q.ud = &u })); n == 0 || n == total {
			t.Errorf("ud case %q selects %d of %d sessions: it must select some, not all", u.name, n, total)
		}
	}
	for _, l := range listCases {
		n := sessions(with(dq, func(q *aq) { q.lists = l }))
		if _, countries := l["countries"]; countries != (n == 0) || n == total {
			t.Errorf("list case %v selects %d of %d sessions", l, n, total)
		}
	}
	// "and" means and: the reference's "or" reading would answer differently.
	and := d.groups(d.a, with(dq, func(q *aq) { q.ud = &udCases[1] }), all)
	orCase := udCase{"or reading", "", func(u map[string]gUD) bool { return udCases[0].match(u) || udCases[6].match(u) }}
	if reflect.DeepEqual(and, d.groups(d.a, with(dq, func(q *aq) { q.ud = &orCase }), all)) || len(and) == 0 {
		t.Error("the and case must differ from its or reading")
	}
	// The windows cut inside a day of data have groups and moves in the part the store answers
	// at their start, beside the app actor's whole days ("live+store") or alone ("store").
	for _, w := range d.windows() {
		want := map[string]string{"unaligned": "live+store", "unaligned from": "live+store", "inside a day": "store"}[w.name]
		if want == "" {
			continue
		}
		if by := d.answeredBy(d.a, w.q); by != want {
			t.Errorf("window %q is answered by %s, want %s", w.name, by, want)
		}
		start := with(w.q, func(q *aq) { q.to = min(q.to, q.from-mod(q.from, day)+day) })
		if len(d.groups(d.a, start, all)) == 0 || len(d.journey(d.a, start, true, "", "").Links) == 0 {
			t.Errorf("window %q: no group or no move in [%d, %d), the part the store answers", w.name, start.from, start.to)
		}
	}
	// Journeys: bigraph 0 drops links; some issue happens on no screen; the midnight session
	// counts moves on two days; app B's long session hits the 500-move cap.
	j1, j0 := d.journey(d.a, dq, true, "", ""), d.journey(d.a, dq, false, "", "")
	if len(j0.Links) >= len(j1.Links) {
		t.Error("bigraph=0 must drop links")
	}
	onNodes := 0
	for _, n := range j1.Nodes {
		onNodes += len(*n.Issues.Crashes) + len(*n.Issues.ANRs)
		for _, is := range append(*n.Issues.Crashes, *n.Issues.ANRs...) {
			onNodes += is.Count - 1
		}
	}
	if onNodes >= j1.TotalIssues {
		t.Errorf("some issue must happen before any screen: %d on nodes of %d", onNodes, j1.TotalIssues)
	}
	day2 := d.journey(d.a, d.windows()[2].q, true, "", "")
	day3 := d.journey(d.a, aq{from: d.today - 3*day, to: d.today - 2*day}, true, "", "")
	if len(day2.Links) == 0 || len(day3.Links) == 0 {
		t.Error("moves on days 2 and 3 needed")
	}
	distinct := map[[2]string]bool{}
	var prev string
	for _, e := range d.b.sessions[len(d.b.sessions)-1].events {
		if e.screen != "" {
			if prev != "" && prev != e.screen {
				distinct[[2]string{prev, e.screen}] = true
			}
			prev = e.screen
		}
	}
	if len(distinct) <= 500 {
		t.Errorf("app B's long session makes %d distinct moves, want more than 500", len(distinct))
	}
	// Paging: ties of count and latest time among groups, ties of time among instances.
	gs := d.groups(d.b, dq, []string{"crash"})
	ties := 0
	for i := 1; i < len(gs); i++ {
		if gs[i].count == gs[i-1].count && gs[i].last.ts == gs[i-1].last.ts {
			ties++
		}
	}
	ins := d.instances(d.b, dq, []string{"crash"}, d.hot)
	iTies := 0
	for i := 1; i < len(ins); i++ {
		if ins[i].ts == ins[i-1].ts {
			iTies++
		}
	}
	if len(gs) < 60 || ties < 3 || len(ins) < 60 || iTies < 10 {
		t.Errorf("paging: %d groups with %d ties, %d instances with %d ties", len(gs), ties, len(ins), iTies)
	}
	// Launches: counted and not counted ones of every kind.
	kinds := map[string][2]int{}
	for _, e := range d.events(d.a) {
		if strings.HasSuffix(e.typ, "_launch") {
			k := kinds[e.typ]
			if e.launch != "" {
				k[0]++
			} else {
				k[1]++
			}
			kinds[e.typ] = k
		}
	}
	for _, k := range []string{"cold_launch", "warm_launch", "hot_launch"} {
		if kinds[k][0] == 0 || kinds[k][1] == 0 {
			t.Errorf("%s: %d counted, %d not counted; want both", k, kinds[k][0], kinds[k][1])
		}
	}
	// Every framework, class and severity kind.
	seen := map[string]bool{}
	for _, e := range d.events(d.a) {
		if e.class != "" {
			fw, _ := e.member.(map[string]any)["framework"].(string)
			seen[e.typ+"/"+fw+"/"+e.class+"/"+e.severity] = true
		}
	}
	for _, k := range []string{"exception//crash/fatal", "exception//handled/handled", "anr//anr/", "exception/dart/crash/fatal",
		"exception/dart/handled/handled", "exception/apple/crash/fatal", "exception/apple/handled/unhandled",
		"exception/js/crash/fatal", "exception/js/handled/handled"} {
		if !seen[k] {
			t.Errorf("no %s issue in the dataset (have %v)", k, keysOf(seen))
		}
	}
}
