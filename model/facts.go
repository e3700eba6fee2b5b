package model

// EventFacts are what analytics need of one event, derived from it once at ingest
// (DeriveFacts) and stored with it. Each is the zero value on kinds it does not apply to.
type EventFacts struct {
	GroupID    string  // GroupOf's id (32 lowercase hex) of an exception or anr; "" otherwise
	Fatal      bool    // an exception that is a crash (docs/architecture.md, "Algorithms"); never an anr
	Foreground bool    // the foreground member of an exception or anr: the app was visible
	Screen     string  // the screen the event shows (FactsOf)
	LaunchKind string  // cold, warm or hot for a launch with a usable duration; "" otherwise
	LaunchMs   float64 // LaunchDuration's milliseconds when LaunchKind is set
	// Issue is the display of an exception or anr with a group (GroupOf's fields), so group
	// lists show the latest event's type, message and frame without parsing payloads.
	Issue IssueDisplay
	// HTTP is the request of an http event (httpFactsOf); the zero value on other kinds.
	HTTP HTTPFacts
}

// IssueDisplay is what a group list shows of one issue event: GroupOf's display fields.
type IssueDisplay struct {
	Type       string
	Message    string
	MethodName string
	FileName   string
	LineNumber int32
	// Severity is exception.severity as sent, else fatal or handled from the legacy flag;
	// empty for an anr.
	Severity string
}

// Title is the issue title of journey nodes, "type@file_name" ("type" when there is no file).
func (d *IssueDisplay) Title() string {
	if d.FileName == "" {
		return d.Type
	}
	return d.Type + "@" + d.FileName
}

// DeriveFacts computes the facts of e from its type and payload. Only the kinds that carry a
// fact are parsed, each once (an exception by GroupOf, which skips its threads cheaply, and one
// more skim for foreground), so it can run on every event on the ingest path.
//
// A launch whose duration LaunchDuration rejects (missing or implausible times, a lukewarm warm
// launch) has no launch facts at all, so aggregates over launch_kind see only usable durations.
func DeriveFacts(e *Event) EventFacts {
	var f EventFacts
	switch e.Type {
	case "exception", "anr":
		if g, ok := GroupOf(e); ok {
			f.GroupID, f.Fatal = g.ID, g.Fatal
			f.Issue = IssueDisplay{Type: g.Type, Message: g.Message, MethodName: g.MethodName,
				FileName: g.FileName, LineNumber: int32(g.LineNumber), Severity: g.Severity}
		}
		f.Foreground = foregroundOf(e.Payload)
	case "cold_launch", "warm_launch", "hot_launch":
		if kind, ms, ok := LaunchDuration(e); ok {
			f.LaunchKind, f.LaunchMs = kind, ms
		}
	case "http":
		f.HTTP = httpFactsOf(e)
	case "screen_view", "lifecycle_activity", "lifecycle_fragment", "lifecycle_view_controller", "lifecycle_swift_ui":
		f.Screen = FactsOf(e).Screen
	}
	return f
}

// foregroundOf reads the top-level foreground member of a payload; false when absent, not a
// boolean, or the payload is not a JSON object.
func foregroundOf(payload []byte) bool {
	var fg bool
	_ = eachMember(payload, func(key []byte, s *scanner) error {
		if string(key) != "foreground" {
			return nil
		}
		v, _, err := readBool(s)
		fg = v
		return err
	})
	return fg
}
