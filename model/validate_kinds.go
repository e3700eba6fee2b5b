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
//   - uintN/int members must be JSON integer literals within range (no fraction, no exponent);
//     float32/float64 members accept any JSON number within range (SDKs send x: 619 and
//     x: 619.959 alike).
//
// Where the spec marks a member required but the real SDK batches in shared/fixtures omit it,
// the member is optional here and the line says so ("fixtures omit"): accepting what deployed
// SDKs send beats the letter of the table, because SDKs drop a batch for good on a 400.

// ftype is the JSON shape a schema member must have.
type ftype uint8

const (
	fString    ftype = iota + 1
	fBool            // true or false
	fUint64          // integer 0..2^64-1
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
	maxBytes int // upper bound of the member's compact JSON size; 0 for none
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
		"layout_snapshot_json"} // the last one is legacy (DESIGN §6) and in the fixtures
)

func optStr(name string) field        { return field{name: name, t: fString} }
func reqStr(name string) field        { return field{name: name, t: fString, req: true} }
func opt(name string, t ftype) field  { return field{name: name, t: t} }
func must(name string, t ftype) field { return field{name: name, t: t, req: true} }
func enumOf(name string, set ...string) field {
	return field{name: name, t: fString, req: true, enum: set}
}

var frameSchema = &schema{fields: []field{
	opt("line_num", fNumber), opt("col_num", fNumber),
	optStr("module_name"), optStr("file_name"), optStr("class_name"), optStr("method_name"),
	optStr("binary_name"), optStr("symbol_address"), opt("offset", fNumber), optStr("binary_address"),
	optStr("instruction_address"), opt("frame_index", fNumber),
	// Spec: in_app bool R. Fixtures omit: every JVM frame of the Android batches lacks it.
	opt("in_app", fBool),
}}

var exceptionUnitSchema = &schema{fields: []field{
	optStr("type"), optStr("message"), {name: "frames", t: fArray, sub: frameSchema},
	optStr("signal"), optStr("thread_name"), opt("thread_sequence", fNumber), optStr("os_build_number"),
}}

var threadSchema = &schema{fields: []field{
	optStr("name"), {name: "frames", t: fArray, sub: frameSchema}, opt("sequence", fNumber),
}}

var binaryImageSchema = &schema{fields: []field{
	optStr("start_addr"), optStr("end_addr"), optStr("base_addr"), optStr("name"), optStr("path"),
	opt("system", fBool), reqStr("arch"), reqStr("uuid"), // R in the spec; every fixture image has both
}}

var appleErrorSchema = &schema{fields: []field{
	opt("numcode", fInt), optStr("code"), opt("meta", fObject),
}}

// ErrorObjectMaxBytes bounds the Apple `error` object of an exception, measured as compact JSON.
const ErrorObjectMaxBytes = 4096

var exceptionSchema = &schema{
	fields: []field{
		// Spec: handled bool R. Fixtures omit it when they send `severity` (iOS/RN SDKs), and
		// DESIGN §6 lists `handled` without `severity` as legacy: one of the two must be there.
		opt("handled", fBool),
		optStr("severity"),
		{name: "exceptions", t: fArray, req: true, sub: exceptionUnitSchema},
		opt("foreground", fBool),
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
	must("handled", fBool),
	{name: "exceptions", t: fArray, req: true, sub: exceptionUnitSchema},
	must("foreground", fBool),
	{name: "threads", t: fArray, sub: threadSchema},
	{name: "binary_images", t: fArray, sub: binaryImageSchema},
}}

var gestureClickSchema = &schema{fields: []field{
	optStr("target"), optStr("target_id"),
	opt("touch_down_time", fUint64), opt("touch_up_time", fUint64),
	opt("width", fUint16), opt("height", fUint16),
	must("x", fFloat32), must("y", fFloat32),
}}

var gestureScrollSchema = &schema{fields: []field{
	optStr("target"), optStr("target_id"),
	opt("touch_down_time", fUint64), opt("touch_up_time", fUint64),
	must("x", fFloat32), must("y", fFloat32), must("end_x", fFloat32), must("end_y", fFloat32),
	{name: "direction", t: fString, enum: []string{"left", "right", "up", "down"}},
}}

var httpSchema = &schema{fields: []field{
	// method: any non-empty string; SDKs send lowercase ("get", "post") and that is kept as is.
	reqStr("url"), reqStr("method"), opt("status_code", fInt),
	opt("start_time", fUint64), opt("end_time", fUint64),
	optStr("failure_reason"), optStr("failure_description"),
	opt("request_headers", fStrMap), opt("response_headers", fStrMap),
	optStr("request_body"), optStr("response_body"), optStr("client"),
}}

var networkChangeSchema = &schema{fields: []field{
	enumOf("network_type", networkTypes...), reqStr("network_provider"),
	enumOf("network_generation", networkGenerations...),
	enumOf("previous_network_type", networkTypes...),
	enumOf("previous_network_generation", networkGenerations...),
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
	optStr("trace"), reqStr("process_name"),
	opt("pid", fStrOrNum), opt("timestamp", fStrOrNum), // spec: strings; a number is as clear
}}

var lifecycleActivitySchema = &schema{fields: []field{
	enumOf("type", "created", "resumed", "paused", "destroyed"), reqStr("class_name"),
	optStr("intent"), opt("saved_instance_state", fBool),
}}

var lifecycleFragmentSchema = &schema{fields: []field{
	enumOf("type", "attached", "resumed", "paused", "detached"), reqStr("class_name"),
	optStr("parent_activity"), optStr("parent_fragment"), optStr("tag"),
}}

var lifecycleViewControllerSchema = &schema{fields: []field{
	enumOf("type", "loadView", "viewDidLoad", "viewWillAppear", "viewDidAppear", "viewWillDisappear",
		"viewDidDisappear", "didReceiveMemoryWarning", "initWithNibName", "initWithCoder", "vcDeinit"),
	reqStr("class_name"),
}}

var lifecycleSwiftUISchema = &schema{fields: []field{
	enumOf("type", "on_appear", "on_disappear"), reqStr("class_name"),
}}

var lifecycleAppSchema = &schema{fields: []field{
	enumOf("type", "background", "foreground", "terminated"),
}}

var launchFields = []field{
	opt("process_start_uptime", fUint64), opt("process_start_requested_uptime", fUint64),
	opt("content_provider_attach_uptime", fUint64),
	must("on_next_draw_uptime", fUint64), reqStr("launched_activity"), must("has_saved_state", fBool),
	optStr("intent_data"),
}

var coldLaunchSchema = &schema{fields: launchFields}

var warmLaunchSchema = &schema{fields: append(append([]field(nil), launchFields...),
	opt("app_visible_uptime", fUint64),
	opt("is_lukewarm", fStrOrBool), // spec: string; the iOS SDK sends a boolean
)}

var hotLaunchSchema = &schema{fields: []field{
	opt("app_visible_uptime", fUint64), must("on_next_draw_uptime", fUint64),
	reqStr("launched_activity"), must("has_saved_state", fBool), optStr("intent_data"),
}}

var cpuUsageSchema = &schema{fields: []field{
	must("num_cores", fUint8), must("clock_speed", fUint64), must("uptime", fUint64),
	must("utime", fUint64), must("stime", fUint64), must("cutime", fUint64), must("cstime", fUint64),
	must("interval", fUint64), must("percentage_usage", fFloat64), must("start_time", fUint64),
}}

var memoryFields = []field{
	must("java_max_heap", fUint64), must("java_total_heap", fUint64), must("java_free_heap", fUint64),
	must("total_pss", fUint64), must("native_total_heap", fUint64), must("native_free_heap", fUint64),
	opt("rss", fUint64),
}

var memoryUsageSchema = &schema{fields: append(append([]field(nil), memoryFields...), must("interval", fUint64))}

var lowMemorySchema = &schema{fields: memoryFields}

var memoryUsageAbsoluteSchema = &schema{fields: []field{
	must("max_memory", fUint64), must("used_memory", fUint64), must("interval", fUint64),
}}

var nameSchema = &schema{fields: []field{reqStr("name")}}

// kindSchemas maps each event type to the schema of its member. Legacy kinds: bug_report, log,
// low_memory, navigation (DESIGN §6 and the spec's versioning notes).
var kindSchemas = map[string]*schema{
	"session_start":             {},
	"anr":                       anrSchema,
	"exception":                 exceptionSchema,
	"string":                    {fields: []field{{name: "severity_text", t: fString, enum: []string{"info", "warning", "error", "fatal", "debug"}}, reqStr("string")}},
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
	"trim_memory":               {fields: []field{reqStr("level")}}, // constants differ per platform: not enumerated
	"navigation":                {fields: []field{optStr("source"), optStr("from"), reqStr("to")}},
	"screen_view":               nameSchema,
	"custom":                    nameSchema,
	"bug_report":                {fields: []field{optStr("description")}},
	"log":                       {fields: []field{optStr("severity_text"), opt("severity_number", fInt), reqStr("body")}},
}

// kindNames holds the keys of kindSchemas as constant strings, so Event.Type costs no allocation.
var kindNames = func() map[string]string {
	m := make(map[string]string, len(kindSchemas))
	for k := range kindSchemas {
		m[k] = k
	}
	return m
}()
