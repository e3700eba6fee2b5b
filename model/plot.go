package model

import (
	"errors"
	"fmt"
	"sort"
	"strings"
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

// Buckets is how a plot cuts time: the width of a bucket and the zone whose calendar and
// clock the buckets follow (the timezone parameter). A nil Loc is UTC, where Start and Label
// equal BucketStart and BucketLabel.
type Buckets struct {
	Group PlotTimeGroup
	Loc   *time.Location
}

// ParseBuckets reads plot_time_group and timezone (an IANA name such as "Asia/Kolkata"; empty
// is UTC).
func ParseBuckets(group, timezone string) (Buckets, error) {
	g, err := ParsePlotTimeGroup(group)
	if err != nil {
		return Buckets{}, err
	}
	b := Buckets{Group: g}
	if timezone != "" && timezone != "UTC" {
		// LoadLocation also reads paths; only names of the IANA database are asked for.
		if len(timezone) > 64 || strings.Contains(timezone, "..") || strings.Contains(timezone, "\\") || strings.HasPrefix(timezone, "/") {
			return Buckets{}, fmt.Errorf("timezone %q is not an IANA time zone name such as Asia/Kolkata", timezone)
		}
		loc, err := time.LoadLocation(timezone)
		if err != nil {
			return Buckets{}, fmt.Errorf("timezone %q is not an IANA time zone name such as Asia/Kolkata", timezone)
		}
		b.Loc = loc
	}
	return b, nil
}

// UTC says whether the buckets follow UTC.
func (b Buckets) UTC() bool { return b.Loc == nil || b.Loc == time.UTC }

func (b Buckets) loc() *time.Location {
	if b.Loc == nil {
		return time.UTC
	}
	return b.Loc
}

// Start is the start of the bucket holding t: the minute, hour, day or month of the zone's
// wall clock. A wall-clock hour or day a DST change cuts short or stretches is one bucket all
// the same.
func (b Buckets) Start(t time.Time) time.Time {
	if b.UTC() {
		return BucketStart(t, b.Group)
	}
	t = t.In(b.loc())
	y, mo, d := t.Date()
	switch b.Group {
	case PlotMinutes:
		return t.Truncate(time.Minute) // every zone's offset is whole minutes since 1970
	case PlotHours:
		return time.Date(y, mo, d, t.Hour(), 0, 0, 0, b.loc())
	case PlotMonths:
		return time.Date(y, mo, 1, 0, 0, 0, 0, b.loc())
	}
	return time.Date(y, mo, d, 0, 0, 0, 0, b.loc())
}

// Next is the start of the bucket after the one starting at start.
func (b Buckets) Next(start time.Time) time.Time {
	switch b.Group {
	case PlotMinutes:
		return start.Add(time.Minute)
	case PlotHours:
		return b.Start(start.Add(time.Hour + time.Minute)) // a DST hour of 30 minutes, too
	case PlotMonths:
		return start.In(b.loc()).AddDate(0, 1, 0)
	}
	return b.Start(start.In(b.loc()).AddDate(0, 0, 1).Add(3 * time.Hour)) // days of 23 or 25 hours
}

// Label is the datetime label of the bucket holding t, on the zone's wall clock: minutes and
// hours as RFC 3339 instants with the zone's offset ("2024-05-01T10:05:00+05:30"; "Z" in
// UTC), days "2024-05-01" and months "2024-05-01" (the first day) as local dates.
func (b Buckets) Label(t time.Time) string {
	if b.UTC() {
		return BucketLabel(t, b.Group)
	}
	s := b.Start(t)
	switch b.Group {
	case PlotMinutes, PlotHours:
		return s.Format(time.RFC3339)
	}
	return s.Format(bucketDays)
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
