package sinks

import (
	"context"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// Sessions answers the session pages' queries over an event store's events and spans (issue
// #12). Both event stores implement it; sinks/eventstest (RunSessions) checks every method
// against a brute-force reference (eventstest.SessionsReference) built on model.SessionAcc (with
// SessionQuery.MatchEvent, KindsOf, KindsMatch and MatchText), model.CompareSessionsNewest and
// model.SessionPlotOf. Events and spans are those stored: a row written twice is one row. A
// session is identified by (app id, session id). Times are Unix nanoseconds; the window
// [From, To) is on the event's Timestamp, and only events inside it count.
type Sessions interface {
	// SessionPage returns the summaries of the sessions q selects (model.SessionAcc.Selected
	// over each session's events in the window, the summary being SessionAcc.Summary), newest
	// first (model.CompareSessionsNewest), skipping the first offset (≥ 0) and at most limit
	// (≥ 1) of them.
	SessionPage(ctx context.Context, q *model.SessionQuery, limit, offset int) ([]model.SessionSummary, error)
	// SessionPlot counts the sessions q selects per version and bucket of their summary, as
	// model.SessionPlotOf does (the version of Device, b.Start of First), in its order.
	// Cells without sessions are left out.
	SessionPlot(ctx context.Context, q *model.SessionQuery, b model.Buckets) ([]model.SessionPlotCell, error)
	// SessionEvents returns every stored event of the session, whatever its time, every field
	// as stored, ascending by timestamp, then event id (byte order); empty when there is none.
	SessionEvents(ctx context.Context, app, session uuid.UUID) ([]model.Event, error)
	// SessionRootSpans returns the session's root spans (no parent), every field as stored,
	// newest first (model.CompareSpansNewest); empty when there is none.
	SessionRootSpans(ctx context.Context, app, session uuid.UUID) ([]model.Span, error)
}
