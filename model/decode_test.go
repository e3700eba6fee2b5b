package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-dev/svc/model/corpus"

	"github.com/google/uuid"
)

// fixturesDir is the recorded SDK corpus; a missing corpus fails the test: the real SDK bodies
// are the point.
func fixturesDir(tb testing.TB) string {
	tb.Helper()
	dir, err := corpus.Dir()
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(fixturesDir(tb), name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// fixtureBatches returns every batch_*.json body by file name.
func fixtureBatches(tb testing.TB) map[string][]byte {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join(fixturesDir(tb), "batch_*.json"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no batch fixtures found (%v)", err)
	}
	out := make(map[string][]byte, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(n)] = b
	}
	return out
}

// rawBatch splits a body with encoding/json, as an independent reference for the counts and the
// multipart parts.
type rawBatch struct {
	Events []json.RawMessage `json:"events"`
	Spans  []json.RawMessage `json:"spans"`
}

func splitBatch(tb testing.TB, body []byte) rawBatch {
	tb.Helper()
	var rb rawBatch
	if err := json.Unmarshal(body, &rb); err != nil {
		tb.Fatal(err)
	}
	return rb
}

var testApp = uuid.MustParse("0b7c1b6e-8f43-4f57-9d0e-3c3a4a0e2f11")

// TestFixturesAccepted: every real SDK batch is accepted unmodified, as a JSON body under both
// rule sets and event by event / span by span as multipart parts, with matching counts and
// payloads equal to the compacted kind member.
func TestFixturesAccepted(t *testing.T) {
	for name, body := range fixtureBatches(t) {
		t.Run(name, func(t *testing.T) {
			rb := splitBatch(t, body)
			for _, mp := range []bool{false, true} {
				b, err := DecodeBatch(body, testApp, mp)
				if err != nil {
					t.Fatalf("multipartRules=%v: %v", mp, err)
				}
				if len(b.Events) != len(rb.Events) || len(b.Spans) != len(rb.Spans) {
					t.Fatalf("got %d events %d spans, want %d and %d", len(b.Events), len(b.Spans), len(rb.Events), len(rb.Spans))
				}
			}
			b, _ := DecodeBatch(body, testApp, false)
			var parts Batch
			for i, raw := range rb.Events {
				e, inline, err := DecodeEvent(raw, testApp, i)
				if err != nil {
					t.Fatalf("event part %d: %v", i, err)
				}
				if e.ID != b.Events[i].ID || !bytes.Equal(e.Payload, b.Events[i].Payload) {
					t.Fatalf("event part %d differs from the batch decode", i)
				}
				for _, in := range inline {
					if in.EventID != e.ID {
						t.Fatalf("event part %d: inline blob of event %v", i, in.EventID)
					}
				}
				if err := parts.AddEventPart(raw, testApp); err != nil {
					t.Fatalf("AddEventPart %d: %v", i, err)
				}
				checkEvent(t, raw, &b.Events[i])
			}
			for i, raw := range rb.Spans {
				s, err := DecodeSpan(raw, testApp, i)
				if err != nil {
					t.Fatalf("span part %d: %v", i, err)
				}
				if s.SpanID != b.Spans[i].SpanID {
					t.Fatalf("span part %d differs from the batch decode", i)
				}
				checkSpan(t, raw, &b.Spans[i])
				if err := parts.AddSpanPart(raw, testApp); err != nil {
					t.Fatalf("AddSpanPart %d: %v", i, err)
				}
			}
			if err := parts.Validate(); err != nil {
				t.Fatalf("multipart batch: %v", err)
			}
			if len(parts.Inline) != len(b.Inline) {
				t.Fatalf("multipart batch: %d inline, JSON batch %d", len(parts.Inline), len(b.Inline))
			}
			// Part by part (multipart rules) or whole (JSON rules), the same items come out.
			if !reflect.DeepEqual(parts.Events, b.Events) || !reflect.DeepEqual(parts.Spans, b.Spans) {
				t.Fatal("multipart parts decode differently from the JSON batch")
			}
		})
	}
}

// checkEvent compares a decoded event with an encoding/json reading of the same raw event.
func checkEvent(t *testing.T, raw json.RawMessage, e *Event) {
	t.Helper()
	var ref map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	var typ string
	_ = json.Unmarshal(ref["type"], &typ)
	if e.Type != typ || e.AppID != testApp {
		t.Fatalf("event %v: type %q app %v", e.ID, e.Type, e.AppID)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, ref[typ]); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.Payload, want.Bytes()) {
		t.Fatalf("event %v: payload\n%s\nwant\n%s", e.ID, e.Payload, want.Bytes())
	}
	var atts []struct {
		ID        string
		Name      string
		Type      string
		Extension string
		Timestamp string
		Size      *int64
		Path      string
	}
	_ = json.Unmarshal(ref["attachments"], &atts)
	if len(e.Attachments) != len(atts) {
		t.Fatalf("event %v: %d attachments, want %d", e.ID, len(e.Attachments), len(atts))
	}
	for i, r := range atts {
		want := Attachment{ID: uuid.MustParse(r.ID), Name: r.Name, Type: r.Type, Extension: r.Extension,
			Timestamp: r.Timestamp, Size: SizeUnknown, Path: r.Path}
		if r.Size != nil {
			want.Size = *r.Size
		}
		if e.Attachments[i] != want {
			t.Fatalf("event %v: attachment %d\n%+v\nwant\n%+v", e.ID, i, e.Attachments[i], want)
		}
	}
	var env struct {
		ID            string `json:"id"`
		Timestamp     string `json:"timestamp"`
		UserTriggered bool   `json:"user_triggered"`
	}
	_ = json.Unmarshal(raw, &env)
	ts, err := time.Parse(time.RFC3339Nano, env.Timestamp)
	if err != nil || e.ID.String() != env.ID || e.Timestamp != ts.UnixNano() || e.UserTriggered != env.UserTriggered {
		t.Fatalf("event %v: envelope %+v, decoded %v %d %v", e.ID, env, e.ID, e.Timestamp, e.UserTriggered)
	}
	checkAttributes(t, ref["attribute"], &e.Attribute)
	checkUD(t, ref["user_defined_attribute"], ref["user_defined_attributes"], e.UserDefined)
}

// checkSpan compares a decoded span with encoding/json's reading of the same raw span.
func checkSpan(t *testing.T, raw json.RawMessage, sp *Span) {
	t.Helper()
	var r struct {
		Name        string  `json:"name"`
		TraceID     string  `json:"trace_id"`
		SpanID      string  `json:"span_id"`
		ParentID    *string `json:"parent_id"`
		SessionID   string  `json:"session_id"`
		Status      uint8   `json:"status"`
		StartTime   string  `json:"start_time"`
		EndTime     string  `json:"end_time"`
		Duration    uint64  `json:"duration"`
		Checkpoints []struct{ Name, Timestamp string }
		Attributes  json.RawMessage `json:"attributes"`
		UD          json.RawMessage `json:"user_defined_attribute"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	nanos := func(s string) int64 {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts.UnixNano()
	}
	parent := ""
	if r.ParentID != nil {
		parent = *r.ParentID
	}
	if sp.Name != r.Name || sp.TraceID != r.TraceID || sp.SpanID != r.SpanID || sp.ParentID != parent ||
		sp.SessionID.String() != r.SessionID || sp.Status != r.Status || sp.Duration != r.Duration ||
		sp.StartTime != nanos(r.StartTime) || sp.EndTime != nanos(r.EndTime) || sp.AppID != testApp ||
		len(sp.Checkpoints) != len(r.Checkpoints) {
		t.Fatalf("span %+v\nwant %+v", sp, r)
	}
	for i, c := range r.Checkpoints {
		if sp.Checkpoints[i].Name != c.Name || sp.Checkpoints[i].Timestamp != nanos(c.Timestamp) {
			t.Fatalf("checkpoint %d: %+v, want %+v", i, sp.Checkpoints[i], c)
		}
	}
	checkAttributes(t, r.Attributes, &sp.Attributes)
	checkUD(t, r.UD, nil, sp.UserDefined)
}

// checkAttributes compares decoded attributes with encoding/json's reading of the same object.
func checkAttributes(t *testing.T, raw json.RawMessage, a *Attributes) {
	t.Helper()
	var r refAttributes
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	var sst int64
	if r.SessionStartTime != "" {
		ts, err := time.Parse(time.RFC3339Nano, r.SessionStartTime)
		if err != nil {
			t.Fatal(err)
		}
		sst = ts.UnixNano()
	}
	userID := ""
	if r.UserID != nil {
		userID = *r.UserID
	}
	want := Attributes{
		InstallationID: r.InstallationID, AppVersion: r.AppVersion, AppBuild: r.AppBuild,
		AppUniqueID: r.AppUniqueID, Platform: r.Platform, SDKVersion: r.SDKVersion,
		ThreadName: r.ThreadName, UserID: userID, DeviceName: r.DeviceName,
		DeviceModel: r.DeviceModel, DeviceManufacturer: r.DeviceManufacturer,
		DeviceType: r.DeviceType, DeviceIsFoldable: r.DeviceIsFoldable,
		DeviceIsPhysical: r.DeviceIsPhysical, DeviceDensityDPI: r.DeviceDensityDPI,
		DeviceWidthPx: r.DeviceWidthPx, DeviceHeightPx: r.DeviceHeightPx,
		DeviceDensity: r.DeviceDensity, DeviceLocale: r.DeviceLocale,
		DeviceLowPowerMode: r.LowPower, DeviceThermalThrottlingEnabled: r.Thermal,
		OSName: strings.ToLower(r.OSName), OSVersion: r.OSVersion, OSPageSize: r.OSPageSize,
		NetworkType: r.NetworkType, NetworkProvider: r.NetworkProvider,
		NetworkGeneration: r.NetworkGeneration, DeviceCPUArch: r.DeviceCPUArch,
		SessionStartTime: sst,
	}
	got := *a
	got.Extra = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("attributes\n%+v\nwant\n%+v", got, want)
	}
	checkExtra(t, raw, a.Extra)
}

// knownAttrs are the attribute members Attributes has a field for; every other one belongs in
// Attributes.Extra.
var knownAttrs = map[string]bool{
	"installation_id": true, "app_version": true, "app_build": true, "app_unique_id": true,
	"platform": true, "service_sdk_version": true, "measure_sdk_version": true, "thread_name": true,
	"user_id": true, "device_name": true, "device_model": true, "device_manufacturer": true,
	"device_type": true, "device_is_foldable": true, "device_is_physical": true,
	"device_density_dpi": true, "device_width_px": true, "device_height_px": true,
	"device_density": true, "device_locale": true, "device_low_power_mode": true,
	"device_thermal_throttling_enabled": true, "os_name": true, "os_version": true,
	"os_page_size": true, "network_type": true, "network_provider": true,
	"network_generation": true, "device_cpu_arch": true, "session_start_time": true,
}

// checkExtra compares Attributes.Extra with encoding/json's reading of the attribute object: the
// unknown, non-null members, compacted; nil when there are none.
func checkExtra(t *testing.T, raw json.RawMessage, extra []byte) {
	t.Helper()
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for k, v := range all {
		if !knownAttrs[k] && string(v) != "null" {
			var c bytes.Buffer
			if err := json.Compact(&c, v); err != nil {
				t.Fatal(err)
			}
			want[k] = c.String()
		}
	}
	if len(want) == 0 {
		if extra != nil {
			t.Fatalf("Attributes.Extra = %s, want nil", extra)
		}
		return
	}
	var gotRaw map[string]json.RawMessage
	if err := json.Unmarshal(extra, &gotRaw); err != nil {
		t.Fatalf("Attributes.Extra %q: %v", extra, err)
	}
	got := map[string]string{}
	for k, v := range gotRaw {
		got[k] = string(v)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Attributes.Extra = %s, want the members %v", extra, want)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, extra); err != nil || !bytes.Equal(c.Bytes(), extra) {
		t.Fatalf("Attributes.Extra not compact: %s", extra)
	}
}

// checkUD compares decoded user-defined attributes with encoding/json's reading (numbers kept as
// text) of the member, or of the legacy string when the member is null or empty.
func checkUD(t *testing.T, modern, legacy json.RawMessage, got []UDAttr) {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(modern))
	dec.UseNumber()
	_ = dec.Decode(&m)
	if len(m) == 0 && len(legacy) > 0 {
		var str string
		if err := json.Unmarshal(legacy, &str); err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(str))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != len(m) {
		t.Fatalf("UD %+v, want %v", got, m)
	}
	for _, a := range got {
		var want UDAttr
		switch v := m[a.Key].(type) {
		case string:
			want = UDAttr{a.Key, UDString, v}
		case bool:
			want = UDAttr{a.Key, UDBool, strconv.FormatBool(v)}
		case json.Number:
			if i, err := v.Int64(); err == nil && !strings.ContainsAny(v.String(), ".eE") {
				want = UDAttr{a.Key, UDInt64, strconv.FormatInt(i, 10)}
			} else {
				f, _ := v.Float64()
				want = UDAttr{a.Key, UDFloat64, strconv.FormatFloat(f, 'g', -1, 64)}
			}
		}
		if a != want {
			t.Fatalf("UD %+v, want %+v", a, want)
		}
	}
}

func findFixture(tb testing.TB, part string) []byte {
	tb.Helper()
	for name, b := range fixtureBatches(tb) {
		if strings.Contains(name, part) {
			return b
		}
	}
	tb.Fatalf("no fixture named like %q", part)
	return nil
}

// TestFixtureSpotChecks pins decoded values against the fixture text.
func TestFixtureSpotChecks(t *testing.T) {
	t.Run("android batch", func(t *testing.T) {
		b, err := DecodeBatch(findFixture(t, "trimmemory-custom-coldlaunch-spans_a8580d0e"), testApp, false)
		if err != nil {
			t.Fatal(err)
		}
		var custom *Event
		for i := range b.Events {
			if b.Events[i].Type == "custom" && len(b.Events[i].UserDefined) > 0 {
				custom = &b.Events[i]
			}
		}
		if custom == nil {
			t.Fatal("no custom event with user-defined attributes")
		}
		want := []UDAttr{
			{"boolean", UDBool, "false"},
			{"double", UDFloat64, "1.7976931348623157e+308"},
			{"float", UDFloat64, "3.4028235e+38"},
			{"integer", UDInt64, "2147483647"},
			{"long", UDInt64, "9223372036854775807"},
			{"string", UDString, "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in"},
		}
		if len(custom.UserDefined) != len(want) {
			t.Fatalf("UD = %+v", custom.UserDefined)
		}
		for i := range want {
			if custom.UserDefined[i] != want[i] {
				t.Errorf("UD[%d] = %+v, want %+v", i, custom.UserDefined[i], want[i])
			}
		}
		a := b.Events[0].Attribute
		if a.Platform != "android" || a.OSName != "android" || a.SDKVersion == "" || a.InstallationID == "" || a.DeviceDensityDPI == 0 {
			t.Errorf("attributes not filled: %+v", a)
		}
		if len(b.Spans) == 0 || b.Spans[0].TraceID == "" || b.Spans[0].EndTime < b.Spans[0].StartTime {
			t.Errorf("spans: %+v", b.Spans)
		}
	})
	t.Run("timestamp nanoseconds", func(t *testing.T) {
		body := findFixture(t, "exception-bugreport-sessionstart-spans-attach_d26e0dc5")
		b, err := DecodeBatch(body, testApp, false)
		if err != nil {
			t.Fatal(err)
		}
		// first event: "timestamp": "2025-05-26T11:12:43.52500000Z"
		if got, want := b.Events[0].Timestamp, int64(1748257963525000000); got != want {
			t.Fatalf("timestamp = %d, want %d", got, want)
		}
		if b.Events[0].ID != uuid.MustParse("e6f89260-b4e6-4ba8-9cbc-67993c5155ed") || b.Events[0].Attribute.ThreadName != "msr-default" {
			t.Fatalf("event 0: %+v", b.Events[0])
		}
	})
	t.Run("legacy iOS", func(t *testing.T) {
		b, err := DecodeBatch(findFixture(t, "bugreport-lifecycleswiftui-screenview-inline-bytes-attach_6fe596a7"), testApp, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Inline) == 0 {
			t.Fatal("no inline attachment bytes kept")
		}
		for _, in := range b.Inline {
			if len(in.Bytes) == 0 || in.AttachmentID == uuid.Nil {
				t.Fatalf("inline blob %+v", in.AttachmentID)
			}
		}
		// PNG or SVG or gzip content, never base64 text any more.
		if in := b.Inline[0].Bytes; bytes.HasPrefix(in, []byte("iVBOR")) {
			t.Fatal("inline bytes still base64")
		}
		for _, e := range b.Events {
			if e.Attribute.OSName != "ios" {
				t.Fatalf("os_name %q not normalised", e.Attribute.OSName)
			}
		}
		// "size" : 2904 on the first attachment of the batch, no path.
		if a := b.Events[0].Attachments; len(a) == 0 || a[0].Size != 2904 || a[0].Path != "" {
			t.Fatalf("first attachment: %+v", a)
		}
	})
	t.Run("attachment size and path", func(t *testing.T) {
		b, err := DecodeBatch(findFixture(t, "bugreport-warmlaunch-screenview-inline-bytes-attach_628307e0"), testApp, false)
		if err != nil {
			t.Fatal(err)
		}
		const path = "/var/mobile/Containers/Data/Application/11CC2269-A36C-4AF1-97F1-3DF00AF9F06A/Documents/8ac0dc42-8f84-4388-9c1d-aededcb43a97"
		var found *Attachment
		for i := range b.Events {
			for j := range b.Events[i].Attachments {
				if a := &b.Events[i].Attachments[j]; a.Path != "" {
					found = a
				}
			}
		}
		if found == nil || found.Path != path || found.Size != 61865 {
			t.Fatalf("attachment with a path: %+v", found)
		}
	})
	t.Run("attachment without size", func(t *testing.T) {
		b, err := DecodeBatch(findFixture(t, "exception-bugreport-sessionstart-spans-attach_d26e0dc5"), testApp, false)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range b.Events {
			for _, a := range e.Attachments {
				if a.Size != SizeUnknown || a.Path != "" {
					t.Fatalf("Android attachment without size or path: %+v", a)
				}
				n++
			}
		}
		if n == 0 {
			t.Fatal("fixture has no attachments")
		}
	})
	t.Run("attribute extras", func(t *testing.T) {
		b, err := DecodeBatch(findFixture(t, "exception-http-custom-large266-spans-attach_1eecf66d"), testApp, false)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"patch_id": "60da7d21-2222-4d28-8e3b-e4ec29d7cb31", "patch_version": "OTA_1.0.1"}
		var with, without int
		count := func(x []byte) {
			var got map[string]string
			switch {
			case x == nil:
				without++
			case json.Unmarshal(x, &got) == nil && reflect.DeepEqual(got, want):
				with++
			default:
				t.Fatalf("Attributes.Extra = %s, want %v or nil", x, want)
			}
		}
		for i := range b.Events {
			count(b.Events[i].Attribute.Extra)
		}
		events := with
		for i := range b.Spans {
			count(b.Spans[i].Attributes.Extra)
		}
		// 7 of its 234 events and 5 of its 32 spans carry patch_id and patch_version.
		if events != 7 || with-events != 5 || without != 234+32-12 {
			t.Fatalf("%d events and %d spans with Extra, %d without", events, with-events, without)
		}
	})
}

// TestSingleEventFixtures: the complete events of the symbolicator inputs are accepted as
// multipart parts; the one without attribute is rejected for it.
func TestSingleEventFixtures(t *testing.T) {
	for _, tc := range []struct {
		file, field string
	}{
		{"event_android_exception-dart_sdk0.17.0-SNAPSHOT_symbolicator-input.json", ""},
		{"event_android_exception-jvm-nested_sdk0.18.0-SNAPSHOT_symbolicator-input.json", ""},
		{"event_android_exception-jvm_sdk0.18.0-SNAPSHOT_symbolicator-input.json", ""},
		{"event_ios-rn_exception-js_no-attribute_symbolicator-input.json", "attribute"},
		{"openapi_put-events_multipart-part_event-gesture-long-click-with-attachment.json", "attribute.platform"},
		{"openapi_put-events_multipart-part_event-log.json", "attribute.platform"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			e, _, err := DecodeEvent(readFixture(t, tc.file), testApp, 4)
			checkErr(t, err, "event", 4, tc.field)
			if tc.field == "" && (e.Type != "exception" || len(e.Payload) == 0) {
				t.Fatalf("decoded %+v", e)
			}
		})
	}
	// The OpenAPI multipart examples predate attribute.platform; as JSON they are fine.
	for _, f := range []string{"openapi_put-events_multipart-part_event-gesture-long-click-with-attachment.json", "openapi_put-events_multipart-part_event-log.json"} {
		body := append(append([]byte(`{"events":[`), readFixture(t, f)...), "]}"...)
		if _, err := DecodeBatch(body, testApp, false); err != nil {
			t.Errorf("%s as JSON: %v", f, err)
		}
	}
	span := readFixture(t, "openapi_put-events_multipart-part_span.json")
	if _, err := DecodeBatch(append(append([]byte(`{"spans":[`), span...), "]}"...), testApp, false); err != nil {
		t.Errorf("span part as JSON: %v", err)
	}
	_, err := DecodeSpan(span, testApp, 2)
	checkErr(t, err, "span", 2, "attributes.platform")
	if _, err := DecodeBatch(readFixture(t, "openapi_put-events_request_json-example.json"), testApp, false); err != nil {
		t.Errorf("OpenAPI JSON example: %v", err)
	}
}

// TestExceptionFragments: the exception bodies SDKs and the reference backend use pass the
// exception schema when wrapped in an event.
func TestExceptionFragments(t *testing.T) {
	names, _ := filepath.Glob(filepath.Join(fixturesDir(t), "fragment_exception-body_*.json"))
	if len(names) == 0 {
		t.Fatal("no fragments")
	}
	for _, n := range names {
		body, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		ev := eventWith(t, "exception", string(body))
		if _, _, err := DecodeEvent(ev, testApp, 0); err != nil {
			t.Errorf("%s: %v", filepath.Base(n), err)
		}
	}
	// The reference backend's ANR test body lacks `handled`, which the spec requires of an anr
	// and the real ANR batch sends: rejected, naming the field.
	_, _, err := DecodeEvent(eventWith(t, "anr", string(readFixture(t, "fragment_anr-body_jvm_backend-testdata.json"))), testApp, 0)
	checkErr(t, err, "event", 0, "anr.handled")
}

// checkErr asserts err is a *ValidationError at item/index/field, or nil when field is "".
func checkErr(t *testing.T, err error, itemKind string, index int, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("want success, got %v", err)
		}
		return
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want ValidationError at %s %d %s, got %v", itemKind, index, field, err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("errors.Is(%v, ErrInvalid) is false", err)
	}
	if ve.Item != itemKind || ve.Index != index || ve.Field != field {
		t.Fatalf("got %q %d %q (%v), want %q %d %q", ve.Item, ve.Index, ve.Field, err, itemKind, index, field)
	}
	if ve.Rule == "" {
		t.Fatalf("empty rule in %v", err)
	}
}

// TestStrSpecial8 checks the 8-byte fast path of the string scanner against the byte table: it
// must flag every word holding a byte the table does not call safe (a miss would let a quote or
// a control character through).
func TestStrSpecial8(t *testing.T) {
	for c := 0; c < 256; c++ {
		for p := 0; p < 8; p++ {
			w := []byte("aaaaaaaa")
			w[p] = byte(c)
			if got := strSpecial8(binary.LittleEndian.Uint64(w)); got == strSafe[c] {
				t.Fatalf("byte %#x at %d: special=%v", c, p, got)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 1_000_000; n++ {
		var x uint64 // mostly printable ASCII, so that each special byte is tested among safe ones
		for p := 0; p < 8; p++ {
			c := uint64(0x20 + r.IntN(0x5f))
			if r.IntN(8) == 0 {
				c = uint64(r.IntN(256))
			}
			x |= c << (8 * p)
		}
		want := false
		for p := 0; p < 8; p++ {
			want = want || !strSafe[byte(x>>(8*p))]
		}
		if strSpecial8(x) != want {
			t.Fatalf("%#x: special=%v, want %v", x, !want, want)
		}
	}
}

// TestConcurrentDecode: decoders come from a pool and share read-only tables; run under -race.
func TestConcurrentDecode(t *testing.T) {
	bodies := fixtureBatches(t)
	want := map[string]int{}
	for name, body := range bodies {
		b, err := DecodeBatch(body, testApp, false)
		if err != nil {
			t.Fatal(err)
		}
		want[name] = len(b.Events) + len(b.Spans)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(bodies))
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name, body := range bodies {
				b, err := DecodeBatch(body, testApp, w%2 == 0)
				if err == nil && len(b.Events)+len(b.Spans) != want[name] {
					err = errors.New(name + ": item count differs")
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
