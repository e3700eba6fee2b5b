package dashboard

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

func TestOverviewSeries(t *testing.T) {
	v12, v13 := model.AppVersion{Name: "1.2", Code: "120"}, model.AppVersion{Name: "1.3 beta", Code: "131"}
	cases := []struct {
		name string
		rows []model.PlotRow
		want string
	}{
		{"no data is null", nil, `null`},
		{"ids without a space, error_free_sessions 0", []model.PlotRow{
			{Version: v13, Datetime: "2025-04-02", Instances: 1},
			{Version: v12, Datetime: "2025-04-02", Instances: 2},
			{Version: v12, Datetime: "2025-04-01", Instances: 3},
			{Version: v12, Datetime: "2025-04-02", Instances: 4},
		}, `[{"id":"1.2(120)","data":[{"datetime":"2025-04-01","instances":3,"error_free_sessions":0},` +
			`{"datetime":"2025-04-02","instances":6,"error_free_sessions":0}]},` +
			`{"id":"1.3 beta(131)","data":[{"datetime":"2025-04-02","instances":1,"error_free_sessions":0}]}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(overviewSeries(model.BuildPlot(c.rows, model.PlotNoRate), c.rows))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Errorf("got  %s\nwant %s", b, c.want)
			}
		})
	}
}

func TestErrorEventOf(t *testing.T) {
	id := uuid.MustParse("00000000-0000-4000-8000-000000000001")
	sess := uuid.MustParse("00000000-0000-4000-8000-000000000002")
	att := uuid.MustParse("00000000-0000-4000-8000-000000000003")
	in := instanceJSON{ID: id, SessionID: sess, Attribute: json.RawMessage(`{"app_version":"1.2"}`),
		Exception: model.ExceptionDetail{Title: "E@A.kt", Stacktrace: "E: boom", Message: "boom"},
		Threads:   []model.ThreadDetail{},
		Attachments: []attachmentJSON{{ID: att, Name: "shot.png", Type: "screenshot", Key: "k", Location: "https://x/k"},
			{ID: att, Name: "trace", Type: "layout_snapshot", Key: "k2"}}}
	const ts = 1743465600123456789 // 2025-04-01T00:00:00.123456789Z
	base := `"id":"00000000-0000-4000-8000-000000000001","session_id":"00000000-0000-4000-8000-000000000002",` +
		`"timestamp":"2025-04-01T00:00:00.123Z","type":"%s","attribute":{"app_version":"1.2"},"severity":"%s",` +
		`"attachments":[{"id":"00000000-0000-4000-8000-000000000003","name":"shot.png","type":"screenshot","key":"k","location":"https://x/k","size":120},` +
		`{"id":"00000000-0000-4000-8000-000000000003","name":"trace","type":"layout_snapshot","key":"k2","location":"","size":null}],"threads":[]`
	atts := []model.Attachment{{Size: 120}, {Size: model.SizeUnknown}}
	cases := []struct {
		name string
		e    model.Event
		want string
	}{
		{"unhandled exception without an NSError", model.Event{Type: "exception", Timestamp: ts, Attachments: atts,
			Facts:   model.EventFacts{Issue: model.IssueDisplay{Severity: "unhandled"}},
			Payload: []byte(`{"handled":false,"severity":"unhandled","exceptions":[]}`)},
			`{` + fmt.Sprintf(base, "exception", "unhandled") + `,"exception":{"title":"E@A.kt","stacktrace":"E: boom","message":"boom"},` +
				`"num_code":null,"code":"","meta":null,"user_defined_attribute":{}}`},
		{"crash with an NSError and attributes", model.Event{Type: "exception", Timestamp: ts, Attachments: atts,
			Facts:       model.EventFacts{Fatal: true, Issue: model.IssueDisplay{Severity: "fatal"}}, // as DeriveFacts sets a crash's
			UserDefined: []model.UDAttr{{Key: "plan", Type: model.UDString, Value: "pro"}},
			Payload:     []byte(`{"error":{"code":"NSCocoaErrorDomain","numcode":4,"meta":{"k":"v"}}}`)},
			`{` + fmt.Sprintf(base, "exception", "fatal") + `,"exception":{"title":"E@A.kt","stacktrace":"E: boom","message":"boom"},` +
				`"num_code":4,"code":"NSCocoaErrorDomain","meta":{"k":"v"},"user_defined_attribute":{"plan":"pro"}}`},
		{"anr: no exception, codes or user attributes", model.Event{Type: "anr", Timestamp: ts, Attachments: atts,
			UserDefined: []model.UDAttr{{Key: "plan", Type: model.UDString, Value: "pro"}}, Payload: []byte(`{}`)},
			`{` + fmt.Sprintf(base, "anr", "fatal") + `,"anr":{"title":"E@A.kt","stacktrace":"E: boom","message":"boom"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(errorEventOf(&in, &c.e))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Errorf("got  %s\nwant %s", b, c.want)
			}
		})
	}
}
