package dashboard

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
)

type instanceJSON struct {
	ID          uuid.UUID             `json:"id"`
	SessionID   uuid.UUID             `json:"session_id"`
	Timestamp   string                `json:"timestamp"`
	Type        string                `json:"type"`
	Attribute   json.RawMessage       `json:"attribute"`
	Exception   model.ExceptionDetail `json:"exception"`
	Attachments []attachmentJSON      `json:"attachments"`
	Threads     []model.ThreadDetail  `json:"threads"`
}

type attachmentJSON struct {
	ID       uuid.UUID `json:"id"`
	Name     string    `json:"name"`
	Type     string    `json:"type"`
	Key      string    `json:"key"`
	Location string    `json:"location"`
}

// instances serves crashGroups/{id}/crashes and anrGroups/{id}/anrs: the group's events newest
// first, keyset-paged on (key_timestamp, key_id) as the spec says.
func (a *API) instances(class model.IssueClass) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		group, p, f, ok := a.groupRequest(w, r)
		if !ok {
			return
		}
		limit, err := p.limit()
		if err != nil {
			a.fail(w, "read limit", err)
			return
		}
		page := model.EventPage{Limit: abs(limit) + 1, Backward: limit < 0}
		keyID, keyTS := p.q.Get("key_id"), p.q.Get("key_timestamp")
		switch {
		case keyID != "" && keyTS != "":
			id, err := uuid.Parse(keyID)
			if err != nil {
				httpx.Error(w, http.StatusBadRequest, "key_id "+keyID+" is not a UUID")
				return
			}
			ts, err := parseTime("key_timestamp", keyTS)
			if err != nil {
				a.fail(w, "read key", err)
				return
			}
			page.Key = &model.EventKey{Timestamp: ts.UnixNano(), ID: id}
		case keyID != "" || keyTS != "":
			httpx.Error(w, http.StatusBadRequest, "send key_id and key_timestamp together (the id and timestamp of the last item of the previous page)")
			return
		case limit < 0:
			httpx.Error(w, http.StatusBadRequest, model.ErrPageLimit.Error())
			return
		}
		q := model.IssueQuery{EventFilter: f, Classes: []model.IssueClass{class}, GroupID: group}
		evs, err := a.Analytics.IssueEvents(r.Context(), &q, page)
		if err != nil {
			a.internal(w, "query instances", err)
			return
		}
		var meta pageMeta
		more := len(evs) > abs(limit)
		if page.Backward {
			if more { // the extra event is the newest, farthest from the key
				evs = evs[1:]
			}
			meta = pageMeta{Next: true, Previous: more}
		} else {
			if more {
				evs = evs[:abs(limit)]
			}
			meta = pageMeta{Next: more, Previous: page.Key != nil}
		}
		out := pageOf[instanceJSON]{Meta: meta, Results: make([]instanceJSON, 0, len(evs))}
		for i := range evs {
			in, err := a.instance(r, &evs[i])
			if err != nil {
				a.internal(w, "render instance", err)
				return
			}
			out.Results = append(out.Results, in)
		}
		w.Header().Set(HeaderAnsweredBy, "store")
		httpx.JSON(w, http.StatusOK, out)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// instance renders one event; attachments that reached the blob store get a download location
// valid for DownloadTTL.
func (a *API) instance(r *http.Request, e *model.Event) (instanceJSON, error) {
	exc, threads, err := model.IssueDetail(e)
	if err != nil {
		return instanceJSON{}, err
	}
	in := instanceJSON{ID: e.ID, SessionID: e.SessionID, Timestamp: rfc3339(e.Timestamp), Type: e.Facts.Issue.Type,
		Attribute: model.AttributesJSON(&e.Attribute), Exception: exc, Threads: threads,
		Attachments: make([]attachmentJSON, 0, len(e.Attachments))}
	ttl := a.DownloadTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	for _, at := range e.Attachments {
		aj := attachmentJSON{ID: at.ID, Name: at.Name, Type: at.Type, Key: at.BlobKey}
		if at.BlobKey != "" && a.Blobs != nil {
			loc, err := a.Blobs.SignDownload(r.Context(), at.BlobKey, ttl)
			if err != nil {
				return in, err
			}
			aj.Location = loc
		}
		in.Attachments = append(in.Attachments, aj)
	}
	return in, nil
}
