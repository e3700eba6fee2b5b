// Package snaptest is the conformance suite of sinks.Snapshots. Each backend's test calls Run
// inside a subtest named after the backend:
//
//	t.Run("badger", func(t *testing.T) { snaptest.Run(t, open) })
//
// Each group of subtests opens its own store; within a group every case uses fresh identities.
//
// Beyond the doc comments of sinks.Snapshots the suite pins down these choices:
//   - state comes back byte for byte as saved; nil and empty are the same (LoadSnapshot may
//     return either for both);
//   - kinds and identities are UTF-8 without NUL bytes (a PostgreSQL text column holds no
//     other); identities may hold "/" (a session's is "appid/sessionid"), kinds are names
//     without it (badgerdb.Snapshots keys a snapshot by kind + "/" + identity);
//   - the slice SaveSnapshot was given is the caller's again once it returns;
//   - expiry is checked with a ttl of 2 s and a wait of 2.5 s (Badger's TTL has a resolution of
//     one second), so Run takes a few seconds.
package snaptest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks"
)

// Open returns a Snapshots over fresh backing data.
type Open func(t *testing.T) sinks.Snapshots

// Run checks a sinks.Snapshots.
func Run(t *testing.T, open Open) {
	t.Run("Basics", func(t *testing.T) { testBasics(t, open(t)) })
	t.Run("States", func(t *testing.T) { testStates(t, open(t)) })
	t.Run("Keys", func(t *testing.T) { testKeys(t, open(t)) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, open(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, open(t)) })
}

// long is a ttl no test outlives.
const long = time.Hour

func mustSave(t *testing.T, s sinks.Snapshots, kind, identity string, state []byte, ttl time.Duration) {
	t.Helper()
	if err := s.SaveSnapshot(t.Context(), kind, identity, state, ttl); err != nil {
		t.Fatalf("SaveSnapshot(%q, %q): %v", kind, identity, err)
	}
}

// want checks what LoadSnapshot returns for (kind, identity): state when found, else nothing.
func want(t *testing.T, s sinks.Snapshots, kind, identity string, found bool, state []byte) {
	t.Helper()
	got, ok, err := s.LoadSnapshot(t.Context(), kind, identity)
	if err != nil {
		t.Fatalf("LoadSnapshot(%q, %q): %v", kind, identity, err)
	}
	if ok != found {
		t.Fatalf("LoadSnapshot(%q, %q): found %v, want %v", kind, identity, ok, found)
	}
	if !found && len(got) != 0 {
		t.Fatalf("LoadSnapshot(%q, %q): not found but %d bytes", kind, identity, len(got))
	}
	if found && !bytes.Equal(got, state) {
		t.Fatalf("LoadSnapshot(%q, %q): %d bytes %.40q, want %d bytes %.40q", kind, identity, len(got), got, len(state), state)
	}
}

func fresh() string { return uuid.NewString() + "/" + uuid.NewString() }

// testBasics: not found, a round trip, a replace, and whose slices are whose.
func testBasics(t *testing.T, s sinks.Snapshots) {
	t.Run("not found", func(t *testing.T) {
		want(t, s, "session", fresh(), false, nil)
	})
	t.Run("round trip", func(t *testing.T) {
		id := fresh()
		mustSave(t, s, "session", id, []byte("state"), long)
		want(t, s, "session", id, true, []byte("state"))
		want(t, s, "session", id, true, []byte("state")) // loading does not consume it
	})
	t.Run("replace", func(t *testing.T) {
		id := fresh()
		mustSave(t, s, "session", id, []byte("first, longer state"), long)
		mustSave(t, s, "session", id, []byte("second"), long)
		want(t, s, "session", id, true, []byte("second"))
		mustSave(t, s, "session", id, nil, long)
		want(t, s, "session", id, true, nil)
	})
	t.Run("saved slice is the caller's", func(t *testing.T) {
		id := fresh()
		arg := []byte("original")
		mustSave(t, s, "session", id, arg, long)
		copy(arg, "mutated!")
		want(t, s, "session", id, true, []byte("original"))
	})
	t.Run("loaded slice is the caller's", func(t *testing.T) {
		id := fresh()
		mustSave(t, s, "session", id, []byte("original"), long)
		got, _, err := s.LoadSnapshot(t.Context(), "session", id)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			got[i] = 'x'
		}
		_ = append(got[:0], "appended beyond"...)
		want(t, s, "session", id, true, []byte("original"))
	})
}

// testStates: states of every kind of bytes and size come back exactly.
func testStates(t *testing.T, s sinks.Snapshots) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	large := make([]byte, 256<<10)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range large {
		large[i] = byte(rng.Uint32())
	}
	cases := []struct {
		name  string
		state []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"NUL", []byte{0}},
		{"every byte", all},
		{"invalid UTF-8", []byte{0xff, 0xfe, 0xc3, 0x28}},
		{"protobuf-like", []byte{0x0a, 0x10, 0x12, 0x00, 0x08, 0x96, 0x01}},
		{"256 KiB", large},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := fresh()
			mustSave(t, s, "session", id, bytes.Clone(tc.state), long)
			want(t, s, "session", id, true, tc.state)
		})
	}
}

// testKeys: kinds and identities name separate snapshots, "/" in either included.
func testKeys(t *testing.T, s sinks.Snapshots) {
	id := uuid.NewString()
	t.Run("one identity under two kinds", func(t *testing.T) {
		mustSave(t, s, "session", id, []byte("of the session"), long)
		want(t, s, "app", id, false, nil)
		mustSave(t, s, "app", id, []byte("of the app"), long)
		want(t, s, "session", id, true, []byte("of the session"))
		want(t, s, "app", id, true, []byte("of the app"))
	})
	t.Run("slashes", func(t *testing.T) {
		app, session := uuid.NewString(), uuid.NewString()
		pairs := [][2]string{
			{"session", app + "/" + session},
			{"session", app + "/" + session + "/"},
			{"session", "/" + app + "/" + session},
			{"session", app + "//" + session},
			{"session", app},
			{"sessions", app + "/" + session},
			{"app", app + "/" + session},
		}
		for i, p := range pairs {
			mustSave(t, s, p[0], p[1], []byte(fmt.Sprint("pair ", i)), long)
		}
		for i, p := range pairs {
			want(t, s, p[0], p[1], true, []byte(fmt.Sprint("pair ", i)))
		}
		want(t, s, "session", app+"/", false, nil)
		want(t, s, "session", app+"/"+session[:8], false, nil) // no prefix matching
	})
	t.Run("unicode", func(t *testing.T) {
		mustSave(t, s, "séance", "ключ/键/🔑", []byte("unicode"), long)
		want(t, s, "séance", "ключ/键/🔑", true, []byte("unicode"))
		want(t, s, "seance", "ключ/键/🔑", false, nil)
	})
}

// testExpiry: a snapshot is not found once its ttl passed; one saved again with a longer ttl,
// or another one, is.
func testExpiry(t *testing.T, s sinks.Snapshots) {
	short, resaved, kept := fresh(), fresh(), fresh()
	mustSave(t, s, "session", short, []byte("short"), 2*time.Second)
	mustSave(t, s, "session", resaved, []byte("short"), 2*time.Second)
	mustSave(t, s, "session", resaved, []byte("long"), long) // the ttl is the last save's
	mustSave(t, s, "session", kept, []byte("long"), long)
	want(t, s, "session", short, true, []byte("short"))
	time.Sleep(2500 * time.Millisecond)
	want(t, s, "session", short, false, nil)
	want(t, s, "session", resaved, true, []byte("long"))
	want(t, s, "session", kept, true, []byte("long"))
	mustSave(t, s, "session", short, []byte("again"), long)
	want(t, s, "session", short, true, []byte("again"))
}

// testConcurrent: concurrent saves of different identities all land.
func testConcurrent(t *testing.T, s sinks.Snapshots) {
	const n = 50
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fresh()
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 3 {
				state := []byte(fmt.Sprintf("state %d, round %d", i, round))
				if err := s.SaveSnapshot(t.Context(), "session", ids[i], state, long); err != nil {
					t.Errorf("SaveSnapshot %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range n {
		want(t, s, "session", ids[i], true, []byte(fmt.Sprintf("state %d, round 2", i)))
	}
}
