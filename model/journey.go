package model

import "encoding/json"

// stepFields are the payload members the session facts below read.
type stepFields struct {
	Type      string  `json:"type"`
	ClassName string  `json:"class_name"`
	Name      string  `json:"name"`
	Handled   *bool   `json:"handled"`
	Severity  *string `json:"severity"`
}

// journeyKinds says which lifecycle values of which kinds mean "this screen is now shown"
// (docs/architecture.md, "Algorithms"): Android activities and fragments, Apple view controllers and SwiftUI views.
var journeyKinds = map[string]map[string]bool{
	"lifecycle_activity":        {"created": true, "resumed": true},
	"lifecycle_fragment":        {"attached": true, "resumed": true},
	"lifecycle_view_controller": {"viewDidLoad": true, "viewDidAppear": true},
	"lifecycle_swift_ui":        {"on_appear": true},
}

// ScreenTypes are the event types FactsOf can find a screen in: screen_view and the kinds of
// journeyKinds. Stores narrow their reads of walk events to these types (and issues').
var ScreenTypes = []string{"screen_view", "lifecycle_activity", "lifecycle_fragment", "lifecycle_view_controller", "lifecycle_swift_ui"}

// SessionFacts are what a session keeps of one event: the screen it shows, whether it is a
// crash or an ANR, and a foreground change.
type SessionFacts struct {
	Screen     string
	Fatal      bool
	ANR        bool
	Foreground int32 // 1 came to the foreground, 2 went to the background, 0 no change
}

// FactsOf reads the session facts of an event. Only the kinds that carry one are parsed, so
// the cost on the ingest path is limited to them.
func FactsOf(e *Event) SessionFacts {
	var f SessionFacts
	switch e.Type {
	case "screen_view":
		var p stepFields
		if json.Unmarshal(e.Payload, &p) == nil {
			f.Screen = p.Name
		}
	case "lifecycle_activity", "lifecycle_fragment", "lifecycle_view_controller", "lifecycle_swift_ui":
		var p stepFields
		if json.Unmarshal(e.Payload, &p) == nil && journeyKinds[e.Type][p.Type] {
			f.Screen = p.ClassName
		}
	case "exception":
		var p stepFields
		if json.Unmarshal(e.Payload, &p) == nil {
			f.Fatal = IsFatal(p.Severity, p.Handled)
		}
	case "anr":
		f.ANR = true
	case "lifecycle_app":
		var p stepFields
		if json.Unmarshal(e.Payload, &p) == nil {
			switch p.Type {
			case "foreground":
				f.Foreground = 1
			case "background", "terminated":
				f.Foreground = 2
			}
		}
	}
	return f
}

// IsFatal is the crash rule of docs/architecture.md ("Algorithms"): severity fatal, or no severity and not handled.
func IsFatal(severity *string, handled *bool) bool {
	if severity != nil {
		return *severity == "fatal"
	}
	return handled != nil && !*handled
}
