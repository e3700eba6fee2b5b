package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
)

// The tests of this file hold the public listener to its OpenAPI document
// (http/apidoc/openapi.json, served at /openapi.json): the router and the document list the
// same routes, and what the node answers to each documented operation is a documented status
// with a body of the documented shape.

type jobj = map[string]any

// openAPIOf fetches the node's document without credentials.
func openAPIOf(t *testing.T, tn *testNode) jobj {
	t.Helper()
	r := tn.do(t, http.MethodGet, "/openapi.json", "", nil, nil)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json without credentials: %d %q %s", r.status, r.header.Get("Content-Type"), clip(r.body))
	}
	var d jobj
	if err := json.Unmarshal(r.body, &d); err != nil {
		t.Fatalf("/openapi.json is not JSON: %v", err)
	}
	return d
}

// docRef resolves $ref chains of the document.
func docRef(t *testing.T, d jobj, v any) jobj {
	t.Helper()
	for range 10 {
		m, _ := v.(jobj)
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		v = d
		for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			next, ok := v.(jobj)[tok]
			if !ok {
				t.Fatalf("$ref %s does not resolve", ref)
			}
			v = next
		}
	}
	t.Fatal("$ref chain too long")
	return nil
}

// docOp is one documented operation.
type docOp struct {
	method, path string // path as documented, {name} templates
	route        string // the chi pattern it stands for
	op           jobj
	params       []jobj
	onlyWhen     string // x-svc-only-when: a setting without which the route does not exist
}

var docMethods = []string{"get", "head", "put", "post", "patch", "delete", "options", "trace"}

func docOps(t *testing.T, d jobj) []docOp {
	t.Helper()
	var out []docOp
	for p, iv := range d["paths"].(jobj) {
		item := iv.(jobj)
		for _, m := range docMethods {
			ov, ok := item[m]
			if !ok {
				continue
			}
			o := ov.(jobj)
			op := docOp{method: strings.ToUpper(m), path: p, route: p, op: o}
			op.onlyWhen, _ = o["x-svc-only-when"].(string)
			for _, pv := range append(anyList(item["parameters"]), anyList(o["parameters"])...) {
				prm := docRef(t, d, pv)
				op.params = append(op.params, prm)
				// A parameter marked x-svc-wildcard is chi's trailing *: the rest of the path.
				if prm["in"] == "path" && prm["x-svc-wildcard"] == true {
					tmpl := "{" + prm["name"].(string) + "}"
					if !strings.HasSuffix(p, "/"+tmpl) {
						t.Errorf("%s %s: wildcard parameter %s must be the last segment", op.method, p, tmpl)
					}
					op.route = strings.TrimSuffix(p, tmpl) + "*"
				}
			}
			out = append(out, op)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].path != out[j].path {
			return out[i].path < out[j].path
		}
		return out[i].method < out[j].method
	})
	return out
}

func anyList(v any) []any { l, _ := v.([]any); return l }

// chiAllMethods are the methods chi registers for Handle/HandleFunc (a mount for any method).
var chiAllMethods = []string{"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"}

// routesOf walks the node's public router: route pattern → methods.
func routesOf(t *testing.T, tn *testNode) map[string]map[string]bool {
	t.Helper()
	routes, ok := tn.public.Handler.(chi.Routes)
	if !ok {
		t.Fatalf("the public handler is a %T, not a chi router", tn.public.Handler)
	}
	out := map[string]map[string]bool{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if out[route] == nil {
			out[route] = map[string]bool{}
		}
		out[route][method] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// reporter is what compareRoutes needs of a *testing.T, so its own test can count reports.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

type errCount int

func (e *errCount) Helper()               {}
func (e *errCount) Errorf(string, ...any) { *e++ }

// compareRoutes reports routes without documentation and documented operations without a
// route. A route chi serves for every method (Handle) needs at least one documented method;
// the document describes what the handler answers to the others.
func compareRoutes(t reporter, routed map[string]map[string]bool, ops []docOp, skip func(docOp) bool) {
	t.Helper()
	documented := map[string]map[string]bool{}
	for _, o := range ops {
		if skip(o) {
			continue
		}
		if documented[o.route] == nil {
			documented[o.route] = map[string]bool{}
		}
		documented[o.route][o.method] = true
		if !routed[o.route][o.method] {
			t.Errorf("documented %s %s (route %s) is not routed", o.method, o.path, o.route)
		}
	}
	for route, ms := range routed {
		anyMethod := true
		for _, m := range chiAllMethods {
			anyMethod = anyMethod && ms[m]
		}
		if anyMethod {
			if len(documented[route]) == 0 {
				t.Errorf("route %s (any method) is not documented", route)
			}
			continue
		}
		for m := range ms {
			if !documented[route][m] {
				t.Errorf("route %s %s is not documented in /openapi.json", m, route)
			}
		}
	}
}

// TestOpenAPIDocumentsEveryRoute walks the public router with chi.Walk and the document both
// ways: on a node with every optional route (--metrics-public, local blobs) they match exactly,
// and on a default node only the operations marked x-svc-only-when are missing.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	full := startNode(t, "embedded", func(c *Config) { c.MetricsPublic = true })
	ops := docOps(t, openAPIOf(t, full))
	if len(ops) < 50 {
		t.Fatalf("the document has %d operations; expected the whole API", len(ops))
	}
	routed := routesOf(t, full)
	if !routed["/blobs/*"]["PUT"] || !routed["/metrics"]["GET"] || !routed["/apps/{appID}/crashGroups"]["GET"] {
		t.Fatalf("the walk lacks routes this test relies on: %v", routed)
	}
	compareRoutes(t, routed, ops, func(docOp) bool { return false })

	plain := startNode(t, "embedded", nil)
	conditional := 0
	compareRoutes(t, routesOf(t, plain), ops, func(o docOp) bool {
		if o.onlyWhen != "" {
			conditional++
			return true
		}
		return false
	})
	if conditional == 0 {
		t.Error("no operation is marked x-svc-only-when (GET /metrics needs --metrics-public)")
	}

	// The comparison reports both directions: here a route the document lacks (GET /nowhere)
	// and a documented operation without a route (ops[0]).
	var n errCount
	compareRoutes(&n, map[string]map[string]bool{"/nowhere": {"GET": true}}, ops[:1], func(docOp) bool { return false })
	if n != 2 {
		t.Errorf("compareRoutes reported %d problems, want 2", n)
	}
}

// ---- answers against the document

// schemaCheck validates JSON values against the document's schemas (the JSON Schema subset it
// uses). Objects with `properties` are closed unless the schema says additionalProperties: a
// member a handler writes must be named in the document.
type schemaCheck struct {
	t   *testing.T
	doc jobj
}

func jsonType(x any) string {
	switch v := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case jobj:
		return "object"
	}
	return fmt.Sprintf("%T", x)
}

func (c *schemaCheck) typeOK(want any, x any) bool {
	got := jsonType(x)
	var names []any
	switch w := want.(type) {
	case string:
		names = []any{w}
	case []any:
		names = w
	default:
		return true
	}
	for _, n := range names {
		if n == got || n == "number" && got == "integer" {
			return true
		}
	}
	return false
}

// problems lists where x breaks schema s; at names x.
func (c *schemaCheck) problems(s any, x any, at string) []string {
	m := docRef(c.t, c.doc, s)
	var out []string
	bad := func(f string, a ...any) { out = append(out, at+": "+fmt.Sprintf(f, a...)) }
	for _, sub := range anyList(m["allOf"]) {
		out = append(out, c.problems(sub, x, at)...)
	}
	if one := anyList(m["oneOf"]); len(one) > 0 {
		n := 0
		var why []string
		for _, sub := range one {
			p := c.problems(sub, x, at)
			if len(p) == 0 {
				n++
			}
			why = append(why, p...)
		}
		if n != 1 {
			bad("matches %d of %d oneOf schemas: %v", n, len(one), why)
		}
	}
	if not, ok := m["not"]; ok && len(c.problems(not, x, at)) == 0 {
		bad("matches a `not` schema")
	}
	if t, ok := m["type"]; ok && !c.typeOK(t, x) {
		bad("is %s %v, want type %v", jsonType(x), clipAny(x), t)
		return out
	}
	if cv, ok := m["const"]; ok && !reflect.DeepEqual(cv, x) {
		bad("is %v, want %v", clipAny(x), cv)
	}
	if ev, ok := m["enum"]; ok && !slices.ContainsFunc(anyList(ev), func(e any) bool { return reflect.DeepEqual(e, x) }) {
		bad("%v is not one of %v", clipAny(x), ev)
	}
	switch v := x.(type) {
	case jobj:
		props, hasProps := m["properties"].(jobj)
		for _, r := range anyList(m["required"]) {
			if _, ok := v[r.(string)]; !ok {
				bad("lacks required member %s", r)
			}
		}
		for k, mv := range v {
			if ps, ok := props[k]; ok {
				out = append(out, c.problems(ps, mv, at+"."+k)...)
				continue
			}
			switch ap := m["additionalProperties"].(type) {
			case bool:
				if !ap {
					bad("has member %q the schema does not name", k)
				}
			case jobj:
				out = append(out, c.problems(ap, mv, at+"."+k)...)
			case nil:
				if hasProps {
					bad("has member %q the document does not name", k)
				}
			}
		}
	case []any:
		if n, ok := m["minItems"].(float64); ok && float64(len(v)) < n {
			bad("has %d items, fewer than %v", len(v), n)
		}
		if n, ok := m["maxItems"].(float64); ok && float64(len(v)) > n {
			bad("has %d items, more than %v", len(v), n)
		}
		if it, ok := m["items"]; ok {
			for i, e := range v {
				out = append(out, c.problems(it, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	case string:
		if p, ok := m["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			bad("%q does not match %s", v, p)
		}
		if n, ok := m["minLength"].(float64); ok && float64(utf8.RuneCountInString(v)) < n {
			bad("%q is shorter than %v", v, n)
		}
		switch m["format"] {
		case "date-time":
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
				bad("%q is not a date-time", v)
			}
		case "uuid":
			if _, err := uuid.Parse(v); err != nil || len(v) != 36 {
				bad("%q is not a UUID", v)
			}
		case "uri":
			if u, err := url.Parse(v); err != nil || !u.IsAbs() {
				bad("%q is not an absolute URI", v)
			}
		case "email":
			if !strings.Contains(v, "@") {
				bad("%q is not an email address", v)
			}
		}
	case float64:
		if n, ok := m["minimum"].(float64); ok && v < n {
			bad("%v is below %v", v, n)
		}
		if n, ok := m["maximum"].(float64); ok && v > n {
			bad("%v is above %v", v, n)
		}
	}
	return out
}

func clipAny(x any) string {
	b, _ := json.Marshal(x)
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// TestOpenAPISchemaCheckFindsMismatches: the checker above refuses what it must, so the
// conformance test cannot pass by accepting everything.
func TestOpenAPISchemaCheckFindsMismatches(t *testing.T) {
	tn := startNode(t, "embedded", nil)
	c := &schemaCheck{t: t, doc: openAPIOf(t, tn)}
	team := jobj{"id": uuid.NewString(), "name": "a", "created_at": "2025-01-01T00:00:00Z", "updated_at": "2025-01-01T00:00:00Z", "role": "owner"}
	ref := jobj{"$ref": "#/components/schemas/Team"}
	if p := c.problems(ref, team, "team"); len(p) != 0 {
		t.Fatalf("a valid team refused: %v", p)
	}
	for name, change := range map[string]func(m jobj){
		"unknown member": func(m jobj) { m["colour"] = "red" },
		"missing member": func(m jobj) { delete(m, "name") },
		"bad enum":       func(m jobj) { m["role"] = "king" },
		"bad type":       func(m jobj) { m["name"] = 3.0 },
		"bad uuid":       func(m jobj) { m["id"] = "nope" },
		"bad date-time":  func(m jobj) { m["created_at"] = "yesterday" },
	} {
		m := jobj{}
		for k, v := range team {
			m[k] = v
		}
		change(m)
		if p := c.problems(ref, m, "team"); len(p) == 0 {
			t.Errorf("%s: accepted %v", name, m)
		}
	}
	if p := c.problems(jobj{"$ref": "#/components/schemas/BuildAccepted"}, jobj{"ok": "uploaded build info", "mappings": []any{}}, "b"); len(p) == 0 {
		t.Error("oneOf accepted a body of both shapes")
	}
}

// conformance sends documented operations to a node and checks each answer against the
// document: a documented status, the documented media type, a body of the documented schema
// (no body where none is documented), the documented required headers.
type conformance struct {
	*schemaCheck
	tn   *testNode
	vals map[string]string // path parameter values by name
	seen map[string][]int  // operationId → statuses answered
}

// credentials maps a security scheme to the header or cookie value to send.
type credentials map[string]string

// queryVals are the values of required query parameters that "1" does not satisfy.
var queryVals = map[string]string{"entity": "builds", "key_name": "mapping_type"}

func (c *conformance) send(o docOp, creds credentials, vals map[string]string) (int, []byte) {
	t := c.t
	t.Helper()
	path := o.path
	for _, m := range regexp.MustCompile(`\{([^{}]+)\}`).FindAllStringSubmatch(o.path, -1) {
		v, ok := vals[m[1]]
		if !ok {
			v = uuid.NewString()
		}
		path = strings.Replace(path, m[0], v, 1)
	}
	q := url.Values{}
	hdr := http.Header{}
	for _, p := range o.params {
		name, _ := p["name"].(string)
		switch {
		case p["in"] == "header" && strings.EqualFold(name, "svc-req-id"):
			hdr.Set(name, uuid.NewString())
		case p["required"] != true || p["in"] == "path":
		case p["in"] == "query":
			v, ok := queryVals[name]
			if !ok {
				v = "1"
			}
			q.Set(name, v)
		case p["in"] == "header":
			hdr.Set(name, "x")
		}
	}
	var body io.Reader
	if rb, ok := o.op["requestBody"]; ok {
		cont := docRef(t, c.doc, rb)["content"].(jobj)
		if mt, ok := cont["application/json"].(jobj); ok {
			if ex, ok := mt["example"]; ok {
				b, _ := json.Marshal(ex)
				body = bytes.NewReader(b)
				hdr.Set("Content-Type", "application/json")
			}
		} else if _, ok := cont["application/octet-stream"]; ok {
			body = strings.NewReader("hello")
			hdr.Set("Content-Type", "application/octet-stream")
		}
	}
	for _, req := range anyList(o.op["security"]) {
		for scheme := range req.(jobj) {
			v, ok := creds[scheme]
			if !ok {
				continue
			}
			if strings.HasSuffix(scheme, "Cookie") {
				continue // the bearer form of the same token is sent
			}
			hdr.Set("Authorization", "Bearer "+v)
		}
	}
	u := c.tn.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(o.method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr
	return c.check(o, req)
}

// check sends req, an instance of o, and checks the answer against the document.
func (c *conformance) check(o docOp, req *http.Request) (int, []byte) {
	t := c.t
	t.Helper()
	resp, err := c.tn.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	id := o.op["operationId"].(string)
	c.seen[id] = append(c.seen[id], resp.StatusCode)
	where := fmt.Sprintf("%s %s (%s) → %d", req.Method, req.URL.Path, id, resp.StatusCode)
	c.check1(o, where, resp, b)
	return resp.StatusCode, b
}

func (c *conformance) check1(o docOp, where string, resp *http.Response, b []byte) {
	t := c.t
	t.Helper()
	rv, ok := o.op["responses"].(jobj)[fmt.Sprint(resp.StatusCode)]
	if !ok {
		t.Errorf("%s: status not documented; body %s", where, clip(b))
		return
	}
	r := docRef(t, c.doc, rv)
	for name, hv := range jobjOf(r["headers"]) {
		if docRef(t, c.doc, hv)["required"] == true && resp.Header.Get(name) == "" {
			t.Errorf("%s: lacks documented header %s", where, name)
		}
	}
	cont := jobjOf(r["content"])
	if len(cont) == 0 {
		if len(b) != 0 {
			t.Errorf("%s: body %s where the document has none", where, clip(b))
		}
		return
	}
	if o.method == http.MethodHead {
		return
	}
	mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	media, ok := cont[strings.TrimSpace(mt)].(jobj)
	if !ok {
		t.Errorf("%s: Content-Type %q, documented %v", where, resp.Header.Get("Content-Type"), keysOf(cont))
		return
	}
	if mt == "application/json" {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("%s: body is not JSON: %s", where, clip(b))
			return
		}
		for _, p := range c.problems(media["schema"], v, "body") {
			t.Errorf("%s: %s", where, p)
		}
	}
}

func jobjOf(v any) jobj { m, _ := v.(jobj); return m }

// conformanceBatch is a session with two screens, a crash with a screenshot and a span, a
// minute old, so the analytics endpoints have something to answer with.
func conformanceBatch() []byte {
	session, install := uuid.NewString(), uuid.NewString()
	at := time.Now().Add(-time.Minute).UTC()
	ts := func(d time.Duration) string { return at.Add(d).Format(time.RFC3339Nano) }
	attr := fmt.Sprintf(`{"installation_id":%q,"app_version":"1.0","app_build":"1","app_unique_id":"com.example.app","platform":"android",`+
		`"measure_sdk_version":"0.11.0","thread_name":"main","network_type":"wifi","network_provider":"unknown","network_generation":"unknown",`+
		`"device_cpu_arch":"arm64","os_name":"android","os_version":"34","device_manufacturer":"Google","device_name":"sunfish","device_locale":"en-US"}`, install)
	ev := func(d time.Duration, typ, member string, extra string) string {
		return fmt.Sprintf(`{"id":%q,"session_id":%q,"timestamp":%q,"type":%q,%q:%s,"attribute":%s%s}`, uuid.NewString(), session, ts(d), typ, typ, member, attr, extra)
	}
	events := []string{
		ev(0, "session_start", "{}", ""),
		ev(time.Second, "screen_view", `{"name":"Home"}`, ""),
		ev(2*time.Second, "screen_view", `{"name":"Cart"}`, ""),
		ev(3*time.Second, "exception", `{"handled":false,"foreground":true,"exceptions":[{"type":"java.lang.IllegalStateException","message":"conformance","frames":[{"class_name":"com.example.Cart","method_name":"pay","file_name":"Cart.kt","line_num":42}]}],"threads":[{"name":"worker","frames":[{"class_name":"java.lang.Thread","method_name":"run","file_name":"Thread.java","line_num":1}]}]}`,
			fmt.Sprintf(`,"attachments":[{"id":%q,"name":"screen.png","type":"screenshot"}]`, uuid.NewString())),
		ev(4*time.Second, "bug_report", `{"description":"conformance"}`, ""),
	}
	span := fmt.Sprintf(`{"name":"checkout","trace_id":"%032x","span_id":"%016x","parent_id":null,"session_id":%q,"status":1,"start_time":%q,"end_time":%q,"duration":500,"attributes":%s}`,
		7, 9, session, ts(time.Second), ts(1500*time.Millisecond), attr)
	return []byte(`{"events":[` + strings.Join(events, ",") + `],"spans":[` + span + `]}`)
}

// TestOpenAPIAnswersMatchTheDocument sends every documented operation twice, without
// credentials and then with them (the app's API key, the owner's tokens), path parameters
// naming the node's team, app and crash group (others: unknown ids), bodies from the
// document's examples; every answer must be documented and of the documented shape. Signed in,
// every dashboard GET and the SDK calls must succeed, so their success shapes are checked.
func TestOpenAPIAnswersMatchTheDocument(t *testing.T) {
	tn := startNode(t, "embedded", func(c *Config) { c.MetricsPublic = true })
	doc := openAPIOf(t, tn)
	ops := docOps(t, doc)

	if r := tn.putJSON(t, tn.key, uuid.NewString(), conformanceBatch()); r.status != http.StatusOK {
		t.Fatalf("PUT /events: %d %s", r.status, clip(r.body))
	}
	tn.waitFlushed(t)
	adminTok, err := os.ReadFile(filepath.Join(tn.cfg.DataDir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	var pair struct{ AccessToken, RefreshToken string }
	{
		req, _ := http.NewRequest(http.MethodPost, "http://"+tn.AdminAddr()+"/admin/tokens", strings.NewReader(`{"email":"`+tn.email+`"}`))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(adminTok)))
		resp, err := tn.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		pair.AccessToken, pair.RefreshToken = v["access_token"], v["refresh_token"]
		if pair.AccessToken == "" || pair.RefreshToken == "" {
			t.Fatalf("admin tokens: %d %v", resp.StatusCode, v)
		}
	}
	groups := tn.do(t, http.MethodGet, "/apps/"+tn.app.ID.String()+"/crashGroups", pair.AccessToken, nil, nil)
	var page struct{ Results []struct{ ID string } }
	if err := json.Unmarshal(groups.body, &page); err != nil || len(page.Results) != 1 {
		t.Fatalf("crash groups: %d %s", groups.status, clip(groups.body))
	}
	reports := tn.do(t, http.MethodGet, "/apps/"+tn.app.ID.String()+"/bugReports", pair.AccessToken, nil, nil)
	var reportPage struct {
		Results []struct {
			EventID   string `json:"event_id"`
			SessionID string `json:"session_id"`
		}
	}
	if err := json.Unmarshal(reports.body, &reportPage); err != nil || len(reportPage.Results) != 1 {
		t.Fatalf("bug reports: %d %s", reports.status, clip(reports.body))
	}

	// A mapping file for the builds page's download.
	file := tn.putBuild(t, tn.key, "1.0", "1", "aab", upload{"proguard", "mapping.txt", []byte("a -> b")})[0]

	c := &conformance{schemaCheck: &schemaCheck{t: t, doc: doc}, tn: tn, seen: map[string][]int{},
		vals: map[string]string{"teamID": tn.app.TeamID.String(), "appID": tn.app.ID.String(), "groupID": page.Results[0].ID,
			"fileID": file.String(),
			"key":    "attachments/" + tn.app.ID.String() + "/" + uuid.NewString(), "asset": "docs.js",
			"traceID":     fmt.Sprintf("%032x", 7), // conformanceBatch's span
			"bugReportID": reportPage.Results[0].EventID,
			"sessionID":   reportPage.Results[0].SessionID}} // conformanceBatch's session

	// Reads first, then writes; key rotation after the SDK calls; sign-out last. The chat
	// app's test message comes before its webhook is set, so nothing leaves the machine.
	rank := map[string]int{"GET": 0, "HEAD": 1, "PUT": 2, "POST": 3, "PATCH": 4, "DELETE": 5}
	sort.SliceStable(ops, func(i, j int) bool {
		last := func(o docOp) bool { return o.path == "/auth/signout" }
		if last(ops[i]) != last(ops[j]) {
			return last(ops[j])
		}
		return rank[ops[i].method] < rank[ops[j].method]
	})

	needsUser := func(o docOp) bool {
		return slices.ContainsFunc(anyList(o.op["security"]), func(r any) bool { _, ok := r.(jobj)["accessToken"]; return ok })
	}
	hasIDs := func(o docOp) bool { return strings.Contains(o.path, "{") }

	// 1. Without credentials.
	for _, o := range ops {
		c.send(o, nil, c.vals)
	}
	creds := credentials{"appKey": tn.key, "accessToken": pair.AccessToken, "refreshToken": pair.RefreshToken}
	// 2. Signed in, with ids that are not ids (400 before anything else).
	garbage := map[string]string{}
	for k := range c.vals {
		garbage[k] = "not-an-id"
	}
	for _, o := range ops {
		if needsUser(o) && hasIDs(o) {
			c.send(o, creds, garbage)
		}
	}
	// 3. Signed in as someone of another team (403 on the team's and the app's routes).
	tn.newApp(t)
	stranger := credentials{"accessToken": tn.accessToken(t, tn.lastEmail)}
	for _, o := range ops {
		if needsUser(o) && hasIDs(o) {
			c.send(o, stranger, c.vals)
		}
	}
	// The access token works as the access_token cookie too, as the document says.
	for _, o := range ops {
		if o.op["operationId"] == "session" {
			req, _ := http.NewRequest(http.MethodGet, tn.base+o.path, nil)
			req.AddCookie(&http.Cookie{Name: "access_token", Value: pair.AccessToken})
			if status, _ := c.check(o, req); status != http.StatusOK {
				t.Errorf("GET /auth/session with the access_token cookie: %d", status)
			}
		}
	}
	// 4. As the app's owner and with its API key.
	for _, o := range ops {
		status, body := c.send(o, creds, c.vals)
		id := o.op["operationId"].(string)
		switch {
		case id == "slackConnectURL": // svc has no Slack app to install: always 503
			if status != http.StatusServiceUnavailable {
				t.Errorf("signed in, %s answered %d, want 503", id, status)
			}
		case needsUser(o) && o.method == http.MethodGet && status != http.StatusOK:
			t.Errorf("signed in, %s answered %d, want 200", id, status)
		case (id == "putEvents" || id == "putBuild" || id == "getSDKConfig" || id == "refresh" || id == "signOut") && status != http.StatusOK:
			t.Errorf("%s answered %d, want 200", id, status)
		case id == "refresh":
			var p map[string]string
			_ = json.Unmarshal(body, &p)
			creds["refreshToken"] = p["refresh_token"] // the old one stopped working
		case id == "putEvents":
			c.blobRoundTrip(ops, body)
		}
	}
	for _, id := range []string{"listTeamApps", "crashGroups", "renameApp"} {
		if !slices.Contains(c.seen[id], http.StatusForbidden) || !slices.Contains(c.seen[id], http.StatusBadRequest) {
			t.Errorf("%s answered %v; the passes above should have drawn 400 and 403", id, c.seen[id])
		}
	}
	if len(c.seen) != len(ops) {
		t.Errorf("%d operations answered, %d documented", len(c.seen), len(ops))
	}
	if testing.Verbose() {
		ids := keysOf(c.seen)
		sort.Strings(ids)
		for _, id := range ids {
			t.Logf("%-22s %v", id, c.seen[id])
		}
	}
}

// blobRoundTrip uploads to the first upload URL of a PUT /events answer and downloads the blob,
// checking both answers against the blob operations of the document.
func (c *conformance) blobRoundTrip(ops []docOp, answer []byte) {
	t := c.t
	t.Helper()
	var v struct {
		Attachments []struct {
			UploadURL string            `json:"upload_url"`
			Headers   map[string]string `json:"headers"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(answer, &v); err != nil || len(v.Attachments) == 0 {
		t.Fatalf("PUT /events answered no upload URL: %s", clip(answer))
	}
	byID := map[string]docOp{}
	for _, o := range ops {
		byID[o.op["operationId"].(string)] = o
	}
	up := v.Attachments[0]
	req, _ := http.NewRequest(http.MethodPut, up.UploadURL, strings.NewReader("png bytes"))
	for k, h := range up.Headers {
		req.Header.Set(k, h)
	}
	if status, _ := c.check(byID["uploadBlob"], req); status != http.StatusOK {
		t.Fatalf("upload: %d", status)
	}
	u, _ := url.Parse(up.UploadURL)
	loc, err := c.tn.Blobs.SignDownload(t.Context(), strings.TrimPrefix(u.Path, "/blobs/"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest(http.MethodGet, loc, nil)
	if status, b := c.check(byID["downloadBlob"], req); status != http.StatusOK || string(b) != "png bytes" {
		t.Errorf("download: %d %q", status, b)
	}
	req, _ = http.NewRequest(http.MethodHead, loc, nil)
	if status, _ := c.check(byID["headBlob"], req); status != http.StatusOK {
		t.Errorf("HEAD: %d", status)
	}
}

// TestDocsServedByNode: a started node serves /docs without credentials as HTML whose
// scripts, styles and icon are relative links to files the node serves itself.
func TestDocsServedByNode(t *testing.T) {
	tn := startNode(t, "embedded", nil)
	page := tn.do(t, http.MethodGet, "/docs", "", nil, nil)
	if page.status != http.StatusOK || page.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /docs: %d %q", page.status, page.header.Get("Content-Type"))
	}
	links := regexp.MustCompile(`<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]*)"`).FindAllStringSubmatch(string(page.body), -1)
	if len(links) < 3 {
		t.Fatalf("the page links %d files:\n%s", len(links), page.body)
	}
	base, _ := url.Parse(tn.base + "/docs")
	for _, l := range links {
		ref, err := url.Parse(l[1])
		if err != nil || ref.IsAbs() || ref.Host != "" || strings.HasPrefix(l[1], "/") {
			t.Errorf("link %q is not a relative local path", l[1])
			continue
		}
		u := base.ResolveReference(ref)
		a := tn.do(t, http.MethodGet, u.RequestURI(), "", nil, nil)
		if a.status != http.StatusOK || len(a.body) == 0 {
			t.Errorf("GET %s: %d, %d bytes", u.RequestURI(), a.status, len(a.body))
		}
	}
}
