package sinks

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// TestAccessCache covers the rules of keeping: what is kept, for how long, and what a drop or a
// switch does, including to a read that runs across one.
func TestAccessCache(t *testing.T) {
	k := AccessKey{Session: uuid.New(), App: uuid.New(), User: uuid.New()}
	admitted := SessionAccess{App: model.App{ID: k.App}, Role: model.RoleOwner}
	answer := func(acc SessionAccess, err error) func() (SessionAccess, error) {
		return func() (SessionAccess, error) { return acc, err }
	}
	cases := []struct {
		name string
		on   bool
		read func(c *AccessCache) func() (SessionAccess, error)
		kept bool
	}{
		{"admitted", true, func(*AccessCache) func() (SessionAccess, error) { return answer(admitted, nil) }, true},
		{"off", false, func(*AccessCache) func() (SessionAccess, error) { return answer(admitted, nil) }, false},
		{"refused", true, func(*AccessCache) func() (SessionAccess, error) {
			return answer(SessionAccess{AppErr: ErrNotFound}, nil)
		}, false},
		{"failed", true, func(*AccessCache) func() (SessionAccess, error) { return answer(SessionAccess{}, ErrNotFound) }, false},
		{"a drop during the read", true, func(c *AccessCache) func() (SessionAccess, error) {
			return func() (SessionAccess, error) {
				c.Drop(func(AccessKey, SessionAccess) bool { return false }) // concerns nothing kept, still counts
				return admitted, nil
			}
		}, false},
		{"switched off and on during the read", true, func(c *AccessCache) func() (SessionAccess, error) {
			return func() (SessionAccess, error) { c.SetOn(false); c.SetOn(true); return admitted, nil }
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewAccessCache(time.Minute, tc.on)
			if _, err := c.Read(k, tc.read(c)); err != nil && tc.kept {
				t.Fatal(err)
			}
			if c.Kept(k) != tc.kept {
				t.Fatalf("kept = %v, want %v", !tc.kept, tc.kept)
			}
		})
	}

	t.Run("answered from memory", func(t *testing.T) {
		c := NewAccessCache(time.Minute, true)
		c.Read(k, answer(admitted, nil))
		got, err := c.Read(k, answer(SessionAccess{}, errors.New("read again")))
		if err != nil || got.Role != model.RoleOwner {
			t.Fatalf("second read = %+v, %v; want the kept answer", got, err)
		}
	})
	t.Run("expires", func(t *testing.T) {
		now := time.Now()
		c := NewAccessCache(time.Minute, true)
		c.now = func() time.Time { return now }
		c.Read(k, answer(admitted, nil))
		now = now.Add(time.Minute)
		if c.Kept(k) {
			t.Fatal("kept past its TTL")
		}
		if _, err := c.Read(k, answer(SessionAccess{}, ErrNotFound)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("read past the TTL = %v, want the store's answer", err)
		}
	})
	t.Run("drops", func(t *testing.T) {
		c := NewAccessCache(time.Minute, true)
		other := AccessKey{Session: uuid.New(), App: k.App, User: uuid.New()}
		c.Read(k, answer(admitted, nil))
		c.Read(other, answer(admitted, nil))
		c.Drop(func(x AccessKey, _ SessionAccess) bool { return x.Session == k.Session })
		if c.Kept(k) || !c.Kept(other) {
			t.Fatalf("after dropping k's session: kept %v, %v; want false, true", c.Kept(k), c.Kept(other))
		}
		c.Drop(nil)
		if c.Kept(other) {
			t.Fatal("a nil match kept an answer")
		}
		c.Read(k, answer(admitted, nil))
		c.SetOn(true)
		if c.Kept(k) {
			t.Fatal("SetOn kept an answer")
		}
	})
	t.Run("bounded", func(t *testing.T) {
		c := NewAccessCache(time.Minute, true)
		for range accessMaxEntries + 1 {
			c.Read(AccessKey{Session: uuid.New()}, answer(admitted, nil))
		}
		if n := len(c.entries); n > accessMaxEntries {
			t.Fatalf("%d answers kept, want at most %d", n, accessMaxEntries)
		}
	})
}

// TestAccessCacheNil: a nil cache (a store without one) reads every time and keeps nothing.
func TestAccessCacheNil(t *testing.T) {
	var c *AccessCache
	reads := 0
	for range 2 {
		if _, err := c.Read(AccessKey{}, func() (SessionAccess, error) { reads++; return SessionAccess{}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	c.Drop(nil)
	if reads != 2 || c.On() {
		t.Fatalf("nil cache: %d reads of 2, on = %v", reads, c.On())
	}
}
