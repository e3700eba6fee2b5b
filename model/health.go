package model

import (
	"slices"
	"strings"
	"time"
)

// HealthSeries is one series of GET /apps/{id}/health/plots/instances: id is sessions,
// crashes or anrs; Data holds the buckets where the count is not 0, oldest first (never null).
type HealthSeries struct {
	ID   string        `json:"id"`
	Data []HealthPoint `json:"data"`
}

// HealthPoint is one bucket of a health series; Datetime is Buckets.Label of its start.
type HealthPoint struct {
	Datetime  string `json:"datetime"`
	Instances uint64 `json:"instances"`
}

// HealthPlot is the app health plot: per bucket, the sessions with an event (summed over the
// versions of the bucket: a session that changed version inside one bucket counts once per
// version), the crashes (fatal exception events) and the ANR events. Always the three series,
// in that order.
func HealthPlot(sessions []SessionBucket, cells []IssueCell, by Buckets) []HealthSeries {
	// By label: the two buckets of an hour a DST change repeats share one, and add up as in
	// BuildPlot. Labels sort as text in time order.
	sums := [3]map[string]uint64{{}, {}, {}}
	label := func(ns int64) string { return by.Label(time.Unix(0, ns)) }
	for _, s := range sessions {
		sums[0][label(s.Bucket)] += s.Sessions
	}
	for _, c := range cells {
		switch c.Class {
		case ClassCrash:
			sums[1][label(c.Bucket)] += c.Count
		case ClassANR:
			sums[2][label(c.Bucket)] += c.Count
		}
	}
	out := []HealthSeries{{ID: "sessions"}, {ID: "crashes"}, {ID: "anrs"}}
	for i, m := range sums {
		out[i].Data = []HealthPoint{}
		for l, n := range m {
			if n > 0 {
				out[i].Data = append(out[i].Data, HealthPoint{Datetime: l, Instances: n})
			}
		}
		slices.SortFunc(out[i].Data, func(a, b HealthPoint) int { return strings.Compare(a.Datetime, b.Datetime) })
	}
	return out
}
