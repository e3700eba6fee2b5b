package model

import (
	"time"

	"github.com/google/uuid"
)

// InviteTTL is how long an invite can be accepted.
const InviteTTL = 7 * 24 * time.Hour

// Invite asks a person, by email, to join a team with a role.
type Invite struct {
	ID        uuid.UUID
	TeamID    uuid.UUID
	Email     string // compared case-insensitively
	Role      Role
	InvitedBy uuid.UUID
	CreatedAt time.Time
	UpdatedAt time.Time
	ExpiresAt time.Time
}

// Expired reports whether the invite can no longer be accepted at now.
func (i Invite) Expired(now time.Time) bool { return !now.Before(i.ExpiresAt) }

// ThresholdPrefs are an app's thresholds for judging error rates on the dashboard.
type ThresholdPrefs struct {
	ErrorGoodThreshold          float64 `json:"error_good_threshold"`    // crash-free % at or above which an app is good
	ErrorCautionThreshold       float64 `json:"error_caution_threshold"` // at or above this, caution; below, bad
	ErrorSpikeMinCountThreshold int     `json:"error_spike_min_count_threshold"`
	ErrorSpikeMinRateThreshold  float64 `json:"error_spike_min_rate_threshold"` // percent
}

// DefaultThresholdPrefs are an app's thresholds until someone changes them.
func DefaultThresholdPrefs() ThresholdPrefs {
	return ThresholdPrefs{ErrorGoodThreshold: 95, ErrorCautionThreshold: 85, ErrorSpikeMinCountThreshold: 100, ErrorSpikeMinRateThreshold: 0.5}
}

// ShortFilter is a saved combination of dashboard filters, named by a deterministic code.
type ShortFilter struct {
	Code      string // lowercase hex MD5 of the app id and the normalised filters
	AppID     uuid.UUID
	Filters   []byte // normalised JSON object
	CreatedAt time.Time
}

// ChatApp is a team's chat integration: a Slack-compatible incoming-webhook URL.
type ChatApp struct {
	TeamID     uuid.UUID
	WebhookURL string
	Enabled    bool
	UpdatedAt  time.Time
}

// MonthUsage is what an app stored in one calendar month (UTC).
type MonthUsage struct {
	Month    string // YYYY-MM
	Sessions int64  // distinct sessions with an event or span in the month
	Events   int64
	Spans    int64
	Bytes    int64 // stored size of the month's events and spans, as the backend measures it
}

// NotifPrefs are a user's notification preferences: which kinds of alert they want to hear
// about (error spikes, app hang spikes, bug reports) and whether they want a daily summary.
type NotifPrefs struct {
	ErrorSpike   bool
	AppHangSpike bool
	BugReport    bool
	DailySummary bool
	CreatedAt    time.Time // when the user's preferences were first set
	UpdatedAt    time.Time // when they were last set
}

// DefaultNotifPrefs are a user's preferences until they change them: every notification on.
func DefaultNotifPrefs() NotifPrefs {
	return NotifPrefs{ErrorSpike: true, AppHangSpike: true, BugReport: true, DailySummary: true}
}
