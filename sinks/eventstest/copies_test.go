package eventstest

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

func TestCopies(t *testing.T) {
	app, sA, sB := uuid.New(), uuid.New(), uuid.New()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	ev := func(session uuid.UUID, offset time.Duration) model.Event {
		return model.Event{ID: uuid.New(), SessionID: session, Timestamp: base + int64(offset), Type: "custom",
			Attribute: model.Attributes{SessionStartTime: base}}
	}
	bodies := [][]model.Event{
		{ev(sA, 0), ev(sB, time.Minute), ev(sA, 2*time.Hour)},
		{},
		{ev(uuid.Nil, 0)},
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	const window = 6 * 24 * time.Hour
	for _, tc := range []struct {
		name  string
		parts []int // events asked per Append call
	}{
		{"one call", []int{20}},
		{"calls ending inside a copy", []int{1, 2, 5, 12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCopies(bodies, app, now, window, rand.New(rand.NewPCG(1, 2)))
			var got []model.Event
			for _, n := range tc.parts {
				got = c.Append(got, n)
			}
			if len(got) != 20 {
				t.Fatalf("%d events, want 20", len(got))
			}
			ids := map[uuid.UUID]bool{}
			for i, e := range got {
				src := bodies[2][0] // every fourth: the body of one event (the empty one is skipped)
				if i%4 < 3 {
					src = bodies[0][i%4]
				}
				if e.AppID != app || ids[e.ID] || e.ID == src.ID || e.Type != src.Type {
					t.Fatalf("event %d: app %s, id %s repeated or kept", i, e.AppID, e.ID)
				}
				ids[e.ID] = true
				if e.Timestamp < now.Add(-window).UnixNano() || e.Timestamp > now.UnixNano() {
					t.Errorf("event %d at %v, outside the window", i, time.Unix(0, e.Timestamp).UTC())
				}
				if e.Timestamp-e.Attribute.SessionStartTime != src.Timestamp-src.Attribute.SessionStartTime {
					t.Errorf("event %d: times not moved together", i)
				}
				if (e.SessionID == uuid.Nil) != (src.SessionID == uuid.Nil) || e.SessionID == src.SessionID && e.SessionID != uuid.Nil {
					t.Errorf("event %d: session %s from %s", i, e.SessionID, src.SessionID)
				}
			}
			// Within a copy one session stays one; across copies it never repeats.
			var sessionsA []uuid.UUID
			for i := 0; i+3 < len(got); i += 4 {
				if got[i].SessionID != got[i+2].SessionID || got[i].SessionID == got[i+1].SessionID {
					t.Errorf("copy at %d: sessions %s %s %s", i, got[i].SessionID, got[i+1].SessionID, got[i+2].SessionID)
				}
				if slices.Contains(sessionsA, got[i].SessionID) {
					t.Errorf("copy at %d reuses a session of an earlier copy", i)
				}
				sessionsA = append(sessionsA, got[i].SessionID)
			}
		})
	}
	if got := NewCopies([][]model.Event{{}}, app, now, window, rand.New(rand.NewPCG(1, 2))).Append(nil, 5); len(got) != 0 {
		t.Errorf("no events to copy: got %d", len(got))
	}
}
