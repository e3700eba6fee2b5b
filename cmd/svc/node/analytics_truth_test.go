package node

import (
	"bytes"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// This file derives the expected answers of the analytics endpoints from the generated truth
// (analytics_gen_test.go), following README "Crash and ANR analytics" and docs/architecture.md ("Algorithms") — by
// hand, without the server's model code.

// aq is one analytics query: what the request sends, and what the reference reads.
type aq struct {
	from, to   int64
	window     bool // send from and to (else the default window, which from and to hold)
	versions   []gVer
	lists      map[string][]string // the seven filter lists, by query parameter
	ud         *udCase
	types      []string // errorGroups' type parameter
	severities []string
	tg         string // plot_time_group
	tz         string // timezone: "" (not sent) or one of tzOffsets
	limit      int    // 0: not sent
}

// classes are the issue classes the query selects for an endpoint's default: errorGroups'
// types (error is crash and handled), else the exceptions when a severity is sent (an ANR has
// none), else def.
func (q aq) classes(def ...string) []string {
	if len(q.types) == 0 {
		if len(q.severities) > 0 {
			return []string{"crash", "handled"}
		}
		return def
	}
	var out []string
	for _, t := range q.types {
		ts := []string{t}
		if t == "error" {
			ts = []string{"crash", "handled"}
		}
		for _, x := range ts {
			if !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
	}
	return out
}

func (q aq) values() url.Values {
	v := url.Values{}
	if q.window {
		v.Set("from", time.Unix(0, q.from).UTC().Format(time.RFC3339Nano))
		v.Set("to", time.Unix(0, q.to).UTC().Format(time.RFC3339Nano))
	}
	if len(q.versions) > 0 {
		var ns, cs []string
		for _, x := range q.versions {
			ns, cs = append(ns, x.Name), append(cs, x.Code)
		}
		v.Set("versions", strings.Join(ns, ","))
		v.Set("version_codes", strings.Join(cs, ","))
	}
	for k, vals := range q.lists {
		v.Set(k, strings.Join(vals, ","))
	}
	if q.ud != nil {
		v.Set("ud_expression", q.ud.expr)
	}
	if len(q.types) > 0 {
		v.Set("type", strings.Join(q.types, ","))
	}
	if len(q.severities) > 0 {
		v.Set("severity", strings.Join(q.severities, ","))
	}
	if q.tg != "" {
		v.Set("plot_time_group", q.tg)
	}
	if q.tz != "" {
		v.Set("timezone", q.tz)
	}
	if q.limit != 0 {
		v.Set("limit", strconv.Itoa(q.limit))
	}
	return v
}

// filtered says whether the query has a condition the app actor cannot answer.
func (q aq) filtered() bool {
	n := 0
	for _, l := range q.lists {
		n += len(l)
	}
	return n > 0 || q.ud != nil
}

// liveSeverities says whether the app actor's class cells can answer the severities of an
// errorGroups query: a crash's severity is fatal and a handled exception's never is, so only a
// severity other than fatal narrowing handled exceptions needs the store — or a query left with
// no class (it answers nothing).
func (q aq) liveSeverities() bool {
	if len(q.severities) == 0 {
		return true
	}
	fatal, other := slices.Contains(q.severities, "fatal"), slices.ContainsFunc(q.severities, func(s string) bool { return s != "fatal" })
	left := 0
	for _, c := range q.classes("crash", "anr", "handled") {
		switch {
		case c == "handled" && other:
			return false
		case c == "anr", c == "crash" && fatal:
			left++
		}
	}
	return left > 0
}

// attrOf is the attribute a filter list compares with.
func attrOf(s *gSession, list string) string {
	switch list {
	case "device_names":
		return s.dev.name
	case "device_manufacturers":
		return s.dev.manufacturer
	case "locales":
		return s.locale
	case "network_providers":
		return s.net.provider
	case "network_types":
		return s.net.typ
	case "network_generations":
		return s.net.gen
	}
	return "" // countries: svc does not geolocate
}

// match is the event filter: window, versions, lists (countries match nothing), ud_expression.
func (q aq) match(e *gEvent) bool {
	if e.ts < q.from || e.ts >= q.to {
		return false
	}
	if len(q.versions) > 0 && !slices.Contains(q.versions, e.v) {
		return false
	}
	for name, vals := range q.lists {
		if len(vals) == 0 {
			continue
		}
		if name == "countries" || !slices.Contains(vals, attrOf(e.s, name)) {
			return false
		}
	}
	return q.ud == nil || q.ud.match(udMap(e.s))
}

func (q aq) matchIssue(e *gEvent, classes []string, group string) bool {
	if e.class == "" || (group != "" && e.group != group) {
		return false
	}
	if len(classes) > 0 && !slices.Contains(classes, e.class) {
		return false
	}
	// A severity narrows exceptions; an ANR is selected by its class whatever the severities.
	if len(q.severities) > 0 && e.class != "anr" && !slices.Contains(q.severities, e.severity) {
		return false
	}
	return q.match(e)
}

// udCase is a ud_expression with its meaning written as Go.
type udCase struct {
	name  string
	expr  string
	match func(u map[string]gUD) bool
}

func udMap(s *gSession) map[string]gUD {
	m := map[string]gUD{}
	for _, u := range s.ud {
		m[u.key] = u
	}
	return m
}

func udString(u map[string]gUD, k string) (string, bool) {
	a, ok := u[k]
	if !ok || a.typ != "string" {
		return "", false
	}
	s, _ := strconv.Unquote(a.raw)
	return s, true
}

func udNumber(u map[string]gUD, k, typ string) (float64, bool) {
	a, ok := u[k]
	if !ok || a.typ != typ {
		return 0, false
	}
	f, _ := strconv.ParseFloat(a.raw, 64)
	return f, true
}

func udBool(u map[string]gUD, k string) (bool, bool) {
	a, ok := u[k]
	if !ok || a.typ != "bool" {
		return false, false
	}
	return a.raw == "true", true
}

func cmpJSON(key, typ, op, value string) string {
	return `{"cmp":{"key":"` + key + `","type":"` + typ + `","op":"` + op + `","value":"` + value + `"}}`
}

// udCases: every type and operator family, and/or nesting ("and" means and: the reference
// system evaluates it as or), a value sent as a JSON number, a key with two types.
var udCases = []udCase{
	{"string eq", cmpJSON("plan", "string", "eq", "pro"), func(u map[string]gUD) bool {
		s, ok := udString(u, "plan")
		return ok && s == "pro"
	}},
	{"and", `{"and":[` + cmpJSON("plan", "string", "eq", "pro") + "," + cmpJSON("tier", "int64", "gte", "4") + `]}`, func(u map[string]gUD) bool {
		s, ok := udString(u, "plan")
		n, ok2 := udNumber(u, "tier", "int64")
		return ok && s == "pro" && ok2 && n >= 4
	}},
	{"or", `{"or":[` + cmpJSON("plan", "string", "eq", "free") + "," + cmpJSON("beta", "bool", "eq", "true") + `]}`, func(u map[string]gUD) bool {
		s, ok := udString(u, "plan")
		b, ok2 := udBool(u, "beta")
		return ok && s == "free" || ok2 && b
	}},
	{"contains ignores case", cmpJSON("plan", "string", "contains", "ENTER"), func(u map[string]gUD) bool {
		s, ok := udString(u, "plan")
		return ok && strings.Contains(strings.ToLower(s), "enter")
	}},
	{"startsWith ignores case", cmpJSON("plan", "string", "startsWith", "PR"), func(u map[string]gUD) bool {
		s, ok := udString(u, "plan")
		return ok && strings.HasPrefix(strings.ToLower(s), "pr")
	}},
	{"float gt", cmpJSON("score", "float64", "gt", "2.5"), func(u map[string]gUD) bool {
		f, ok := udNumber(u, "score", "float64")
		return ok && f > 2.5
	}},
	{"int neq needs the key", cmpJSON("tier", "int64", "neq", "3"), func(u map[string]gUD) bool {
		n, ok := udNumber(u, "tier", "int64")
		return ok && n != 3
	}},
	{"nested", `{"and":[{"or":[` + cmpJSON("plan", "string", "eq", "free") + "," + cmpJSON("plan", "string", "eq", "Enterprise") + `]},` +
		cmpJSON("beta", "bool", "eq", "true") + `]}`, func(u map[string]gUD) bool {
		s, ok := udString(u, "plan")
		b, ok2 := udBool(u, "beta")
		return ok && (s == "free" || s == "Enterprise") && ok2 && b
	}},
	{"int lt on a key with two types", cmpJSON("level", "int64", "lt", "5"), func(u map[string]gUD) bool {
		n, ok := udNumber(u, "level", "int64")
		return ok && n < 5
	}},
	{"number value", `{"cmp":{"key":"tier","type":"int64","op":"eq","value":3}}`, func(u map[string]gUD) bool {
		n, ok := udNumber(u, "tier", "int64")
		return ok && n == 3
	}},
	{"bool neq", cmpJSON("beta", "bool", "neq", "true"), func(u map[string]gUD) bool {
		b, ok := udBool(u, "beta")
		return ok && !b
	}},
	{"float lte", cmpJSON("score", "float64", "lte", "2.5"), func(u map[string]gUD) bool {
		f, ok := udNumber(u, "score", "float64")
		return ok && f <= 2.5
	}},
}

// events lists the app's events that the node holds (phases up to d.phase).
func (d *dataset) events(app *gApp) []*gEvent {
	var out []*gEvent
	for _, s := range app.sessions {
		for _, e := range s.events {
			if e.phase <= d.phase {
				out = append(out, e)
			}
		}
	}
	return out
}

// sessionEvents are a session's held events in time order.
func (d *dataset) sessionEvents(s *gSession) []*gEvent {
	var out []*gEvent
	for _, e := range s.events {
		if e.phase <= d.phase {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ts < out[j].ts })
	return out
}

// answeredBy is who answers a group list or journey: the app actor for windows whose bounds
// are UTC midnights or cut no day's events in two, without attribute or ud filters, and without severities that
// narrow handled exceptions (liveSeverities); of another such window, the app actor its whole
// days and the store the parts of days at its ends ("live+store"), or the store alone when no
// whole day is left.
func (d *dataset) answeredBy(app *gApp, q aq) string {
	if q.filtered() || !q.liveSeverities() {
		return "store"
	}
	// A bound that is not a UTC midnight cuts its day when the app actor counted an event of
	// that day outside the window: an issue event (its cells) or a screen event (its journey).
	day := int64(24 * time.Hour)
	cuts := func(bound int64, outside func(ts int64) bool) bool {
		if mod(bound, day) == 0 {
			return false
		}
		for _, e := range d.events(app) {
			if (e.class != "" || e.screen != "") && e.ts-mod(e.ts, day) == bound-mod(bound, day) && outside(e.ts) {
				return true
			}
		}
		return false
	}
	lo, hi := q.from, q.to
	if cuts(q.from, func(ts int64) bool { return ts < q.from }) {
		lo = q.from - mod(q.from, day) + day
	}
	if cuts(q.to, func(ts int64) bool { return ts >= q.to }) {
		hi = q.to - mod(q.to, day)
	}
	switch {
	case lo == q.from && hi == q.to:
		return "live"
	case lo < hi:
		return "live+store"
	}
	return "store"
}

func later(a, b *gEvent) bool {
	return a.ts > b.ts || a.ts == b.ts && bytes.Compare(a.id[:], b.id[:]) > 0
}

// wantGroup is one expected group of a list.
type wantGroup struct {
	id    string
	count int
	pct   float64
	last  *gEvent
}

// groups is a group list: count, then latest event, descending, then id; display of the
// latest event in the window; percentages of the list's total.
func (d *dataset) groups(app *gApp, q aq, classes []string) []wantGroup {
	by := map[string]*wantGroup{}
	total := 0
	for _, e := range d.events(app) {
		if !q.matchIssue(e, classes, "") {
			continue
		}
		total++
		g := by[e.group]
		if g == nil {
			g = &wantGroup{id: e.group, last: e}
			by[e.group] = g
		}
		g.count++
		if later(e, g.last) {
			g.last = e
		}
	}
	out := make([]wantGroup, 0, len(by))
	for _, g := range by {
		g.pct = math.Round(float64(g.count)*100/float64(total)*100) / 100
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.count != y.count {
			return x.count > y.count
		}
		if x.last.ts != y.last.ts {
			return x.last.ts > y.last.ts
		}
		return x.id < y.id
	})
	return out
}

// instances are a group's events of the classes, newest first (then id descending).
func (d *dataset) instances(app *gApp, q aq, classes []string, group string) []*gEvent {
	var out []*gEvent
	for _, e := range d.events(app) {
		if q.matchIssue(e, classes, group) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return later(out[i], out[j]) })
	return out
}

// tzOffsets are the zones the plot tests send as timezone, with their offset: zones without
// DST (since 1945), so that their buckets are plain arithmetic.
var tzOffsets = map[string]int{"Asia/Kolkata": 5*3600 + 30*60}

// bucketLabel is the bucket of ns on the wall clock of tz ("" is UTC): minutes, hours, days
// (default) or months; minutes and hours are RFC 3339 with the zone's offset ("Z" in UTC),
// days and months local dates.
func bucketLabel(ns int64, tg, tz string) string {
	t := time.Unix(0, ns).UTC()
	if tz != "" {
		off, ok := tzOffsets[tz]
		if !ok {
			panic("bucketLabel: no offset for " + tz)
		}
		t = time.Unix(0, ns).In(time.FixedZone(tz, off))
	}
	switch tg { // the wall clock, no zone: what the reference dashboard's charts parse
	case "minutes":
		return t.Format("2006-01-02T15:04:00")
	case "hours":
		return t.Format("2006-01-02T15:00:00")
	case "months":
		return t.Format("2006-01") + "-01"
	}
	return t.Format("2006-01-02")
}

type wantPoint struct {
	Datetime  string   `json:"datetime"`
	Instances int      `json:"instances"`
	CrashFree *float64 `json:"crash_free_sessions,omitempty"`
	ANRFree   *float64 `json:"anr_free_sessions,omitempty"`
}

type wantSeries struct {
	ID   string      `json:"id"`
	Data []wantPoint `json:"data"`
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

type plotKey struct {
	v gVer
	b string
}

func seriesOf(points map[plotKey]wantPoint) []wantSeries {
	byID := map[string][]wantPoint{}
	for k, p := range points {
		byID[k.v.series()] = append(byID[k.v.series()], p)
	}
	out := []wantSeries{}
	for id, ps := range byID {
		sort.Slice(ps, func(i, j int) bool { return ps[i].Datetime < ps[j].Datetime })
		out = append(out, wantSeries{ID: id, Data: ps})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// overview is the crash (or ANR) overview plot: a point per version and bucket with sessions
// that have events matching the query, its instances, and the share of those sessions without
// a crash (ANR) among those events.
func (d *dataset) overview(app *gApp, q aq, class string) []wantSeries {
	sessions, bad := map[plotKey]map[uuid.UUID]bool{}, map[plotKey]map[uuid.UUID]bool{}
	inst := map[plotKey]int{}
	for _, e := range d.events(app) {
		if !q.match(e) {
			continue
		}
		k := plotKey{e.v, bucketLabel(e.ts, q.tg, q.tz)}
		if sessions[k] == nil {
			sessions[k], bad[k] = map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
		}
		sessions[k][e.s.id] = true
		if e.class == class {
			bad[k][e.s.id] = true
			inst[k]++
		}
	}
	points := map[plotKey]wantPoint{}
	for k, ss := range sessions {
		rate := round2((1 - float64(len(bad[k]))/float64(len(ss))) * 100)
		p := wantPoint{Datetime: k.b, Instances: inst[k]}
		if class == "crash" {
			p.CrashFree = &rate
		} else {
			p.ANRFree = &rate
		}
		points[k] = p
	}
	return seriesOf(points)
}

// health is the app health plot: per bucket, the sessions with a matching event (once per
// version they carried in the bucket), the crash events and the ANR events; buckets with 0
// left out, every series present.
func (d *dataset) health(app *gApp, q aq) []wantSeries {
	type vs struct {
		b string
		v gVer
		s uuid.UUID
	}
	sessions := map[vs]bool{}
	counts := []map[string]int{{}, {}, {}}
	for _, e := range d.events(app) {
		if !q.match(e) {
			continue
		}
		b := bucketLabel(e.ts, q.tg, q.tz)
		if !sessions[vs{b, e.v, e.s.id}] {
			sessions[vs{b, e.v, e.s.id}] = true
			counts[0][b]++
		}
		switch e.class {
		case "crash":
			counts[1][b]++
		case "anr":
			counts[2][b]++
		}
	}
	out := []wantSeries{{ID: "sessions"}, {ID: "crashes"}, {ID: "anrs"}}
	for i, m := range counts {
		out[i].Data = []wantPoint{}
		for b, n := range m {
			out[i].Data = append(out[i].Data, wantPoint{Datetime: b, Instances: n})
		}
		sort.Slice(out[i].Data, func(x, y int) bool { return out[i].Data[x].Datetime < out[i].Data[y].Datetime })
	}
	return out
}

// groupPlot is a group's instances of the class per version and bucket.
func (d *dataset) groupPlot(app *gApp, q aq, class, group string) []wantSeries {
	points := map[plotKey]wantPoint{}
	for _, e := range d.events(app) {
		if q.matchIssue(e, []string{class}, group) {
			k := plotKey{e.v, bucketLabel(e.ts, q.tg, q.tz)}
			p := points[k]
			p.Datetime = k.b
			p.Instances++
			points[k] = p
		}
	}
	return seriesOf(points)
}

// Journey shapes: the app journey has both issue arrays; a group journey only its kind's.
type jLink struct {
	Source string `json:"source"`
	Target string `json:"target"`
	Value  int    `json:"value"`
}

type jIssue struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Count int    `json:"count"`
}

type jIssues struct {
	ANRs    *[]jIssue `json:"anrs"`
	Crashes *[]jIssue `json:"crashes"`
}

type jNode struct {
	ID     string  `json:"id"`
	Issues jIssues `json:"issues"`
}

type jGraph struct {
	Links       []jLink `json:"links"`
	Nodes       []jNode `json:"nodes"`
	TotalIssues int     `json:"totalIssues"`
}

// journey follows each session's screens in time order: a move counts once per session, at
// its first occurrence (at most 500 distinct moves per session), when that event is in the
// window and of a selected version; crashes and ANRs count on the screen shown. With group
// set it is the group journey plot of class: the sessions with the group's issue in the
// window (and, with filters, one matching them), only that group on the nodes and only its
// kind's array.
func (d *dataset) journey(app *gApp, q aq, bigraph bool, class, group string) jGraph {
	keep := func(e *gEvent) bool {
		return e.ts >= q.from && e.ts < q.to && (len(q.versions) == 0 || slices.Contains(q.versions, e.v))
	}
	type edge struct{ from, to string }
	links := map[edge]int{}
	issues := map[string]map[string]map[string]*jIssue{} // screen → kind → group
	totals := map[string]int{}
	for _, s := range app.sessions {
		evs := d.sessionEvents(s)
		if group != "" {
			had, matched := false, false
			for _, e := range evs {
				if e.group == group && e.class == class && e.ts >= q.from && e.ts < q.to {
					had = true
				}
				if q.matchIssue(e, []string{class}, group) {
					matched = true
				}
			}
			if !had || q.filtered() && !matched {
				continue
			}
		}
		cur := ""
		seen := map[edge]bool{}
		for _, e := range evs {
			if e.screen != "" {
				if e.screen == cur {
					continue
				}
				from := cur
				cur = e.screen
				k := edge{from, cur}
				if from == "" || seen[k] || len(seen) >= 500 {
					continue
				}
				seen[k] = true
				if keep(e) {
					links[k]++
				}
				continue
			}
			if (e.class != "crash" && e.class != "anr") || !keep(e) || group != "" && e.group != group {
				continue
			}
			totals[e.class]++
			if cur == "" {
				continue
			}
			if issues[cur] == nil {
				issues[cur] = map[string]map[string]*jIssue{}
			}
			if issues[cur][e.class] == nil {
				issues[cur][e.class] = map[string]*jIssue{}
			}
			is := issues[cur][e.class][e.group]
			if is == nil {
				is = &jIssue{ID: e.group, Title: e.title()}
				issues[cur][e.class][e.group] = is
			}
			is.Count++
		}
	}
	g := jGraph{Links: []jLink{}, Nodes: []jNode{}}
	screens := map[string]bool{}
	for k, n := range links {
		if back, ok := links[edge{k.to, k.from}]; !bigraph && ok && (back > n || back == n && k.to < k.from) {
			continue
		}
		g.Links = append(g.Links, jLink{k.from, k.to, n})
		screens[k.from], screens[k.to] = true, true
	}
	sort.Slice(g.Links, func(i, j int) bool {
		x, y := g.Links[i], g.Links[j]
		if x.Value != y.Value {
			return x.Value > y.Value
		}
		if x.Source != y.Source {
			return x.Source < y.Source
		}
		return x.Target < y.Target
	})
	for s := range issues {
		screens[s] = true
	}
	list := func(m map[string]*jIssue) *[]jIssue {
		out := []jIssue{}
		for _, is := range m {
			out = append(out, *is)
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Count != out[j].Count {
				return out[i].Count > out[j].Count
			}
			return out[i].ID < out[j].ID
		})
		return &out
	}
	for s := range screens {
		n := jNode{ID: s}
		switch {
		case group == "":
			n.Issues = jIssues{ANRs: list(issues[s]["anr"]), Crashes: list(issues[s]["crash"])}
		case class == "crash":
			n.Issues = jIssues{Crashes: list(issues[s]["crash"])}
		default:
			n.Issues = jIssues{ANRs: list(issues[s]["anr"])}
		}
		g.Nodes = append(g.Nodes, n)
	}
	sort.Slice(g.Nodes, func(i, j int) bool { return g.Nodes[i].ID < g.Nodes[j].ID })
	g.TotalIssues = totals["crash"] + totals["anr"]
	if group != "" {
		g.TotalIssues = totals[class]
	}
	return g
}

// metricsJSON is the body of GET /metrics.
type metricsJSON struct {
	Adoption struct {
		AllVersions     int     `json:"all_versions"`
		SelectedVersion int     `json:"selected_version"`
		Adoption        float64 `json:"adoption"`
		NaN             bool    `json:"nan"`
	} `json:"adoption"`
	ANRFree struct {
		Value float64 `json:"anr_free_sessions"`
		Delta float64 `json:"delta"`
		NaN   bool    `json:"nan"`
	} `json:"anr_free_sessions"`
	CrashFree struct {
		Value float64 `json:"crash_free_sessions"`
		Delta float64 `json:"delta"`
		NaN   bool    `json:"nan"`
		// The reference dashboard's comparison fields (checked here for this member and the
		// launches; the others share the code).
		Unselected       float64 `json:"unselected_crash_free_sessions"`
		NoData           bool    `json:"no_data"`
		UnselectedNoData bool    `json:"unselected_no_data"`
	} `json:"crash_free_sessions"`
	PerceivedANRFree struct {
		Value float64 `json:"perceived_anr_free_sessions"`
		Delta float64 `json:"delta"`
		NaN   bool    `json:"nan"`
	} `json:"perceived_anr_free_sessions"`
	PerceivedCrashFree struct {
		Value float64 `json:"perceived_crash_free_sessions"`
		Delta float64 `json:"delta"`
		NaN   bool    `json:"nan"`
	} `json:"perceived_crash_free_sessions"`
	ColdLaunch launchJSON `json:"cold_launch"`
	WarmLaunch launchJSON `json:"warm_launch"`
	HotLaunch  launchJSON `json:"hot_launch"`
	Sizes      struct {
		Average  int64 `json:"average_app_size"`
		Selected int64 `json:"selected_app_size"`
		Delta    int64 `json:"delta"`
		NaN      bool  `json:"nan"`
	} `json:"sizes"`
}

type launchJSON struct {
	P95              float64 `json:"p95"`
	Delta            float64 `json:"delta"`
	NaN              bool    `json:"nan"`
	UnselectedP95    float64 `json:"unselected_p95"`
	NoData           bool    `json:"no_data"`
	UnselectedNoData bool    `json:"unselected_no_data"`
}

// metricSide is one side of the health metrics: sessions, those with a crash, a foreground
// crash, an ANR, a foreground ANR, and launch durations by kind.
type metricSide struct {
	sessions, crashed, crashedFG, anr, anrFG int
	launches                                 map[string][]float64
}

// free is (1 − bad/sessions) × 100 unrounded; nan for no sessions.
func free(sessions, bad int) (float64, bool) {
	if sessions == 0 {
		return 0, true
	}
	return (1 - float64(bad)/float64(sessions)) * 100, false
}

// rate is a "free sessions" member: the selected side's percentage and its ratio to the
// others' (1 when no other session exists; 0 and nan when a side divides by zero).
func rate(sel, oth metricSide, bad func(metricSide) int) (v, delta float64, nan bool) {
	s, sNaN := free(sel.sessions, bad(sel))
	v, delta, nan = round2(s), 1, sNaN
	if oth.sessions == 0 {
		return
	}
	o, _ := free(oth.sessions, bad(oth))
	if sNaN || o == 0 {
		return v, 0, true
	}
	return v, round2(s / o), nan
}

// p95 is the element at ⌊0.95·n⌋ of the sorted durations.
func p95(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(0.95*float64(len(s)))]
}

func launchWant(sel, oth []float64) launchJSON {
	m := launchJSON{Delta: 1, NoData: len(sel) == 0, UnselectedNoData: len(oth) == 0}
	if len(oth) > 0 {
		m.UnselectedP95 = round2(p95(oth))
	}
	if len(sel) == 0 {
		m.NaN = true
	} else {
		m.P95 = round2(p95(sel))
	}
	if len(oth) == 0 {
		return m
	}
	if len(sel) == 0 || p95(oth) == 0 {
		m.Delta, m.NaN = 0, true
		return m
	}
	m.Delta = round2(p95(sel) / p95(oth))
	return m
}

// metrics computes the health metrics of [from, to) for the selected version (nil: every
// session is selected): a session counts for a version when one of its events in the window
// carries it. Sizes are left to the caller.
func (d *dataset) metrics(app *gApp, from, to int64, sel *gVer) metricsJSON {
	type flags struct{ crash, crashFG, anr, anrFG bool }
	type sess struct {
		vers map[gVer]*flags
	}
	sessions := map[uuid.UUID]*sess{}
	side := [2]metricSide{{launches: map[string][]float64{}}, {launches: map[string][]float64{}}}
	for _, e := range d.events(app) {
		if e.ts < from || e.ts >= to {
			continue
		}
		s := sessions[e.s.id]
		if s == nil {
			s = &sess{vers: map[gVer]*flags{}}
			sessions[e.s.id] = s
		}
		f := s.vers[e.v]
		if f == nil {
			f = &flags{}
			s.vers[e.v] = f
		}
		switch e.class {
		case "crash":
			f.crash, f.crashFG = true, f.crashFG || e.fg
		case "anr":
			f.anr, f.anrFG = true, f.anrFG || e.fg
		}
		if e.launch != "" {
			i := 0
			if sel != nil && e.v != *sel {
				i = 1
			}
			side[i].launches[e.launch] = append(side[i].launches[e.launch], e.launchMs)
		}
	}
	for _, s := range sessions {
		var on [2]bool
		var f [2]flags
		for v, x := range s.vers {
			i := 0
			if sel != nil && v != *sel {
				i = 1
			}
			on[i] = true
			f[i].crash, f[i].crashFG = f[i].crash || x.crash, f[i].crashFG || x.crashFG
			f[i].anr, f[i].anrFG = f[i].anr || x.anr, f[i].anrFG || x.anrFG
		}
		for i := range on {
			if !on[i] {
				continue
			}
			side[i].sessions++
			for _, c := range []struct {
				b bool
				n *int
			}{{f[i].crash, &side[i].crashed}, {f[i].crashFG, &side[i].crashedFG}, {f[i].anr, &side[i].anr}, {f[i].anrFG, &side[i].anrFG}} {
				if c.b {
					*c.n++
				}
			}
		}
	}
	var m metricsJSON
	m.Adoption.AllVersions, m.Adoption.SelectedVersion = len(sessions), side[0].sessions
	if len(sessions) == 0 {
		m.Adoption.NaN = true
	} else {
		m.Adoption.Adoption = round2(float64(side[0].sessions) / float64(len(sessions)) * 100)
	}
	s, o := side[0], side[1]
	m.CrashFree.Value, m.CrashFree.Delta, m.CrashFree.NaN = rate(s, o, func(x metricSide) int { return x.crashed })
	m.CrashFree.NoData, m.CrashFree.UnselectedNoData = s.sessions == 0, o.sessions == 0
	if o.sessions > 0 {
		v, _ := free(o.sessions, o.crashed)
		m.CrashFree.Unselected = round2(v)
	}
	m.PerceivedCrashFree.Value, m.PerceivedCrashFree.Delta, m.PerceivedCrashFree.NaN = rate(s, o, func(x metricSide) int { return x.crashedFG })
	m.ANRFree.Value, m.ANRFree.Delta, m.ANRFree.NaN = rate(s, o, func(x metricSide) int { return x.anr })
	m.PerceivedANRFree.Value, m.PerceivedANRFree.Delta, m.PerceivedANRFree.NaN = rate(s, o, func(x metricSide) int { return x.anrFG })
	m.ColdLaunch = launchWant(s.launches["cold"], o.launches["cold"])
	m.WarmLaunch = launchWant(s.launches["warm"], o.launches["warm"])
	m.HotLaunch = launchWant(s.launches["hot"], o.launches["hot"])
	return m
}

// filtersJSON is the body of GET /filters.
type filtersBody struct {
	Versions            []map[string]string `json:"versions"`
	OSVersions          []map[string]string `json:"os_versions"`
	Countries           []string            `json:"countries"`
	DeviceManufacturers []string            `json:"device_manufacturers"`
	DeviceNames         []string            `json:"device_names"`
	Locales             []string            `json:"locales"`
	NetworkGenerations  []string            `json:"network_generations"`
	NetworkProviders    []string            `json:"network_providers"`
	NetworkTypes        []string            `json:"network_types"`
	UDAttrs             struct {
		KeyTypes      []map[string]string `json:"key_types"`
		OperatorTypes map[string][]string `json:"operator_types"`
	} `json:"ud_attrs"`
}

// filters lists the distinct non-empty values of the app's events (of one class when class
// is set), at any time: versions newest first (by their first event), the rest ascending.
func (d *dataset) filters(app *gApp, class string, keys bool) filtersBody {
	first := map[gVer]int64{}
	oses := map[[2]string]bool{}
	sets := map[string]map[string]bool{}
	ud := map[[2]string]bool{}
	for _, e := range d.events(app) {
		if class != "" && !slices.Contains(strings.Split(class, ","), e.class) {
			continue
		}
		if t, ok := first[e.v]; !ok || e.ts < t {
			first[e.v] = e.ts
		}
		oses[[2]string{e.s.dev.osName, e.s.dev.osVersion}] = true
		for _, l := range []string{"device_manufacturers", "device_names", "locales", "network_generations", "network_providers", "network_types"} {
			if sets[l] == nil {
				sets[l] = map[string]bool{}
			}
			sets[l][attrOf(e.s, l)] = true
		}
		for _, u := range e.s.ud {
			ud[[2]string{u.key, u.typ}] = true
		}
	}
	sorted := func(m map[string]bool) []string {
		out := []string{}
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	var f filtersBody
	vs := make([]gVer, 0, len(first))
	for v := range first {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if first[a] != first[b] {
			return first[a] > first[b]
		}
		if a.Name != b.Name {
			return a.Name > b.Name
		}
		return a.Code > b.Code
	})
	for _, v := range vs { // none: null, the dashboard's "no data"
		f.Versions = append(f.Versions, map[string]string{"name": v.Name, "code": v.Code})
	}
	var os [][2]string
	for k := range oses {
		os = append(os, k)
	}
	sort.Slice(os, func(i, j int) bool { return os[i][0] < os[j][0] || os[i][0] == os[j][0] && os[i][1] < os[j][1] })
	f.OSVersions = []map[string]string{}
	for _, o := range os {
		f.OSVersions = append(f.OSVersions, map[string]string{"name": o[0], "version": o[1]})
	}
	f.Countries = []string{}
	f.DeviceManufacturers, f.DeviceNames, f.Locales = sorted(sets["device_manufacturers"]), sorted(sets["device_names"]), sorted(sets["locales"])
	f.NetworkGenerations, f.NetworkProviders, f.NetworkTypes = sorted(sets["network_generations"]), sorted(sets["network_providers"]), sorted(sets["network_types"])
	f.UDAttrs.KeyTypes = []map[string]string{}
	if keys {
		var ks [][2]string
		for k := range ud {
			ks = append(ks, k)
		}
		sort.Slice(ks, func(i, j int) bool { return ks[i][0] < ks[j][0] || ks[i][0] == ks[j][0] && ks[i][1] < ks[j][1] })
		for _, k := range ks {
			f.UDAttrs.KeyTypes = append(f.UDAttrs.KeyTypes, map[string]string{"key": k[0], "type": k[1]})
		}
	}
	f.UDAttrs.OperatorTypes = map[string][]string{
		"bool": {"eq", "neq"}, "int64": {"eq", "neq", "gt", "lt", "gte", "lte"},
		"float64": {"eq", "neq", "gt", "lt", "gte", "lte"}, "string": {"eq", "neq", "contains", "startsWith"},
	}
	return f
}
