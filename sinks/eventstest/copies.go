package eventstest

import (
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// Copies makes synthetic copies of recorded events, to fill a store to benchmark scale (make
// bench's 10M-event rows, sinks/clickhouse's big benchmarks): the bodies round-robin, each copy
// with fresh event ids, one fresh session id per session of the body, and all its times moved by
// one random offset that puts its latest event uniformly in [now-window+spread, now], spread
// being the body's latest minus its earliest event time, so the copy lies in the last window.
// Facts are copied as they are (they depend on neither ids nor times).
type Copies struct {
	bodies   []copyBody
	app      uuid.UUID
	now      int64
	window   int64
	rng      *rand.Rand
	k, j     int   // the body being copied, and its next event
	delta    int64 // the time offset of the copy in progress
	sessions map[uuid.UUID]uuid.UUID
}

type copyBody struct {
	events           []model.Event
	latest, earliest int64
}

// NewCopies copies the events of bodies (empty ones are skipped) into app, the copies ending by
// now and starting no earlier than window before it; rng draws ids and offsets.
func NewCopies(bodies [][]model.Event, app uuid.UUID, now time.Time, window time.Duration, rng *rand.Rand) *Copies {
	c := &Copies{app: app, now: now.UnixNano(), window: int64(window), rng: rng, sessions: map[uuid.UUID]uuid.UUID{}}
	for _, evs := range bodies {
		if len(evs) == 0 {
			continue
		}
		b := copyBody{events: evs, latest: evs[0].Timestamp, earliest: evs[0].Timestamp}
		for i := range evs {
			b.latest, b.earliest = max(b.latest, evs[i].Timestamp), min(b.earliest, evs[i].Timestamp)
		}
		c.bodies = append(c.bodies, b)
	}
	return c
}

// Append appends the next n copied events to buf and returns it; a copy of a body may continue
// into the next call. With no non-empty body it appends nothing.
func (c *Copies) Append(buf []model.Event, n int) []model.Event {
	if len(c.bodies) == 0 {
		return buf
	}
	for ; n > 0; n-- {
		b := &c.bodies[c.k]
		if c.j == 0 { // a new copy
			room := max(0, c.window-(b.latest-b.earliest))
			c.delta = c.now - c.rng.Int64N(room+1) - b.latest
			clear(c.sessions)
		}
		e := b.events[c.j]
		e.ID, e.AppID = c.uuid(), c.app
		if e.SessionID != uuid.Nil {
			s, ok := c.sessions[e.SessionID]
			if !ok {
				s = c.uuid()
				c.sessions[e.SessionID] = s
			}
			e.SessionID = s
		}
		e.Timestamp += c.delta
		if e.Attribute.SessionStartTime != 0 {
			e.Attribute.SessionStartTime += c.delta
		}
		buf = append(buf, e)
		if c.j++; c.j == len(b.events) {
			c.j, c.k = 0, (c.k+1)%len(c.bodies)
		}
	}
	return buf
}

// uuid is a random version-4 UUID from c's source.
func (c *Copies) uuid() (id uuid.UUID) {
	for i := 0; i < 16; i += 8 {
		v := c.rng.Uint64()
		for j := range 8 {
			id[i+j] = byte(v >> (8 * j))
		}
	}
	id[6], id[8] = id[6]&0x0f|0x40, id[8]&0x3f|0x80
	return id
}
