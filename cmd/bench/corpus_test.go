package main

import (
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// TestRowsRenewSessions: every copy of a body that rows holds, and every call of next, has
// session ids of its own, shared by the items that shared one in the body, as loadgen's
// replays do. Repeating the corpus's ids made the store insert part rewrite ever longer
// sessions (2.2× its CPU per row).
func TestRowsRenewSessions(t *testing.T) {
	s1, s2 := uuid.New(), uuid.New()
	c := &corpus{
		batches: []model.Batch{{
			Events: []model.Event{{SessionID: s1, Timestamp: 10}, {SessionID: s1, Timestamp: 20}, {SessionID: s2, Timestamp: 30}, {Timestamp: 40}},
			Spans:  []model.Span{{SessionID: s2, StartTime: 5, EndTime: 6}},
		}},
		latest: []int64{40},
	}
	app := uuid.New()
	r := newRows(c, app, 10, 1000) // two copies of the body
	if len(r.events) != 8 || len(r.spans) != 2 {
		t.Fatalf("rows hold %d events and %d spans, want 8 and 2", len(r.events), len(r.spans))
	}
	seen := map[uuid.UUID]bool{s1: true, s2: true, uuid.Nil: true}
	for round := 0; round < 2; round++ {
		ev, sp := r.next()
		for cp := 0; cp < 2; cp++ {
			e, s := ev[cp*4:cp*4+4], sp[cp]
			if e[0].SessionID != e[1].SessionID || e[2].SessionID != s.SessionID {
				t.Fatalf("round %d copy %d: items of one session got different ids: %v %v, %v %v", round, cp, e[0].SessionID, e[1].SessionID, e[2].SessionID, s.SessionID)
			}
			if e[3].SessionID != uuid.Nil {
				t.Fatalf("round %d copy %d: an event without a session got %v", round, cp, e[3].SessionID)
			}
			for _, id := range []uuid.UUID{e[0].SessionID, e[2].SessionID} {
				if seen[id] {
					t.Fatalf("round %d copy %d: session id %v repeated", round, cp, id)
				}
				seen[id] = true
			}
			if e[0].AppID != app || e[0].Timestamp != 970 || s.StartTime != 965 {
				t.Fatalf("round %d copy %d: app %v, times %d and %d, want %v, 970 and 965", round, cp, e[0].AppID, e[0].Timestamp, s.StartTime, app)
			}
		}
	}
}

// TestRowsRenewSessionsCut: a body copy that n cuts short keeps its items' sessions in step
// with them, and a span without a session keeps none.
func TestRowsRenewSessionsCut(t *testing.T) {
	s1 := uuid.New()
	c := &corpus{
		batches: []model.Batch{{
			Events: []model.Event{{SessionID: s1, Timestamp: 10}, {SessionID: s1, Timestamp: 20}, {Timestamp: 30}},
			Spans:  []model.Span{{StartTime: 5, EndTime: 6}},
		}},
		latest: []int64{30},
	}
	r := newRows(c, uuid.New(), 6, 1000) // one copy and two events of the next
	ev, sp := r.next()
	if len(ev) != 5 || len(sp) != 1 {
		t.Fatalf("rows hold %d events and %d spans, want 5 and 1", len(ev), len(sp))
	}
	if sp[0].SessionID != uuid.Nil || ev[2].SessionID != uuid.Nil {
		t.Fatalf("items without a session got %v and %v", ev[2].SessionID, sp[0].SessionID)
	}
	a, b := ev[0].SessionID, ev[3].SessionID
	if a == uuid.Nil || a == s1 || ev[1].SessionID != a || ev[4].SessionID != b || b == a || b == uuid.Nil {
		t.Fatalf("sessions of the two copies: %v %v, %v %v (corpus %v)", a, ev[1].SessionID, b, ev[4].SessionID, s1)
	}
}
