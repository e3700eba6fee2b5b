package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// This file renders one stored issue event for the dashboard's issue-instance lists
// (dashboard API, "Issue instance"). It runs per page of a detail endpoint, not on the ingest
// path, so it uses encoding/json and plain strings for clarity.

// ErrNoIssue is returned by IssueDetail for an event that is not an exception or anr, or whose
// payload is not a JSON object.
var ErrNoIssue = errors.New("not an exception or anr event with a JSON object payload")

// AttributesJSON is the `attribute` object of an issue instance: a's members under the names of
// the ingestion API's attribute table, with Extra's members merged in (a named member wins a
// clash, which the decoder never produces). The table's required members are always present;
// an optional member is left out when it holds its zero value, because Attributes cannot tell
// an absent member from a zero one (so a false boolean is left out too). session_start_time is
// an RFC 3339 UTC timestamp with nanoseconds. Keys are sorted, so equal attributes give equal
// bytes. An Extra that is not a JSON object is left out.
func AttributesJSON(a *Attributes) json.RawMessage {
	m := make(map[string]any, 40)
	for _, s := range [...]struct {
		key, v   string
		required bool
	}{
		{"installation_id", a.InstallationID, true},
		{"app_version", a.AppVersion, true},
		{"app_build", a.AppBuild, true},
		{"app_unique_id", a.AppUniqueID, true},
		{"platform", a.Platform, true},
		{"service_sdk_version", a.SDKVersion, true},
		{"thread_name", a.ThreadName, false},
		{"user_id", a.UserID, false},
		{"device_name", a.DeviceName, false},
		{"device_model", a.DeviceModel, false},
		{"device_manufacturer", a.DeviceManufacturer, false},
		{"device_type", a.DeviceType, false},
		{"device_locale", a.DeviceLocale, false},
		{"os_name", a.OSName, false},
		{"os_version", a.OSVersion, false},
		{"network_type", a.NetworkType, true},
		{"network_provider", a.NetworkProvider, true},
		{"network_generation", a.NetworkGeneration, true},
		{"device_cpu_arch", a.DeviceCPUArch, true},
	} {
		if s.required || s.v != "" {
			m[s.key] = s.v
		}
	}
	for _, b := range [...]struct {
		key string
		v   bool
	}{
		{"device_is_foldable", a.DeviceIsFoldable},
		{"device_is_physical", a.DeviceIsPhysical},
		{"device_low_power_mode", a.DeviceLowPowerMode},
		{"device_thermal_throttling_enabled", a.DeviceThermalThrottlingEnabled},
	} {
		if b.v {
			m[b.key] = true
		}
	}
	for _, n := range [...]struct {
		key string
		v   uint16
	}{
		{"device_density_dpi", a.DeviceDensityDPI},
		{"device_width_px", a.DeviceWidthPx},
		{"device_height_px", a.DeviceHeightPx},
		{"os_page_size", uint16(a.OSPageSize)},
	} {
		if n.v != 0 {
			m[n.key] = n.v
		}
	}
	if a.DeviceDensity != 0 {
		m["device_density"] = a.DeviceDensity // float32: encoded with float32 precision
	}
	if a.SessionStartTime != 0 {
		m["session_start_time"] = time.Unix(0, a.SessionStartTime).UTC().Format(time.RFC3339Nano)
	}
	if len(a.Extra) > 0 {
		var extra map[string]json.RawMessage
		if json.Unmarshal(a.Extra, &extra) == nil {
			for k, v := range extra {
				if _, named := m[k]; !named && !attrNamed(k) {
					m[k] = v
				}
			}
		}
	}
	b, err := json.Marshal(m) // sorts the keys
	if err != nil {
		// Unreachable: every value is a string, bool, number or valid raw JSON (DeviceDensity
		// is finite: the decoder rejects what JSON cannot hold).
		panic(fmt.Sprintf("model: AttributesJSON: %v", err))
	}
	return b
}

// attrNamed reports whether key is a member of the attribute table, so that an Extra member of
// that name cannot stand in for a left-out zero value.
func attrNamed(key string) bool {
	switch key {
	case "installation_id", "app_version", "app_build", "app_unique_id", "platform", "service_sdk_version",
		"measure_sdk_version", "thread_name", "user_id", "device_name", "device_model", "device_manufacturer",
		"device_type", "device_is_foldable", "device_is_physical", "device_density_dpi", "device_width_px",
		"device_height_px", "device_density", "device_locale", "device_low_power_mode",
		"device_thermal_throttling_enabled", "os_name", "os_version", "os_page_size", "network_type",
		"network_provider", "network_generation", "device_cpu_arch", "session_start_time":
		return true
	}
	return false
}

// ExceptionDetail is the `exception` object of an issue instance.
type ExceptionDetail struct {
	Title      string `json:"title"`
	Stacktrace string `json:"stacktrace"`
	Message    string `json:"message"`
}

// ThreadDetail is one element of `threads` of an issue instance: a thread that was running when
// the issue happened, one text line per frame. Frames is never nil.
type ThreadDetail struct {
	Name   string   `json:"name"`
	Frames []string `json:"frames"`
}

// IssueDetail renders an exception or anr event for the dashboard.
//
// Title and Message are those of the grouping exception and frame (GroupOf, so they match the
// group lists and journeys). Stacktrace is every exception of the payload in payload order, one
// header line each followed by one tab-indented line per frame, lines joined by "\n" with no
// trailing newline:
//
//   - the header is "type: message" (either alone when the other is empty, "<unknown>" when
//     both are); for apple a signal follows the type as "type (SIGNAL)", or stands alone;
//   - jvm and anr units after the first start with "Caused by: ", as in a Java stack trace
//     (the SDK lists the outermost exception first);
//   - an Apple `error` object adds a last line "Error Domain=code Code=numcode UserInfo={meta}",
//     the way NSError describes itself, meta as compact JSON with sorted keys.
//
// Threads are the payload's threads in order (an empty, non-nil slice when there are none), with
// frames rendered as in Stacktrace but without the indent. A frame is:
//
//   - jvm/anr, as Android's StackTraceElement prints: "at class.method(file:line)", with
//     "(Native Method)" for line -2, "(file)" without a line or with a negative one, and
//     "(Unknown Source:line)" or "(Unknown Source)" without a file;
//   - apple, like a line of an iOS crash report: "index  binary  address  symbol", where address
//     is instruction_address or else symbol_address (given a 0x prefix), and symbol is
//     "method + offset (file:line)" when the frame has a method, else "0xbinary_address + offset";
//   - dart: "at method (module_namefile_name:line:col)", the module joined to the file as Dart
//     prints it ("package:flutter/src/services/platform_channel.dart"); an obfuscated frame is
//     "at instruction_address";
//   - js: "at method (file:line:col)", or "at file:line:col" for an anonymous function.
//
// Missing parts are left out, and a frame with nothing to show is "<unknown>". Every optional
// member may be absent, null or of the wrong kind; only a payload that is not a JSON object (or
// an event of another kind) is an error, wrapping ErrNoIssue.
func IssueDetail(e *Event) (ExceptionDetail, []ThreadDetail, error) {
	g, ok := GroupOf(e)
	if !ok {
		return ExceptionDetail{}, nil, fmt.Errorf("issue detail of a %q event: %w", e.Type, ErrNoIssue)
	}
	var p detailPayload
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		return ExceptionDetail{}, nil, fmt.Errorf("issue detail: %w: %w", ErrNoIssue, err)
	}
	fw := g.Framework
	var b strings.Builder
	for i := range p.Exceptions {
		u := &p.Exceptions[i]
		if i > 0 {
			b.WriteByte('\n')
			if fw == FrameworkJVM {
				b.WriteString("Caused by: ")
			}
		}
		b.WriteString(unitHeader(u, fw))
		for j := range u.Frames {
			b.WriteString("\n\t")
			b.WriteString(frameText(&u.Frames[j], fw))
		}
	}
	if p.Error.ok {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		p.Error.write(&b)
	}
	threads := make([]ThreadDetail, len(p.Threads))
	for i := range p.Threads {
		t := &p.Threads[i]
		frames := make([]string, len(t.Frames))
		for j := range t.Frames {
			frames[j] = frameText(&t.Frames[j], fw)
		}
		threads[i] = ThreadDetail{Name: string(t.Name), Frames: frames}
	}
	return ExceptionDetail{Title: g.Title(), Stacktrace: b.String(), Message: g.Message}, threads, nil
}

// unitHeader is the first line of one exception in a stack trace.
func unitHeader(u *detailUnit, fw string) string {
	name := string(u.Type)
	if fw == FrameworkApple && u.Signal != "" {
		if name == "" {
			name = string(u.Signal)
		} else {
			name += " (" + string(u.Signal) + ")"
		}
	}
	switch {
	case name != "" && u.Message != "":
		return name + ": " + string(u.Message)
	case name != "":
		return name
	case u.Message != "":
		return string(u.Message)
	}
	return "<unknown>"
}

// frameText renders one frame in the style of fw (see IssueDetail).
func frameText(f *detailFrame, fw string) string {
	var s string
	switch fw {
	case FrameworkApple:
		s = appleFrame(f)
	case FrameworkDart:
		s = scriptFrame(f, string(f.ModuleName)+string(f.FileName))
	case FrameworkJS:
		s = scriptFrame(f, string(f.FileName))
	default:
		s = jvmFrame(f)
	}
	if s == "" {
		return "<unknown>"
	}
	return s
}

func jvmFrame(f *detailFrame) string {
	name := string(f.ClassName)
	if f.MethodName != "" {
		if name != "" {
			name += "."
		}
		name += string(f.MethodName)
	}
	if name == "" && f.FileName == "" && !f.LineNum.ok {
		return ""
	}
	if name == "" {
		name = "<unknown>"
	}
	var loc string
	switch {
	case f.LineNum.ok && f.LineNum.v == -2:
		loc = "Native Method"
	case f.FileName != "" && f.LineNum.ok && f.LineNum.v >= 0:
		loc = string(f.FileName) + ":" + strconv.FormatInt(f.LineNum.v, 10)
	case f.FileName != "":
		loc = string(f.FileName)
	case f.LineNum.ok && f.LineNum.v >= 0:
		loc = "Unknown Source:" + strconv.FormatInt(f.LineNum.v, 10)
	default:
		loc = "Unknown Source"
	}
	return "at " + name + "(" + loc + ")"
}

// scriptFrame renders a dart or js frame whose source file is file.
func scriptFrame(f *detailFrame, file string) string {
	loc := file
	if loc != "" && f.LineNum.ok && f.LineNum.v > 0 {
		loc += ":" + strconv.FormatInt(f.LineNum.v, 10)
		if f.ColNum.ok && f.ColNum.v > 0 {
			loc += ":" + strconv.FormatInt(f.ColNum.v, 10)
		}
	}
	switch {
	case f.MethodName != "" && loc != "":
		return "at " + string(f.MethodName) + " (" + loc + ")"
	case f.MethodName != "":
		return "at " + string(f.MethodName)
	case loc != "":
		return "at " + loc
	case f.InstructionAddress != "":
		return "at " + hexAddr(string(f.InstructionAddress))
	}
	return ""
}

func appleFrame(f *detailFrame) string {
	parts := make([]string, 0, 4)
	if f.FrameIndex.ok {
		parts = append(parts, strconv.FormatInt(f.FrameIndex.v, 10))
	}
	if f.BinaryName != "" {
		parts = append(parts, string(f.BinaryName))
	}
	if f.InstructionAddress != "" {
		parts = append(parts, hexAddr(string(f.InstructionAddress)))
	} else if f.SymbolAddress != "" {
		parts = append(parts, hexAddr(string(f.SymbolAddress)))
	}
	var sym string
	switch {
	case f.MethodName != "":
		sym = string(f.MethodName)
		if f.Offset.ok {
			sym += " + " + strconv.FormatInt(f.Offset.v, 10)
		}
	case f.BinaryAddress != "" && f.Offset.ok:
		sym = hexAddr(string(f.BinaryAddress)) + " + " + strconv.FormatInt(f.Offset.v, 10)
	}
	if f.FileName != "" {
		loc := string(f.FileName)
		if f.LineNum.ok && f.LineNum.v > 0 {
			loc += ":" + strconv.FormatInt(f.LineNum.v, 10)
		}
		if sym != "" {
			sym += " "
		}
		sym += "(" + loc + ")"
	}
	if sym != "" {
		parts = append(parts, sym)
	}
	if len(parts) == 1 && f.FrameIndex.ok {
		return "" // an index alone says nothing
	}
	return strings.Join(parts, "  ")
}

// hexAddr gives an address the 0x prefix crash reports show; iOS SDKs send some without it.
func hexAddr(s string) string {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return s
	}
	return "0x" + s
}

// detailPayload is what IssueDetail reads of an exception or anr payload. Its member types
// accept any JSON value, ignoring one of the wrong kind, so that only broken JSON fails.
type detailPayload struct {
	Exceptions looseList[detailUnit]   `json:"exceptions"`
	Threads    looseList[detailThread] `json:"threads"`
	Error      appleError              `json:"error"`
}

type detailUnit struct {
	Type    looseStr               `json:"type"`
	Message looseStr               `json:"message"`
	Signal  looseStr               `json:"signal"`
	Frames  looseList[detailFrame] `json:"frames"`
}

type detailThread struct {
	Name   looseStr               `json:"name"`
	Frames looseList[detailFrame] `json:"frames"`
}

type detailFrame struct {
	LineNum            looseInt `json:"line_num"`
	ColNum             looseInt `json:"col_num"`
	Offset             looseInt `json:"offset"`
	FrameIndex         looseInt `json:"frame_index"`
	ModuleName         looseStr `json:"module_name"`
	FileName           looseStr `json:"file_name"`
	ClassName          looseStr `json:"class_name"`
	MethodName         looseStr `json:"method_name"`
	BinaryName         looseStr `json:"binary_name"`
	BinaryAddress      looseStr `json:"binary_address"`
	SymbolAddress      looseStr `json:"symbol_address"`
	InstructionAddress looseStr `json:"instruction_address"`
}

// looseStr is a JSON string; any other value (null included) reads as "".
type looseStr string

func (s *looseStr) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		*s = ""
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = looseStr(v)
	return nil
}

// looseInt is a JSON number truncated to an integer; ok is false for any other value.
type looseInt struct {
	v  int64
	ok bool
}

func (n *looseInt) UnmarshalJSON(b []byte) error {
	*n = looseInt{}
	if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
		return nil
	}
	if v, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*n = looseInt{v: v, ok: true}
		return nil
	}
	if f, err := strconv.ParseFloat(string(b), 64); err == nil && f >= -9.2e18 && f <= 9.2e18 {
		*n = looseInt{v: int64(f), ok: true}
	}
	return nil
}

// looseList is a JSON array whose object elements are decoded; other elements, and a value that
// is not an array, are ignored.
type looseList[T any] []T

func (l *looseList[T]) UnmarshalJSON(b []byte) error {
	*l = nil
	if len(b) == 0 || b[0] != '[' {
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make([]T, 0, len(raw))
	for _, r := range raw {
		if len(r) == 0 || r[0] != '{' {
			continue
		}
		var v T
		if err := json.Unmarshal(r, &v); err != nil {
			return err
		}
		out = append(out, v)
	}
	*l = out
	return nil
}

// appleError is the `error` object an Apple SDK sends for an NSError.
type appleError struct {
	ok      bool
	code    string
	numcode looseInt
	meta    []byte // readableJSON of a non-empty meta object, else nil
}

func (a *appleError) UnmarshalJSON(b []byte) error {
	*a = appleError{}
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	var v struct {
		Code    looseStr        `json:"code"`
		Numcode looseInt        `json:"numcode"`
		Meta    json.RawMessage `json:"meta"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	a.code, a.numcode = string(v.Code), v.Numcode
	if len(v.Meta) > 0 && v.Meta[0] == '{' {
		a.meta = readableJSON(v.Meta)
	}
	a.ok = a.code != "" || a.numcode.ok || a.meta != nil
	return nil
}

// readableJSON re-encodes a JSON object for reading: compact, keys sorted, without the escapes
// SDKs add ("\/" from Apple's JSONSerialization, "\u003c" from Go); nil for an empty object.
func readableJSON(raw []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // numbers keep their text
	var v map[string]any
	if d.Decode(&v) != nil || len(v) == 0 {
		return nil
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if e.Encode(v) != nil {
		return nil
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// write renders the error the way NSError describes itself.
func (a *appleError) write(b *strings.Builder) {
	b.WriteString("Error")
	if a.code != "" {
		b.WriteString(" Domain=")
		b.WriteString(a.code)
	}
	if a.numcode.ok {
		b.WriteString(" Code=")
		b.WriteString(strconv.FormatInt(a.numcode.v, 10))
	}
	if a.meta != nil {
		b.WriteString(" UserInfo=")
		b.Write(a.meta)
	}
}
