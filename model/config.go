package model

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// SDKConfig is the configuration GET /config serves to an app's SDK. Sampling rates are
// percentages (0–100, docs/architecture.md, "Algorithms"); durations and intervals are seconds.
type SDKConfig struct {
	MaxEventsInBatch          int      `json:"max_events_in_batch"`
	CrashTimelineDuration     int      `json:"crash_timeline_duration"`
	ANRTimelineDuration       int      `json:"anr_timeline_duration"`
	BugReportTimelineDuration int      `json:"bug_report_timeline_duration"`
	TraceSamplingRate         float64  `json:"trace_sampling_rate"`
	JourneySamplingRate       float64  `json:"journey_sampling_rate"`
	ScreenshotMaskLevel       string   `json:"screenshot_mask_level"`
	CPUUsageInterval          int      `json:"cpu_usage_interval"`
	MemoryUsageInterval       int      `json:"memory_usage_interval"`
	CrashTakeScreenshot       bool     `json:"crash_take_screenshot"`
	ANRTakeScreenshot         bool     `json:"anr_take_screenshot"`
	ANRTimelineSamplingRate   float64  `json:"anr_timeline_sampling_rate"`
	LaunchSamplingRate        float64  `json:"launch_sampling_rate"`
	GestureClickTakeSnapshot  bool     `json:"gesture_click_take_snapshot"`
	HTTPDisableEventForURLs   []string `json:"http_disable_event_for_urls"`
	HTTPTrackRequestForURLs   []string `json:"http_track_request_for_urls"`
	HTTPTrackResponseForURLs  []string `json:"http_track_response_for_urls"`
	HTTPBlockedHeaders        []string `json:"http_blocked_headers"`
}

// DefaultSDKConfig is an app's configuration until someone changes it (docs/architecture.md, "Algorithms").
func DefaultSDKConfig() SDKConfig {
	return SDKConfig{
		MaxEventsInBatch:          10000,
		CrashTimelineDuration:     300,
		ANRTimelineDuration:       300,
		BugReportTimelineDuration: 300,
		TraceSamplingRate:         100,
		JourneySamplingRate:       100,
		ScreenshotMaskLevel:       "all_text_and_media",
		CPUUsageInterval:          5,
		MemoryUsageInterval:       5,
		CrashTakeScreenshot:       true,
		ANRTakeScreenshot:         true,
		ANRTimelineSamplingRate:   100,
		LaunchSamplingRate:        100,
		GestureClickTakeSnapshot:  true,
		HTTPDisableEventForURLs:   []string{},
		HTTPTrackRequestForURLs:   []string{},
		HTTPTrackResponseForURLs:  []string{},
		HTTPBlockedHeaders:        []string{},
	}
}

// ScreenshotMaskLevels are the accepted screenshot_mask_level values.
var ScreenshotMaskLevels = map[string]bool{
	"all_text_and_media": true, "all_text": true, "all_text_except_clickable": true, "sensitive_fields_only": true,
}

// Bounds of the configuration values. The contract leaves them open; these keep an SDK working
// (a batch of at least one event, timelines up to an hour, sampling as a percentage).
const (
	MaxEventsInBatchLimit = 10000
	MaxTimelineSeconds    = 3600
	MaxIntervalSeconds    = 3600
	MaxURLPatterns        = 100
	MaxURLPatternLength   = 2048
)

// Validate checks every value against its bounds; the error names the field.
func (c *SDKConfig) Validate() error {
	ints := []struct {
		name     string
		v        int
		min, max int
	}{
		{"max_events_in_batch", c.MaxEventsInBatch, 1, MaxEventsInBatchLimit},
		{"crash_timeline_duration", c.CrashTimelineDuration, 0, MaxTimelineSeconds},
		{"anr_timeline_duration", c.ANRTimelineDuration, 0, MaxTimelineSeconds},
		{"bug_report_timeline_duration", c.BugReportTimelineDuration, 0, MaxTimelineSeconds},
		{"cpu_usage_interval", c.CPUUsageInterval, 1, MaxIntervalSeconds},
		{"memory_usage_interval", c.MemoryUsageInterval, 1, MaxIntervalSeconds},
	}
	for _, f := range ints {
		if f.v < f.min || f.v > f.max {
			return fmt.Errorf("%s must be between %d and %d, got %d", f.name, f.min, f.max, f.v)
		}
	}
	rates := []struct {
		name string
		v    float64
	}{
		{"trace_sampling_rate", c.TraceSamplingRate}, {"journey_sampling_rate", c.JourneySamplingRate},
		{"anr_timeline_sampling_rate", c.ANRTimelineSamplingRate}, {"launch_sampling_rate", c.LaunchSamplingRate},
	}
	for _, r := range rates {
		if !(r.v >= 0 && r.v <= 100) {
			return fmt.Errorf("%s must be a percentage between 0 and 100, got %v", r.name, r.v)
		}
	}
	if !ScreenshotMaskLevels[c.ScreenshotMaskLevel] {
		return fmt.Errorf("screenshot_mask_level must be one of all_text_and_media, all_text, all_text_except_clickable, sensitive_fields_only, got %q", c.ScreenshotMaskLevel)
	}
	lists := []struct {
		name string
		v    *[]string
	}{
		{"http_disable_event_for_urls", &c.HTTPDisableEventForURLs}, {"http_track_request_for_urls", &c.HTTPTrackRequestForURLs},
		{"http_track_response_for_urls", &c.HTTPTrackResponseForURLs}, {"http_blocked_headers", &c.HTTPBlockedHeaders},
	}
	for _, l := range lists {
		if *l.v == nil {
			*l.v = []string{}
		}
		if len(*l.v) > MaxURLPatterns {
			return fmt.Errorf("%s holds at most %d entries, got %d", l.name, MaxURLPatterns, len(*l.v))
		}
		for i, s := range *l.v {
			if strings.TrimSpace(s) == "" || len(s) > MaxURLPatternLength {
				return fmt.Errorf("%s[%d] must be 1 to %d characters", l.name, i, MaxURLPatternLength)
			}
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				return fmt.Errorf("%s[%d] must be valid UTF-8 without NUL characters", l.name, i)
			}
		}
	}
	return nil
}

// SDKConfigExtra holds the settings of an app's SDK configuration that GET /config does not
// serve, because the SDKs of the ingestion contract do not read them: the HTTP and profile
// sampling rates and log collection. The dashboard shows and edits them beside SDKConfig
// (GET and PATCH /apps/{id}/config, one flat object). Sampling rates are percentages (0–100).
type SDKConfigExtra struct {
	HTTPSamplingRate      float64  `json:"http_sampling_rate"`
	ProfileSamplingRate   float64  `json:"profile_sampling_rate"`
	LogAutocollectEnabled bool     `json:"log_autocollect_enabled"`
	LogMinSeverity        int      `json:"log_min_severity"`
	LogIgnorePatterns     []string `json:"log_ignore_patterns"` // regular expressions, in the SDK's dialect
}

// DefaultSDKConfigExtra is an app's extra settings until someone changes them.
func DefaultSDKConfigExtra() SDKConfigExtra {
	return SDKConfigExtra{
		HTTPSamplingRate:    100,
		ProfileSamplingRate: 100,
		LogMinSeverity:      LogSeverityWarning,
		LogIgnorePatterns:   []string{},
	}
}

// The log_min_severity values: OpenTelemetry severity numbers, the highest of each level's range.
const (
	LogSeverityDebug   = 8
	LogSeverityInfo    = 12
	LogSeverityWarning = 16
	LogSeverityError   = 20
	LogSeverityFatal   = 24
)

// LogSeverities names the accepted log_min_severity values.
var LogSeverities = map[int]string{
	LogSeverityDebug: "debug", LogSeverityInfo: "info", LogSeverityWarning: "warning", LogSeverityError: "error", LogSeverityFatal: "fatal",
}

// Bounds of log_ignore_patterns.
const (
	MaxLogIgnorePatterns      = 100
	MaxLogIgnorePatternLength = 2048
)

// Validate checks every value against its bounds (the error names the field) and stores a nil
// pattern list as an empty one. Patterns are not compiled: the SDK's regular-expression dialect,
// not Go's, decides what they mean.
func (e *SDKConfigExtra) Validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"http_sampling_rate", e.HTTPSamplingRate}, {"profile_sampling_rate", e.ProfileSamplingRate}} {
		if !(r.v >= 0 && r.v <= 100) {
			return fmt.Errorf("%s must be a percentage between 0 and 100, got %v", r.name, r.v)
		}
	}
	if _, ok := LogSeverities[e.LogMinSeverity]; !ok {
		return fmt.Errorf("log_min_severity must be one of 8 (debug), 12 (info), 16 (warning), 20 (error), 24 (fatal), got %d", e.LogMinSeverity)
	}
	if e.LogIgnorePatterns == nil {
		e.LogIgnorePatterns = []string{}
	}
	if n := len(e.LogIgnorePatterns); n > MaxLogIgnorePatterns {
		return fmt.Errorf("log_ignore_patterns holds at most %d entries, got %d", MaxLogIgnorePatterns, n)
	}
	for i, s := range e.LogIgnorePatterns {
		if strings.TrimSpace(s) == "" || len(s) > MaxLogIgnorePatternLength {
			return fmt.Errorf("log_ignore_patterns[%d] must be 1 to %d characters", i, MaxLogIgnorePatternLength)
		}
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return fmt.Errorf("log_ignore_patterns[%d] must be valid UTF-8 without NUL characters", i)
		}
	}
	return nil
}
