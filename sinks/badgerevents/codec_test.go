package badgerevents

import (
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// layoutV1Attrs, layoutV1Event and layoutV1Span are the rows whose layout-1 encodings (written
// by the codec before layout 2) are pinned in TestDecodeLayoutV1.
func layoutV1Attrs() model.Attributes {
	return model.Attributes{
		InstallationID: "1fefa265-9e6b-45d8-aa83-23b03070c06e", AppVersion: "1.2.3", AppBuild: "45",
		AppUniqueID: "sh.svc.sample", Platform: "android", SDKVersion: "0.11.0", ThreadName: "main ✓",
		UserID: "u-42", DeviceName: "sunfish", DeviceModel: "Pixel 4a", DeviceManufacturer: "Google",
		DeviceType: "phone", DeviceIsFoldable: true, DeviceIsPhysical: true, DeviceDensityDPI: 440,
		DeviceWidthPx: 1080, DeviceHeightPx: 2138, DeviceDensity: 2.75, DeviceLocale: "en-US",
		DeviceThermalThrottlingEnabled: true, OSName: "android", OSVersion: "33", OSPageSize: 4,
		NetworkType: "wifi", NetworkProvider: "unknown", NetworkGeneration: "5g",
		DeviceCPUArch: "arm64-v8a", SessionStartTime: 1_748_257_960_525_000_001,
	}
}

func layoutV1Event() model.Event {
	return model.Event{
		SessionID:     uuid.MustParse("9321a0be-906e-436b-91af-b47fb2e81cde"),
		Type:          "exception",
		UserTriggered: true,
		Attribute:     layoutV1Attrs(),
		UserDefined:   []model.UDAttr{{Key: "a", Type: model.UDInt64, Value: "-7"}, {Key: "b", Type: model.UDString, Value: "ü"}},
		Attachments: []model.Attachment{
			{ID: uuid.MustParse("42306fd7-cb17-4fa4-88dd-b40ce1ce34c4"), Name: "s.png", Type: "screenshot",
				Extension: "png", Timestamp: "2025-05-26T11:12:43.525Z", BlobKey: "attachments/x/42306fd7"},
			{ID: uuid.MustParse("576aa557-2580-4bb6-9941-ba90df6c3c0e"), Name: "l.txt", Type: "log"},
		},
		Payload: []byte(`{"handled":false}`),
	}
}

func layoutV1Span() model.Span {
	return model.Span{
		TraceID:     "b6284daf4a993e8ae1695d567e998520",
		ParentID:    "a1b2c3d4e5f60001",
		SessionID:   uuid.MustParse("9321a0be-906e-436b-91af-b47fb2e81cde"),
		Name:        "Activity TTID",
		Status:      2,
		EndTime:     1_748_257_963_123_456_789,
		Duration:    127,
		Checkpoints: []model.Checkpoint{{Name: "created", Timestamp: 1_748_257_963_000_000_003}},
		Attributes:  layoutV1Attrs(),
		UserDefined: []model.UDAttr{{Key: "t", Type: model.UDBool, Value: "true"}},
	}
}

// Layout-1 encodings of layoutV1Event and layoutV1Span, as the codec wrote them before layout 2.
const (
	layoutV1EventHex = "01019321a0be906e436b91afb47fb2e81cde09657863657074696f6e0b2431666566613236352d396536622d343564382d616138332d32336230333037306330366505312e322e330234350d73682e7376632e73616d706c6507616e64726f696406302e31312e30086d61696e20e29c9304752d34320773756e6669736808506978656c20346106476f6f676c650570686f6e6505656e2d555307616e64726f6964023333047769666907756e6b6e6f776e0235670961726d36342d763861b803b808da10000030400482b5bb8dc7d687c33002016102022d3701620102c3bc0242306fd7cb174fa488ddb40ce1ce34c405732e706e670a73637265656e73686f7403706e6718323032352d30352d32365431313a31323a34332e3532355a166174746163686d656e74732f782f3432333036666437576aa55725804bb69941ba90df6c3c0e056c2e747874036c6f67000000117b2268616e646c6564223a66616c73657d"
	layoutV1SpanHex  = "0120623632383464616634613939336538616531363935643536376539393835323010613162326333643465356636303030319321a0be906e436b91afb47fb2e81cde0d4163746976697479205454494402aaecc5bbdad687c3307f01076372656174656486b8e7c5d9d687c3300b2431666566613236352d396536622d343564382d616138332d32336230333037306330366505312e322e330234350d73682e7376632e73616d706c6507616e64726f696406302e31312e30086d61696e20e29c9304752d34320773756e6669736808506978656c20346106476f6f676c650570686f6e6505656e2d555307616e64726f6964023333047769666907756e6b6e6f776e0235670961726d36342d763861b803b808da10000030400482b5bb8dc7d687c330010174040474727565"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Rows already on disk in layout 1 keep decoding, with the fields layout 1 lacked as absent.
func TestDecodeLayoutV1(t *testing.T) {
	wantEv := layoutV1Event()
	for i := range wantEv.Attachments {
		wantEv.Attachments[i].Size = model.SizeUnknown
	}
	var ev model.Event
	if err := decodeEvent(unhex(t, layoutV1EventHex), &ev); err != nil {
		t.Fatalf("layout 1 event: %v", err)
	}
	if !reflect.DeepEqual(ev, wantEv) {
		t.Errorf("layout 1 event\n got %+v\nwant %+v", ev, wantEv)
	}
	var sp model.Span
	if err := decodeSpan(unhex(t, layoutV1SpanHex), &sp); err != nil {
		t.Fatalf("layout 1 span: %v", err)
	}
	if want := layoutV1Span(); !reflect.DeepEqual(sp, want) {
		t.Errorf("layout 1 span\n got %+v\nwant %+v", sp, want)
	}
	// The same rows written now carry the fields layout 2 added (events in layout 3).
	e2, s2 := layoutV1Event(), layoutV1Span()
	e2.Attachments[0].Size, e2.Attachments[0].Path = 0, "/d/ü"
	e2.Attachments[1].Size = 1<<63 - 1
	e2.Attribute.Extra = []byte(`{"patch_id":"p"}`)
	s2.Attributes.Extra = []byte(`{"x":[1,{"y":null}]}`)
	var gotE model.Event
	var gotS model.Span
	if b := appendEvent(nil, &e2); b[0] != layoutV3 {
		t.Fatalf("event written in layout %d, want %d", b[0], layoutV3)
	} else if err := decodeEvent(b, &gotE); err != nil || !reflect.DeepEqual(gotE, e2) {
		t.Errorf("layout 3 event: %v\n got %+v\nwant %+v", err, gotE, e2)
	}
	if b := appendSpan(nil, &s2); b[0] != layoutV2 {
		t.Fatalf("span written in layout %d, want %d", b[0], layoutV2)
	} else if err := decodeSpan(b, &gotS); err != nil || !reflect.DeepEqual(gotS, s2) {
		t.Errorf("layout 2 span: %v\n got %+v\nwant %+v", err, gotS, s2)
	}
}

// layoutV2Event is the event whose layout-2 encoding (written by the codec before layout 3) is
// pinned in TestDecodeLayoutV2: every field layout 2 added is set.
func layoutV2Event() model.Event {
	return model.Event{
		SessionID:     uuid.MustParse("9321a0be-906e-436b-91af-b47fb2e81cde"),
		Type:          "exception",
		UserTriggered: true,
		Attribute: model.Attributes{InstallationID: "1fefa265-9e6b-45d8-aa83-23b03070c06e", AppVersion: "1.2.3",
			Platform: "android", DeviceDensity: 2.75, SessionStartTime: 1_748_257_960_525_000_001,
			Extra: []byte(`{"patch_id":"p"}`)},
		UserDefined: []model.UDAttr{{Key: "a", Type: model.UDInt64, Value: "-7"}},
		Attachments: []model.Attachment{
			{ID: uuid.MustParse("42306fd7-cb17-4fa4-88dd-b40ce1ce34c4"), Name: "s.png", Type: "screenshot", Size: 0, Path: "/d/ü"},
			{ID: uuid.MustParse("576aa557-2580-4bb6-9941-ba90df6c3c0e"), Name: "l.txt", Type: "log", Size: model.SizeUnknown},
		},
		Payload: []byte(`{"handled":false,"foreground":true}`),
	}
}

// Layout-2 encoding of layoutV2Event, as the codec wrote it before layout 3.
const layoutV2EventHex = "02019321a0be906e436b91afb47fb2e81cde09657863657074696f6e002431666566613236352d396536622d343564382d616138332d32336230333037306330366505312e322e33000007616e64726f69640000000000000000000000000000000000000030400082b5bb8dc7d687c330107b2270617463685f6964223a2270227d01016102022d370242306fd7cb174fa488ddb40ce1ce34c405732e706e670a73637265656e73686f7400000000052f642fc3bc576aa55725804bb69941ba90df6c3c0e056c2e747874036c6f670000000100237b2268616e646c6564223a66616c73652c22666f726567726f756e64223a747275657d"

// Layout-2 rows keep decoding, with zero Facts (they were written before facts were derived);
// the same event written now is layout 3 and round-trips its Facts exactly.
func TestDecodeLayoutV2(t *testing.T) {
	var ev model.Event
	if err := decodeEvent(unhex(t, layoutV2EventHex), &ev); err != nil {
		t.Fatalf("layout 2 event: %v", err)
	}
	if want := layoutV2Event(); !reflect.DeepEqual(ev, want) {
		t.Errorf("layout 2 event\n got %+v\nwant %+v", ev, want)
	}
	for _, f := range []model.EventFacts{
		{},
		{GroupID: "ed2878416c2194b7823f36207fd498de", Fatal: true, Foreground: true},
		{Foreground: true},
		{GroupID: "2c8134adabc90e3f288f66bab461b783", Foreground: true},
		{Screen: "sh.measure.android.flutter.MainActivity ✓"},
		{LaunchKind: model.LaunchCold, LaunchMs: 702},
		{LaunchKind: model.LaunchWarm, LaunchMs: 0.125},
		{LaunchMs: -1}, // no kind: still kept exactly
		{GroupID: "g", Fatal: true, Foreground: true, Screen: "s", LaunchKind: "hot", LaunchMs: 1e300},
		{HTTP: model.HTTPFacts{Domain: "api.example.com:8443", Path: "/v1/users/*", Method: "get", Status: 200, LatencyMs: 412, ElapsedMs: 93_000}},
		{HTTP: model.HTTPFacts{Path: "/", LatencyMs: -1, ElapsedMs: -1}},
		{Screen: "s", HTTP: model.HTTPFacts{Domain: "d", Status: 599, LatencyMs: 1 << 50, ElapsedMs: 0}},
	} {
		e := layoutV2Event()
		e.Facts = f
		b := appendEvent(nil, &e)
		if b[0] != layoutV3 {
			t.Fatalf("event written in layout %d, want %d", b[0], layoutV3)
		}
		var got model.Event
		if err := decodeEvent(b, &got); err != nil || !reflect.DeepEqual(got, e) {
			t.Errorf("layout 3 event with %+v: %v\n got %+v", f, err, got.Facts)
		}
	}
	// Flags this code does not know are corruption, not ignored.
	e := layoutV2Event()
	b := appendEvent(nil, &e)
	b[len(b)-1] |= 0x80
	var got model.Event
	if err := decodeEvent(b, &got); err == nil {
		t.Error("unknown fact flag decoded without error")
	}
}

// A row of a layout this code does not know is an error, not a guess.
func TestDecodeUnknownLayout(t *testing.T) {
	for _, v := range []byte{0, layoutV3 + 1} {
		b := unhex(t, layoutV1EventHex)
		b[0] = v
		var e model.Event
		if err := decodeEvent(b, &e); err == nil {
			t.Errorf("event layout %d decoded without error", v)
		}
	}
	for _, v := range []byte{0, layoutV2 + 1} {
		b := unhex(t, layoutV1SpanHex)
		b[0] = v
		var s model.Span
		if err := decodeSpan(b, &s); err == nil {
			t.Errorf("span layout %d decoded without error", v)
		}
	}
}
