package dashboard

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// The session endpoints (issue #12): the list of sessions, its plot and one session's
// timeline. Every answer comes from the event store (sinks.Sessions); the app actors keep no
// session aggregates. The list and the plot select sessions as model.SessionQuery says: by
// their events in the window, with the filters every analytics endpoint takes (versions, OS,
// device, locale and network lists, ud_expression, filter_short_code), the session kinds
// (type, severity, bug_report, user_interaction, foreground, background: alternatives) and
// free_text.

// sessionRoutes mounts the session endpoints of an app; every member may read them.
func (a *API) sessionRoutes(r chi.Router) {
	r.Get("/sessions", a.sessionList)
	r.Get("/sessions/plots/instances", a.sessionPlot)
	r.Get("/sessions/{sessionID}", a.sessionDetail)
}

// sessionStore answers 500 when the event store has no session queries.
func (a *API) sessionStore(w http.ResponseWriter) (sinks.Sessions, bool) {
	s, ok := a.Events.(sinks.Sessions)
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "this event store does not answer session queries")
	}
	return s, ok
}

// sessionQuery reads the query of /sessions and its plot: the window and the common filters,
// os_names/os_versions, the session kinds and free_text.
func (a *API) sessionQuery(r *http.Request) (*params, *model.SessionQuery, error) {
	p, err := a.readParams(r)
	if err != nil {
		return nil, nil, err
	}
	f, err := p.filter(appOf(r.Context()), a.now(), true)
	if err != nil {
		return nil, nil, err
	}
	q := &model.SessionQuery{EventFilter: f}
	if q.OSVersions, err = p.osVersions(); err != nil {
		return nil, nil, err
	}
	if err := sessionKinds(p, q); err != nil {
		return nil, nil, err
	}
	if q.FreeText, err = p.freeText(); err != nil {
		return nil, nil, err
	}
	return p, q, nil
}

// sessionKinds reads the session kinds: `type` (error — a crash or a handled exception —,
// crash, handled, anr) and `severity` (fatal, unhandled, handled) select sessions with such an
// issue (either alone is enough: type without severity is any severity, severity without type
// any class); bug_report, user_interaction, foreground and background are 0/1 flags.
func sessionKinds(p *params, q *model.SessionQuery) error {
	types, err := p.list("type")
	if err != nil {
		return err
	}
	sevs, err := p.list("severity")
	if err != nil {
		return err
	}
	if q.Issue = len(types) > 0 || len(sevs) > 0; q.Issue {
		// The same vocabulary and meaning as errorGroups: severities narrow exceptions only.
		if q.Classes, q.Severities, err = model.IssueKinds(types, sevs); err != nil {
			return bad("%v", err)
		}
	}
	for _, fl := range []struct {
		name string
		dst  *bool
	}{{"bug_report", &q.BugReport}, {"user_interaction", &q.UserInteraction}, {"foreground", &q.Foreground}, {"background", &q.Background}} {
		if *fl.dst, err = p.flag(fl.name, false); err != nil {
			return err
		}
	}
	return nil
}

type sessionAttrJSON struct {
	AppVersion         string `json:"app_version"`
	AppBuild           string `json:"app_build"`
	OSName             string `json:"os_name"`
	OSVersion          string `json:"os_version"`
	DeviceName         string `json:"device_name"`
	DeviceModel        string `json:"device_model"`
	DeviceManufacturer string `json:"device_manufacturer"`
	UserID             string `json:"user_id"`
}

type sessionJSON struct {
	SessionID       string          `json:"session_id"`
	AppID           string          `json:"app_id"`
	Attribute       sessionAttrJSON `json:"attribute"`
	FirstEventTime  string          `json:"first_event_time"`
	LastEventTime   string          `json:"last_event_time"`
	Duration        int64           `json:"duration"`
	MatchedFreeText string          `json:"matched_free_text"`
}

// sessionList serves GET /apps/{id}/sessions: a page of the selected sessions, newest first
// (first event in the window, then session id), paged by limit (1–1000, default 10) and offset.
func (a *API) sessionList(w http.ResponseWriter, r *http.Request) {
	st, ok := a.sessionStore(w)
	if !ok {
		return
	}
	p, q, err := a.sessionQuery(r)
	if err != nil {
		a.fail(w, "read filters", err)
		return
	}
	limit, offset, err := offsetPage(p)
	if err != nil {
		a.fail(w, "read page", err)
		return
	}
	page, err := st.SessionPage(r.Context(), q, limit+1, offset)
	if err != nil {
		a.internal(w, "query sessions", err)
		return
	}
	app := appOf(r.Context()).ID.String()
	out := pageOf[sessionJSON]{Meta: offsetMeta(len(page), limit, offset), Results: []sessionJSON{}}
	for i := range page[:min(len(page), limit)] {
		s := &page[i]
		d := &s.Device
		js := sessionJSON{SessionID: s.SessionID.String(), AppID: app, FirstEventTime: rfc3339(s.First),
			LastEventTime: rfc3339(s.Last), Duration: (s.Last - s.First) / int64(time.Millisecond),
			Attribute: sessionAttrJSON{AppVersion: d.AppVersion, AppBuild: d.AppBuild, OSName: d.OSName, OSVersion: d.OSVersion,
				DeviceName: d.DeviceName, DeviceModel: d.DeviceModel, DeviceManufacturer: d.DeviceManufacturer, UserID: s.UserID}}
		if q.FreeText != "" {
			js.MatchedFreeText = s.Match.Text(q.FreeText)
		}
		out.Results = append(out.Results, js)
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, out)
}

// sessionPlot serves GET /apps/{id}/sessions/plots/instances: the selected sessions per version
// (series "name (code)", ordered by id) and bucket of their first event in the window
// (plot_time_group in timezone; ascending), each session counted once: the histogram of the
// list.
func (a *API) sessionPlot(w http.ResponseWriter, r *http.Request) {
	st, ok := a.sessionStore(w)
	if !ok {
		return
	}
	p, q, err := a.sessionQuery(r)
	if err != nil {
		a.fail(w, "read filters", err)
		return
	}
	b, err := model.ParseBuckets(p.q.Get("plot_time_group"), p.q.Get("timezone"))
	if err != nil {
		httpx.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	cells, err := st.SessionPlot(r.Context(), q, b)
	if err != nil {
		a.internal(w, "query session plot", err)
		return
	}
	rows := make([]model.PlotRow, len(cells))
	for i, c := range cells {
		rows[i] = model.PlotRow{Version: c.Version, Datetime: b.Label(time.Unix(0, c.Bucket)), Instances: c.Count}
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, model.BuildPlot(rows, model.PlotNoRate))
}

type sessionAttachmentJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Size     *int64 `json:"size"` // null when the SDK sent none
	Key      string `json:"key"`
	Location string `json:"location"` // "" until the file reached the blob store
}

type sessionTraceJSON struct {
	TraceID    string `json:"trace_id"`
	TraceName  string `json:"trace_name"`
	ThreadName string `json:"thread_name"`
	StartTime  string `json:"start_time"`
	EndTime    string `json:"end_time"`
	Duration   uint64 `json:"duration"`
}

type sessionDetailJSON struct {
	SessionID           string                      `json:"session_id"`
	AppID               string                      `json:"app_id"`
	Attribute           any                         `json:"attribute"`
	Duration            int64                       `json:"duration"`
	CPUUsage            []map[string]any            `json:"cpu_usage"`
	MemoryUsage         []map[string]any            `json:"memory_usage"`
	MemoryUsageAbsolute []map[string]any            `json:"memory_usage_absolute"`
	Threads             map[string][]map[string]any `json:"threads"`
	Traces              []sessionTraceJSON          `json:"traces"`
}

// sessionDetail serves GET /apps/{id}/sessions/{sessionID}: the session's timeline (model.BuildTimeline)
// over all its events and root spans, whatever their time; 404 when it has neither. Each item's
// attachments carry a download location valid for DownloadTTL.
func (a *API) sessionDetail(w http.ResponseWriter, r *http.Request) {
	id, ok := parseID(w, r, "sessionID", "session")
	if !ok {
		return
	}
	st, ok := a.sessionStore(w)
	if !ok {
		return
	}
	app := appOf(r.Context()).ID
	events, err := st.SessionEvents(r.Context(), app, id)
	if err != nil {
		a.internal(w, "query session events", err)
		return
	}
	roots, err := st.SessionRootSpans(r.Context(), app, id)
	if err != nil {
		a.internal(w, "query session traces", err)
		return
	}
	if len(events) == 0 && len(roots) == 0 {
		httpx.Error(w, http.StatusNotFound, fmt.Sprintf("session %s: no event or trace of this app has it", id))
		return
	}
	tl := model.BuildTimeline(events, roots)
	out := sessionDetailJSON{SessionID: id.String(), AppID: app.String(), Attribute: model.AttributesJSON(&tl.Attributes),
		Duration: tl.Duration, CPUUsage: tl.CPUUsage, MemoryUsage: tl.MemoryUsage, MemoryUsageAbsolute: tl.MemoryUsageAbsolute,
		Threads: make(map[string][]map[string]any, len(tl.Threads)), Traces: make([]sessionTraceJSON, len(tl.Traces))}
	ttl := a.DownloadTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	for name, items := range tl.Threads {
		list := make([]map[string]any, len(items))
		for i := range items {
			it := &items[i]
			m := make(map[string]any, len(it.Fields)+2)
			for k, v := range it.Fields {
				m[k] = v
			}
			m["user_defined_attribute"] = udJSON(it.UserDefined)
			atts := make([]sessionAttachmentJSON, 0, len(it.Attachments))
			for _, at := range it.Attachments {
				aj := sessionAttachmentJSON{ID: at.ID.String(), Name: at.Name, Type: at.Type, Key: at.BlobKey}
				if at.Size != model.SizeUnknown {
					size := at.Size
					aj.Size = &size
				}
				if at.BlobKey != "" && a.Blobs != nil {
					if aj.Location, err = a.Blobs.SignDownload(r.Context(), at.BlobKey, ttl); err != nil {
						a.internal(w, "sign attachment download", err)
						return
					}
				}
				atts = append(atts, aj)
			}
			m["attachments"] = atts
			list[i] = m
		}
		out.Threads[name] = list
	}
	for i, t := range tl.Traces {
		out.Traces[i] = sessionTraceJSON{TraceID: t.TraceID, TraceName: t.TraceName, ThreadName: t.ThreadName,
			StartTime: rfc3339(t.StartTime), EndTime: rfc3339(t.EndTime), Duration: t.Duration}
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, out)
}
