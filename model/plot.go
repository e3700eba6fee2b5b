package model

import (
	"errors"
	"sort"
	"time"
)

// PlotTimeGroup is the plot_time_group of instance plots: the width of a bucket.
type PlotTimeGroup uint8

// The plot time groups of the spec.
const (
	PlotDays PlotTimeGroup = iota // the default
	PlotMinutes
	PlotHours
	PlotMonths
)

// ErrPlotTimeGroup is returned for a plot_time_group the spec does not know.
var ErrPlotTimeGroup = errors.New("plot_time_group must be one of minutes, hours, days, months")

// ParsePlotTimeGroup reads plot_time_group; the empty string is the default, days.
func ParsePlotTimeGroup(s string) (PlotTimeGroup, error) {
	switch s {
	case "", "days":
		return PlotDays, nil
	case "minutes":
		return PlotMinutes, nil
	case "hours":
		return PlotHours, nil
	case "months":
		return PlotMonths, nil
	}
	return 0, ErrPlotTimeGroup
}

// String returns the API name of the group.
func (g PlotTimeGroup) String() string {
	switch g {
	case PlotMinutes:
		return "minutes"
	case PlotHours:
		return "hours"
	case PlotMonths:
		return "months"
	}
	return "days"
}

// Bucket labels, all in UTC. They sort as text in time order, and minutes and hours are RFC
// 3339 instants that any ISO 8601 parser reads. ClickHouse equivalents (on a DateTime):
// formatDateTime(toStartOfMinute(t), '%Y-%m-%dT%H:%M:00Z', 'UTC'), '%Y-%m-%dT%H:00:00Z',
// '%Y-%m-%d' and '%Y-%m-01'.
const (
	bucketMinutes = "2006-01-02T15:04:00Z"
	bucketHours   = "2006-01-02T15:00:00Z"
	bucketDays    = "2006-01-02" // months: the day of their start
)

// BucketStart is the start of the UTC bucket holding t.
func BucketStart(t time.Time, g PlotTimeGroup) time.Time {
	t = t.UTC()
	switch g {
	case PlotMinutes:
		return t.Truncate(time.Minute)
	case PlotHours:
		return t.Truncate(time.Hour)
	case PlotMonths:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// BucketLabel is the datetime label of the bucket holding t: minutes "2024-05-01T10:05:00Z",
// hours "2024-05-01T10:00:00Z", days "2024-05-01", months "2024-05-01" (the first day).
func BucketLabel(t time.Time, g PlotTimeGroup) string {
	t = t.UTC()
	switch g {
	case PlotMinutes:
		return t.Format(bucketMinutes)
	case PlotHours:
		return t.Format(bucketHours)
	case PlotMonths:
		return BucketStart(t, PlotMonths).Format(bucketDays)
	}
	return t.Format(bucketDays)
}

// Bucket is BucketLabel with the group given by its API name ("" is days).
func Bucket(t time.Time, group string) (string, error) {
	g, err := ParsePlotTimeGroup(group)
	if err != nil {
		return "", err
	}
	return BucketLabel(t, g), nil
}

// SeriesID is the id of a plot series: "name (code)".
func SeriesID(name, code string) string {
	return name + " (" + code + ")"
}

// PlotRate says which per-point rate an instance plot carries.
type PlotRate uint8

// The rates of the plots: group plots have none, the crash overview plot crash_free_sessions,
// the ANR overview plot anr_free_sessions.
const (
	PlotNoRate PlotRate = iota
	PlotCrashFree
	PlotANRFree
)

// PlotRow is the aggregate of one version in one bucket, as a query or an actor gives it.
type PlotRow struct {
	Version  AppVersion
	Datetime string // the bucket label (BucketLabel)
	// Instances counts the plotted events (fatal crashes, ANRs, a group's events).
	Instances uint64
	// Sessions of the version in the bucket, and of those the sessions with a fatal crash
	// (crash plots) or an ANR (ANR plots): the inputs of the per-point rate.
	Sessions      uint64
	IssueSessions uint64
}

// PlotPoint is one point of a series.
type PlotPoint struct {
	Datetime          string   `json:"datetime"`
	Instances         uint64   `json:"instances"`
	CrashFreeSessions *float64 `json:"crash_free_sessions,omitempty"`
	ANRFreeSessions   *float64 `json:"anr_free_sessions,omitempty"`
}

// PlotSeries is one version's series.
type PlotSeries struct {
	ID   string      `json:"id"`
	Data []PlotPoint `json:"data"`
}

// BuildPlot turns rows into series, one per version, ordered by id, each with its points in
// time order. Rows of the same version and bucket are added up (partial aggregates merge).
// With a rate, each point carries FreeSessions(Sessions, IssueSessions) — computed, not a
// constant; a bucket without sessions has 0. Never nil: no rows give an empty array.
func BuildPlot(rows []PlotRow, rate PlotRate) []PlotSeries {
	type key struct {
		v AppVersion
		d string
	}
	sums := make(map[key]*PlotRow, len(rows))
	for i := range rows {
		r := &rows[i]
		k := key{r.Version, r.Datetime}
		if s, ok := sums[k]; ok {
			s.Instances += r.Instances
			s.Sessions += r.Sessions
			s.IssueSessions += r.IssueSessions
		} else {
			c := *r
			sums[k] = &c
		}
	}
	byID := map[string][]PlotPoint{}
	for k, r := range sums {
		p := PlotPoint{Datetime: k.d, Instances: r.Instances}
		if rate != PlotNoRate {
			v, _ := FreeSessions(r.Sessions, r.IssueSessions)
			if rate == PlotCrashFree {
				p.CrashFreeSessions = &v
			} else {
				p.ANRFreeSessions = &v
			}
		}
		id := SeriesID(k.v.Name, k.v.Code)
		byID[id] = append(byID[id], p)
	}
	out := make([]PlotSeries, 0, len(byID))
	for id, pts := range byID {
		sort.Slice(pts, func(i, j int) bool { return pts[i].Datetime < pts[j].Datetime })
		out = append(out, PlotSeries{ID: id, Data: pts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
