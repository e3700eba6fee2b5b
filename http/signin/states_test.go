package signin_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-dev/svc/http/signin"
)

// TestStates: a state is taken once, by the provider it was put for, before its TTL ends; the
// oldest go first when there are too many.
func TestStates(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		op       string // put, take, wait
		provider string
		state    string
		wait     time.Duration
		want     bool // take's answer
	}
	put := func(p, s string) step { return step{op: "put", provider: p, state: s} }
	take := func(p, s string, want bool) step { return step{op: "take", provider: p, state: s, want: want} }
	wait := func(d time.Duration) step { return step{op: "wait", wait: d} }
	tests := []struct {
		name  string
		max   int
		steps []step
	}{
		{"put then take", 0, []step{put("google", "s"), take("google", "s", true)}},
		{"taken once", 0, []step{put("google", "s"), take("google", "s", true), take("google", "s", false)}},
		{"never put", 0, []step{take("google", "s", false)}},
		{"other state", 0, []step{put("google", "s"), take("google", "t", false), take("google", "s", true)}},
		{"other provider", 0, []step{put("github", "s"), take("google", "s", false), take("github", "s", true)}},
		{"empty state is a state like any", 0, []step{put("github", ""), take("github", "", true)}},
		{"provider and state do not run together", 0, []step{put("git", "hubs"), take("github", "s", false)}},
		{"within the TTL", 0, []step{put("google", "s"), wait(9 * time.Minute), take("google", "s", true)}},
		{"expired", 0, []step{put("google", "s"), wait(10 * time.Minute), take("google", "s", false)}},
		{"put again restarts the TTL", 0, []step{put("google", "s"), wait(6 * time.Minute), put("google", "s"), wait(6 * time.Minute),
			take("google", "s", true)}},
		{"the oldest goes when full", 2, []step{put("google", "a"), put("google", "b"), put("google", "c"),
			take("google", "a", false), take("google", "b", true), take("google", "c", true)}},
		{"taken states make room", 2, []step{put("google", "a"), take("google", "a", true), put("google", "b"), put("google", "c"),
			take("google", "b", true), take("google", "c", true)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := now
			s := &signin.States{Max: tc.max, Now: func() time.Time { return clock }}
			for i, st := range tc.steps {
				switch st.op {
				case "put":
					s.Put(st.provider, st.state)
				case "wait":
					clock = clock.Add(st.wait)
				case "take":
					if got := s.Take(st.provider, st.state); got != st.want {
						t.Fatalf("step %d: Take(%q, %q) = %v, want %v", i, st.provider, st.state, got, st.want)
					}
				}
			}
		})
	}
}

// TestStatesBounded: however many sign-ins start and are never finished, memory stays bounded,
// and long states cost no more than short ones.
func TestStatesBounded(t *testing.T) {
	clock := time.Unix(0, 0)
	s := &signin.States{Max: 100, Now: func() time.Time { return clock }}
	long := strings.Repeat("x", signin.MaxStateLen)
	for i := range 10_000 {
		s.Put("google", fmt.Sprint(long, i))
		if i%3 == 0 {
			s.Take("google", fmt.Sprint(long, i))
		}
	}
	if n := s.Len(); n > 100 {
		t.Fatalf("%d states kept, want at most 100", n)
	}
	clock = clock.Add(time.Hour)
	s.Put("google", "fresh")
	if n := s.Len(); n != 1 {
		t.Fatalf("%d states after the others expired, want 1", n)
	}
}

// TestStatesConcurrent: each of many concurrent takes of one state wins at most once.
func TestStatesConcurrent(t *testing.T) {
	var s signin.States
	for i := range 50 {
		s.Put("github", fmt.Sprint(i))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := map[string]int{}
	for range 8 {
		wg.Go(func() {
			for i := range 50 {
				if s.Take("github", fmt.Sprint(i)) {
					mu.Lock()
					wins[fmt.Sprint(i)]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for i := range 50 {
		if wins[fmt.Sprint(i)] != 1 {
			t.Fatalf("state %d taken %d times, want once", i, wins[fmt.Sprint(i)])
		}
	}
}
