package model

import (
	"testing"
	"time"
)

func TestParseTimestamp(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // RFC 3339 with nanoseconds in UTC, or "" for an error
	}{
		{"2025-05-26T11:12:43.52500000Z", "2025-05-26T11:12:43.525Z"},
		{"2024-11-18T14:14:40.545Z", "2024-11-18T14:14:40.545Z"},
		{"2025-10-07T12:13:01.123456789Z", "2025-10-07T12:13:01.123456789Z"},
		{"2025-10-07T12:13:01.1Z", "2025-10-07T12:13:01.1Z"},
		{"2025-10-07T12:13:01Z", "2025-10-07T12:13:01Z"},
		{"2025-10-07T14:13:01.5+02:00", "2025-10-07T12:13:01.5Z"},
		{"2025-10-07T10:43:01.5-01:30", "2025-10-07T12:13:01.5Z"},
		{"2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"2000-02-29T23:59:59.999999999Z", "2000-02-29T23:59:59.999999999Z"},
		{"1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"},
		{"1969-12-31T23:59:59.999999999Z", "1969-12-31T23:59:59.999999999Z"},
		{"1700-03-01T00:00:00Z", "1700-03-01T00:00:00Z"},
		{"2261-12-31T23:59:59Z", "2261-12-31T23:59:59Z"},
		{"2023-02-29T00:00:00Z", ""},
		{"1900-02-29T00:00:00Z", ""},
		{"2025-13-01T00:00:00Z", ""},
		{"2025-00-01T00:00:00Z", ""},
		{"2025-01-32T00:00:00Z", ""},
		{"2025-04-31T00:00:00Z", ""},
		{"2025-01-01T24:00:00Z", ""},
		{"2025-01-01T00:60:00Z", ""},
		{"2025-01-01T00:00:60Z", ""},
		{"2025-01-01T00:00:00.Z", ""},
		{"2025-01-01T00:00:00.1234567890Z", ""},
		{"2025-01-01T00:00:00.123", ""},
		{"2025-01-01T00:00:00.123z", ""},
		{"2025-01-01 00:00:00.123Z", ""},
		{"2025-01-01T00:00:00+0200", ""},
		{"2025-01-01T00:00:00+24:00", ""},
		{"2025-01-01T00:00:00ZZ", ""},
		{"2025-1-01T00:00:00Z", ""},
		{"２025-01-01T00:00:00Z", ""},
		{"1600-01-01T00:00:00Z", ""},
		{"2300-01-01T00:00:00Z", ""},
		{"", ""},
	} {
		got, err := ParseTimestamp(c.in)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q: accepted as %d", c.in, got)
			}
			continue
		}
		want, perr := time.Parse(time.RFC3339Nano, c.want)
		if perr != nil {
			t.Fatal(perr)
		}
		if err != nil || got != want.UnixNano() {
			t.Errorf("%q = %d, %v; want %d", c.in, got, err, want.UnixNano())
		}
	}
}

// FuzzParseTimestamp compares with time.Parse on everything time.Parse can represent in int64
// nanoseconds.
func FuzzParseTimestamp(f *testing.F) {
	f.Add("2025-05-26T11:12:43.52500000Z")
	f.Add("2025-10-07T14:13:01.5+02:00")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTimestamp(s)
		if err != nil {
			return
		}
		ref, rerr := time.Parse(time.RFC3339Nano, s)
		if rerr != nil {
			t.Fatalf("%q accepted (%d) but time.Parse says %v", s, got, rerr)
		}
		if ref.UnixNano() != got {
			t.Fatalf("%q = %d, time.Parse %d", s, got, ref.UnixNano())
		}
	})
}
