package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// The errorGroups endpoints beside the list (issues.go): the overview plot and a group's
// events, common path, plot and attribute distribution, answered in the shapes the reference
// web dashboard reads (issue #15). A group here is every class of its id — crashes, handled
// exceptions and ANRs together — as the dashboard sends no type or severity to the detail
// routes. An unknown group id is an empty answer, not a 404: the dashboard shows "No Data".

// errorPointJSON is a point of the errorGroups overview plot. The reference always sends
// error_free_sessions as 0, and the dashboard does not read it.
type errorPointJSON struct {
	Datetime          string `json:"datetime"`
	Instances         uint64 `json:"instances"`
	ErrorFreeSessions int    `json:"error_free_sessions"`
}

type errorSeriesJSON struct {
	ID   string           `json:"id"`
	Data []errorPointJSON `json:"data"`
}

// overviewSeries maps BuildPlot's series of rows to the overview plot's: ids "1.2(120)" with no
// space (the reference's id on this endpoint only), error_free_sessions 0 on each point; nil
// when there is no series, which the dashboard reads as "No Data".
func overviewSeries(series []model.PlotSeries, rows []model.PlotRow) []errorSeriesJSON {
	if len(series) == 0 {
		return nil
	}
	ids := make(map[string]string, len(rows))
	for _, r := range rows {
		ids[model.SeriesID(r.Version.Name, r.Version.Code)] = r.Version.Name + "(" + r.Version.Code + ")"
	}
	out := make([]errorSeriesJSON, len(series))
	for i, s := range series {
		pts := make([]errorPointJSON, len(s.Data))
		for j, p := range s.Data {
			pts[j] = errorPointJSON{Datetime: p.Datetime, Instances: p.Instances}
		}
		out[i] = errorSeriesJSON{ID: ids[s.ID], Data: pts}
	}
	return out
}

// errorOverviewPlot serves errorGroups/plots/instances: per version and bucket, the instances
// of the classes and severities that `type`, `severity` and `custom` select (as on the list).
func (a *API) errorOverviewPlot(w http.ResponseWriter, r *http.Request) {
	p, f, by, ok := a.plotParams(w, r)
	if !ok {
		return
	}
	q := model.IssueQuery{EventFilter: f}
	var err error
	if q.Classes, q.Severities, err = errorGroupFilters(p); err != nil {
		a.fail(w, "read filters", err)
		return
	}
	cells, err := a.Analytics.IssueCells(r.Context(), &q, model.Cells{Bucketed: true, By: by})
	if err != nil {
		a.internal(w, "query plot", err)
		return
	}
	rows := plotRows(cells, by)
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, overviewSeries(model.BuildPlot(rows, model.PlotNoRate), rows))
}

// errorEventBase holds the members exception and ANR events share.
type errorEventBase struct {
	ID          uuid.UUID             `json:"id"`
	SessionID   uuid.UUID             `json:"session_id"`
	Timestamp   string                `json:"timestamp"`
	Type        string                `json:"type"`
	Attribute   json.RawMessage       `json:"attribute"`
	Severity    string                `json:"severity"`
	Attachments []errorAttachmentJSON `json:"attachments"`
	Threads     []model.ThreadDetail  `json:"threads"`
}

// errorAttachmentJSON is an instance's attachment with the size the SDK reported (null when
// it sent none), which the errorGroups events carry.
type errorAttachmentJSON struct {
	attachmentJSON
	Size *int64 `json:"size"`
}

// exceptionEventJSON is an exception of errorGroups/{id}/errors. It has no anr member: the
// dashboard tells the two kinds apart by its presence.
type exceptionEventJSON struct {
	errorEventBase
	Exception   model.ExceptionDetail `json:"exception"`
	NumCode     *int64                `json:"num_code"`
	Code        string                `json:"code"`
	Meta        json.RawMessage       `json:"meta"`
	UserDefined json.RawMessage       `json:"user_defined_attribute"`
}

// anrEventJSON is an ANR of errorGroups/{id}/errors: no exception, num_code, code, meta or
// user_defined_attribute member, as the reference's ANR events.
type anrEventJSON struct {
	errorEventBase
	ANR model.ExceptionDetail `json:"anr"`
}

// errorTimestamp is the reference's event time: UTC with milliseconds.
const errorTimestamp = "2006-01-02T15:04:05.000Z"

// errorEventOf maps an instance rendering of e (API.instance: the stack trace, threads and
// signed attachments) to the errorGroups event of e's kind.
func errorEventOf(in *instanceJSON, e *model.Event) any {
	base := errorEventBase{ID: in.ID, SessionID: in.SessionID, Timestamp: time.Unix(0, e.Timestamp).UTC().Format(errorTimestamp),
		Type: e.Type, Attribute: in.Attribute, Threads: in.Threads, Attachments: make([]errorAttachmentJSON, len(in.Attachments))}
	for i, at := range in.Attachments {
		base.Attachments[i].attachmentJSON = at
		if i < len(e.Attachments) && e.Attachments[i].Size != model.SizeUnknown {
			size := e.Attachments[i].Size
			base.Attachments[i].Size = &size
		}
	}
	_, base.Severity = errorTypeOf(e.Type == "anr", e.Facts.Issue.Severity)
	if e.Type == "anr" {
		return anrEventJSON{errorEventBase: base, ANR: in.Exception}
	}
	code, num, meta := model.AppleErrorFields(e.Payload)
	return exceptionEventJSON{errorEventBase: base, Exception: in.Exception, NumCode: num, Code: code, Meta: meta,
		UserDefined: udJSON(e.UserDefined)}
}

// errorEvents serves errorGroups/{id}/errors: the group's events newest first, paged by limit
// (default 10) and offset, with meta.next and meta.previous; results is null when the page is
// empty, as the reference's.
func (a *API) errorEvents(w http.ResponseWriter, r *http.Request) {
	group, p, f, ok := a.groupRequest(w, r)
	if !ok {
		return
	}
	limit, offset, err := offsetPage(p)
	if err != nil {
		a.fail(w, "read page", err)
		return
	}
	q := model.IssueQuery{EventFilter: f, GroupID: group}
	evs, err := a.issueEventsAt(r.Context(), &q, offset, limit+1)
	if err != nil {
		a.internal(w, "query errors", err)
		return
	}
	out := pageOf[any]{Meta: offsetMeta(len(evs), limit, offset)}
	for i := range evs[:min(limit, len(evs))] {
		in, err := a.instance(r, &evs[i])
		if err != nil {
			a.internal(w, "render error", err)
			return
		}
		out.Results = append(out.Results, errorEventOf(&in, &evs[i]))
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, out)
}

// eventsChunk is the most events issueEventsAt asks the store for at once.
const eventsChunk = 1000

// issueEventsAt returns up to n of the issue events q selects, from the offset-th in the
// instance order on. The store pages by key (sinks.Analytics.IssueEvents), so an offset costs
// reading the events before it, a chunk at a time.
func (a *API) issueEventsAt(ctx context.Context, q *model.IssueQuery, offset, n int) ([]model.Event, error) {
	var out []model.Event
	page := model.EventPage{Limit: min(offset+n, eventsChunk)}
	for {
		evs, err := a.Analytics.IssueEvents(ctx, q, page)
		if err != nil {
			return nil, err
		}
		skip := min(offset, len(evs))
		offset -= skip
		out = append(out, evs[skip:]...)
		if len(out) >= n || len(evs) < page.Limit {
			return out[:min(n, len(out))], nil
		}
		last := &evs[len(evs)-1]
		page.Key = &model.EventKey{Timestamp: last.Timestamp, ID: last.ID}
		page.Limit = min(offset+n-len(out), eventsChunk)
	}
}

// errorPath serves errorGroups/{id}/path: the common path (model.ComputeCommonPath) of the
// most recent sessions with an event of the group, of any class, exceptions said by severity
// (model.ErrorGroupStep).
func (a *API) errorPath(w http.ResponseWriter, r *http.Request) {
	group, ok := groupParam(w, r)
	if !ok {
		return
	}
	answers := make([][][]model.Event, 0, len(model.AllIssueClasses))
	for _, class := range model.AllIssueClasses {
		sessions, err := a.Analytics.PathSessions(r.Context(), appOf(r.Context()).ID, class, group, model.MaxPathSessions, model.MaxPathSteps)
		if err != nil {
			a.internal(w, "query common path", err)
			return
		}
		answers = append(answers, sessions)
	}
	sessions := model.MergePathSessions(model.MaxPathSessions, answers...)
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, model.ComputeCommonPath(model.PathSteps(sessions, model.ErrorGroupStep)))
}

// errorDistribution serves errorGroups/{id}/plots/distribution: the group's events in the
// window with the common filters, counted per attribute by the store (sinks.Distribution); six
// maps, each {} when empty.
func (a *API) errorDistribution(w http.ResponseWriter, r *http.Request) {
	group, _, f, ok := a.groupRequest(w, r)
	if !ok {
		return
	}
	ds, ok := a.Events.(sinks.Distribution)
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "this event store does not count distributions")
		return
	}
	d, err := ds.IssueDistribution(r.Context(), &model.IssueQuery{EventFilter: f, GroupID: group})
	if err != nil {
		a.internal(w, "query distribution", err)
		return
	}
	w.Header().Set(HeaderAnsweredBy, "store")
	httpx.JSON(w, http.StatusOK, d)
}
