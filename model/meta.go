package model

import (
	"time"

	"github.com/google/uuid"
)

// User is a person who signs in to the dashboard.
type User struct {
	ID           uuid.UUID
	Name         string
	Email        string // unique, compared case-insensitively
	ConfirmedAt  time.Time
	LastSignInAt time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Team owns apps; users belong to teams with a role.
type Team struct {
	ID        uuid.UUID
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Role is a member's rank in a team: owner > admin > developer > viewer.
type Role string

// The roles, highest first.
const (
	RoleOwner     Role = "owner"
	RoleAdmin     Role = "admin"
	RoleDeveloper Role = "developer"
	RoleViewer    Role = "viewer"
)

// Rank orders roles: higher is more powerful; 0 for an unknown role.
func (r Role) Rank() int {
	switch r {
	case RoleOwner:
		return 4
	case RoleAdmin:
		return 3
	case RoleDeveloper:
		return 2
	case RoleViewer:
		return 1
	}
	return 0
}

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool { return r.Rank() > 0 }

// Member is a user's membership of a team.
type Member struct {
	TeamID    uuid.UUID
	UserID    uuid.UUID
	Role      Role
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TeamRole is a team together with one user's role in it.
type TeamRole struct {
	Team Team
	Role Role
}

// DefaultRetentionDays is an app's retention when nobody changed it.
const DefaultRetentionDays = 30

// App is a mobile app whose SDK sends data to svc.
type App struct {
	ID            uuid.UUID
	TeamID        uuid.UUID
	Name          string
	UniqueID      string // app_unique_id (bundle id) once known; empty before the first ingest
	Platform      string // android, ios or flutter once known
	RetentionDays int
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Onboarded is set once the app's first batch was accepted (sinks.Onboarding), at
	// OnboardedAt; zero before. UniqueID is set with it when still empty.
	Onboarded   bool
	OnboardedAt time.Time
	// OSNames are the lowercased OS names of the app's accepted batches, in the order first
	// recorded; empty before the first batch.
	OSNames []string
}

// APIKey authenticates an app's SDK. At most one key of an app is not revoked.
type APIKey struct {
	AppID     uuid.UUID
	Key       string
	CreatedAt time.Time
	LastSeen  time.Time // zero when never used
	Revoked   bool
}

// AuthSession is a signed-in dashboard session. RefreshID is the id of the only refresh token
// that may still rotate it; rotation replaces it, so an older refresh token stops working.
type AuthSession struct {
	ID        uuid.UUID
	UserID    uuid.UUID
	RefreshID uuid.UUID
	CreatedAt time.Time
	ExpiresAt time.Time
}
