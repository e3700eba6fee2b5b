package model

import (
	"encoding/json"
	"errors"
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
		{"minutes", "2024-01-31T21:59:00Z", time.Date(2024, 1, 31, 21, 59, 0, 0, time.UTC)},
		{"hours", "2024-01-31T21:00:00Z", time.Date(2024, 1, 31, 21, 0, 0, 0, time.UTC)},
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
