package model

import "testing"

func TestFactsOf(t *testing.T) {
	cases := []struct {
		typ, payload string
		want         SessionFacts
	}{
		{"screen_view", `{"name":"Home"}`, SessionFacts{Screen: "Home"}},
		{"lifecycle_activity", `{"type":"resumed","class_name":"a.Main"}`, SessionFacts{Screen: "a.Main"}},
		{"lifecycle_activity", `{"type":"paused","class_name":"a.Main"}`, SessionFacts{}},
		{"lifecycle_fragment", `{"type":"attached","class_name":"F"}`, SessionFacts{Screen: "F"}},
		{"lifecycle_view_controller", `{"type":"viewDidAppear","class_name":"VC"}`, SessionFacts{Screen: "VC"}},
		{"lifecycle_view_controller", `{"type":"loadView","class_name":"VC"}`, SessionFacts{}},
		{"lifecycle_swift_ui", `{"type":"on_appear","class_name":"V"}`, SessionFacts{Screen: "V"}},
		{"exception", `{"handled":false}`, SessionFacts{Fatal: true}},
		{"exception", `{"handled":true}`, SessionFacts{}},
		{"exception", `{"handled":true,"severity":"fatal"}`, SessionFacts{Fatal: true}},
		{"exception", `{"handled":false,"severity":"error"}`, SessionFacts{}},
		{"anr", `{}`, SessionFacts{ANR: true}},
		{"lifecycle_app", `{"type":"foreground"}`, SessionFacts{Foreground: 1}},
		{"lifecycle_app", `{"type":"background"}`, SessionFacts{Foreground: 2}},
		{"custom", `{"name":"x"}`, SessionFacts{}},
		{"screen_view", `not json`, SessionFacts{}},
	}
	for _, c := range cases {
		if got := FactsOf(&Event{Type: c.typ, Payload: []byte(c.payload)}); got != c.want {
			t.Errorf("%s %s: got %+v, want %+v", c.typ, c.payload, got, c.want)
		}
	}
}

// TestScreenTypes: every type FactsOf finds a screen in is in ScreenTypes, which stores narrow
// their walk reads to; a payload that names a screen every way finds none in other types.
func TestScreenTypes(t *testing.T) {
	const payload = `{"name":"S","type":"resumed","class_name":"S"}`
	types := []string{"screen_view", "exception", "anr", "lifecycle_app", "gesture_click", "http", "custom", "cold_launch", "navigation"}
	for k, values := range journeyKinds {
		for v := range values {
			if FactsOf(&Event{Type: k, Payload: []byte(`{"type":"` + v + `","class_name":"S"}`)}).Screen != "S" {
				t.Errorf("%s %s: no screen", k, v)
			}
		}
		types = append(types, k)
	}
	for _, typ := range types {
		e := &Event{Type: typ, Payload: []byte(payload)}
		if k := journeyKinds[typ]; k != nil {
			for v := range k {
				e.Payload = []byte(`{"type":"` + v + `","class_name":"S"}`)
				break
			}
		}
		listed := false
		for _, s := range ScreenTypes {
			listed = listed || s == typ
		}
		if got := FactsOf(e).Screen != ""; got != listed {
			t.Errorf("%s: a screen found %v, in ScreenTypes %v", typ, got, listed)
		}
	}
}
