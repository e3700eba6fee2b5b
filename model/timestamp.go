package model

import (
	"errors"
	"time"
)

// ErrTimestamp is returned by ParseTimestamp for text that is not an accepted timestamp.
var ErrTimestamp = errors.New("not an RFC 3339 timestamp with at most 9 fractional digits, like 2024-05-01T12:34:56.123456789Z")

// errTimestampRange is returned for a well-formed timestamp that Unix nanoseconds in an int64
// cannot hold (before 1677-09-22 or after 2262-04-11).
var errTimestampRange = errors.New("outside the range of int64 Unix nanoseconds (years 1678 to 2261)")

// ParseTimestamp parses an SDK timestamp into Unix nanoseconds, keeping every digit.
//
// Accepted: YYYY-MM-DDTHH:MM:SS, then an optional '.' with 1 to 9 digits, then 'Z' or an offset
// ±HH:MM. SDKs send 3 (iOS) or 8 (Android) digits and always 'Z' (docs/architecture.md, "What real SDKs send"). Decisions:
// no fraction at all is accepted too (a whole second is still an exact instant), more than 9
// tsDigits are rejected (precision below a nanosecond cannot be kept, and silently dropping it
// would hide a broken clock format), and a numeric offset is accepted because RFC 3339 allows it.
// It is hand-written because time.Parse costs an allocation and ~10x the time per call on the
// ingest path, where every event and span carries one to three timestamps.
func ParseTimestamp(s string) (int64, error) {
	return parseTimestamp([]byte(s))
}

func parseTimestamp(b []byte) (int64, error) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return 0, ErrTimestamp
	}
	year, ok1 := tsDigits(b[0:4])
	month, ok2 := tsDigits(b[5:7])
	day, ok3 := tsDigits(b[8:10])
	hour, ok4 := tsDigits(b[11:13])
	minute, ok5 := tsDigits(b[14:16])
	sec, ok6 := tsDigits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, ErrTimestamp
	}
	if month < 1 || month > 12 || day < 1 || day > tsDaysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return 0, ErrTimestamp
	}
	i := 19
	var frac int64
	if b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			frac = frac*10 + int64(b[i]-'0')
			i++
		}
		n := i - start
		if n == 0 || n > 9 {
			return 0, ErrTimestamp
		}
		for ; n < 9; n++ {
			frac *= 10
		}
	}
	var offset int64
	switch {
	case i == len(b)-1 && b[i] == 'Z':
	case i == len(b)-6 && (b[i] == '+' || b[i] == '-') && b[i+3] == ':':
		oh, okh := tsDigits(b[i+1 : i+3])
		om, okm := tsDigits(b[i+4 : i+6])
		if !okh || !okm || oh > 23 || om > 59 {
			return 0, ErrTimestamp
		}
		offset = int64(oh*3600 + om*60)
		if b[i] == '-' {
			offset = -offset
		}
	default:
		return 0, ErrTimestamp
	}
	secs := tsDaysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec) - offset
	// int64 nanoseconds span ±9223372036.854775807 s; keep clear of the edges instead of
	// checking overflow to the last nanosecond.
	if secs < -9223372035 || secs > 9223372035 {
		return 0, errTimestampRange
	}
	return secs*1e9 + frac, nil
}

func tsDigits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func tsDaysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// tsDaysFromCivil counts days from 1970-01-01 to the given proleptic Gregorian date
// (H. Hinnant's algorithm).
func tsDaysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// FormatNanos writes Unix nanoseconds as an RFC 3339 UTC time, for messages.
func FormatNanos(ns int64) string {
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}
