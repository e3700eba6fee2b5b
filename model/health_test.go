package model

import (
	"reflect"
	"testing"
	"time"
)

func TestHealthPlot(t *testing.T) {
	kolkata, err := ParseBuckets("days", "Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	day := func(d int) int64 { // local midnight of 2026-03-0d in Kolkata
		return time.Date(2026, 3, d, 0, 0, 0, 0, kolkata.Loc).UnixNano()
	}
	v1, v2 := AppVersion{"1.0", "1"}, AppVersion{"2.0", "2"}
	none := []HealthSeries{{ID: "sessions", Data: []HealthPoint{}}, {ID: "crashes", Data: []HealthPoint{}}, {ID: "anrs", Data: []HealthPoint{}}}
	cases := []struct {
		name     string
		sessions []SessionBucket
		cells    []IssueCell
		want     []HealthSeries
	}{
		{"nothing: three empty series", nil, nil, none},
		{"zero counts are left out", []SessionBucket{{Version: v1, Bucket: day(1)}}, []IssueCell{{Class: ClassCrash, Bucket: day(1)}}, none},
		{
			"versions summed, handled left out, oldest first",
			[]SessionBucket{{Version: v1, Bucket: day(2), Sessions: 3}, {Version: v2, Bucket: day(2), Sessions: 4}, {Version: v2, Bucket: day(1), Sessions: 1}},
			[]IssueCell{{Class: ClassCrash, Version: v1, Bucket: day(2), Count: 2}, {Class: ClassCrash, Version: v2, Bucket: day(2), Count: 5},
				{Class: ClassHandled, Version: v1, Bucket: day(1), Count: 9}, {Class: ClassANR, Version: v2, Bucket: day(1), Count: 1}},
			[]HealthSeries{
				{ID: "sessions", Data: []HealthPoint{{"2026-03-01", 1}, {"2026-03-02", 7}}},
				{ID: "crashes", Data: []HealthPoint{{"2026-03-02", 7}}},
				{ID: "anrs", Data: []HealthPoint{{"2026-03-01", 1}}},
			},
		},
	}
	// Berlin's clock repeats 02:00 on 2024-10-27 (00:00Z and 01:00Z): one point.
	berlin, err := ParseBuckets("hours", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	h := func(utcHour int) int64 { return time.Date(2024, 10, 27, utcHour, 0, 0, 0, time.UTC).UnixNano() }
	got := HealthPlot([]SessionBucket{{Version: v1, Bucket: h(0), Sessions: 2}, {Version: v1, Bucket: h(1), Sessions: 3}, {Version: v1, Bucket: h(2), Sessions: 1}}, nil, berlin)
	if want := []HealthPoint{{"2024-10-27T02:00:00", 5}, {"2024-10-27T03:00:00", 1}}; !reflect.DeepEqual(got[0].Data, want) {
		t.Errorf("repeated hour: %+v, want %+v", got[0].Data, want)
	}
	for _, c := range cases {
		if got := HealthPlot(c.sessions, c.cells, kolkata); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}
