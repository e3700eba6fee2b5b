package sinks

import (
	"context"

	"github.com/svc-dev/svc/model"
)

// Distribution counts how an issue group's events spread over their attributes, for
// errorGroups/{id}/plots/distribution (issue #15). It is an aggregate computed where the events
// are, so that a group of millions of events costs one scan and a few hundred rows, never the
// events themselves. Both event stores implement it; sinks/eventstest (the Distribution group of
// RunAnalytics) checks it against a brute force over the written events. The Analytics contract
// applies: events are those stored (a row written twice counts once), times are Unix
// nanoseconds, and ErrUnavailable reports a store that did not answer.
type Distribution interface {
	// IssueDistribution counts the issue events q selects (model.IssueQuery.MatchIssue: its
	// window, versions, attribute lists, ud_expression, classes, group and severities) under
	// each attribute of model.Distribution, as Distribution.AddEvent counts one event: an event
	// adds 1 to the key model.DistKey gives each of model.DistAttrs, and to none of an attribute
	// whose columns are both empty. Country is always empty. Every map is non-nil; no event
	// gives six empty maps.
	IssueDistribution(ctx context.Context, q *model.IssueQuery) (model.Distribution, error)
}
