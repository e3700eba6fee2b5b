package sinks

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// BugReports answers the bug report pages' queries over an event store's bug_report events
// (issue #12). Both event stores implement it; sinks/eventstest (RunBugReports) checks every
// method against a brute-force reference (eventstest.BugReportsReference) built on
// model.BugReportQuery.Match, model.CompareBugReports and model.Buckets.Start. A report is a
// bug_report event as stored (an event written twice is one report); its id is the event id.
// Times are Unix nanoseconds, windows [From, To) on the event's Timestamp. One report is read
// with EventStore.BugReport.
//
// Statuses: a report's status is not in the event store, which is append-only; it lives in
// the metadata store (BugReportStatuses). A query that filters by status
// (model.BugReportQuery.StatusFilter) carries the ids of the app's closed reports in
// model.BugReportQuery.Closed, which the caller reads from the metadata store
// (BugReportStatuses.ClosedBugReports) just before it asks; every other report is open. So both
// event stores filter with the same set, a status change shows in the next query at once, and
// no event is ever rewritten. The caller reads the statuses it shows from the metadata store
// too (BugReportStatuses.BugReportStates).
type BugReports interface {
	// BugReports returns the reports q selects (model.BugReportQuery.Match), newest first
	// (model.CompareBugReports: timestamp descending, then id descending as bytes), skipping
	// the first offset (≥ 0) and at most limit (≥ 1) of them, every field as stored.
	BugReports(ctx context.Context, q *model.BugReportQuery, limit, offset int) ([]model.Event, error)
	// BugReportCounts counts the reports q selects per app version and bucket (buckets.Start
	// of the report's timestamp). Cells without reports are left out; none is an empty slice,
	// not nil. Order: by bucket, then version name and code (model.CompareBugReportCounts).
	BugReportCounts(ctx context.Context, q *model.BugReportQuery, buckets model.Buckets) ([]model.BugReportCount, error)
}

// BugReportStatuses keeps the status of bug reports in the metadata store (issue #12): one
// model.BugReportState per report whose status was ever set, keyed by app and report id. A
// report without one is open, and was last updated when it was reported. Both metadata stores
// implement it; sinks/metatest (RunBugReportStatuses) checks them. The MetaStore contract's
// rules on durability, errors (ErrUnavailable) and concurrency apply.
//
// The store does not know the events: the caller checks that the report exists (in the event
// store) before it sets a status.
type BugReportStatuses interface {
	// SetBugReportStatus stores the report's status and when it was set, replacing what was
	// stored (setting the same status again moves UpdatedAt). ErrNotFound for an unknown app,
	// ErrInvalid for a status other than open and closed.
	SetBugReportStatus(ctx context.Context, st model.BugReportState) error
	// BugReportStates returns the stored states of the app's reports among ids, keyed by
	// report id; reports whose status was never set (and ids of other apps) are absent. An
	// unknown app has none.
	BugReportStates(ctx context.Context, app uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]model.BugReportState, error)
	// ClosedBugReports lists the ids of the app's closed reports, in byte order; empty for an
	// app without any, or an unknown one.
	ClosedBugReports(ctx context.Context, app uuid.UUID) ([]uuid.UUID, error)
}

// CheckBugReportState returns ErrInvalid (wrapped, naming the rule) for a state a store must
// refuse; backends call it first.
func CheckBugReportState(st model.BugReportState) error {
	if !st.Status.Valid() {
		return fmt.Errorf("bug report status %d must be 0 (open) or 1 (closed): %w", st.Status, ErrInvalid)
	}
	if st.UpdatedAt.IsZero() {
		return fmt.Errorf("bug report status of %s: the time it was set is missing: %w", st.ID, ErrInvalid)
	}
	return nil
}
