package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// The bug report endpoints (issue #12): a page of an app's bug reports, their count per
// version and bucket, one report, and its status. Reports are bug_report events, read from the
// event store (sinks.BugReports, EventStore.BugReport); their status (0 open, 1 closed) is kept
// in the metadata store (sinks.BugReportStatuses). A status filter reads the app's closed ids
// from the metadata store and hands them to the event store's query. Every filter means what
// it means on the other endpoints (window, versions, OS, attribute lists, ud_expression), plus
// bug_report_statuses and free_text (model.MatchFreeText).

// bugReportRoutes mounts the bug report endpoints (issue #12): list, plot, one report and its
// status. Every member reads them; changing a status needs the developer role or higher.
func (a *API) bugReportRoutes(r chi.Router) {
	r.Get("/bugReports", a.bugReports)
	r.Get("/bugReports/plots/instances", a.bugReportPlot)
	r.Get("/bugReports/{bugReportID}", a.bugReport)
	r.With(need(model.RoleDeveloper)).Patch("/bugReports/{bugReportID}", a.setBugReportStatus)
}

// bugStores returns the event store's bug report queries and the metadata store's statuses,
// answering 500 when a store has none.
func (a *API) bugStores(w http.ResponseWriter) (sinks.BugReports, sinks.BugReportStatuses, bool) {
	br, ok := a.Events.(sinks.BugReports)
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "this event store does not answer bug report queries")
		return nil, nil, false
	}
	bs, ok := a.Meta.(sinks.BugReportStatuses)
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "this metadata store does not keep bug report statuses")
		return nil, nil, false
	}
	return br, bs, true
}

// bugReportQuery reads the filters of the list and the plot: the window and the common
// filters, os_names/os_versions, bug_report_statuses and free_text. When the query keeps one
// status, the app's closed ids are read from the metadata store into it.
func (a *API) bugReportQuery(r *http.Request, bs sinks.BugReportStatuses) (*params, *model.BugReportQuery, error) {
	p, err := a.readParams(r)
	if err != nil {
		return nil, nil, err
	}
	f, err := p.filter(appOf(r.Context()), a.now(), true)
	if err != nil {
		return nil, nil, err
	}
	q := &model.BugReportQuery{EventFilter: f}
	if q.OSVersions, err = p.osVersions(); err != nil {
		return nil, nil, err
	}
	for _, v := range p.q["bug_report_statuses"] {
		st, ok := model.ParseBugReportStatus(v)
		if !ok {
			return nil, nil, bad("bug_report_statuses %q must be 0 (open) or 1 (closed); repeat the parameter for both", v)
		}
		q.Statuses = append(q.Statuses, st)
	}
	if q.FreeText, err = p.freeText(); err != nil {
		return nil, nil, err
	}
	if _, ok := q.StatusFilter(); ok {
		ids, err := bs.ClosedBugReports(r.Context(), f.App)
		if err != nil {
			return nil, nil, err
		}
		q.Closed = make(map[uuid.UUID]struct{}, len(ids))
		for _, id := range ids {
			q.Closed[id] = struct{}{}
		}
	}
	return p, q, nil
}

type bugAttachmentJSON struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
	Type string    `json:"type"`
	// Size is the size the SDK reported, null when it sent none.
	Size     *int64 `json:"size"`
	Key      string `json:"key"`
	Location string `json:"location"`
}

type bugReportJSON struct {
	SessionID            uuid.UUID             `json:"session_id"`
	AppID                uuid.UUID             `json:"app_id"`
	EventID              uuid.UUID             `json:"event_id"`
	Status               model.BugReportStatus `json:"status"`
	Description          string                `json:"description"`
	Timestamp            string                `json:"timestamp"`
	UpdatedAt            string                `json:"updated_at"`
	Attribute            json.RawMessage       `json:"attribute"`
	UserDefinedAttribute json.RawMessage       `json:"user_defined_attribute"`
	Attachments          []bugAttachmentJSON   `json:"attachments"`
}

type bugReportItemJSON struct {
	bugReportJSON
	MatchedFreeText string `json:"matched_free_text"`
}

// bugReportOf renders one report with its state (the zero value when its status was never
// set: open, updated when reported); attachments that have a place in the blob store get a
// download location valid for DownloadTTL.
func (a *API) bugReportOf(r *http.Request, e *model.Event, st model.BugReportState, known bool) (bugReportJSON, error) {
	out := bugReportJSON{SessionID: e.SessionID, AppID: e.AppID, EventID: e.ID, Status: model.BugReportOpen,
		Description: model.BugReportDescription(e.Payload), Timestamp: rfc3339(e.Timestamp), UpdatedAt: rfc3339(e.Timestamp),
		Attribute: model.AttributesJSON(&e.Attribute), UserDefinedAttribute: udJSON(e.UserDefined),
		Attachments: make([]bugAttachmentJSON, 0, len(e.Attachments))}
	if known {
		out.Status, out.UpdatedAt = st.Status, st.UpdatedAt.UTC().Format(time.RFC3339Nano)
	}
	ttl := a.DownloadTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	for _, at := range e.Attachments {
		aj := bugAttachmentJSON{ID: at.ID, Name: at.Name, Type: at.Type, Key: at.BlobKey}
		if at.Size != model.SizeUnknown {
			aj.Size = &at.Size
		}
		if at.BlobKey != "" && a.Blobs != nil {
			loc, err := a.Blobs.SignDownload(r.Context(), at.BlobKey, ttl)
			if err != nil {
				return out, err
			}
			aj.Location = loc
		}
		out.Attachments = append(out.Attachments, aj)
	}
	return out, nil
}

// bugReports serves GET /apps/{id}/bugReports: a page of the reports the query selects,
// newest first (timestamp, then id), paged by limit (1–1000, default 10) and offset.
func (a *API) bugReports(w http.ResponseWriter, r *http.Request) {
	br, bs, ok := a.bugStores(w)
	if !ok {
		return
	}
	p, q, err := a.bugReportQuery(r, bs)
	if err != nil {
		a.fail(w, "read filters", err)
		return
	}
	limit, offset, err := offsetPage(p)
	if err != nil {
		a.fail(w, "read page", err)
		return
	}
	evs, err := br.BugReports(r.Context(), q, limit+1, offset)
	if err != nil {
		a.internal(w, "query bug reports", err)
		return
	}
	page := evs[:min(len(evs), limit)]
	ids := make([]uuid.UUID, len(page))
	for i := range page {
		ids[i] = page[i].ID
	}
	states, err := bs.BugReportStates(r.Context(), q.App, ids)
	if err != nil {
		a.internal(w, "read bug report statuses", err)
		return
	}
	out := pageOf[bugReportItemJSON]{Meta: offsetMeta(len(evs), limit, offset), Results: []bugReportItemJSON{}}
	for i := range page {
		e := &page[i]
		st, known := states[e.ID]
		item, err := a.bugReportOf(r, e, st, known)
		if err != nil {
			a.internal(w, "render bug report", err)
			return
		}
		out.Results = append(out.Results, bugReportItemJSON{bugReportJSON: item, MatchedFreeText: model.MatchedFreeText(e, q.FreeText)})
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, out)
}

type bugPointJSON struct {
	Datetime  string `json:"datetime"`
	Instances uint64 `json:"instances"`
}

type bugSeriesJSON struct {
	ID   string         `json:"id"`
	Data []bugPointJSON `json:"data"`
}

// bugReportPlot serves GET /apps/{id}/bugReports/plots/instances: per version (series "name
// (code)", ordered by id) and bucket of plot_time_group in timezone (ascending), how many of
// the selected reports fall in it.
func (a *API) bugReportPlot(w http.ResponseWriter, r *http.Request) {
	br, bs, ok := a.bugStores(w)
	if !ok {
		return
	}
	p, q, err := a.bugReportQuery(r, bs)
	if err != nil {
		a.fail(w, "read filters", err)
		return
	}
	b, err := model.ParseBuckets(p.q.Get("plot_time_group"), p.q.Get("timezone"))
	if err != nil {
		httpx.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	counts, err := br.BugReportCounts(r.Context(), q, b)
	if err != nil {
		a.internal(w, "query bug report counts", err)
		return
	}
	series := map[string]*bugSeriesJSON{}
	out := []*bugSeriesJSON{}
	for _, c := range counts { // by bucket, so each series' points come in time order
		id := model.SeriesID(c.Version.Name, c.Version.Code)
		s := series[id]
		if s == nil {
			s = &bugSeriesJSON{ID: id}
			series[id] = s
			out = append(out, s)
		}
		s.Data = append(s.Data, bugPointJSON{Datetime: b.Label(time.Unix(0, c.Bucket)), Instances: c.Count})
	}
	slices.SortFunc(out, func(x, y *bugSeriesJSON) int { return strings.Compare(x.ID, y.ID) })
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, out)
}

// reportOf reads the report named by the path from the event store: 400 for an id that is
// not a UUID, 404 when the app has no bug report with it (no event, or an event of another
// type).
func (a *API) reportOf(w http.ResponseWriter, r *http.Request) (model.Event, bool) {
	id, ok := parseID(w, r, "bugReportID", "bug report")
	if !ok {
		return model.Event{}, false
	}
	e, err := a.Events.BugReport(r.Context(), appOf(r.Context()).ID, id)
	if errors.Is(err, sinks.ErrNotFound) {
		httpx.Error(w, http.StatusNotFound, "bug report "+id.String()+": not found")
		return model.Event{}, false
	}
	if err != nil {
		a.internal(w, "read bug report", err)
		return model.Event{}, false
	}
	return e, true
}

// bugReport serves GET /apps/{id}/bugReports/{bugReportID}: one report with its status and its
// attachments' download locations.
func (a *API) bugReport(w http.ResponseWriter, r *http.Request) {
	_, bs, ok := a.bugStores(w)
	if !ok {
		return
	}
	e, ok := a.reportOf(w, r)
	if !ok {
		return
	}
	states, err := bs.BugReportStates(r.Context(), e.AppID, []uuid.UUID{e.ID})
	if err != nil {
		a.internal(w, "read bug report status", err)
		return
	}
	st, known := states[e.ID]
	out, err := a.bugReportOf(r, &e, st, known)
	if err != nil {
		a.internal(w, "render bug report", err)
		return
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, out)
}

// setBugReportStatus serves PATCH /apps/{id}/bugReports/{bugReportID} with {"status": 0|1}
// (0 reopens, 1 closes; the same status again only moves updated_at) and answers the report
// as GET does. The role is checked before anything else; then the id (400), the body (400)
// and the report (404).
func (a *API) setBugReportStatus(w http.ResponseWriter, r *http.Request) {
	_, bs, ok := a.bugStores(w)
	if !ok {
		return
	}
	if _, ok := parseID(w, r, "bugReportID", "bug report"); !ok {
		return
	}
	var req struct {
		Status json.RawMessage `json:"status"`
	}
	if !decode(w, r, &req) {
		return
	}
	var st model.BugReportStatus
	switch string(bytes.TrimSpace(req.Status)) {
	case "0":
		st = model.BugReportOpen
	case "1":
		st = model.BugReportClosed
	case "", "null":
		httpx.Error(w, http.StatusBadRequest, `status is required: {"status": 0} reopens the report, {"status": 1} closes it`)
		return
	default:
		v := string(req.Status)
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		httpx.Error(w, http.StatusBadRequest, "status "+v+" must be 0 (open) or 1 (closed)")
		return
	}
	e, ok := a.reportOf(w, r)
	if !ok {
		return
	}
	// Microseconds: what every metadata store keeps, so a later GET shows the same time.
	state := model.BugReportState{AppID: e.AppID, ID: e.ID, Status: st, UpdatedAt: a.now().Truncate(time.Microsecond)}
	if err := bs.SetBugReportStatus(r.Context(), state); err != nil {
		a.storeErr(w, "set bug report status", err)
		return
	}
	out, err := a.bugReportOf(r, &e, state, true)
	if err != nil {
		a.internal(w, "render bug report", err)
		return
	}
	httpx.JSON(w, http.StatusOK, out)
}
