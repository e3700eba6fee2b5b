package model

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"strconv"
)

// Frameworks of an exception payload, as GroupOf reports them.
const (
	FrameworkJVM   = "jvm"
	FrameworkApple = "apple"
	FrameworkDart  = "dart"
	FrameworkJS    = "js"
)

// Group is the identity and display of a crash, handled-exception or ANR group (docs/architecture.md, "Algorithms").
// Events with the same ID belong to the same group; the display fields are those of one event
// (the app actor keeps the latest event's).
type Group struct {
	// ID is the lowercase hex MD5 of the fingerprint: Type, then ":"+Message for js, then
	// ":"+MethodName and ":"+FileName when non-empty. Line numbers never count.
	ID         string
	Kind       string // the event type: "exception" or "anr"
	Framework  string // jvm, apple, dart or js (ANRs are always jvm)
	Type       string
	Message    string
	MethodName string
	FileName   string
	LineNumber int
	// Fatal is the crash rule of docs/architecture.md ("Algorithms") (IsFatal); always false for an ANR.
	Fatal bool
	// Severity is exception.severity as sent, else "fatal" or "handled" from the legacy handled
	// flag; empty for an ANR.
	Severity string
}

// Title is the issue title of journey nodes, "type@file_name" ("type" when there is no file).
func (g *Group) Title() string {
	if g.FileName == "" {
		return g.Type
	}
	return g.Type + "@" + g.FileName
}

// GroupOf computes the group of an exception or anr event from its Payload. ok is false for any
// other kind and for a payload that is not a JSON object. The framework rules are those of
// docs/architecture.md ("Algorithms"):
//
//   - jvm and every ANR: the innermost exception (last of exceptions) and its first frame;
//   - apple: type is exceptions[0].signal, the frame is the first in_app frame across all
//     exceptions, else the first frame of exceptions[0]; message is exceptions[0].message;
//   - dart: exceptions[0] and its first frame;
//   - js: exceptions[0] and its first frame, with ":message" after the type when non-empty.
//
// A missing framework is inferred as the reference does: apple when exceptions[0] has a
// signal (or there are no exceptions but an Apple error object), else jvm. "ios", which the iOS
// SDK's own test inputs send, means apple. An Apple error without exceptions is grouped by its
// error code. The display fields come from the same exception and frame as the fingerprint.
//
// Only the members it needs are decoded; threads and binary images are skipped without
// allocation, so it is cheap enough to run on every crash at ingest.
func GroupOf(e *Event) (Group, bool) {
	var anr bool
	switch e.Type {
	case "exception":
	case "anr":
		anr = true
	default:
		return Group{}, false
	}
	var x rawException
	if err := x.parse(e.Payload); err != nil {
		return Group{}, false
	}
	g := Group{Kind: e.Type}
	var u *rawUnit
	var f *rawFrame
	fw := "jvm"
	if !anr {
		fw = x.framework()
	}
	switch fw {
	case FrameworkApple:
		if x.n > 0 {
			u = &x.first
			f = &x.first.frame
			if x.inApp.ok {
				f = &x.inApp
			}
			g.Type = u.signal.String()
		} else {
			g.Type = x.errCode.String()
		}
	case FrameworkDart, FrameworkJS:
		if x.n > 0 {
			u = &x.first
			f = &u.frame
			g.Type = u.typ.String()
		}
	default:
		if x.n > 0 {
			u = &x.last
			f = &u.frame
			g.Type = u.typ.String()
		}
	}
	g.Framework = fw
	if u != nil {
		g.Message = u.msg.String()
	}
	if f != nil && f.ok {
		g.MethodName = f.method.String()
		g.FileName = f.file.String()
		g.LineNumber = f.line
	}
	g.ID = fingerprint(g.Type, g.Message, g.MethodName, g.FileName, fw == FrameworkJS)
	if !anr {
		g.Fatal = x.fatal()
		g.Severity = x.severityName()
	}
	return g, true
}

// fingerprint is the lowercase hex MD5 of the group key of docs/architecture.md ("Algorithms").
func fingerprint(typ, msg, method, file string, withMsg bool) string {
	var stack [256]byte
	b := append(stack[:0], typ...)
	if withMsg && msg != "" {
		b = append(append(b, ':'), msg...)
	}
	if method != "" {
		b = append(append(b, ':'), method...)
	}
	if file != "" {
		b = append(append(b, ':'), file...)
	}
	sum := md5.Sum(b)
	var out [32]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// rawStr is a JSON string value as it appears in the payload: raw content between the quotes,
// decoded only when used.
type rawStr struct {
	b   []byte
	esc bool
}

// String decodes the value; an absent or null value is "".
func (r rawStr) String() string {
	if !r.esc {
		return string(r.b)
	}
	return string(unescape(make([]byte, 0, len(r.b)), r.b))
}

// readStr reads a string value, or consumes a null (empty) or any other value (ignored).
func readStr(s *scanner) (rawStr, error) {
	switch s.peek() {
	case '"':
		b, esc, err := s.str()
		return rawStr{b: b, esc: esc}, err
	default:
		return rawStr{}, s.skip()
	}
}

// readBool reads a boolean; present is false for null or any other kind of value.
func readBool(s *scanner) (v, present bool, err error) {
	switch s.peek() {
	case 't':
		return true, true, s.literal("true")
	case 'f':
		return false, true, s.literal("false")
	}
	return false, false, s.skip()
}

// readInt reads a number as an int (a fraction is truncated); 0 for null or a non-number.
func readInt(s *scanner) (int, error) {
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return 0, s.skip()
	}
	raw, isInt, err := s.num()
	if err != nil {
		return 0, err
	}
	if isInt {
		if v, err := strconv.Atoi(string(raw)); err == nil {
			return v, nil
		}
	}
	f, _ := strconv.ParseFloat(string(raw), 64)
	return int(f), nil
}

// eachMember calls fn for every member of the JSON object in buf, with the scanner at the
// member's value. fn may read the value or leave it: an unread value is skipped. Keys holding
// escapes are passed raw (no member GroupOf, LaunchDuration or Describe reads has one).
func eachMember(buf []byte, fn func(key []byte, s *scanner) error) error {
	s := scanner{buf: buf}
	return s.object(fn)
}

// object walks the object that comes next, as eachMember does.
func (s *scanner) object(fn func(key []byte, s *scanner) error) error {
	if err := s.openObject(); err != nil {
		return err
	}
	for i := 0; ; i++ {
		key, _, done, err := s.member(i)
		if err != nil || done {
			return err
		}
		s.ws()
		pos := s.pos
		if err := fn(key, s); err != nil {
			return err
		}
		if s.pos == pos {
			if err := s.skipFast(); err != nil {
				return err
			}
		}
	}
}

// skipFast skips the next value. Objects and arrays (thread dumps, binary images: most of a
// crash payload) are skipped by matching brackets outside strings, without validating what is
// inside, several times faster than skip; payloads were validated at ingest.
func (s *scanner) skipFast() error {
	if c := s.peek(); c != '{' && c != '[' {
		return s.skip()
	}
	b := s.buf
	depth := 0
	for i := s.pos; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.pos = i + 1
				return nil
			}
		case '"':
			for { // to the closing quote: one not preceded by an odd number of backslashes
				j := bytes.IndexByte(b[i+1:], '"')
				if j < 0 {
					s.pos = len(b)
					return s.syntax("unterminated string")
				}
				i += j + 1
				bs := 0
				for k := i - 1; b[k] == '\\'; k-- { // stops at the opening quote at the latest
					bs++
				}
				if bs%2 == 0 {
					break
				}
			}
		}
	}
	s.pos = len(b)
	return s.syntax("unexpected end of input inside an object or array")
}

// array walks the array that comes next, calling fn with the scanner at each element; an
// unread element is skipped.
func (s *scanner) array(fn func(i int, s *scanner) error) error {
	if s.peek() != '[' {
		return s.skip() // null or a wrong kind: nothing to walk
	}
	if err := s.openArray(); err != nil {
		return err
	}
	for i := 0; ; i++ {
		done, err := s.elem(i)
		if err != nil || done {
			return err
		}
		s.ws()
		pos := s.pos
		if err := fn(i, s); err != nil {
			return err
		}
		if s.pos == pos {
			if err := s.skipFast(); err != nil {
				return err
			}
		}
	}
}

type rawFrame struct {
	method, file rawStr
	line         int
	ok           bool // the frame exists
}

type rawUnit struct {
	typ, msg, signal rawStr
	frame            rawFrame // the first frame
}

// rawException holds what grouping needs of an exception or anr payload.
type rawException struct {
	fw          rawStr
	severity    rawStr
	hasSeverity bool
	handled     bool
	hasHandled  bool
	errCode     rawStr
	hasError    bool
	n           int      // number of exception units
	first, last rawUnit  // exceptions[0] and exceptions[n-1]
	inApp       rawFrame // the first in_app frame across all units
}

func (x *rawException) parse(buf []byte) error {
	return eachMember(buf, func(key []byte, s *scanner) error {
		var err error
		switch string(key) {
		case "framework":
			x.fw, err = readStr(s)
		case "severity":
			if s.peek() == '"' {
				x.hasSeverity = true
			}
			x.severity, err = readStr(s)
		case "handled":
			x.handled, x.hasHandled, err = readBool(s)
		case "error":
			if s.peek() == '{' {
				err = s.object(func(k []byte, s *scanner) error {
					switch string(k) {
					case "code":
						var e error
						x.errCode, e = readStr(s)
						x.hasError = x.hasError || len(x.errCode.b) > 0
						return e
					case "numcode":
						x.hasError = x.hasError || s.peek() != 'n'
					case "meta":
						x.hasError = x.hasError || s.peek() == '{'
					}
					return nil
				})
			}
		case "exceptions":
			err = s.array(func(i int, s *scanner) error {
				if s.peek() != '{' {
					return nil
				}
				var u rawUnit
				if err := x.unit(s, &u); err != nil {
					return err
				}
				if x.n == 0 {
					x.first = u
				}
				x.last = u
				x.n++
				return nil
			})
		}
		return err
	})
}

func (x *rawException) unit(s *scanner, u *rawUnit) error {
	return s.object(func(key []byte, s *scanner) error {
		var err error
		switch string(key) {
		case "type":
			u.typ, err = readStr(s)
		case "message":
			u.msg, err = readStr(s)
		case "signal":
			u.signal, err = readStr(s)
		case "frames":
			err = s.array(func(i int, s *scanner) error {
				if s.peek() != '{' {
					return nil
				}
				var f rawFrame
				var inApp bool
				err := s.object(func(key []byte, s *scanner) error {
					var err error
					switch string(key) {
					case "method_name":
						f.method, err = readStr(s)
					case "file_name":
						f.file, err = readStr(s)
					case "line_num":
						f.line, err = readInt(s)
					case "in_app":
						inApp, _, err = readBool(s)
					}
					return err
				})
				f.ok = true
				if i == 0 {
					u.frame = f
				}
				if inApp && !x.inApp.ok {
					x.inApp = f
				}
				return err
			})
		}
		return err
	})
}

// framework normalises exception.framework, inferring a missing one as described at GroupOf.
func (x *rawException) framework() string {
	switch string(x.fw.b) {
	case "dart":
		return FrameworkDart
	case "js":
		return FrameworkJS
	case "apple", "ios":
		return FrameworkApple
	case "":
		if x.n > 0 && len(x.first.signal.b) > 0 || x.n == 0 && x.hasError {
			return FrameworkApple
		}
	}
	return FrameworkJVM
}

func (x *rawException) fatal() bool {
	if x.hasSeverity {
		return string(x.severity.b) == "fatal"
	}
	return x.hasHandled && !x.handled
}

func (x *rawException) severityName() string {
	switch {
	case x.hasSeverity:
		return x.severity.String()
	case !x.hasHandled:
		return ""
	case x.handled:
		return "handled"
	}
	return "fatal"
}
