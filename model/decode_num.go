package model

import (
	"math"
	"strconv"
)

// Numbers as real SDKs write them (docs/ingest-numbers.md has the table per field).
//
// JSON has one number type; SDKs reach it through Java, Swift, Dart and JavaScript bridges, so
// one value arrives in several spellings: an integer may come as 1000, 1000.0 or 1e3, a
// JavaScript bridge turns Java's Long.MAX_VALUE into 9223372036854776000 (just above int64), and
// a computed pixel size may carry a fraction (1079.9999999). The rules the decoder applies:
//
//   - An integer field takes any number whose value is an integer in its range, however it is
//     written (1.0, 1e3, 12.5e1, -0). The value is computed exactly from the decimal text, never
//     through float64, so 9007199254740993.0 is 9007199254740993.
//   - A fraction in a quantity (uptimes, durations, sizes, counters, pixels: every unsigned
//     field) is rounded to the nearest integer, halves away from zero; a fraction in a code
//     (span status, HTTP status_code, log severity_number, error numcode: the signed fields)
//     names nothing and is refused.
//   - Negative values in unsigned fields and values beyond a field's range (after rounding)
//     are refused with the field's bound; -0 and negatives that round to 0 are 0.
//   - Inside a kind member (kept as Event.Payload) a non-canonical integer is rewritten as the
//     integer it means (1e3 → 1000), so that everything reading payloads sees plain integers.
//   - Float fields take any finite number within the type's range (float32 fields by float32
//     rounding, so Java's Float.MAX_VALUE, 3.4028235E38, passes); values too small for the
//     type read as 0.
//   - User-defined numbers: see decoder.udValue.

// decimalInt reads the decimal text of a JSON number (as scanner.num returns it) exactly. mag is
// |value| rounded to the nearest integer (halves away from zero), frac tells whether the value
// had a non-zero fraction, and big that mag does not fit in a uint64 (mag is then meaningless).
func decimalInt(raw []byte) (mag uint64, neg, frac, big bool) {
	if raw[0] == '-' {
		neg, raw = true, raw[1:]
	}
	// raw is intPart [. fracPart] [e|E [+|-] exp]
	i := 0
	for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
		i++
	}
	intPart, fracPart := raw[:i], raw[i:i]
	if i < len(raw) && raw[i] == '.' {
		j := i + 1
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
		}
		fracPart, i = raw[i+1:j], j
	}
	exp := 0
	if i < len(raw) { // 'e' or 'E'
		i++
		eneg := false
		if raw[i] == '+' || raw[i] == '-' {
			eneg = raw[i] == '-'
			i++
		}
		for ; i < len(raw); i++ {
			if exp < 1_000_000 { // beyond that every answer is the same: 0 or big
				exp = exp*10 + int(raw[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	// The value is D × 10^e10, D the digits of intPart and fracPart read as one integer.
	n := len(intPart) + len(fracPart)
	digit := func(k int) byte {
		if k < len(intPart) {
			return intPart[k] - '0'
		}
		return fracPart[k-len(intPart)] - '0'
	}
	first, last := 0, n-1 // the significant digits are D[first..last]
	for first < n && digit(first) == 0 {
		first++
	}
	if first == n {
		return 0, neg, false, false
	}
	for digit(last) == 0 {
		last--
	}
	e10 := exp - len(fracPart) + (n - 1 - last) // exponent of the last significant digit
	sig := last - first + 1
	intDigits := sig + e10 // digits left of the decimal point once trailing zeros are gone
	if intDigits > 20 {
		return 0, neg, e10 < 0, true
	}
	// The integer part: the first intDigits significant digits, then e10 zeros when e10 > 0.
	for k := 0; k < intDigits; k++ {
		var dg uint64
		if k < sig {
			dg = uint64(digit(first + k))
		}
		if mag > (math.MaxUint64-dg)/10 {
			return 0, neg, e10 < 0, true
		}
		mag = mag*10 + dg
	}
	if e10 >= 0 {
		return mag, neg, false, false
	}
	// A fraction remains: round on its first digit (0 when it starts with zeros).
	if intDigits >= 0 && digit(first+intDigits) >= 5 {
		if mag == math.MaxUint64 {
			return 0, neg, true, true
		}
		mag++
	}
	return mag, neg, true, false
}

// uintVal reads an unsigned integer field in [0, max]. A fraction is rounded when round is set
// (quantities) and refused otherwise (codes). canon is false when the text is not the plain
// integer the value is (1.0, 1e3, -0, 7.6): kind members rewrite those (see numPatch).
func (d *decoder) uintVal(max uint64, round bool) (v uint64, canon bool, err error) {
	if !isNumStart(d.s.peek()) {
		return 0, false, d.typeErr("a non-negative integer")
	}
	raw, isInt, err := d.s.num()
	if err != nil {
		return 0, false, err
	}
	if isInt && raw[0] != '-' { // the common case: a plain non-negative integer
		v, ok := parseUint64(raw)
		if !ok || v > max {
			return 0, false, fieldErr("", "must be at most "+strconv.FormatUint(max, 10)+", got "+clipValue(raw))
		}
		return v, true, nil
	}
	mag, neg, frac, big := decimalInt(raw)
	switch {
	case frac && !round:
		return 0, false, fieldErr("", "must be an integer, got "+clipValue(raw))
	case neg && (mag != 0 || big):
		return 0, false, fieldErr("", "must not be negative, got "+clipValue(raw))
	case big || mag > max:
		return 0, false, fieldErr("", "must be at most "+strconv.FormatUint(max, 10)+", got "+clipValue(raw))
	}
	return mag, false, nil
}

// intVal reads a signed integer field (a code: a fraction is refused) within int64.
func (d *decoder) intVal() (v int64, canon bool, err error) {
	if !isNumStart(d.s.peek()) {
		return 0, false, d.typeErr("an integer")
	}
	raw, isInt, err := d.s.num()
	if err != nil {
		return 0, false, err
	}
	if isInt && (len(raw) != 2 || raw[0] != '-' || raw[1] != '0') {
		v, ok := parseInt64(raw)
		if !ok {
			return 0, false, fieldErr("", "must be within the int64 range, got "+clipValue(raw))
		}
		return v, true, nil
	}
	mag, neg, frac, big := decimalInt(raw)
	switch {
	case frac:
		return 0, false, fieldErr("", "must be an integer, got "+clipValue(raw))
	case big || (!neg && mag > math.MaxInt64) || (neg && mag > 1<<63):
		return 0, false, fieldErr("", "must be within the int64 range, got "+clipValue(raw))
	case neg:
		return int64(-mag), false, nil // -(1<<63) wraps to MinInt64, as wanted
	}
	return int64(mag), false, nil
}

// floatVal reads any JSON number and checks that it is finite in float64 (bits 64) or float32
// (bits 32) after rounding to that type.
func (d *decoder) floatVal(bits int) (float64, error) {
	if !isNumStart(d.s.peek()) {
		return 0, d.typeErr("a number")
	}
	raw, _, err := d.s.num()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(string(raw), bits)
	if err != nil { // the only error left for valid JSON number text is the range
		return 0, fieldErr("", "must be within the float"+strconv.Itoa(bits)+" range, got "+clipValue(raw))
	}
	return v, nil
}

// numPatch is a number inside the kind member being read whose text is replaced by its
// canonical integer in the payload: the bytes [start, end) of the body become -mag or mag.
type numPatch struct {
	start, end int
	mag        uint64
	neg        bool
}

// patchNum records that the number just read, which began at start, is the integer (neg, mag)
// but was not written as such.
func (d *decoder) patchNum(start int, mag uint64, neg bool) {
	d.patches = append(d.patches, numPatch{start: start, end: d.s.pos, mag: mag, neg: neg})
}

// keepPatched is keep for a kind member with patches: the compact copy with every patched
// number written as its integer. Rare (no real SDK body needs it), so it allocates its own copy.
func (d *decoder) keepPatched(raw []byte, start int, hasWS bool) []byte {
	out := make([]byte, 0, len(raw)+8*len(d.patches))
	pos := 0
	for _, p := range d.patches {
		// Patches lie outside strings, so each piece compacts on its own.
		out = appendMaybeCompact(out, raw[pos:p.start-start], hasWS)
		if p.neg && p.mag != 0 {
			out = append(out, '-')
		}
		out = strconv.AppendUint(out, p.mag, 10)
		pos = p.end - start
	}
	out = appendMaybeCompact(out, raw[pos:], hasWS)
	return out[:len(out):len(out)]
}
