package badgerevents

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// Rows are encoded in a hand-written binary layout: fixed-size ids, uvarint lengths before
// strings, zig-zag varints for times. It is several times faster than JSON or protobuf
// reflection, and decoding copies the value into one string once so every string field is a
// substring of it (one allocation for all strings of a row). The identity of a row (app, id,
// time) lives in its key and is not repeated in the value.
//
// The first byte is the layout version; a later layout adds a version and keeps decoding the old.
// Layout 2 appends to layout 1's fields: Attributes.Extra after SessionStartTime, and each
// attachment's Size (zig-zag varint, so SizeUnknown is one byte) and Path after its BlobKey.
// Layout 1 rows read as written before those fields existed: Size SizeUnknown, Path "", Extra nil.
// Layout 3 (events only; spans stay layout 2) appends the event's derived Facts after Payload:
// a byte of flags saying which facts are set, then only those (an event without facts costs one
// byte). Layout 1 and 2 rows read with zero Facts.

const (
	layoutV1    = 1
	layoutV2    = 2
	layoutV3    = 3
	eventLayout = layoutV3 // what appendEvent writes
	spanLayout  = layoutV2 // what appendSpan writes
)

// Flags of the facts byte of layout 3: the bools, and which of the other facts follow.
const (
	factFatal = 1 << iota
	factForeground
	factGroup  // GroupID follows
	factScreen // Screen follows
	factLaunch // LaunchKind and LaunchMs (8 bytes, little-endian float64 bits) follow
	// factIssue: the Issue display follows (type, message, method, file, zig-zag line,
	// severity). Added within layout 3: rows written before it never have the bit.
	factIssue
	// factHTTP: the request of an http event follows (domain, path, method, uvarint status,
	// zig-zag latency and elapsed ms). Added within layout 3 like factIssue.
	factHTTP
)

var errCorrupt = errors.New("badgerevents: corrupt row")

// Attribute bools, packed into one byte.
const (
	flagFoldable = 1 << iota
	flagPhysical
	flagLowPower
	flagThermal
)

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendAttrs(b []byte, a *model.Attributes) []byte {
	var f byte
	if a.DeviceIsFoldable {
		f |= flagFoldable
	}
	if a.DeviceIsPhysical {
		f |= flagPhysical
	}
	if a.DeviceLowPowerMode {
		f |= flagLowPower
	}
	if a.DeviceThermalThrottlingEnabled {
		f |= flagThermal
	}
	b = append(b, f)
	for _, s := range [...]string{a.InstallationID, a.AppVersion, a.AppBuild, a.AppUniqueID,
		a.Platform, a.SDKVersion, a.ThreadName, a.UserID, a.DeviceName, a.DeviceModel,
		a.DeviceManufacturer, a.DeviceType, a.DeviceLocale, a.OSName, a.OSVersion,
		a.NetworkType, a.NetworkProvider, a.NetworkGeneration, a.DeviceCPUArch} {
		b = appendStr(b, s)
	}
	b = binary.AppendUvarint(b, uint64(a.DeviceDensityDPI))
	b = binary.AppendUvarint(b, uint64(a.DeviceWidthPx))
	b = binary.AppendUvarint(b, uint64(a.DeviceHeightPx))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(a.DeviceDensity))
	b = append(b, a.OSPageSize)
	b = binary.AppendVarint(b, a.SessionStartTime)
	return appendBytes(b, a.Extra)
}

func appendUD(b []byte, ud []model.UDAttr) []byte {
	b = binary.AppendUvarint(b, uint64(len(ud)))
	for i := range ud {
		b = appendStr(b, ud[i].Key)
		b = append(b, byte(ud[i].Type))
		b = appendStr(b, ud[i].Value)
	}
	return b
}

// appendEvent encodes everything of e but AppID, ID and Timestamp (they are in the key).
func appendEvent(b []byte, e *model.Event) []byte {
	var f byte
	if e.UserTriggered {
		f = 1
	}
	b = append(b, eventLayout, f)
	b = append(b, e.SessionID[:]...)
	b = appendStr(b, e.Type)
	b = appendAttrs(b, &e.Attribute)
	b = appendUD(b, e.UserDefined)
	b = binary.AppendUvarint(b, uint64(len(e.Attachments)))
	for i := range e.Attachments {
		a := &e.Attachments[i]
		b = append(b, a.ID[:]...)
		b = appendStr(b, a.Name)
		b = appendStr(b, a.Type)
		b = appendStr(b, a.Extension)
		b = appendStr(b, a.Timestamp)
		b = appendStr(b, a.BlobKey)
		b = binary.AppendVarint(b, a.Size)
		b = appendStr(b, a.Path)
	}
	b = appendBytes(b, e.Payload)
	return appendFacts(b, &e.Facts)
}

func appendFacts(b []byte, x *model.EventFacts) []byte {
	var f byte
	if x.Fatal {
		f |= factFatal
	}
	if x.Foreground {
		f |= factForeground
	}
	if x.GroupID != "" {
		f |= factGroup
	}
	if x.Screen != "" {
		f |= factScreen
	}
	if x.LaunchKind != "" || x.LaunchMs != 0 {
		f |= factLaunch
	}
	if x.Issue != (model.IssueDisplay{}) {
		f |= factIssue
	}
	if x.HTTP != (model.HTTPFacts{}) {
		f |= factHTTP
	}
	b = append(b, f)
	if f&factGroup != 0 {
		b = appendStr(b, x.GroupID)
	}
	if f&factScreen != 0 {
		b = appendStr(b, x.Screen)
	}
	if f&factLaunch != 0 {
		b = appendStr(b, x.LaunchKind)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x.LaunchMs))
	}
	if f&factIssue != 0 {
		d := &x.Issue
		b = appendStr(b, d.Type)
		b = appendStr(b, d.Message)
		b = appendStr(b, d.MethodName)
		b = appendStr(b, d.FileName)
		b = binary.AppendVarint(b, int64(d.LineNumber))
		b = appendStr(b, d.Severity)
	}
	if f&factHTTP != 0 {
		h := &x.HTTP
		b = appendStr(b, h.Domain)
		b = appendStr(b, h.Path)
		b = appendStr(b, h.Method)
		b = binary.AppendUvarint(b, uint64(h.Status))
		b = binary.AppendVarint(b, h.LatencyMs)
		b = binary.AppendVarint(b, h.ElapsedMs)
	}
	return b
}

// appendSpan encodes everything of s but AppID, SpanID and StartTime (they are in the key).
func appendSpan(b []byte, s *model.Span) []byte {
	b = append(b, spanLayout)
	b = appendStr(b, s.TraceID)
	b = appendStr(b, s.ParentID)
	b = append(b, s.SessionID[:]...)
	b = appendStr(b, s.Name)
	b = append(b, s.Status)
	b = binary.AppendVarint(b, s.EndTime)
	b = binary.AppendUvarint(b, s.Duration)
	b = binary.AppendUvarint(b, uint64(len(s.Checkpoints)))
	for i := range s.Checkpoints {
		b = appendStr(b, s.Checkpoints[i].Name)
		b = binary.AppendVarint(b, s.Checkpoints[i].Timestamp)
	}
	b = appendAttrs(b, &s.Attributes)
	return appendUD(b, s.UserDefined)
}

// reader decodes from one string; the first error sticks and later reads return zero values.
type reader struct {
	s   string
	i   int
	err error
	v   byte // layout version, read first
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errCorrupt
	}
	r.i = len(r.s)
}

func (r *reader) byte() byte {
	if r.i >= len(r.s) {
		r.fail()
		return 0
	}
	c := r.s[r.i]
	r.i++
	return c
}

func (r *reader) uvarint() uint64 {
	var x uint64
	var shift uint
	for n := 0; n < binary.MaxVarintLen64; n++ {
		if r.i >= len(r.s) {
			break
		}
		c := r.s[r.i]
		r.i++
		if c < 0x80 {
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	r.fail()
	return 0
}

func (r *reader) varint() int64 {
	u := r.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

// count reads a length and rejects one that cannot fit in what is left (min bytes per item).
func (r *reader) count(min int) int {
	n := r.uvarint()
	if n > uint64(len(r.s)-r.i)/uint64(min) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *reader) str() string {
	n := r.count(1)
	s := r.s[r.i : r.i+n]
	r.i += n
	return s
}

func (r *reader) uuid() (u uuid.UUID) {
	if len(r.s)-r.i < 16 {
		r.fail()
		return u
	}
	copy(u[:], r.s[r.i:r.i+16])
	r.i += 16
	return u
}

func (r *reader) u16() uint16 {
	v := r.uvarint()
	if v > math.MaxUint16 {
		r.fail()
	}
	return uint16(v)
}

func (r *reader) f32() float32 {
	if len(r.s)-r.i < 4 {
		r.fail()
		return 0
	}
	v := uint32(r.s[r.i]) | uint32(r.s[r.i+1])<<8 | uint32(r.s[r.i+2])<<16 | uint32(r.s[r.i+3])<<24
	r.i += 4
	return math.Float32frombits(v)
}

func (r *reader) f64() float64 {
	if len(r.s)-r.i < 8 {
		r.fail()
		return 0
	}
	var v uint64
	for k := 7; k >= 0; k-- {
		v = v<<8 | uint64(r.s[r.i+k])
	}
	r.i += 8
	return math.Float64frombits(v)
}

func (r *reader) facts(x *model.EventFacts) {
	f := r.byte()
	if f&^(factFatal|factForeground|factGroup|factScreen|factLaunch|factIssue|factHTTP) != 0 {
		r.fail()
		return
	}
	x.Fatal, x.Foreground = f&factFatal != 0, f&factForeground != 0
	if f&factGroup != 0 {
		x.GroupID = r.str()
	}
	if f&factScreen != 0 {
		x.Screen = r.str()
	}
	if f&factLaunch != 0 {
		x.LaunchKind = r.str()
		x.LaunchMs = r.f64()
	}
	if f&factIssue != 0 {
		d := &x.Issue
		d.Type, d.Message, d.MethodName, d.FileName = r.str(), r.str(), r.str(), r.str()
		d.LineNumber = int32(r.varint())
		d.Severity = r.str()
	}
	if f&factHTTP != 0 {
		h := &x.HTTP
		h.Domain, h.Path, h.Method = r.str(), r.str(), r.str()
		h.Status = uint16(r.uvarint())
		h.LatencyMs, h.ElapsedMs = r.varint(), r.varint()
	}
}

func (r *reader) attrs(a *model.Attributes) {
	f := r.byte()
	a.DeviceIsFoldable = f&flagFoldable != 0
	a.DeviceIsPhysical = f&flagPhysical != 0
	a.DeviceLowPowerMode = f&flagLowPower != 0
	a.DeviceThermalThrottlingEnabled = f&flagThermal != 0
	for _, p := range [...]*string{&a.InstallationID, &a.AppVersion, &a.AppBuild, &a.AppUniqueID,
		&a.Platform, &a.SDKVersion, &a.ThreadName, &a.UserID, &a.DeviceName, &a.DeviceModel,
		&a.DeviceManufacturer, &a.DeviceType, &a.DeviceLocale, &a.OSName, &a.OSVersion,
		&a.NetworkType, &a.NetworkProvider, &a.NetworkGeneration, &a.DeviceCPUArch} {
		*p = r.str()
	}
	a.DeviceDensityDPI = r.u16()
	a.DeviceWidthPx = r.u16()
	a.DeviceHeightPx = r.u16()
	a.DeviceDensity = r.f32()
	a.OSPageSize = r.byte()
	a.SessionStartTime = r.varint()
	if r.v >= layoutV2 {
		if x := r.str(); x != "" {
			a.Extra = []byte(x)
		}
	}
}

func (r *reader) ud() []model.UDAttr {
	n := r.count(3)
	if n == 0 {
		return nil
	}
	ud := make([]model.UDAttr, n)
	for i := range ud {
		ud[i].Key = r.str()
		ud[i].Type = model.UDType(r.byte())
		ud[i].Value = r.str()
	}
	return ud
}

func (r *reader) version(max byte) {
	r.v = r.byte()
	if (r.v < layoutV1 || r.v > max) && r.err == nil {
		r.err = fmt.Errorf("badgerevents: unknown row layout %d", r.v)
	}
}

// decodeEvent fills e (whose identity the caller took from the key) from val.
func decodeEvent(val []byte, e *model.Event) error {
	r := reader{s: string(val)}
	r.version(eventLayout)
	e.UserTriggered = r.byte()&1 != 0
	e.SessionID = r.uuid()
	e.Type = r.str()
	r.attrs(&e.Attribute)
	e.UserDefined = r.ud()
	minAtt := 16 + 5 // id and five empty strings
	if r.v >= layoutV2 {
		minAtt += 2 // size and path
	}
	if n := r.count(minAtt); n > 0 {
		e.Attachments = make([]model.Attachment, n)
		for i := range e.Attachments {
			a := &e.Attachments[i]
			a.ID = r.uuid()
			a.Name, a.Type, a.Extension, a.Timestamp, a.BlobKey = r.str(), r.str(), r.str(), r.str(), r.str()
			a.Size = model.SizeUnknown
			if r.v >= layoutV2 {
				a.Size, a.Path = r.varint(), r.str()
			}
		}
	}
	if p := r.str(); p != "" {
		e.Payload = []byte(p)
	}
	if r.v >= layoutV3 {
		r.facts(&e.Facts)
	}
	if r.err == nil && r.i != len(r.s) {
		r.err = errCorrupt
	}
	return r.err
}

func decodeSpan(val []byte, s *model.Span) error {
	r := reader{s: string(val)}
	r.version(spanLayout)
	s.TraceID = r.str()
	s.ParentID = r.str()
	s.SessionID = r.uuid()
	s.Name = r.str()
	s.Status = r.byte()
	s.EndTime = r.varint()
	s.Duration = r.uvarint()
	if n := r.count(2); n > 0 {
		s.Checkpoints = make([]model.Checkpoint, n)
		for i := range s.Checkpoints {
			s.Checkpoints[i].Name = r.str()
			s.Checkpoints[i].Timestamp = r.varint()
		}
	}
	r.attrs(&s.Attributes)
	s.UserDefined = r.ud()
	if r.err == nil && r.i != len(r.s) {
		r.err = errCorrupt
	}
	return r.err
}

// eventSession reads the session id of an encoded event without decoding the rest: it follows
// the layout byte and the flags byte in every layout.
func eventSession(val []byte) (uuid.UUID, error) {
	var u uuid.UUID
	if len(val) < 2+16 || val[0] < layoutV1 || val[0] > eventLayout {
		return u, errCorrupt
	}
	copy(u[:], val[2:18])
	return u, nil
}

// spanSession reads the session id of an encoded span: it follows the layout byte, the trace
// id and the parent id in every layout.
func spanSession(val []byte) (uuid.UUID, error) {
	var u uuid.UUID
	if len(val) < 1 || val[0] < layoutV1 || val[0] > spanLayout {
		return u, errCorrupt
	}
	i := 1
	for range 2 { // trace id, parent id
		n, w := binary.Uvarint(val[i:])
		if w <= 0 || n > uint64(len(val)-i-w) {
			return u, errCorrupt
		}
		i += w + int(n)
	}
	if len(val)-i < 16 {
		return u, errCorrupt
	}
	copy(u[:], val[i:i+16])
	return u, nil
}
