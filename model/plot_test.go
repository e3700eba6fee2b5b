package model

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	// 23:59:30.5 on 31 Jan 2024 in UTC+2 is 21:59:30.5 UTC.
	ts := time.Date(2024, 1, 31, 23, 59, 30, 500_000_000, time.FixedZone("x", 2*3600))
	cases := []struct {
		group, want string
		start       time.Time
	}{
		{"minutes", "2024-01-31T21:59:00", time.Date(2024, 1, 31, 21, 59, 0, 0, time.UTC)},
		{"hours", "2024-01-31T21:00:00", time.Date(2024, 1, 31, 21, 0, 0, 0, time.UTC)},
		{"days", "2024-01-31", time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)},
		{"", "2024-01-31", time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)},
		{"months", "2024-01-01", time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		got, err := Bucket(ts, c.group)
		if err != nil || got != c.want {
			t.Errorf("%q: %q %v, want %q", c.group, got, err, c.want)
		}
		g, _ := ParsePlotTimeGroup(c.group)
		if s := BucketStart(ts, g); !s.Equal(c.start) || s.Location() != time.UTC {
			t.Errorf("%q: start %v, want %v", c.group, s, c.start)
		}
		// The label of a bucket's start is the bucket's label.
		if l := BucketLabel(BucketStart(ts, g), g); l != c.want {
			t.Errorf("%q: label of start %q", c.group, l)
		}
		if c.group != "" && g.String() != c.group {
			t.Errorf("String %q", g.String())
		}
	}
	// Month and day boundaries in UTC, not local time.
	if got, _ := Bucket(time.Date(2024, 3, 1, 0, 30, 0, 0, time.FixedZone("y", 3600)), "months"); got != "2024-02-01" {
		t.Errorf("months across a boundary: %q", got)
	}
	for _, bad := range []string{"weeks", "Days", "day"} {
		if _, err := Bucket(ts, bad); !errors.Is(err, ErrPlotTimeGroup) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	// Labels sort in time order.
	a, _ := Bucket(time.Date(2024, 9, 30, 23, 59, 0, 0, time.UTC), "minutes")
	b, _ := Bucket(time.Date(2024, 10, 1, 0, 0, 0, 0, time.UTC), "minutes")
	if !(a < b) {
		t.Errorf("%q !< %q", a, b)
	}
}

func TestBuildPlot(t *testing.T) {
	v1, v2 := AppVersion{"1.0", "10"}, AppVersion{"2.0", "20"}
	rows := []PlotRow{
		{Version: v2, Datetime: "2024-01-02", Instances: 1, Sessions: 4, IssueSessions: 1},
		{Version: v1, Datetime: "2024-01-03", Instances: 0, Sessions: 5, IssueSessions: 0},
		{Version: v1, Datetime: "2024-01-01", Instances: 2, Sessions: 3, IssueSessions: 2},
		{Version: v2, Datetime: "2024-01-01", Instances: 3, Sessions: 3, IssueSessions: 1},
		{Version: v2, Datetime: "2024-01-01", Instances: 1, Sessions: 1, IssueSessions: 1}, // partial of the same bucket
		{Version: v2, Datetime: "2024-01-04", Instances: 0, Sessions: 0, IssueSessions: 0},
	}
	cases := []struct {
		rate PlotRate
		want string
	}{
		{PlotCrashFree, `[{"id":"1.0 (10)","data":[{"datetime":"2024-01-01","instances":2,"crash_free_sessions":33.33},{"datetime":"2024-01-03","instances":0,"crash_free_sessions":100}]},` +
			`{"id":"2.0 (20)","data":[{"datetime":"2024-01-01","instances":4,"crash_free_sessions":50},{"datetime":"2024-01-02","instances":1,"crash_free_sessions":75},{"datetime":"2024-01-04","instances":0,"crash_free_sessions":0}]}]`},
		{PlotANRFree, `[{"id":"1.0 (10)","data":[{"datetime":"2024-01-01","instances":2,"anr_free_sessions":33.33},{"datetime":"2024-01-03","instances":0,"anr_free_sessions":100}]},` +
			`{"id":"2.0 (20)","data":[{"datetime":"2024-01-01","instances":4,"anr_free_sessions":50},{"datetime":"2024-01-02","instances":1,"anr_free_sessions":75},{"datetime":"2024-01-04","instances":0,"anr_free_sessions":0}]}]`},
		{PlotNoRate, `[{"id":"1.0 (10)","data":[{"datetime":"2024-01-01","instances":2},{"datetime":"2024-01-03","instances":0}]},` +
			`{"id":"2.0 (20)","data":[{"datetime":"2024-01-01","instances":4},{"datetime":"2024-01-02","instances":1},{"datetime":"2024-01-04","instances":0}]}]`},
	}
	for _, c := range cases {
		b, err := json.Marshal(BuildPlot(rows, c.rate))
		if err != nil || string(b) != c.want {
			t.Errorf("rate %d:\n got %s\nwant %s", c.rate, b, c.want)
		}
	}
	if b, _ := json.Marshal(BuildPlot(nil, PlotCrashFree)); string(b) != "[]" {
		t.Errorf("no rows: %s", b)
	}
	if rows[3].Instances != 3 {
		t.Error("BuildPlot modified its input")
	}
	if SeriesID("1.2.3", "45") != "1.2.3 (45)" {
		t.Error("SeriesID")
	}
}

// TestBucketMonths checks every month, so that no layout digit is mistaken for another.
func TestBucketMonths(t *testing.T) {
	for m := time.January; m <= time.December; m++ {
		ts := time.Date(2025, m, 28, 12, 0, 0, 0, time.UTC)
		want := time.Date(2025, m, 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
		if got, _ := Bucket(ts, "months"); got != want || want[8:] != "01" {
			t.Errorf("%v: %q, want %q", m, got, want)
		}
		if got, _ := Bucket(ts, "days"); got != ts.Format(time.DateOnly) {
			t.Errorf("%v days: %q", m, got)
		}
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

var allGroups = []PlotTimeGroup{PlotMinutes, PlotHours, PlotDays, PlotMonths}

// In UTC, under any of its names, Buckets are BucketStart and BucketLabel.
func TestBucketsUTC(t *testing.T) {
	times := []time.Time{
		at("2024-01-31T23:59:30.5+02:00"), at("2024-02-29T23:59:59.999999999Z"), at("2024-03-01T00:00:00Z"),
		at("1969-12-31T23:59:59Z"), at("1970-01-01T00:00:00Z"), at("2105-12-31T23:30:00Z"), at("1600-02-29T12:00:00Z"),
	}
	for _, zone := range []string{"", "UTC", "Etc/UTC", "GMT", "Zulu", "Etc/Universal"} {
		for _, g := range allGroups {
			b, err := ParseBuckets(g.String(), zone)
			if err != nil {
				t.Fatalf("ParseBuckets(%s, %q): %v", g, zone, err)
			}
			if !b.UTC() || b.Zone() != "UTC" || b.String() != g.String() {
				t.Errorf("ParseBuckets(%s, %q) = %v (%s), want UTC", g, zone, b.Loc, b)
			}
			for _, ts := range times {
				s := b.Start(ts)
				if want := BucketStart(ts, g); !s.Equal(want) || s.Location() != time.UTC {
					t.Errorf("%s %q: Start(%v) = %v, want %v", g, zone, ts, s, want)
				}
				if l, want := b.Label(ts), BucketLabel(ts, g); l != want {
					t.Errorf("%s %q: Label(%v) = %q, want %q", g, zone, ts, l, want)
				}
				n := b.Next(s)
				if !n.After(s) || !b.Start(n).Equal(n) || !b.Start(n.Add(-1)).Equal(s) {
					t.Errorf("%s %q: Next(%v) = %v", g, zone, s, n)
				}
			}
		}
	}
	// The empty group is days.
	if b, err := ParseBuckets("", ""); err != nil || b.Group != PlotDays || !b.UTC() {
		t.Errorf("ParseBuckets(\"\", \"\") = %+v, %v", b, err)
	}
}

// TestBucketsZones states buckets of zones without DST (Asia/Kolkata, +05:30), with DST on both
// sides of UTC (America/New_York, Europe/Berlin), with a half-hour DST change
// (Australia/Lord_Howe), a fixed offset (Etc/GMT+5) and one whose DST change skipped midnight
// (America/Sao_Paulo, 2018).
func TestBucketsZones(t *testing.T) {
	cases := []struct {
		zone  string
		group PlotTimeGroup
		t     string
		start string // the bucket's start, RFC 3339 in the zone
		label string
	}{
		// Kolkata: minutes are UTC's, hours and days local.
		{"Asia/Kolkata", PlotMinutes, "2024-05-01T04:45:30.5Z", "2024-05-01T10:15:00+05:30", "2024-05-01T10:15:00"},
		{"Asia/Kolkata", PlotHours, "2024-05-01T04:45:00Z", "2024-05-01T10:00:00+05:30", "2024-05-01T10:00:00"},
		{"Asia/Kolkata", PlotHours, "2024-05-01T04:29:59.999999999Z", "2024-05-01T09:00:00+05:30", "2024-05-01T09:00:00"},
		{"Asia/Kolkata", PlotDays, "2024-04-30T18:29:59.999999999Z", "2024-04-30T00:00:00+05:30", "2024-04-30"},
		{"Asia/Kolkata", PlotDays, "2024-04-30T18:30:00Z", "2024-05-01T00:00:00+05:30", "2024-05-01"},
		{"Asia/Kolkata", PlotMonths, "2024-04-30T18:29:59Z", "2024-04-01T00:00:00+05:30", "2024-04-01"},
		{"Asia/Kolkata", PlotMonths, "2024-04-30T18:30:00Z", "2024-05-01T00:00:00+05:30", "2024-05-01"},
		{"Asia/Kolkata", PlotMonths, "2024-12-31T18:30:00Z", "2025-01-01T00:00:00+05:30", "2025-01-01"},
		// New York, spring forward on 2024-03-10 at 02:00 EST (07:00Z): 23 hours.
		{"America/New_York", PlotHours, "2024-03-10T06:59:59Z", "2024-03-10T01:00:00-05:00", "2024-03-10T01:00:00"},
		{"America/New_York", PlotHours, "2024-03-10T07:00:00Z", "2024-03-10T03:00:00-04:00", "2024-03-10T03:00:00"},
		{"America/New_York", PlotDays, "2024-03-10T04:59:59Z", "2024-03-09T00:00:00-05:00", "2024-03-09"},
		{"America/New_York", PlotDays, "2024-03-10T05:00:00Z", "2024-03-10T00:00:00-05:00", "2024-03-10"},
		{"America/New_York", PlotDays, "2024-03-11T03:59:59.999999999Z", "2024-03-10T00:00:00-05:00", "2024-03-10"},
		{"America/New_York", PlotDays, "2024-03-11T04:00:00Z", "2024-03-11T00:00:00-04:00", "2024-03-11"},
		// … and back on 2024-11-03 at 02:00 EDT (06:00Z): 01:00 twice, 25 hours.
		{"America/New_York", PlotHours, "2024-11-03T05:30:00Z", "2024-11-03T01:00:00-04:00", "2024-11-03T01:00:00"},
		{"America/New_York", PlotHours, "2024-11-03T06:30:00Z", "2024-11-03T01:00:00-05:00", "2024-11-03T01:00:00"},
		{"America/New_York", PlotHours, "2024-11-03T07:00:00Z", "2024-11-03T02:00:00-05:00", "2024-11-03T02:00:00"},
		{"America/New_York", PlotDays, "2024-11-03T04:00:00Z", "2024-11-03T00:00:00-04:00", "2024-11-03"},
		{"America/New_York", PlotDays, "2024-11-04T04:59:59Z", "2024-11-03T00:00:00-04:00", "2024-11-03"},
		{"America/New_York", PlotDays, "2024-11-04T05:00:00Z", "2024-11-04T00:00:00-05:00", "2024-11-04"},
		{"America/New_York", PlotMinutes, "2024-11-03T06:30:59Z", "2024-11-03T01:30:00-05:00", "2024-11-03T01:30:00"},
		{"America/New_York", PlotMonths, "2024-11-01T03:59:59Z", "2024-10-01T00:00:00-04:00", "2024-10-01"},
		{"America/New_York", PlotMonths, "2024-11-30T12:00:00Z", "2024-11-01T00:00:00-04:00", "2024-11-01"},
		{"America/New_York", PlotMonths, "2024-12-01T04:59:59Z", "2024-11-01T00:00:00-04:00", "2024-11-01"},
		{"America/New_York", PlotMonths, "2024-12-01T05:00:00Z", "2024-12-01T00:00:00-05:00", "2024-12-01"},
		// Berlin, east of UTC: 2024-03-31 02:00 CET → 03:00 CEST (01:00Z), 2024-10-27 03:00
		// CEST → 02:00 CET (01:00Z).
		{"Europe/Berlin", PlotHours, "2024-03-31T00:59:59Z", "2024-03-31T01:00:00+01:00", "2024-03-31T01:00:00"},
		{"Europe/Berlin", PlotHours, "2024-03-31T01:00:00Z", "2024-03-31T03:00:00+02:00", "2024-03-31T03:00:00"},
		{"Europe/Berlin", PlotHours, "2024-10-27T00:30:00Z", "2024-10-27T02:00:00+02:00", "2024-10-27T02:00:00"},
		{"Europe/Berlin", PlotHours, "2024-10-27T01:30:00Z", "2024-10-27T02:00:00+01:00", "2024-10-27T02:00:00"},
		{"Europe/Berlin", PlotDays, "2024-10-27T22:59:59Z", "2024-10-27T00:00:00+02:00", "2024-10-27"},
		{"Europe/Berlin", PlotDays, "2024-03-30T23:00:00Z", "2024-03-31T00:00:00+01:00", "2024-03-31"},
		{"Europe/Berlin", PlotMonths, "2024-03-31T21:59:59Z", "2024-03-01T00:00:00+01:00", "2024-03-01"},
		{"Europe/Berlin", PlotMonths, "2024-03-31T22:00:00Z", "2024-04-01T00:00:00+02:00", "2024-04-01"},
		// Lord Howe moves its clock by half an hour (2024-10-06 02:00 +10:30 → 02:30 +11, at
		// 15:30Z): that hour's bucket starts at the change.
		{"Australia/Lord_Howe", PlotHours, "2024-10-05T15:29:59Z", "2024-10-06T01:00:00+10:30", "2024-10-06T01:00:00"},
		{"Australia/Lord_Howe", PlotHours, "2024-10-05T15:45:00Z", "2024-10-06T02:30:00+11:00", "2024-10-06T02:30:00"},
		{"Australia/Lord_Howe", PlotHours, "2024-10-05T16:00:00Z", "2024-10-06T03:00:00+11:00", "2024-10-06T03:00:00"},
		// A fixed offset.
		{"Etc/GMT+5", PlotDays, "2024-05-01T04:59:59Z", "2024-04-30T00:00:00-05:00", "2024-04-30"},
		{"Etc/GMT+5", PlotHours, "2024-05-01T04:59:59Z", "2024-04-30T23:00:00-05:00", "2024-04-30T23:00:00"},
		// São Paulo went from 2018-11-04 00:00 −03 to 01:00 −02 (03:00Z): that day starts at
		// the change, and 23:59 −03 is still the day before.
		{"America/Sao_Paulo", PlotDays, "2018-11-04T12:00:00Z", "2018-11-04T01:00:00-02:00", "2018-11-04"},
		{"America/Sao_Paulo", PlotDays, "2018-11-04T02:59:59Z", "2018-11-03T00:00:00-03:00", "2018-11-03"},
		{"America/Sao_Paulo", PlotMonths, "2018-11-04T12:00:00Z", "2018-11-01T00:00:00-03:00", "2018-11-01"},
	}
	for _, c := range cases {
		t.Run(c.zone+"/"+c.group.String()+"/"+c.t, func(t *testing.T) {
			b, err := ParseBuckets(c.group.String(), c.zone)
			if err != nil {
				t.Fatal(err)
			}
			if b.UTC() || b.Zone() != c.zone {
				t.Fatalf("ParseBuckets gave %s", b)
			}
			ts := at(c.t)
			s := b.Start(ts)
			if got := s.Format(time.RFC3339Nano); got != c.start {
				t.Errorf("Start = %s, want %s", got, c.start)
			}
			if s.After(ts) || !b.Next(s).After(ts) {
				t.Errorf("%s is not in [%v, %v)", c.t, s, b.Next(s))
			}
			if l := b.Label(ts); l != c.label {
				t.Errorf("Label = %q, want %q", l, c.label)
			}
			if l := b.Label(s); l != c.label {
				t.Errorf("Label of the start = %q, want %q", l, c.label)
			}
		})
	}
}

// TestBucketsWalk walks Next from a local midnight to the next and counts the buckets: a DST
// day is one day bucket of 23 or 25 hours and as many hour buckets; every instant of a bucket
// starts it, and labels are in time order as text.
func TestBucketsWalk(t *testing.T) {
	cases := []struct {
		zone, day       string // the day: its first instant
		group           PlotTimeGroup
		buckets         int
		length          time.Duration // of the one bucket, for days and months
		firstL, secondL string        // labels of the first two buckets
	}{
		{"America/New_York", "2024-03-10T00:00:00-05:00", PlotHours, 23, 0, "2024-03-10T00:00:00", "2024-03-10T01:00:00"},
		{"America/New_York", "2024-11-03T00:00:00-04:00", PlotHours, 25, 0, "2024-11-03T00:00:00", "2024-11-03T01:00:00"},
		{"America/New_York", "2024-03-10T00:00:00-05:00", PlotDays, 1, 23 * time.Hour, "2024-03-10", "2024-03-11"},
		{"America/New_York", "2024-11-03T00:00:00-04:00", PlotDays, 1, 25 * time.Hour, "2024-11-03", "2024-11-04"},
		{"America/New_York", "2024-11-03T00:00:00-04:00", PlotMinutes, 25 * 60, 0, "2024-11-03T00:00:00", "2024-11-03T00:01:00"},
		{"Europe/Berlin", "2024-03-31T00:00:00+01:00", PlotHours, 23, 0, "2024-03-31T00:00:00", "2024-03-31T01:00:00"},
		{"Europe/Berlin", "2024-10-27T00:00:00+02:00", PlotHours, 25, 0, "2024-10-27T00:00:00", "2024-10-27T01:00:00"},
		{"Europe/Berlin", "2024-10-27T00:00:00+02:00", PlotDays, 1, 25 * time.Hour, "2024-10-27", "2024-10-28"},
		{"Asia/Kolkata", "2024-05-01T00:00:00+05:30", PlotHours, 24, 0, "2024-05-01T00:00:00", "2024-05-01T01:00:00"},
		{"Asia/Kolkata", "2024-05-01T00:00:00+05:30", PlotDays, 1, 24 * time.Hour, "2024-05-01", "2024-05-02"},
		{"Australia/Lord_Howe", "2024-10-06T00:00:00+10:30", PlotHours, 24, 0, "2024-10-06T00:00:00", "2024-10-06T01:00:00"},
		{"America/Sao_Paulo", "2018-11-04T01:00:00-02:00", PlotDays, 1, 23 * time.Hour, "2018-11-04", "2018-11-05"},
		// Months, the walk from a month start to the next.
		{"America/New_York", "2024-03-01T00:00:00-05:00", PlotMonths, 1, (31*24 - 1) * time.Hour, "2024-03-01", "2024-04-01"},
		{"America/New_York", "2024-11-01T00:00:00-04:00", PlotMonths, 1, (30*24 + 1) * time.Hour, "2024-11-01", "2024-12-01"},
		{"Asia/Kolkata", "2024-02-01T00:00:00+05:30", PlotMonths, 1, 29 * 24 * time.Hour, "2024-02-01", "2024-03-01"},
	}
	for _, c := range cases {
		t.Run(c.zone+"/"+c.group.String()+"/"+c.day, func(t *testing.T) {
			b := Buckets{Group: c.group, Loc: mustZone(t, c.zone)}
			first := at(c.day)
			dayB := Buckets{Group: PlotDays, Loc: b.Loc}
			if c.group == PlotMonths {
				dayB.Group = PlotMonths
			}
			end := dayB.Next(first)
			n := 0
			var labels []string
			var starts []time.Time
			for s := first; s.Before(end); n++ {
				if !b.Start(s).Equal(s) {
					t.Fatalf("bucket %d: Start(%v) = %v, not itself", n, s, b.Start(s))
				}
				next := b.Next(s)
				if !next.After(s) {
					t.Fatalf("bucket %d: Next(%v) = %v", n, s, next)
				}
				for _, in := range []time.Time{s, s.Add(next.Sub(s) / 2), next.Add(-1)} {
					if got := b.Start(in); !got.Equal(s) {
						t.Fatalf("bucket %d [%v, %v): Start(%v) = %v", n, s, next, in, got)
					}
				}
				if c.length != 0 && next.Sub(s) != c.length {
					t.Errorf("bucket %d lasts %v, want %v", n, next.Sub(s), c.length)
				}
				labels, starts = append(labels, b.Label(s)), append(starts, s)
				s = next
			}
			labels, starts = append(labels, b.Label(end)), append(starts, end)
			if n != c.buckets {
				t.Errorf("%d buckets, want %d", n, c.buckets)
			}
			if labels[0] != c.firstL || labels[1] != c.secondL {
				t.Errorf("labels %q, %q…, want %q, %q", labels[0], labels[1], c.firstL, c.secondL)
			}
			for i := 1; i < len(labels); i++ { // the clock goes back where a DST change repeats an hour
				if labels[i-1] > labels[i] && offsetOf(starts[i-1]) <= offsetOf(starts[i]) {
					t.Errorf("labels %q and %q out of order", labels[i-1], labels[i])
				}
			}
		})
	}
}

// TestBucketsPartition checks, hour by hour over two years in zones of every kind, that Start
// and Next cut time into buckets: t lies in [Start(t), Next(Start(t))), and the bucket after is
// the start of its own.
func TestBucketsPartition(t *testing.T) {
	zones := []string{"America/New_York", "Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe", "Asia/Kathmandu",
		"America/Sao_Paulo", "Pacific/Apia", "Pacific/Chatham", "America/St_Johns", "Antarctica/Troll", "Africa/Casablanca"}
	from := time.Date(2011, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, z := range zones {
		loc := mustZone(t, z)
		for _, g := range allGroups {
			b := Buckets{Group: g, Loc: loc}
			step := 37 * time.Minute
			if g == PlotMinutes {
				step = 7*time.Hour + 13*time.Second
			}
			for ts := from; ts.Before(from.AddDate(2, 0, 0)); ts = ts.Add(step) {
				s := b.Start(ts)
				n := b.Next(s)
				if s.After(ts) || !n.After(ts) || !b.Start(n).Equal(n) || b.Label(s) == b.Label(n) && offsetOf(s) == offsetOf(n) {
					t.Fatalf("%s %s: %v in bucket [%v, %v) labelled %q then %q", z, g, ts, s, n, b.Label(s), b.Label(n))
				}
			}
		}
	}
}

func TestParseBuckets(t *testing.T) {
	cases := []struct {
		group, zone string
		want        error // nil: a zone of that name
	}{
		{"hours", "Asia/Kolkata", nil},
		{"minutes", "America/Argentina/Buenos_Aires", nil},
		{"months", "Etc/GMT+5", nil},
		{"", "America/Port-au-Prince", nil},
		{"days", "Mars/Olympus", ErrTimezone},
		{"days", "../etc/passwd", ErrTimezone},
		{"days", "/etc/localtime", ErrTimezone},
		{"days", "/usr/share/zoneinfo/Asia/Kolkata", ErrTimezone},
		{"days", "Asia/../Asia/Kolkata", ErrTimezone},
		{"days", "Asia//Kolkata", ErrTimezone},
		{"days", "Asia/Kolkata/", ErrTimezone},
		{"days", "Asia\\Kolkata", ErrTimezone},
		{"days", "Asia/Kolkata'", ErrTimezone},
		{"days", "Asia/Kolkata\x00", ErrTimezone},
		{"days", "Local", ErrTimezone},
		{"days", "posixrules", ErrTimezone},
		{"days", "right/UTC", ErrTimezone},
		{"days", "asia/kolkata", ErrTimezone},
		{"days", "Asia/kolkata", ErrTimezone},
		{"days", "utc", ErrTimezone},
		{"days", " UTC", ErrTimezone},
		{"days", "+05:30", ErrTimezone},
		{"days", strings.Repeat("Asia/", 13) + "Kolkata", ErrTimezone},
		{"days", strings.Repeat("x", 100000), ErrTimezone},
		{"weeks", "Asia/Kolkata", ErrPlotTimeGroup},
		{"weeks", "Mars/Olympus", ErrPlotTimeGroup},
	}
	for _, c := range cases {
		b, err := ParseBuckets(c.group, c.zone)
		name := c.zone
		if len(name) > 80 {
			name = name[:20] + "…"
		}
		if c.want == nil {
			if err != nil || b.UTC() || b.Zone() != c.zone {
				t.Errorf("ParseBuckets(%q, %q) = %s, %v", c.group, name, b, err)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("ParseBuckets(%q, %q): %v, want %v", c.group, name, err, c.want)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("ParseBuckets(%q, %q): error of %d bytes", c.group, name, len(err.Error()))
		}
	}
}

// TestBuildPlotRepeatedHour: the two buckets of the hour Berlin's clock repeats share a wall
// clock label; the plot adds them up under it, in time order with the hours around it.
func TestBuildPlotRepeatedHour(t *testing.T) {
	v := AppVersion{"1", "1"}
	rows := []PlotRow{
		{Version: v, Datetime: "2024-10-27T03:00:00", Instances: 4},
		{Version: v, Datetime: "2024-10-27T02:00:00", Instances: 2},
		{Version: v, Datetime: "2024-10-27T01:00:00", Instances: 1},
		{Version: v, Datetime: "2024-10-27T02:00:00", Instances: 1},
	}
	want := []PlotPoint{{Datetime: "2024-10-27T01:00:00", Instances: 1}, {Datetime: "2024-10-27T02:00:00", Instances: 3}, {Datetime: "2024-10-27T03:00:00", Instances: 4}}
	if got := BuildPlot(rows, PlotNoRate)[0].Data; !reflect.DeepEqual(got, want) {
		t.Errorf("BuildPlot: %+v, want %+v", got, want)
	}
}

func TestDayStart(t *testing.T) {
	const d = int64(24 * time.Hour)
	for _, c := range []struct{ ts, want int64 }{
		{0, 0}, {1, 0}, {d - 1, 0}, {d, d}, {-1, -d}, {-d, -d}, {-d - 1, -2 * d},
		{math.MaxInt64, math.MaxInt64 - math.MaxInt64%d},
		{math.MinInt64 + d, math.MinInt64 + d - (math.MinInt64+d)%d - d},
		{math.MinInt64, math.MinInt64}, // the partial day before the first whole one
	} {
		if got := DayStart(c.ts); got != c.want {
			t.Errorf("DayStart(%d) = %d, want %d", c.ts, got, c.want)
		}
	}
}
