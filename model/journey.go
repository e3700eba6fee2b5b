package model

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

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
// the cost on the ingest path is limited to them. Each payload is read as json.Unmarshal into
// stepFields reads it (stepMembersOf): a payload that it would refuse carries no fact.
func FactsOf(e *Event) SessionFacts {
	var f SessionFacts
	switch e.Type {
	case "anr":
		f.ANR = true
		return f
	case "screen_view", "lifecycle_activity", "lifecycle_fragment", "lifecycle_view_controller", "lifecycle_swift_ui",
		"exception", "lifecycle_app":
	default:
		return f
	}
	m, ok := stepMembersOf(e.Payload)
	if !ok {
		return f
	}
	switch e.Type {
	case "screen_view":
		f.Screen = m.name
	case "exception":
		var sev *string
		var handled *bool
		if m.hasSeverity {
			sev = &m.severity
		}
		if m.hasHandled {
			handled = &m.handled
		}
		f.Fatal = IsFatal(sev, handled)
	case "lifecycle_app":
		switch m.typ {
		case "foreground":
			f.Foreground = 1
		case "background", "terminated":
			f.Foreground = 2
		}
	default: // the lifecycle kinds of journeyKinds
		if journeyKinds[e.Type][m.typ] {
			f.Screen = m.className
		}
	}
	return f
}

// stepMembers are stepFields' values, without the pointers json.Unmarshal needs for absent ones.
type stepMembers struct {
	typ, className, name, severity   string
	handled, hasSeverity, hasHandled bool
}

// stepMembersOf is json.Unmarshal of payload into stepFields (ok false where it fails). The
// package's scanner answers for the payloads SDKs send (readStepMembers); encoding/json, about
// ten times slower on them, for the rest.
func stepMembersOf(payload []byte) (stepMembers, bool) {
	if m, ok, known := readStepMembers(payload); known {
		return m, ok
	}
	var p stepFields
	if json.Unmarshal(payload, &p) != nil {
		return stepMembers{}, false
	}
	m := stepMembers{typ: p.Type, className: p.ClassName, name: p.Name}
	if p.Severity != nil {
		m.severity, m.hasSeverity = *p.Severity, true
	}
	if p.Handled != nil {
		m.handled, m.hasHandled = *p.Handled, true
	}
	return m, true
}

// stepNames are stepFields' member names.
var stepNames = [...]string{"type", "class_name", "name", "handled", "severity"}

// readStepMembers reads stepFields' members of a payload as json.Unmarshal would (ok false where
// it would fail), when that is plain to see: a JSON object whose members that name a field are
// spelled exactly (json.Unmarshal also takes them case-folded) and unescaped, and whose string
// values for them hold no escapes. known is false for any other payload, and for one the
// scanner refuses. As with json.Unmarshal, the last of repeated members counts, a null leaves a
// string as it was and clears a pointer, and a value of another kind fails the whole payload.
func readStepMembers(payload []byte) (m stepMembers, ok, known bool) {
	s := scanner{buf: payload}
	if s.openObject() != nil {
		return m, false, false
	}
	for i := 0; ; i++ {
		key, esc, done, err := s.member(i)
		if err != nil {
			return m, false, false
		}
		if done {
			break
		}
		var str *string // a string field's value
		var flag *bool  // for severity and handled: whether the pointer is set
		var value *bool // for handled: its value
		switch string(key) {
		case "type":
			str = &m.typ
		case "class_name":
			str = &m.className
		case "name":
			str = &m.name
		case "severity":
			str, flag = &m.severity, &m.hasSeverity
		case "handled":
			value, flag = &m.handled, &m.hasHandled
		default:
			if esc || mayFoldToStepName(key) {
				return m, false, false
			}
			if s.skip() != nil {
				return m, false, false
			}
			continue
		}
		switch c := s.peek(); {
		case c == 'n':
			if s.literal("null") != nil {
				return m, false, false
			}
			if flag != nil {
				*flag = false
			}
		case c == '"' && str != nil:
			raw, esc, err := s.str()
			if err != nil || esc {
				return m, false, false
			}
			*str = string(raw)
			if flag != nil {
				*flag = true
			}
		case (c == 't' || c == 'f') && value != nil:
			v, _, err := readBool(&s)
			if err != nil {
				return m, false, false
			}
			*value, *flag = v, true
		default:
			// Another kind of value: json.Unmarshal fails (with a syntax error first when the
			// payload is not JSON; it fails all the same).
			return stepMembers{}, false, true
		}
	}
	if s.end() != nil {
		return m, false, false
	}
	return m, true, true
}

// mayFoldToStepName says whether json.Unmarshal could take key, which is not spelled as one, for
// a stepFields member: it matches names case-insensitively, by Unicode folding, which can bring
// a non-ASCII key to an ASCII name (ſ to s), so every such key may.
func mayFoldToStepName(key []byte) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	for _, n := range stepNames {
		if len(key) == len(n) && bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// IsFatal is the crash rule of docs/architecture.md ("Algorithms"): severity fatal, or no severity and not handled.
func IsFatal(severity *string, handled *bool) bool {
	if severity != nil {
		return *severity == "fatal"
	}
	return handled != nil && !*handled
}
