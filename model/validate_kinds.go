package model

// The event kinds of the ingestion spec, written as small schemas that decoder.object checks in
// the same pass that reads the member. A schema lists the members the spec names; members it
// does not name are checked for JSON syntax only and kept in Event.Payload, so fields that newer
// SDKs add (is_custom, semantic_label, fingerprint, ...) are never lost.
//
// Rules common to all kinds (decisions written down where the spec is silent):
//   - null counts as absent: optional members may be null (SDKs send intent_data, target_id,
//     parent_fragment, status_code, trace and more as null); a required member that is null is
//     reported as required.
//   - A required string must not be empty.
//   - Numbers follow decode_num.go (the table is docs/ingest-numbers.md): uintN members are
//     quantities, any number whose value rounds to an integer in range (1e3 and 1000.0 are 1000,
//     1079.9999 is 1080); int members are codes, any number whose value is an integer within
//     int64 (200.0 is 200, 200.5 is refused); the payload keeps such integers in plain form.
//     float32/float64 members accept any JSON number within range (SDKs send x: 619 and
//     x: 619.959 alike).
//
// Where the spec marks a member required but the real SDK batches in testdata/sdk omit it,
// the member is optional here and the line says so ("fixtures omit"): accepting what deployed
// SDKs send beats the letter of the table, because SDKs drop a batch for good on a 400.

// ftype is the JSON shape a schema member must have.
type ftype uint8

const (
	fString    ftype = iota + 1
	fBool            // true or false
	fUint64          // integer 0..2^64-1
	fUint32          // integer 0..2^32-1
	fUint16          // integer 0..65535
	fUint8           // integer 0..255
	fInt             // integer within int64
	fNumber          // any JSON number
	fFloat32         // number with |v| <= MaxFloat32
	fFloat64         // number with |v| <= MaxFloat64
	fObject          // object, checked against sub when sub is set
	fArray           // array; each element an object checked against sub when sub is set
	fStrMap          // object whose values are strings or null (HTTP headers)
	fStrOrBool       // string or boolean
	fStrOrNum        // string or number
)

// field is one member of a schema.
type field struct {
	name     string
	t        ftype
	req      bool
	enum     []string // allowed values of a string member
	prefix   string   // optional prefix of enum values: "REASON_" lets "CRASH" and "REASON_CRASH" pass
	sub      *schema
	maxBytes int  // upper bound of the member's compact JSON size; 0 for none
	long     bool // a string of free text up to MaxLongTextBytes (else MaxStringBytes)
}

// schema is the shape of one JSON object. At most 64 members (a bit set tracks presence).
type schema struct {
	fields []field
	// check runs after all members were read, with bit i set when fields[i] was present and not
	// null. It returns the field and rule of a violation, or "" for none.
	check func(present uint64) (field, rule string)
}

// find returns the index of the member named key, or -1.
func (sc *schema) find(key []byte) int {
	for i := range sc.fields {
		if sc.fields[i].name == string(key) {
			return i
		}
	}
	return -1
}

// Value sets of the attribute table, shared by attributes and network_change.
var (
	platforms          = []string{"android", "ios", "flutter"}
	networkTypes       = []string{"wifi", "cellular", "vpn", "unknown", "no_network"}
	networkGenerations = []string{"2g", "3g", "4g", "5g", "unknown"}
	deviceTypes        = []string{"phone", "tablet"}
	osNames            = []string{"android", "ios", "ipados"}
	attachmentTypes    = []string{"screenshot", "android_method_trace", "layout_snapshot",
		"layout_snapshot_json"} // the last one is legacy (docs/architecture.md, "What real SDKs send") and in the fixtures
)

func optStrField(name string) field       { return field{name: name, t: fString} }
func optTextField(name string) field      { return field{name: name, t: fString, long: true} }
func reqTextField(name string) field      { return field{name: name, t: fString, req: true, long: true} }
func reqStrField(name string) field       { return field{name: name, t: fString, req: true} }
func optField(name string, t ftype) field { return field{name: name, t: t} }
func reqField(name string, t ftype) field { return field{name: name, t: t, req: true} }
func enumField(name string, set ...string) field {
	return field{name: name, t: fString, req: true, enum: set}
}

var frameSchema = &schema{fields: []field{
	optField("line_num", fNumber), optField("col_num", fNumber),
	optStrField("module_name"), optStrField("file_name"), optStrField("class_name"), optStrField("method_name"),
	optStrField("binary_name"), optStrField("symbol_address"), optField("offset", fNumber), optStrField("binary_address"),
	optStrField("instruction_address"), optField("frame_index", fNumber),
	// Spec: in_app bool R. Fixtures omit: every JVM frame of the Android batches lacks it.
	optField("in_app", fBool),
}}

var exceptionUnitSchema = &schema{fields: []field{
	optStrField("type"), optTextField("message"), {name: "frames", t: fArray, sub: frameSchema},
	optStrField("signal"), optStrField("thread_name"), optField("thread_sequence", fNumber), optStrField("os_build_number"),
}}

var threadSchema = &schema{fields: []field{
	optStrField("name"), {name: "frames", t: fArray, sub: frameSchema}, optField("sequence", fNumber),
}}

var binaryImageSchema = &schema{fields: []field{
	optStrField("start_addr"), optStrField("end_addr"), optStrField("base_addr"), optStrField("name"), optStrField("path"),
	optField("system", fBool), reqStrField("arch"), reqStrField("uuid"), // R in the spec; every fixture image has both
}}

var appleErrorSchema = &schema{fields: []field{
	optField("numcode", fInt), optStrField("code"), optField("meta", fObject),
}}

// ErrorObjectMaxBytes bounds the Apple `error` object of an exception, measured as compact JSON.
const ErrorObjectMaxBytes = 4096

var exceptionSchema = &schema{
	fields: []field{
		// Spec: handled bool R. Fixtures omit it when they send `severity` (iOS/RN SDKs), and
		// docs/architecture.md ("What real SDKs send") lists `handled` without `severity` as legacy: one of the two must be there.
		optField("handled", fBool),
		optStrField("severity"),
		{name: "exceptions", t: fArray, req: true, sub: exceptionUnitSchema},
		optField("foreground", fBool),
		{name: "threads", t: fArray, sub: threadSchema},
		{name: "binary_images", t: fArray, sub: binaryImageSchema},
		// Spec: framework R, one of dart, jvm, apple, js. Fixtures omit it (Android JVM
		// exceptions), and the iOS SDK's own test inputs send "ios": optional, "ios" accepted.
		{name: "framework", t: fString, enum: []string{"dart", "jvm", "apple", "js", "ios"}},
		{name: "error", t: fObject, sub: appleErrorSchema, maxBytes: ErrorObjectMaxBytes},
	},
	check: func(present uint64) (string, string) {
		if present&(1<<0|1<<1) == 0 {
			return "handled", "is required (or the legacy severity)"
		}
		return "", ""
	},
}

var anrSchema = &schema{fields: []field{
	reqField("handled", fBool),
	{name: "exceptions", t: fArray, req: true, sub: exceptionUnitSchema},
	reqField("foreground", fBool),
	{name: "threads", t: fArray, sub: threadSchema},
	{name: "binary_images", t: fArray, sub: binaryImageSchema},
}}

var gestureClickSchema = &schema{fields: []field{
	optStrField("target"), optStrField("target_id"),
	optField("touch_down_time", fUint64), optField("touch_up_time", fUint64),
	// Spec: uint16. The target's size in pixels: a view inside scrolling content can be taller
	// than 65535 px, and Android's view sizes are 32-bit, so up to 2^32-1 is kept as sent.
	optField("width", fUint32), optField("height", fUint32),
	reqField("x", fFloat32), reqField("y", fFloat32),
}}

var gestureScrollSchema = &schema{fields: []field{
	optStrField("target"), optStrField("target_id"),
	optField("touch_down_time", fUint64), optField("touch_up_time", fUint64),
	reqField("x", fFloat32), reqField("y", fFloat32), reqField("end_x", fFloat32), reqField("end_y", fFloat32),
	{name: "direction", t: fString, enum: []string{"left", "right", "up", "down"}},
}}

var httpSchema = &schema{fields: []field{
	// method: any non-empty string; SDKs send lowercase ("get", "post") and that is kept as is.
	reqStrField("url"), reqStrField("method"), optField("status_code", fInt),
	optField("start_time", fUint64), optField("end_time", fUint64),
	optStrField("failure_reason"), optTextField("failure_description"),
	optField("request_headers", fStrMap), optField("response_headers", fStrMap),
	optTextField("request_body"), optTextField("response_body"), optStrField("client"),
}}

var networkChangeSchema = &schema{fields: []field{
	enumField("network_type", networkTypes...), reqStrField("network_provider"),
	enumField("network_generation", networkGenerations...),
	enumField("previous_network_type", networkTypes...),
	enumField("previous_network_generation", networkGenerations...),
}}

var appExitSchema = &schema{fields: []field{
	// The spec lists REASON_* and IMPORTANCE_* constants; the Android SDK sends them without
	// the prefix ("CRASH", "FOREGROUND"): both spellings are accepted.
	{name: "reason", t: fString, req: true, prefix: "REASON_", enum: []string{"ANR", "CRASH",
		"CRASH_NATIVE", "DEPENDENCY_DIED", "EXCESSIVE_RESOURCE_USAGE", "EXIT_SELF", "FREEZER",
		"INITIALIZATION_FAILURE", "LOW_MEMORY", "OTHER", "PACKAGE_STATE_CHANGE", "PACKAGE_UPDATED",
		"PERMISSION_CHANGE", "SIGNALED", "UNKNOWN", "USER_REQUESTED", "USER_STOPPED"}},
	{name: "importance", t: fString, req: true, prefix: "IMPORTANCE_", enum: []string{"FOREGROUND",
		"FOREGROUND_SERVICE", "TOP_SLEEPING", "VISIBLE", "PERCEPTIBLE", "CANT_SAVE_STATE",
		"SERVICE", "CACHED", "GONE"}},
	optTextField("trace"), reqStrField("process_name"),
	optField("pid", fStrOrNum), optField("timestamp", fStrOrNum), // spec: strings; a number is as clear
}}

var lifecycleActivitySchema = &schema{fields: []field{
	enumField("type", "created", "resumed", "paused", "destroyed"), reqStrField("class_name"),
	optTextField("intent"), optField("saved_instance_state", fBool),
}}

var lifecycleFragmentSchema = &schema{fields: []field{
	enumField("type", "attached", "resumed", "paused", "detached"), reqStrField("class_name"),
	optStrField("parent_activity"), optStrField("parent_fragment"), optStrField("tag"),
}}

var lifecycleViewControllerSchema = &schema{fields: []field{
	enumField("type", "loadView", "viewDidLoad", "viewWillAppear", "viewDidAppear", "viewWillDisappear",
		"viewDidDisappear", "didReceiveMemoryWarning", "initWithNibName", "initWithCoder", "vcDeinit"),
	reqStrField("class_name"),
}}

var lifecycleSwiftUISchema = &schema{fields: []field{
	enumField("type", "on_appear", "on_disappear"), reqStrField("class_name"),
}}

var lifecycleAppSchema = &schema{fields: []field{
	enumField("type", "background", "foreground", "terminated"),
}}

var launchFields = []field{
	optField("process_start_uptime", fUint64), optField("process_start_requested_uptime", fUint64),
	optField("content_provider_attach_uptime", fUint64),
	reqField("on_next_draw_uptime", fUint64), reqStrField("launched_activity"), reqField("has_saved_state", fBool),
	optStrField("intent_data"),
}

var coldLaunchSchema = &schema{fields: launchFields}

var warmLaunchSchema = &schema{fields: append(append([]field(nil), launchFields...),
	optField("app_visible_uptime", fUint64),
	optField("is_lukewarm", fStrOrBool), // spec: string; the iOS SDK sends a boolean
)}

var hotLaunchSchema = &schema{fields: []field{
	optField("app_visible_uptime", fUint64), reqField("on_next_draw_uptime", fUint64),
	reqStrField("launched_activity"), reqField("has_saved_state", fBool), optStrField("intent_data"),
}}

var cpuUsageSchema = &schema{fields: []field{
	reqField("num_cores", fUint8), reqField("clock_speed", fUint64), reqField("uptime", fUint64),
	reqField("utime", fUint64), reqField("stime", fUint64), reqField("cutime", fUint64), reqField("cstime", fUint64),
	reqField("interval", fUint64), reqField("percentage_usage", fFloat64), reqField("start_time", fUint64),
}}

var memoryFields = []field{
	reqField("java_max_heap", fUint64), reqField("java_total_heap", fUint64), reqField("java_free_heap", fUint64),
	reqField("total_pss", fUint64), reqField("native_total_heap", fUint64), reqField("native_free_heap", fUint64),
	optField("rss", fUint64),
}

var memoryUsageSchema = &schema{fields: append(append([]field(nil), memoryFields...), reqField("interval", fUint64))}

var lowMemorySchema = &schema{fields: memoryFields}

var memoryUsageAbsoluteSchema = &schema{fields: []field{
	reqField("max_memory", fUint64), reqField("used_memory", fUint64), reqField("interval", fUint64),
}}

var nameSchema = &schema{fields: []field{reqStrField("name")}}

// kindSchemas maps each event type to the schema of its member. Legacy kinds: bug_report, log,
// low_memory, navigation (docs/architecture.md, "What real SDKs send", and the spec's versioning notes).
var kindSchemas = map[string]*schema{
	"session_start":             {},
	"anr":                       anrSchema,
	"exception":                 exceptionSchema,
	"string":                    {fields: []field{{name: "severity_text", t: fString, enum: []string{"info", "warning", "error", "fatal", "debug"}}, reqTextField("string")}},
	"gesture_click":             gestureClickSchema,
	"gesture_long_click":        gestureClickSchema,
	"gesture_scroll":            gestureScrollSchema,
	"http":                      httpSchema,
	"network_change":            networkChangeSchema,
	"app_exit":                  appExitSchema,
	"lifecycle_activity":        lifecycleActivitySchema,
	"lifecycle_fragment":        lifecycleFragmentSchema,
	"lifecycle_view_controller": lifecycleViewControllerSchema,
	"lifecycle_swift_ui":        lifecycleSwiftUISchema,
	"lifecycle_app":             lifecycleAppSchema,
	"cold_launch":               coldLaunchSchema,
	"warm_launch":               warmLaunchSchema,
	"hot_launch":                hotLaunchSchema,
	"cpu_usage":                 cpuUsageSchema,
	"memory_usage":              memoryUsageSchema,
	"memory_usage_absolute":     memoryUsageAbsoluteSchema,
	"low_memory":                lowMemorySchema,
	"trim_memory":               {fields: []field{reqStrField("level")}}, // constants differ per platform: not enumerated
	"navigation":                {fields: []field{optStrField("source"), optStrField("from"), reqStrField("to")}},
	"screen_view":               nameSchema,
	"custom":                    nameSchema,
	"bug_report":                {fields: []field{optTextField("description")}},
	"log":                       {fields: []field{optStrField("severity_text"), optField("severity_number", fInt), reqTextField("body")}},
}

// kindNames holds the keys of kindSchemas as constant strings, so Event.Type costs no allocation.
var kindNames = func() map[string]string {
	m := make(map[string]string, len(kindSchemas))
	for k := range kindSchemas {
		m[k] = k
	}
	return m
}()
