package sinks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// Onboarding records that an app's SDK sends data (issue #15): the app's first accepted batch
// marks it onboarded, and each OS name its batches carry is added to model.App's OSNames. Both
// metadata stores implement it; the Onboarding group of sinks/metatest.Run checks them. The
// MetaStore contract's rules on durability, times (at least microsecond precision, back in
// UTC), errors (ErrUnavailable when the store does not answer) and concurrency apply.
type Onboarding interface {
	// MarkOnboarded records an accepted batch of the app, in one conditional write. An app not
	// onboarded yet gets Onboarded true and OnboardedAt m.At, and UniqueID m.UniqueID when its
	// UniqueID is empty; an app onboarded already keeps OnboardedAt and UniqueID. Either way,
	// each name of m.OSNames the app does not hold yet is appended to OSNames, in m's order.
	// Nothing else changes (UpdatedAt included), so the same mark again changes nothing, and
	// concurrent marks lose no OS name. ErrNotFound for an unknown app; ErrInvalid when
	// CheckOnboardingMark refuses m.
	MarkOnboarded(ctx context.Context, appID uuid.UUID, m OnboardingMark) error
}

// OnboardingMark is what an accepted batch tells about its app.
type OnboardingMark struct {
	At       time.Time // when the batch was accepted
	UniqueID string    // the batch's app_unique_id; empty: unknown
	OSNames  []string  // the distinct lowercased OS names of the batch
}

// MaxOSNames bounds the OS names one mark carries.
const MaxOSNames = 16

// CheckOnboardingMark returns ErrInvalid (wrapped, naming the rule) for a mark a store must
// refuse: no time; a NUL byte or invalid UTF-8 in the unique id or an OS name (Postgres text
// cannot hold them); an OS name that is empty, not lowercase or repeated; more than MaxOSNames
// names. Backends call it first.
func CheckOnboardingMark(m OnboardingMark) error {
	if m.At.IsZero() {
		return fmt.Errorf("an onboarding mark needs the time of its batch: %w", ErrInvalid)
	}
	if !storable(m.UniqueID) {
		return fmt.Errorf("onboarding mark: the unique id holds a NUL byte or invalid UTF-8: %w", ErrInvalid)
	}
	if len(m.OSNames) > MaxOSNames {
		return fmt.Errorf("onboarding mark: %d OS names, at most %d: %w", len(m.OSNames), MaxOSNames, ErrInvalid)
	}
	for i, n := range m.OSNames {
		switch {
		case n == "" || !storable(n):
			return fmt.Errorf("onboarding mark: OS name %q is empty or holds a NUL byte or invalid UTF-8: %w", n, ErrInvalid)
		case strings.ToLower(n) != n:
			return fmt.Errorf("onboarding mark: OS name %q is not lowercase: %w", n, ErrInvalid)
		case slices.Contains(m.OSNames[:i], n):
			return fmt.Errorf("onboarding mark: OS name %q is repeated: %w", n, ErrInvalid)
		}
	}
	return nil
}

func storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// Onboarder records onboarding from the ingest path without holding it up: Observe returns at
// once and writes, in the background, only when the batch tells the app's record something it
// lacks (the app is not onboarded, or an OS name is new). It remembers per node which apps it
// stored and their OS names, so an app's batches cost one write per node and new OS name, not
// one per batch, even when the caller's model.App is stale (the API-key cache). At most one
// write per app is under way; a failed write (the metadata store down) is not retried before
// RetryAfter and never fails or slows the batch: a later batch tries again. The write is
// conditional (Onboarding.MarkOnboarded), so repeating it is harmless. A nil Onboarder does
// nothing.
type Onboarder struct {
	Store      Onboarding
	Log        *slog.Logger
	Timeout    time.Duration    // per write; default 10 s
	RetryAfter time.Duration    // after a failed write; default 30 s
	Now        func() time.Time // default time.Now

	mu     sync.Mutex
	apps   map[uuid.UUID]*onboardState
	closed bool
	wg     sync.WaitGroup
}

type onboardState struct {
	done    bool      // the app is onboarded in the store
	os      []string  // OS names the store holds
	busy    bool      // a write is under way
	retryAt time.Time // after a failed write
}

// Observe notes an accepted batch of app (events and spans as decoded).
func (o *Onboarder) Observe(app model.App, events []model.Event, spans []model.Span) {
	if o == nil || o.Store == nil || len(events)+len(spans) == 0 {
		return
	}
	names := BatchOSNames(events, spans)
	if app.Onboarded && subset(names, app.OSNames) {
		return
	}
	now := time.Now()
	if o.Now != nil {
		now = o.Now()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	if o.apps == nil {
		o.apps = map[uuid.UUID]*onboardState{}
	}
	st := o.apps[app.ID]
	if st == nil {
		st = &onboardState{}
		o.apps[app.ID] = st
	}
	if app.Onboarded && !st.done {
		st.done, st.os = true, union(st.os, app.OSNames)
	}
	if st.done && subset(names, st.os) || st.busy || now.Before(st.retryAt) {
		return
	}
	m := OnboardingMark{At: now.UTC(), OSNames: names}
	if len(events) > 0 {
		m.UniqueID = events[0].Attribute.AppUniqueID
	} else {
		m.UniqueID = spans[0].Attributes.AppUniqueID
	}
	if !storable(m.UniqueID) {
		m.UniqueID = ""
	}
	st.busy = true
	o.wg.Add(1)
	go o.write(app.ID, st, m)
}

func (o *Onboarder) write(app uuid.UUID, st *onboardState, m OnboardingMark) {
	defer o.wg.Done()
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	err := o.Store.MarkOnboarded(ctx, app, m)
	cancel()
	o.mu.Lock()
	defer o.mu.Unlock()
	st.busy = false
	switch {
	case err == nil:
		st.done, st.os = true, union(st.os, m.OSNames)
	case errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid):
		// Asking again would get the same answer: the app was deleted, or the mark cannot be
		// stored. Take it as done so that this app's batches do not write again.
		st.done, st.os = true, union(st.os, m.OSNames)
		if o.Log != nil {
			o.Log.Warn("onboarding: not recorded", "app", app.String(), "error", err.Error())
		}
	default:
		retry := o.RetryAfter
		if retry <= 0 {
			retry = 30 * time.Second
		}
		now := time.Now()
		if o.Now != nil {
			now = o.Now()
		}
		st.retryAt = now.Add(retry)
		if o.Log != nil {
			o.Log.Warn("onboarding: the metadata store did not record it; a later batch tries again",
				"app", app.String(), "retry_after", retry.String(), "error", err.Error())
		}
	}
}

// Close stops recording and waits for the writes under way.
func (o *Onboarder) Close() error {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.wg.Wait()
	return nil
}

// BatchOSNames returns the distinct lowercased OS names of a batch's events and spans, in the
// order they first appear, at most MaxOSNames; names a store cannot hold are left out.
func BatchOSNames(events []model.Event, spans []model.Span) []string {
	var (
		out  []string
		last string
	)
	add := func(raw string) {
		if raw == last || raw == "" || len(out) == MaxOSNames {
			return
		}
		last = raw
		if !storable(raw) {
			return
		}
		if n := strings.ToLower(raw); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for i := range events {
		add(events[i].Attribute.OSName)
	}
	for i := range spans {
		add(spans[i].Attributes.OSName)
	}
	return out
}

// subset reports whether every name of a is in b.
func subset(a, b []string) bool {
	for _, n := range a {
		if !slices.Contains(b, n) {
			return false
		}
	}
	return true
}

// union returns a followed by the names of b it does not hold.
func union(a, b []string) []string {
	for _, n := range b {
		if !slices.Contains(a, n) {
			a = append(a, n)
		}
	}
	return a
}
