package dashboard

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// The span and trace endpoints (issue #13): root span names, a page of root spans of one name,
// their duration percentiles per version and bucket, and one trace. Every answer comes from the
// event store (sinks.Spans); the app actors keep no span aggregates.

// maxRootSpanNames bounds the names /spans/roots/names lists.
const maxRootSpanNames = 5000

var traceIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// spans returns the store's span queries: Spans, else Events when it implements them.
func (a *API) spans() (sinks.Spans, bool) {
	if a.Spans != nil {
		return a.Spans, true
	}
	s, ok := a.Events.(sinks.Spans)
	return s, ok
}

// spanStore answers 500 when the event store has no span queries.
func (a *API) spanStore(w http.ResponseWriter) (sinks.Spans, bool) {
	s, ok := a.spans()
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "this event store does not answer span queries")
	}
	return s, ok
}

// spanRoutes mounts the span and trace endpoints of an app; every member may read them.
func (a *API) spanRoutes(r chi.Router) {
	r.Get("/spans/roots/names", a.rootSpanNames)
	r.Get("/spans", a.rootSpans)
	r.Get("/spans/plots/metrics", a.spanMetricsPlot)
	r.Get("/traces/{traceID}", a.trace)
}

// rootSpanNames serves GET /apps/{id}/spans/roots/names: every root span name of the app, most
// recently seen first, at most maxRootSpanNames.
func (a *API) rootSpanNames(w http.ResponseWriter, r *http.Request) {
	st, ok := a.spanStore(w)
	if !ok {
		return
	}
	names, err := st.RootSpanNames(r.Context(), appOf(r.Context()).ID, maxRootSpanNames)
	if err != nil {
		a.internal(w, "query root span names", err)
		return
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, struct {
		Results []string `json:"results"`
	}{nonNil(names)})
}

// spanQuery reads the query of /spans and /spans/plots/metrics: span_name (required), the
// window, versions, os_names/os_versions, the attribute lists, ud_expression and span_statuses.
func (a *API) spanQuery(r *http.Request) (*params, *model.SpanQuery, error) {
	p, err := a.readParams(r)
	if err != nil {
		return nil, nil, err
	}
	f, err := p.filter(appOf(r.Context()), a.now(), true)
	if err != nil {
		return nil, nil, err
	}
	q := &model.SpanQuery{EventFilter: f}
	if q.Name, err = p.str("span_name"); err != nil {
		return nil, nil, err
	}
	// The reference dashboard encodes span_name twice (its API decodes it again): a name that
	// still reads as percent-encoded is decoded once more, as there.
	if n, err := url.PathUnescape(q.Name); err == nil {
		q.Name = n
	}
	if q.Name == "" {
		return nil, nil, bad("span_name is required: the name of the root spans to show (see /apps/{id}/spans/roots/names)")
	}
	if q.OSVersions, err = p.osVersions(); err != nil {
		return nil, nil, err
	}
	if q.Statuses, err = spanStatuses(p.q["span_statuses"]); err != nil {
		return nil, nil, err
	}
	return p, q, nil
}

// osVersions reads os_names and os_versions: both or neither, paired item by item as versions
// and version_codes are.
func (p *params) osVersions() ([]model.OSVersion, error) {
	names, err := p.list("os_names")
	if err != nil {
		return nil, err
	}
	vers, err := p.list("os_versions")
	if err != nil {
		return nil, err
	}
	if len(names) != len(vers) {
		if len(names) == 0 || len(vers) == 0 {
			return nil, bad("send os_names and os_versions together")
		}
		return nil, bad("os_names has %d items and os_versions %d: they must pair up", len(names), len(vers))
	}
	out := make([]model.OSVersion, len(names))
	for i := range names {
		out[i] = model.OSVersion{Name: names[i], Version: vers[i]}
	}
	return out, nil
}

// spanStatuses reads the repeated span_statuses parameter: each 0 (unset), 1 (ok) or 2 (error).
func spanStatuses(vs []string) ([]uint8, error) {
	var out []uint8
	for _, v := range vs {
		switch v {
		case "0", "1", "2":
			out = append(out, v[0]-'0')
		default:
			return nil, bad("span_statuses %q must be 0 (unset), 1 (ok) or 2 (error); repeat the parameter for several", v)
		}
	}
	return out, nil
}

type rootSpanJSON struct {
	AppID              string `json:"app_id"`
	SpanName           string `json:"span_name"`
	SpanID             string `json:"span_id"`
	TraceID            string `json:"trace_id"`
	Status             uint8  `json:"status"`
	StartTime          string `json:"start_time"`
	EndTime            string `json:"end_time"`
	Duration           uint64 `json:"duration"`
	AppVersion         string `json:"app_version"`
	AppBuild           string `json:"app_build"`
	OSName             string `json:"os_name"`
	OSVersion          string `json:"os_version"`
	DeviceModel        string `json:"device_model"`
	DeviceManufacturer string `json:"device_manufacturer"`
}

// rootSpans serves GET /apps/{id}/spans: a page of the root spans the query selects, newest
// first, paged by limit and offset.
func (a *API) rootSpans(w http.ResponseWriter, r *http.Request) {
	st, ok := a.spanStore(w)
	if !ok {
		return
	}
	p, q, err := a.spanQuery(r)
	if err != nil {
		a.fail(w, "read filters", err)
		return
	}
	limit, offset, err := offsetPage(p)
	if err != nil {
		a.fail(w, "read page", err)
		return
	}
	spans, err := st.RootSpans(r.Context(), q, limit+1, offset)
	if err != nil {
		a.internal(w, "query spans", err)
		return
	}
	out := pageOf[rootSpanJSON]{Meta: offsetMeta(len(spans), limit, offset), Results: []rootSpanJSON{}}
	for i := range spans[:min(len(spans), limit)] {
		s := &spans[i]
		out.Results = append(out.Results, rootSpanJSON{AppID: s.AppID.String(), SpanName: s.Name, SpanID: s.SpanID,
			TraceID: s.TraceID, Status: s.Status, StartTime: rfc3339(s.StartTime), EndTime: rfc3339(s.EndTime),
			Duration: s.Duration, AppVersion: s.Attributes.AppVersion, AppBuild: s.Attributes.AppBuild,
			OSName: s.Attributes.OSName, OSVersion: s.Attributes.OSVersion, DeviceModel: s.Attributes.DeviceModel,
			DeviceManufacturer: s.Attributes.DeviceManufacturer})
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, out)
}

type spanPointJSON struct {
	Datetime string `json:"datetime"`
	P50      uint64 `json:"p50"`
	P90      uint64 `json:"p90"`
	P95      uint64 `json:"p95"`
	P99      uint64 `json:"p99"`
}

type spanSeriesJSON struct {
	ID   string          `json:"id"`
	Data []spanPointJSON `json:"data"`
}

// spanMetricsPlot serves GET /apps/{id}/spans/plots/metrics: per version (series "name
// (code)", ordered by id) and bucket of plot_time_group in timezone (model.Buckets; in time
// order), the 50th, 90th, 95th and 99th percentiles of the selected root spans' durations in
// milliseconds.
func (a *API) spanMetricsPlot(w http.ResponseWriter, r *http.Request) {
	st, ok := a.spanStore(w)
	if !ok {
		return
	}
	p, q, err := a.spanQuery(r)
	if err != nil {
		a.fail(w, "read filters", err)
		return
	}
	by, err := p.buckets()
	if err != nil {
		a.fail(w, "read plot buckets", err)
		return
	}
	cells, err := st.RootSpanDurations(r.Context(), q, by)
	if err != nil {
		a.internal(w, "query span durations", err)
		return
	}
	series := map[string]*spanSeriesJSON{}
	out := []*spanSeriesJSON{}
	for _, c := range cells {
		id := model.SeriesID(c.Version.Name, c.Version.Code)
		s := series[id]
		if s == nil {
			s = &spanSeriesJSON{ID: id}
			series[id] = s
			out = append(out, s)
		}
		s.Data = append(s.Data, spanPointJSON{Datetime: by.Label(time.Unix(0, c.Bucket)),
			P50: c.P50, P90: c.P90, P95: c.P95, P99: c.P99})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	for _, s := range out {
		model.SortByLabel(s.Data, func(p *spanPointJSON) string { return p.Datetime })
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, out)
}

type checkpointJSON struct {
	Name      string `json:"name"`
	Timestamp string `json:"timestamp"`
}

type traceSpanJSON struct {
	SpanName                       string           `json:"span_name"`
	SpanID                         string           `json:"span_id"`
	ParentID                       string           `json:"parent_id"`
	Status                         uint8            `json:"status"`
	StartTime                      string           `json:"start_time"`
	EndTime                        string           `json:"end_time"`
	Duration                       uint64           `json:"duration"`
	ThreadName                     string           `json:"thread_name"`
	DeviceLowPowerMode             bool             `json:"device_low_power_mode"`
	DeviceThermalThrottlingEnabled bool             `json:"device_thermal_throttling_enabled"`
	UserDefinedAttributes          json.RawMessage  `json:"user_defined_attributes"`
	Checkpoints                    []checkpointJSON `json:"checkpoints"`
}

type traceJSON struct {
	AppID              string          `json:"app_id"`
	TraceID            string          `json:"trace_id"`
	SessionID          string          `json:"session_id"`
	UserID             string          `json:"user_id"`
	StartTime          string          `json:"start_time"`
	EndTime            string          `json:"end_time"`
	Duration           int64           `json:"duration"`
	AppVersion         string          `json:"app_version"`
	OSVersion          string          `json:"os_version"`
	DeviceManufacturer string          `json:"device_manufacturer"`
	DeviceModel        string          `json:"device_model"`
	NetworkType        string          `json:"network_type"`
	Spans              []traceSpanJSON `json:"spans"`
}

// trace serves GET /apps/{id}/traces/{traceID}: every span of the trace, newest first, with
// the trace's extent and the session, version, device and network of its root span (the
// newest root when there are several; the newest span when none is a root).
func (a *API) trace(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "traceID")
	if !traceIDPattern.MatchString(id) {
		httpx.Error(w, http.StatusBadRequest, "trace id "+strconv.Quote(id)+" is not a trace id (32 lowercase hexadecimal characters)")
		return
	}
	st, ok := a.spanStore(w)
	if !ok {
		return
	}
	spans, err := st.Trace(r.Context(), appOf(r.Context()).ID, id)
	if err != nil {
		a.storeErr(w, "trace "+id, err)
		return
	}
	if len(spans) == 0 { // the contract says ErrNotFound; be safe all the same
		httpx.Error(w, http.StatusNotFound, "trace "+id+": not found")
		return
	}
	head := &spans[0]
	start, end := spans[0].StartTime, spans[0].EndTime
	for i := range spans {
		s := &spans[i]
		if s.ParentID == "" && head.ParentID != "" {
			head = s
		}
		start, end = min(start, s.StartTime), max(end, s.EndTime)
	}
	at := &head.Attributes
	out := traceJSON{AppID: head.AppID.String(), TraceID: id, SessionID: head.SessionID.String(), UserID: at.UserID,
		StartTime: rfc3339(start), EndTime: rfc3339(end), Duration: max(end-start, 0) / int64(time.Millisecond),
		AppVersion: at.AppVersion + "(" + at.AppBuild + ")", OSVersion: at.OSName + " " + at.OSVersion,
		DeviceManufacturer: at.DeviceManufacturer, DeviceModel: at.DeviceModel, NetworkType: at.NetworkType,
		Spans: make([]traceSpanJSON, len(spans))}
	for i := range spans {
		s := &spans[i]
		cps := make([]checkpointJSON, len(s.Checkpoints))
		for j, c := range s.Checkpoints {
			cps[j] = checkpointJSON{Name: c.Name, Timestamp: rfc3339(c.Timestamp)}
		}
		out.Spans[i] = traceSpanJSON{SpanName: s.Name, SpanID: s.SpanID, ParentID: s.ParentID, Status: s.Status,
			StartTime: rfc3339(s.StartTime), EndTime: rfc3339(s.EndTime), Duration: s.Duration,
			ThreadName: s.Attributes.ThreadName, DeviceLowPowerMode: s.Attributes.DeviceLowPowerMode,
			DeviceThermalThrottlingEnabled: s.Attributes.DeviceThermalThrottlingEnabled,
			UserDefinedAttributes:          udJSON(s.UserDefined), Checkpoints: cps}
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, out)
}

// udJSON renders user-defined attributes as one flat object of typed values ({} for none):
// strings as strings, int64 and float64 as the numbers stored, booleans as booleans.
func udJSON(attrs []model.UDAttr) json.RawMessage {
	m := make(map[string]any, len(attrs))
	for _, u := range attrs {
		switch u.Type {
		case model.UDInt64, model.UDFloat64:
			m[u.Key] = json.Number(u.Value)
		case model.UDBool:
			m[u.Key] = u.Value == "true"
		default:
			m[u.Key] = u.Value
		}
	}
	b, err := json.Marshal(m)
	if err != nil { // a stored number that is not a JSON number: keep the answer valid
		for _, u := range attrs {
			if u.Type == model.UDInt64 || u.Type == model.UDFloat64 {
				if !json.Valid([]byte(u.Value)) {
					m[u.Key] = u.Value
				}
			}
		}
		b, _ = json.Marshal(m)
	}
	return b
}
