package model

import (
	"encoding/json"
	"strings"
	"testing"
)

func st(typ, desc, thread string) Step { return Step{Type: typ, Description: desc, ThreadName: thread} }

func TestComputeCommonPath(t *testing.T) {
	crash := st("exception", "Crash: E - boom", "main")
	http200 := st("http", "HTTP GET to https://a/b (status: 200)", "okhttp")
	home := st("lifecycle_activity", "Activity resumed: Home", "main")
	tap := st("gesture_click", "User tapped on login", "main")
	cases := []struct {
		name     string
		sessions [][]Step
		want     string
	}{
		{"none", nil, `{"sessions_analyzed":0,"steps":[]}`},
		{"shared steps by position from the end", [][]Step{
			{tap, home, http200, crash},
			{home, st("http", "HTTP GET to https://a/b (status: 500)", "okhttp"), crash},
			{st("gesture_click", "User tapped on signup", "main"), st("screen_view", "Screen viewed: X", "main"), http200, st("exception", "Crash: E - boom", "bg")},
			{st("custom", "Custom event: x", "main"), crash},
		}, `{"sessions_analyzed":4,"steps":[` +
			`{"description":"Activity resumed: Home","thread_name":"main","confidence_pct":50},` + // each tap: 1 of 4 < 30 %
			`{"description":"HTTP GET to https://a/b (status: 200)","thread_name":"okhttp","confidence_pct":50},` +
			`{"description":"Crash: E - boom","thread_name":"main","confidence_pct":100}]}`},
		{"one decimal, 30 % is enough", [][]Step{
			{st("a", "A", "t1"), crash},
			{st("b", "B", "t1"), crash},
			{st("c", "C", "t1"), st("anr", "ANR: X", "main")},
		}, `{"sessions_analyzed":3,"steps":[` +
			`{"description":"A","thread_name":"t1","confidence_pct":33.3},` + // a three-way tie: the smallest type
			`{"description":"Crash: E - boom","thread_name":"main","confidence_pct":66.7}]}`},
		{"same description, other type", [][]Step{
			{st("custom", "X", "m"), crash}, {st("string", "X", "m"), crash}, {st("custom", "X", "m"), crash},
		}, `{"sessions_analyzed":3,"steps":[{"description":"X","thread_name":"m","confidence_pct":66.7},` +
			`{"description":"Crash: E - boom","thread_name":"main","confidence_pct":100}]}`},
		{"thread tie: the smaller name", [][]Step{
			{st("a", "A", "zeta"), crash}, {st("a", "A", "alpha"), crash},
		}, `{"sessions_analyzed":2,"steps":[{"description":"A","thread_name":"alpha","confidence_pct":100},` +
			`{"description":"Crash: E - boom","thread_name":"main","confidence_pct":100}]}`},
	}
	for _, c := range cases {
		b, _ := json.Marshal(ComputeCommonPath(c.sessions))
		if string(b) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, b, c.want)
		}
	}
}

func TestComputeCommonPathLimits(t *testing.T) {
	// 60 sessions: only the first 50 count. The first 50 end with crash A, the rest with B.
	var sessions [][]Step
	for i := 0; i < 60; i++ {
		last := st("exception", "Crash: A", "main")
		if i >= 50 {
			last = st("exception", "Crash: B", "main")
		}
		// 70 steps: step 0 (position 69 from the end) is the same everywhere but beyond the
		// last 50, so it must not show.
		s := []Step{st("session_start", "Session started", "main")}
		for k := 1; k < 69; k++ {
			s = append(s, st("custom", "Custom event: "+strings.Repeat("x", k%5+i%7), "main"))
		}
		sessions = append(sessions, append(s, last))
	}
	p := ComputeCommonPath(sessions)
	if p.SessionsAnalyzed != 50 {
		t.Fatalf("analyzed %d", p.SessionsAnalyzed)
	}
	for _, s := range p.Steps {
		if s.Description == "Session started" {
			t.Error("a step beyond the last 50 was used")
		}
	}
	if last := p.Steps[len(p.Steps)-1]; last.Description != "Crash: A" || last.ConfidencePct != 100 {
		t.Errorf("last step %+v", last)
	}
}

func TestDescribe(t *testing.T) {
	cases := []struct {
		typ, payload, want string
		ok                 bool
	}{
		{"gesture_click", `{"target":"com.google.android.material.textview.MaterialTextView","target_id":"btn_nested_fragments","width":720}`, "User tapped on btn_nested_fragments", true},
		{"gesture_click", `{"target":"com.google.android.material.textview.MaterialTextView","target_id":null}`, "User tapped on com.google.android.material.textview.MaterialTextView", true},
		{"gesture_click", `{"target":"","target_id":""}`, "User tapped on the screen", true},
		{"gesture_long_click", `{"target":"org.maplibre.android.maps.MapView","target_id":"mapView"}`, "User long pressed on mapView", true},
		{"gesture_scroll", `{"target":"I1.n","target_id":null,"direction":"right"}`, "User scrolled right on I1.n", true},
		{"gesture_scroll", `{"target":"I1.n"}`, "User scrolled on I1.n", true},
		{"lifecycle_activity", `{"type":"resumed","class_name":"sh.measure.sample.MainActivity"}`, "Activity resumed: sh.measure.sample.MainActivity", true},
		{"lifecycle_fragment", `{"type":"attached","class_name":"F","parent_activity":"A"}`, "Fragment attached: F", true},
		{"lifecycle_view_controller", `{"type":"viewDidAppear","class_name":"ViewController"}`, "View controller viewDidAppear: ViewController", true},
		{"lifecycle_swift_ui", `{"type":"on_appear","class_name":"DetailListView"}`, "SwiftUI view on_appear: DetailListView", true},
		{"lifecycle_app", `{"type":"background"}`, "App moved to the background", true},
		{"lifecycle_app", `{"type":"terminated"}`, "App terminated", true},
		{"screen_view", `{"name":"/screen_navigation"}`, "Screen viewed: /screen_navigation", true},
		{"http", `{"url":"https://fakestoreapi.com/users?id=3#top","method":"post","status_code":200}`, "HTTP POST to https://fakestoreapi.com/users (status: 200)", true},
		{"http", `{"url":"https://fakestoreapi.com/login","method":"get","status_code":null,"failure_reason":"DioExceptionType.badResponse"}`, "HTTP GET to https://fakestoreapi.com/login (failed: DioExceptionType.badResponse)", true},
		{"http", `{"url":"https://a.b/c","method":"GET"}`, "HTTP GET to https://a.b/c", true},
		{"cold_launch", `{"on_next_draw_uptime":1,"launched_activity":"sh.measure.sample.ExceptionDemoActivity"}`, "Cold launch: sh.measure.sample.ExceptionDemoActivity", true},
		{"hot_launch", `{}`, "Hot launch", true},
		{"network_change", `{"network_type":"wifi","previous_network_type":"unknown"}`, "Network changed to wifi", true},
		{"app_exit", `{"reason":"CRASH","importance":"FOREGROUND"}`, "App exited: CRASH", true},
		{"trim_memory", `{"level":"TRIM_MEMORY_UI_HIDDEN"}`, "Trim memory: TRIM_MEMORY_UI_HIDDEN", true},
		{"low_memory", `{"java_max_heap":1}`, "Low memory", true},
		{"custom", `{"name":"custom-app-start"}`, "Custom event: custom-app-start", true},
		{"navigation", `{"from":"a","to":"b"}`, "Navigated to b", true},
		{"bug_report", `{"description":"Bug found!"}`, "Bug report", true},
		{"session_start", `{}`, "Session started", true},
		{"string", `{"severity_text":"info","string":"` + strings.Repeat("ü", 120) + `"}`, "Log: " + strings.Repeat("ü", 100), true},
		{"log", `{"body":"hello\nworld"}`, "Log: hello\nworld", true},
		{"exception", `{"handled":false,"exceptions":[{"type":"java.lang.IllegalStateException","message":"boom","frames":[{"method_name":"m"}]}]}`, "Crash: java.lang.IllegalStateException - boom", true},
		{"exception", `{"severity":"handled","framework":"js","exceptions":[{"type":"Error","message":"Simulated handled error"}]}`, "Exception: Error - Simulated handled error", true},
		{"exception", `{"framework":"apple","handled":false,"exceptions":[{"signal":"SIGABRT","message":""}]}`, "Crash: SIGABRT", true},
		{"anr", `{"handled":false,"foreground":true,"exceptions":[{"type":"sh.measure.android.anr.AnrError","message":"Application Not Responding for at least 5000 ms."}]}`, "ANR: sh.measure.android.anr.AnrError - Application Not Responding for at least 5000 ms.", true},
		{"exception", `not json`, "exception", true},
		{"cpu_usage", `{"num_cores":8}`, "", false},
		{"memory_usage", `{}`, "", false},
		{"memory_usage_absolute", `{}`, "", false},
		{"some_new_kind", `{}`, "some_new_kind", true},
	}
	for _, c := range cases {
		got, ok := Describe(&Event{Type: c.typ, Payload: []byte(c.payload)})
		if got != c.want || ok != c.ok {
			t.Errorf("%s %s: (%q, %v), want (%q, %v)", c.typ, c.payload, got, ok, c.want, c.ok)
		}
	}
}

// TestDescribeFixtures: every fixture event gets a description (samples excepted) that names
// its kind's subject, and StepOf carries its type and thread.
func TestDescribeFixtures(t *testing.T) {
	n := 0
	for name, body := range fixtureBatches(t) {
		b, err := DecodeBatch(body, testApp, false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Events {
			e := &b.Events[i]
			s, ok := StepOf(e)
			sample := e.Type == "cpu_usage" || e.Type == "memory_usage" || e.Type == "memory_usage_absolute"
			if ok == sample {
				t.Errorf("%s: %s ok=%v", name, e.Type, ok)
				continue
			}
			if !ok {
				continue
			}
			n++
			if s.Type != e.Type || s.ThreadName != e.Attribute.ThreadName || s.Description == "" || s.Description == e.Type {
				t.Errorf("%s: %s step %+v", name, e.Type, s)
			}
		}
	}
	if n < 500 {
		t.Errorf("only %d steps", n)
	}
}
