package sinks

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// AccessCache keeps the answers of AppAccess.SessionAppRole that admitted a request, for a
// metadata store that knows when what they read changes: the store drops the answers a change
// concerns (Drop) before the change's call returns, or as soon as it hears of it. Then the
// dashboard's sign-in check of a live answer reads no store (on PostgreSQL that round trip
// alone had a p99 above the live target; on Badger it is a tenth of the answer's CPU, most of
// it decoding three JSON records).
//
// An answer is kept for the cache's TTL at most, and only while the cache is on (SetOn: a
// store that may miss changes, such as one whose listening connection is down, turns it off,
// which drops everything). A read that ran while something was dropped is not kept: it may
// have read a row from before the change. Refusals are never kept. A nil *AccessCache keeps
// nothing: Read reads, Drop does nothing, On is false.
type AccessCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	gen     uint64 // counts drops and switches; a read across one is not kept
	on      bool
	entries map[AccessKey]accessEntry
}

// AccessKey is what SessionAppRole is asked.
type AccessKey struct{ Session, App, User uuid.UUID }

type accessEntry struct {
	acc   SessionAccess
	until time.Time
}

// DefaultAccessTTL is how long the metadata stores keep an answer at most.
const DefaultAccessTTL = 10 * time.Second

// accessMaxEntries bounds a cache; past it, it starts again empty.
const accessMaxEntries = 10000

// NewAccessCache returns an empty cache that keeps answers for ttl, on or off.
func NewAccessCache(ttl time.Duration, on bool) *AccessCache {
	return &AccessCache{ttl: ttl, now: time.Now, on: on, entries: map[AccessKey]accessEntry{}}
}

// Read answers k from the cache, or with read, keeping read's answer when it admits the
// request (no error, no AppErr) and nothing was dropped meanwhile.
func (c *AccessCache) Read(k AccessKey, read func() (SessionAccess, error)) (SessionAccess, error) {
	if c == nil {
		return read()
	}
	c.mu.Lock()
	e, ok := c.entries[k]
	if ok && !c.now().Before(e.until) {
		delete(c.entries, k)
		ok = false
	}
	gen := c.gen
	c.mu.Unlock()
	if ok {
		return e.acc, nil
	}
	acc, err := read()
	if err != nil || acc.AppErr != nil {
		return acc, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on && gen == c.gen {
		if len(c.entries) >= accessMaxEntries {
			clear(c.entries)
		}
		c.entries[k] = accessEntry{acc: acc, until: c.now().Add(c.ttl)}
	}
	return acc, nil
}

// Drop removes the kept answers match says a change concerns; a nil match removes them all.
func (c *AccessCache) Drop(match func(AccessKey, SessionAccess) bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if match == nil {
		clear(c.entries)
		return
	}
	for k, e := range c.entries {
		if match(k, e.acc) {
			delete(c.entries, k)
		}
	}
}

// SetOn turns keeping answers on or off; either way every answer kept so far goes.
func (c *AccessCache) SetOn(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.on = on
	clear(c.entries)
}

// On says whether answers are kept.
func (c *AccessCache) On() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.on
}

// Kept says whether an answer for k is kept now (for tests).
func (c *AccessCache) Kept(k AccessKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	return ok && c.now().Before(e.until)
}
