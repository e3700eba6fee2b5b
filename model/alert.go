package model

import (
	"time"

	"github.com/google/uuid"
)

// Alert types: spikes of a crash or ANR group, a new bug report, and the first appearance of a
// crash or ANR group in an app.
const (
	AlertCrashSpike    = "crash_spike"
	AlertANRSpike      = "anr_spike"
	AlertBugReport     = "bug_report"
	AlertNewCrashGroup = "new_crash_group"
	AlertNewANRGroup   = "new_anr_group"
)

// Alert is something an app's team should know about, raised by the app's actor as batches
// arrive. Its ID is derived from what raised it (AlertID), so raising the same alert again
// (a resent event, an actor on another node) stores it once.
type Alert struct {
	ID       uuid.UUID
	TeamID   uuid.UUID
	AppID    uuid.UUID
	EntityID string // the group id of a spike or new group; the event id of a bug report
	Type     string // one of the Alert* constants
	Message  string // plain text
	URL      string // where the dashboard shows the entity
	// CreatedAt and UpdatedAt are when it was raised (the same until something changes it).
	CreatedAt, UpdatedAt time.Time
}

// alertSpace is the namespace of alert ids (a UUID of our own, fixed forever).
var alertSpace = uuid.MustParse("6d3f1c52-8a0e-4b7e-9f5a-2c1d0e9b7a41")

// AlertID is the id of the alert of app, type and entity raised for the occasion named by key:
// "" for the alerts an entity gets once (a bug report, a new group), the start of the spike's
// hour for spikes. The same inputs give the same id on every node.
func AlertID(app uuid.UUID, typ, entity, key string) uuid.UUID {
	return uuid.NewSHA1(alertSpace, []byte(app.String()+"\x00"+typ+"\x00"+entity+"\x00"+key))
}

// Delivery is an alert waiting in the outbox to be posted to its team's chat app.
type Delivery struct {
	Alert       Alert
	Attempts    int       // failed attempts so far
	NextAttempt time.Time // not before
	LastError   string    // of the last failed attempt
}
