package model

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// This file holds what the errorGroups detail endpoints (the reference dashboard's unified
// crashes, handled exceptions and ANRs) need beyond the crashGroups and anrGroups ones.

// AppleErrorFields are the num_code, code and meta of an errorGroups exception event, read from
// the `error` object an Apple SDK sends for an NSError (its domain, code and user info, as
// IssueDetail renders them): code is "" and numCode and meta nil when absent, meta is nil for an
// empty object too, and is otherwise the object re-encoded compact with sorted keys. A payload
// that is not a JSON object, or an error member of the wrong kind, gives nothing.
func AppleErrorFields(payload []byte) (code string, numCode *int64, meta json.RawMessage) {
	var p struct {
		Error appleError `json:"error"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return "", nil, nil
	}
	if p.Error.numcode.ok {
		n := p.Error.numcode.v
		numCode = &n
	}
	if p.Error.meta != nil {
		meta = p.Error.meta
	}
	return p.Error.code, numCode, meta
}

// ErrorGroupStep is the common-path Step of an event on the errorGroups path: StepOf's, except
// that a non-fatal exception is said as the reference dashboard's severities say it ("Unhandled
// error: " or "Handled error: " for StepOf's "Exception: "), since one errorGroups path mixes
// the classes. Crashes ("Crash: ") and ANRs ("ANR: ") read as on the crashGroups and anrGroups
// paths.
func ErrorGroupStep(e *Event) (Step, bool) {
	st, ok := StepOf(e)
	if !ok || e.Type != "exception" {
		return st, ok
	}
	g, grouped := GroupOf(e)
	if !grouped || g.Fatal {
		return st, true
	}
	prefix := "Handled error: "
	if g.Severity == "unhandled" {
		prefix = "Unhandled error: "
	}
	if rest, cut := strings.CutPrefix(st.Description, "Exception: "); cut {
		st.Description = prefix + rest
	}
	return st, true
}

// MergePathSessions merges the answers of PathSessions for several classes of one group into the
// answer for all of them: each session's events end with its latest issue event of the group,
// the sessions are ordered by that event newest first (timestamp, then id), a session found for
// two classes keeps its path to its latest issue, and at most n sessions remain. Each class's
// answer holds its n most recent sessions, which include every session of the merged n whose
// latest issue is of that class, so the merge is exact. Empty paths are dropped.
func MergePathSessions(n int, answers ...[][]Event) [][]Event {
	var all [][]Event
	for _, a := range answers {
		for _, evs := range a {
			if len(evs) > 0 {
				all = append(all, evs)
			}
		}
	}
	last := func(evs []Event) *Event { return &evs[len(evs)-1] }
	slices.SortStableFunc(all, func(a, b []Event) int {
		x, y := last(a), last(b)
		switch {
		case x.Timestamp != y.Timestamp:
			if x.Timestamp > y.Timestamp {
				return -1
			}
			return 1
		case uuidLess(y.ID, x.ID):
			return -1
		case uuidLess(x.ID, y.ID):
			return 1
		}
		return 0
	})
	seen := map[uuid.UUID]bool{}
	out := make([][]Event, 0, min(n, len(all)))
	for _, evs := range all {
		s := last(evs).SessionID
		if seen[s] || len(out) == n {
			continue
		}
		seen[s] = true
		out = append(out, evs)
	}
	return out
}

// PathSteps turns PathSessions' events into ComputeCommonPath's input, one step per event that
// step keeps (StepOf for the crashGroups and anrGroups paths, ErrorGroupStep for errorGroups).
func PathSteps(sessions [][]Event, step func(*Event) (Step, bool)) [][]Step {
	out := make([][]Step, 0, len(sessions))
	for _, evs := range sessions {
		var ss []Step
		for i := range evs {
			if st, ok := step(&evs[i]); ok {
				ss = append(ss, st)
			}
		}
		out = append(out, ss)
	}
	return out
}
