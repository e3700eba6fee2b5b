package model

import (
	"errors"
	"fmt"
	"math"
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

// Bucket labels are wall-clock times of the plot's zone without an offset, the shapes the
// reference dashboard's charts parse (a time-scale format per plot_time_group; a "Z" or an
// offset makes them fail): minutes and hours "2006-01-02T15:04:05", days and months (their
// first day) "2006-01-02". They sort as text in time order. ClickHouse equivalents (on a
// DateTime): formatDateTime(toStartOfMinute(t), '%Y-%m-%dT%H:%M:00', 'UTC'),
// '%Y-%m-%dT%H:00:00', '%Y-%m-%d' and '%Y-%m-01'.
const (
	bucketMinutes = "2006-01-02T15:04:00"
	bucketHours   = "2006-01-02T15:00:00"
	bucketDays    = "2006-01-02" // months: the day of their start
	bucketClock   = "2006-01-02T15:04:05"
)

// DayStart is the start of the UTC day holding ts (Unix nanoseconds); math.MinInt64 for the
// times of the partial day before the first whole one int64 can hold.
func DayStart(ts int64) int64 {
	const day = int64(24 * time.Hour)
	d := ts % day
	if d < 0 {
		if ts < math.MinInt64+day {
			return math.MinInt64
		}
		d += day
	}
	return ts - d
}

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
// clock the buckets follow (the timezone parameter). A nil Loc is UTC, where Start, Next and
// Label are BucketStart and BucketLabel exactly.
//
// In another zone:
//   - minutes are the minutes of UTC, which are the zone's own wall-clock minutes wherever its
//     offset is whole minutes (every zone since 1972; Africa/Monrovia's −0:44:30 ended then);
//   - an hour bucket is a wall-clock hour, cut where the zone's offset changes: the hour a DST
//     change repeats is two buckets (01:00−04:00 and 01:00−05:00), the hour it skips none, and
//     in a zone whose change moves the clock by half an hour a bucket may start at the change;
//   - a day is a local calendar date from its first instant (a 23 or 25 hour day is one bucket;
//     a day whose midnight a change skips starts at the change), a month likewise.
//
// ClickHouse's toStartOfHour, toStartOfDay and toStartOfMonth with a time zone give the same
// buckets (sinks/clickhouse uses them), except that 18.16 counts the hours of a day on which a
// fractional-hour zone's offset changes from its midnight (Lord Howe's half-hour DST, Chatham's
// change at 02:45): its hour buckets differ from these on those days.
type Buckets struct {
	Group PlotTimeGroup
	Loc   *time.Location
}

// ErrTimezone is returned (wrapped) for a timezone that is not a time zone name the server
// knows.
var ErrTimezone = errors.New("not an IANA time zone name such as Asia/Kolkata or UTC")

// maxTimezoneLen bounds a timezone name; the longest IANA name has 32 characters.
const maxTimezoneLen = 64

// ParseBuckets reads plot_time_group and timezone (an IANA name such as "Asia/Kolkata"; empty
// is UTC). A zone that is UTC under another name (Etc/UTC, GMT, Zulu…) is UTC.
func ParseBuckets(group, timezone string) (Buckets, error) {
	g, err := ParsePlotTimeGroup(group)
	if err != nil {
		return Buckets{}, err
	}
	b := Buckets{Group: g}
	if timezone == "" || timezone == "UTC" {
		return b, nil
	}
	if len(timezone) > maxTimezoneLen {
		return Buckets{}, fmt.Errorf("timezone of %d characters: %w", len(timezone), ErrTimezone)
	}
	// LoadLocation also reads files by path and knows "Local" (the server's own zone): only
	// names shaped as IANA names are asked for, which keeps ".." and absolute paths out, and
	// the files of the zoneinfo directory that are no zone (posixrules, right/…), and makes the
	// name safe to quote anywhere.
	if !zoneName(timezone) {
		return Buckets{}, fmt.Errorf("timezone %q: %w", timezone, ErrTimezone)
	}
	loc, err := time.LoadLocation(timezone)
	if err != nil {
		return Buckets{}, fmt.Errorf("timezone %q: %w", timezone, ErrTimezone)
	}
	probe := time.Unix(0, 0).In(loc)
	if from, to := probe.ZoneBounds(); from.IsZero() && to.IsZero() {
		if _, off := probe.Zone(); off == 0 {
			return b, nil // one zone forever, at offset 0
		}
	}
	b.Loc = loc
	return b, nil
}

// zoneName says whether s is shaped as an IANA time zone name: parts separated by '/', each
// starting with a capital letter and made of letters, digits, '_', '+' and '-'
// ("America/Argentina/Buenos_Aires", "Etc/GMT+5", "America/Port-au-Prince"). The capital also
// keeps a name in the wrong case ("asia/kolkata") out where the file system would find it.
func zoneName(s string) bool {
	if s == "Local" {
		return false
	}
	for _, part := range strings.Split(s, "/") {
		if part == "" || part[0] < 'A' || part[0] > 'Z' {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '+' || c == '-') {
				return false
			}
		}
	}
	return true
}

// UTC says whether the buckets follow UTC.
func (b Buckets) UTC() bool { return b.Loc == nil || b.Loc == time.UTC }

// Zone is the name of the zone: "UTC", or the IANA name ParseBuckets was given.
func (b Buckets) Zone() string {
	if b.UTC() {
		return "UTC"
	}
	return b.Loc.String()
}

// String names the buckets as "hours" or "hours in Asia/Kolkata".
func (b Buckets) String() string {
	if b.UTC() {
		return b.Group.String()
	}
	return b.Group.String() + " in " + b.Loc.String()
}

// Start is the start of the bucket holding t (see Buckets); in UTC it is BucketStart, else
// an instant in Loc.
func (b Buckets) Start(t time.Time) time.Time {
	if b.UTC() {
		return BucketStart(t, b.Group)
	}
	switch b.Group {
	case PlotMinutes:
		return t.Truncate(time.Minute).In(b.Loc) // Truncate counts from the zero time: UTC minutes
	case PlotHours:
		return b.hourStart(t.In(b.Loc))
	case PlotMonths:
		return b.monthStart(t.In(b.Loc))
	}
	return b.dayStart(t.In(b.Loc))
}

// Next is the start of the bucket after the one starting at start (a Start).
func (b Buckets) Next(start time.Time) time.Time {
	if b.UTC() {
		s := BucketStart(start, b.Group)
		switch b.Group {
		case PlotMinutes:
			return s.Add(time.Minute)
		case PlotHours:
			return s.Add(time.Hour)
		case PlotMonths:
			return s.AddDate(0, 1, 0)
		}
		return s.AddDate(0, 0, 1)
	}
	lt := start.In(b.Loc)
	var n time.Time
	switch b.Group {
	case PlotMinutes:
		return lt.Truncate(time.Minute).Add(time.Minute)
	case PlotHours:
		// The next wall-clock hour at start's offset, unless the offset changes before it.
		e := lt.Add(time.Hour - sinceHour(lt))
		if offsetOf(e) != offsetOf(lt) {
			return offsetChange(lt, e)
		}
		return e
	case PlotMonths:
		y, m, _ := lt.Date()
		n = b.monthStart(time.Date(y, m+1, 1, 12, 0, 0, 0, b.Loc))
	default:
		y, m, d := lt.Date()
		n = b.dayStart(time.Date(y, m, d+1, 12, 0, 0, 0, b.Loc))
	}
	if n.After(start) {
		return n
	}
	// The calendar's next day named a time the zone skipped into start's day (never seen in
	// the IANA database): the first bucket after start, found hour by hour.
	for h := time.Hour; ; h += time.Hour {
		if n = b.Start(start.Add(h)); n.After(start) {
			return n
		}
	}
}

// Label is the datetime label of the bucket holding t: the wall clock of the bucket's start in
// the zone, minutes and hours as "2024-05-01T10:05:00", days and months (the first day) as
// local dates "2024-05-01". Labels are distinct per bucket but for the hour a DST change
// repeats, whose two buckets share the wall clock: plots that count add them up under the one
// label, as the reference does by bucketing on the wall clock.
func (b Buckets) Label(t time.Time) string {
	if b.UTC() {
		return BucketLabel(t, b.Group)
	}
	s := b.Start(t)
	switch b.Group {
	case PlotMinutes, PlotHours:
		return s.Format(bucketClock)
	}
	return s.Format(bucketDays)
}

// SortByLabel sorts xs by their bucket labels, which is time order (stable: points of a
// repeated DST hour keep the order they came in).
func SortByLabel[T any](xs []T, label func(*T) string) {
	sort.SliceStable(xs, func(i, j int) bool { return label(&xs[i]) < label(&xs[j]) })
}

func offsetOf(t time.Time) int {
	_, off := t.Zone()
	return off
}

// sinceHour is how far t is past the start of its wall-clock hour.
func sinceHour(t time.Time) time.Duration {
	return time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
}

// offsetChange is the instant in (lo, hi] from which the zone's offset is hi's, for lo and hi
// of different offsets a change apart (zone changes are at whole seconds).
func offsetChange(lo, hi time.Time) time.Time {
	want := offsetOf(hi)
	a, z := lo.Unix(), hi.Unix() // offset(a) != want, offset(z) == want
	for z-a > 1 {
		m := a + (z-a)/2
		if offsetOf(time.Unix(m, 0).In(hi.Location())) == want {
			z = m
		} else {
			a = m
		}
	}
	return time.Unix(z, 0).In(hi.Location())
}

// hourStart is the start of t's wall-clock hour, or the offset change within it after which t
// lies (t in Loc). Two offset changes within one hour are taken as none: no zone has them.
func (b Buckets) hourStart(t time.Time) time.Time {
	c := t.Add(-sinceHour(t))
	if offsetOf(c) == offsetOf(t) {
		return c
	}
	return offsetChange(c, t)
}

// dayStart is the first instant of t's local date (t in Loc): its midnight at t's offset,
// moved back over each offset change that the same date reaches across (the 25 hour day) and
// forward to the change that skips midnight (the day that starts at 01:00).
func (b Buckets) dayStart(t time.Time) time.Time {
	y, m, d := t.Date()
	for range 8 { // a day holds at most two changes; more is taken as no more
		h := time.Duration(t.Hour())*time.Hour + sinceHour(t)
		s := t.Add(-h)
		if offsetOf(s) != offsetOf(t) {
			s = offsetChange(s, t)
		}
		p := s.Add(-time.Nanosecond)
		if py, pm, pd := p.Date(); py != y || pm != m || pd != d {
			return s
		}
		t = p
	}
	return t
}

// monthStart is the first instant of t's local month (t in Loc).
func (b Buckets) monthStart(t time.Time) time.Time {
	y, m, _ := t.Date()
	s := b.dayStart(time.Date(y, m, 1, 12, 0, 0, 0, b.Loc))
	for range 4 { // the 1st skipped: the month starts with the day dayStart found, or before
		p := s.Add(-time.Nanosecond)
		if py, pm, _ := p.Date(); py != y || pm != m {
			break
		}
		s = b.dayStart(p)
	}
	return s
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
	Datetime string // the bucket label (Buckets.Label)
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
		SortByLabel(pts, func(p *PlotPoint) string { return p.Datetime })
		out = append(out, PlotSeries{ID: id, Data: pts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
