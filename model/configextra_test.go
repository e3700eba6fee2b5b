package model

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestSDKConfigExtraValidate(t *testing.T) {
	ok := DefaultSDKConfigExtra()
	if err := ok.Validate(); err != nil {
		t.Fatalf("the default is invalid: %v", err)
	}
	cases := []struct {
		name    string
		edit    func(e *SDKConfigExtra)
		wantErr string // "" means valid
	}{
		{"rates at the bounds", func(e *SDKConfigExtra) { e.HTTPSamplingRate, e.ProfileSamplingRate = 0, 100 }, ""},
		{"fractional rate", func(e *SDKConfigExtra) { e.HTTPSamplingRate = 0.01 }, ""},
		{"HTTP rate over 100", func(e *SDKConfigExtra) { e.HTTPSamplingRate = 100.01 }, "http_sampling_rate must be a percentage between 0 and 100, got 100.01"},
		{"negative profile rate", func(e *SDKConfigExtra) { e.ProfileSamplingRate = -1 }, "profile_sampling_rate must be a percentage"},
		{"NaN rate", func(e *SDKConfigExtra) { e.HTTPSamplingRate = math.NaN() }, "http_sampling_rate must be a percentage"},
		{"every severity", nil, ""},
		{"severity 0", func(e *SDKConfigExtra) { e.LogMinSeverity = 0 }, "log_min_severity must be one of 8 (debug), 12 (info), 16 (warning), 20 (error), 24 (fatal), got 0"},
		{"severity 9", func(e *SDKConfigExtra) { e.LogMinSeverity = 9 }, "got 9"},
		{"nil patterns", func(e *SDKConfigExtra) { e.LogIgnorePatterns = nil }, ""},
		{"patterns", func(e *SDKConfigExtra) { e.LogIgnorePatterns = []string{`^GC\s`, "(?i)noise"} }, ""},
		{"blank pattern", func(e *SDKConfigExtra) { e.LogIgnorePatterns = []string{"a", "  "} }, "log_ignore_patterns[1] must be 1 to 2048 characters"},
		{"empty pattern", func(e *SDKConfigExtra) { e.LogIgnorePatterns = []string{""} }, "log_ignore_patterns[0] must be 1 to 2048 characters"},
		{"long pattern", func(e *SDKConfigExtra) { e.LogIgnorePatterns = []string{strings.Repeat("x", 2049)} }, "log_ignore_patterns[0] must be 1 to 2048"},
		{"NUL", func(e *SDKConfigExtra) { e.LogIgnorePatterns = []string{"a\x00"} }, "log_ignore_patterns[0] must be valid UTF-8 without NUL"},
		{"invalid UTF-8", func(e *SDKConfigExtra) { e.LogIgnorePatterns = []string{"\xc3"} }, "log_ignore_patterns[0] must be valid UTF-8 without NUL"},
		{"too many", func(e *SDKConfigExtra) { e.LogIgnorePatterns = make([]string, 101) }, "log_ignore_patterns holds at most 100 entries, got 101"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.edit == nil {
				for sev := range LogSeverities {
					e := DefaultSDKConfigExtra()
					e.LogMinSeverity = sev
					if err := e.Validate(); err != nil {
						t.Errorf("severity %d: %v", sev, err)
					}
				}
				return
			}
			e := DefaultSDKConfigExtra()
			tc.edit(&e)
			err := e.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			case err == nil && e.LogIgnorePatterns == nil:
				t.Error("a valid nil pattern list was left nil")
			}
		})
	}
}

// TestSDKConfigExtraJSON: the extra settings' names are the dashboard's, and none of them is a
// member of SDKConfig (which GET /config serves).
func TestSDKConfigExtraJSON(t *testing.T) {
	b, err := json.Marshal(DefaultSDKConfigExtra())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"http_sampling_rate":100,"profile_sampling_rate":100,"log_autocollect_enabled":false,"log_min_severity":16,"log_ignore_patterns":[]}`
	if string(b) != want {
		t.Errorf("default extra settings encode as %s, want %s", b, want)
	}
	var extra, sdk map[string]any
	_ = json.Unmarshal(b, &extra)
	cb, _ := json.Marshal(DefaultSDKConfig())
	_ = json.Unmarshal(cb, &sdk)
	for k := range extra {
		if _, ok := sdk[k]; ok {
			t.Errorf("%s is both an SDKConfig and an SDKConfigExtra member", k)
		}
	}
}

func TestDefaultNotifPrefs(t *testing.T) {
	p := DefaultNotifPrefs()
	if !p.ErrorSpike || !p.AppHangSpike || !p.BugReport || !p.DailySummary || !p.CreatedAt.IsZero() || !p.UpdatedAt.IsZero() {
		t.Errorf("DefaultNotifPrefs() = %+v, want every notification on and no times", p)
	}
}
