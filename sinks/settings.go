package sinks

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// Settings of the dashboard that the MetaStore interface leaves out (issue #15). Both metadata
// stores implement each interface of this file; the SDKConfigExtra and DeleteChatApp groups of
// sinks/metatest.Run check them. The MetaStore contract's rules on durability, times, errors
// (ErrUnavailable when the store does not answer) and concurrency apply.

// SDKConfigExtras keeps, per app, the settings of its SDK configuration that GET /config does not
// serve (model.SDKConfigExtra), apart from the SDKConfig so that what SDKs fetch stays exactly
// what the ingestion contract lists.
type SDKConfigExtras interface {
	// SDKConfigExtra returns the app's extra settings and when they were set; ErrNotFound when
	// they were never set or the app is unknown (the caller serves model.DefaultSDKConfigExtra).
	// The pattern list is never nil.
	SDKConfigExtra(ctx context.Context, appID uuid.UUID) (model.SDKConfigExtra, time.Time, error)
	// SetSDKConfigExtra replaces the app's extra settings; a nil pattern list is stored as an
	// empty one. ErrNotFound for an unknown app; ErrInvalid when CheckSDKConfigExtra refuses e.
	SetSDKConfigExtra(ctx context.Context, appID uuid.UUID, e model.SDKConfigExtra, at time.Time) error
}

// CheckSDKConfigExtra validates e (model.SDKConfigExtra.Validate, which also turns a nil pattern
// list into an empty one), wrapping its refusal in ErrInvalid.
func CheckSDKConfigExtra(e *model.SDKConfigExtra) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("SDK config extra settings: %w: %w", ErrInvalid, err)
	}
	return nil
}

// ChatAppDeleter removes a team's chat integration (MetaStore.SetChatApp only replaces one).
type ChatAppDeleter interface {
	// DeleteChatApp removes the team's chat app; ChatApp then answers ErrNotFound. ErrNotFound
	// when the team has none, or is unknown.
	DeleteChatApp(ctx context.Context, teamID uuid.UUID) error
}
