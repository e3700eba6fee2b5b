package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// checkAccepted holds for anything the decoder accepts: the input was valid JSON (the decoder is
// stricter than encoding/json, never looser), the batch re-validates, every payload is compact
// valid JSON of an object, and every item carries what its rules require.
func checkAccepted(t *testing.T, input []byte, b *Batch) {
	t.Helper()
	if !json.Valid(input) {
		t.Fatalf("accepted input that encoding/json rejects: %q", input)
	}
	if err := b.Validate(); err != nil {
		t.Fatalf("accepted batch does not re-validate: %v", err)
	}
	for i := range b.Events {
		e := &b.Events[i]
		if _, ok := kindSchemas[e.Type]; !ok {
			t.Fatalf("event %d: type %q", i, e.Type)
		}
		if e.Payload == nil {
			if e.Type != "session_start" {
				t.Fatalf("event %d: no payload for %s", i, e.Type)
			}
			continue
		}
		var c bytes.Buffer
		if err := json.Compact(&c, e.Payload); err != nil || !bytes.Equal(c.Bytes(), e.Payload) || e.Payload[0] != '{' {
			t.Fatalf("event %d: payload not compact JSON object: %q (%v)", i, e.Payload, err)
		}
		if e.Attribute.InstallationID == "" || e.Attribute.AppVersion == "" {
			t.Fatalf("event %d: required attributes empty: %+v", i, e.Attribute)
		}
		for j := 1; j < len(e.UserDefined); j++ {
			if e.UserDefined[j-1].Key >= e.UserDefined[j].Key {
				t.Fatalf("event %d: UD not sorted or duplicate: %+v", i, e.UserDefined)
			}
		}
	}
	for i := range b.Spans {
		s := &b.Spans[i]
		if len(s.SpanID) != 16 || len(s.TraceID) != 32 || s.Status > 2 || s.EndTime < s.StartTime {
			t.Fatalf("span %d: %+v", i, s)
		}
		checkExtraShape(t, s.Attributes.Extra)
	}
	for i := range b.Events {
		checkExtraShape(t, b.Events[i].Attribute.Extra)
	}
}

// checkExtraShape: Attributes.Extra is nil or a non-empty compact JSON object.
func checkExtraShape(t *testing.T, x []byte) {
	t.Helper()
	if x == nil {
		return
	}
	var m map[string]json.RawMessage
	var c bytes.Buffer
	if err := json.Unmarshal(x, &m); err != nil || len(m) == 0 || json.Compact(&c, x) != nil || !bytes.Equal(c.Bytes(), x) {
		t.Fatalf("Attributes.Extra is not a non-empty compact JSON object: %q", x)
	}
}

func checkRejected(t *testing.T, err error) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) || ve.Error() == "" {
		t.Fatalf("rejection is not a ValidationError: %T %v", err, err)
	}
}

// FuzzDecodeBatch: no input panics; rejections are ValidationErrors; acceptances are sound.
func FuzzDecodeBatch(f *testing.F) {
	// Seeds: every fixture batch, the large ones cut down to a few small events of distinct
	// types (the fuzzer spends its time minimising big inputs instead of mutating them;
	// TestFixturesAccepted covers the whole bodies).
	for _, body := range fixtureBatches(f) {
		if len(body) <= 16<<10 {
			f.Add(body, false)
			continue
		}
		rb := splitBatch(f, body)
		var small []string
		seen := map[string]bool{}
		for _, raw := range rb.Events {
			var head struct{ Type string }
			_ = json.Unmarshal(raw, &head)
			if len(raw) <= 8<<10 && !seen[head.Type] && len(small) < 8 {
				seen[head.Type] = true
				small = append(small, string(raw))
			}
		}
		var spans []string
		for _, raw := range rb.Spans[:min(3, len(rb.Spans))] {
			spans = append(spans, string(raw))
		}
		f.Add([]byte(`{"events":[`+strings.Join(small, ",")+`],"spans":[`+strings.Join(spans, ",")+`]}`), false)
	}
	f.Add([]byte(`{"events":[`+string(eventWith(f, "custom", `{"name":"x"}`))+`],"spans":[`+baseSpan+`]}`), true)
	f.Add([]byte(`{"events":[],"spans":[]}`), false)
	f.Add([]byte(`{"events":[{"user_defined_attributes":"{\"a\":1}"}]}`), false)
	// Numbers the decoder rewrites in payloads (decode_num.go), with whitespace to compact.
	f.Add([]byte(`{"events":[`+string(eventWith(f, "cpu_usage", `{ "num_cores" : 8.0, "clock_speed":1.8e9, "uptime": 1e3 ,
		"utime":-0,"stime":2.5,"cutime":0.4,"cstime":0,"interval":5e3,"percentage_usage":1e-400,"start_time":12.5e1 }`))+`]}`), false)
	f.Add([]byte(`{"events":[`+string(eventWith(f, "http", `{"url":"u","method":"get","status_code":-2e2,"start_time":1.0}`))+
		`],"spans":[`+strings.Replace(baseSpan, `"duration":75`, `"duration":7.5e1`, 1)+`]}`), false)
	f.Fuzz(func(t *testing.T, body []byte, multipart bool) {
		b, err := DecodeBatch(body, testApp, multipart)
		if err != nil {
			checkRejected(t, err)
			return
		}
		checkAccepted(t, body, &b)
	})
}

// FuzzDecodeEvent: a multipart event part decodes the same way alone and inside a JSON body.
func FuzzDecodeEvent(f *testing.F) {
	seen := map[string]bool{}
	for _, body := range fixtureBatches(f) {
		for _, raw := range splitBatch(f, body).Events {
			var head struct{ Type string }
			_ = json.Unmarshal(raw, &head)
			if !seen[head.Type] || bytes.Contains(raw, []byte(`"bytes"`)) && !seen["bytes"] {
				seen[head.Type] = true
				seen["bytes"] = seen["bytes"] || bytes.Contains(raw, []byte(`"bytes"`))
				f.Add([]byte(raw))
			}
		}
	}
	for _, name := range []string{
		"event_android_exception-dart_sdk0.17.0-SNAPSHOT_symbolicator-input.json",
		"event_android_exception-jvm_sdk0.18.0-SNAPSHOT_symbolicator-input.json",
		"openapi_put-events_multipart-part_event-log.json",
	} {
		f.Add(readFixture(f, name))
	}
	f.Fuzz(func(t *testing.T, part []byte) {
		e, inline, err := DecodeEvent(part, testApp, 3)
		if err != nil {
			checkRejected(t, err)
			var ve *ValidationError
			if errors.As(err, &ve) && (ve.Item != "event" || ve.Index != 3) {
				t.Fatalf("error names %s %d, want event 3: %v", ve.Item, ve.Index, err)
			}
			return
		}
		b := Batch{Events: []Event{e}, Inline: inline}
		checkAccepted(t, part, &b)
		if e.Attribute.Platform == "" {
			t.Fatal("multipart rules accepted an event without platform")
		}
		wrapped := append(append([]byte(`{"events":[`), part...), "]}"...)
		jb, err := DecodeBatch(wrapped, testApp, true)
		if err != nil {
			t.Fatalf("accepted as a part, rejected in a body: %v", err)
		}
		if len(jb.Events) != 1 || !reflect.DeepEqual(jb.Events[0], e) || len(jb.Inline) != len(inline) {
			t.Fatalf("part and body decode differ")
		}
	})
}
