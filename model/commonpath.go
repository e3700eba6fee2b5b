package model

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the common path (docs/architecture.md, "Algorithms").
const (
	MaxPathSessions = 50 // the most recent sessions with the group
	MaxPathSteps    = 50 // the last events of each, up to the issue
	PathMinSharePct = 30 // a position is shown when at least this share of sessions agree
)

// Step is one event of a session's way to an issue, as ComputeCommonPath compares them: steps
// are the same when Type and Description are.
type Step struct {
	Type        string // the event type
	Description string // Describe's text
	ThreadName  string
}

// StepOf is the Step of an event: its type, Describe's text and attribute.thread_name. ok is
// false for the kinds Describe leaves out (CPU and memory samples).
func StepOf(e *Event) (Step, bool) {
	d, ok := Describe(e)
	if !ok {
		return Step{}, false
	}
	return Step{Type: e.Type, Description: d, ThreadName: e.Attribute.ThreadName}, true
}

// CommonPath is the crash (or ANR) group path result of the dashboard API.
type CommonPath struct {
	SessionsAnalyzed int        `json:"sessions_analyzed"`
	Steps            []PathStep `json:"steps"`
}

// PathStep is one step of the common path.
type PathStep struct {
	Description   string  `json:"description"`
	ThreadName    string  `json:"thread_name"`
	ConfidencePct float64 `json:"confidence_pct"`
}

// ComputeCommonPath finds the steps sessions share on their way to an issue. sessions holds
// each session's steps oldest first, ending with the issue event; the caller passes the most
// recent sessions first (only the first MaxPathSessions count) and leaves out CPU and memory
// samples. Positions are numbered from the end (the issue is position 0) over each session's
// last MaxPathSteps steps. At each position the most common step (ties: the smaller type, then
// description) is kept when at least PathMinSharePct % of the analysed sessions have it there;
// its confidence_pct is that share with one decimal and its thread_name the most common thread
// among those sessions (ties: the smaller name). Steps come oldest first, the issue last.
func ComputeCommonPath(sessions [][]Step) CommonPath {
	if len(sessions) > MaxPathSessions {
		sessions = sessions[:MaxPathSessions]
	}
	n := len(sessions)
	out := CommonPath{SessionsAnalyzed: n, Steps: []PathStep{}}
	if n == 0 {
		return out
	}
	longest := 0
	for _, s := range sessions {
		longest = max(longest, min(len(s), MaxPathSteps))
	}
	type key struct{ typ, desc string }
	counts := map[key]int{}
	for pos := longest - 1; pos >= 0; pos-- {
		clear(counts)
		for _, s := range sessions {
			if pos < len(s) && pos < MaxPathSteps {
				st := &s[len(s)-1-pos]
				counts[key{st.Type, st.Description}]++
			}
		}
		var best key
		bestN := 0
		for k, c := range counts {
			if c > bestN || c == bestN && (k.typ < best.typ || k.typ == best.typ && k.desc < best.desc) {
				best, bestN = k, c
			}
		}
		if bestN*100 < PathMinSharePct*n {
			continue
		}
		threads := map[string]int{}
		for _, s := range sessions {
			if pos < len(s) {
				if st := &s[len(s)-1-pos]; st.Type == best.typ && st.Description == best.desc {
					threads[st.ThreadName]++
				}
			}
		}
		thread, threadN := "", 0
		for t, c := range threads {
			if c > threadN || c == threadN && t < thread {
				thread, threadN = t, c
			}
		}
		out.Steps = append(out.Steps, PathStep{
			Description:   best.desc,
			ThreadName:    thread,
			ConfidencePct: math.Round(float64(bestN)*1000/float64(n)) / 10,
		})
	}
	return out
}

// IsSample says whether an event type is a resource sample (cpu_usage, memory_usage,
// memory_usage_absolute), which common paths leave out.
func IsSample(typ string) bool {
	switch typ {
	case "cpu_usage", "memory_usage", "memory_usage_absolute":
		return true
	}
	return false
}

// Describe says in words what an event was, for the common path: "User tapped on X",
// "Activity resumed: C", "HTTP GET to U (status: 200)", "Crash: type - message" and the like
// for every kind. ok is false for cpu_usage, memory_usage and memory_usage_absolute samples,
// which the common path leaves out. Values that differ between otherwise equal steps are kept
// out: an HTTP URL loses its query and fragment, a log line is cut to 100 characters.
func Describe(e *Event) (string, bool) {
	if IsSample(e.Type) {
		return "", false
	}
	switch e.Type {
	case "exception", "anr":
		g, ok := GroupOf(e)
		if !ok {
			return e.Type, true
		}
		prefix := "Crash: "
		switch {
		case e.Type == "anr":
			prefix = "ANR: "
		case !g.Fatal:
			prefix = "Exception: "
		}
		if g.Message == "" {
			return prefix + g.Type, true
		}
		return prefix + g.Type + " - " + g.Message, true
	}
	f := payloadFields(e.Payload)
	switch e.Type {
	case "gesture_click":
		return "User tapped on " + f.target(), true
	case "gesture_long_click":
		return "User long pressed on " + f.target(), true
	case "gesture_scroll":
		if f.direction != "" {
			return "User scrolled " + f.direction + " on " + f.target(), true
		}
		return "User scrolled on " + f.target(), true
	case "lifecycle_activity":
		return "Activity " + f.typ + ": " + f.className, true
	case "lifecycle_fragment":
		return "Fragment " + f.typ + ": " + f.className, true
	case "lifecycle_view_controller":
		return "View controller " + f.typ + ": " + f.className, true
	case "lifecycle_swift_ui":
		return "SwiftUI view " + f.typ + ": " + f.className, true
	case "lifecycle_app":
		if f.typ == "terminated" {
			return "App terminated", true
		}
		return "App moved to the " + f.typ, true
	case "screen_view":
		return "Screen viewed: " + f.name, true
	case "http":
		u := f.url
		if i := strings.IndexAny(u, "?#"); i >= 0 {
			u = u[:i]
		}
		d := "HTTP " + strings.ToUpper(f.method) + " to " + u
		switch {
		case f.statusCode > 0:
			d += " (status: " + strconv.Itoa(f.statusCode) + ")"
		case f.failureReason != "":
			d += " (failed: " + f.failureReason + ")"
		}
		return d, true
	case "cold_launch", "warm_launch", "hot_launch":
		d := strings.ToUpper(e.Type[:1]) + strings.ReplaceAll(e.Type[1:], "_", " ")
		if f.launchedActivity != "" {
			d += ": " + f.launchedActivity
		}
		return d, true
	case "network_change":
		return "Network changed to " + f.networkType, true
	case "app_exit":
		return "App exited: " + f.reason, true
	case "trim_memory":
		return "Trim memory: " + f.level, true
	case "low_memory":
		return "Low memory", true
	case "custom":
		return "Custom event: " + f.name, true
	case "navigation":
		return "Navigated to " + f.to, true
	case "bug_report":
		return "Bug report", true
	case "session_start":
		return "Session started", true
	case "string":
		return "Log: " + clipRunes(f.str, 100), true
	case "log":
		return "Log: " + clipRunes(f.body, 100), true
	}
	return e.Type, true
}

// describeFields are the payload members Describe reads.
type describeFields struct {
	targetClass, targetID, direction, typ, className, name, url, method, failureReason string
	launchedActivity, networkType, reason, level, to, str, body                        string
	statusCode                                                                         int
}

// target names what a gesture hit: its view id when it has one (stable and meaningful, like
// "btn_checkout"), else its class.
func (f *describeFields) target() string {
	switch {
	case f.targetID != "":
		return f.targetID
	case f.targetClass != "":
		return f.targetClass
	}
	return "the screen"
}

// payloadFields reads describeFields from a payload; members it cannot read stay empty.
func payloadFields(p []byte) describeFields {
	var f describeFields
	_ = eachMember(p, func(key []byte, s *scanner) error {
		var dst *string
		switch string(key) {
		case "target":
			dst = &f.targetClass
		case "target_id":
			dst = &f.targetID
		case "direction":
			dst = &f.direction
		case "type":
			dst = &f.typ
		case "class_name":
			dst = &f.className
		case "name":
			dst = &f.name
		case "url":
			dst = &f.url
		case "method":
			dst = &f.method
		case "failure_reason":
			dst = &f.failureReason
		case "launched_activity":
			dst = &f.launchedActivity
		case "network_type":
			dst = &f.networkType
		case "reason":
			dst = &f.reason
		case "level":
			dst = &f.level
		case "to":
			dst = &f.to
		case "string":
			dst = &f.str
		case "body":
			dst = &f.body
		case "status_code":
			v, err := readInt(s)
			f.statusCode = v
			return err
		default:
			return nil
		}
		v, err := readStr(s)
		*dst = v.String()
		return err
	})
	return f
}

// clipRunes cuts s to at most n characters.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}
