package node

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Field specs: the JSON paths a client reads from an answer, each with the JSON types it
// accepts there. TestDashboardCompat writes down what the reference web dashboard reads this way.
//
//	spec  = ["?"] path ":" type {"|" type}
//	path  = "" | step {"." step}
//	step  = (name | "*" | "") {"[]"}
//
// A name is an object member, "*" every member of an object, and each "[]" every element of
// an array: `results[].error_type:string`, `[].data[].instances:number`, `app_version.*:number`.
// The empty path is the whole body (`:array|null`). Types: string, number, int (a number
// without a fraction), bool, object, array, null, any, and absent (the member may be missing;
// only for the last step).
//
// A member missing from an object on the way is always a mismatch: the client reads it. A null
// or an empty array on the way leads nowhere, and a spec must reach at least one value unless
// it starts with "?" (a member of something that may be null or empty).

// fieldSpec is one parsed spec.
type fieldSpec struct {
	raw      string
	optional bool
	steps    []specStep
	types    []string
}

type specStep struct {
	name string // member name; "*" every member; "" none (the body or the element itself)
	each int    // how many "[]" follow
}

var specTypes = []string{"string", "number", "int", "bool", "object", "array", "null", "any", "absent"}

func parseFieldSpec(s string) (fieldSpec, error) {
	f := fieldSpec{raw: s}
	rest, optional := strings.CutPrefix(s, "?")
	f.optional = optional
	i := strings.LastIndex(rest, ":")
	if i < 0 {
		return f, fmt.Errorf("spec %q: no \":type\"", s)
	}
	path, types := rest[:i], rest[i+1:]
	for _, ty := range strings.Split(types, "|") {
		if !slices.Contains(specTypes, ty) {
			return f, fmt.Errorf("spec %q: unknown type %q", s, ty)
		}
		f.types = append(f.types, ty)
	}
	if path == "" {
		f.steps = []specStep{{}}
		return f, nil
	}
	for _, part := range strings.Split(path, ".") {
		st := specStep{}
		for strings.HasSuffix(part, "[]") {
			part, st.each = strings.TrimSuffix(part, "[]"), st.each+1
		}
		if strings.ContainsAny(part, "[]:?|") {
			return f, fmt.Errorf("spec %q: bad step %q", s, part)
		}
		if part == "" && (len(f.steps) > 0 || st.each == 0) {
			return f, fmt.Errorf("spec %q: empty step", s)
		}
		st.name = part
		f.steps = append(f.steps, st)
	}
	return f, nil
}

// specAbsent stands for a missing member that the spec allows to be missing.
type specAbsent struct{}

// specValue is a value reached by a spec with the concrete path that led to it.
type specValue struct {
	at string
	v  any
}

// checkFields returns one line per mismatch of doc (decoded by encoding/json into any) against
// specs; none when every spec holds. A spec that does not parse is a mismatch too.
func checkFields(doc any, specs []string) []string {
	var out []string
	for _, s := range specs {
		f, err := parseFieldSpec(s)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		out = append(out, f.check(doc)...)
	}
	return out
}

func (f fieldSpec) check(doc any) []string {
	cur, bad := f.walk(doc)
	if len(cur) == 0 && !f.optional && len(bad) == 0 {
		bad = append(bad, fmt.Sprintf("%s: reaches no value (null or empty on the way)", f.raw))
	}
	for _, l := range cur {
		if !specTypeIn(l.v, f.types) {
			bad = append(bad, fmt.Sprintf("%s: %s is %s, want %s", f.raw, specAt(l.at), specTypeOf(l.v), strings.Join(f.types, "|")))
		}
	}
	return bad
}

// fieldValues returns the values that path (the path of a spec) reaches in doc.
func fieldValues(doc any, path string) []any {
	f, err := parseFieldSpec(path + ":any")
	if err != nil {
		return nil
	}
	cur, _ := f.walk(doc)
	out := make([]any, 0, len(cur))
	for _, l := range cur {
		out = append(out, l.v)
	}
	return out
}

// walk returns the values f's path reaches in doc and the mismatches on the way.
func (f fieldSpec) walk(doc any) ([]specValue, []string) {
	var bad []string
	cur := []specValue{{at: "", v: doc}}
	allowAbsent := slices.Contains(f.types, "absent")
	for si, st := range f.steps {
		last := si == len(f.steps)-1
		var next []specValue
		for _, l := range cur {
			switch {
			case st.name == "":
				next = append(next, l)
			case l.v == nil:
				// A null on the way leads nowhere.
			case st.name == "*":
				obj, ok := l.v.(map[string]any)
				if !ok {
					bad = append(bad, fmt.Sprintf("%s: %s is %s, want an object", f.raw, specAt(l.at), specTypeOf(l.v)))
					continue
				}
				keys := make([]string, 0, len(obj))
				for k := range obj {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					next = append(next, specValue{at: specJoin(l.at, k), v: obj[k]})
				}
			default:
				obj, ok := l.v.(map[string]any)
				if !ok {
					bad = append(bad, fmt.Sprintf("%s: %s is %s, want an object", f.raw, specAt(l.at), specTypeOf(l.v)))
					continue
				}
				v, ok := obj[st.name]
				at := specJoin(l.at, st.name)
				switch {
				case ok:
					next = append(next, specValue{at: at, v: v})
				case last && st.each == 0 && allowAbsent:
					next = append(next, specValue{at: at, v: specAbsent{}})
				default:
					bad = append(bad, fmt.Sprintf("%s: %s is missing", f.raw, at))
				}
			}
		}
		for n := 0; n < st.each; n++ {
			var elems []specValue
			for _, l := range next {
				switch v := l.v.(type) {
				case nil:
				case []any:
					for i, e := range v {
						elems = append(elems, specValue{at: fmt.Sprintf("%s[%d]", l.at, i), v: e})
					}
				default:
					bad = append(bad, fmt.Sprintf("%s: %s is %s, want an array", f.raw, specAt(l.at), specTypeOf(l.v)))
				}
			}
			next = elems
		}
		cur = next
	}
	return cur, bad
}

func specJoin(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

func specAt(at string) string {
	if at == "" {
		return "the body"
	}
	return at
}

// jsonType names the JSON type of v as encoding/json decodes it.
func specTypeOf(v any) string {
	switch x := v.(type) {
	case specAbsent:
		return "absent"
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		if x == math.Trunc(x) {
			return "int"
		}
		return "number"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

func specTypeIn(v any, types []string) bool {
	got := specTypeOf(v)
	for _, ty := range types {
		switch {
		case ty == "any" && got != "absent", ty == got, ty == "number" && got == "int":
			return true
		}
	}
	return false
}

func TestCheckFields(t *testing.T) {
	doc := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	page := `{"meta":{"next":false,"previous":true},"results":[{"id":"a","count":3,"pct":1.5,"anr":null},{"id":"b","count":1,"pct":0,"sizes":{"x":1}}]}`
	cases := []struct {
		name  string
		body  string
		specs []string
		bad   []string // substrings of the mismatches, in order; nil: none
	}{
		{"members and elements", page, []string{"meta.next:bool", "meta.previous:bool", "results:array", "results[].id:string",
			"results[].count:int", "results[].pct:number"}, nil},
		{"int refuses a fraction", page, []string{"results[].pct:int"}, []string{"results[0].pct is number, want int"}},
		{"wrong type named with its path", page, []string{"results[].id:number"}, []string{"results[0].id is string", "results[1].id is string"}},
		{"missing member", page, []string{"results[].error_type:string"}, []string{"results[0].error_type is missing", "results[1].error_type is missing"}},
		{"absent allowed", page, []string{"results[].error_type:string|absent", "results[].anr:object|null|absent"}, nil},
		{"absent only at the end", page, []string{"nope.x:string|absent"}, []string{"nope is missing"}},
		{"null on the way reaches nothing", `{"sizes":null}`, []string{"sizes:object|null", "sizes.no_data:bool"}, []string{"reaches no value"}},
		{"optional may reach nothing", `{"sizes":null,"results":[]}`, []string{"?sizes.no_data:bool", "?results[].id:string"}, nil},
		{"optional still checks what is there", `{"sizes":{}}`, []string{"?sizes.no_data:bool"}, []string{"sizes.no_data is missing"}},
		{"empty array reaches nothing", `{"results":[]}`, []string{"results[].id:string"}, []string{"reaches no value"}},
		{"array wanted", `{"results":{"id":"x"}}`, []string{"results[].id:string"}, []string{"results is object, want an array"}},
		{"object wanted on the way", `{"meta":[1]}`, []string{"meta.next:bool"}, []string{"meta is array, want an object"}},
		{"whole body", `[{"id":"x","data":[{"datetime":"2024-01-01","instances":2}]}]`,
			[]string{":array|null", "[].id:string", "[].data[].datetime:string", "[].data[].instances:int"}, nil},
		{"null body", `null`, []string{":array|null", "?[].id:string"}, nil},
		{"null body, required element", `null`, []string{"[].id:string"}, []string{"reaches no value"}},
		{"every member", `{"app_version":{"1.0 (1)":2,"2.0 (2)":"x"},"country":{}}`, []string{"app_version.*:number", "?country.*:number"},
			[]string{"app_version.2.0 (2) is string"}},
		{"any is not absent", `{}`, []string{"a:any|absent", "b:any"}, []string{"b is missing"}},
		{"nested arrays", `{"threads":{"main":[{"event_type":"gesture_click"}],"bg":[]}}`, []string{"threads:object", "threads.*[].event_type:string"}, nil},
		{"strings of an array", `{"results":["a",1]}`, []string{"results[]:string"}, []string{"results[1] is int, want string"}},
		{"unknown type", `{}`, []string{"a:text"}, []string{`unknown type "text"`}},
		{"no type", `{}`, []string{"a"}, []string{"no \":type\""}},
		{"bad step", `{}`, []string{"a..b:string"}, []string{"empty step"}},
	}
	if got := fieldValues(doc(page), "results[].id"); !reflect.DeepEqual(got, []any{"a", "b"}) {
		t.Errorf("fieldValues results[].id: %v", got)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkFields(doc(c.body), c.specs)
			if len(got) != len(c.bad) {
				t.Fatalf("mismatches %q, want %d like %q", got, len(c.bad), c.bad)
			}
			for i, want := range c.bad {
				if !strings.Contains(got[i], want) {
					t.Errorf("mismatch %d: %q, want it to say %q", i, got[i], want)
				}
			}
		})
	}
}
