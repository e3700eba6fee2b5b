package model

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
)

// jsonOf is v as a generic JSON value, for comparisons that ignore key order.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTimelineItemFields(t *testing.T) {
	ts := time.Date(2025, 6, 2, 10, 0, 0, 123456789, time.UTC).UnixNano()
	const stamp = `"event_type":%q,"thread_name":"main","timestamp":"2025-06-02T10:00:00.123456789Z"`
	cases := []struct {
		typ, payload string
		userTrig     bool
		want         string // the fields beyond event_type, thread_name and timestamp
	}{
		{"gesture_click", `{"target":"Button","target_id":"buy","width":10,"height":20,"x":1.5,"y":2,"touch_down_time":1}`, false,
			`"target":"Button","target_id":"buy","label":"","semantic_label":"","width":10,"height":20,"x":1.5,"y":2`},
		{"gesture_long_click", `{"x":1,"y":2,"label":"Buy","target_id":null}`, false,
			`"target":"","target_id":"","label":"Buy","semantic_label":"","width":0,"height":0,"x":1,"y":2`},
		{"gesture_scroll", `{"target":"List","x":1,"y":2,"end_x":3,"end_y":4,"direction":"up"}`, false,
			`"target":"List","target_id":"","x":1,"y":2,"end_x":3,"end_y":4,"direction":"up"`},
		{"navigation", `{"from":"a","to":"b"}`, true, `"from":"a","to":"b","source":"","user_triggered":true`},
		{"screen_view", `{"name":"Home"}`, false, `"name":"Home","user_triggered":false`},
		{"custom", `{"name":"tap"}`, true, `"name":"tap","user_triggered":true`},
		{"string", `{"string":"hello"}`, false, `"severity_text":"","string":"hello"`},
		{"log", `{"severity_text":"error","severity_number":17,"body":"b"}`, false, `"severity_text":"error","severity_number":17,"body":"b"`},
		{"network_change", `{"network_type":"wifi","previous_network_type":"cellular","network_generation":"unknown","previous_network_generation":"4g","network_provider":"x"}`, false,
			`"network_type":"wifi","previous_network_type":"cellular","network_generation":"unknown","previous_network_generation":"4g","network_provider":"x"`},
		{"cold_launch", `{"process_start_uptime":1000,"on_next_draw_uptime":1750,"launched_activity":"A","has_saved_state":false}`, false, `"duration":750`},
		{"cold_launch", `{"process_start_uptime":1000,"on_next_draw_uptime":99000,"launched_activity":"A","has_saved_state":false}`, false, `"duration":null`},
		{"warm_launch", `{"app_visible_uptime":100,"on_next_draw_uptime":400,"launched_activity":"A","has_saved_state":true,"intent_data":null}`, false,
			`"duration":300,"launched_activity":"A","has_saved_state":true,"intent_data":""`},
		{"hot_launch", `{"app_visible_uptime":100,"on_next_draw_uptime":110,"launched_activity":"B","has_saved_state":false,"intent_data":"x://y"}`, false,
			`"duration":10,"launched_activity":"B","has_saved_state":false,"intent_data":"x://y"`},
		{"lifecycle_activity", `{"type":"created","class_name":"A","intent":"i","saved_instance_state":true}`, false,
			`"type":"created","class_name":"A","intent":"i","saved_instance_state":true`},
		{"lifecycle_fragment", `{"type":"attached","class_name":"F","parent_activity":"A","tag":"t"}`, false,
			`"type":"attached","class_name":"F","parent_activity":"A","parent_fragment":"","tag":"t"`},
		{"lifecycle_view_controller", `{"type":"viewDidLoad","class_name":"VC"}`, false, `"type":"viewDidLoad","class_name":"VC"`},
		{"lifecycle_swift_ui", `{"type":"on_appear","class_name":"V"}`, false, `"type":"on_appear","class_name":"V"`},
		{"lifecycle_app", `{"type":"background"}`, false, `"type":"background"`},
		{"trim_memory", `{"level":"TRIM_MEMORY_UI_HIDDEN"}`, false, `"level":"TRIM_MEMORY_UI_HIDDEN"`},
		{"low_memory", `{"java_max_heap":1,"java_total_heap":2,"java_free_heap":3,"total_pss":4,"native_total_heap":5,"native_free_heap":6}`, false,
			`"java_max_heap":1,"java_total_heap":2,"java_free_heap":3,"total_pss":4,"rss":0,"native_total_heap":5,"native_free_heap":6`},
		{"app_exit", `{"reason":"CRASH","importance":"FOREGROUND","trace":"t","process_name":"p","pid":"42"}`, false,
			`"reason":"CRASH","importance":"FOREGROUND","trace":"t","process_name":"p","pid":"42"`},
		{"http", `{"url":"https://a.io/x","method":"get","status_code":200,"start_time":100,"end_time":350,"request_headers":{"a":"b"},"client":"okhttp"}`, true,
			`"url":"https://a.io/x","method":"get","status_code":200,"start_time":100,"end_time":350,"request_body":"","response_body":"","failure_reason":"","failure_description":"","request_headers":{"a":"b"},"response_headers":null,"client":"okhttp","duration":250,"user_triggered":true`},
		{"http", `{"url":"https://a.io/x","method":"get","start_time":100,"failure_reason":"timeout"}`, false,
			`"url":"https://a.io/x","method":"get","status_code":0,"start_time":100,"end_time":0,"request_body":"","response_body":"","failure_reason":"timeout","failure_description":"","request_headers":null,"response_headers":null,"client":"","duration":null,"user_triggered":false`},
		{"bug_report", `{"description":"broken"}`, false, `"description":"broken","bug_report_id":"00000000-0000-4000-8000-0000000000b1"`},
		{"exception", crashPayload, false,
			`"group_id":"` + mustGroup(t, "exception", crashPayload) + `","severity":"fatal","is_custom":false,"type":"java.lang.IllegalStateException","message":"Cart is empty",` +
				`"method_name":"onClick","file_name":"B.kt","line_number":3,"stacktrace":"java.lang.IllegalStateException: Cart is empty\n\tat a.B.onClick(B.kt:3)",` +
				`"foreground":true,"error":null,"num_code":null,"code":"","meta":null,"user_triggered":false`},
		{"exception", `{"severity":"handled","framework":"apple","is_custom":true,"exceptions":[],"error":{"numcode":-1009,"code":"NSURLErrorDomain","meta":{"k":"v"}}}`, true,
			`"group_id":"` + mustGroup(t, "exception", `{"severity":"handled","framework":"apple","is_custom":true,"exceptions":[],"error":{"numcode":-1009,"code":"NSURLErrorDomain","meta":{"k":"v"}}}`) +
				`","severity":"handled","is_custom":true,"type":"NSURLErrorDomain","message":"","method_name":"","file_name":"","line_number":0,` +
				`"stacktrace":"Error Domain=NSURLErrorDomain Code=-1009 UserInfo={\"k\":\"v\"}","foreground":false,` +
				`"error":{"numcode":-1009,"code":"NSURLErrorDomain","meta":{"k":"v"}},"num_code":-1009,"code":"NSURLErrorDomain","meta":{"k":"v"},"user_triggered":true`},
		{"anr", anrPayload, false,
			`"group_id":"` + mustGroup(t, "anr", anrPayload) + `","severity":"fatal","type":"AnrError","message":"blocked","method_name":"","file_name":"","line_number":0,` +
				`"stacktrace":"AnrError: blocked","foreground":false`},
		{"some_new_kind", `{"x":1}`, false, ``},
	}
	for _, c := range cases {
		e := Event{ID: uuid.MustParse("00000000-0000-4000-8000-0000000000b1"), Type: c.typ, Timestamp: ts,
			UserTriggered: c.userTrig, Payload: []byte(c.payload), Attribute: Attributes{ThreadName: "main"}}
		tl := BuildTimeline([]Event{e}, nil)
		items := tl.Threads["main"]
		if len(items) != 1 {
			t.Fatalf("%s: %d items on main", c.typ, len(items))
		}
		wantType := c.typ
		if c.typ == "exception" {
			wantType = "error"
		}
		var want any
		text := "{" + jsonStamp(stamp, wantType)
		if c.want != "" {
			text += "," + c.want
		}
		text += "}"
		if err := json.Unmarshal([]byte(text), &want); err != nil {
			t.Fatalf("%s: bad want %s: %v", c.typ, text, err)
		}
		if got := jsonOf(t, items[0].Fields); !reflect.DeepEqual(got, want) {
			gb, _ := json.Marshal(items[0].Fields)
			t.Errorf("%s %s:\n got  %s\n want %s", c.typ, c.payload, gb, text)
		}
	}
}

func jsonStamp(format, typ string) string {
	b, _ := json.Marshal(typ)
	return `"event_type":` + string(b) + format[len(`"event_type":%q`):]
}

func mustGroup(t *testing.T, typ, payload string) string {
	g, ok := GroupOf(&Event{Type: typ, Payload: []byte(payload)})
	if !ok {
		t.Fatalf("no group of %s", payload)
	}
	return g.ID
}

func TestBuildTimeline(t *testing.T) {
	t0 := time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	ms := int64(time.Millisecond)
	id := func(n byte) uuid.UUID { return uuid.UUID{15: n, 6: 0x40, 8: 0x80} }
	ev := func(n byte, typ, payload string, at int64, thread, user string) Event {
		return Event{ID: id(n), Type: typ, Timestamp: t0 + at, Payload: []byte(payload),
			Attribute:   Attributes{ThreadName: thread, UserID: user, AppVersion: "1.0", AppBuild: "1"},
			Attachments: []Attachment{{ID: id(100 + n), Name: "shot.png", Type: "screenshot", BlobKey: "k", Size: 3}}}
	}
	events := []Event{ // in no order; two at the same time
		ev(5, "custom", `{"name":"b"}`, 30*ms, "main", ""),
		ev(1, "session_start", `{}`, 0, "main", ""),
		ev(4, "custom", `{"name":"a"}`, 30*ms, "main", "u-1"),
		ev(2, "cpu_usage", `{"percentage_usage":12.5,"interval":5000}`, 10*ms, "", ""),
		ev(3, "memory_usage", `{"java_max_heap":1,"java_total_heap":2,"java_free_heap":3,"total_pss":4,"rss":5,"native_total_heap":6,"native_free_heap":7,"interval":8}`, 20*ms, "", ""),
		ev(6, "memory_usage_absolute", `{"max_memory":9,"used_memory":8,"interval":7}`, 40*ms, "", ""),
		ev(7, "http", `{"url":"https://a.io","method":"get"}`, 2500*ms, "OkHttp", "u-2"),
	}
	roots := []Span{
		{SpanID: "a", TraceID: "t1", Name: "first", StartTime: t0, EndTime: t0 + 5*ms, Duration: 5, Attributes: Attributes{ThreadName: "main"}},
		{SpanID: "b", TraceID: "t2", Name: "second", StartTime: t0 + ms, EndTime: t0 + 9*ms, Duration: 8, Attributes: Attributes{ThreadName: "bg"}},
	}
	tl := BuildTimeline(events, roots)
	if tl.Duration != 2500 {
		t.Errorf("Duration = %d, want 2500", tl.Duration)
	}
	if tl.Attributes.UserID != "u-1" || tl.Attributes.AppVersion != "1.0" {
		t.Errorf("Attributes = %+v, want the first event's with the first user id u-1", tl.Attributes)
	}
	got := jsonOf(t, map[string]any{"cpu": tl.CPUUsage, "mem": tl.MemoryUsage, "abs": tl.MemoryUsageAbsolute})
	want := jsonOf(t, map[string]any{
		"cpu": []any{map[string]any{"timestamp": "2025-06-02T10:00:00.01Z", "value": 12.5}},
		"mem": []any{map[string]any{"timestamp": "2025-06-02T10:00:00.02Z", "java_max_heap": 1, "java_total_heap": 2, "java_free_heap": 3,
			"total_pss": 4, "rss": 5, "native_total_heap": 6, "native_free_heap": 7, "interval": 8}},
		"abs": []any{map[string]any{"timestamp": "2025-06-02T10:00:00.04Z", "max_memory": 9, "used_memory": 8, "interval": 7}},
	})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("series = %v\nwant %v", got, want)
	}
	names := func(items []TimelineItem) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.Fields["event_type"].(string)+"@"+it.Fields["timestamp"].(string))
		}
		return out
	}
	if len(tl.Threads) != 2 {
		t.Errorf("threads %v, want main and OkHttp", tl.Threads)
	}
	if got, want := names(tl.Threads["main"]), []string{"custom@2025-06-02T10:00:00.03Z", "custom@2025-06-02T10:00:00.03Z"}; !reflect.DeepEqual(got, want) {
		t.Errorf("main = %v, want %v", got, want)
	}
	if m := tl.Threads["main"]; len(m) == 2 {
		if name, _ := m[0].Fields["name"].(json.RawMessage); string(name) != `"a"` || len(m[0].Attachments) != 1 {
			t.Errorf("main[0] = %+v, want custom a (id 4 before 5) with its attachment", m[0])
		}
	}
	if got := names(tl.Threads["OkHttp"]); len(got) != 1 {
		t.Errorf("OkHttp = %v", got)
	}
	if len(tl.Traces) != 2 || tl.Traces[0].TraceID != "t2" || tl.Traces[1].TraceID != "t1" || tl.Traces[0].ThreadName != "bg" {
		t.Errorf("Traces = %+v, want t2 then t1", tl.Traces)
	}

	// A session with traces only: the oldest root's attributes, the spread of the roots' starts.
	tl = BuildTimeline(nil, roots)
	if tl.Duration != 1 || tl.Attributes.ThreadName != "main" || len(tl.Threads) != 0 || len(tl.Traces) != 2 {
		t.Errorf("traces only: %+v", tl)
	}
	if b, _ := json.Marshal(tl.Threads); string(b) != "{}" {
		t.Errorf("threads of a session without events = %s, want {}", b)
	}
}

// TestTimelineFixtures: every event of the recorded SDK batches is on the timeline: an item of
// its thread with every field of its type, or a point of a series; session_start none.
func TestTimelineFixtures(t *testing.T) {
	n := 0
	for name, body := range fixtureBatches(t) {
		b, err := DecodeBatch(body, testApp, false)
		if err != nil {
			t.Fatal(err)
		}
		tl := BuildTimeline(b.Events, nil)
		want := map[string]int{}
		points := 0
		for i := range b.Events {
			switch typ := b.Events[i].Type; typ {
			case "session_start":
			case "cpu_usage", "memory_usage", "memory_usage_absolute":
				points++
			default:
				if typ == "exception" {
					typ = "error"
				}
				want[typ]++
			}
		}
		got := map[string]int{}
		for _, items := range tl.Threads {
			for _, it := range items {
				typ := it.Fields["event_type"].(string)
				got[typ]++
				n++
				src := typ
				if typ == "error" {
					src = "exception"
				}
				for _, m := range tlMembers[src] {
					if _, ok := it.Fields[m.name]; !ok {
						t.Errorf("%s: %s item without %s", name, typ, m.name)
					}
				}
				if _, err := json.Marshal(it.Fields); err != nil {
					t.Errorf("%s: %s item does not marshal: %v", name, typ, err)
				}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: items per type %v, want %v", name, got, want)
		}
		if p := len(tl.CPUUsage) + len(tl.MemoryUsage) + len(tl.MemoryUsageAbsolute); p != points {
			t.Errorf("%s: %d sample points, want %d", name, p, points)
		}
	}
	if n < 500 {
		t.Errorf("only %d items", n)
	}
}
