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
	for _, c := range cases {
		if got := HealthPlot(c.sessions, c.cells, kolkata); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}
