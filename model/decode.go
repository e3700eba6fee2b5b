package model

import (
	"bytes"
	"encoding/base64"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/google/uuid"
	asmbase64 "github.com/segmentio/asm/base64"
)

// fastBase64 decodes inline attachments ("bytes") 32 characters at a time (AVX2 on amd64 CPUs
// that have it, NEON on arm64; encoding/base64 on other CPUs and in purego builds) and hands
// what its vector loop leaves (padding, line breaks, an invalid character, a short tail) to
// encoding/base64, so it accepts and yields exactly what encoding/base64 does
// (TestFastBase64MatchesStd; BenchmarkBase64Decode). The standard decoder was 3 % of an
// embedded node's CPU flat out. The module was already in the build, through clickhouse-go.
var fastBase64 = asmbase64.StdEncoding

// Ingest decoding: PUT /events bodies (JSON) and multipart event/span parts into model types,
// checking every rule of spec/ingestion-api.md on the way.
//
// Why a hand-written single-pass reader instead of encoding/json (or goccy/go-json) into wire
// structs: the spec needs things typed decoding hides — the raw text of user-defined numbers
// (int64 vs float64, 2^63 vs 1e309), which member of an event is the kind member, the exact bytes
// of that member to keep as Payload, the byte offset of a syntax error, and the JSON path of every
// violation. A typed decode would parse each event twice (struct, then RawMessage for the kind)
// and allocate per field; this reader validates as it reads, copies the kind member once into a
// shared arena, interns the attribute strings that repeat across a batch, and costs no new
// module. See BenchmarkDecodeBatch for the numbers.
//
// Decisions where the spec, the facts of docs/architecture.md ("What real SDKs send") and the real SDK bodies (testdata/sdk) disagree.
// Every fixture batch must be accepted unmodified, so the fixtures win over the letter of the
// spec; each decision is also noted where it is enforced.
//   - attachments: absent, null or [] (spec: required array). size and path are kept
//     (Attachment.Size is SizeUnknown when size is absent).
//   - user_defined_attribute: absent, null or an object; the legacy user_defined_attributes (the
//     object as a JSON string, "{}" when empty) is used when the former is absent, null or {}.
//   - timestamps: 0 to 9 fractional digits, 'Z' or ±hh:mm (ParseTimestamp); more digits are
//     rejected. timestampInMillis must be a number or null when present and is otherwise
//     ignored: timestamp stays required (rule 3).
//   - measure_sdk_version is service_sdk_version. os_name is matched without regard to case and
//     stored lowercase ("iOS" → "ios"). thread_name must be present (rule 4) but may be "" (the
//     iOS Flutter SDK sends ""). Other required attributes must be non-empty strings.
//   - The attribute table's other R members (platform under JSON rules, network_*,
//     device_cpu_arch) are checked against their value sets when present, not required: the
//     acceptance rules say which are enforced, and the Android batches lack device_cpu_arch.
//     Attribute members the table does not name (patch_id, patch_version) → Attributes.Extra.
//   - Kinds: see validate_kinds.go (exception: handled or severity, framework optional, frames'
//     in_app optional; app_exit: REASON_/IMPORTANCE_ prefixes optional; warm_launch.is_lukewarm
//     string or boolean). session_start may omit its empty member. Rule 6 is "no other event of
//     the session is earlier": a tie is first (Android stamps session_start and cpu_usage alike).
//   - Numbers (decode_num.go; the table per field is docs/ingest-numbers.md): an integer field
//     takes any spelling of an integer in range (1.0, 1e3, -0); unsigned quantities round
//     fractions, signed codes refuse them; user-defined integers beyond int64 are float64s.
//     timestampInMillis takes any number (it is ignored).
//   - Spans: parent_id null, absent or "" is a root span; span_name is accepted for name.
//   - Unknown members: kept verbatim in Payload inside kind members and in Attributes.Extra inside
//     attribute objects; elsewhere (event/span envelope, attachments, checkpoints) checked for
//     syntax and ignored. A repeated "type", "events" or "spans" member is rejected as ambiguous.

// DecodeBatch decodes and validates a JSON PUT /events body {events: [...], spans: [...]} for the
// app appID. multipartRules adds what the multipart reference requires on top of the JSON rules
// (attribute.platform on events, attributes.platform on spans). It runs Batch.Validate. Every
// error is a *ValidationError (errors.Is(err, ErrInvalid)); the batch is then empty.
func DecodeBatch(body []byte, appID uuid.UUID, multipartRules bool) (Batch, error) {
	d := newDecoder(body, appID, multipartRules)
	defer d.release()
	var b Batch
	d.b = &b
	if err := d.batch(); err != nil {
		return Batch{}, err
	}
	if err := b.Validate(); err != nil {
		return Batch{}, err
	}
	return b, nil
}

// DecodeEvent decodes and validates one multipart `event` part (multipart rules). index is the
// part's position among the event parts, used in errors. It returns the inline attachment
// contents the event carried. Batch.AddEventPart does the same into a Batch.
func DecodeEvent(part []byte, appID uuid.UUID, index int) (Event, []InlineBlob, error) {
	var b Batch
	if err := b.addPart(part, appID, index, true); err != nil {
		return Event{}, nil, err
	}
	return b.Events[0], b.Inline, nil
}

// DecodeSpan decodes and validates one multipart `span` part (multipart rules).
func DecodeSpan(part []byte, appID uuid.UUID, index int) (Span, error) {
	var b Batch
	if err := b.addPart(part, appID, index, false); err != nil {
		return Span{}, err
	}
	return b.Spans[0], nil
}

// AddEventPart decodes one multipart `event` part (multipart rules) and appends the event and
// its inline attachments to b. Call Validate once all parts are in.
func (b *Batch) AddEventPart(part []byte, appID uuid.UUID) error {
	return b.addPart(part, appID, len(b.Events), true)
}

// AddSpanPart decodes one multipart `span` part (multipart rules) and appends it to b.
func (b *Batch) AddSpanPart(part []byte, appID uuid.UUID) error {
	return b.addPart(part, appID, len(b.Spans), false)
}

func (b *Batch) addPart(part []byte, appID uuid.UUID, index int, event bool) error {
	d := newDecoder(part, appID, true)
	defer d.release()
	d.b = b
	ne, ns, ni := len(b.Events), len(b.Spans), len(b.Inline)
	err := d.one(index, event)
	if err != nil {
		b.Events, b.Spans, b.Inline = b.Events[:ne], b.Spans[:ns], b.Inline[:ni]
	}
	return err
}

// decoder holds the state of one decode call. Pooled: the intern map, the scratch buffers and
// the kept attribute objects' buffers are reused (the objects themselves are forgotten);
// everything a result refers to (strings, arena) is fresh per call.
type decoder struct {
	s         scanner
	multipart bool
	appID     uuid.UUID
	b         *Batch
	intern    map[string]string
	scratch   []byte
	arena     []byte
	last      Attributes // the previous item's attributes, whose strings the next item reuses
	// memos are the attribute objects last read (the first nMemos, most recent first): an
	// item whose object is the same bytes as one of them gets its result without reading it.
	memos     [attrMemos]*attrMemo
	nMemos    int
	evs       []Event    // scratch for the events of a JSON body, see items
	sps       []Span     // scratch for the spans of a JSON body
	extraAttr []byte     // unknown members of the attribute object being read, as JSON
	patches   []numPatch // integers of the kind member being read to write canonically (decode_num.go)
}

var decoderPool = sync.Pool{New: func() any { return &decoder{intern: make(map[string]string, 128)} }}

func newDecoder(buf []byte, appID uuid.UUID, multipart bool) *decoder {
	d := decoderPool.Get().(*decoder)
	d.s = scanner{buf: buf}
	d.appID = appID
	d.multipart = multipart
	return d
}

func (d *decoder) release() {
	clear(d.intern)
	d.s = scanner{}
	d.b = nil
	d.arena = nil
	d.last = Attributes{}
	for _, m := range d.memos[:d.nMemos] {
		m.attrs = Attributes{} // its strings and Extra belong to the batch
	}
	d.nMemos = 0
	d.extraAttr = d.extraAttr[:0]
	d.patches = d.patches[:0]
	if cap(d.scratch) > 1<<20 { // inline base64 attachments pass through it; bound what the pool keeps
		d.scratch = nil
	}
	decoderPool.Put(d)
}

// attrMemo is an attribute object as sent (a copy) and what reading it gave, at the depth it
// was read at: the same bytes at the same depth read the same.
type attrMemo struct {
	raw     []byte
	attrs   Attributes
	present uint32
	depth   int
}

// SDKs send one attribute object on most items of a batch, or a few that take turns (the
// thread's name changes; the iOS SDK writes one object's keys in different orders). Of the
// recorded items, 71 % repeat the item before them and 94 % one of the 4 objects last read.
// Objects over maxMemoRaw bytes (real ones are 0.5–1.5 KB) are not kept, and each memo's buffer
// holds maxMemoRaw, so a pooled decoder holds 16 KiB for them.
const (
	attrMemos  = 4
	maxMemoRaw = 4 << 10
)

// recall returns the memo whose object the input at the scanner's position starts with, moved
// to the front, or nil.
func (d *decoder) recall() *attrMemo {
	rest := d.s.buf[d.s.pos:]
	for i, m := range d.memos[:d.nMemos] {
		if m.depth == d.s.depth && bytes.HasPrefix(rest, m.raw) {
			copy(d.memos[1:i+1], d.memos[:i])
			d.memos[0] = m
			return m
		}
	}
	return nil
}

// remember keeps raw and what reading it gave as the most recent memo, in place of the least
// recent one once there are attrMemos.
func (d *decoder) remember(raw []byte, a *Attributes, present uint32, depth int) {
	if len(raw) > maxMemoRaw {
		return
	}
	if d.nMemos < attrMemos {
		if d.memos[d.nMemos] == nil {
			// Room for the largest object kept, so that the buffer never grows past it.
			d.memos[d.nMemos] = &attrMemo{raw: make([]byte, 0, maxMemoRaw)}
		}
		d.nMemos++
	}
	m := d.memos[d.nMemos-1]
	copy(d.memos[1:d.nMemos], d.memos[:d.nMemos-1])
	d.memos[0] = m
	m.raw = append(m.raw[:0], raw...)
	m.attrs, m.present, m.depth = *a, present, depth
}

// Interning bounds: repeated attribute values are short; a hostile batch must not grow the map.
const (
	internMaxLen     = 96
	internMaxEntries = 4096
)

// str turns raw string bytes into a string, sharing one copy for values that repeat in a batch
// (installation id, versions, device names, thread names, UD keys).
func (d *decoder) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > internMaxLen {
		return string(b)
	}
	if s, ok := d.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.intern) < internMaxEntries {
		d.intern[s] = s
	}
	return s
}

// same returns prev when v spells it (attributes rarely change from one event to the next, and
// one comparison is cheaper than an intern lookup), else d.str(v).
func (d *decoder) same(v []byte, prev string) string {
	if string(v) == prev {
		return prev
	}
	return d.str(v)
}

// keep copies raw JSON (already validated) into the arena in compact form and returns it with
// its capacity clipped, so appending to one payload can never overwrite the next.
func (d *decoder) keep(raw []byte, hasWS bool) []byte {
	const chunk = 64 << 10
	if len(raw) > chunk/4 {
		out := appendMaybeCompact(make([]byte, 0, len(raw)), raw, hasWS)
		return out[:len(out):len(out)]
	}
	if cap(d.arena)-len(d.arena) < len(raw) {
		// Payloads never outgrow the body, so a small body gets a small first chunk.
		n := chunk
		if d.arena == nil && len(d.s.buf) < chunk {
			n = len(d.s.buf)
		}
		d.arena = make([]byte, 0, n)
	}
	start := len(d.arena)
	d.arena = appendMaybeCompact(d.arena, raw, hasWS)
	return d.arena[start:len(d.arena):len(d.arena)]
}

// typeErr reports a member of the wrong JSON type; the caller adds the path.
func (d *decoder) typeErr(want string) error {
	return fieldErr("", "must be "+want+", got "+d.s.kindOf())
}

// Limits of one string member (unescaped): every string the decoder reads is at most
// MaxStringBytes, except the long-text members of event kinds (messages, bodies, traces,
// descriptions: LongTextBytes). Real SDKs stay far below both; a body over them is refused with
// the field named, so one oversized member cannot make every row after it carry megabytes.
const (
	MaxStringBytes   = 64 << 10
	MaxLongTextBytes = 1 << 20
)

// strVal reads a string member of at most MaxStringBytes and returns its unescaped bytes
// (valid until the next strVal).
func (d *decoder) strVal() ([]byte, error) { return d.strValMax(MaxStringBytes) }

// strValMax is strVal with the limit max.
func (d *decoder) strValMax(max int) ([]byte, error) {
	if d.s.peek() != '"' {
		return nil, d.typeErr("a string")
	}
	raw, esc, err := d.s.str()
	if err != nil {
		return nil, err
	}
	if esc {
		d.scratch = unescape(d.scratch[:0], raw)
		raw = d.scratch
	}
	if len(raw) > max {
		return nil, fieldErr("", "must be at most "+strconv.Itoa(max)+" bytes, is "+strconv.Itoa(len(raw)))
	}
	return raw, nil
}

func (d *decoder) boolVal() (bool, error) {
	switch d.s.peek() {
	case 't':
		return true, d.s.literal("true")
	case 'f':
		return false, d.s.literal("false")
	}
	return false, d.typeErr("a boolean")
}

func isNumStart(c byte) bool { return c == '-' || (c >= '0' && c <= '9') }

func parseUint64(raw []byte) (uint64, bool) {
	var v uint64
	for _, c := range raw {
		dg := uint64(c - '0')
		if v > (math.MaxUint64-dg)/10 {
			return 0, false
		}
		v = v*10 + dg
	}
	return v, true
}

func parseInt64(raw []byte) (int64, bool) {
	neg := raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	u, ok := parseUint64(raw)
	switch {
	case !ok:
		return 0, false
	case neg && u == 1<<63:
		return math.MinInt64, true
	case u > math.MaxInt64:
		return 0, false
	case neg:
		return -int64(u), true
	}
	return int64(u), true
}

// clipValue quotes a value for an error message, shortened so a hostile value cannot bloat the answer.
func clipValue(b []byte) string {
	const max = 64
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}

// enumVal returns the canonical constant for v from set (no allocation), after removing an
// optional prefix.
func enumVal(v []byte, set []string, prefix string) (string, bool) {
	if prefix != "" {
		v = bytes.TrimPrefix(v, []byte(prefix))
	}
	for _, s := range set {
		if s == string(v) {
			return s, true
		}
	}
	return "", false
}

func enumErr(v []byte, set []string) error {
	rule := "must be one of"
	for i, s := range set {
		if i > 0 {
			rule += ","
		}
		rule += " " + s
	}
	return fieldErr("", rule+"; got "+clipValue(v))
}

// ---- the request body ----

func (d *decoder) batch() error {
	s := &d.s
	if s.peek() != '{' {
		if s.pos >= len(s.buf) {
			return &ValidationError{Rule: "the request body is empty; expected {\"events\": [...], \"spans\": [...]}"}
		}
		return &ValidationError{Rule: "the request body must be a JSON object {\"events\": [...], \"spans\": [...]}, got " + s.kindOf()}
	}
	if err := s.openObject(); err != nil {
		return err
	}
	for i := 0; ; i++ {
		key, _, done, err := s.member(i)
		if err != nil {
			return err
		}
		if done {
			break
		}
		switch string(key) {
		case "events":
			if err := d.items("events", true); err != nil {
				return err
			}
		case "spans":
			if err := d.items("spans", false); err != nil {
				return err
			}
		default: // tolerated and ignored; the spec names only events and spans
			if err := s.skip(); err != nil {
				return underField(err, string(key))
			}
		}
	}
	return s.end()
}

// items reads the events or spans array (null or absent counts as empty: the recorder behind
// the fixtures omits "spans" when there are none).
func (d *decoder) items(name string, events bool) error {
	s := &d.s
	if (events && d.b.Events != nil) || (!events && d.b.Spans != nil) {
		return fieldErr(name, "must appear only once")
	}
	if null, err := s.isNull(); null || err != nil {
		return underField(err, name)
	}
	if s.peek() != '[' {
		return underField(d.typeErr("an array"), name)
	}
	if err := s.openArray(); err != nil {
		return err
	}
	// Items are decoded into the pooled scratch slices and copied out once at their final size:
	// an Event is ~0.5 kB, and growing the result by doubling would allocate twice the batch.
	if events {
		d.b.Events = d.evs[:0]
	} else {
		d.b.Spans = d.sps[:0]
	}
	err := d.itemLoop(name, events)
	if events {
		d.evs = d.b.Events
		d.b.Events = nil
		if err == nil {
			d.b.Events = append(make([]Event, 0, len(d.evs)), d.evs...)
		}
		clear(d.evs) // the pool must not keep the strings alive
		if cap(d.evs) > 4096 {
			d.evs = nil
		}
		d.evs = d.evs[:0]
	} else {
		d.sps = d.b.Spans
		d.b.Spans = nil
		if err == nil {
			d.b.Spans = append(make([]Span, 0, len(d.sps)), d.sps...)
		}
		clear(d.sps)
		if cap(d.sps) > 4096 {
			d.sps = nil
		}
		d.sps = d.sps[:0]
	}
	return err
}

func (d *decoder) itemLoop(name string, events bool) error {
	s := &d.s
	kind := "span"
	if events {
		kind = "event"
	}
	for i := 0; ; i++ {
		done, err := s.elem(i)
		if err != nil {
			return underField(err, name)
		}
		if done {
			return nil
		}
		idx := len(d.b.Spans)
		if events {
			idx = len(d.b.Events)
		}
		if err := d.item(events); err != nil {
			return atItem(err, kind, idx)
		}
	}
}

// one decodes a multipart part holding a single event or span.
func (d *decoder) one(index int, event bool) error {
	kind := "span"
	if event {
		kind = "event"
	}
	if err := d.item(event); err != nil {
		return atItem(err, kind, index)
	}
	return atItem(d.s.end(), kind, index)
}

func (d *decoder) item(event bool) error {
	if d.s.peek() != '{' {
		return d.typeErr("an object")
	}
	if event {
		d.b.Events = append(d.b.Events, Event{})
		return d.event(&d.b.Events[len(d.b.Events)-1])
	}
	d.b.Spans = append(d.b.Spans, Span{})
	return d.span(&d.b.Spans[len(d.b.Spans)-1])
}

// ---- events ----

// member presence bits of an event envelope
const (
	hasID = 1 << iota
	hasType
	hasSession
	hasTimestamp
	hasAttribute
	hasKind
)

// pendingMember remembers where a member the envelope does not know lies, in case it turns out to
// be the kind member because "type" comes after it.
type pendingMember struct {
	key        string
	start, end int
}

func (d *decoder) event(e *Event) error {
	s := &d.s
	e.AppID = d.appID
	inlineStart := len(d.b.Inline)
	if err := s.openObject(); err != nil {
		return err
	}
	var (
		have               int
		sch                *schema
		kindStart, kindEnd int
		kindNull, kindWS   bool
		pend               [4]pendingMember
		pending            = pend[:0]
		ud, udLegacy       []UDAttr
		hasUD, hasLegacyUD bool
		attrPresent        uint32
		err                error
	)
	for i := 0; ; i++ {
		key, esc, done, err := s.member(i)
		if err != nil {
			return err
		}
		if done {
			break
		}
		if esc {
			key = unescape(nil, key)
		}
		switch string(key) {
		case "id":
			if e.ID, err = d.uuidVal(); err != nil {
				return underField(err, "id")
			}
			have |= hasID
		case "session_id":
			if e.SessionID, err = d.uuidVal(); err != nil {
				return underField(err, "session_id")
			}
			have |= hasSession
		case "type":
			if have&hasType != 0 {
				// A second type could pair the member checked for one kind with another kind.
				return fieldErr("type", "must appear only once")
			}
			v, err := d.strVal()
			if err != nil {
				return underField(err, "type")
			}
			name, ok := kindNames[string(v)]
			if !ok {
				return fieldErr("type", clipValue(v)+" is not an event type of the ingestion spec")
			}
			e.Type, sch = name, kindSchemas[name]
			have |= hasType
		case "timestamp":
			if e.Timestamp, err = d.timeVal(); err != nil {
				return underField(err, "timestamp")
			}
			have |= hasTimestamp
		case "timestampInMillis": // legacy duplicate of timestamp (docs/architecture.md, "What real SDKs send"): checked, not used
			// Any number or null: it is ignored, so no spelling of it (a fraction from a
			// JavaScript clock, 1.7e12) is worth a batch.
			if null, err := s.isNull(); !null {
				if err != nil {
					return underField(err, "timestampInMillis")
				}
				if !isNumStart(s.peek()) {
					return underField(d.typeErr("a number"), "timestampInMillis")
				}
				if _, _, err := s.num(); err != nil {
					return underField(err, "timestampInMillis")
				}
			}
		case "user_triggered":
			if null, err := s.isNull(); !null {
				if err != nil {
					return underField(err, "user_triggered")
				}
				if e.UserTriggered, err = d.boolVal(); err != nil {
					return underField(err, "user_triggered")
				}
			}
		case "attribute":
			if null, err := s.isNull(); null || err != nil {
				if err != nil {
					return underField(err, "attribute")
				}
				continue
			}
			e.Attribute = Attributes{} // a repeated member replaces, never merges
			if attrPresent, err = d.attributes(&e.Attribute); err != nil {
				return underField(err, "attribute")
			}
			have |= hasAttribute
		case "user_defined_attribute":
			if ud, err = d.udAttrs(); err != nil {
				return underField(err, "user_defined_attribute")
			}
			hasUD = ud != nil
		case "user_defined_attributes": // legacy: the object as a JSON string
			if udLegacy, err = d.udLegacy(); err != nil {
				return underField(err, "user_defined_attributes")
			}
			hasLegacyUD = udLegacy != nil
		case "attachments":
			if e.Attachments, err = d.attachments(); err != nil {
				return underField(err, "attachments")
			}
		default:
			if sch != nil && string(key) == e.Type {
				s.sawWS = false
				if kindStart, kindEnd, kindNull, err = d.kindMember(sch); err != nil {
					return underField(err, e.Type)
				}
				kindWS = s.sawWS
				have |= hasKind
				continue
			}
			start := s.pos
			if err := s.skip(); err != nil {
				return underField(err, string(key))
			}
			if len(pending) < 64 { // beyond that nothing real is a candidate; keep memory bounded
				pending = append(pending, pendingMember{string(key), start, s.pos})
			}
		}
	}
	switch {
	case have&hasID == 0:
		return fieldErr("id", "is required")
	case have&hasType == 0:
		return fieldErr("type", "is required")
	case have&hasSession == 0:
		return fieldErr("session_id", "is required")
	case have&hasTimestamp == 0:
		return fieldErr("timestamp", "is required (nanosecond precision RFC 3339)")
	case have&hasAttribute == 0:
		return fieldErr("attribute", "is required")
	}
	if have&hasKind == 0 {
		// "type" came after the kind member: check the member now, from where it was.
		for _, p := range pending {
			if p.key == e.Type {
				end := s.pos
				s.pos, s.sawWS = p.start, false
				kindStart, kindEnd, kindNull, err = d.kindMember(sch)
				s.pos, kindWS = end, s.sawWS
				if err != nil {
					return underField(err, e.Type)
				}
				have |= hasKind
			}
		}
	}
	if have&hasKind == 0 || kindNull {
		// session_start has no fields; an SDK may leave its empty member out.
		if e.Type != "session_start" {
			return fieldErr(e.Type, "is required: an event of type "+e.Type+" carries its fields in the member "+e.Type)
		}
	} else if len(d.patches) > 0 {
		e.Payload = d.keepPatched(s.buf[kindStart:kindEnd], kindStart, kindWS)
	} else {
		e.Payload = d.keep(s.buf[kindStart:kindEnd], kindWS)
	}
	for i := inlineStart; i < len(d.b.Inline); i++ { // "attachments" may precede "id"
		d.b.Inline[i].EventID = e.ID
	}
	if err := d.requireEventAttrs(&e.Attribute, attrPresent); err != nil {
		return underField(err, "attribute")
	}
	switch {
	case hasUD:
		e.UserDefined = ud
	case hasLegacyUD:
		e.UserDefined = udLegacy
	}
	return nil
}

// kindMember checks the kind member against its schema and returns its extent; null is reported
// so the caller can treat it as absent.
func (d *decoder) kindMember(sch *schema) (start, end int, null bool, err error) {
	s := &d.s
	d.patches = d.patches[:0]
	if null, err := s.isNull(); null || err != nil {
		return 0, 0, null, err
	}
	if s.peek() != '{' {
		return 0, 0, false, d.typeErr("an object")
	}
	start = s.pos
	if err := d.object(sch); err != nil {
		return 0, 0, false, err
	}
	return start, s.pos, false, nil
}

func (d *decoder) uuidVal() (uuid.UUID, error) {
	v, err := d.strVal()
	if err != nil {
		return uuid.UUID{}, err
	}
	id, perr := uuid.ParseBytes(v)
	if perr != nil {
		return uuid.UUID{}, fieldErr("", "must be a UUID, got "+clipValue(v))
	}
	return id, nil
}

func (d *decoder) timeVal() (int64, error) {
	v, err := d.strVal()
	if err != nil {
		return 0, err
	}
	ts, perr := parseTimestamp(v)
	if perr != nil {
		return 0, fieldErr("", "is "+perr.Error()+": got "+clipValue(v))
	}
	return ts, nil
}

// ---- attachments ----

func (d *decoder) attachments() ([]Attachment, error) {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		return nil, err
	}
	if s.peek() != '[' {
		return nil, d.typeErr("an array")
	}
	if err := s.openArray(); err != nil {
		return nil, err
	}
	var out []Attachment
	for i := 0; ; i++ {
		done, err := s.elem(i)
		if err != nil {
			return nil, err
		}
		if done {
			return out, nil
		}
		if s.peek() != '{' {
			return nil, underIndex(d.typeErr("an object"), i)
		}
		if out == nil {
			out = make([]Attachment, 0, 2)
		}
		out = append(out, Attachment{})
		if err := d.attachment(&out[len(out)-1]); err != nil {
			return nil, underIndex(err, i)
		}
	}
}

func (d *decoder) attachment(a *Attachment) error {
	s := &d.s
	if err := s.openObject(); err != nil {
		return err
	}
	var (
		hasID, hasName, hasType bool
		inline                  []byte
	)
	a.Size = SizeUnknown
	for i := 0; ; i++ {
		key, esc, done, err := s.member(i)
		if err != nil {
			return err
		}
		if done {
			break
		}
		if esc {
			key = unescape(nil, key)
		}
		if null, err := s.isNull(); null || err != nil {
			if err != nil {
				return underField(err, string(key))
			}
			continue
		}
		switch string(key) {
		case "id":
			a.ID, err = d.uuidVal()
			hasID = true
		case "name":
			var v []byte
			if v, err = d.strVal(); err == nil {
				a.Name, hasName = d.str(v), len(v) > 0
			}
		case "type":
			var v []byte
			if v, err = d.strVal(); err == nil {
				var ok bool
				if a.Type, ok = enumVal(v, attachmentTypes, ""); !ok {
					err = enumErr(v, attachmentTypes)
				}
				hasType = true
			}
		case "extension":
			var v []byte
			if v, err = d.strVal(); err == nil {
				a.Extension = d.str(v)
			}
		case "timestamp":
			// Kept as sent (multipart SDKs send it) and not parsed: it is informational, and
			// rejecting a whole batch over its format would lose the events for nothing.
			var v []byte
			if v, err = d.strVal(); err == nil {
				a.Timestamp = d.str(v)
			}
		case "bytes": // legacy inline content, base64: bounded by the body's limit only
			var v []byte
			if v, err = d.strValMax(math.MaxInt); err == nil {
				inline = make([]byte, base64.StdEncoding.DecodedLen(len(v)))
				n, derr := fastBase64.Decode(inline, v)
				if derr != nil {
					// Decoded again by the standard library, which decides: its message
					// counts the offset from the value's start, the fast decoder's from where
					// its vector loop stopped.
					if n, derr = base64.StdEncoding.Decode(inline, v); derr != nil {
						err = fieldErr("", "must be standard base64: "+derr.Error())
					}
				}
				inline = inline[:n]
			}
		case "size":
			var v uint64
			if v, _, err = d.uintVal(math.MaxInt64, true); err == nil {
				a.Size = int64(v)
			}
		case "path":
			var v []byte
			if v, err = d.strVal(); err == nil {
				a.Path = string(v)
			}
		default:
			err = s.skip()
		}
		if err != nil {
			return underField(err, string(key))
		}
	}
	switch {
	case !hasID:
		return fieldErr("id", "is required")
	case !hasName:
		return fieldErr("name", "is required and must not be empty")
	case !hasType:
		return fieldErr("type", "is required")
	}
	if inline != nil {
		d.b.Inline = append(d.b.Inline, InlineBlob{AttachmentID: a.ID, Bytes: inline})
	}
	return nil
}

// ---- attributes ----

// attribute presence bits, for the required-attribute rules
const (
	aInstallationID = 1 << iota
	aAppVersion
	aAppBuild
	aAppUniqueID
	aPlatform
	aSDKVersion
	aThreadName
	aOSVersion
)

// attributes reads the attribute object of an event or span. Decisions: os_name is matched
// without regard to case and stored lowercase ("iOS" from old iOS SDKs becomes "ios", so the
// dashboard sees one value); measure_sdk_version is the Measure SDKs' name of
// service_sdk_version (the latter wins when both come); members the table does not name go to
// a.Extra as sent; null counts as absent everywhere.
func (d *decoder) attributes(a *Attributes) (present uint32, err error) {
	s := &d.s
	if s.peek() != '{' {
		return 0, d.typeErr("an object")
	}
	// An object read before is compared, not read: a memory compare instead of a
	// member-by-member parse that was a third of decoding.
	if m := d.recall(); m != nil {
		*a, d.last = m.attrs, m.attrs
		s.pos += len(m.raw)
		return m.present, nil
	}
	start, depth := s.pos, s.depth
	if err := s.openObject(); err != nil {
		return 0, err
	}
	var svcSDK bool
	d.extraAttr = d.extraAttr[:0]
	for i := 0; ; i++ {
		key, esc, done, err := s.member(i)
		if err != nil {
			return 0, err
		}
		if done {
			if len(d.extraAttr) > 0 {
				a.Extra = d.keepExtra()
			}
			d.last = *a
			d.remember(s.buf[start:s.pos], a, present, depth)
			return present, nil
		}
		rawKey := key // as sent, escapes and all: valid JSON string content for Extra
		if esc {
			key = unescape(nil, key)
		}
		if null, err := s.isNull(); null || err != nil {
			if err != nil {
				return 0, underField(err, string(key))
			}
			continue
		}
		var v []byte
		switch string(key) {
		case "installation_id":
			v, err = d.strVal()
			a.InstallationID = d.same(v, d.last.InstallationID)
			present |= aInstallationID
		case "app_version":
			v, err = d.strVal()
			a.AppVersion = d.same(v, d.last.AppVersion)
			present |= aAppVersion
		case "app_build":
			v, err = d.strVal()
			a.AppBuild = d.same(v, d.last.AppBuild)
			present |= aAppBuild
		case "app_unique_id":
			v, err = d.strVal()
			a.AppUniqueID = d.same(v, d.last.AppUniqueID)
			present |= aAppUniqueID
		case "platform":
			if v, err = d.strVal(); err == nil {
				var ok bool
				if a.Platform, ok = enumVal(v, platforms, ""); !ok {
					err = enumErr(v, platforms)
				}
			}
			present |= aPlatform
		case "service_sdk_version", "measure_sdk_version":
			if v, err = d.strVal(); err == nil && (string(key) == "service_sdk_version" || !svcSDK) {
				a.SDKVersion = d.same(v, d.last.SDKVersion)
				svcSDK = string(key) == "service_sdk_version"
			}
			present |= aSDKVersion
		case "thread_name":
			v, err = d.strVal()
			a.ThreadName = d.same(v, d.last.ThreadName)
			present |= aThreadName
		case "user_id":
			v, err = d.strVal()
			a.UserID = d.same(v, d.last.UserID)
		case "device_name":
			v, err = d.strVal()
			a.DeviceName = d.same(v, d.last.DeviceName)
		case "device_model":
			v, err = d.strVal()
			a.DeviceModel = d.same(v, d.last.DeviceModel)
		case "device_manufacturer":
			v, err = d.strVal()
			a.DeviceManufacturer = d.same(v, d.last.DeviceManufacturer)
		case "device_type":
			if v, err = d.strVal(); err == nil {
				var ok bool
				if a.DeviceType, ok = enumVal(v, deviceTypes, ""); !ok {
					err = enumErr(v, deviceTypes)
				}
			}
		case "device_is_foldable":
			a.DeviceIsFoldable, err = d.boolVal()
		case "device_is_physical":
			a.DeviceIsPhysical, err = d.boolVal()
		case "device_density_dpi":
			var n uint64
			n, _, err = d.uintVal(math.MaxUint16, true)
			a.DeviceDensityDPI = uint16(n)
		case "device_width_px":
			var n uint64
			n, _, err = d.uintVal(math.MaxUint16, true)
			a.DeviceWidthPx = uint16(n)
		case "device_height_px":
			var n uint64
			n, _, err = d.uintVal(math.MaxUint16, true)
			a.DeviceHeightPx = uint16(n)
		case "device_density":
			var f float64
			f, err = d.floatVal(32)
			a.DeviceDensity = float32(f)
		case "device_locale":
			v, err = d.strVal()
			a.DeviceLocale = d.same(v, d.last.DeviceLocale)
		case "device_low_power_mode":
			a.DeviceLowPowerMode, err = d.boolVal()
		case "device_thermal_throttling_enabled":
			a.DeviceThermalThrottlingEnabled, err = d.boolVal()
		case "os_name":
			if v, err = d.strVal(); err == nil {
				a.OSName = ""
				for _, n := range osNames {
					if bytes.EqualFold(v, []byte(n)) {
						a.OSName = n
					}
				}
				if a.OSName == "" {
					err = enumErr(v, osNames)
				}
			}
		case "os_version":
			v, err = d.strVal()
			a.OSVersion = d.same(v, d.last.OSVersion)
			present |= aOSVersion
		case "os_page_size":
			var n uint64
			n, _, err = d.uintVal(math.MaxUint8, true)
			a.OSPageSize = uint8(n)
		case "network_type":
			if v, err = d.strVal(); err == nil {
				var ok bool
				if a.NetworkType, ok = enumVal(v, networkTypes, ""); !ok {
					err = enumErr(v, networkTypes)
				}
			}
		case "network_provider":
			v, err = d.strVal()
			a.NetworkProvider = d.same(v, d.last.NetworkProvider)
		case "network_generation":
			if v, err = d.strVal(); err == nil {
				var ok bool
				if a.NetworkGeneration, ok = enumVal(v, networkGenerations, ""); !ok {
					err = enumErr(v, networkGenerations)
				}
			}
		case "device_cpu_arch":
			v, err = d.strVal()
			a.DeviceCPUArch = d.same(v, d.last.DeviceCPUArch)
		case "session_start_time":
			a.SessionStartTime, err = d.timeVal()
		default:
			err = d.extraAttribute(rawKey)
		}
		if err != nil {
			return 0, underField(err, string(key))
		}
	}
}

// keepExtra closes the object in d.extraAttr and returns it for Attributes.Extra: the previous
// item's slice when equal (an SDK sends the same patch_id on every item), else a copy in the arena.
func (d *decoder) keepExtra() []byte {
	d.extraAttr = append(d.extraAttr, '}')
	if bytes.Equal(d.extraAttr, d.last.Extra) {
		return d.last.Extra
	}
	return d.keep(d.extraAttr, false)
}

// extraAttribute appends an attribute member that Attributes has no field for to d.extraAttr.
func (d *decoder) extraAttribute(rawKey []byte) error {
	s := &d.s
	s.ws()
	start := s.pos
	if err := s.skip(); err != nil {
		return err
	}
	if len(d.extraAttr) == 0 {
		d.extraAttr = append(d.extraAttr, '{')
	} else {
		d.extraAttr = append(d.extraAttr, ',')
	}
	d.extraAttr = append(d.extraAttr, '"')
	d.extraAttr = append(d.extraAttr, rawKey...)
	d.extraAttr = append(d.extraAttr, '"', ':')
	d.extraAttr = appendCompact(d.extraAttr, s.buf[start:s.pos])
	return nil
}

// attrRule is one required attribute of acceptance rules 4 and 5.
type attrRule struct {
	bit  uint32
	name string
	get  func(*Attributes) string
}

var (
	ruleInstallationID = attrRule{aInstallationID, "installation_id", func(a *Attributes) string { return a.InstallationID }}
	ruleSDKVersion     = attrRule{aSDKVersion, "service_sdk_version", func(a *Attributes) string { return a.SDKVersion }}
	ruleThreadName     = attrRule{aThreadName, "thread_name", func(a *Attributes) string { return a.ThreadName }}
	ruleAppVersion     = attrRule{aAppVersion, "app_version", func(a *Attributes) string { return a.AppVersion }}
	ruleAppBuild       = attrRule{aAppBuild, "app_build", func(a *Attributes) string { return a.AppBuild }}
	ruleAppUniqueID    = attrRule{aAppUniqueID, "app_unique_id", func(a *Attributes) string { return a.AppUniqueID }}
	ruleOSVersion      = attrRule{aOSVersion, "os_version", func(a *Attributes) string { return a.OSVersion }}
	rulePlatform       = attrRule{aPlatform, "platform", func(a *Attributes) string { return a.Platform }}

	// Acceptance rule 4; the multipart reference adds platform.
	eventAttrRules = []attrRule{ruleInstallationID, ruleSDKVersion, ruleThreadName, ruleAppVersion, ruleAppBuild, ruleAppUniqueID}
	// Acceptance rule 5 (thread_name is not among them; real spans omit it).
	spanAttrRules = []attrRule{ruleInstallationID, ruleSDKVersion, ruleAppVersion, ruleOSVersion, ruleAppUniqueID}
)

func (d *decoder) requireAttrs(a *Attributes, present uint32, rules []attrRule) error {
	for _, r := range rules {
		if err := requireAttr(a, present, r); err != nil {
			return err
		}
	}
	if d.multipart {
		return requireAttr(a, present, rulePlatform)
	}
	return nil
}

func requireAttr(a *Attributes, present uint32, r attrRule) error {
	if present&r.bit == 0 {
		rule := "is required"
		if r.bit == aSDKVersion {
			rule += " (measure_sdk_version is accepted too)"
		}
		return fieldErr(r.name, rule)
	}
	// thread_name may be empty: the iOS Flutter SDK sends "" for it (fixtures).
	if r.bit != aThreadName && r.get(a) == "" {
		return fieldErr(r.name, "must not be empty")
	}
	return nil
}

func (d *decoder) requireEventAttrs(a *Attributes, present uint32) error {
	return d.requireAttrs(a, present, eventAttrRules)
}

// ---- user-defined attributes ----

// User-defined attribute limits of the spec.
const (
	MaxUDAttrs     = 100
	MaxUDKeyLen    = 256 // characters; keys are ASCII
	MaxUDStringLen = 256 // characters (Unicode code points) of a string value
)

// udKeyChar marks the characters allowed in a user-defined attribute key.
var udKeyChar = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	return t
}()

// udAttrs reads a user_defined_attribute object (or null) into attributes sorted by key.
// Canonical values: strings as they are, integers in base 10 (a number literal without fraction
// or exponent within int64 is an int64), other numbers as float64 formatted with strconv 'g' -1
// (so 1.0 is the float64 "1", and 9223372036854776000, beyond int64, the float64
// "9.223372036854776e+18"), booleans "true"/"false". See udValue.
func (d *decoder) udAttrs() ([]UDAttr, error) {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		return nil, err
	}
	if s.peek() != '{' {
		return nil, d.typeErr("an object")
	}
	if err := s.openObject(); err != nil {
		return nil, err
	}
	var out []UDAttr
	for i := 0; ; i++ {
		key, esc, done, err := s.member(i)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		if esc {
			d.scratch = unescape(d.scratch[:0], key)
			key = d.scratch
		}
		if i >= MaxUDAttrs {
			return nil, fieldErr("", "must have at most "+strconv.Itoa(MaxUDAttrs)+" attributes")
		}
		if len(key) == 0 || len(key) > MaxUDKeyLen {
			return nil, fieldErr("", "key "+clipValue(key)+" must be 1 to "+strconv.Itoa(MaxUDKeyLen)+" characters long, is "+strconv.Itoa(utf8.RuneCount(key)))
		}
		for _, c := range key {
			if !udKeyChar[c] {
				return nil, fieldErr("", "key "+clipValue(key)+" may hold only letters, digits, '_' and '-'")
			}
		}
		if out == nil {
			out = make([]UDAttr, 0, 8)
		}
		a := UDAttr{Key: d.str(key)}
		if err := d.udValue(&a); err != nil {
			return nil, underField(err, a.Key)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, nil
	}
	sortUD(out)
	for i := 1; i < len(out); i++ {
		if out[i].Key == out[i-1].Key {
			return nil, fieldErr("", "key "+clipValue([]byte(out[i].Key))+" appears more than once")
		}
	}
	return out, nil
}

func (d *decoder) udValue(a *UDAttr) error {
	s := &d.s
	switch c := s.peek(); {
	case c == '"':
		v, err := d.strVal()
		if err != nil {
			return err
		}
		if n := utf8.RuneCount(v); n > MaxUDStringLen {
			return fieldErr("", "string value must be at most "+strconv.Itoa(MaxUDStringLen)+" characters, is "+strconv.Itoa(n))
		}
		a.Type, a.Value = UDString, d.str(v)
	case c == 't' || c == 'f':
		v, err := d.boolVal()
		if err != nil {
			return err
		}
		a.Type, a.Value = UDBool, strconv.FormatBool(v)
	case isNumStart(c):
		raw, isInt, err := s.num()
		if err != nil {
			return err
		}
		// Decision: the literal's form gives the type, as the SDK's language wrote it. An
		// integer literal within int64 is an int64, kept exactly. Any other number is a
		// float64: a fraction or exponent (1.0 stays a float64: Dart and Kotlin write doubles
		// so), and an integer literal beyond int64 (a JavaScript bridge writes Java's
		// Long.MAX_VALUE as 9223372036854776000), which the reference system also reads as a
		// float64 instead of refusing the batch. ud_expression compares int64 and float64
		// values numerically (UDCmp), so such a value is found by either type's operators.
		// Only a number beyond the float64 maximum (1e309, a 400-digit integer) is refused:
		// no SDK can produce one (JavaScript writes Infinity as null).
		if isInt {
			if v, ok := parseInt64(raw); ok {
				if v == 0 {
					a.Type, a.Value = UDInt64, "0" // "-0"
				} else {
					a.Type, a.Value = UDInt64, d.str(raw)
				}
				return nil
			}
		}
		f, perr := strconv.ParseFloat(string(raw), 64)
		if perr != nil || math.IsInf(f, 0) {
			return fieldErr("", "number value must not exceed the float64 maximum, got "+clipValue(raw))
		}
		if f == 0 {
			f = 0 // -0.0 and -1e-400: one canonical zero, as for integers
		}
		a.Type, a.Value = UDFloat64, strconv.FormatFloat(f, 'g', -1, 64)
	default:
		return fieldErr("", "value must be a string, boolean or number, got "+s.kindOf())
	}
	return nil
}

// sortUD is an insertion sort: at most 100 items, usually a handful, and no allocation.
func sortUD(a []UDAttr) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].Key < a[j-1].Key; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// udLegacy reads the legacy user_defined_attributes member: the UD object serialised into a
// JSON string ("{}" when empty). The empty string and null count as absent.
func (d *decoder) udLegacy() ([]UDAttr, error) {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		return nil, err
	}
	if s.peek() == '{' { // an object under the old name is as clear
		return d.udAttrs()
	}
	v, err := d.strVal()
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(v)) == 0 {
		return nil, nil
	}
	inner := append([]byte(nil), v...)
	outer := d.s
	d.s = scanner{buf: inner, where: " of the string"}
	var ud []UDAttr
	if d.s.peek() != '{' {
		err = fieldErr("", "must hold a JSON object, got "+d.s.kindOf())
	} else if ud, err = d.udAttrs(); err == nil {
		err = d.s.end()
	}
	d.s = outer
	return ud, err
}

// ---- spans ----

// span member presence bits
const (
	sName = 1 << iota
	sTraceID
	sSpanID
	sSession
	sStatus
	sStart
	sEnd
	sDuration
	sAttributes
)

var spanRequired = []struct {
	bit  int
	name string
}{
	{sName, "name"}, {sSpanID, "span_id"}, {sTraceID, "trace_id"}, {sSession, "session_id"},
	{sStatus, "status"}, {sStart, "start_time"}, {sEnd, "end_time"}, {sDuration, "duration"},
	{sAttributes, "attributes"},
}

func (d *decoder) span(sp *Span) error {
	s := &d.s
	sp.AppID = d.appID
	if err := s.openObject(); err != nil {
		return err
	}
	var (
		have               int
		attrPresent        uint32
		ud, udLegacy       []UDAttr
		hasUD, hasLegacyUD bool
	)
	for i := 0; ; i++ {
		key, esc, done, err := s.member(i)
		if err != nil {
			return err
		}
		if done {
			break
		}
		if esc {
			key = unescape(nil, key)
		}
		if null, err := s.isNull(); null || err != nil {
			if err != nil {
				return underField(err, string(key))
			}
			continue // parent_id: null is a root span; null elsewhere counts as absent
		}
		var v []byte
		switch string(key) {
		case "name", "span_name": // the multipart reference calls it span_name
			if v, err = d.strVal(); err == nil {
				if len(v) == 0 {
					err = fieldErr("", "must not be empty")
				}
				sp.Name = d.str(v)
				have |= sName
			}
		case "trace_id":
			if v, err = d.strVal(); err == nil {
				if !isLowerHex(v, 32) {
					err = fieldErr("", "must be 32 lowercase hex characters, got "+clipValue(v))
				}
				sp.TraceID = d.str(v)
				have |= sTraceID
			}
		case "span_id":
			if v, err = d.strVal(); err == nil {
				if !isLowerHex(v, 16) {
					err = fieldErr("", "must be 16 lowercase hex characters, got "+clipValue(v))
				}
				sp.SpanID = string(v)
				have |= sSpanID
			}
		case "parent_id":
			// Decision: "" is a root span too, like null and absent.
			if v, err = d.strVal(); err == nil && len(v) > 0 {
				if !isLowerHex(v, 16) {
					err = fieldErr("", "must be null or 16 lowercase hex characters, got "+clipValue(v))
				}
				sp.ParentID = d.str(v)
			}
		case "session_id":
			sp.SessionID, err = d.uuidVal()
			have |= sSession
		case "status":
			var n uint64
			if n, _, err = d.uintVal(math.MaxUint8, false); err == nil && n > 2 {
				err = fieldErr("", "must be 0 (unset), 1 (ok) or 2 (error), got "+strconv.FormatUint(n, 10))
			}
			sp.Status = uint8(n)
			have |= sStatus
		case "start_time":
			sp.StartTime, err = d.timeVal()
			have |= sStart
		case "end_time":
			sp.EndTime, err = d.timeVal()
			have |= sEnd
		case "duration":
			sp.Duration, _, err = d.uintVal(math.MaxUint64, true)
			have |= sDuration
		case "checkpoints":
			sp.Checkpoints, err = d.checkpoints()
		case "attributes":
			sp.Attributes = Attributes{} // a repeated member replaces, never merges
			attrPresent, err = d.attributes(&sp.Attributes)
			have |= sAttributes
		case "user_defined_attribute":
			ud, err = d.udAttrs()
			hasUD = ud != nil
		case "user_defined_attributes":
			udLegacy, err = d.udLegacy()
			hasLegacyUD = udLegacy != nil
		default:
			err = s.skip()
		}
		if err != nil {
			return underField(err, string(key))
		}
	}
	for _, r := range spanRequired {
		if have&r.bit == 0 {
			return fieldErr(r.name, "is required")
		}
	}
	if sp.EndTime < sp.StartTime {
		return fieldErr("end_time", "must not be before start_time")
	}
	if err := d.requireAttrs(&sp.Attributes, attrPresent, spanAttrRules); err != nil {
		return underField(err, "attributes")
	}
	switch {
	case hasUD:
		sp.UserDefined = ud
	case hasLegacyUD:
		sp.UserDefined = udLegacy
	}
	return nil
}

func isLowerHex(v []byte, n int) bool {
	if len(v) != n {
		return false
	}
	for _, c := range v {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (d *decoder) checkpoints() ([]Checkpoint, error) {
	s := &d.s
	if s.peek() != '[' {
		return nil, d.typeErr("an array")
	}
	if err := s.openArray(); err != nil {
		return nil, err
	}
	var out []Checkpoint
	for i := 0; ; i++ {
		done, err := s.elem(i)
		if err != nil {
			return nil, err
		}
		if done {
			return out, nil
		}
		var c Checkpoint
		if err := d.checkpoint(&c); err != nil {
			return nil, underIndex(err, i)
		}
		out = append(out, c)
	}
}

func (d *decoder) checkpoint(c *Checkpoint) error {
	s := &d.s
	if s.peek() != '{' {
		return d.typeErr("an object")
	}
	if err := s.openObject(); err != nil {
		return err
	}
	var hasName, hasTS bool
	for i := 0; ; i++ {
		key, esc, done, err := s.member(i)
		if err != nil {
			return err
		}
		if done {
			break
		}
		if esc {
			key = unescape(nil, key)
		}
		switch string(key) {
		case "name":
			var v []byte
			if v, err = d.strVal(); err == nil {
				c.Name, hasName = d.str(v), len(v) > 0
			}
		case "timestamp":
			c.Timestamp, err = d.timeVal()
			hasTS = true
		default:
			err = s.skip()
		}
		if err != nil {
			return underField(err, string(key))
		}
	}
	if !hasName {
		return fieldErr("name", "is required and must not be empty")
	}
	if !hasTS {
		return fieldErr("timestamp", "is required")
	}
	return nil
}

// ---- kind members ----

// object checks one JSON object against sch (see validate_kinds.go).
func (d *decoder) object(sch *schema) error {
	s := &d.s
	if s.peek() != '{' {
		return d.typeErr("an object")
	}
	if err := s.openObject(); err != nil {
		return err
	}
	var present, null uint64
	for i := 0; ; i++ {
		key, esc, done, err := s.member(i)
		if err != nil {
			return err
		}
		if done {
			break
		}
		if esc {
			d.scratch = unescape(d.scratch[:0], key)
			key = d.scratch
		}
		fi := sch.find(key)
		if fi < 0 {
			if err := s.skip(); err != nil {
				return underField(err, string(key))
			}
			continue
		}
		f := &sch.fields[fi]
		if isNull, err := s.isNull(); isNull || err != nil {
			if err != nil {
				return underField(err, f.name)
			}
			null |= 1 << fi
			continue
		}
		if err := d.value(f); err != nil {
			return underField(err, f.name)
		}
		present |= 1 << fi
	}
	for fi := range sch.fields {
		if f := &sch.fields[fi]; f.req && present&(1<<fi) == 0 {
			if null&(1<<fi) != 0 {
				return fieldErr(f.name, "is required and must not be null")
			}
			return fieldErr(f.name, "is required")
		}
	}
	if sch.check != nil {
		if field, rule := sch.check(present); rule != "" {
			return fieldErr(field, rule)
		}
	}
	return nil
}

// kindUint reads an unsigned quantity of a kind member (fractions rounded) and records a patch
// when it was not written as the plain integer.
func (d *decoder) kindUint(max uint64) error {
	d.s.ws()
	start := d.s.pos
	v, canon, err := d.uintVal(max, true)
	if err == nil && !canon {
		d.patchNum(start, v, false)
	}
	return err
}

// value checks one non-null member value against its field.
func (d *decoder) value(f *field) error {
	s := &d.s
	switch f.t {
	case fString:
		max := MaxStringBytes
		if f.long {
			max = MaxLongTextBytes
		}
		v, err := d.strValMax(max)
		if err != nil {
			return err
		}
		if f.req && len(v) == 0 {
			return fieldErr("", "must not be empty")
		}
		if f.enum != nil {
			if _, ok := enumVal(v, f.enum, f.prefix); !ok {
				return enumErr(v, f.enum)
			}
		}
		return nil
	case fBool:
		_, err := d.boolVal()
		return err
	case fUint64:
		return d.kindUint(math.MaxUint64)
	case fUint32:
		return d.kindUint(math.MaxUint32)
	case fUint16:
		return d.kindUint(math.MaxUint16)
	case fUint8:
		return d.kindUint(math.MaxUint8)
	case fInt:
		s.ws()
		start := s.pos
		v, canon, err := d.intVal()
		if err == nil && !canon {
			if v < 0 {
				d.patchNum(start, uint64(-v), true) // -MinInt64 wraps to 1<<63: right as a uint64
			} else {
				d.patchNum(start, uint64(v), false)
			}
		}
		return err
	case fNumber:
		if !isNumStart(s.peek()) {
			return d.typeErr("a number")
		}
		_, _, err := s.num()
		return err
	case fFloat32:
		_, err := d.floatVal(32)
		return err
	case fFloat64:
		_, err := d.floatVal(64)
		return err
	case fObject:
		if s.peek() != '{' {
			return d.typeErr("an object")
		}
		start := s.pos
		var err error
		if f.sub != nil {
			err = d.object(f.sub)
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
		if f.maxBytes > 0 {
			if n := compactLen(s.buf[start:s.pos]); n > f.maxBytes {
				return fieldErr("", "must be at most "+strconv.Itoa(f.maxBytes)+" bytes as compact JSON, is "+strconv.Itoa(n))
			}
		}
		return nil
	case fArray:
		if s.peek() != '[' {
			return d.typeErr("an array")
		}
		if err := s.openArray(); err != nil {
			return err
		}
		for i := 0; ; i++ {
			done, err := s.elem(i)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
			if f.sub != nil {
				err = d.object(f.sub)
			} else {
				err = s.skip()
			}
			if err != nil {
				return underIndex(err, i)
			}
		}
	case fStrMap:
		if s.peek() != '{' {
			return d.typeErr("an object")
		}
		if err := s.openObject(); err != nil {
			return err
		}
		for i := 0; ; i++ {
			key, _, done, err := s.member(i)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
			if null, err := s.isNull(); !null {
				if err == nil {
					_, err = d.strVal()
				}
				if err != nil {
					return underField(err, string(key))
				}
			}
		}
	case fStrOrBool:
		if c := s.peek(); c == 't' || c == 'f' {
			_, err := d.boolVal()
			return err
		}
		if s.peek() != '"' {
			return d.typeErr("a string or boolean")
		}
		_, _, err := s.str()
		return err
	case fStrOrNum:
		if isNumStart(s.peek()) {
			_, _, err := s.num()
			return err
		}
		if s.peek() != '"' {
			return d.typeErr("a string or number")
		}
		_, _, err := s.str()
		return err
	}
	return s.skip()
}
