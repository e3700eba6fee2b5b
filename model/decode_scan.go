package model

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"unicode/utf8"
)

// scanner is a strict RFC 8259 JSON reader over one buffer. The ingest decoder walks SDK bodies
// with it in a single pass: it validates syntax, hands out raw tokens without copying and lets
// the caller check each member against the spec as it goes, so nothing is decoded twice and no
// intermediate maps or interfaces are built. Every error it returns is a *ValidationError whose
// Rule names the byte offset; callers prefix Field with the JSON path on the way out.
type scanner struct {
	buf   []byte
	pos   int
	depth int
	sawWS bool   // set by ws whenever it skips something; lets payload copies skip compaction
	where string // names buf in syntax errors when it is not the request body
}

// maxDepth bounds nesting so that hostile input cannot grow the stack without limit; real
// payloads (exception frames inside threads inside an event) stay below 10.
const maxDepth = 256

func (s *scanner) syntax(msg string) *ValidationError {
	return &ValidationError{Rule: "malformed JSON at byte " + strconv.Itoa(s.pos) + s.where + ": " + msg}
}

func (s *scanner) unexpected(what string) *ValidationError {
	if s.pos >= len(s.buf) {
		return s.syntax("unexpected end of input, expected " + what)
	}
	return s.syntax("unexpected " + quoteByte(s.buf[s.pos]) + ", expected " + what)
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return "'" + string(rune(c)) + "'"
	}
	return "byte 0x" + strconv.FormatUint(uint64(c), 16)
}

// ws skips insignificant whitespace.
func (s *scanner) ws() {
	if s.pos < len(s.buf) && s.buf[s.pos] > ' ' {
		return
	}
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\n', '\r', '\t':
			s.pos++
			s.sawWS = true
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end of input.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos >= len(s.buf) {
		return 0
	}
	return s.buf[s.pos]
}

// end checks that only whitespace follows the top-level value.
func (s *scanner) end() error {
	s.ws()
	if s.pos != len(s.buf) {
		return s.syntax("unexpected data after the top-level value")
	}
	return nil
}

// isNull consumes a null literal if one comes next.
func (s *scanner) isNull() (bool, error) {
	if s.peek() != 'n' {
		return false, nil
	}
	return true, s.literal("null")
}

func (s *scanner) literal(lit string) error {
	if len(s.buf)-s.pos < len(lit) || string(s.buf[s.pos:s.pos+len(lit)]) != lit {
		return s.unexpected("a JSON value")
	}
	s.pos += len(lit)
	return nil
}

// openObject consumes '{'.
func (s *scanner) openObject() error {
	if s.peek() != '{' {
		return s.unexpected("'{'")
	}
	s.pos++
	s.depth++
	if s.depth > maxDepth {
		return s.syntax("nesting deeper than " + strconv.Itoa(maxDepth))
	}
	return nil
}

// member moves to member i of the object opened by openObject (i counts from 0). It returns the
// raw key (esc tells whether it holds escapes) and leaves the scanner at the value, or returns
// done after consuming the closing '}'.
func (s *scanner) member(i int) (key []byte, esc, done bool, err error) {
	c := s.peek()
	if c == '}' {
		s.pos++
		s.depth--
		return nil, false, true, nil
	}
	if i > 0 {
		if c != ',' {
			return nil, false, false, s.unexpected("',' or '}'")
		}
		s.pos++
		c = s.peek()
	}
	if c != '"' {
		return nil, false, false, s.unexpected("a string key")
	}
	key, esc, err = s.str()
	if err != nil {
		return nil, false, false, err
	}
	if s.peek() != ':' {
		return nil, false, false, s.unexpected("':'")
	}
	s.pos++
	return key, esc, false, nil
}

// openArray consumes '['.
func (s *scanner) openArray() error {
	if s.peek() != '[' {
		return s.unexpected("'['")
	}
	s.pos++
	s.depth++
	if s.depth > maxDepth {
		return s.syntax("nesting deeper than " + strconv.Itoa(maxDepth))
	}
	return nil
}

// elem moves to element i of the array opened by openArray, or returns done after ']'.
func (s *scanner) elem(i int) (done bool, err error) {
	c := s.peek()
	if c == ']' {
		s.pos++
		s.depth--
		return true, nil
	}
	if i > 0 {
		if c != ',' {
			return false, s.unexpected("',' or ']'")
		}
		s.pos++
	}
	return false, nil
}

// strSafe marks bytes that need no attention inside a string: printable ASCII except '"' and '\'.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string token and returns its raw content between the quotes. It checks escapes,
// control characters and UTF-8; esc tells whether the content must be unescaped before use.
func (s *scanner) str() (raw []byte, esc bool, err error) {
	if s.peek() != '"' {
		return nil, false, s.unexpected("a string")
	}
	b := s.buf
	start := s.pos + 1
	i := start
	for {
		// Eight bytes at a time while none needs attention (SDK strings are mostly plain
		// ASCII; base64 attachments make up a third of the corpus), then byte by byte.
		for i+8 <= len(b) && !strSpecial8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && strSafe[b[i]] {
			i++
		}
		if i >= len(b) {
			s.pos = i
			return nil, false, s.syntax("unterminated string")
		}
		c := b[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return b[start:i], esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				s.pos = i + 1
				return nil, false, s.syntax("unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					s.pos = i
					return nil, false, s.syntax(`invalid \u escape in string`)
				}
				i += 6
			default:
				s.pos = i + 1
				return nil, false, s.syntax("invalid escape " + quoteByte(b[i+1]) + " in string")
			}
		case c < 0x20:
			s.pos = i
			return nil, false, s.syntax("control character " + quoteByte(c) + " in string")
		default: // >= 0x80
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				s.pos = i
				return nil, false, s.syntax("invalid UTF-8 in string")
			}
			i += n
		}
	}
}

// strSpecial8 reports whether any of the 8 bytes in x is '"', '\\', a control character or
// not ASCII (the SWAR zero-byte tests of "Bit Twiddling Hacks"; exact, no false negatives).
func strSpecial8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs|x)&highs != 0
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if hexVal(c) < 0 {
			return false
		}
	}
	return true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// unescape appends the decoded form of raw string content (as returned by str) to dst. Lone
// surrogates become U+FFFD, as encoding/json does.
func unescape(dst, raw []byte) []byte {
	dst = slices.Grow(dst, len(raw)) // the decoded form is never longer
	for i := 0; i < len(raw); {
		// The bytes up to the next escape as they are, in one copy: escapes are rare (a stack
		// trace's line breaks), and a byte at a time was 10% of decoding the recorded batches.
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return append(dst, raw[i:]...)
		}
		dst = append(dst, raw[i:i+j]...)
		i += j
		switch raw[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := rune(hex4(raw[i+2:]))
			i += 6
			if r >= 0xD800 && r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				if r2 := rune(hex4(raw[i+2:])); r2 >= 0xDC00 && r2 < 0xE000 {
					r = (r-0xD800)<<10 | (r2 - 0xDC00) + 0x10000
					i += 6
				}
			}
			if r >= 0xD800 && r < 0xE000 {
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, raw[i+1])
		}
		i += 2
	}
	return dst
}

func hex4(b []byte) int {
	return hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3])
}

// num reads a number token and returns its raw text; isInt is true when it has neither a
// fraction nor an exponent.
func (s *scanner) num() (raw []byte, isInt bool, err error) {
	s.ws()
	b := s.buf
	start := s.pos
	i := s.pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		s.pos = i
		return nil, false, s.unexpected("a number")
	}
	isInt = true
	if i < len(b) && b[i] == '.' {
		isInt = false
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			s.pos = i
			return nil, false, s.unexpected("a digit after the decimal point")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		isInt = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			s.pos = i
			return nil, false, s.unexpected("a digit in the exponent")
		}
	}
	s.pos = i
	return b[start:i], isInt, nil
}

// skip reads and checks one value of any kind.
func (s *scanner) skip() error {
	switch s.peek() {
	case '{':
		if err := s.openObject(); err != nil {
			return err
		}
		for i := 0; ; i++ {
			_, _, done, err := s.member(i)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case '[':
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
			if err := s.skip(); err != nil {
				return err
			}
		}
	case '"':
		_, _, err := s.str()
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		_, _, err := s.num()
		return err
	}
	return s.unexpected("a JSON value")
}

// kindOf names the JSON type of the next value for error messages.
func (s *scanner) kindOf() string {
	switch s.peek() {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "a number"
	}
	return "invalid JSON"
}

// appendCompact appends raw JSON (already validated) to dst without insignificant whitespace.
func appendCompact(dst, raw []byte) []byte {
	if !hasWS(raw) {
		return append(dst, raw...)
	}
	inStr := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inStr {
			dst = append(dst, c)
			switch c {
			case '\\':
				i++
				dst = append(dst, raw[i])
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case ' ', '\n', '\r', '\t':
			continue
		case '"':
			inStr = true
		}
		dst = append(dst, c)
	}
	return dst
}

// appendMaybeCompact is appendCompact when raw may hold whitespace, else a plain copy.
func appendMaybeCompact(dst, raw []byte, hasWS bool) []byte {
	if hasWS {
		return appendCompact(dst, raw)
	}
	return append(dst, raw...)
}

// compactLen is len(appendCompact(nil, raw)) without building it.
func compactLen(raw []byte) int {
	n := 0
	inStr := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inStr {
			n++
			switch c {
			case '\\':
				i++
				n++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case ' ', '\n', '\r', '\t':
			continue
		case '"':
			inStr = true
		}
		n++
	}
	return n
}

// hasWS reports whether raw holds whitespace outside strings; fixtures recorded with
// json.Marshal have none, so the common case is one quick pass and a plain copy.
func hasWS(raw []byte) bool {
	inStr := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case ' ', '\n', '\r', '\t':
			return true
		case '"':
			inStr = true
		}
	}
	return false
}
