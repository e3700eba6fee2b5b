// Package ingest serves the SDK API: PUT /events, PUT /builds and GET /config, authenticated by
// the app's API key.
package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/gate"
	"github.com/svc-dev/svc/sinks/spool"
)

// Body limits of PUT /events (spec: 9 MB for JSON including blobs, 20 MiB for multipart).
const (
	DefaultMaxJSONBytes      = 9 << 20
	DefaultMaxMultipartBytes = 20 << 20
)

// Spool record kinds: how to decode a record's body on replay.
const (
	recordJSON      = 1 // a JSON body, JSON rules
	recordMultipart = 2 // the event and span parts of a multipart body as a JSON batch, multipart rules
)

// Events serves PUT /events: it reads, decodes and answers; what happens to an accepted batch
// (gate, session order, spool, actors) is Ingest's.
type Events struct {
	Blobs  sinks.BlobStore
	Ingest *actors.Ingest
	Log    *slog.Logger

	MaxJSONBytes      int64
	MaxMultipartBytes int64
	MaxPendingBytes   int64         // back-pressure: refuse with 503 while the spool holds more
	UploadTTL         time.Duration // lifetime of attachment upload URLs
	// RetryAfter is what 503 answers tell SDKs to wait.
	RetryAfter time.Duration
	// MaxEventAge is how old an event or span may be; 0 means the app's retention (older rows
	// would be deleted by the next retention run). MaxEventFuture is how far after the node's
	// clock one may lie; 0 means DefaultMaxEventFuture.
	MaxEventAge, MaxEventFuture time.Duration
	// Now is the clock of the time window; nil means time.Now.
	Now func() time.Time
	// Budget bounds the request body bytes held at once across requests (503 beyond it); nil
	// means one of DefaultMaxInflightBytes, made on first use.
	Budget     *Budget
	budgetOnce sync.Once
	// Onboard, when set, records the app's onboarding from its accepted batches (in the
	// background, once per app and new OS name per node).
	Onboard *sinks.Onboarder
}

func (h *Events) budget() *Budget {
	h.budgetOnce.Do(func() {
		if h.Budget == nil {
			h.Budget = NewBudget(0)
		}
	})
	return h.Budget
}

// DefaultMaxEventFuture is how far after the node's clock an event may lie by default: device
// clocks are wrong, but not by months.
const DefaultMaxEventFuture = 30 * 24 * time.Hour

// window is the time window of an app's batches now.
func (h *Events) window(app model.App) model.TimeWindow {
	now := time.Now()
	if h.Now != nil {
		now = h.Now()
	}
	future := h.MaxEventFuture
	if future <= 0 {
		future = DefaultMaxEventFuture
	}
	age, oldWhy := h.MaxEventAge, ""
	if age <= 0 {
		days := app.RetentionDays
		if days <= 0 {
			days = model.DefaultRetentionDays
		}
		age = time.Duration(days) * 24 * time.Hour
		oldWhy = fmt.Sprintf("older than this app's retention of %d days", days)
	} else {
		oldWhy = "older than the node accepts (--max-event-age " + age.String() + ")"
	}
	return model.TimeWindow{Oldest: now.Add(-age).UnixNano(), Newest: now.Add(future).UnixNano(),
		OldestWhy: oldWhy, NewestWhy: "more than " + future.String() + " ahead of the server's clock (" + now.UTC().Format(time.RFC3339) + ")"}
}

// lap observes the time since *t under stage and moves *t to now.
func (h *Events) lap(stage string, t *time.Time) { actors.Lap(h.Ingest.Stages, stage, t) }

func (h *Events) limits() (int64, int64) {
	j, m := h.MaxJSONBytes, h.MaxMultipartBytes
	if j <= 0 {
		j = DefaultMaxJSONBytes
	}
	if m <= 0 {
		m = DefaultMaxMultipartBytes
	}
	return j, m
}

// requestID reads svc-req-id, or msr-req-id as existing SDK builds send it.
func requestID(r *http.Request) (uuid.UUID, error) {
	v := r.Header.Get("svc-req-id")
	name := "svc-req-id"
	if v == "" {
		v, name = r.Header.Get("msr-req-id"), "msr-req-id"
	}
	if v == "" {
		return uuid.Nil, errors.New("header svc-req-id is required: a UUID, the same on every retry of this request")
	}
	id, err := uuid.Parse(v)
	if err != nil || len(v) != 36 {
		return uuid.Nil, fmt.Errorf("header %s %q is not a UUID", name, v)
	}
	return id, nil
}

// gateInfo is what the gate keeps of an accepted request, to answer a repeat.
type gateInfo struct {
	Multipart   bool             `json:"m,omitempty"`
	Attachments []gateAttachment `json:"a,omitempty"`
}

type gateAttachment struct {
	ID   uuid.UUID `json:"i"`
	Type string    `json:"t"`
	Name string    `json:"n"`
}

// BlobKey is where an attachment of an app lives in the blob store.
func BlobKey(app, attachment uuid.UUID) string {
	return "attachments/" + app.String() + "/" + attachment.String()
}

// assignBlobKeys names the blob of every attachment; the same batch always gets the same keys,
// so replay writes identical rows.
func assignBlobKeys(app uuid.UUID, b *model.Batch) {
	for i := range b.Events {
		for j := range b.Events[i].Attachments {
			a := &b.Events[i].Attachments[j]
			a.BlobKey = BlobKey(app, a.ID)
		}
	}
}

// ServeHTTP handles PUT /events.
func (h *Events) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	app := AppFrom(r.Context())
	if h.MaxPendingBytes > 0 && h.Ingest.Spool.PendingBytes() > h.MaxPendingBytes {
		h.unavailable(w, "the event store is behind and the node's spool is full; retry later")
		return
	}
	req, err := requestID(r)
	if err != nil {
		httpx.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	ct, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	multi := ct == "multipart/form-data"
	if err != nil || (ct != "application/json" && !multi) {
		httpx.Error(w, http.StatusBadRequest, "Content-Type must be application/json or multipart/form-data; boundary=…")
		return
	}
	if multi && params["boundary"] == "" {
		httpx.Error(w, http.StatusBadRequest, "multipart Content-Type needs a boundary parameter")
		return
	}

	state, info, err := h.Ingest.Begin(r.Context(), app.ID, req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	switch state {
	case gate.InProgress:
		w.Header().Set("Retry-After", "60")
		httpx.JSON(w, http.StatusTooManyRequests, map[string]string{
			"warning": "a request with this svc-req-id is being processed; retry after 60 seconds"})
		return
	case gate.Accepted:
		h.answerKnown(w, r, app.ID, info)
		return
	}
	accepted := false
	defer func() {
		if !accepted {
			h.Ingest.Abort(r.Context(), app.ID, req)
		}
	}()

	t := time.Now()
	maxJSON, maxMulti := h.limits()
	win := h.window(app)
	var (
		batch  model.Batch
		record []byte
		kind   uint8
	)
	if multi {
		batch, record, err = h.readMultipart(w, r, app.ID, params["boundary"], maxMulti, win)
		kind = recordMultipart
	} else {
		var body *body
		body, err = readBody(w, r, maxJSON, h.budget())
		defer body.release()
		record = body.buf // the decoded batch holds copies; the spool copies it on append
		if err == nil {
			batch, err = model.DecodeBatch(record, app.ID, false)
		}
		if err == nil {
			err = batch.CheckTimes(win)
		}
		kind = recordJSON
	}
	h.lap("read_decode", &t)
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	assignBlobKeys(app.ID, &batch)
	gi := gateInfoOf(&batch, multi)
	gb, _ := json.Marshal(gi)
	// Inline attachment bytes are in the spool record; the flusher writes them to the blob store
	// (their two syncs each were the largest part of this handler's tail latency).
	err = h.Ingest.Accept(r.Context(), &actors.Batch{App: app.ID, Request: req, Kind: kind, Record: record,
		Events: batch.Events, Spans: batch.Spans, Blobs: inlineBlobs(app.ID, batch.Inline), GateInfo: gb})
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	accepted = true
	h.Onboard.Observe(app, batch.Events, batch.Spans)
	t = time.Now()

	if multi {
		httpx.JSON(w, http.StatusAccepted, map[string]string{"ok": "accepted"})
		h.lap("respond", &t)
		return
	}
	h.answerUploads(w, r, app.ID, gi.Attachments)
	h.lap("respond", &t)
}

func gateInfoOf(b *model.Batch, multi bool) gateInfo {
	gi := gateInfo{Multipart: multi}
	if multi {
		return gi
	}
	inline := map[uuid.UUID]bool{}
	for _, in := range b.Inline {
		inline[in.AttachmentID] = true
	}
	for i := range b.Events {
		for _, a := range b.Events[i].Attachments {
			if !inline[a.ID] {
				gi.Attachments = append(gi.Attachments, gateAttachment{ID: a.ID, Type: a.Type, Name: a.Name})
			}
		}
	}
	return gi
}

// answerKnown answers a request id that was accepted before: multipart gets the known-request
// body, JSON gets fresh upload URLs for the attachments of the original request.
func (h *Events) answerKnown(w http.ResponseWriter, r *http.Request, app uuid.UUID, info []byte) {
	var gi gateInfo
	if err := json.Unmarshal(info, &gi); err != nil {
		h.fail(w, r, fmt.Errorf("read request gate entry: %w", err))
		return
	}
	if gi.Multipart {
		httpx.JSON(w, http.StatusAccepted, map[string]string{"ok": "accepted, known event request"})
		return
	}
	h.answerUploads(w, r, app, gi.Attachments)
}

// uploadItem is the contract's attachment upload item.
type uploadItem struct {
	ID        uuid.UUID         `json:"id"`
	Type      string            `json:"type"`
	Filename  string            `json:"filename"`
	UploadURL string            `json:"upload_url"`
	ExpiresAt string            `json:"expires_at"`
	Headers   map[string]string `json:"headers"`
}

// answerUploads writes exactly {"attachments": [...] | null}: iOS SDKs drop every upload URL
// when the body has any other key.
func (h *Events) answerUploads(w http.ResponseWriter, r *http.Request, app uuid.UUID, atts []gateAttachment) {
	var items []uploadItem
	ttl := h.UploadTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	for _, a := range atts {
		up, err := h.Blobs.SignUpload(r.Context(), BlobKey(app, a.ID), ttl)
		if err != nil {
			h.fail(w, r, fmt.Errorf("sign upload URL: %w", err))
			return
		}
		hdr := up.Headers
		if hdr == nil {
			hdr = map[string]string{}
		}
		items = append(items, uploadItem{ID: a.ID, Type: a.Type, Filename: a.Name, UploadURL: up.URL,
			ExpiresAt: up.ExpiresAt.UTC().Format(time.RFC3339Nano), Headers: hdr})
	}
	httpx.JSON(w, http.StatusOK, struct {
		Attachments []uploadItem `json:"attachments"`
	}{items})
}

// maxBlobParts bounds the blob parts of one multipart body: real batches carry tens of
// attachments, and each part costs a file in the blob store.
const maxBlobParts = 1000

// readMultipart reads a multipart body: `event` and `span` parts are decoded into the batch
// (whose times must lie in win) and collected into a JSON batch body for the spool; `blob-<attachment id>` parts are streamed to
// the blob store. A refused body leaves no blob behind, and a blob part that no event of the
// batch names is removed.
func (h *Events) readMultipart(w http.ResponseWriter, r *http.Request, app uuid.UUID, boundary string, limit int64, win model.TimeWindow) (_ model.Batch, _ []byte, err error) {
	if r.ContentLength > limit {
		return model.Batch{}, nil, errTooLarge{limit}
	}
	src := &errReader{r: http.MaxBytesReader(w, r.Body, limit)}
	mr := multipart.NewReader(src, boundary)
	var (
		b             model.Batch
		events, spans bytes.Buffer
		blobs         = map[uuid.UUID]bool{} // attachment ids of the blob parts written
		held          int64                  // budget taken for event and span parts
	)
	budget := h.budget()
	defer func() {
		budget.give(held)
		if err != nil {
			h.deleteBlobs(app, blobs)
		}
	}()
	partErr := func(err error) error {
		if src.err != nil {
			return readErr(src.err, limit)
		}
		return &model.ValidationError{Rule: "malformed multipart body: " + err.Error()}
	}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return b, nil, partErr(err)
		}
		name := p.FormName()
		switch {
		case name == "event" || name == "span":
			data, err := io.ReadAll(p)
			if err != nil {
				return b, nil, partErr(err)
			}
			if !budget.take(int64(len(data))) {
				return b, nil, errBusy
			}
			held += int64(len(data))
			dst := &events
			if name == "event" {
				err = b.AddEventPart(data, app)
			} else {
				dst = &spans
				err = b.AddSpanPart(data, app)
			}
			if err != nil {
				return b, nil, err
			}
			if dst.Len() > 0 {
				dst.WriteByte(',')
			}
			dst.Write(data)
		case strings.HasPrefix(name, "blob-"):
			id, err := uuid.Parse(strings.TrimPrefix(name, "blob-"))
			if err != nil {
				return b, nil, &model.ValidationError{Field: name, Rule: "blob part names must be blob-<attachment id (UUID)>"}
			}
			if !blobs[id] && len(blobs) == maxBlobParts {
				return b, nil, &model.ValidationError{Field: name, Rule: fmt.Sprintf("a multipart body holds at most %d blob parts", maxBlobParts)}
			}
			blobs[id] = true
			if err := h.Blobs.Put(r.Context(), BlobKey(app, id), p, -1); err != nil {
				if src.err != nil {
					return b, nil, readErr(src.err, limit)
				}
				return b, nil, fmt.Errorf("store blob part: %w", err)
			}
		default:
			return b, nil, &model.ValidationError{Field: name, Rule: "unknown multipart part: want event, span or blob-<attachment id>"}
		}
		p.Close()
	}
	if err := b.Validate(); err != nil {
		return b, nil, err
	}
	if err := b.CheckTimes(win); err != nil {
		return b, nil, err
	}
	for i := range b.Events {
		for _, a := range b.Events[i].Attachments {
			delete(blobs, a.ID)
		}
	}
	if len(blobs) > 0 {
		h.deleteBlobs(app, blobs) // parts no attachment names: nothing would ever read them
	}
	rec := make([]byte, 0, events.Len()+spans.Len()+24)
	rec = append(rec, `{"events":[`...)
	rec = append(rec, events.Bytes()...)
	rec = append(rec, `],"spans":[`...)
	rec = append(rec, spans.Bytes()...)
	rec = append(rec, `]}`...)
	return b, rec, nil
}

// deleteBlobs removes blob parts written for a request, even when the request's context has
// ended (a client that went away is a common reason to be here).
func (h *Events) deleteBlobs(app uuid.UUID, ids map[uuid.UUID]bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for id := range ids {
		if err := h.Blobs.Delete(ctx, BlobKey(app, id)); err != nil {
			h.Log.Warn("blob part of a refused request not removed", "key", BlobKey(app, id), "error", err.Error())
		}
	}
}

// refuse answers a request that breaks the contract (400) or a limit (413); anything else is a
// server-side failure.
func (h *Events) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var tl errTooLarge
	var be errBody
	var oe *actors.SessionOrderError
	switch {
	case errors.As(err, &tl):
		httpx.Error(w, http.StatusRequestEntityTooLarge, tl.Error())
	case errors.As(err, &be):
		// The client's fault, logged below ERROR: a broken or stalled upload is everyday
		// mobile traffic, and nothing of it was kept.
		h.Log.Info("request body not delivered whole", "error", be.err.Error(), "path", r.URL.Path)
		status := http.StatusBadRequest
		if be.timeout {
			status = http.StatusRequestTimeout
		}
		httpx.Error(w, status, be.Error())
	case errors.Is(err, errBusy):
		h.unavailable(w, err.Error())
	case errors.Is(err, model.ErrInvalid):
		httpx.Error(w, http.StatusBadRequest, err.Error())
	case errors.As(err, &oe):
		httpx.Error(w, http.StatusBadRequest, oe.Error())
	case errors.Is(err, actors.ErrSessionBusy):
		// Temporary: the retry meets the session as the other request left it.
		h.Log.Info("batch waits for another request of its session", "error", err.Error())
		w.Header().Set("Retry-After", "1")
		httpx.Error(w, http.StatusServiceUnavailable, err.Error()+"; retry after the time in Retry-After")
	default:
		h.fail(w, r, err)
	}
}

// fail answers a temporary failure with 503 so the SDK keeps the batch and retries: SDKs drop a
// batch for good on any 4xx but 429.
func (h *Events) fail(w http.ResponseWriter, r *http.Request, err error) {
	serverFault(w, h.Log.With("path", r.URL.Path), "accepting the events", err)
}

func (h *Events) unavailable(w http.ResponseWriter, msg string) {
	ra := h.RetryAfter
	if ra <= 0 {
		ra = 30 * time.Second
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(ra.Seconds())))
	httpx.Error(w, http.StatusServiceUnavailable, msg)
}

// inlineBlobs are a batch's inline attachment bytes with their blob keys.
func inlineBlobs(app uuid.UUID, inline []model.InlineBlob) []actors.Blob {
	if len(inline) == 0 {
		return nil
	}
	out := make([]actors.Blob, len(inline))
	for i, in := range inline {
		out[i] = actors.Blob{Key: BlobKey(app, in.AttachmentID), Bytes: in.Bytes}
	}
	return out
}

// Replay hands spool records found at start back to the ingest path (Ingest.Replayed), which
// marks their request ids accepted and tells the actors and the flusher.
func (h *Events) Replay(ctx context.Context, recs []spool.Record) (events, spans int, err error) {
	for _, rec := range recs {
		b, err := model.DecodeBatch(rec.Body, rec.AppID, rec.Kind == recordMultipart)
		if err != nil {
			// Accepted once, so this cannot happen unless the decoder changed; keep the record for
			// an operator rather than dropping data.
			return events, spans, fmt.Errorf("replay spool record %d: %w", rec.Seq, err)
		}
		assignBlobKeys(rec.AppID, &b)
		gb, _ := json.Marshal(gateInfoOf(&b, rec.Kind == recordMultipart))
		err = h.Ingest.Replayed(ctx, &actors.Batch{App: rec.AppID, Request: rec.RequestID, Kind: rec.Kind, Record: rec.Body,
			Events: b.Events, Spans: b.Spans, Blobs: inlineBlobs(rec.AppID, b.Inline), GateInfo: gb}, rec.Seq)
		if err != nil {
			return events, spans, err
		}
		// The node may have stopped before it recorded the app's onboarding.
		h.Onboard.Observe(model.App{ID: rec.AppID}, b.Events, b.Spans)
		events += len(b.Events)
		spans += len(b.Spans)
		if ctx.Err() != nil {
			return events, spans, ctx.Err()
		}
	}
	return events, spans, nil
}
