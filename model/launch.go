package model

import (
	"slices"
	"strconv"
)

// Launch kinds, as LaunchDuration names them.
const (
	LaunchCold = "cold"
	LaunchWarm = "warm"
	LaunchHot  = "hot"
)

// Upper bounds of a counted launch (docs/architecture.md, "Algorithms"): longer ones are measurement errors.
const (
	MaxColdLaunchMs = 30_000
	MaxWarmLaunchMs = 10_000
)

// LaunchDuration computes the duration of a cold_launch, warm_launch or hot_launch event in
// milliseconds (uptimes are integer milliseconds), as docs/architecture.md ("Algorithms") defines it:
//
//   - cold: on_next_draw_uptime − the first non-zero of process_start_requested_uptime,
//     process_start_uptime, content_provider_attach_uptime; counted when in (0, 30 s];
//   - warm: on_next_draw_uptime − app_visible_uptime, counted when in (0, 10 s] and the launch
//     is not lukewarm (is_lukewarm true, sent as a boolean or as a string strconv.ParseBool
//     accepts);
//   - hot: on_next_draw_uptime − app_visible_uptime, counted when > 0.
//
// A missing or zero start uptime means the launch is not counted (the difference would be the
// device's uptime, not a launch). ok is false for other kinds and for launches not counted.
func LaunchDuration(e *Event) (kind string, ms float64, ok bool) {
	switch e.Type {
	case "cold_launch":
		kind = LaunchCold
	case "warm_launch":
		kind = LaunchWarm
	case "hot_launch":
		kind = LaunchHot
	default:
		return "", 0, false
	}
	var requested, process, provider, visible, draw uint64
	lukewarm := false
	err := eachMember(e.Payload, func(key []byte, s *scanner) error {
		var err error
		switch string(key) {
		case "process_start_requested_uptime":
			requested, err = readUint(s)
		case "process_start_uptime":
			process, err = readUint(s)
		case "content_provider_attach_uptime":
			provider, err = readUint(s)
		case "app_visible_uptime":
			visible, err = readUint(s)
		case "on_next_draw_uptime":
			draw, err = readUint(s)
		case "is_lukewarm":
			if s.peek() == '"' {
				var v rawStr
				v, err = readStr(s)
				lukewarm, _ = strconv.ParseBool(v.String())
			} else {
				lukewarm, _, err = readBool(s)
			}
		}
		return err
	})
	if err != nil {
		return kind, 0, false
	}
	start, limit := visible, uint64(0)
	switch kind {
	case LaunchCold:
		start, limit = requested, MaxColdLaunchMs
		if start == 0 {
			start = process
		}
		if start == 0 {
			start = provider
		}
	case LaunchWarm:
		if lukewarm {
			return kind, 0, false
		}
		limit = MaxWarmLaunchMs
	}
	if start == 0 || draw <= start {
		return kind, 0, false
	}
	d := draw - start
	if limit > 0 && d > limit {
		return kind, 0, false
	}
	return kind, float64(d), true
}

// readUint reads a non-negative integer; 0 for null, a negative number, a fraction or any
// other kind of value.
func readUint(s *scanner) (uint64, error) {
	if c := s.peek(); c < '0' || c > '9' {
		return 0, s.skip()
	}
	raw, isInt, err := s.num()
	if err != nil || !isInt {
		return 0, err
	}
	v, _ := strconv.ParseUint(string(raw), 10, 64)
	return v, nil
}

// P95 is the 95th percentile of values by the method of ClickHouse's quantileExact(0.95): the
// element at index ⌊0.95·n⌋ (0-based) of the sorted values, so that a store query and a live
// computation give the same number. It returns 0 for no values and does not modify values.
func P95(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	return sorted[p95Index(len(sorted))]
}

// p95Index is quantileExact's index for level 0.95 and n > 0 values.
func p95Index(n int) int {
	i := int(0.95 * float64(n))
	if i >= n {
		i = n - 1
	}
	return i
}
