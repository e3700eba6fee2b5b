package dashboard

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
)

// LiveAnswers asks an app's actor for answers from its in-memory aggregates (actors.Live).
type LiveAnswers interface {
	Query(ctx context.Context, app uuid.UUID, q *actorpb.LiveQuery) (*actorpb.LiveReply, error)
}

// Headers of the live/store choice. The choice is invisible in the answer itself; operators
// and tests can see it (AnsweredBy) and ask for the store (AnswerFrom: store) to compare.
const (
	HeaderAnsweredBy = "Svc-Answered-By"
	HeaderAnswerFrom = "Svc-Answer-From"
)

var groupIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// fail answers an analytics error: 400 for a bad parameter, 500 otherwise.
func (a *API) fail(w http.ResponseWriter, what string, err error) {
	var bp *badParam
	if errors.As(err, &bp) {
		httpx.Error(w, http.StatusBadRequest, bp.msg)
		return
	}
	a.internal(w, what, err)
}

// live asks the app actor when the request allows it; ok is false when the store must answer.
func (a *API) live(r *http.Request, q *actorpb.LiveQuery) (*actorpb.LiveReply, bool) {
	if a.Live == nil || r.Header.Get(HeaderAnswerFrom) == "store" {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	reply, err := a.Live.Query(ctx, appOf(r.Context()).ID, q)
	if err != nil {
		if a.Log != nil {
			a.Log.Warn("live answer failed; asking the store", "error", err.Error())
		}
		return nil, false
	}
	return reply, reply.Ok
}

// Who answered (HeaderAnsweredBy): the app actor, the event store, or the actor for the whole
// days of the window and the store for the parts of days at its ends.
const (
	byLive      = "live"
	byStore     = "store"
	byLiveStore = "live+store"
)

// liveSplit asks the app actor for q's window or, when a bound of it cuts a day the actor holds
// events of, for the largest part it answers exactly: the window's whole UTC days. The dashboard
// sends windows such as the last 7 days to the millisecond, which only this way are answered
// from memory. rest are the parts of q's window left to the store (none when the actor took
// all of it).
func (a *API) liveSplit(r *http.Request, q *actorpb.LiveQuery) (reply *actorpb.LiveReply, rest [][2]int64, ok bool) {
	q.Split = true
	if reply, ok = a.live(r, q); !ok {
		return nil, nil, false
	}
	lo, hi := reply.From, reply.To
	if lo == 0 && hi == 0 { // an actor that predates split answers whole windows only
		lo, hi = q.From, q.To
	}
	if lo < q.From || hi > q.To || lo >= hi {
		if a.Log != nil {
			a.Log.Warn("live answer for a window outside the one asked; asking the store", "from", lo, "to", hi)
		}
		return nil, nil, false
	}
	if q.From < lo {
		rest = append(rest, [2]int64{q.From, lo})
	}
	if hi < q.To {
		rest = append(rest, [2]int64{hi, q.To})
	}
	return reply, rest, true
}

func versionProtos(vs []model.AppVersion) []*actorpb.Version {
	out := make([]*actorpb.Version, len(vs))
	for i, v := range vs {
		out[i] = actors.VersionProto(v)
	}
	return out
}

type pageMeta struct {
	Next     bool `json:"next"`
	Previous bool `json:"previous"`
}

type pageOf[T any] struct {
	Meta    pageMeta `json:"meta"`
	Results []T      `json:"results"`
}

type groupJSON struct {
	AppID      uuid.UUID `json:"app_id"`
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	Message    string    `json:"message"`
	MethodName string    `json:"method_name"`
	FileName   string    `json:"file_name"`
	LineNumber int32     `json:"line_number"`
	Count      uint64    `json:"count"`
	Percentage float64   `json:"percentage_contribution"`
	UpdatedAt  string    `json:"updated_at"`
	ErrorType  *string   `json:"error_type,omitempty"`
	Severity   *string   `json:"severity,omitempty"`
}

func rfc3339(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// groups serves the group lists: crashGroups (crashes), anrGroups (ANRs) and errorGroups (all
// three classes, narrowed by `type` and `severity`).
func (a *API) groups(classes []model.IssueClass, errorGroups bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		app := appOf(r.Context())
		p, f, ok := a.requestFilter(w, r, true)
		if !ok {
			return
		}
		// A list has no buckets: plot_time_group and timezone are checked and change nothing,
		// so a list asked for in any zone is answered live just as in UTC.
		if _, err := p.buckets(); err != nil {
			a.fail(w, "read plot buckets", err)
			return
		}
		q := model.IssueQuery{EventFilter: f, Classes: classes}
		if errorGroups {
			var err error
			if q.Classes, q.Severities, err = errorGroupFilters(p); err != nil {
				a.fail(w, "read filters", err)
				return
			}
		}
		limit, err := p.limit()
		if err != nil {
			a.fail(w, "read limit", err)
			return
		}
		var cells []model.IssueCell
		by := byStore
		// Live when the filter is the app actor's (window and versions) and the severities, if
		// any, are said by class (IssueQuery.ByClass); the ends of the window the actor does not
		// hold whole from the store.
		if classes, ok := q.ByClass(); ok && f.Unfiltered() {
			lq := &actorpb.LiveQuery{From: f.From, To: f.To, Versions: versionProtos(f.Versions)}
			for _, c := range classes {
				lq.Classes = append(lq.Classes, uint32(c))
			}
			if reply, rest, ok := a.liveSplit(r, lq); ok {
				cells, by = actors.CellsOf(reply.Cells), byLive
				for _, part := range rest {
					pq := q
					pq.From, pq.To = part[0], part[1]
					more, err := a.Analytics.IssueCells(r.Context(), &pq, model.Cells{})
					if err != nil {
						a.internal(w, "query issue groups", err)
						return
					}
					cells, by = append(cells, more...), byLiveStore
				}
			}
		}
		if by == byStore {
			if cells, err = a.Analytics.IssueCells(r.Context(), &q, model.Cells{}); err != nil {
				a.internal(w, "query issue groups", err)
				return
			}
		}
		rows := model.MergeGroups(cells)
		page, pg, err := model.PageGroups(rows, p.q.Get("key_id"), limit)
		if err != nil {
			httpx.Error(w, http.StatusBadRequest, err.Error())
			return
		}
		out := pageOf[groupJSON]{Meta: pageMeta{Next: pg.Next, Previous: pg.Previous}, Results: make([]groupJSON, len(page))}
		for i := range page {
			g := &page[i]
			out.Results[i] = groupJSON{AppID: app.ID, ID: g.ID, Type: g.Last.Type, Message: g.Last.Message,
				MethodName: g.Last.MethodName, FileName: g.Last.FileName, LineNumber: g.Last.LineNumber,
				Count: g.Count, Percentage: g.Percentage, UpdatedAt: rfc3339(g.LastTime)}
			if errorGroups {
				et, sev := errorTypeOf(g.LastClass == model.ClassANR, g.Last.Severity)
				out.Results[i].ErrorType, out.Results[i].Severity = &et, &sev
			}
		}
		w.Header().Set(HeaderAnsweredBy, by)
		httpx.JSON(w, http.StatusOK, out)
	}
}

// errorTypeOf is the error_type and severity of an errorGroups group or event as the reference
// dashboard reads them: its source, "exception" or "anr" (the pill), and the exception's
// severity (IssueDisplay.Severity, what the severity filter matches), or "fatal" for an ANR (an
// ANR ends the app's use as a crash does).
func errorTypeOf(anr bool, severity string) (errorType, sev string) {
	if anr {
		return "anr", "fatal"
	}
	return "exception", severity
}

// errorGroupFilters reads errorGroups' `type` and `severity` lists (model.IssueKinds decides
// what they mean) and `custom`, which svc cannot answer: only its absence or false is accepted.
func errorGroupFilters(p *params) ([]model.IssueClass, []string, error) {
	types, err := p.list("type")
	if err != nil {
		return nil, nil, err
	}
	sev, err := p.list("severity")
	if err != nil {
		return nil, nil, err
	}
	classes, sev, err := model.IssueKinds(types, sev)
	if err != nil {
		return nil, nil, badErr(err)
	}
	switch c := p.q.Get("custom"); c {
	case "", "0", "false":
	default:
		return nil, nil, bad("custom %q: svc does not tell custom exceptions apart; send no custom, or custom=false", c)
	}
	return classes, sev, nil
}

// requestFilter reads an analytics request's parameters and event filter (with the attribute
// lists and ud_expression when lists), answering 400 or 500 itself when it cannot.
func (a *API) requestFilter(w http.ResponseWriter, r *http.Request, lists bool) (*params, model.EventFilter, bool) {
	p, err := a.readParams(r)
	if err != nil {
		a.fail(w, "read filters", err)
		return nil, model.EventFilter{}, false
	}
	f, err := p.filter(appOf(r.Context()), a.now(), lists)
	if err != nil {
		a.fail(w, "read filters", err)
		return nil, f, false
	}
	return p, f, true
}

// groupParam reads the group id of the path.
func groupParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := chi.URLParam(r, "groupID")
	if !groupIDPattern.MatchString(id) {
		httpx.Error(w, http.StatusBadRequest, "group id "+id+" is not a group id (32 lowercase hexadecimal characters)")
		return "", false
	}
	return id, true
}

// groupRequest reads a group detail request that lists no plot: the group id, and the filter
// with the attribute lists; plot_time_group and timezone are checked, and bucket nothing.
// It answers 400 or 500 itself when it cannot.
func (a *API) groupRequest(w http.ResponseWriter, r *http.Request) (string, *params, model.EventFilter, bool) {
	group, ok := groupParam(w, r)
	if !ok {
		return "", nil, model.EventFilter{}, false
	}
	p, f, ok := a.requestFilter(w, r, true)
	if !ok {
		return "", nil, f, false
	}
	if _, err := p.buckets(); err != nil {
		a.fail(w, "read plot buckets", err)
		return "", nil, f, false
	}
	return group, p, f, true
}

// overviewPlot serves crashGroups/plots/instances and anrGroups/plots/instances: per version
// and bucket, the instances of the class and the share of sessions free of it.
//
// Plots are answered by the store, in UTC as in any zone: the app actor keeps UTC day cells
// without sessions, which give neither the per-bucket sessions of the rates, nor minutes or
// hours, nor the days of a zone whose offset is not 0 (a local day straddles two UTC days).
func (a *API) overviewPlot(class model.IssueClass) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, f, by, ok := a.plotParams(w, r)
		if !ok {
			return
		}
		q := model.IssueQuery{EventFilter: f, Classes: []model.IssueClass{class}}
		cells, err := a.Analytics.IssueCells(r.Context(), &q, model.Cells{Bucketed: true, By: by})
		if err != nil {
			a.internal(w, "query plot", err)
			return
		}
		sessions, err := a.Analytics.SessionBuckets(r.Context(), &f, by)
		if err != nil {
			a.internal(w, "query plot sessions", err)
			return
		}
		rows := plotRows(cells, by)
		for _, s := range sessions {
			row := model.PlotRow{Version: s.Version, Datetime: by.Label(time.Unix(0, s.Bucket)), Sessions: s.Sessions}
			if class == model.ClassCrash {
				row.IssueSessions = s.Crashed
			} else {
				row.IssueSessions = s.WithANR
			}
			rows = append(rows, row)
		}
		rate := model.PlotCrashFree
		if class == model.ClassANR {
			rate = model.PlotANRFree
		}
		w.Header().Set(HeaderAnsweredBy, "store")
		httpx.JSON(w, http.StatusOK, model.BuildPlot(rows, rate))
	}
}

func plotRows(cells []model.IssueCell, by model.Buckets) []model.PlotRow {
	rows := make([]model.PlotRow, 0, len(cells))
	for _, c := range cells {
		rows = append(rows, model.PlotRow{Version: c.Version, Datetime: by.Label(time.Unix(0, c.Bucket)), Instances: c.Count})
	}
	return rows
}

// plotParams reads a plot request: its filter and its buckets (plot_time_group, timezone),
// answering 400 or 500 itself when it cannot.
func (a *API) plotParams(w http.ResponseWriter, r *http.Request) (*params, model.EventFilter, model.Buckets, bool) {
	p, f, ok := a.requestFilter(w, r, true)
	if !ok {
		return nil, f, model.Buckets{}, false
	}
	by, err := p.buckets()
	if err != nil {
		a.fail(w, "read plot buckets", err)
		return nil, f, model.Buckets{}, false
	}
	return p, f, by, true
}

// groupPlot serves a group's plot: the group's instances per version and bucket, of one class
// on crashGroups/{id}/plots/instances and the ANR one, of every class (classes nil) on
// errorGroups/{id}/plots/instances, where no data is null (nullEmpty), as the reference
// dashboard reads "No Data".
func (a *API) groupPlot(classes []model.IssueClass, nullEmpty bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		group, ok := groupParam(w, r)
		if !ok {
			return
		}
		_, f, by, ok := a.plotParams(w, r)
		if !ok {
			return
		}
		q := model.IssueQuery{EventFilter: f, Classes: classes, GroupID: group}
		cells, err := a.Analytics.IssueCells(r.Context(), &q, model.Cells{Bucketed: true, By: by})
		if err != nil {
			a.internal(w, "query plot", err)
			return
		}
		var out any = model.BuildPlot(plotRows(cells, by), model.PlotNoRate)
		if nullEmpty && len(cells) == 0 {
			out = nil
		}
		w.Header().Set(HeaderAnsweredBy, "store")
		httpx.JSON(w, http.StatusOK, out)
	}
}

// path serves the common path of a group (docs/architecture.md, "Algorithms").
func (a *API) path(class model.IssueClass) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		group, ok := groupParam(w, r)
		if !ok {
			return
		}
		sessions, err := a.Analytics.PathSessions(r.Context(), appOf(r.Context()).ID, class, group, model.MaxPathSessions, model.MaxPathSteps)
		if err != nil {
			a.internal(w, "query common path", err)
			return
		}
		w.Header().Set(HeaderAnsweredBy, "store")
		httpx.JSON(w, http.StatusOK, model.ComputeCommonPath(model.PathSteps(sessions, model.StepOf)))
	}
}

// journeyParams reads a journey request: its filter and bigraph (default 1).
func (a *API) journeyParams(w http.ResponseWriter, r *http.Request, lists bool) (model.EventFilter, bool, bool) {
	p, f, ok := a.requestFilter(w, r, lists)
	if !ok {
		return f, false, false
	}
	bigraph, err := p.flag("bigraph", true)
	if err != nil {
		a.fail(w, "read bigraph", err)
		return f, false, false
	}
	return f, bigraph, true
}

// journey serves GET /apps/{id}/journey: live for whole-day windows, else from the store.
func (a *API) journey(w http.ResponseWriter, r *http.Request) {
	app := appOf(r.Context())
	f, bigraph, ok := a.journeyParams(w, r, false)
	if !ok {
		return
	}
	reply, rest, ok := a.liveSplit(r, &actorpb.LiveQuery{From: f.From, To: f.To, Versions: versionProtos(f.Versions), Journey: true})
	if ok {
		c := journeyCounts.Get().(*model.JourneyCounts)
		defer journeyCounts.Put(c) // after the answer is written: it shares c's memory
		c.Reset()
		if err := actors.AddJourneyReply(c, reply); err == nil {
			by := byLive
			for _, part := range rest {
				if err := a.journeyFacts(r, app.ID, part[0], part[1], f.Versions, c.AddFact); err != nil {
					a.internal(w, "query journey", err)
					return
				}
				by = byLiveStore
			}
			writeJourney(w, by, c.Graph(bigraph))
			return
		} else if a.Log != nil {
			// A reply this node cannot read (an app actor on a node of another version, during
			// a cluster's upgrade): the store answers instead.
			a.Log.Warn("dashboard: live journey reply not used; answering from the store", "app", app.ID.String(), "error", err.Error())
		}
	}
	g := model.NewJourneyGraph()
	if err := a.journeyFacts(r, app.ID, f.From, f.To, f.Versions, g.AddFact); err != nil {
		a.internal(w, "query journey", err)
		return
	}
	writeJourney(w, byStore, g.Graph(bigraph))
}

// journeyCounts keep the live journey answers' working memory between requests: a live answer
// then allocates almost nothing, and the garbage collections that the slowest answers wait
// for come less often (docs/benchmarks.md).
var journeyCounts = sync.Pool{New: func() any { return &model.JourneyCounts{} }}

// journeyFacts passes add the store's journey facts of the app in [from, to) and of one of
// versions (any when empty).
func (a *API) journeyFacts(r *http.Request, app uuid.UUID, from, to int64, versions []model.AppVersion, add func(*model.JourneyFact)) error {
	keep := model.KeepWalkEvent(from, to, versions)
	return a.Analytics.JourneyFacts(r.Context(), app, from, to, func(fact *model.JourneyFact) error {
		if keep(&fact.Event) {
			add(fact)
		}
		return nil
	})
}

// journeyBuffers hold answers' bytes between requests (a live journey is tens of KB).
var journeyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

// writeJourney answers j as httpx.JSON would (the same bytes as encoding/json, then a newline),
// written by j.AppendJSON into a pooled buffer.
func writeJourney(w http.ResponseWriter, by string, j model.JourneyJSON) {
	buf := journeyBuffers.Get().(*[]byte)
	b := append(j.AppendJSON((*buf)[:0]), '\n')
	w.Header().Set(HeaderAnsweredBy, by)
	httpx.JSONBytes(w, http.StatusOK, b)
	if cap(b) <= 1<<20 { // a rare huge answer is not kept
		*buf = b[:0]
		journeyBuffers.Put(buf)
	}
}

// groupJourney serves crashGroups/{id}/plots/journey and the ANR one: the journeys of the
// sessions that had the group's issue in the window, with only that group on the nodes. With
// attribute filters, only sessions where an issue event of the group matches them count.
func (a *API) groupJourney(class model.IssueClass) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		group, ok := groupParam(w, r)
		if !ok {
			return
		}
		app := appOf(r.Context())
		f, bigraph, ok := a.journeyParams(w, r, true)
		if !ok {
			return
		}
		var only map[uuid.UUID]bool
		var err error
		if !f.Unfiltered() {
			if only, err = a.issueSessions(r.Context(), &model.IssueQuery{EventFilter: f, Classes: []model.IssueClass{class}, GroupID: group}); err != nil {
				a.internal(w, "query journey sessions", err)
				return
			}
		}
		g := model.NewJourneyGraph()
		keep := model.KeepWalkEvent(f.From, f.To, f.Versions)
		err = a.Analytics.SessionWalks(r.Context(), &model.WalkQuery{App: app.ID, From: f.From, To: f.To, GroupID: group, Class: class},
			func(s uuid.UUID, events []model.WalkEvent) error {
				if only == nil || only[s] {
					g.AddSessionWalk(events, keep, group)
				}
				return nil
			})
		if err != nil {
			a.internal(w, "query journey", err)
			return
		}
		writeJourney(w, "store", g.Graph(bigraph).Only(model.JourneyKind(class)))
	}
}

// issueSessions lists the sessions of the issue events matching q (page by page).
func (a *API) issueSessions(ctx context.Context, q *model.IssueQuery) (map[uuid.UUID]bool, error) {
	out := map[uuid.UUID]bool{}
	page := model.EventPage{Limit: 5000}
	for {
		evs, err := a.Analytics.IssueEvents(ctx, q, page)
		if err != nil {
			return nil, err
		}
		for i := range evs {
			out[evs[i].SessionID] = true
		}
		if len(evs) < page.Limit {
			return out, nil
		}
		last := evs[len(evs)-1]
		page.Key = &model.EventKey{Timestamp: last.Timestamp, ID: last.ID}
	}
}

// metrics serves GET /apps/{id}/metrics (docs/architecture.md, "Algorithms"). Only the first of several versions is
// used, as the spec says.
func (a *API) metrics(w http.ResponseWriter, r *http.Request) {
	app := appOf(r.Context())
	_, f, ok := a.requestFilter(w, r, false)
	if !ok {
		return
	}
	var sel *model.AppVersion
	if len(f.Versions) > 0 {
		sel = &f.Versions[0]
	}
	in, err := a.Analytics.Metrics(r.Context(), app.ID, f.From, f.To, sel)
	if err != nil {
		a.internal(w, "query metrics", err)
		return
	}
	builds, err := a.Meta.Builds(r.Context(), app.ID)
	if err != nil {
		a.internal(w, "read builds", err)
		return
	}
	in.SelectedSize, in.HasSelectedSize, in.OtherSizes = buildSizes(builds, sel)
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, model.ComputeMetrics(&in))
}

// buildSizes picks one size per version (the most recently updated build of it; Builds lists
// newest first): the selected version's, and the others'.
func buildSizes(builds []model.Build, sel *model.AppVersion) (selected int64, has bool, others []int64) {
	seen := map[model.AppVersion]bool{}
	for _, b := range builds {
		v := model.AppVersion{Name: b.VersionName, Code: b.VersionCode}
		if seen[v] {
			continue
		}
		seen[v] = true
		if sel != nil && v == *sel {
			selected, has = b.Size, true
		} else {
			others = append(others, b.Size)
		}
	}
	return selected, has, others
}

type filtersJSON struct {
	Versions            []versionJSON     `json:"versions"`
	OSVersions          []model.OSVersion `json:"os_versions"`
	Countries           []string          `json:"countries"`
	DeviceManufacturers []string          `json:"device_manufacturers"`
	DeviceNames         []string          `json:"device_names"`
	Locales             []string          `json:"locales"`
	NetworkGenerations  []string          `json:"network_generations"`
	NetworkProviders    []string          `json:"network_providers"`
	NetworkTypes        []string          `json:"network_types"`
	UDAttrs             udAttrsJSON       `json:"ud_attrs"`
}

type versionJSON struct {
	Code string `json:"code"`
	Name string `json:"name"`
}

type udAttrsJSON struct {
	KeyTypes      []model.UDKey       `json:"key_types"`
	OperatorTypes map[string][]string `json:"operator_types"`
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// filters serves GET /apps/{id}/filters: values of every event, or of the issue events of
// the classes asked for — crash=1 or anr=1 (the contract), or the dashboard's `type` list
// (error, anr; model.IssueKinds) — and the user-defined attribute keys with ud_attr_keys=1
// (operator types always). span=1 (the dashboard's traces pages) is accepted and answered from
// every event: spans carry the attributes of their session's events. versions is null when
// the app has none (the dashboard's "no data"); the other lists are [] when empty.
func (a *API) filters(w http.ResponseWriter, r *http.Request) {
	classes, keys, err := filterClasses(&params{q: r.URL.Query()})
	if err != nil {
		a.fail(w, "read filters", err)
		return
	}
	fv, err := a.Analytics.FilterValues(r.Context(), appOf(r.Context()).ID, classes)
	if err != nil {
		a.internal(w, "query filters", err)
		return
	}
	out := filtersJSON{OSVersions: nonNil(fv.OSVersions), Countries: []string{},
		DeviceManufacturers: nonNil(fv.DeviceManufacturers), DeviceNames: nonNil(fv.DeviceNames),
		Locales: nonNil(fv.Locales), NetworkGenerations: nonNil(fv.NetworkGenerations),
		NetworkProviders: nonNil(fv.NetworkProviders), NetworkTypes: nonNil(fv.NetworkTypes),
		UDAttrs: udAttrsJSON{KeyTypes: []model.UDKey{}, OperatorTypes: model.OperatorTypes()}}
	for _, v := range fv.Versions {
		out.Versions = append(out.Versions, versionJSON{Code: v.Code, Name: v.Name})
	}
	if keys {
		out.UDAttrs.KeyTypes = nonNil(fv.UDKeys)
		sort.SliceStable(out.UDAttrs.KeyTypes, func(i, j int) bool { return out.UDAttrs.KeyTypes[i].Key < out.UDAttrs.KeyTypes[j].Key })
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, out)
}

// filterClasses reads the class selection of /filters (nil: every event) and ud_attr_keys.
func filterClasses(p *params) (classes []model.IssueClass, keys bool, err error) {
	var crash, anr bool
	if crash, err = p.flag("crash", false); err != nil {
		return nil, false, err
	}
	if anr, err = p.flag("anr", false); err != nil {
		return nil, false, err
	}
	if keys, err = p.flag("ud_attr_keys", false); err != nil {
		return nil, false, err
	}
	if _, err = p.flag("span", false); err != nil {
		return nil, false, err
	}
	types, err := p.list("type")
	if err != nil {
		return nil, false, err
	}
	switch {
	case crash && anr:
		return nil, false, bad("send crash=1 or anr=1, not both")
	case (crash || anr) && len(types) > 0:
		return nil, false, bad("send crash=1, anr=1 or type, not two of them")
	case crash:
		return []model.IssueClass{model.ClassCrash}, keys, nil
	case anr:
		return []model.IssueClass{model.ClassANR}, keys, nil
	case len(types) > 0:
		if classes, _, err = model.IssueKinds(types, nil); err != nil {
			return nil, false, badErr(err)
		}
	}
	return classes, keys, nil
}

// analyticsRoutes mounts the crash, ANR, error group, journey, metrics and filter endpoints of
// an app; every member may read them.
func (a *API) analyticsRoutes(r chi.Router) {
	crash, anr := []model.IssueClass{model.ClassCrash}, []model.IssueClass{model.ClassANR}
	r.Get("/crashGroups", a.groups(crash, false))
	r.Get("/anrGroups", a.groups(anr, false))
	r.Get("/errorGroups", a.groups(nil, true))
	r.Get("/errorGroups/plots/instances", a.errorOverviewPlot)
	r.Get("/errorGroups/{groupID}/errors", a.errorEvents)
	r.Get("/errorGroups/{groupID}/path", a.errorPath)
	r.Get("/errorGroups/{groupID}/plots/instances", a.groupPlot(nil, true))
	r.Get("/errorGroups/{groupID}/plots/distribution", a.errorDistribution)
	r.Get("/crashGroups/plots/instances", a.overviewPlot(model.ClassCrash))
	r.Get("/anrGroups/plots/instances", a.overviewPlot(model.ClassANR))
	r.Get("/crashGroups/{groupID}/crashes", a.instances(model.ClassCrash))
	r.Get("/anrGroups/{groupID}/anrs", a.instances(model.ClassANR))
	r.Get("/crashGroups/{groupID}/path", a.path(model.ClassCrash))
	r.Get("/anrGroups/{groupID}/path", a.path(model.ClassANR))
	r.Get("/crashGroups/{groupID}/plots/instances", a.groupPlot(crash, false))
	r.Get("/anrGroups/{groupID}/plots/instances", a.groupPlot(anr, false))
	r.Get("/crashGroups/{groupID}/plots/journey", a.groupJourney(model.ClassCrash))
	r.Get("/anrGroups/{groupID}/plots/journey", a.groupJourney(model.ClassANR))
	r.Get("/journey", a.journey)
	r.Get("/metrics", a.metrics)
	r.Get("/filters", a.filters)
}
