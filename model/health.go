package model

import (
	"cmp"
	"slices"
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
	sums := [3]map[int64]uint64{{}, {}, {}}
	for _, s := range sessions {
		sums[0][s.Bucket] += s.Sessions
	}
	for _, c := range cells {
		switch c.Class {
		case ClassCrash:
			sums[1][c.Bucket] += c.Count
		case ClassANR:
			sums[2][c.Bucket] += c.Count
		}
	}
	out := []HealthSeries{{ID: "sessions"}, {ID: "crashes"}, {ID: "anrs"}}
	for i, m := range sums {
		starts := make([]int64, 0, len(m))
		for b, n := range m {
			if n > 0 {
				starts = append(starts, b)
			}
		}
		slices.SortFunc(starts, cmp.Compare[int64])
		out[i].Data = make([]HealthPoint, len(starts))
		for j, b := range starts {
			out[i].Data[j] = HealthPoint{Datetime: by.Label(time.Unix(0, b)), Instances: m[b]}
		}
	}
	return out
}
