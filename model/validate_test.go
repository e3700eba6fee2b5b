package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

const baseAttribute = `{"thread_name":"main","platform":"android","user_id":null,"device_name":"sunfish",
	"device_model":"Pixel 4a","device_manufacturer":"Google","device_type":"phone","device_is_foldable":false,
	"device_is_physical":true,"device_density_dpi":440,"device_width_px":1080,"device_height_px":2138,
	"device_density":2.75,"device_locale":"en-US","os_name":"android","os_version":"33","os_page_size":4,
	"app_version":"0.11.0","app_build":"29137627","app_unique_id":"sh.measure.sample",
	"measure_sdk_version":"0.11.0","installation_id":"1fefa265-9e6b-45d8-aa83-23b03070c06e",
	"network_type":"wifi","network_generation":"unknown","network_provider":"unknown",
	"device_low_power_mode":false,"device_thermal_throttling_enabled":false,"device_cpu_arch":"arm64-v8a",
	"session_start_time":"2025-05-26T11:12:40.52500000Z"}`

// eventWith builds a complete event of kind whose member is member (JSON text).
func eventWith(tb testing.TB, kind, member string) []byte {
	tb.Helper()
	return []byte(`{"id":"576aa557-2580-4bb6-9941-ba90df6c3c0e","session_id":"9321a0be-906e-436b-91af-b47fb2e81cde",
		"user_triggered":false,"timestamp":"2025-10-07T12:13:01.51700000Z","type":"` + kind + `","` + kind + `":` + member + `,
		"attachments":[],"attribute":` + baseAttribute + `,"user_defined_attribute":null}`)
}

const baseSpan = `{"name":"activity.onCreate","trace_id":"d71f3d909689859469a7d9b38e605d56","span_id":"9f1890db9aedb305",
	"parent_id":null,"session_id":"a2768feb-59cd-433f-bf00-d36ab297eddb","start_time":"2024-11-18T14:14:40.54500000Z",
	"end_time":"2024-11-18T14:14:40.62000000Z","duration":75,"status":0,"attributes":` + baseAttribute + `,
	"checkpoints":[{"name":"c1","timestamp":"2024-11-18T14:14:40.55Z"}],"user_defined_attribute":{"a":1}}`

// kindMembers are valid members for every kind: real ones from the fixture corpus where the
// corpus has the kind, written by hand for the legacy kinds it lacks.
func kindMembers(tb testing.TB) map[string]string {
	tb.Helper()
	out := map[string]string{
		"string":     `{"severity_text":"info","string":"hello"}`,
		"log":        `{"severity_text":"info","severity_number":12,"body":"This is a log"}`,
		"low_memory": `{"java_max_heap":1,"java_total_heap":2,"java_free_heap":3,"total_pss":4,"native_total_heap":5,"native_free_heap":6}`,
		"navigation": `{"source":"compose","from":"home","to":"profile"}`,
	}
	for _, body := range fixtureBatches(tb) {
		rb := splitBatch(tb, body)
		for _, raw := range rb.Events {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				tb.Fatal(err)
			}
			var typ string
			_ = json.Unmarshal(m["type"], &typ)
			// Prefer the richest exception (with error object and framework) as the base.
			if _, ok := out[typ]; !ok || (typ == "exception" && bytes.Contains(m[typ], []byte(`"error"`))) {
				out[typ] = string(m[typ])
			}
		}
	}
	for k := range kindSchemas {
		if _, ok := out[k]; !ok {
			tb.Fatalf("no member for kind %s", k)
		}
	}
	return out
}

// jsonEdit applies JSON edits to a JSON object: each path is dotted, with numbers indexing arrays;
// a value of delMarker removes the member; raw JSON text is inserted as is (numbers stay exact).
type jsonEdit struct {
	path  string
	value string // JSON text, or delMarker
}

const delMarker = "\x00delete"

func applyEdits(tb testing.TB, doc []byte, edits ...jsonEdit) []byte {
	tb.Helper()
	var root any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		tb.Fatalf("base doc: %v", err)
	}
	for _, e := range edits {
		parts := strings.Split(e.path, ".")
		cur := root
		for _, p := range parts[:len(parts)-1] {
			switch c := cur.(type) {
			case map[string]any:
				cur = c[p]
			case []any:
				i, _ := strconv.Atoi(p)
				cur = c[i]
			}
		}
		last := parts[len(parts)-1]
		switch c := cur.(type) {
		case map[string]any:
			if e.value == delMarker {
				delete(c, last)
			} else {
				c[last] = json.RawMessage(e.value)
			}
		case []any:
			i, _ := strconv.Atoi(last)
			c[i] = json.RawMessage(e.value)
		default:
			tb.Fatalf("jsonEdit %s: parent is %T", e.path, cur)
		}
	}
	out, err := json.Marshal(root)
	if err != nil {
		tb.Fatalf("jsonEdit: %v", err)
	}
	return out
}

type ruleCase struct {
	name      string
	kind      string // event type whose valid member is the base; "span" for a span case
	edits     []jsonEdit
	field     string // expected ValidationError.Field; "" means accepted
	multipart bool   // field is only a violation under multipart rules (JSON rules accept it)
}

func set(path, value string) jsonEdit { return jsonEdit{path, value} }
func unset(path string) jsonEdit      { return jsonEdit{path, delMarker} }

func jsonQuote(v string) string { b, _ := json.Marshal(v); return string(b) }

// udObject returns a UD object of n attributes k0..k(n-1).
func udObject(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	b.WriteByte('}')
	return b.String()
}

// errorObject returns an Apple error object whose compact JSON is exactly n bytes.
func errorObject(n int) string {
	base := `{"numcode":260,"code":"","meta":{}}`
	return `{"numcode":260,"code":"` + strings.Repeat("x", n-len(base)) + `","meta":{}}`
}

var ruleCases = []ruleCase{
	// envelope
	{"base gesture_click", "gesture_click", nil, "", false},
	{"id missing", "custom", []jsonEdit{unset("id")}, "id", false},
	{"id not a uuid", "custom", []jsonEdit{set("id", `"42"`)}, "id", false},
	{"id a number", "custom", []jsonEdit{set("id", `42`)}, "id", false},
	{"type missing", "custom", []jsonEdit{unset("type")}, "type", false},
	{"type unknown", "custom", []jsonEdit{set("type", `"teleport"`)}, "type", false},
	{"session_id missing", "custom", []jsonEdit{unset("session_id")}, "session_id", false},
	{"session_id bad", "custom", []jsonEdit{set("session_id", `"abc"`)}, "session_id", false},
	{"timestamp missing", "custom", []jsonEdit{unset("timestamp")}, "timestamp", false},
	{"timestamp no zone", "custom", []jsonEdit{set("timestamp", `"2025-10-07T12:13:01.517"`)}, "timestamp", false},
	{"timestamp 10 digits", "custom", []jsonEdit{set("timestamp", `"2025-10-07T12:13:01.5170000001Z"`)}, "timestamp", false},
	{"timestamp 9 digits", "custom", []jsonEdit{set("timestamp", `"2025-10-07T12:13:01.517000001Z"`)}, "", false},
	{"timestamp 1 digit", "custom", []jsonEdit{set("timestamp", `"2025-10-07T12:13:01.5Z"`)}, "", false},
	{"timestamp 0 digits", "custom", []jsonEdit{set("timestamp", `"2025-10-07T12:13:01Z"`)}, "", false},
	{"timestamp offset", "custom", []jsonEdit{set("timestamp", `"2025-10-07T14:13:01.517+02:00"`)}, "", false},
	{"timestamp Feb 30", "custom", []jsonEdit{set("timestamp", `"2025-02-30T12:13:01.517Z"`)}, "timestamp", false},
	{"timestamp year 2300", "custom", []jsonEdit{set("timestamp", `"2300-01-01T00:00:00Z"`)}, "timestamp", false},
	{"timestampInMillis legacy", "custom", []jsonEdit{set("timestampInMillis", `1759839181517`)}, "", false},
	{"timestampInMillis string", "custom", []jsonEdit{set("timestampInMillis", `"x"`)}, "timestampInMillis", false},
	{"user_triggered string", "custom", []jsonEdit{set("user_triggered", `"yes"`)}, "user_triggered", false},
	{"user_triggered absent", "custom", []jsonEdit{unset("user_triggered")}, "", false},
	{"kind member missing", "custom", []jsonEdit{unset("custom")}, "custom", false},
	{"kind member null", "custom", []jsonEdit{set("custom", `null`)}, "custom", false},
	{"kind member array", "custom", []jsonEdit{set("custom", `[]`)}, "custom", false},
	{"session_start without member", "session_start", []jsonEdit{unset("session_start")}, "", false},
	{"attribute missing", "custom", []jsonEdit{unset("attribute")}, "attribute", false},
	{"attribute null", "custom", []jsonEdit{set("attribute", `null`)}, "attribute", false},
	{"attribute array", "custom", []jsonEdit{set("attribute", `[]`)}, "attribute", false},
	{"unknown envelope member", "custom", []jsonEdit{set("extra", `{"a":[1,2]}`)}, "", false},
	// attachments
	{"attachments absent", "custom", []jsonEdit{unset("attachments")}, "", false},
	{"attachments null", "custom", []jsonEdit{set("attachments", `null`)}, "", false},
	{"attachments object", "custom", []jsonEdit{set("attachments", `{}`)}, "attachments", false},
	{"attachment ok", "custom", []jsonEdit{set("attachments", `[{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","type":"layout_snapshot_json","name":"s.json","size":12,"path":"/x"}]`)}, "", false},
	{"attachment method trace", "custom", []jsonEdit{set("attachments", `[{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","type":"android_method_trace","name":"t"}]`)}, "", false},
	{"attachment id missing", "custom", []jsonEdit{set("attachments", `[{"type":"screenshot","name":"a.png"}]`)}, "attachments[0].id", false},
	{"attachment name missing", "custom", []jsonEdit{set("attachments", `[{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","type":"screenshot"}]`)}, "attachments[0].name", false},
	{"attachment type missing", "custom", []jsonEdit{set("attachments", `[{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","name":"a.png"}]`)}, "attachments[0].type", false},
	{"attachment type bad", "custom", []jsonEdit{set("attachments", `[{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","name":"a","type":"video"}]`)}, "attachments[0].type", false},
	{"attachment bytes bad", "custom", []jsonEdit{set("attachments", `[{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","name":"a","type":"screenshot","bytes":"%%%"}]`)}, "attachments[0].bytes", false},
	{"attachment size negative", "custom", []jsonEdit{set("attachments", `[{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","name":"a","type":"screenshot","size":-1}]`)}, "attachments[0].size", false},
	{"attachment timestamp free text", "custom", []jsonEdit{set("attachments", `[{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","name":"a","type":"screenshot","timestamp":"now"}]`)}, "", false},
	{"attachment timestamp number", "custom", []jsonEdit{set("attachments", `[{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","name":"a","type":"screenshot","timestamp":5}]`)}, "attachments[0].timestamp", false},
	{"attachment second bad", "custom", []jsonEdit{set("attachments", `[{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","name":"a","type":"screenshot"},7]`)}, "attachments[1]", false},
	// attributes: required (rule 4) and value sets
	{"installation_id missing", "custom", []jsonEdit{unset("attribute.installation_id")}, "attribute.installation_id", false},
	{"installation_id empty", "custom", []jsonEdit{set("attribute.installation_id", `""`)}, "attribute.installation_id", false},
	{"sdk version missing", "custom", []jsonEdit{unset("attribute.measure_sdk_version")}, "attribute.service_sdk_version", false},
	{"service_sdk_version", "custom", []jsonEdit{unset("attribute.measure_sdk_version"), set("attribute.service_sdk_version", `"1.0"`)}, "", false},
	{"thread_name missing", "custom", []jsonEdit{unset("attribute.thread_name")}, "attribute.thread_name", false},
	{"thread_name empty", "custom", []jsonEdit{set("attribute.thread_name", `""`)}, "", false},
	{"thread_name number", "custom", []jsonEdit{set("attribute.thread_name", `1`)}, "attribute.thread_name", false},
	{"app_version missing", "custom", []jsonEdit{unset("attribute.app_version")}, "attribute.app_version", false},
	{"app_version null", "custom", []jsonEdit{set("attribute.app_version", `null`)}, "attribute.app_version", false},
	{"app_build missing", "custom", []jsonEdit{unset("attribute.app_build")}, "attribute.app_build", false},
	{"app_unique_id missing", "custom", []jsonEdit{unset("attribute.app_unique_id")}, "attribute.app_unique_id", false},
	{"platform missing multipart", "custom", []jsonEdit{unset("attribute.platform")}, "attribute.platform", true},
	{"platform flutter", "custom", []jsonEdit{set("attribute.platform", `"flutter"`)}, "", true},
	{"platform bad", "custom", []jsonEdit{set("attribute.platform", `"windows"`)}, "attribute.platform", false},
	{"os_version missing event", "custom", []jsonEdit{unset("attribute.os_version")}, "", false},
	{"network_type bad", "custom", []jsonEdit{set("attribute.network_type", `"bluetooth"`)}, "attribute.network_type", false},
	{"network_type no_network", "custom", []jsonEdit{set("attribute.network_type", `"no_network"`)}, "", false},
	{"network_generation bad", "custom", []jsonEdit{set("attribute.network_generation", `"6g"`)}, "attribute.network_generation", false},
	{"network_generation absent", "custom", []jsonEdit{unset("attribute.network_generation")}, "", false},
	{"os_name iOS legacy", "custom", []jsonEdit{set("attribute.os_name", `"iOS"`)}, "", false},
	{"os_name ipados", "custom", []jsonEdit{set("attribute.os_name", `"ipados"`)}, "", false},
	{"os_name bad", "custom", []jsonEdit{set("attribute.os_name", `"windows"`)}, "attribute.os_name", false},
	{"device_type bad", "custom", []jsonEdit{set("attribute.device_type", `"watch"`)}, "attribute.device_type", false},
	{"device_type tablet", "custom", []jsonEdit{set("attribute.device_type", `"tablet"`)}, "", false},
	{"device_density_dpi too big", "custom", []jsonEdit{set("attribute.device_density_dpi", `65536`)}, "attribute.device_density_dpi", false},
	{"device_width_px max", "custom", []jsonEdit{set("attribute.device_width_px", `65535`)}, "", false},
	{"device_width_px fraction rounds", "custom", []jsonEdit{set("attribute.device_width_px", `1080.5`)}, "", false},
	{"device_width_px negative", "custom", []jsonEdit{set("attribute.device_width_px", `-1`)}, "attribute.device_width_px", false},
	{"os_page_size 256", "custom", []jsonEdit{set("attribute.os_page_size", `256`)}, "attribute.os_page_size", false},
	{"device_density string", "custom", []jsonEdit{set("attribute.device_density", `"2.75"`)}, "attribute.device_density", false},
	{"device_is_foldable string", "custom", []jsonEdit{set("attribute.device_is_foldable", `"no"`)}, "attribute.device_is_foldable", false},
	{"user_id null", "custom", []jsonEdit{set("attribute.user_id", `null`)}, "", false},
	{"user_id number", "custom", []jsonEdit{set("attribute.user_id", `7`)}, "attribute.user_id", false},
	{"session_start_time bad", "custom", []jsonEdit{set("attribute.session_start_time", `"yesterday"`)}, "attribute.session_start_time", false},
	{"unknown attribute kept", "custom", []jsonEdit{set("attribute.patch_id", `"p1"`)}, "", false},
	// user-defined attributes
	{"ud 100", "custom", []jsonEdit{set("user_defined_attribute", udObject(100))}, "", false},
	{"ud 101", "custom", []jsonEdit{set("user_defined_attribute", udObject(101))}, "user_defined_attribute", false},
	{"ud key 256", "custom", []jsonEdit{set("user_defined_attribute", `{"`+strings.Repeat("k", 256)+`":1}`)}, "", false},
	{"ud key 257", "custom", []jsonEdit{set("user_defined_attribute", `{"`+strings.Repeat("k", 257)+`":1}`)}, "user_defined_attribute", false},
	{"ud key charset", "custom", []jsonEdit{set("user_defined_attribute", `{"Aa0_-":1}`)}, "", false},
	{"ud key space", "custom", []jsonEdit{set("user_defined_attribute", `{"a b":1}`)}, "user_defined_attribute", false},
	{"ud key dot", "custom", []jsonEdit{set("user_defined_attribute", `{"a.b":1}`)}, "user_defined_attribute", false},
	{"ud key empty", "custom", []jsonEdit{set("user_defined_attribute", `{"":1}`)}, "user_defined_attribute", false},
	{"ud int64 max", "custom", []jsonEdit{set("user_defined_attribute", `{"n":9223372036854775807}`)}, "", false},
	{"ud int64 min", "custom", []jsonEdit{set("user_defined_attribute", `{"n":-9223372036854775808}`)}, "", false},
	{"ud 2^63 is a float64", "custom", []jsonEdit{set("user_defined_attribute", `{"n":9223372036854775808}`)}, "", false},
	{"ud -2^63-1 is a float64", "custom", []jsonEdit{set("user_defined_attribute", `{"n":-9223372036854775809}`)}, "", false},
	{"ud 400 digits", "custom", []jsonEdit{set("user_defined_attribute", `{"n":1`+strings.Repeat("0", 399)+`}`)}, "user_defined_attribute.n", false},
	{"ud float64 max", "custom", []jsonEdit{set("user_defined_attribute", `{"f":1.7976931348623157e308}`)}, "", false},
	{"ud 1e309", "custom", []jsonEdit{set("user_defined_attribute", `{"f":1e309}`)}, "user_defined_attribute.f", false},
	{"ud -1e309", "custom", []jsonEdit{set("user_defined_attribute", `{"f":-1e309}`)}, "user_defined_attribute.f", false},
	{"ud string 256", "custom", []jsonEdit{set("user_defined_attribute", `{"s":"`+strings.Repeat("é", 256)+`"}`)}, "", false},
	{"ud string 257", "custom", []jsonEdit{set("user_defined_attribute", `{"s":"`+strings.Repeat("a", 257)+`"}`)}, "user_defined_attribute.s", false},
	{"ud null value", "custom", []jsonEdit{set("user_defined_attribute", `{"s":null}`)}, "user_defined_attribute.s", false},
	{"ud object value", "custom", []jsonEdit{set("user_defined_attribute", `{"s":{}}`)}, "user_defined_attribute.s", false},
	{"ud array value", "custom", []jsonEdit{set("user_defined_attribute", `{"s":[1]}`)}, "user_defined_attribute.s", false},
	{"ud duplicate key", "custom", []jsonEdit{set("user_defined_attribute", `{"a":1,"a":2}`)}, "user_defined_attribute", false},
	{"ud not object", "custom", []jsonEdit{set("user_defined_attribute", `"x"`)}, "user_defined_attribute", false},
	{"ud absent", "custom", []jsonEdit{unset("user_defined_attribute")}, "", false},
	{"ud legacy string", "custom", []jsonEdit{set("user_defined_attributes", jsonQuote(`{"order_id":"order-12345","n":2}`))}, "", false},
	{"ud legacy empty", "custom", []jsonEdit{set("user_defined_attributes", `"{}"`)}, "", false},
	{"ud legacy not json", "custom", []jsonEdit{set("user_defined_attributes", `"order"`)}, "user_defined_attributes", false},
	{"ud legacy bad value", "custom", []jsonEdit{set("user_defined_attributes", jsonQuote(`{"n":1e999}`))}, "user_defined_attributes.n", false},
	{"ud legacy trailing", "custom", []jsonEdit{set("user_defined_attributes", jsonQuote(`{"n":1} x`))}, "user_defined_attributes", false},
	// kinds
	{"anr handled missing", "anr", []jsonEdit{unset("anr.handled")}, "anr.handled", false},
	{"anr foreground missing", "anr", []jsonEdit{unset("anr.foreground")}, "anr.foreground", false},
	{"anr exceptions missing", "anr", []jsonEdit{unset("anr.exceptions")}, "anr.exceptions", false},
	{"exception base", "exception", nil, "", false},
	{"exception no handled but severity", "exception", []jsonEdit{unset("exception.handled"), set("exception.severity", `"fatal"`)}, "", false},
	{"exception neither handled nor severity", "exception", []jsonEdit{unset("exception.handled")}, "exception.handled", false},
	{"exception handled string", "exception", []jsonEdit{set("exception.handled", `"no"`)}, "exception.handled", false},
	{"exception exceptions missing", "exception", []jsonEdit{unset("exception.exceptions")}, "exception.exceptions", false},
	{"exception exceptions object", "exception", []jsonEdit{set("exception.exceptions", `{}`)}, "exception.exceptions", false},
	{"exception unit not object", "exception", []jsonEdit{set("exception.exceptions.0", `"boom"`)}, "exception.exceptions[0]", false},
	{"exception framework bad", "exception", []jsonEdit{set("exception.framework", `"cobol"`)}, "exception.framework", false},
	{"exception framework absent", "exception", []jsonEdit{unset("exception.framework")}, "", false},
	{"exception framework jvm", "exception", []jsonEdit{set("exception.framework", `"jvm"`)}, "", false},
	{"exception error 4096", "exception", []jsonEdit{set("exception.error", errorObject(4096))}, "", false},
	{"exception error 4097", "exception", []jsonEdit{set("exception.error", errorObject(4097))}, "exception.error", false},
	{"exception error numcode float", "exception", []jsonEdit{set("exception.error.numcode", `2.5`)}, "exception.error.numcode", false},
	{"frame in_app absent", "exception", []jsonEdit{unset("exception.exceptions.0.frames.0.in_app")}, "", false},
	{"frame in_app string", "exception", []jsonEdit{set("exception.exceptions.0.frames.0.in_app", `"yes"`)}, "exception.exceptions[0].frames[0].in_app", false},
	{"frame line_num string", "exception", []jsonEdit{set("exception.exceptions.0.frames.1.line_num", `"12"`)}, "exception.exceptions[0].frames[1].line_num", false},
	{"binary image arch missing", "exception", []jsonEdit{set("exception.binary_images", `[{"uuid":"u","name":"n"}]`)}, "exception.binary_images[0].arch", false},
	{"binary image uuid missing", "exception", []jsonEdit{set("exception.binary_images", `[{"arch":"arm64"}]`)}, "exception.binary_images[0].uuid", false},
	{"thread frames not array", "exception", []jsonEdit{set("exception.threads", `[{"name":"t","frames":3}]`)}, "exception.threads[0].frames", false},
	{"string ok", "string", nil, "", false},
	{"string severity bad", "string", []jsonEdit{set("string.severity_text", `"loud"`)}, "string.severity_text", false},
	{"string missing", "string", []jsonEdit{unset("string.string")}, "string.string", false},
	{"log body missing", "log", []jsonEdit{unset("log.body")}, "log.body", false},
	{"log severity_number float", "log", []jsonEdit{set("log.severity_number", `1.5`)}, "log.severity_number", false},
	{"gesture_click x missing", "gesture_click", []jsonEdit{unset("gesture_click.x")}, "gesture_click.x", false},
	{"gesture_click y float32 max", "gesture_click", []jsonEdit{set("gesture_click.y", `3.4028234e38`)}, "", false},
	{"gesture_click y beyond float32", "gesture_click", []jsonEdit{set("gesture_click.y", `3.5e38`)}, "gesture_click.y", false},
	{"gesture_click width 65536", "gesture_click", []jsonEdit{set("gesture_click.width", `65536`)}, "", false},
	{"gesture_click width 2^32", "gesture_click", []jsonEdit{set("gesture_click.width", `4294967296`)}, "gesture_click.width", false},
	{"gesture_click target_id null", "gesture_click", []jsonEdit{set("gesture_click.target_id", `null`)}, "", false},
	{"gesture_long_click y missing", "gesture_long_click", []jsonEdit{unset("gesture_long_click.y")}, "gesture_long_click.y", false},
	{"gesture_scroll end_y missing", "gesture_scroll", []jsonEdit{unset("gesture_scroll.end_y")}, "gesture_scroll.end_y", false},
	{"gesture_scroll direction bad", "gesture_scroll", []jsonEdit{set("gesture_scroll.direction", `"diagonal"`)}, "gesture_scroll.direction", false},
	{"http method lowercase", "http", []jsonEdit{set("http.method", `"get"`)}, "", false},
	{"http url missing", "http", []jsonEdit{unset("http.url")}, "http.url", false},
	{"http method missing", "http", []jsonEdit{unset("http.method")}, "http.method", false},
	{"http status_code null", "http", []jsonEdit{set("http.status_code", `null`)}, "", false},
	{"http headers bad", "http", []jsonEdit{set("http.request_headers", `{"a":1}`)}, "http.request_headers.a", false},
	{"network_change previous bad", "network_change", []jsonEdit{set("network_change.previous_network_type", `"fiber"`)}, "network_change.previous_network_type", false},
	{"network_change provider missing", "network_change", []jsonEdit{unset("network_change.network_provider")}, "network_change.network_provider", false},
	{"app_exit REASON_ prefix", "app_exit", []jsonEdit{set("app_exit.reason", `"REASON_CRASH_NATIVE"`), set("app_exit.importance", `"IMPORTANCE_CACHED"`)}, "", false},
	{"app_exit reason bad", "app_exit", []jsonEdit{set("app_exit.reason", `"BOOM"`)}, "app_exit.reason", false},
	{"app_exit importance missing", "app_exit", []jsonEdit{unset("app_exit.importance")}, "app_exit.importance", false},
	{"app_exit process_name missing", "app_exit", []jsonEdit{unset("app_exit.process_name")}, "app_exit.process_name", false},
	{"lifecycle_activity type bad", "lifecycle_activity", []jsonEdit{set("lifecycle_activity.type", `"started"`)}, "lifecycle_activity.type", false},
	{"lifecycle_activity class missing", "lifecycle_activity", []jsonEdit{unset("lifecycle_activity.class_name")}, "lifecycle_activity.class_name", false},
	{"lifecycle_fragment type bad", "lifecycle_fragment", []jsonEdit{set("lifecycle_fragment.type", `"created"`)}, "lifecycle_fragment.type", false},
	{"lifecycle_view_controller vcDeinit", "lifecycle_view_controller", []jsonEdit{set("lifecycle_view_controller.type", `"vcDeinit"`)}, "", false},
	{"lifecycle_view_controller type bad", "lifecycle_view_controller", []jsonEdit{set("lifecycle_view_controller.type", `"viewDidVanish"`)}, "lifecycle_view_controller.type", false},
	{"lifecycle_swift_ui type bad", "lifecycle_swift_ui", []jsonEdit{set("lifecycle_swift_ui.type", `"appear"`)}, "lifecycle_swift_ui.type", false},
	{"lifecycle_app terminated", "lifecycle_app", []jsonEdit{set("lifecycle_app.type", `"terminated"`)}, "", false},
	{"lifecycle_app type missing", "lifecycle_app", []jsonEdit{unset("lifecycle_app.type")}, "lifecycle_app.type", false},
	{"cold_launch on_next_draw missing", "cold_launch", []jsonEdit{unset("cold_launch.on_next_draw_uptime")}, "cold_launch.on_next_draw_uptime", false},
	{"cold_launch uptime negative", "cold_launch", []jsonEdit{set("cold_launch.process_start_uptime", `-1`)}, "cold_launch.process_start_uptime", false},
	{"cold_launch has_saved_state missing", "cold_launch", []jsonEdit{unset("cold_launch.has_saved_state")}, "cold_launch.has_saved_state", false},
	{"warm_launch is_lukewarm bool", "warm_launch", []jsonEdit{set("warm_launch.is_lukewarm", `true`)}, "", false},
	{"warm_launch is_lukewarm number", "warm_launch", []jsonEdit{set("warm_launch.is_lukewarm", `1`)}, "warm_launch.is_lukewarm", false},
	{"hot_launch launched_activity missing", "hot_launch", []jsonEdit{unset("hot_launch.launched_activity")}, "hot_launch.launched_activity", false},
	{"cpu_usage num_cores 256", "cpu_usage", []jsonEdit{set("cpu_usage.num_cores", `256`)}, "cpu_usage.num_cores", false},
	{"cpu_usage percentage string", "cpu_usage", []jsonEdit{set("cpu_usage.percentage_usage", `"1"`)}, "cpu_usage.percentage_usage", false},
	{"cpu_usage uint64 max", "cpu_usage", []jsonEdit{set("cpu_usage.uptime", `18446744073709551615`)}, "", false},
	{"cpu_usage uint64 overflow", "cpu_usage", []jsonEdit{set("cpu_usage.uptime", `18446744073709551616`)}, "cpu_usage.uptime", false},
	{"memory_usage interval missing", "memory_usage", []jsonEdit{unset("memory_usage.interval")}, "memory_usage.interval", false},
	{"memory_usage_absolute max missing", "memory_usage_absolute", []jsonEdit{unset("memory_usage_absolute.max_memory")}, "memory_usage_absolute.max_memory", false},
	{"low_memory ok", "low_memory", nil, "", false},
	{"low_memory heap missing", "low_memory", []jsonEdit{unset("low_memory.total_pss")}, "low_memory.total_pss", false},
	{"trim_memory level missing", "trim_memory", []jsonEdit{unset("trim_memory.level")}, "trim_memory.level", false},
	{"navigation to missing", "navigation", []jsonEdit{unset("navigation.to")}, "navigation.to", false},
	{"screen_view name empty", "screen_view", []jsonEdit{set("screen_view.name", `""`)}, "screen_view.name", false},
	{"custom name missing", "custom", []jsonEdit{unset("custom.name")}, "custom.name", false},
	{"custom extra fields kept", "custom", []jsonEdit{set("custom.semantic_label", `"x"`)}, "", false},
	{"bug_report ok", "bug_report", nil, "", false},
	{"bug_report description number", "bug_report", []jsonEdit{set("bug_report.description", `1`)}, "bug_report.description", false},
	// spans (rule 5 and the span table)
	{"span base", "span", nil, "", false},
	{"span name missing", "span", []jsonEdit{unset("name")}, "name", false},
	{"span name empty", "span", []jsonEdit{set("name", `""`)}, "name", false},
	{"span_name alias", "span", []jsonEdit{unset("name"), set("span_name", `"x"`)}, "", false},
	{"span span_id missing", "span", []jsonEdit{unset("span_id")}, "span_id", false},
	{"span span_id 15", "span", []jsonEdit{set("span_id", `"9f1890db9aedb30"`)}, "span_id", false},
	{"span span_id upper", "span", []jsonEdit{set("span_id", `"9F1890DB9AEDB305"`)}, "span_id", false},
	{"span trace_id missing", "span", []jsonEdit{unset("trace_id")}, "trace_id", false},
	{"span trace_id 33", "span", []jsonEdit{set("trace_id", `"d71f3d909689859469a7d9b38e605d561"`)}, "trace_id", false},
	{"span trace_id not hex", "span", []jsonEdit{set("trace_id", `"g71f3d909689859469a7d9b38e605d56"`)}, "trace_id", false},
	{"span parent_id absent", "span", []jsonEdit{unset("parent_id")}, "", false},
	{"span parent_id empty", "span", []jsonEdit{set("parent_id", `""`)}, "", false},
	{"span parent_id ok", "span", []jsonEdit{set("parent_id", `"0123456789abcdef"`)}, "", false},
	{"span parent_id bad", "span", []jsonEdit{set("parent_id", `"xyz"`)}, "parent_id", false},
	{"span session_id missing", "span", []jsonEdit{unset("session_id")}, "session_id", false},
	{"span status 1", "span", []jsonEdit{set("status", `1`)}, "", false},
	{"span status 2", "span", []jsonEdit{set("status", `2`)}, "", false},
	{"span status 3", "span", []jsonEdit{set("status", `3`)}, "status", false},
	{"span status -1", "span", []jsonEdit{set("status", `-1`)}, "status", false},
	{"span status missing", "span", []jsonEdit{unset("status")}, "status", false},
	{"span start missing", "span", []jsonEdit{unset("start_time")}, "start_time", false},
	{"span end missing", "span", []jsonEdit{unset("end_time")}, "end_time", false},
	{"span end before start", "span", []jsonEdit{set("end_time", `"2024-11-18T14:14:40.54499999Z"`)}, "end_time", false},
	{"span end equals start", "span", []jsonEdit{set("end_time", `"2024-11-18T14:14:40.545Z"`)}, "", false},
	{"span duration missing", "span", []jsonEdit{unset("duration")}, "duration", false},
	{"span duration negative", "span", []jsonEdit{set("duration", `-5`)}, "duration", false},
	{"span duration fraction rounds", "span", []jsonEdit{set("duration", `7.5`)}, "", false},
	{"span status 1.0", "span", []jsonEdit{set("status", `1.0`)}, "", false},
	{"span status 1.5", "span", []jsonEdit{set("status", `1.5`)}, "status", false},
	{"span checkpoints null", "span", []jsonEdit{set("checkpoints", `null`)}, "", false},
	{"span checkpoint name missing", "span", []jsonEdit{set("checkpoints", `[{"timestamp":"2024-11-18T14:14:40.55Z"}]`)}, "checkpoints[0].name", false},
	{"span checkpoint timestamp bad", "span", []jsonEdit{set("checkpoints", `[{"name":"a","timestamp":"x"}]`)}, "checkpoints[0].timestamp", false},
	{"span attributes missing", "span", []jsonEdit{unset("attributes")}, "attributes", false},
	{"span os_version missing", "span", []jsonEdit{unset("attributes.os_version")}, "attributes.os_version", false},
	{"span thread_name missing", "span", []jsonEdit{unset("attributes.thread_name")}, "", false},
	{"span app_build missing", "span", []jsonEdit{unset("attributes.app_build")}, "", false},
	{"span sdk version missing", "span", []jsonEdit{unset("attributes.measure_sdk_version")}, "attributes.service_sdk_version", false},
	{"span platform missing multipart", "span", []jsonEdit{unset("attributes.platform")}, "attributes.platform", true},
	{"span ud bad", "span", []jsonEdit{set("user_defined_attribute", `{"a":[1]}`)}, "user_defined_attribute.a", false},
}

// TestRules runs every rule case three ways: as item 1 of a JSON body (JSON rules unless the case
// is multipart-only), as item 1 of a JSON body under multipart rules, and as a single multipart
// part. Each must agree on the outcome and name the same item, index and field.
func TestRules(t *testing.T) {
	members := kindMembers(t)
	for _, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			var doc []byte
			if c.kind == "span" {
				doc = applyEdits(t, []byte(baseSpan), c.edits...)
			} else {
				doc = applyEdits(t, eventWith(t, c.kind, members[c.kind]), c.edits...)
			}
			other := eventWith(t, "custom", `{"name":"first"}`)
			otherEv := applyEdits(t, other, set("id", `"11111111-2580-4bb6-9941-ba90df6c3c0e"`))
			otherSpan := applyEdits(t, []byte(baseSpan), set("span_id", `"aaaaaaaaaaaaaaaa"`))
			var body []byte
			item := "event"
			if c.kind == "span" {
				item = "span"
				body = []byte(`{"events":[` + string(otherEv) + `],"spans":[` + string(otherSpan) + `,` + string(doc) + `]}`)
			} else {
				body = []byte(`{"events":[` + string(otherEv) + `,` + string(doc) + `],"spans":[` + string(otherSpan) + `]}`)
			}
			_, err := DecodeBatch(body, testApp, false)
			if c.multipart {
				checkErr(t, err, item, 1, "")
			} else {
				checkErr(t, err, item, 1, c.field)
			}
			_, err = DecodeBatch(body, testApp, true)
			checkErr(t, err, item, 1, c.field)
			if item == "event" {
				_, _, err = DecodeEvent(doc, testApp, 5)
			} else {
				_, err = DecodeSpan(doc, testApp, 5)
			}
			checkErr(t, err, item, 5, c.field)
		})
	}
}

// TestBatchRules covers acceptance rules 1, 2 and 6 and malformed bodies.
func TestBatchRules(t *testing.T) {
	ev := func(id, session, ts, kind string) string {
		return string(applyEdits(t, eventWith(t, kind, `{"name":"x"}`), set("id", jsonQuote(id)), set("session_id", jsonQuote(session)), set("timestamp", jsonQuote(ts))))
	}
	const (
		id1 = "11111111-1111-4111-8111-111111111111"
		id2 = "22222222-2222-4222-8222-222222222222"
		id3 = "33333333-3333-4333-8333-333333333333"
		s1  = "aaaaaaaa-1111-4111-8111-111111111111"
		s2  = "bbbbbbbb-1111-4111-8111-111111111111"
		t0  = "2025-01-01T00:00:00.000000001Z"
		t1  = "2025-01-01T00:00:00.000000002Z"
	)
	span2 := string(applyEdits(t, []byte(baseSpan), set("span_id", `"bbbbbbbbbbbbbbbb"`)))
	for _, c := range []struct {
		name  string
		body  string
		ok    bool
		item  string
		index int
		field string
	}{
		{"empty object", `{}`, false, "", 0, "events, spans"},
		{"both empty", `{"events":[],"spans":[]}`, false, "", 0, "events, spans"},
		{"both null", `{"events":null,"spans":null}`, false, "", 0, "events, spans"},
		{"events only", `{"events":[` + ev(id1, s1, t0, "custom") + `]}`, true, "", 0, ""},
		{"spans only", `{"spans":[` + baseSpan + `]}`, true, "", 0, ""},
		{"unknown top-level member", `{"x":{"y":[1]},"spans":[` + baseSpan + `]}`, true, "", 0, ""},
		{"events not array", `{"events":{}}`, false, "", 0, "events"},
		{"event not object", `{"events":[` + ev(id1, s1, t0, "custom") + `,5]}`, false, "event", 1, ""},
		{"duplicate event id", `{"events":[` + ev(id1, s1, t0, "custom") + `,` + ev(id2, s1, t0, "custom") + `,` + ev(id1, s1, t1, "custom") + `]}`, false, "event", 2, "id"},
		{"duplicate span id", `{"spans":[` + baseSpan + `,` + span2 + `,` + baseSpan + `]}`, false, "span", 2, "span_id"},
		{"session_start first", `{"events":[` + ev(id1, s1, t1, "custom") + `,` + strings.Replace(ev(id2, s1, t0, "session_start"), `"session_start":{"name":"x"}`, `"session_start":{}`, 1) + `]}`, true, "", 0, ""},
		{"session_start tie", `{"events":[` + ev(id1, s1, t0, "custom") + `,` + ev(id2, s1, t0, "session_start") + `]}`, true, "", 0, ""},
		{"session_start late", `{"events":[` + ev(id1, s1, t0, "custom") + `,` + ev(id2, s1, t1, "session_start") + `]}`, false, "event", 1, "timestamp"},
		{"session_start other session earlier", `{"events":[` + ev(id1, s2, t0, "custom") + `,` + ev(id2, s1, t1, "session_start") + `,` + ev(id3, s1, t1, "custom") + `]}`, true, "", 0, ""},
		{"empty body", ``, false, "", 0, ""},
		{"top-level array", `[]`, false, "", 0, ""},
		{"trailing data", `{"spans":[` + baseSpan + `]} x`, false, "", 0, ""},
		{"truncated", `{"events":[{"id":"576aa557-2580-4bb6-9941-ba90df6c3c0e","ty`, false, "event", 0, ""},
		{"bad escape", `{"events":[{"id":"\q"}]}`, false, "event", 0, "id"},
		{"bad utf8", "{\"events\":[{\"id\":\"\xff\"}]}", false, "event", 0, "id"},
		{"control char", "{\"events\":[{\"id\":\"a\nb\"}]}", false, "event", 0, "id"},
		{"bad literal", `{"events":[{"user_triggered":tru}]}`, false, "event", 0, "user_triggered"},
		{"leading zero", `{"events":[{"timestampInMillis":01}]}`, false, "event", 0, ""},
		{"deep nesting", `{"events":[{"x":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}]}`, false, "event", 0, "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeBatch([]byte(c.body), testApp, false)
			switch {
			case c.ok:
				if err != nil {
					t.Fatalf("want success, got %v", err)
				}
			case c.field == "":
				var ve *ValidationError
				if !errorsAs(err, &ve) || ve.Item != c.item || ve.Index != c.index || ve.Field != "" {
					t.Fatalf("want error at %q %d, got %v", c.item, c.index, err)
				}
			default:
				checkErr(t, err, c.item, c.index, c.field)
			}
		})
	}
}

// TestErrorText: messages read as item, field, rule, and syntax errors carry the offset.
func TestErrorText(t *testing.T) {
	body := `{"events":[` + string(applyEdits(t, eventWith(t, "custom", `{"name":"x"}`), unset("attribute.app_version"))) + `]}`
	_, err := DecodeBatch([]byte(body), testApp, false)
	if got, want := err.Error(), "event 0: attribute.app_version: is required"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	_, err = DecodeBatch([]byte(`{"events":[{"id":"\q"}]}`), testApp, false)
	if got := err.Error(); !strings.Contains(got, "malformed JSON at byte 19") || !strings.HasPrefix(got, "event 0: id: ") {
		t.Fatalf("got %q", got)
	}
	_, err = DecodeBatch([]byte(`{}`), testApp, false)
	if got := err.Error(); got != "events, spans: at least one event or span is required" {
		t.Fatalf("got %q", got)
	}
}

// TestOutput pins what the decoder produces beyond acceptance.
func TestOutput(t *testing.T) {
	pretty := `{
	  "id": "576aa557-2580-4bb6-9941-ba90df6c3c0e",
	  "custom": { "name" : "a b",  "nested": [ 1, {"k" : "v  w"} ], "esc": "\u003c\/x\"" },
	  "type": "custom",
	  "session_id": "9321a0be-906e-436b-91af-b47fb2e81cde",
	  "timestamp": "2025-10-07T12:13:01.123456789Z",
	  "attribute": ` + baseAttribute + `,
	  "user_defined_attribute": {"zeta": "z", "alpha": -0, "mid": 1.50, "big": 1e2, "t": true},
	  "attachments": [{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","type":"screenshot","name":"a.png","bytes":"aGVsbG8=","size":5,"path":"/d/a.png"}]
	}`
	b, err := DecodeBatch([]byte(`{"events":[`+pretty+`]}`), testApp, false)
	if err != nil {
		t.Fatal(err)
	}
	e := b.Events[0]
	if got, want := string(e.Payload), `{"name":"a b","nested":[1,{"k":"v  w"}],"esc":"\u003c\/x\""}`; got != want {
		t.Errorf("payload %s, want %s (kind member before type, compacted, escapes kept)", got, want)
	}
	if got, want := e.Timestamp, int64(1759839181123456789); got != want {
		t.Errorf("timestamp %d, want %d", got, want)
	}
	wantUD := []UDAttr{{"alpha", UDInt64, "0"}, {"big", UDFloat64, "100"}, {"mid", UDFloat64, "1.5"}, {"t", UDBool, "true"}, {"zeta", UDString, "z"}}
	if fmt.Sprint(e.UserDefined) != fmt.Sprint(wantUD) {
		t.Errorf("UD %v, want %v", e.UserDefined, wantUD)
	}
	if len(b.Inline) != 1 || string(b.Inline[0].Bytes) != "hello" || b.Inline[0].EventID != e.ID || b.Inline[0].AttachmentID != e.Attachments[0].ID {
		t.Errorf("inline %+v", b.Inline)
	}
	if at := e.Attachments[0]; at.Size != 5 || at.Path != "/d/a.png" || e.Attribute.Extra != nil {
		t.Errorf("attachment %+v, attribute extra %q", at, e.Attribute.Extra)
	}
	a := e.Attribute
	if a.SessionStartTime != 1748257960525000000 || a.DeviceDensity != 2.75 || a.OSPageSize != 4 || a.DeviceCPUArch != "arm64-v8a" || !a.DeviceIsPhysical || a.SDKVersion != "0.11.0" {
		t.Errorf("attributes %+v", a)
	}
	// Attribute members without a model field are kept as valid JSON, escapes and all.
	ev0 := applyEdits(t, eventWith(t, "custom", `{"name":"x"}`), set("attribute.patch_id", `"p1"`), set("attribute.pa\u0001t", `{"a": [1, 2]}`))
	var pb Batch
	if err := pb.AddEventPart(ev0, testApp); err != nil {
		t.Fatal(err)
	}
	var extra map[string]any
	if x := pb.Events[0].Attribute.Extra; json.Unmarshal(x, &extra) != nil || len(extra) != 2 || extra["patch_id"] != "p1" || extra["pa\u0001t"] == nil {
		t.Errorf("attribute extra %q", x)
	}
	// Legacy UD string, and the modern member winning over it.
	ev := applyEdits(t, eventWith(t, "custom", `{"name":"x"}`), set("user_defined_attributes", jsonQuote(`{"b":"x","a":2}`)))
	got, _, err := DecodeEvent(ev, testApp, 0)
	if err != nil || fmt.Sprint(got.UserDefined) != fmt.Sprint([]UDAttr{{"a", UDInt64, "2"}, {"b", UDString, "x"}}) {
		t.Errorf("legacy UD: %v %v", got.UserDefined, err)
	}
	ev = applyEdits(t, ev, set("user_defined_attribute", `{"c":false}`))
	if got, _, _ = DecodeEvent(ev, testApp, 0); fmt.Sprint(got.UserDefined) != fmt.Sprint([]UDAttr{{"c", UDBool, "false"}}) {
		t.Errorf("modern UD should win: %v", got.UserDefined)
	}
	// Span fields.
	sp, err := DecodeSpan(applyEdits(t, []byte(baseSpan), set("parent_id", `"0123456789abcdef"`), set("status", `2`), set("attributes.service_sdk_version", `"9.9"`)), testApp, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sp.ParentID != "0123456789abcdef" || sp.Status != 2 || sp.Duration != 75 || sp.StartTime != 1731939280545000000 ||
		len(sp.Checkpoints) != 1 || sp.Checkpoints[0].Timestamp != 1731939280550000000 || sp.Attributes.SDKVersion != "9.9" ||
		fmt.Sprint(sp.UserDefined) != fmt.Sprint([]UDAttr{{"a", UDInt64, "1"}}) || sp.AppID != testApp {
		t.Errorf("span %+v", sp)
	}
}

func errorsAs(err error, target **ValidationError) bool {
	ve, ok := err.(*ValidationError)
	if ok {
		*target = ve
	}
	return ok
}

// TestDuplicateMembers: a repeated "type" is rejected (it could pair one kind's checked member
// with another kind); a repeated attribute object replaces the first instead of merging.
func TestDuplicateMembers(t *testing.T) {
	ev := string(eventWith(t, "custom", `{"name":"x"}`))
	twice := strings.Replace(ev, `"type":"custom"`, `"type":"custom","type":"http"`, 1)
	_, _, err := DecodeEvent([]byte(twice), testApp, 0)
	checkErr(t, err, "event", 0, "type")
	again := strings.Replace(ev, `"attribute":`, `"attribute":{"device_name":"first"},"attribute":`, 1)
	again = strings.Replace(again, `"device_name":"sunfish",`, ``, 1)
	e, _, err := DecodeEvent([]byte(again), testApp, 0)
	if err != nil || e.Attribute.DeviceName != "" {
		t.Fatalf("attribute merged: %q %v", e.Attribute.DeviceName, err)
	}
	// The unknown members of the first object go with it; those of the second stay.
	again = strings.Replace(ev, `"attribute":`, `"attribute":{"patch_id":"first"},"attribute":`, 1)
	if e, _, err = DecodeEvent([]byte(again), testApp, 0); err != nil || e.Attribute.Extra != nil {
		t.Fatalf("unknown attribute members merged: %q %v", e.Attribute.Extra, err)
	}
	again = strings.Replace(again, `"device_name":"sunfish",`, `"device_name":"sunfish","patch_id":"second",`, 1)
	if e, _, err = DecodeEvent([]byte(again), testApp, 0); err != nil || string(e.Attribute.Extra) != `{"patch_id":"second"}` {
		t.Fatalf("unknown attribute members of the second object: %q %v", e.Attribute.Extra, err)
	}
}

// TestStringLimits: every string member is at most MaxStringBytes, the long-text members of
// event kinds at most MaxLongTextBytes; over it the batch is refused naming the field.
func TestStringLimits(t *testing.T) {
	at := func(n int) string { return strings.Repeat("a", n) }
	batch := func(event string) []byte { return []byte(`{"events":[` + event + `],"spans":[]}`) }
	withAttr := func(key string, n int) []byte {
		attr := strings.Replace(baseAttribute, `"device_name":"sunfish"`, `"`+key+`":"`+at(n)+`"`, 1)
		if key != "device_name" {
			attr = strings.Replace(baseAttribute, `"thread_name":"main"`, `"thread_name":"`+at(n)+`"`, 1)
		}
		return batch(strings.Replace(string(eventWith(t, "custom", `{"name":"x"}`)), baseAttribute, attr, 1))
	}
	span := func(name string) []byte {
		return []byte(`{"events":[],"spans":[` + strings.Replace(baseSpan, `"name":"activity.onCreate"`, `"name":"`+name+`"`, 1) + `]}`)
	}
	cases := []struct {
		name string
		body []byte
		want string // "" = accepted
	}{
		{"custom name at the limit", batch(string(eventWith(t, "custom", `{"name":"`+at(MaxStringBytes)+`"}`))), ""},
		{"custom name over", batch(string(eventWith(t, "custom", `{"name":"`+at(MaxStringBytes+1)+`"}`))), "event 0: custom.name: must be at most 65536 bytes, is 65537"},
		{"5 MB custom name", batch(string(eventWith(t, "custom", `{"name":"`+at(5<<20)+`"}`))), "custom.name: must be at most 65536 bytes"},
		{"escapes count unescaped", batch(string(eventWith(t, "custom", `{"name":"`+strings.Repeat(`\n`, MaxStringBytes)+`"}`))), ""},
		{"attribute over", withAttr("device_name", MaxStringBytes+1), "attribute.device_name: must be at most 65536 bytes"},
		{"thread name over", withAttr("thread_name", MaxStringBytes+1), "attribute.thread_name: must be at most 65536 bytes"},
		{"log body is long text", batch(string(eventWith(t, "log", `{"severity_text":"info","body":"`+at(MaxLongTextBytes)+`"}`))), ""},
		{"log body over", batch(string(eventWith(t, "log", `{"severity_text":"info","body":"`+at(MaxLongTextBytes+1)+`"}`))), "log.body: must be at most 1048576 bytes"},
		{"http response body is long text", batch(string(eventWith(t, "http", `{"url":"https://x.example/a","method":"get","response_body":"`+at(200<<10)+`"}`))), ""},
		{"http url over", batch(string(eventWith(t, "http", `{"url":"https://x.example/`+at(MaxStringBytes)+`","method":"get"}`))), "http.url: must be at most 65536 bytes"},
		{"span name over", span(at(MaxStringBytes + 1)), "span 0: name: must be at most 65536 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeBatch(c.body, testApp, false)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
