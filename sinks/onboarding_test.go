package sinks_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// fakeOnboarding counts marks and fails while fail is set.
type fakeOnboarding struct {
	mu    sync.Mutex
	marks []sinks.OnboardingMark
	fail  error
	block chan struct{} // when set, a mark waits for it
}

func (f *fakeOnboarding) MarkOnboarded(ctx context.Context, app uuid.UUID, m sinks.OnboardingMark) error {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.marks = append(f.marks, m)
	return f.fail
}

func (f *fakeOnboarding) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.marks)
}

func batch(uniqueID string, osNames ...string) []model.Event {
	var out []model.Event
	for _, n := range osNames {
		out = append(out, model.Event{Attribute: model.Attributes{AppUniqueID: uniqueID, OSName: n}})
	}
	return out
}

// waitCount waits until the store got n marks.
func waitCount(t *testing.T, f *fakeOnboarding, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for f.count() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d marks, want %d", f.count(), n)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond) // let the writer record its answer
}

// TestOnboarder: an app's batches cost one write per node and new OS name, even with a stale
// app; a failed write is retried by a later batch only after RetryAfter; an onboarded app whose
// OS names are known costs nothing; a batch without events or spans marks nothing.
func TestOnboarder(t *testing.T) {
	f := &fakeOnboarding{}
	var clock sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := &sinks.Onboarder{Store: f, RetryAfter: time.Minute, Now: func() time.Time {
		clock.Lock()
		defer clock.Unlock()
		return now
	}}
	defer o.Close()
	app := model.App{ID: uuid.New()} // as the key cache holds it: not onboarded, for a while

	o.Observe(app, nil, nil)
	o.Observe(app, batch("com.example", "android", "Android", "android"), nil)
	waitCount(t, f, 1)
	want := sinks.OnboardingMark{At: o.Now(), UniqueID: "com.example", OSNames: []string{"android"}}
	if m := f.marks[0]; !m.At.Equal(want.At) || m.UniqueID != want.UniqueID || !slices.Equal(m.OSNames, want.OSNames) {
		t.Errorf("first mark %+v, want %+v", m, want)
	}
	for range 100 {
		o.Observe(app, batch("com.example", "android"), nil)
	}
	o.Observe(app, nil, []model.Span{{Attributes: model.Attributes{AppUniqueID: "com.example", OSName: "android"}}})
	time.Sleep(10 * time.Millisecond)
	if n := f.count(); n != 1 {
		t.Fatalf("%d marks after repeated batches of a stale app, want 1", n)
	}
	o.Observe(app, batch("com.example", "iOS"), nil)
	waitCount(t, f, 2)
	if m := f.marks[1]; !slices.Equal(m.OSNames, []string{"ios"}) {
		t.Errorf("mark of a new OS name: %+v", m)
	}

	// An app the caller knows as onboarded with its OS names costs nothing.
	known := model.App{ID: uuid.New(), Onboarded: true, OSNames: []string{"android"}}
	o.Observe(known, batch("x", "android"), nil)
	time.Sleep(10 * time.Millisecond)
	if n := f.count(); n != 2 {
		t.Fatalf("%d marks after a known app's batch, want 2", n)
	}

	// A failed write: later batches do not write again before RetryAfter, then one does.
	down := model.App{ID: uuid.New()}
	f.mu.Lock()
	f.fail = sinks.Unavailable(sinks.StoreMeta, errors.New("down"))
	f.mu.Unlock()
	o.Observe(down, batch("y", "android"), nil)
	waitCount(t, f, 3)
	o.Observe(down, batch("y", "android"), nil)
	time.Sleep(10 * time.Millisecond)
	if n := f.count(); n != 3 {
		t.Fatalf("%d marks right after a failed one, want 3", n)
	}
	f.mu.Lock()
	f.fail = nil
	f.mu.Unlock()
	clock.Lock()
	now = now.Add(time.Minute)
	clock.Unlock()
	o.Observe(down, batch("y", "android"), nil)
	waitCount(t, f, 4)
	o.Observe(down, batch("y", "android"), nil)
	time.Sleep(10 * time.Millisecond)
	if n := f.count(); n != 4 {
		t.Fatalf("%d marks after the retry succeeded, want 4", n)
	}
}

// TestOnboarderDoesNotWait: Observe returns while the store does not answer, with at most one
// write per app under way, and Close waits for it.
func TestOnboarderDoesNotWait(t *testing.T) {
	f := &fakeOnboarding{block: make(chan struct{})}
	o := &sinks.Onboarder{Store: f}
	app := model.App{ID: uuid.New()}
	start := time.Now()
	for range 50 {
		o.Observe(app, batch("z", "android"), nil)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Observe took %s while the store hung", d)
	}
	closed := make(chan struct{})
	go func() { o.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a write was under way")
	case <-time.After(20 * time.Millisecond):
	}
	close(f.block)
	<-closed
	if n := f.count(); n != 1 {
		t.Errorf("%d marks, want 1", n)
	}
	o.Observe(model.App{ID: uuid.New()}, batch("z", "android"), nil) // after Close: nothing
	if n := f.count(); n != 1 {
		t.Errorf("%d marks after Close, want 1", n)
	}
}

func TestBatchOSNames(t *testing.T) {
	got := sinks.BatchOSNames(batch("", "iOS", "ios", "", "iPadOS", "ios", "\xff"), []model.Span{{Attributes: model.Attributes{OSName: "android"}}})
	if want := []string{"ios", "ipados", "android"}; !slices.Equal(got, want) {
		t.Errorf("BatchOSNames = %v, want %v", got, want)
	}
}
