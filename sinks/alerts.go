package sinks

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// Alerts keeps the alerts app actors raise and the outbox of their chat deliveries, in the
// metadata store (issue #12). Both metadata backends implement it; the Alerts and
// AlertDeliveries groups of sinks/metatest.Run check them.
//
// Idempotence: an alert is stored once per id (model.AlertID): adding an id that is stored
// changes nothing, neither the alert nor its delivery, so a raise repeated after a restart or on
// another node is harmless. Atomicity: an alert and its delivery are stored together or not at
// all. Times are stored with at least microsecond precision and come back in UTC. Errors are
// those of MetaStore (ErrUnavailable when the store does not answer). Concurrency: all methods
// are safe for concurrent use.
type Alerts interface {
	// AddAlert stores a, and when deliver a pending delivery of it due at a.CreatedAt with no
	// attempts. It reports whether a was new. ErrNotFound for an unknown app.
	AddAlert(ctx context.Context, a model.Alert, deliver bool) (added bool, err error)
	// AppAlerts lists the app's alerts created in [from, to), newest first (CreatedAt
	// descending, then id descending as bytes), skipping offset (≥ 0), at most limit (≥ 1).
	AppAlerts(ctx context.Context, app uuid.UUID, from, to time.Time, limit, offset int) ([]model.Alert, error)
	// LatestAlerts returns, for each (type, entity) of the app with an alert created at or after
	// since, its newest alert (ties: the greatest id). Order: none.
	LatestAlerts(ctx context.Context, app uuid.UUID, since time.Time) ([]model.Alert, error)
	// DueDeliveries returns at most limit pending deliveries whose NextAttempt is at or before
	// now, the earliest NextAttempt first (ties: alert id ascending), of every app.
	DueDeliveries(ctx context.Context, now time.Time, limit int) ([]model.Delivery, error)
	// FinishDelivery removes the alert's pending delivery (posted, or given up); removing one
	// that is not pending is not an error.
	FinishDelivery(ctx context.Context, alertID uuid.UUID) error
	// PostponeDelivery records a failed attempt of the alert's pending delivery: its attempts,
	// next attempt and error. ErrNotFound when it is not pending.
	PostponeDelivery(ctx context.Context, alertID uuid.UUID, attempts int, next time.Time, lastError string) error
}
