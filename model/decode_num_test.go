package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// The table of docs/ingest-numbers.md as tests: every numeric field of the ingestion contract,
// each with the spellings real SDKs produce and the edge values, and what the decoder keeps
// (or the 400 it answers, with event index, field and rule).

// numIn is one input of a number table: the JSON text, and either the value kept (as text,
// read back by the field's reader) or a piece of the rule of the 400.
type numIn struct {
	in, want, rule string
}

func ok(in, want string) numIn  { return numIn{in: in, want: want} }
func bad(in, rule string) numIn { return numIn{in: in, rule: rule} }

var (
	digits400   = "1" + strings.Repeat("0", 399)
	fraction400 = "0." + strings.Repeat("0", 398) + "1"
)

// quantityTable is the table of an unsigned quantity field whose maximum is max.
func quantityTable(max uint64) []numIn {
	m := strconv.FormatUint(max, 10)
	atMost := "must be at most " + m
	t := []numIn{
		ok("0", "0"), ok("1", "1"), ok("1.0", "1"), ok("1e2", "100"), ok("1E+2", "100"),
		ok("12.5e1", "125"), ok("100e-2", "1"), ok("-0", "0"), ok("-0.0", "0"), ok("0.4", "0"),
		ok("0.5", "1"), ok("2.5", "3"), ok("7.49999", "7"), ok("-0.4", "0"), ok("1e-400", "0"),
		ok(fraction400, "0"), ok(m, m), ok(m+".0", m), ok(m+".4", m),
		bad("-1", "must not be negative"), bad("-1.5", "must not be negative"),
		bad("-1e400", "must not be negative"), bad(m+".5", atMost), bad(digits400, atMost),
		bad("1e400", atMost), bad(`"5"`, "must be a non-negative integer, got a string"),
		bad("true", "must be a non-negative integer, got a boolean"),
	}
	if max >= 1000 {
		t = append(t, ok("1e3", "1000"), ok("1079.9999999", "1080"))
	}
	if max < math.MaxUint64 {
		t = append(t, bad(strconv.FormatUint(max+1, 10), atMost), ok(strconv.FormatUint(max/10, 10)+"e1", strconv.FormatUint(max/10*10, 10)))
	} else {
		t = append(t, bad("18446744073709551616", atMost), ok("1.8446744073709551615e19", m),
			ok("9223372036854776000", "9223372036854776000")) // a JavaScript bridge's Long.MAX_VALUE
	}
	return t
}

// codeTable is the table of a signed code (int64, fractions refused).
var codeTable = []numIn{
	ok("200", "200"), ok("200.0", "200"), ok("2e2", "200"), ok("20000e-2", "200"), ok("-0", "0"),
	ok("-5", "-5"), ok("-5.0", "-5"), ok("9223372036854775807", "9223372036854775807"),
	ok("-9223372036854775808", "-9223372036854775808"), ok("-9.223372036854775808e18", "-9223372036854775808"),
	bad("200.5", "must be an integer"), bad("1e-400", "must be an integer"),
	bad("9223372036854775808", "within the int64 range"), bad("9223372036854776000", "within the int64 range"),
	bad("-9223372036854775809", "within the int64 range"), bad(digits400, "within the int64 range"),
	bad(`"200"`, "must be an integer, got a string"),
}

// floatTable is the table of a float field of bits 32 or 64: kind members keep the text as sent.
func floatTable(bits int, asSent bool) []numIn {
	v := func(in, parsed string) string {
		if asSent {
			return in
		}
		return parsed
	}
	rng := "must be within the float" + strconv.Itoa(bits) + " range"
	t := []numIn{
		ok("1", v("1", "1")), ok("-1.5", v("-1.5", "-1.5")), ok("619.959", v("619.959", "619.959")),
		ok("1e-400", v("1e-400", "0")), bad("1e400", rng), bad(digits400, rng), bad(`"1"`, "must be a number"),
	}
	if bits == 32 {
		// Java's Float.MAX_VALUE.toString() rounds to float32's maximum: accepted.
		t = append(t, ok("3.4028235E38", v("3.4028235E38", "3.4028235e+38")), bad("3.5e38", rng))
	} else {
		t = append(t, ok("1.7976931348623157e308", v("1.7976931348623157e308", "1.7976931348623157e+308")), bad("1.8e308", rng))
	}
	return t
}

// anyNumberTable is the table of a member that takes any JSON number, kept as sent.
var anyNumberTable = []numIn{
	ok("12", "12"), ok("-2", "-2"), ok("12.5", "12.5"), ok("1e400", "1e400"), ok(digits400, digits400),
	bad(`true`, "must be a number"),
}

// udTable is the table of a user-defined attribute value; want is "type:value".
var udTable = []numIn{
	ok("42", "int64:42"), ok("-0", "int64:0"), ok("9223372036854775807", "int64:9223372036854775807"),
	ok("-9223372036854775808", "int64:-9223372036854775808"),
	ok("9223372036854775808", "float64:9.223372036854776e+18"),
	ok("9223372036854776000", "float64:9.223372036854776e+18"), // Long.MAX_VALUE through a JavaScript bridge
	ok("-9223372036854775809", "float64:-9.223372036854776e+18"),
	ok("18446744073709551616", "float64:1.8446744073709552e+19"),
	ok("1.0", "float64:1"), ok("1e3", "float64:1000"), ok("1.5", "float64:1.5"), ok("-0.0", "float64:0"),
	ok("1e-400", "float64:0"), ok("-1e-400", "float64:0"), ok(fraction400, "float64:0"),
	ok("1.7976931348623157e308", "float64:1.7976931348623157e+308"),
	bad("1e309", "must not exceed the float64 maximum"), bad("-1e309", "must not exceed the float64 maximum"),
	bad(digits400, "must not exceed the float64 maximum"),
}

// numField is one numeric field: where it is (kind "span" for a span, else the event type whose
// fixture member is the base), its path for jsonEdit, and how to read back what was kept.
type numField struct {
	kind, path string
	table      []numIn
	read       func(b *Batch) string
}

// payloadNum reads a member of the first event's payload as its JSON text.
func payloadNum(path string) func(b *Batch) string {
	return func(b *Batch) string {
		var v any
		dec := json.NewDecoder(bytes.NewReader(b.Events[0].Payload))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return "payload: " + err.Error()
		}
		for _, p := range strings.Split(path, ".")[1:] {
			switch c := v.(type) {
			case map[string]any:
				v = c[p]
			case []any:
				i, _ := strconv.Atoi(p)
				v = c[i]
			}
		}
		return fmt.Sprint(v)
	}
}

func attrNum(get func(a *Attributes) any) func(b *Batch) string {
	return func(b *Batch) string { return fmt.Sprint(get(&b.Events[0].Attribute)) }
}

func udOf(ud []UDAttr) string {
	if len(ud) != 1 {
		return fmt.Sprint(ud)
	}
	return ud[0].Type.String() + ":" + ud[0].Value
}

func numFields() []numField {
	u64 := quantityTable(math.MaxUint64)
	u32 := quantityTable(math.MaxUint32)
	u16 := quantityTable(math.MaxUint16)
	u8 := quantityTable(math.MaxUint8)
	f32 := floatTable(32, true)
	fs := []numField{
		{"custom", "timestampInMillis", []numIn{ok("1759839181517", ""), ok("1759839181517.25", ""), ok("1.7e12", ""),
			ok("1e400", ""), ok("-1", ""), ok("9223372036854776000", ""), ok("null", ""), bad(`"1759839181517"`, "must be a number")},
			func(*Batch) string { return "" }},
		{"custom", "attachments.0.size", quantityTable(math.MaxInt64), func(b *Batch) string { return fmt.Sprint(b.Events[0].Attachments[0].Size) }},
		{"custom", "attribute.device_density_dpi", u16, attrNum(func(a *Attributes) any { return a.DeviceDensityDPI })},
		{"custom", "attribute.device_width_px", u16, attrNum(func(a *Attributes) any { return a.DeviceWidthPx })},
		{"custom", "attribute.device_height_px", u16, attrNum(func(a *Attributes) any { return a.DeviceHeightPx })},
		{"custom", "attribute.os_page_size", u8, attrNum(func(a *Attributes) any { return a.OSPageSize })},
		{"custom", "attribute.device_density", floatTable(32, false), attrNum(func(a *Attributes) any {
			return strconv.FormatFloat(float64(a.DeviceDensity), 'g', -1, 32)
		})},
		{"custom", "user_defined_attribute.n", udTable, func(b *Batch) string { return udOf(b.Events[0].UserDefined) }},
		{"span", "user_defined_attribute.n", udTable, func(b *Batch) string { return udOf(b.Spans[0].UserDefined) }},
		{"custom", "user_defined_attributes.n", udTable, func(b *Batch) string { return udOf(b.Events[0].UserDefined) }},
		{"span", "duration", u64, func(b *Batch) string { return fmt.Sprint(b.Spans[0].Duration) }},
		{"span", "status", []numIn{ok("0", "0"), ok("1.0", "1"), ok("2e0", "2"), ok("-0", "0"), ok("20e-1", "2"),
			bad("1.5", "must be an integer"), bad("3", "must be 0 (unset), 1 (ok) or 2 (error)"), bad("-1", "must not be negative"),
			bad("256", "must be at most 255"), bad(digits400, "must be at most 255")},
			func(b *Batch) string { return fmt.Sprint(b.Spans[0].Status) }},
		{"span", "attributes.device_width_px", u16, func(b *Batch) string { return fmt.Sprint(b.Spans[0].Attributes.DeviceWidthPx) }},
		{"gesture_click", "gesture_click.width", u32, nil}, {"gesture_click", "gesture_click.height", u32, nil},
		{"gesture_click", "gesture_click.x", f32, nil}, {"gesture_click", "gesture_click.y", f32, nil},
		{"gesture_long_click", "gesture_long_click.width", u32, nil},
		{"gesture_scroll", "gesture_scroll.end_x", f32, nil}, {"gesture_scroll", "gesture_scroll.end_y", f32, nil},
		{"http", "http.status_code", codeTable, nil},
		{"log", "log.severity_number", codeTable, nil},
		{"exception", "exception.error.numcode", codeTable, nil},
		{"exception", "exception.exceptions.0.frames.0.line_num", anyNumberTable, nil},
		{"exception", "exception.exceptions.0.frames.0.col_num", anyNumberTable, nil},
		{"exception", "exception.exceptions.0.frames.0.frame_index", anyNumberTable, nil},
		{"exception", "exception.exceptions.0.frames.0.offset", anyNumberTable, nil},
		{"exception", "exception.exceptions.0.thread_sequence", anyNumberTable, nil},
		{"app_exit", "app_exit.pid", append([]numIn{ok(`"1234"`, "1234")}, anyNumberTable[:4]...), nil},
		{"app_exit", "app_exit.timestamp", append([]numIn{ok(`"1759839181517"`, "1759839181517")}, anyNumberTable[:4]...), nil},
		{"cpu_usage", "cpu_usage.num_cores", u8, nil},
		{"cpu_usage", "cpu_usage.percentage_usage", floatTable(64, true), nil},
		{"memory_usage", "memory_usage.interval", u64, nil},
		{"memory_usage_absolute", "memory_usage_absolute.max_memory", u64, nil},
		{"memory_usage_absolute", "memory_usage_absolute.used_memory", u64, nil},
		{"low_memory", "low_memory.rss", u64, nil},
		{"warm_launch", "warm_launch.app_visible_uptime", u64, nil},
		{"hot_launch", "hot_launch.app_visible_uptime", u64, nil},
	}
	for _, f := range []string{"clock_speed", "uptime", "utime", "stime", "cutime", "cstime", "interval", "start_time"} {
		fs = append(fs, numField{"cpu_usage", "cpu_usage." + f, u64, nil})
	}
	for _, f := range []string{"java_max_heap", "java_total_heap", "java_free_heap", "total_pss", "native_total_heap", "native_free_heap", "rss"} {
		fs = append(fs, numField{"memory_usage", "memory_usage." + f, u64, nil})
	}
	for _, f := range []string{"process_start_uptime", "process_start_requested_uptime", "content_provider_attach_uptime", "on_next_draw_uptime"} {
		fs = append(fs, numField{"cold_launch", "cold_launch." + f, u64, nil})
	}
	for _, f := range []string{"touch_down_time", "touch_up_time"} {
		fs = append(fs, numField{"gesture_click", "gesture_click." + f, u64, nil}, numField{"gesture_scroll", "gesture_scroll." + f, u64, nil})
	}
	for _, f := range []string{"start_time", "end_time"} {
		fs = append(fs, numField{"http", "http." + f, u64, nil})
	}
	for i := range fs {
		if fs[i].read == nil {
			fs[i].read = payloadNum(fs[i].path)
		}
	}
	return fs
}

// TestNumbers decodes every input of every numeric field as the second item of a JSON batch and
// as a multipart part: accepted inputs must keep the table's value, refused ones must name the
// item, its index, the field and the rule.
func TestNumbers(t *testing.T) {
	members := kindMembers(t)
	// Members a fixture does not carry, so that the edit has a parent to land in.
	members["exception"] = string(applyEdits(t, []byte(members["exception"]), set("error", `{"numcode":1,"code":"x","meta":{}}`)))
	for _, f := range numFields() {
		for _, c := range f.table {
			t.Run(f.kind+"/"+f.path+"="+clip(c.in), func(t *testing.T) {
				var doc []byte
				if f.kind == "span" {
					doc = []byte(baseSpan)
				} else {
					doc = eventWith(t, f.kind, members[f.kind])
				}
				if strings.HasPrefix(f.path, "attachments.") {
					doc = applyEdits(t, doc, set("attachments", `[{"id":"42306fd7-cb17-4fa4-88dd-b40ce1ce34c4","type":"screenshot","name":"a.png"}]`))
				}
				switch {
				case strings.HasPrefix(f.path, "user_defined_attribute."):
					doc = applyEdits(t, doc, set("user_defined_attribute", `{"n":`+c.in+`}`))
				case strings.HasPrefix(f.path, "user_defined_attributes."): // legacy: the object as a JSON string
					doc = applyEdits(t, doc, set("user_defined_attributes", jsonQuote(`{"n":`+c.in+`}`)))
				default:
					doc = applyEdits(t, doc, set(f.path, c.in))
				}
				item, body := "event", []byte(`{"events":[`+string(applyEdits(t, eventWith(t, "custom", `{"name":"first"}`), set("id", `"11111111-2580-4bb6-9941-ba90df6c3c0e"`)))+`,`)
				if f.kind == "span" {
					item = "span"
					body = []byte(`{"spans":[` + string(applyEdits(t, []byte(baseSpan), set("span_id", `"aaaaaaaaaaaaaaaa"`))) + `,`)
				}
				body = append(append(body, doc...), "]}"...)
				b, err := DecodeBatch(body, testApp, false)
				var part Batch
				var perr error
				if item == "event" {
					perr = part.AddEventPart(doc, testApp)
				} else {
					perr = part.AddSpanPart(doc, testApp)
				}
				field := strings.ReplaceAll(f.path, ".0.", "[0].")
				field = strings.Replace(field, "attachments.0", "attachments[0]", 1)
				if c.rule != "" {
					checkNumErr(t, err, item, 1, field, c.rule)
					checkNumErr(t, perr, item, 0, field, c.rule)
					return
				}
				if err != nil || perr != nil {
					t.Fatalf("want %s accepted, got %v / multipart %v", c.in, err, perr)
				}
				if item == "event" {
					b.Events = b.Events[1:]
				} else {
					b.Spans = b.Spans[1:]
				}
				for _, got := range []string{f.read(&b), f.read(&part)} {
					if got != c.want {
						t.Errorf("%s = %s kept %q, want %q", f.path, c.in, got, c.want)
					}
				}
			})
		}
	}
}

func clip(s string) string {
	if len(s) > 24 {
		return s[:12] + "…" + strconv.Itoa(len(s))
	}
	return s
}

func checkNumErr(t *testing.T, err error, item string, index int, field, rule string) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("want a ValidationError at %s %d %s, got %v", item, index, field, err)
	}
	if ve.Item != item || ve.Index != index || ve.Field != field || !strings.Contains(ve.Rule, rule) {
		t.Fatalf("got %v, want %s %d: %s: …%s…", err, item, index, field, rule)
	}
	if len(ve.Error()) > 300 {
		t.Errorf("error of %d bytes: a hostile number must not bloat it", len(ve.Error()))
	}
}

// TestNumberPayloadRewrite checks that integers written otherwise reach the payload as plain
// integers, with the rest of the member compacted as before, and that what reads payloads
// (LaunchDuration) sees them.
func TestNumberPayloadRewrite(t *testing.T) {
	member := `{ "on_next_draw_uptime" : 1.5e3, "launched_activity":"a b 1e3", "has_saved_state":false,
		"process_start_uptime": 1000.0, "nested": {"x": 1e3}, "intent_data":null }`
	e, _, err := DecodeEvent(eventWith(t, "cold_launch", member), testApp, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"on_next_draw_uptime":1500,"launched_activity":"a b 1e3","has_saved_state":false,"process_start_uptime":1000,"nested":{"x":1e3},"intent_data":null}`
	if string(e.Payload) != want {
		t.Errorf("payload\n%s\nwant\n%s", e.Payload, want)
	}
	if _, ms, ok := LaunchDuration(&e); !ok || ms != 500 {
		t.Errorf("LaunchDuration = %v, %v; want 500 ms", ms, ok)
	}
	// Codes too, negative ones included; the kind member after "type" and before it alike.
	for _, body := range []string{
		`{"id":"576aa557-2580-4bb6-9941-ba90df6c3c0e","session_id":"9321a0be-906e-436b-91af-b47fb2e81cde","timestamp":"2025-10-07T12:13:01Z","type":"log","log":{"severity_number":-9.223372036854775808e18,"body":"x"},"attribute":` + baseAttribute + `}`,
		`{"id":"576aa557-2580-4bb6-9941-ba90df6c3c0e","log":{"severity_number":-9.223372036854775808e18,"body":"x"},"session_id":"9321a0be-906e-436b-91af-b47fb2e81cde","timestamp":"2025-10-07T12:13:01Z","type":"log","attribute":` + baseAttribute + `}`,
	} {
		e, _, err := DecodeEvent([]byte(body), testApp, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"severity_number":-9223372036854775808,"body":"x"}`; string(e.Payload) != want {
			t.Errorf("payload %s, want %s", e.Payload, want)
		}
	}
	// A rewrite in one event does not leak into the next one of the batch.
	body := `{"events":[` + string(eventWith(t, "http", `{"url":"u","method":"get","status_code":2e2}`)) + `,` +
		string(applyEdits(t, eventWith(t, "http", `{"url":"u","method":"get","status_code":404}`), set("id", `"11111111-2580-4bb6-9941-ba90df6c3c0e"`))) + `]}`
	b, err := DecodeBatch([]byte(body), testApp, false)
	if err != nil {
		t.Fatal(err)
	}
	if p0, p1 := string(b.Events[0].Payload), string(b.Events[1].Payload); p0 != `{"url":"u","method":"get","status_code":200}` || p1 != `{"method":"get","status_code":404,"url":"u"}` {
		t.Errorf("payloads %s %s", p0, p1)
	}
}

// TestDecimalInt checks decimalInt's exact reading against math/big on random spellings of
// random values: integers near the uint64 bounds, fractions, exponents, leading and trailing
// zeros.
func TestDecimalInt(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	for n := 0; n < 200_000; n++ {
		var digits string
		switch r.IntN(4) {
		case 0:
			digits = strconv.FormatUint(r.Uint64(), 10)
		case 1:
			digits = strconv.FormatUint(math.MaxUint64-r.Uint64N(1000), 10)
		case 2:
			digits = strconv.FormatUint(r.Uint64N(100000), 10)
		default:
			digits = strconv.FormatUint(r.Uint64(), 10) + strconv.Itoa(r.IntN(100))
		}
		digits += strings.Repeat("0", r.IntN(3))
		point := r.IntN(len(digits) + 1) // digits before the decimal point
		intPart, fracPart := digits[:point], digits[point:]
		if intPart == "" {
			intPart = "0"
		}
		intPart = strings.TrimLeft(intPart, "0")
		if intPart == "" {
			intPart = "0"
		}
		text := intPart
		if fracPart != "" || r.IntN(3) == 0 {
			if fracPart == "" {
				fracPart = "0"
			}
			text += "." + fracPart
		}
		exp := 0
		if r.IntN(2) == 0 {
			exp = r.IntN(41) - 20
			sep := []string{"e", "E", "e+"}[r.IntN(3)]
			if exp < 0 {
				sep = sep[:1]
			}
			text += sep + strconv.Itoa(exp)
		}
		neg := r.IntN(4) == 0
		if neg {
			text = "-" + text
		}
		// The exact value, rounded half away from zero.
		rat, ok := new(big.Rat).SetString(text)
		if !ok {
			t.Fatalf("bad test text %q", text)
		}
		abs := new(big.Rat).Abs(rat)
		q, m := new(big.Int).QuoRem(abs.Num(), abs.Denom(), new(big.Int))
		wantFrac := m.Sign() != 0
		if new(big.Int).Lsh(m, 1).Cmp(abs.Denom()) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		wantBig := q.Cmp(two64) >= 0
		mag, gotNeg, frac, isBig := decimalInt([]byte(text))
		if gotNeg != neg || frac != wantFrac || isBig != wantBig || (!wantBig && mag != q.Uint64()) {
			t.Fatalf("decimalInt(%s) = %d neg %v frac %v big %v; want %s frac %v big %v", text, mag, gotNeg, frac, isBig, q, wantFrac, wantBig)
		}
	}
}
