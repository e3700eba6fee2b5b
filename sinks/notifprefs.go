package sinks

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// NotifPrefs keeps each dashboard user's notification preferences in the metadata store
// (issue #15): one model.NotifPrefs per user who ever set them. A user without one has
// model.DefaultNotifPrefs. Both metadata stores implement it; the NotifPrefs group of
// sinks/metatest.Run checks them. The MetaStore contract's rules on durability, times (at least
// microsecond precision, back in UTC), errors (ErrUnavailable when the store does not answer)
// and concurrency apply.
type NotifPrefs interface {
	// NotifPrefs returns the user's stored preferences; ErrNotFound when they were never set
	// or the user is unknown (the caller serves model.DefaultNotifPrefs).
	NotifPrefs(ctx context.Context, userID uuid.UUID) (model.NotifPrefs, error)
	// SetNotifPrefs replaces the user's preferences with p, CreatedAt and UpdatedAt as given.
	// ErrNotFound for an unknown user; ErrInvalid when CheckNotifPrefs refuses p.
	SetNotifPrefs(ctx context.Context, userID uuid.UUID, p model.NotifPrefs) error
}

// CheckNotifPrefs returns ErrInvalid (wrapped, naming the rule) for preferences a store must
// refuse: a missing time, or a first set after the last one. Backends call it first.
func CheckNotifPrefs(p model.NotifPrefs) error {
	switch {
	case p.CreatedAt.IsZero() || p.UpdatedAt.IsZero():
		return fmt.Errorf("notification preferences need the times they were first and last set: %w", ErrInvalid)
	case p.UpdatedAt.Before(p.CreatedAt):
		return fmt.Errorf("notification preferences last set (%s) before they were first set (%s): %w", p.UpdatedAt, p.CreatedAt, ErrInvalid)
	}
	return nil
}
