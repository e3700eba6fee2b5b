package model

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// attrsAlone decodes each raw item of a JSON body alone, in a body of its own, so that no item
// before it can stand in for its attribute object.
func attrsAlone(tb testing.TB, rb rawBatch) (events, spans []Attributes) {
	tb.Helper()
	for _, raw := range rb.Events {
		b, err := DecodeBatch([]byte(`{"events":[`+string(raw)+`]}`), testApp, false)
		if err != nil {
			tb.Fatal(err)
		}
		events = append(events, b.Events[0].Attribute)
	}
	for _, raw := range rb.Spans {
		b, err := DecodeBatch([]byte(`{"spans":[`+string(raw)+`]}`), testApp, false)
		if err != nil {
			tb.Fatal(err)
		}
		spans = append(spans, b.Spans[0].Attributes)
	}
	return events, spans
}

// checkAttrsAlone decodes body and checks that each item's attributes are what the item gives
// alone.
func checkAttrsAlone(t *testing.T, name string, body []byte) {
	t.Helper()
	b, err := DecodeBatch(body, testApp, false)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	events, spans := attrsAlone(t, splitBatch(t, body))
	for i := range b.Events {
		if !reflect.DeepEqual(b.Events[i].Attribute, events[i]) {
			t.Errorf("%s: event %d's attributes\n%+v\nalone\n%+v", name, i, b.Events[i].Attribute, events[i])
		}
	}
	for i := range b.Spans {
		if !reflect.DeepEqual(b.Spans[i].Attributes, spans[i]) {
			t.Errorf("%s: span %d's attributes\n%+v\nalone\n%+v", name, i, b.Spans[i].Attributes, spans[i])
		}
	}
}

// TestRepeatedAttributes: an item whose attribute object repeats one read before it (the decoder
// compares the bytes instead of reading them) decodes as it does alone, in the recorded corpus
// and in bodies that repeat, change, take turns between and return to objects, more of them
// than the decoder keeps.
func TestRepeatedAttributes(t *testing.T) {
	for name, body := range fixtureBatches(t) {
		checkAttrsAlone(t, name, body)
	}
	other := strings.Replace(baseAttribute, `"thread_name":"main"`, `"thread_name":"io"`, 1)
	extra := strings.Replace(baseAttribute, `"thread_name":"main"`, `"thread_name":"main","patch_id":"p1","x":{"y":[1]}`, 1)
	spaced := strings.Replace(baseAttribute, `"thread_name":"main"`, `"thread_name" : "main"`, 1)
	longer := strings.TrimSuffix(baseAttribute, "}") + `,"user_id":"u2"}`
	escaped := strings.Replace(baseAttribute, `"thread_name":"main"`, `"thread_name":"ma\u0069n","p\"x":"a\\b\n"`, 1)
	bothSDKs := strings.Replace(baseAttribute, `"measure_sdk_version":"0.11.0"`, `"measure_sdk_version":"0.11.0","service_sdk_version":"1.2.3"`, 1)
	bothSDKsSwapped := strings.Replace(baseAttribute, `"measure_sdk_version":"0.11.0"`, `"service_sdk_version":"1.2.3","measure_sdk_version":"0.11.0"`, 1)
	noUser := strings.Replace(baseAttribute, `"user_id":null`, `"user_id":"u1"`, 1)
	n := 0
	threads := make([]string, attrMemos+2)
	for i := range threads {
		threads[i] = strings.Replace(baseAttribute, `"thread_name":"main"`, fmt.Sprintf(`"thread_name":"t%d"`, i), 1)
	}
	reordered := `{"platform":"android","thread_name":"main",` + strings.Replace(strings.TrimPrefix(baseAttribute, "{"),
		`"thread_name":"main","platform":"android",`, "", 1)
	event := func(attr string) string { // a new id each time: a batch holds an id once
		n++
		e := string(eventWith(t, "string", `{"severity_text":"info","string":"hello"}`))
		e = strings.Replace(e, "576aa557-2580-4bb6-9941-ba90df6c3c0e", fmt.Sprintf("576aa557-2580-4bb6-9941-%012x", n), 1)
		return strings.Replace(e, baseAttribute, attr, 1)
	}
	span := strings.Replace(baseSpan, baseAttribute, other, 1)
	body := func(events []string, spans ...string) []byte {
		return []byte(`{"events":[` + strings.Join(events, ",") + `],"spans":[` + strings.Join(spans, ",") + `]}`)
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"the same object throughout", body([]string{event(baseAttribute), event(baseAttribute), event(baseAttribute)})},
		{"changed and back", body([]string{event(baseAttribute), event(other), event(baseAttribute), event(other)})},
		{"unknown members", body([]string{event(extra), event(extra), event(baseAttribute), event(extra)})},
		{"whitespace, then none", body([]string{event(spaced), event(spaced), event(baseAttribute)})},
		{"objects taking turns", body([]string{event(baseAttribute), event(other), event(baseAttribute), event(other),
			event(noUser), event(baseAttribute), event(other)})},
		{"more objects than are kept", body(func() (events []string) {
			for _, i := range []int{0, 1, 2, 3, 4, 5, 0, 5, 1, 4, 4, 2} {
				events = append(events, event(threads[i]))
			}
			return events
		}())},
		{"keys in another order", body([]string{event(baseAttribute), event(reordered), event(baseAttribute), event(reordered)})},
		{"escapes in values and unknown keys", body([]string{event(escaped), event(escaped), event(baseAttribute), event(escaped)})},
		{"both SDK version keys, in either order", body([]string{event(bothSDKs), event(bothSDKsSwapped), event(bothSDKs), event(bothSDKsSwapped)})},
		{"the same members and more", body([]string{event(baseAttribute), event(longer), event(baseAttribute)})},
		{"a field set after null", body([]string{event(baseAttribute), event(noUser), event(noUser)})},
		{"spans after events", body([]string{event(other), event(other)}, span,
			strings.Replace(span, "9f1890db9aedb305", "9f1890db9aedb306", 1),
			strings.Replace(baseSpan, "9f1890db9aedb305", "9f1890db9aedb307", 1))},
		{"an attribute member twice", body([]string{event(baseAttribute),
			strings.Replace(event(baseAttribute), `"attribute":`, `"attribute":`+other+`,"attribute":`, 1)})},
	} {
		checkAttrsAlone(t, tc.name, tc.body)
	}
	// A decoder is pooled: the next body's first item must not be taken for a repeat of the last
	// body's last item by a decoder that forgot what it read.
	for range 3 {
		checkAttrsAlone(t, "the next body", body([]string{event(noUser)}))
	}
}

// TestAttrMemos follows the objects a decoder keeps, read one after another as an item's
// attribute member is: which are recalled instead of read, in what order the kept ones stand
// (the least recent goes first), that an object over maxMemoRaw is never kept, and that a
// recalled object gives what reading it gives, present bits included, and leaves the scanner
// where reading it leaves it.
func TestAttrMemos(t *testing.T) {
	objs := make([]string, attrMemos+2)
	for i := range objs {
		objs[i] = strings.Replace(baseAttribute, `"thread_name":"main"`, fmt.Sprintf(`"thread_name":"t%d"`, i), 1)
	}
	big := strings.Replace(baseAttribute, `"thread_name":"main"`, `"thread_name":"main","pad":"`+strings.Repeat("x", maxMemoRaw)+`"`, 1)
	objs = append(objs, big)
	bigAt := len(objs) - 1
	for _, tc := range []struct {
		read []int // objects read in turn
		hits []bool
		kept [][]int // the objects kept after each read, most recent first
	}{
		{
			read: []int{0, 1, 0, 2, 3, 4, 1, 0, 3},
			hits: []bool{false, false, true, false, false, false, false, false, true},
			kept: [][]int{{0}, {1, 0}, {0, 1}, {2, 0, 1}, {3, 2, 0, 1}, {4, 3, 2, 0}, {1, 4, 3, 2}, {0, 1, 4, 3}, {3, 0, 1, 4}},
		},
		{
			read: []int{bigAt, bigAt, 5, bigAt, 5},
			hits: []bool{false, false, false, false, true},
			kept: [][]int{{}, {}, {5}, {5}, {5}},
		},
	} {
		var buf []byte
		var starts []int
		for _, i := range tc.read {
			starts = append(starts, len(buf))
			buf = append(buf, objs[i]...)
		}
		d := newDecoder(buf, testApp, false)
		for step, i := range tc.read {
			var want Attributes
			fresh := newDecoder([]byte(objs[i]), testApp, false)
			wantPresent, err := fresh.attributes(&want)
			fresh.release()
			if err != nil {
				t.Fatal(err)
			}
			d.s.pos = starts[step]
			hit := false
			for _, m := range d.memos[:d.nMemos] {
				hit = hit || string(m.raw) == objs[i]
			}
			var got Attributes
			present, err := d.attributes(&got)
			if err != nil {
				t.Fatal(err)
			}
			if hit != tc.hits[step] || !reflect.DeepEqual(got, want) || present != wantPresent || d.s.pos != starts[step]+len(objs[i]) {
				t.Errorf("read %d (object %d): recalled %v, want %v; attributes equal %v, present %x want %x, scanner at %d want %d",
					step, i, hit, tc.hits[step], reflect.DeepEqual(got, want), present, wantPresent, d.s.pos, starts[step]+len(objs[i]))
			}
			var kept []int
			for _, m := range d.memos[:d.nMemos] {
				kept = append(kept, slices.Index(objs, string(m.raw)))
				if cap(m.raw) != maxMemoRaw {
					t.Errorf("a memo's buffer holds %d bytes, want %d", cap(m.raw), maxMemoRaw)
				}
			}
			if !slices.Equal(kept, tc.kept[step]) {
				t.Errorf("read %d (object %d): kept %v, want %v", step, i, kept, tc.kept[step])
			}
		}
		d.release()
	}
}
