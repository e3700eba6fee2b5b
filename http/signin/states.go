package signin

import (
	"crypto/sha256"
	"sync"
	"time"
)

// States remembers the state values of OAuth sign-ins that were started (the reference
// dashboard's {"type": "init", "state"}) until the sign-in finishes with the same state
// ({"type": "code"}), so a code arrives only for a sign-in this server saw begin. Each state
// is single use, bound to its provider and forgotten after TTL.
//
// States live in this process's memory: when several nodes serve the same dashboard, the init
// and the code of one sign-in must reach the same node (or sign-in answers 401 and the user
// starts again). A restart forgets the sign-ins in flight the same way.
//
// The zero value is ready to use; fields must not change after the first call. Safe for
// concurrent use.
type States struct {
	TTL time.Duration    // how long a started sign-in may take; default 10 minutes
	Max int              // states kept at most, the oldest dropped first; default 100 000
	Now func() time.Time // nil: time.Now

	mu    sync.Mutex
	until map[stateKey]time.Time // live states and when they expire
	order []stateEntry           // insertion order, which is expiry order (one TTL)
}

// MaxStateLen bounds a state value; the reference dashboard's are about 110 bytes.
const MaxStateLen = 2048

const (
	defaultStateTTL = 10 * time.Minute
	defaultStateMax = 100_000
)

// stateKey is a digest of provider and state, so a long state costs no more memory than a
// short one and the two parts cannot run into each other.
type stateKey [sha256.Size]byte

type stateEntry struct {
	key   stateKey
	until time.Time
}

func keyOf(provider, state string) stateKey {
	h := sha256.New()
	h.Write([]byte(provider))
	h.Write([]byte{0})
	h.Write([]byte(state))
	var k stateKey
	h.Sum(k[:0])
	return k
}

// Put records that a sign-in with provider started with state. Putting the same state again
// restarts its TTL.
func (s *States) Put(provider, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expire(now)
	if s.until == nil {
		s.until = map[stateKey]time.Time{}
	}
	e := stateEntry{key: keyOf(provider, state), until: now.Add(s.ttl())}
	s.until[e.key] = e.until
	s.order = append(s.order, e)
	// order also holds entries of states taken or renewed since; it is bounded too.
	for len(s.until) > s.max() || len(s.order) > 2*s.max() {
		s.pop()
	}
}

// Take reports whether a sign-in with provider started with state and has not expired, and
// forgets the state: a second Take of it is false.
func (s *States) Take(provider, state string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expire(now)
	k := keyOf(provider, state)
	until, ok := s.until[k]
	if !ok || !now.Before(until) {
		return false
	}
	delete(s.until, k)
	return true
}

// Len is the number of states kept (expired ones may still count until the next call).
func (s *States) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.until)
}

// expire drops the states whose time is over; they sit at the front of order.
func (s *States) expire(now time.Time) {
	for len(s.order) > 0 && !now.Before(s.order[0].until) {
		s.pop()
	}
}

// pop drops the oldest entry of order, and its state unless a later Put renewed it.
func (s *States) pop() {
	e := s.order[0]
	s.order[0] = stateEntry{}
	s.order = s.order[1:]
	if until, ok := s.until[e.key]; ok && until.Equal(e.until) {
		delete(s.until, e.key)
	}
	if len(s.order) == 0 {
		s.order = nil // let the backing array go
	}
}

func (s *States) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *States) ttl() time.Duration {
	if s.TTL > 0 {
		return s.TTL
	}
	return defaultStateTTL
}

func (s *States) max() int {
	if s.Max > 0 {
		return s.Max
	}
	return defaultStateMax
}
