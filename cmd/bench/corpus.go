package main

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// corpus is the fixture request bodies loadgen replays, each also decoded once (events with
// their Facts), so that every part of the ingest path can be measured on the same data.
type corpus struct {
	names   []string // file names
	bodies  [][]byte
	batches []model.Batch
	items   []int64 // events + spans of each body
	latest  []int64 // latest event or span time of each body: the time loadgen moves to "now"
	span    []int64 // latest item time minus the earliest event time, per body
}

// loadCorpus reads and decodes every batch_*.json in dir.
func loadCorpus(dir string) (*corpus, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "batch_*.json"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no batch_*.json in %s (%v)", dir, err)
	}
	c := &corpus{}
	app := uuid.New()
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		b, err := model.DecodeBatch(body, app, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
		}
		for i := range b.Events {
			b.Events[i].Facts = model.DeriveFacts(&b.Events[i])
		}
		latest, earliest := itemTimes(&b)
		c.names = append(c.names, filepath.Base(p))
		c.bodies = append(c.bodies, body)
		c.batches = append(c.batches, b)
		c.items = append(c.items, int64(len(b.Events)+len(b.Spans)))
		c.latest = append(c.latest, latest)
		c.span = append(c.span, max(0, latest-earliest))
	}
	return c, nil
}

// itemTimes is what loadgen anchors a replay on (the latest event timestamp or span time) and
// the earliest event timestamp (0, 0 for a body without items).
func itemTimes(b *model.Batch) (latest, earliestEvent int64) {
	first := true
	for i := range b.Events {
		ts := b.Events[i].Timestamp
		if first || ts > latest {
			latest = ts
		}
		if first || ts < earliestEvent {
			earliestEvent = ts
		}
		first = false
	}
	for i := range b.Spans {
		for _, ts := range [2]int64{b.Spans[i].StartTime, b.Spans[i].EndTime} {
			if first || ts > latest {
				latest, first = ts, false
			}
		}
	}
	if len(b.Events) == 0 {
		earliestEvent = latest
	}
	return latest, earliestEvent
}

func (c *corpus) totalItems() (n int64) {
	for _, v := range c.items {
		n += v
	}
	return n
}

// itemsPerRequest is the mean items of a request when the bodies are sent round-robin, as
// loadgen does.
func (c *corpus) itemsPerRequest() float64 {
	return float64(c.totalItems()) / float64(len(c.bodies))
}

// oneSessionEvent names the smallest body of one event with a session id and no span: replayed
// with fresh ids, each request of it starts one new session actor on the node, at the least
// cost to send.
func (c *corpus) oneSessionEvent() (string, error) {
	best := -1
	for i, b := range c.batches {
		if len(b.Events) == 1 && len(b.Spans) == 0 && b.Events[0].SessionID != uuid.Nil &&
			(best < 0 || len(c.bodies[i]) < len(c.bodies[best])) {
			best = i
		}
	}
	if best < 0 {
		return "", errors.New("no body of the corpus has exactly one event with a session id and no span")
	}
	return c.names[best], nil
}

// widest is the longest time between a body's earliest event and its latest item: how far
// before its send time a replayed event can lie.
func (c *corpus) widest() time.Duration {
	var w int64
	for _, s := range c.span {
		w = max(w, s)
	}
	return time.Duration(w)
}

// rows is a reusable store batch of n items copied from the corpus (whole bodies round-robin,
// each body's times moved so its latest item lands on the build time, as loadgen's replays
// do). next gives every row a fresh id, so repeated writes of it are new rows, never deduped.
type rows struct {
	events []model.Event
	spans  []model.Span
	// evSess and spSess give each event's and span's session as an index into a table of
	// (body copy, session) pairs, -1 for none: next gives every pair a fresh session id, as
	// loadgen does per request. Repeating the corpus's session ids made each session's walk
	// steps and journey facts grow with every write, and the store rewrite them all each time.
	evSess, spSess []int32
	sessions       []uuid.UUID
	rng            *rand.ChaCha8
	raw            [8]byte
}

func newRows(c *corpus, app uuid.UUID, n int, now int64) *rows {
	r := &rows{rng: rand.NewChaCha8(seed())}
	for i := 0; len(r.events)+len(r.spans) < n; i++ {
		k := i % len(c.batches)
		b := &c.batches[k]
		delta := now - c.latest[k]
		copySess := map[uuid.UUID]int32{} // this copy's sessions
		sess := func(id uuid.UUID) int32 {
			if id == uuid.Nil {
				return -1
			}
			j, ok := copySess[id]
			if !ok {
				j = int32(len(r.sessions))
				copySess[id] = j
				r.sessions = append(r.sessions, id)
			}
			return j
		}
		for j := range b.Events {
			if len(r.events)+len(r.spans) == n {
				break
			}
			e := b.Events[j]
			e.AppID = app
			e.Timestamp += delta
			if e.Attribute.SessionStartTime != 0 {
				e.Attribute.SessionStartTime += delta
			}
			r.events = append(r.events, e)
			r.evSess = append(r.evSess, sess(e.SessionID))
		}
		for j := range b.Spans {
			if len(r.events)+len(r.spans) == n {
				break
			}
			s := b.Spans[j]
			s.AppID = app
			s.StartTime += delta
			s.EndTime += delta
			r.spans = append(r.spans, s)
			r.spSess = append(r.spSess, sess(s.SessionID))
		}
	}
	return r
}

func seed() (s [32]byte) {
	u1, u2 := uuid.New(), uuid.New()
	copy(s[:16], u1[:])
	copy(s[16:], u2[:])
	return s
}

// next renews every row's id: a random version-4 UUID per event, a random span id per span
// (the one allocation per row: span ids are strings), and every body copy's session ids.
func (r *rows) next() ([]model.Event, []model.Span) {
	for i := range r.sessions {
		r.sessions[i] = r.uuid()
	}
	for i := range r.events {
		r.events[i].ID = r.uuid()
		if j := r.evSess[i]; j >= 0 {
			r.events[i].SessionID = r.sessions[j]
		}
	}
	for i := range r.spans {
		if j := r.spSess[i]; j >= 0 {
			r.spans[i].SessionID = r.sessions[j]
		}
		binary.BigEndian.PutUint64(r.raw[:], r.rng.Uint64()|1)
		var h [16]byte
		hex.Encode(h[:], r.raw[:])
		r.spans[i].SpanID = string(h[:])
	}
	return r.events, r.spans
}

func (r *rows) uuid() uuid.UUID {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[:8], r.rng.Uint64())
	binary.BigEndian.PutUint64(u[8:], r.rng.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u
}
