package model

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// This file builds one session's timeline for GET /apps/{id}/sessions/{sessionId}: its events
// per thread with the fields of each event type, its resource samples as three series, and its
// root spans. It runs once per detail request, not on the ingest path, so it reads payloads
// with encoding/json for clarity.

// Timeline is a session's detail, before the dashboard renders it (attachments need signed
// locations, user-defined attributes its JSON form).
type Timeline struct {
	// Attributes are those of the session's first event (by timestamp, then id), with UserID
	// the first non-empty user id of its events; for a session without events, those of its
	// oldest root span.
	Attributes Attributes
	// Duration is the time from the first to the last event in milliseconds; for a session
	// without events, from the oldest to the newest root span start.
	Duration int64
	// The resource samples, oldest first: cpu_usage as {timestamp, value} (its
	// percentage_usage), memory_usage and memory_usage_absolute with their payload's fields.
	CPUUsage, MemoryUsage, MemoryUsageAbsolute []map[string]any
	// Threads maps each thread name (attribute thread_name, "" when the SDK sent none) to that
	// thread's items, oldest first: every event but session_start and the resource samples.
	Threads map[string][]TimelineItem
	// Traces are the session's root spans, newest first (CompareSpansNewest).
	Traces []TimelineTrace
}

// TimelineItem is one event of a thread.
type TimelineItem struct {
	// Fields are event_type, thread_name, timestamp (RFC 3339, UTC, nanoseconds) and the
	// fields of the event type (see BuildTimeline); each value is a JSON-encodable Go value or
	// raw JSON from the payload.
	Fields map[string]any
	// UserDefined are the event's user-defined attributes (rendered as user_defined_attribute).
	UserDefined []UDAttr
	// Attachments are the event's attachments (rendered with a download location).
	Attachments []Attachment
}

// TimelineTrace is a root span of the session.
type TimelineTrace struct {
	TraceID, TraceName, ThreadName string
	StartTime, EndTime             int64  // Unix ns
	Duration                       uint64 // ms, as the SDK measured it
}

// The default of a payload member that is absent or null, by the kind of value it holds.
var (
	tlDefStr  = json.RawMessage(`""`)
	tlDefNum  = json.RawMessage(`0`)
	tlDefBool = json.RawMessage(`false`)
	tlDefNull = json.RawMessage(`null`)
)

// tlMember is a timeline field read from the payload member of the same name.
type tlMember struct {
	name string
	def  json.RawMessage
}

func tlStr(name string) tlMember  { return tlMember{name, tlDefStr} }
func tlNum(name string) tlMember  { return tlMember{name, tlDefNum} }
func tlFlag(name string) tlMember { return tlMember{name, tlDefBool} }
func tlObj(name string) tlMember  { return tlMember{name, tlDefNull} }
func tlStrs(names ...string) []tlMember {
	out := make([]tlMember, len(names))
	for i, n := range names {
		out[i] = tlStr(n)
	}
	return out
}

var tlMemoryMembers = []tlMember{tlNum("java_max_heap"), tlNum("java_total_heap"), tlNum("java_free_heap"), tlNum("total_pss"),
	tlNum("rss"), tlNum("native_total_heap"), tlNum("native_free_heap")}

// tlMembers are the payload members each event type's items show, as their payload
// holds them (absent or null ones as "", 0, false or null by kind). user_triggered, and the
// fields computed from an event (launch and request durations, an error's group and stack
// trace, a bug report's id), are added by tlItemOf.
var tlMembers = map[string][]tlMember{
	"gesture_click":             {tlStr("target"), tlStr("target_id"), tlStr("label"), tlStr("semantic_label"), tlNum("width"), tlNum("height"), tlNum("x"), tlNum("y")},
	"gesture_long_click":        {tlStr("target"), tlStr("target_id"), tlStr("label"), tlStr("semantic_label"), tlNum("width"), tlNum("height"), tlNum("x"), tlNum("y")},
	"gesture_scroll":            {tlStr("target"), tlStr("target_id"), tlNum("x"), tlNum("y"), tlNum("end_x"), tlNum("end_y"), tlStr("direction")},
	"navigation":                tlStrs("from", "to", "source"),
	"screen_view":               tlStrs("name"),
	"bug_report":                tlStrs("description"),
	"custom":                    tlStrs("name"),
	"string":                    tlStrs("severity_text", "string"),
	"log":                       {tlStr("severity_text"), tlNum("severity_number"), tlStr("body")},
	"network_change":            tlStrs("network_type", "previous_network_type", "network_generation", "previous_network_generation", "network_provider"),
	"cold_launch":               {},
	"warm_launch":               {tlStr("launched_activity"), tlFlag("has_saved_state"), tlStr("intent_data")},
	"hot_launch":                {tlStr("launched_activity"), tlFlag("has_saved_state"), tlStr("intent_data")},
	"lifecycle_activity":        {tlStr("type"), tlStr("class_name"), tlStr("intent"), tlFlag("saved_instance_state")},
	"lifecycle_fragment":        tlStrs("type", "class_name", "parent_activity", "parent_fragment", "tag"),
	"lifecycle_view_controller": tlStrs("type", "class_name"),
	"lifecycle_swift_ui":        tlStrs("type", "class_name"),
	"lifecycle_app":             tlStrs("type"),
	"trim_memory":               tlStrs("level"),
	"low_memory":                tlMemoryMembers,
	"app_exit":                  {tlStr("reason"), tlStr("importance"), tlStr("trace"), tlStr("process_name"), tlStr("pid")},
	"exception":                 {tlFlag("is_custom")},
	"anr":                       {},
	"http": {tlStr("url"), tlStr("method"), tlNum("status_code"), tlNum("start_time"), tlNum("end_time"), tlStr("request_body"),
		tlStr("response_body"), tlStr("failure_reason"), tlStr("failure_description"), tlObj("request_headers"),
		tlObj("response_headers"), tlStr("client")},
}

// tlUserTriggered are the types whose items carry user_triggered.
var tlUserTriggered = []string{"navigation", "screen_view", "custom", "exception", "http"}

// The series members of the resource samples.
var (
	tlCPUMembers     = []tlMember{tlNum("percentage_usage")}
	tlMemorySeries   = append(append([]tlMember(nil), tlMemoryMembers...), tlNum("interval"))
	tlMemoryAbsolute = []tlMember{tlNum("max_memory"), tlNum("used_memory"), tlNum("interval")}
)

// tlPayload reads a payload's top-level members; nil when it is not a JSON object.
func tlPayload(p []byte) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(p, &m) != nil {
		return nil
	}
	return m
}

// put copies the members into fields, with their defaults where absent or null.
func tlPut(fields map[string]any, m map[string]json.RawMessage, ms []tlMember) {
	for _, x := range ms {
		v, ok := m[x.name]
		if !ok || bytes.Equal(v, tlDefNull) {
			v = x.def
		}
		fields[x.name] = v
	}
}

func tlTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// BuildTimeline builds a session's timeline from all its events (ascending by timestamp, then
// id, as sinks.Sessions gives them) and its root spans (newest first).
//
// Each item has event_type, thread_name and timestamp, and by type:
//   - the payload members of tlMembers (gestures: target, target_id, label,
//     semantic_label, size and position; navigation: from, to, source; screen_view and custom:
//     name; string and log lines; network_change; launches; lifecycle events; trim_memory;
//     low_memory's memory figures; app_exit; http's request and response);
//   - user_triggered for navigation, screen_view, custom, exceptions and http;
//   - launches: duration, the launch time in milliseconds as LaunchDuration measures it, null
//     when it measures none (times missing or implausible, a lukewarm launch);
//   - http: duration, end_time − start_time in milliseconds, null when either is missing or
//     the end is before the start;
//   - bug_report: bug_report_id, the event id;
//   - exceptions, whose event_type is "error": group_id, severity, type, message, method_name,
//     file_name, line_number (the grouping frame, as the group lists show it), stacktrace (as
//     the issue instances render it), foreground, is_custom, and the Apple error object as
//     error (null without one) and its num_code (null without one), code and meta;
//   - anr: the same but is_custom and the error object, severity always "fatal".
func BuildTimeline(events []Event, roots []Span) Timeline {
	tl := Timeline{Threads: map[string][]TimelineItem{}, CPUUsage: []map[string]any{}, MemoryUsage: []map[string]any{},
		MemoryUsageAbsolute: []map[string]any{}, Traces: []TimelineTrace{}}
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b Event) int {
		switch {
		case keyBefore(a.Timestamp, a.ID, b.Timestamp, b.ID):
			return -1
		case keyBefore(b.Timestamp, b.ID, a.Timestamp, a.ID):
			return 1
		}
		return 0
	})
	if len(events) > 0 {
		tl.Attributes = events[0].Attribute
		tl.Attributes.UserID = ""
		for i := range events {
			if u := events[i].Attribute.UserID; u != "" {
				tl.Attributes.UserID = u
				break
			}
		}
		tl.Duration = (events[len(events)-1].Timestamp - events[0].Timestamp) / int64(time.Millisecond)
	}
	for i := range events {
		e := &events[i]
		switch e.Type {
		case "session_start":
			continue
		case "cpu_usage":
			m := tlPayload(e.Payload)
			p := map[string]any{"timestamp": tlTime(e.Timestamp)}
			tlPut(p, m, tlCPUMembers)
			p["value"] = p["percentage_usage"]
			delete(p, "percentage_usage")
			tl.CPUUsage = append(tl.CPUUsage, p)
			continue
		case "memory_usage", "memory_usage_absolute":
			p := map[string]any{"timestamp": tlTime(e.Timestamp)}
			if e.Type == "memory_usage" {
				tlPut(p, tlPayload(e.Payload), tlMemorySeries)
				tl.MemoryUsage = append(tl.MemoryUsage, p)
			} else {
				tlPut(p, tlPayload(e.Payload), tlMemoryAbsolute)
				tl.MemoryUsageAbsolute = append(tl.MemoryUsageAbsolute, p)
			}
			continue
		}
		th := e.Attribute.ThreadName
		tl.Threads[th] = append(tl.Threads[th], tlItemOf(e))
	}
	roots = slices.Clone(roots)
	slices.SortStableFunc(roots, func(a, b Span) int { return CompareSpansNewest(&a, &b) })
	for _, s := range roots {
		tl.Traces = append(tl.Traces, TimelineTrace{TraceID: s.TraceID, TraceName: s.Name, ThreadName: s.Attributes.ThreadName,
			StartTime: s.StartTime, EndTime: s.EndTime, Duration: s.Duration})
	}
	if len(events) == 0 && len(roots) > 0 {
		oldest, newest := &roots[0], &roots[0]
		for i := range roots {
			if roots[i].StartTime < oldest.StartTime {
				oldest = &roots[i]
			}
			if roots[i].StartTime > newest.StartTime {
				newest = &roots[i]
			}
		}
		tl.Attributes = oldest.Attributes
		tl.Duration = (newest.StartTime - oldest.StartTime) / int64(time.Millisecond)
	}
	return tl
}

// tlItemOf is the timeline item of one event.
func tlItemOf(e *Event) TimelineItem {
	f := map[string]any{"event_type": e.Type, "thread_name": e.Attribute.ThreadName, "timestamp": tlTime(e.Timestamp)}
	m := tlPayload(e.Payload)
	tlPut(f, m, tlMembers[e.Type])
	if slices.Contains(tlUserTriggered, e.Type) {
		f["user_triggered"] = e.UserTriggered
	}
	switch e.Type {
	case "cold_launch", "warm_launch", "hot_launch":
		f["duration"] = nil
		if _, ms, ok := LaunchDuration(e); ok {
			f["duration"] = int64(ms)
		}
	case "http":
		f["duration"] = nil
		start, err1 := strconv.ParseUint(string(m["start_time"]), 10, 64)
		end, err2 := strconv.ParseUint(string(m["end_time"]), 10, 64)
		if err1 == nil && err2 == nil && end >= start && end-start < 1<<62 {
			f["duration"] = int64(end - start)
		}
	case "bug_report":
		f["bug_report_id"] = e.ID.String()
	case "exception", "anr":
		tlIssueFields(f, e, m)
	}
	return TimelineItem{Fields: f, UserDefined: e.UserDefined, Attachments: e.Attachments}
}

// tlIssueFields adds the fields of an exception or anr item.
func tlIssueFields(f map[string]any, e *Event, m map[string]json.RawMessage) {
	g, _ := GroupOf(e)
	f["group_id"] = g.ID
	f["type"], f["message"], f["method_name"], f["file_name"], f["line_number"] = g.Type, g.Message, g.MethodName, g.FileName, g.LineNumber
	f["foreground"] = foregroundOf(e.Payload)
	f["stacktrace"] = ""
	if exc, _, err := IssueDetail(e); err == nil {
		f["stacktrace"] = exc.Stacktrace
	}
	if e.Type == "anr" {
		f["severity"] = "fatal"
		return
	}
	f["event_type"] = "error"
	f["severity"] = g.Severity
	var appleErr struct {
		NumCode json.RawMessage `json:"numcode"`
		Code    json.RawMessage `json:"code"`
		Meta    json.RawMessage `json:"meta"`
	}
	raw, ok := m["error"]
	if !ok || bytes.Equal(raw, tlDefNull) || json.Unmarshal(raw, &appleErr) != nil {
		raw = tlDefNull
	}
	f["error"] = raw
	f["num_code"], f["code"], f["meta"] = tlOr(appleErr.NumCode, tlDefNull), tlOr(appleErr.Code, tlDefStr), tlOr(appleErr.Meta, tlDefNull)
}

func tlOr(v, def json.RawMessage) json.RawMessage {
	if len(v) == 0 || bytes.Equal(v, tlDefNull) {
		return def
	}
	return v
}
