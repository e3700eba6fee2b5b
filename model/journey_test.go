package model

import (
	"encoding/json"
	"testing"
)

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
		// As json.Unmarshal into stepFields reads them: the last repeated member counts, names
		// match case-insensitively, a null leaves a string and clears a pointer, a value of
		// another kind (of any field) or anything after the object fails the whole payload.
		{"screen_view", `{"name":"A","name":"B"}`, SessionFacts{Screen: "B"}},
		{"screen_view", `{"Name":"A"}`, SessionFacts{Screen: "A"}},
		{"screen_view", `{"NAME":"A","name":"B","nAmE":"C"}`, SessionFacts{Screen: "C"}},
		{"screen_view", `{"na\u006de":"A"}`, SessionFacts{Screen: "A"}},
		{"screen_view", `{"name":"A\u00e9\n"}`, SessionFacts{Screen: "Aé\n"}},
		{"screen_view", `{"name":"A","name":null}`, SessionFacts{Screen: "A"}},
		{"screen_view", `{"name":5}`, SessionFacts{}},
		{"screen_view", `{"name":"A","handled":"yes"}`, SessionFacts{}},
		{"screen_view", `{"name":"A","severity":{}}`, SessionFacts{}},
		{"screen_view", `{"name":"A","other":{"name":[1,{"x":null}]}}`, SessionFacts{Screen: "A"}},
		{"screen_view", `{"name":"A"} x`, SessionFacts{}},
		{"screen_view", `{"name":"A",}`, SessionFacts{}},
		{"screen_view", `null`, SessionFacts{}},
		{"screen_view", ``, SessionFacts{}},
		{"screen_view", `{"ſ":1,"name":"A"}`, SessionFacts{Screen: "A"}},
		{"exception", `{"ſeverity":"fatal","handled":true}`, SessionFacts{Fatal: true}},
		{"exception", `{"severity":"fatal","severity":null,"handled":false}`, SessionFacts{Fatal: true}},
		{"exception", `{"severity":"fatal","handled":null}`, SessionFacts{Fatal: true}},
		{"exception", `{"handled":false,"handled":null}`, SessionFacts{}},
		{"lifecycle_app", `{"Type":"background"}`, SessionFacts{Foreground: 2}},
	}
	for _, c := range cases {
		e := &Event{Type: c.typ, Payload: []byte(c.payload)}
		if got := FactsOf(e); got != c.want {
			t.Errorf("%s %s: got %+v, want %+v", c.typ, c.payload, got, c.want)
		}
		if ref := factsOfJSON(e); ref != c.want {
			t.Errorf("%s %s: the encoding/json reference gives %+v, want %+v", c.typ, c.payload, ref, c.want)
		}
	}
}

// factsOfJSON is FactsOf as it was written first, every payload read by json.Unmarshal into
// stepFields: the reference FactsOf must agree with (FuzzFactsOf).
func factsOfJSON(e *Event) SessionFacts {
	var f SessionFacts
	var p stepFields
	switch e.Type {
	case "anr":
		f.ANR = true
	case "screen_view":
		if json.Unmarshal(e.Payload, &p) == nil {
			f.Screen = p.Name
		}
	case "lifecycle_activity", "lifecycle_fragment", "lifecycle_view_controller", "lifecycle_swift_ui":
		if json.Unmarshal(e.Payload, &p) == nil && journeyKinds[e.Type][p.Type] {
			f.Screen = p.ClassName
		}
	case "exception":
		if json.Unmarshal(e.Payload, &p) == nil {
			f.Fatal = IsFatal(p.Severity, p.Handled)
		}
	case "lifecycle_app":
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

// FuzzFactsOf: FactsOf reads any payload, valid JSON or not, as json.Unmarshal does.
func FuzzFactsOf(f *testing.F) {
	types := []string{"screen_view", "lifecycle_activity", "lifecycle_fragment", "lifecycle_view_controller",
		"lifecycle_swift_ui", "exception", "lifecycle_app"}
	for _, seed := range []string{`{"name":"Home","type":"resumed","class_name":"a.B"}`, `{"type":"viewDidAppear","class_name":"VC","x":[1,2,{"y":"z"}]}`,
		`{"handled":false,"severity":"fatal","exceptions":[{"type":"E"}]}`, `{"type":"foreground","NAME":"x","na\u006de":null}`,
		`{"ſeverity":"fatal","Handled":true}`, `{"name":"\ud800","type":"on_appear"}`, `{"name":"é","class_name":"\"q\""} `} {
		for i := range types {
			f.Add([]byte(seed), uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, payload []byte, kind uint8) {
		e := &Event{Type: types[int(kind)%len(types)], Payload: payload}
		if got, want := FactsOf(e), factsOfJSON(e); got != want {
			t.Fatalf("%s %q: got %+v, encoding/json reads %+v", e.Type, payload, got, want)
		}
	})
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
