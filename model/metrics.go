package model

import "math"

// AppVersion is an app version as the dashboard names it: version name and version code.
type AppVersion struct {
	Name string
	Code string
}

// SessionCounts are the session aggregates of one side of the health metrics: the selected
// version, or all other versions. A query layer fills them with counts (ClickHouse: uniqIf over
// session_id); AddSession fills them from per-session facts. A session counts for a version
// when any of its events (spans excluded) in the window carries that version (docs/architecture.md, "Algorithms").
type SessionCounts struct {
	Sessions uint64 // sessions that count for the side
	// Of those, sessions with a fatal exception event of the side's versions, and with one that
	// happened in the foreground (exception.foreground).
	Crashed           uint64
	CrashedForeground uint64
	// Likewise for anr events.
	ANR           uint64
	ANRForeground uint64
}

// LaunchSummary is the launch durations of one kind on one side: how many were counted
// (LaunchDuration ok) and their P95. ClickHouse: count() and quantileExact(0.95)(duration).
type LaunchSummary struct {
	Count uint64
	P95   float64
}

// SummarizeLaunches is the LaunchSummary of durations in milliseconds.
func SummarizeLaunches(ms []float64) LaunchSummary {
	return LaunchSummary{Count: uint64(len(ms)), P95: P95(ms)}
}

// Launches are the launch summaries of one side.
type Launches struct {
	Cold, Warm, Hot LaunchSummary
}

// MetricsInput is everything the health metrics are computed from, as aggregates. With no
// version selected, the caller passes every session as Selected and leaves Others empty.
type MetricsInput struct {
	// AllSessions counts the sessions of the window of any version, each once.
	AllSessions    uint64
	Selected       SessionCounts
	Others         SessionCounts
	SelectedLaunch Launches
	OthersLaunch   Launches
	// SelectedSize is the build size in bytes of the selected version; HasSelectedSize says
	// whether a build is known. OtherSizes are the build sizes of the other versions.
	SelectedSize    int64
	HasSelectedSize bool
	OtherSizes      []int64
}

// SessionVersionFacts are the facts of one session for one version it carried.
type SessionVersionFacts struct {
	Version           AppVersion
	Crashed           bool // a fatal exception event of this version
	CrashedForeground bool // ... that happened in the foreground
	ANR               bool
	ANRForeground     bool
}

// AddSession counts one session of the window into in's AllSessions, Selected and Others,
// given the versions its events carried. The rule matches the SQL a query layer runs: the
// session counts for Selected when one of its versions is the selected one (with that
// version's flags), and for Others when one is not (with the flags of those). A session with
// no version is not counted.
func (in *MetricsInput) AddSession(versions []SessionVersionFacts, selected AppVersion) {
	if len(versions) == 0 {
		return
	}
	in.AllSessions++
	var sel, oth bool
	var s, o SessionVersionFacts
	for _, v := range versions {
		if v.Version == selected {
			sel = true
			s.Crashed, s.CrashedForeground = s.Crashed || v.Crashed, s.CrashedForeground || v.CrashedForeground
			s.ANR, s.ANRForeground = s.ANR || v.ANR, s.ANRForeground || v.ANRForeground
		} else {
			oth = true
			o.Crashed, o.CrashedForeground = o.Crashed || v.Crashed, o.CrashedForeground || v.CrashedForeground
			o.ANR, o.ANRForeground = o.ANR || v.ANR, o.ANRForeground || v.ANRForeground
		}
	}
	if sel {
		in.Selected.add(&s)
	}
	if oth {
		in.Others.add(&o)
	}
}

func (c *SessionCounts) add(f *SessionVersionFacts) {
	c.Sessions++
	c.Crashed += b2u(f.Crashed)
	c.CrashedForeground += b2u(f.CrashedForeground)
	c.ANR += b2u(f.ANR)
	c.ANRForeground += b2u(f.ANRForeground)
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// HealthMetrics is the response of GET /apps/{id}/metrics.
type HealthMetrics struct {
	Adoption                   AdoptionMetric           `json:"adoption"`
	ANRFreeSessions            ANRFreeMetric            `json:"anr_free_sessions"`
	CrashFreeSessions          CrashFreeMetric          `json:"crash_free_sessions"`
	PerceivedANRFreeSessions   PerceivedANRFreeMetric   `json:"perceived_anr_free_sessions"`
	PerceivedCrashFreeSessions PerceivedCrashFreeMetric `json:"perceived_crash_free_sessions"`
	ColdLaunch                 LaunchMetric             `json:"cold_launch"`
	WarmLaunch                 LaunchMetric             `json:"warm_launch"`
	HotLaunch                  LaunchMetric             `json:"hot_launch"`
	Sizes                      SizeMetric               `json:"sizes"`
}

// Every metric has NaN ("nan"): true when one of its values came from a division by zero;
// such a value is then 0 and the others keep theirs.

// AdoptionMetric is the share of the window's sessions that carry the selected version.
// NoData: the window has no session at all.
type AdoptionMetric struct {
	AllVersions     uint64  `json:"all_versions"`
	SelectedVersion uint64  `json:"selected_version"`
	Adoption        float64 `json:"adoption"`
	NaN             bool    `json:"nan"`
	NoData          bool    `json:"no_data"`
}

// The "…-free sessions" metrics carry, beside the contract's value and delta, the reference
// dashboard's comparison fields: the other versions' own percentage (unselected_…), and
// NoData / UnselectedNoData saying a side has no session (its percentage is then 0).

// CrashFreeMetric: percentage of selected sessions without a fatal crash; Delta is it divided
// by the same percentage of the other versions.
type CrashFreeMetric struct {
	CrashFreeSessions           float64 `json:"crash_free_sessions"`
	Delta                       float64 `json:"delta"`
	NaN                         bool    `json:"nan"`
	UnselectedCrashFreeSessions float64 `json:"unselected_crash_free_sessions"`
	NoData                      bool    `json:"no_data"`
	UnselectedNoData            bool    `json:"unselected_no_data"`
}

// PerceivedCrashFreeMetric counts only crashes in the foreground.
type PerceivedCrashFreeMetric struct {
	PerceivedCrashFreeSessions           float64 `json:"perceived_crash_free_sessions"`
	Delta                                float64 `json:"delta"`
	NaN                                  bool    `json:"nan"`
	UnselectedPerceivedCrashFreeSessions float64 `json:"unselected_perceived_crash_free_sessions"`
	NoData                               bool    `json:"no_data"`
	UnselectedNoData                     bool    `json:"unselected_no_data"`
}

// ANRFreeMetric is CrashFreeMetric for ANRs.
type ANRFreeMetric struct {
	ANRFreeSessions           float64 `json:"anr_free_sessions"`
	Delta                     float64 `json:"delta"`
	NaN                       bool    `json:"nan"`
	UnselectedANRFreeSessions float64 `json:"unselected_anr_free_sessions"`
	NoData                    bool    `json:"no_data"`
	UnselectedNoData          bool    `json:"unselected_no_data"`
}

// PerceivedANRFreeMetric counts only ANRs in the foreground.
type PerceivedANRFreeMetric struct {
	PerceivedANRFreeSessions           float64 `json:"perceived_anr_free_sessions"`
	Delta                              float64 `json:"delta"`
	NaN                                bool    `json:"nan"`
	UnselectedPerceivedANRFreeSessions float64 `json:"unselected_perceived_anr_free_sessions"`
	NoData                             bool    `json:"no_data"`
	UnselectedNoData                   bool    `json:"unselected_no_data"`
}

// LaunchMetric is the selected version's P95 launch time in ms and its ratio to the other
// versions'. With no counted launch on the selected side the P95 is undefined: NaN is set.
// UnselectedP95 is the other versions' P95; NoData / UnselectedNoData say a side counted no
// launch.
type LaunchMetric struct {
	P95              float64 `json:"p95"`
	Delta            float64 `json:"delta"`
	NaN              bool    `json:"nan"`
	UnselectedP95    float64 `json:"unselected_p95"`
	NoData           bool    `json:"no_data"`
	UnselectedNoData bool    `json:"unselected_no_data"`
}

// SizeMetric compares the selected build's size with the average of the other versions' (in
// bytes, the average rounded to the nearest byte); Delta = selected − average. NaN is set when
// the selected build's size is unknown or there is no other build to average (0/0); NoData
// when the selected build's size is unknown.
type SizeMetric struct {
	AverageAppSize  int64 `json:"average_app_size"`
	SelectedAppSize int64 `json:"selected_app_size"`
	Delta           int64 `json:"delta"`
	NaN             bool  `json:"nan"`
	NoData          bool  `json:"no_data"`
}

// ComputeMetrics computes the health metrics of docs/architecture.md ("Algorithms") from aggregates. Percentages and
// ratios are rounded to 2 decimals (as the reference's SQL round(…, 2)); ratios are computed
// from the unrounded values. A delta is 1 when the other side has no data at all ("nothing
// else exists").
func ComputeMetrics(in *MetricsInput) HealthMetrics {
	var m HealthMetrics

	m.Adoption.AllVersions = in.AllSessions
	m.Adoption.SelectedVersion = in.Selected.Sessions
	m.Adoption.Adoption, m.Adoption.NaN = percent(in.Selected.Sessions, in.AllSessions)
	m.Adoption.NoData = in.AllSessions == 0

	s, o := &in.Selected, &in.Others
	var r rate
	r = freeRate(s.Sessions, s.Crashed, o.Sessions, o.Crashed)
	m.CrashFreeSessions = CrashFreeMetric{r.value, r.delta, r.nan, r.other, r.noData, r.otherNoData}
	r = freeRate(s.Sessions, s.CrashedForeground, o.Sessions, o.CrashedForeground)
	m.PerceivedCrashFreeSessions = PerceivedCrashFreeMetric{r.value, r.delta, r.nan, r.other, r.noData, r.otherNoData}
	r = freeRate(s.Sessions, s.ANR, o.Sessions, o.ANR)
	m.ANRFreeSessions = ANRFreeMetric{r.value, r.delta, r.nan, r.other, r.noData, r.otherNoData}
	r = freeRate(s.Sessions, s.ANRForeground, o.Sessions, o.ANRForeground)
	m.PerceivedANRFreeSessions = PerceivedANRFreeMetric{r.value, r.delta, r.nan, r.other, r.noData, r.otherNoData}

	m.ColdLaunch = launchMetric(in.SelectedLaunch.Cold, in.OthersLaunch.Cold)
	m.WarmLaunch = launchMetric(in.SelectedLaunch.Warm, in.OthersLaunch.Warm)
	m.HotLaunch = launchMetric(in.SelectedLaunch.Hot, in.OthersLaunch.Hot)

	m.Sizes.SelectedAppSize = in.SelectedSize
	if len(in.OtherSizes) > 0 {
		var sum float64
		for _, v := range in.OtherSizes {
			sum += float64(v)
		}
		m.Sizes.AverageAppSize = int64(math.Round(sum / float64(len(in.OtherSizes))))
	}
	m.Sizes.NoData = !in.HasSelectedSize
	if !in.HasSelectedSize || len(in.OtherSizes) == 0 {
		m.Sizes.NaN = true
		if !in.HasSelectedSize {
			m.Sizes.SelectedAppSize = 0
		}
	} else {
		m.Sizes.Delta = m.Sizes.SelectedAppSize - m.Sizes.AverageAppSize
	}
	return m
}

type rate struct {
	value, delta        float64
	nan                 bool
	other               float64 // the other side's percentage, 0 when it has no session
	noData, otherNoData bool
}

// freeRate is a "…-free sessions" percentage of the selected side, the other side's, and the
// ratio of the two.
func freeRate(selSessions, selBad, othSessions, othBad uint64) rate {
	sel, selNaN := freeRaw(selSessions, selBad)
	r := rate{value: round2(sel), delta: 1, nan: selNaN, noData: selNaN, otherNoData: othSessions == 0}
	if othSessions == 0 {
		return r
	}
	oth, _ := freeRaw(othSessions, othBad)
	r.other = round2(oth)
	if selNaN || oth == 0 {
		r.delta, r.nan = 0, true
		return r
	}
	r.delta = round2(sel / oth)
	return r
}

// freeRaw is (1 − bad/sessions) × 100, unrounded; nan for no sessions.
func freeRaw(sessions, bad uint64) (float64, bool) {
	if sessions == 0 {
		return 0, true
	}
	return (1 - float64(bad)/float64(sessions)) * 100, false
}

// FreeSessions is the percentage of sessions without an issue, (1 − withIssue/sessions) × 100
// rounded to 2 decimals; nan (and 0) when there are no sessions. Plots use it per point.
func FreeSessions(sessions, withIssue uint64) (pct float64, nan bool) {
	v, nan := freeRaw(sessions, withIssue)
	return round2(v), nan
}

// percent is part/whole × 100 rounded to 2 decimals; nan for a zero whole.
func percent(part, whole uint64) (float64, bool) {
	if whole == 0 {
		return 0, true
	}
	return round2(float64(part) / float64(whole) * 100), false
}

func launchMetric(sel, oth LaunchSummary) LaunchMetric {
	m := LaunchMetric{Delta: 1, NoData: sel.Count == 0, UnselectedNoData: oth.Count == 0}
	if sel.Count == 0 {
		m.NaN = true
	} else {
		m.P95 = round2(sel.P95)
	}
	if oth.Count == 0 {
		return m
	}
	m.UnselectedP95 = round2(oth.P95)
	if sel.Count == 0 || oth.P95 == 0 {
		m.Delta, m.NaN = 0, true
		return m
	}
	m.Delta = round2(sel.P95 / oth.P95)
	return m
}

// round2 rounds to 2 decimals, halves away from zero.
func round2(v float64) float64 {
	return math.Round(v*100) / 100
}
