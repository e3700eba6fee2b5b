package eventstest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-dev/svc/model/corpus"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// This file is a deliberately small, TEST-ONLY decoder of the real SDK batches in
// testdata/sdk. It is not the ingest decoder (that one validates every rule of the
// spec and tolerates legacy shapes); it maps the current JSON shape field by field so the store
// tests run on real rows, and fails the test on anything it does not understand.

// FixturesDir is the recorded SDK corpus (testdata/sdk); a missing corpus fails the test.
func FixturesDir(tb testing.TB) string {
	tb.Helper()
	dir, err := corpus.Dir()
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

// FixtureBatch decodes one batch_*.json file (name relative to FixturesDir) into the rows a
// store keeps for app, each event with its derived Facts as ingest fills them.
func FixtureBatch(tb testing.TB, app uuid.UUID, name string) ([]model.Event, []model.Span) {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(FixturesDir(tb), name))
	if err != nil {
		tb.Fatalf("read fixture: %v", err)
	}
	var batch struct {
		Events []json.RawMessage `json:"events"`
		Spans  []json.RawMessage `json:"spans"`
	}
	if err := json.Unmarshal(raw, &batch); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	events := make([]model.Event, 0, len(batch.Events))
	for i, r := range batch.Events {
		e, err := decodeEvent(app, r)
		if err != nil {
			tb.Fatalf("%s: event %d: %v", name, i, err)
		}
		e.Facts = model.DeriveFacts(&e) // as ingest does: stored rows carry their facts
		events = append(events, e)
	}
	spans := make([]model.Span, 0, len(batch.Spans))
	for i, r := range batch.Spans {
		s, err := decodeSpan(app, r)
		if err != nil {
			tb.Fatalf("%s: span %d: %v", name, i, err)
		}
		spans = append(spans, s)
	}
	return events, spans
}

// FixtureBodies decodes every batch_*.json of the corpus (FixtureBatch) and returns the events
// of each non-empty one: the bodies synthetic copies (Copies) are made from.
func FixtureBodies(tb testing.TB, app uuid.UUID) [][]model.Event {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(FixturesDir(tb), "batch_*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var bodies [][]model.Event
	for _, p := range paths {
		if evs, _ := FixtureBatch(tb, app, filepath.Base(p)); len(evs) > 0 {
			bodies = append(bodies, evs)
		}
	}
	return bodies
}

// RealisticEvents returns n events for app shaped like real SDK output: the events of a large
// fixture batch repeated with fresh ids and increasing odd-nanosecond timestamps. For
// benchmarks and bulk tests.
func RealisticEvents(tb testing.TB, app uuid.UUID, n int) []model.Event {
	tb.Helper()
	tmpl, _ := FixtureBatch(tb, app, fixtureLarge)
	out := make([]model.Event, n)
	base := time.Date(2026, 7, 16, 11, 30, 0, 0, time.UTC).UnixNano()
	salt := uuid.New()
	for i := range out {
		e := tmpl[i%len(tmpl)]
		e.ID = seqID(salt, i)
		e.Timestamp = base + int64(i)*1_000_003 + 7
		out[i] = e
	}
	return out
}

// RealisticSpans is RealisticEvents for spans.
func RealisticSpans(tb testing.TB, app uuid.UUID, n int) []model.Span {
	tb.Helper()
	_, tmpl := FixtureBatch(tb, app, fixtureLarge)
	out := make([]model.Span, n)
	base := time.Date(2026, 7, 16, 11, 30, 0, 0, time.UTC).UnixNano()
	salt := uuid.New()
	for i := range out {
		s := tmpl[i%len(tmpl)]
		id := seqID(salt, i)
		s.SpanID = fmt.Sprintf("%x", id[8:])
		s.StartTime = base + int64(i)*1_000_003 + 7
		s.EndTime = s.StartTime + 5_000_001
		out[i] = s
	}
	return out
}

// seqID derives distinct ids cheaply: salt with i in its last 8 bytes.
func seqID(salt uuid.UUID, i int) uuid.UUID {
	id := salt
	binary.BigEndian.PutUint64(id[8:], binary.BigEndian.Uint64(salt[8:])+uint64(i))
	return id
}

// The fixtures the suite uses: current JSON shape, with spans, attachments (with and without
// size and path), attribute members without a model field and user-defined attributes of all
// JSON kinds between them.
const (
	fixtureLarge = "batch_ios_rn-example_sdk0.11.0_exception-http-custom-large266-spans-attach_1eecf66d.json"
)

var fixtureFiles = []string{
	"batch_android_sample-android_sdk0.11.0-SNAPSHOT_exception-bugreport-sessionstart-spans-attach_d26e0dc5.json",
	"batch_ios_demoapp-ios_sdk0.0.1_lifecycleswiftui-gesturelongclick-custom-attach_ddb8ef7e.json",
	fixtureLarge,
	// Attachments with size and one with a device path.
	"batch_ios_flutter-ios-debug_sdk0.4.0_bugreport-warmlaunch-screenview-inline-bytes-attach_628307e0.json",
}

type wireAttrs struct {
	InstallationID                 string  `json:"installation_id"`
	AppVersion                     string  `json:"app_version"`
	AppBuild                       string  `json:"app_build"`
	AppUniqueID                    string  `json:"app_unique_id"`
	Platform                       string  `json:"platform"`
	MeasureSDKVersion              string  `json:"measure_sdk_version"`
	ServiceSDKVersion              string  `json:"service_sdk_version"`
	ThreadName                     string  `json:"thread_name"`
	UserID                         string  `json:"user_id"`
	DeviceName                     string  `json:"device_name"`
	DeviceModel                    string  `json:"device_model"`
	DeviceManufacturer             string  `json:"device_manufacturer"`
	DeviceType                     string  `json:"device_type"`
	DeviceIsFoldable               bool    `json:"device_is_foldable"`
	DeviceIsPhysical               bool    `json:"device_is_physical"`
	DeviceDensityDPI               uint16  `json:"device_density_dpi"`
	DeviceWidthPx                  uint16  `json:"device_width_px"`
	DeviceHeightPx                 uint16  `json:"device_height_px"`
	DeviceDensity                  float32 `json:"device_density"`
	DeviceLocale                   string  `json:"device_locale"`
	DeviceLowPowerMode             bool    `json:"device_low_power_mode"`
	DeviceThermalThrottlingEnabled bool    `json:"device_thermal_throttling_enabled"`
	OSName                         string  `json:"os_name"`
	OSVersion                      string  `json:"os_version"`
	OSPageSize                     uint8   `json:"os_page_size"`
	NetworkType                    string  `json:"network_type"`
	NetworkProvider                string  `json:"network_provider"`
	NetworkGeneration              string  `json:"network_generation"`
	DeviceCPUArch                  string  `json:"device_cpu_arch"`
	SessionStartTime               string  `json:"session_start_time"`
}

func (a wireAttrs) model() (model.Attributes, error) {
	m := model.Attributes{
		InstallationID: a.InstallationID, AppVersion: a.AppVersion, AppBuild: a.AppBuild,
		AppUniqueID: a.AppUniqueID, Platform: a.Platform, SDKVersion: a.ServiceSDKVersion,
		ThreadName: a.ThreadName, UserID: a.UserID, DeviceName: a.DeviceName,
		DeviceModel: a.DeviceModel, DeviceManufacturer: a.DeviceManufacturer,
		DeviceType: a.DeviceType, DeviceIsFoldable: a.DeviceIsFoldable,
		DeviceIsPhysical: a.DeviceIsPhysical, DeviceDensityDPI: a.DeviceDensityDPI,
		DeviceWidthPx: a.DeviceWidthPx, DeviceHeightPx: a.DeviceHeightPx,
		DeviceDensity: a.DeviceDensity, DeviceLocale: a.DeviceLocale,
		DeviceLowPowerMode: a.DeviceLowPowerMode, DeviceThermalThrottlingEnabled: a.DeviceThermalThrottlingEnabled,
		OSName: a.OSName, OSVersion: a.OSVersion, OSPageSize: a.OSPageSize,
		NetworkType: a.NetworkType, NetworkProvider: a.NetworkProvider,
		NetworkGeneration: a.NetworkGeneration, DeviceCPUArch: a.DeviceCPUArch,
	}
	if m.SDKVersion == "" {
		m.SDKVersion = a.MeasureSDKVersion
	}
	if a.SessionStartTime != "" {
		ns, err := parseTime(a.SessionStartTime)
		if err != nil {
			return m, fmt.Errorf("session_start_time: %w", err)
		}
		m.SessionStartTime = ns
	}
	return m, nil
}

// wireAttrNames are the members wireAttrs reads; every other non-null member goes to Extra.
var wireAttrNames = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeOf(wireAttrs{})
	for i := 0; i < t.NumField(); i++ {
		m[t.Field(i).Tag.Get("json")] = true
	}
	return m
}()

// decodeAttrs reads an attribute object; the members wireAttrs does not name become Extra,
// compacted, in key order (the ingest decoder keeps the order sent; a store keeps either).
func decodeAttrs(raw json.RawMessage) (model.Attributes, error) {
	var w wireAttrs
	if err := json.Unmarshal(raw, &w); err != nil {
		return model.Attributes{}, err
	}
	a, err := w.model()
	if err != nil {
		return a, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return a, err
	}
	extra := map[string]json.RawMessage{}
	for k, v := range all {
		if !wireAttrNames[k] && string(v) != "null" {
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		if a.Extra, err = json.Marshal(extra); err != nil { // sorted keys, compact
			return a, err
		}
	}
	return a, nil
}

func parseTime(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, err
	}
	return t.UnixNano(), nil
}

// decodeUD types each value by its JSON kind, formatted as model.UDAttr says; sorted by key.
func decodeUD(m map[string]json.RawMessage) ([]model.UDAttr, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make([]model.UDAttr, 0, len(m))
	for k, v := range m {
		a := model.UDAttr{Key: k}
		s := string(v)
		switch {
		case s == "true" || s == "false":
			a.Type, a.Value = model.UDBool, s
		case strings.HasPrefix(s, `"`):
			a.Type = model.UDString
			if err := json.Unmarshal(v, &a.Value); err != nil {
				return nil, err
			}
		case strings.ContainsAny(s, ".eE"):
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("user-defined %q: %w", k, err)
			}
			a.Type, a.Value = model.UDFloat64, strconv.FormatFloat(f, 'g', -1, 64)
		default:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("user-defined %q: %w", k, err)
			}
			a.Type, a.Value = model.UDInt64, strconv.FormatInt(n, 10)
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func decodeEvent(app uuid.UUID, raw json.RawMessage) (model.Event, error) {
	var w struct {
		ID            uuid.UUID                  `json:"id"`
		SessionID     uuid.UUID                  `json:"session_id"`
		Type          string                     `json:"type"`
		Timestamp     string                     `json:"timestamp"`
		UserTriggered bool                       `json:"user_triggered"`
		Attribute     json.RawMessage            `json:"attribute"`
		UserDefined   map[string]json.RawMessage `json:"user_defined_attribute"`
		Attachments   []struct {
			ID   uuid.UUID `json:"id"`
			Name string    `json:"name"`
			Type string    `json:"type"`
			Size *int64    `json:"size"`
			Path string    `json:"path"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return model.Event{}, err
	}
	if w.Timestamp == "" || w.Type == "" {
		return model.Event{}, fmt.Errorf("not the current shape (no timestamp or type): this decoder is test-only")
	}
	e := model.Event{ID: w.ID, AppID: app, SessionID: w.SessionID, Type: w.Type, UserTriggered: w.UserTriggered}
	var err error
	if e.Timestamp, err = parseTime(w.Timestamp); err != nil {
		return e, err
	}
	if e.Attribute, err = decodeAttrs(w.Attribute); err != nil {
		return e, err
	}
	if e.UserDefined, err = decodeUD(w.UserDefined); err != nil {
		return e, err
	}
	for _, a := range w.Attachments {
		at := model.Attachment{ID: a.ID, Name: a.Name, Type: a.Type, Size: model.SizeUnknown, Path: a.Path}
		if a.Size != nil {
			at.Size = *a.Size
		}
		e.Attachments = append(e.Attachments, at)
	}
	// The payload is the member named by type, compacted.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return e, err
	}
	if p, ok := members[w.Type]; ok && string(p) != "null" {
		var buf bytes.Buffer
		if err := json.Compact(&buf, p); err != nil {
			return e, err
		}
		e.Payload = buf.Bytes()
	}
	return e, nil
}

func decodeSpan(app uuid.UUID, raw json.RawMessage) (model.Span, error) {
	var w struct {
		Name        string                     `json:"name"`
		TraceID     string                     `json:"trace_id"`
		SpanID      string                     `json:"span_id"`
		ParentID    *string                    `json:"parent_id"`
		SessionID   uuid.UUID                  `json:"session_id"`
		StartTime   string                     `json:"start_time"`
		EndTime     string                     `json:"end_time"`
		Duration    uint64                     `json:"duration"`
		Status      uint8                      `json:"status"`
		Attributes  json.RawMessage            `json:"attributes"`
		UserDefined map[string]json.RawMessage `json:"user_defined_attribute"`
		Checkpoints []struct {
			Name      string `json:"name"`
			Timestamp string `json:"timestamp"`
		} `json:"checkpoints"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return model.Span{}, err
	}
	s := model.Span{AppID: app, SpanID: w.SpanID, TraceID: w.TraceID, SessionID: w.SessionID,
		Name: w.Name, Status: w.Status, Duration: w.Duration}
	if w.ParentID != nil {
		s.ParentID = *w.ParentID
	}
	var err error
	if s.StartTime, err = parseTime(w.StartTime); err != nil {
		return s, err
	}
	if s.EndTime, err = parseTime(w.EndTime); err != nil {
		return s, err
	}
	if s.Attributes, err = decodeAttrs(w.Attributes); err != nil {
		return s, err
	}
	if s.UserDefined, err = decodeUD(w.UserDefined); err != nil {
		return s, err
	}
	for _, c := range w.Checkpoints {
		ts, err := parseTime(c.Timestamp)
		if err != nil {
			return s, err
		}
		s.Checkpoints = append(s.Checkpoints, model.Checkpoint{Name: c.Name, Timestamp: ts})
	}
	return s, nil
}
