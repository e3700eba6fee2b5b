package eventstest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Numbers as real SDKs send them (docs/ingest-numbers.md): a batch whose numbers take every
// edge the decoder accepts goes through model.DecodeBatch as ingest does, and each store must
// give back what the decoder made of it, and find the user-defined numbers with ud_expression
// as model.UDCmp.Eval does: int64 and float64 compared exactly across the two types, the float64
// 2^63 that a JavaScript bridge's 9223372036854776000 becomes included.

// numUD are the user-defined values of the exception events, one event each: the label names
// the event in the hand-written answers below, the JSON text is what the SDK sent.
var numUD = []struct{ label, json string }{
	{"js-long-max", "9223372036854776000"}, // Java's Long.MAX_VALUE through a JavaScript bridge: the float64 2^63
	{"int-max", "9223372036854775807"},
	{"int-max-1", "9223372036854775806"},
	{"int-min", "-9223372036854775808"},
	{"below-int-min", "-9223372036854775809"}, // the float64 -2^63
	{"two-64", "18446744073709551616"},
	{"int-2^53+1", "9007199254740993"},
	{"float-2^53", "9007199254740992.0"},
	{"float-1.5", "1.5"},
	{"int-2", "2"},
	{"float-2", "2.0"},
	{"int-minus-0", "-0"},
	{"float-minus-0", "-0.0"},
	{"underflow", "1e-400"},
	{"float-tiny", "5e-324"},
	{"float-max", "1.7976931348623157e308"},
	{"float-min", "-1.7976931348623157e308"},
	{"int-42", "42"},
	{"string", `"9223372036854776000"`}, // a string never matches a number
	{"bool", "true"},
}

// numCases are ud_expressions and, where written by hand, the labels of the events each finds.
// Every case is also checked against model's Eval over the stored events.
var numCases = []struct {
	expr string
	want []string // nil: brute force only
}{
	{numCmp("int64", "gt", "9223372036854775000"), []string{"js-long-max", "int-max", "int-max-1", "two-64", "float-max"}},
	{numCmp("float64", "gt", "9.2e18"), []string{"js-long-max", "int-max", "int-max-1", "two-64", "float-max"}},
	{numCmp("int64", "gte", "9223372036854775807"), []string{"js-long-max", "int-max", "two-64", "float-max"}},
	{numCmp("int64", "gt", "9223372036854775807"), []string{"js-long-max", "two-64", "float-max"}},
	{numCmp("int64", "eq", "9223372036854775807"), []string{"int-max"}},
	{numCmp("float64", "eq", "9223372036854775808"), []string{"js-long-max"}},
	{numCmp("float64", "eq", "9223372036854776000"), []string{"js-long-max"}},
	{numCmp("int64", "lt", "-9223372036854775807"), []string{"int-min", "below-int-min", "float-min"}},
	{numCmp("float64", "eq", "0"), []string{"int-minus-0", "float-minus-0", "underflow"}},
	{numCmp("int64", "eq", "2"), []string{"int-2", "float-2"}},
	{numCmp("float64", "gt", "9007199254740992"), []string{"js-long-max", "int-max", "int-max-1", "two-64", "int-2^53+1", "float-max"}},
	{numCmp("int64", "eq", "9007199254740992"), []string{"float-2^53"}},
	{`{"and":[` + numCmp("float64", "gte", "1.5") + `,` + numCmp("int64", "lte", "2") + `]}`, []string{"float-1.5", "int-2", "float-2"}},
	{numCmp("float64", "lt", "5e-324"), nil},
	{numCmp("int64", "neq", "42"), nil},
	{numCmp("float64", "lte", "-9.223372036854776e18"), nil},
	{numCmp("int64", "gte", "-9223372036854775808"), nil},
	{`{"cmp":{"key":"n","type":"string","op":"eq","value":"9223372036854776000"}}`, []string{"string"}},
}

func numCmp(typ, op, value string) string {
	return `{"cmp":{"key":"n","type":"` + typ + `","op":"` + op + `","value":"` + value + `"}}`
}

// numbersBody is a PUT /events body with one exception per numUD value, a cold launch and a
// span, every integer field written some way other than the plain integer.
func numbersBody(ts func(i int) string) string {
	attr := `{"installation_id":"1fefa265-9e6b-45d8-aa83-23b03070c06e","app_version":"1.0","app_build":"1",
		"app_unique_id":"sh.svc.numbers","platform":"android","measure_sdk_version":"0.11.0","thread_name":"main",
		"device_density_dpi":440.0,"device_width_px":1079.9999999,"device_height_px":2.138e3,"device_density":3.4028235E38,
		"os_page_size":4e0,"os_name":"android","os_version":"33","network_type":"wifi","network_provider":"unknown",
		"network_generation":"unknown","device_cpu_arch":"arm64-v8a"}`
	exception := `{"handled":false,"foreground":true,"framework":"jvm","exceptions":[{"type":"java.lang.IllegalStateException",
		"message":"numbers","frames":[{"line_num":12.0,"col_num":-0,"frame_index":1e400,"method_name":"run","file_name":"Foo.kt","class_name":"sh.svc.Foo"}]}],
		"threads":[],"error":{"numcode":-2.6e2,"code":"x","meta":{}}}`
	var b strings.Builder
	b.WriteString(`{"events":[`)
	for i, u := range numUD {
		fmt.Fprintf(&b, `{"id":"%s","session_id":"%s","timestamp":"%s","type":"exception","exception":%s,
			"attribute":%s,"attachments":[{"id":"%s","type":"screenshot","name":"s.png","size":61865.0}],
			"user_defined_attribute":{"n":%s,"label":"%s"},"timestampInMillis":1748257963123.5}`,
			numID(i), numID(1000+i), ts(i), exception, attr, numID(2000+i), u.json, u.label)
		b.WriteString(",")
	}
	fmt.Fprintf(&b, `{"id":"%s","session_id":"%s","timestamp":"%s","type":"cold_launch",
		"cold_launch":{"process_start_uptime":1.5e3,"on_next_draw_uptime":2000.4,"launched_activity":"Main","has_saved_state":false},
		"attribute":%s,"user_defined_attributes":"{\"n\":9223372036854776000}"}`, numID(len(numUD)), numID(1000), ts(len(numUD)), attr)
	fmt.Fprintf(&b, `],"spans":[{"name":"numbers","trace_id":"d71f3d909689859469a7d9b38e605d56","span_id":"9f1890db9aedb305",
		"session_id":"%s","start_time":"%s","end_time":"%s","duration":1.8446744073709551615e19,"status":1.0,
		"attributes":%s,"user_defined_attribute":{"n":9223372036854776000,"m":-0.0}}]}`, numID(1000), ts(0), ts(1), attr)
	return b.String()
}

func numID(i int) uuid.UUID {
	return uuid.MustParse(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
}

func testNumbers(t *testing.T, s sinks.EventStore) {
	app := uuid.New()
	base := time.Unix(0, tsBase).UTC()
	ts := func(i int) string { return base.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano) }
	b, err := model.DecodeBatch([]byte(numbersBody(ts)), app, false)
	if err != nil {
		t.Fatalf("DecodeBatch: %v", err)
	}
	for i := range b.Events {
		b.Events[i].Facts = model.DeriveFacts(&b.Events[i])
	}
	// What the decoder makes of the edges, so that the rest checks something.
	e0, launch, sp := b.Events[0], b.Events[len(numUD)], b.Spans[0]
	if got := fmt.Sprint(e0.UserDefined); got != "[{label string js-long-max} {n float64 9.223372036854776e+18}]" {
		t.Fatalf("decoded UD %s", got)
	}
	if a := e0.Attribute; a.DeviceWidthPx != 1080 || a.DeviceHeightPx != 2138 || a.DeviceDensityDPI != 440 || a.OSPageSize != 4 || e0.Attachments[0].Size != 61865 {
		t.Fatalf("decoded attributes %+v, attachment size %d", a, e0.Attachments[0].Size)
	}
	if e0.Facts.GroupID == "" || !e0.Facts.Fatal || !strings.Contains(string(e0.Payload), `"line_num":12.0`) || !strings.Contains(string(e0.Payload), `"numcode":-260`) {
		t.Fatalf("decoded exception: facts %+v, payload %s", e0.Facts, e0.Payload)
	}
	if launch.Facts.LaunchMs != 500 || fmt.Sprint(launch.UserDefined) != "[{n float64 9.223372036854776e+18}]" {
		t.Fatalf("decoded launch: facts %+v, payload %s, UD %v", launch.Facts, launch.Payload, launch.UserDefined)
	}
	if sp.Duration != 18446744073709551615 || sp.Status != 1 || fmt.Sprint(sp.UserDefined) != "[{m float64 0} {n float64 9.223372036854776e+18}]" {
		t.Fatalf("decoded span: duration %d, status %d, UD %v", sp.Duration, sp.Status, sp.UserDefined)
	}

	if err := s.WriteEvents(ctx(t), b.Events); err != nil {
		t.Fatalf("WriteEvents: %v", err)
	}
	if err := s.WriteSpans(ctx(t), b.Spans); err != nil {
		t.Fatalf("WriteSpans: %v", err)
	}
	for _, e := range b.Events {
		checkEvent(t, s, e)
	}
	got, err := s.Span(ctx(t), app, sp.SpanID)
	if err != nil {
		t.Fatalf("Span: %v", err)
	}
	if d := diff(got, normSpan(sp)); d != "" {
		t.Errorf("Span differs from what was written:\n%s", d)
	}

	a, ok := s.(sinks.Analytics)
	if !ok {
		return
	}
	labelOf := map[uuid.UUID]string{}
	for i, u := range numUD {
		labelOf[numID(i)] = u.label
	}
	for _, c := range numCases {
		t.Run(c.expr, func(t *testing.T) {
			x, err := model.ParseUDExpr(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			q := model.IssueQuery{EventFilter: model.EventFilter{App: app, From: tsBase, To: tsBase + int64(time.Second), UD: x}}
			found, err := a.IssueEvents(ctx(t), &q, model.EventPage{Limit: 1000})
			if err != nil {
				t.Fatalf("IssueEvents: %v", err)
			}
			var gotLabels, eval []string
			for _, e := range found {
				gotLabels = append(gotLabels, labelOf[e.ID])
			}
			for i := range b.Events {
				if q.MatchIssue(&b.Events[i]) {
					eval = append(eval, labelOf[b.Events[i].ID])
				}
			}
			slices.Sort(gotLabels)
			slices.Sort(eval)
			if !slices.Equal(gotLabels, eval) {
				t.Errorf("store finds %v, Eval %v", gotLabels, eval)
			}
			if c.want != nil {
				want := slices.Sorted(slices.Values(c.want))
				if !slices.Equal(eval, want) {
					t.Errorf("Eval finds %v, want %v", eval, want)
				}
			}
		})
	}
	checkCount(t, s, app, int64(len(b.Events)), 1)
}
