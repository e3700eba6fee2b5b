package eventstest

import (
	"fmt"
	"reflect"
	"strings"
)

// diff lists the fields where got and want differ, one "path: got … want …" per line, so a
// failing round trip names the field a backend lost instead of dumping two whole rows.
func diff(got, want any) string {
	var out []string
	walk("", reflect.ValueOf(got), reflect.ValueOf(want), &out)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("… and %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

func walk(path string, g, w reflect.Value, out *[]string) {
	if g.Kind() != w.Kind() {
		*out = append(*out, fmt.Sprintf("%s: kind %s, want %s", path, g.Kind(), w.Kind()))
		return
	}
	switch g.Kind() {
	case reflect.Struct:
		for i := 0; i < g.NumField(); i++ {
			walk(path+"."+g.Type().Field(i).Name, g.Field(i), w.Field(i), out)
		}
	case reflect.Slice:
		// []byte and uuid.UUID print better whole.
		if g.Type().Elem().Kind() == reflect.Uint8 {
			if g.IsNil() != w.IsNil() || !reflect.DeepEqual(g.Interface(), w.Interface()) {
				*out = append(*out, fmt.Sprintf("%s: got %s, want %s", path, show(g), show(w)))
			}
			return
		}
		if g.IsNil() != w.IsNil() {
			*out = append(*out, fmt.Sprintf("%s: got nil=%v (len %d), want nil=%v (len %d)", path, g.IsNil(), g.Len(), w.IsNil(), w.Len()))
			return
		}
		if g.Len() != w.Len() {
			*out = append(*out, fmt.Sprintf("%s: len %d, want %d", path, g.Len(), w.Len()))
			return
		}
		for i := 0; i < g.Len(); i++ {
			walk(fmt.Sprintf("%s[%d]", path, i), g.Index(i), w.Index(i), out)
		}
	case reflect.Array: // uuid.UUID: its String form reads best
		if !reflect.DeepEqual(g.Interface(), w.Interface()) {
			*out = append(*out, fmt.Sprintf("%s: got %v, want %v", path, g.Interface(), w.Interface()))
		}
	default:
		if !reflect.DeepEqual(g.Interface(), w.Interface()) {
			*out = append(*out, fmt.Sprintf("%s: got %#v, want %#v", path, g.Interface(), w.Interface()))
		}
	}
}

func show(v reflect.Value) string {
	if v.IsNil() {
		return "nil"
	}
	return fmt.Sprintf("%q", v.Bytes())
}
