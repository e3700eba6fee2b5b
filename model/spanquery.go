package model

import (
	"slices"
	"time"
)

// SpanQuery selects root spans for the span pages: GET /apps/{id}/spans and
// /spans/plots/metrics. Match is its Go definition, which every store agrees with.
type SpanQuery struct {
	// EventFilter's fields apply to the span: From and To bound its StartTime, [From, To);
	// Versions, the device, locale and network lists and Countries (a non-empty list matches
	// nothing) compare its Attributes as EventFilter.Match does; UD is evaluated on its
	// UserDefined attributes.
	EventFilter
	// OSVersions: the span's (os_name, os_version) is one of them.
	OSVersions []OSVersion
	// Name: the span's name, exactly.
	Name string
	// Statuses: the span's status is one of them (0 unset, 1 ok, 2 error); empty is any.
	Statuses []uint8
}

// Match says whether s is a root span (no parent) of the query's app that the query selects.
func (q *SpanQuery) Match(s *Span) bool {
	if s.AppID != q.App || s.ParentID != "" || s.Name != q.Name || s.StartTime < q.From || s.StartTime >= q.To {
		return false
	}
	a := &s.Attributes
	if len(q.Versions) > 0 && !hasVersion(q.Versions, a.AppVersion, a.AppBuild) {
		return false
	}
	if len(q.OSVersions) > 0 && !slices.Contains(q.OSVersions, OSVersion{Name: a.OSName, Version: a.OSVersion}) {
		return false
	}
	if len(q.Statuses) > 0 && !slices.Contains(q.Statuses, s.Status) {
		return false
	}
	if len(q.Countries) > 0 ||
		!anyOf(q.DeviceNames, a.DeviceName) || !anyOf(q.DeviceManufacturers, a.DeviceManufacturer) ||
		!anyOf(q.Locales, a.DeviceLocale) || !anyOf(q.NetworkProviders, a.NetworkProvider) ||
		!anyOf(q.NetworkTypes, a.NetworkType) || !anyOf(q.NetworkGenerations, a.NetworkGeneration) {
		return false
	}
	return q.UD == nil || q.UD.Eval(s.UserDefined)
}

// SpanDurations are the duration percentiles of the root spans of one app version in one plot
// bucket: the points of /spans/plots/metrics.
type SpanDurations struct {
	Version AppVersion
	Bucket  int64  // Buckets.Start of the spans' StartTime, Unix ns
	Count   uint64 // spans in the cell
	// The percentiles of the spans' Duration (milliseconds) by DurationQuantile.
	P50, P90, P95, P99 uint64
}

// SpanQuantileLevels are the levels of SpanDurations' percentiles, in field order.
var SpanQuantileLevels = [4]float64{0.5, 0.9, 0.95, 0.99}

// DurationQuantile is the percentile at level (0 < level < 1) of sorted (ascending) values by
// the method of ClickHouse's quantileExact: the element at the 0-based index ⌊level·n⌋,
// computed in float64, and the last element when that index is n or more. It returns 0 for no
// values.
func DurationQuantile(sorted []uint64, level float64) uint64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	i := int(level * float64(n))
	if i >= n {
		i = n - 1
	}
	return sorted[i]
}

// SpanDurationsOf fills the percentiles and count of a cell from its durations, which it sorts
// in place.
func SpanDurationsOf(v AppVersion, bucket int64, durations []uint64) SpanDurations {
	slices.Sort(durations)
	return SpanDurations{
		Version: v, Bucket: bucket, Count: uint64(len(durations)),
		P50: DurationQuantile(durations, SpanQuantileLevels[0]),
		P90: DurationQuantile(durations, SpanQuantileLevels[1]),
		P95: DurationQuantile(durations, SpanQuantileLevels[2]),
		P99: DurationQuantile(durations, SpanQuantileLevels[3]),
	}
}

// SpanBucket is the plot bucket of a span: by.Start of its StartTime in Unix ns.
func SpanBucket(s *Span, by Buckets) int64 {
	return by.Start(time.Unix(0, s.StartTime)).UnixNano()
}

// CompareSpansNewest orders spans newest first: StartTime descending, then SpanID descending
// (byte order), the order of the span list and of a trace's spans.
func CompareSpansNewest(a, b *Span) int {
	switch {
	case a.StartTime > b.StartTime:
		return -1
	case a.StartTime < b.StartTime:
		return 1
	case a.SpanID > b.SpanID:
		return -1
	case a.SpanID < b.SpanID:
		return 1
	}
	return 0
}
