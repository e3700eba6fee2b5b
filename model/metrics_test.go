package model

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestComputeMetrics(t *testing.T) {
	cases := []struct {
		name string
		in   MetricsInput
		want HealthMetrics
	}{
		{
			name: "selected and others",
			in: MetricsInput{
				AllSessions: 300,
				Selected:    SessionCounts{Sessions: 200, Crashed: 10, CrashedForeground: 4, ANR: 2, ANRForeground: 1},
				Others:      SessionCounts{Sessions: 120, Crashed: 30, CrashedForeground: 12, ANR: 0, ANRForeground: 0},
				SelectedLaunch: Launches{
					Cold: LaunchSummary{Count: 50, P95: 900},
					Warm: LaunchSummary{Count: 5, P95: 300},
				},
				OthersLaunch: Launches{
					Cold: LaunchSummary{Count: 80, P95: 1200},
					Hot:  LaunchSummary{Count: 3, P95: 40},
				},
				SelectedSize: 1_000_000, HasSelectedSize: true,
				OtherSizes: []int64{900_000, 950_001},
			},
			want: HealthMetrics{
				Adoption: AdoptionMetric{AllVersions: 300, SelectedVersion: 200, Adoption: 66.67},
				// 95 / 75 = 1.2666…
				CrashFreeSessions: CrashFreeMetric{CrashFreeSessions: 95, Delta: 1.27, UnselectedCrashFreeSessions: 75},
				// 98 / 90 = 1.0888…
				PerceivedCrashFreeSessions: PerceivedCrashFreeMetric{PerceivedCrashFreeSessions: 98, Delta: 1.09, UnselectedPerceivedCrashFreeSessions: 90},
				// 99 / 100
				ANRFreeSessions: ANRFreeMetric{ANRFreeSessions: 99, Delta: 0.99, UnselectedANRFreeSessions: 100},
				// 99.5 / 100
				PerceivedANRFreeSessions: PerceivedANRFreeMetric{PerceivedANRFreeSessions: 99.5, Delta: 1, UnselectedPerceivedANRFreeSessions: 100},
				ColdLaunch:               LaunchMetric{P95: 900, Delta: 0.75, UnselectedP95: 1200},
				WarmLaunch:               LaunchMetric{P95: 300, Delta: 1, UnselectedNoData: true}, // no other warm launches
				HotLaunch:                LaunchMetric{NaN: true, NoData: true, UnselectedP95: 40}, // none selected, some others
				Sizes:                    SizeMetric{AverageAppSize: 925_001, SelectedAppSize: 1_000_000, Delta: 74_999},
			},
		},
		{
			name: "only the selected version exists",
			in: MetricsInput{
				AllSessions:    3,
				Selected:       SessionCounts{Sessions: 3, Crashed: 1, CrashedForeground: 1},
				SelectedLaunch: Launches{Hot: LaunchSummary{Count: 1, P95: 12}},
				SelectedSize:   10, HasSelectedSize: true,
			},
			want: HealthMetrics{
				Adoption:                   AdoptionMetric{AllVersions: 3, SelectedVersion: 3, Adoption: 100},
				CrashFreeSessions:          CrashFreeMetric{CrashFreeSessions: 66.67, Delta: 1, UnselectedNoData: true},
				PerceivedCrashFreeSessions: PerceivedCrashFreeMetric{PerceivedCrashFreeSessions: 66.67, Delta: 1, UnselectedNoData: true},
				ANRFreeSessions:            ANRFreeMetric{ANRFreeSessions: 100, Delta: 1, UnselectedNoData: true},
				PerceivedANRFreeSessions:   PerceivedANRFreeMetric{PerceivedANRFreeSessions: 100, Delta: 1, UnselectedNoData: true},
				ColdLaunch:                 LaunchMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				WarmLaunch:                 LaunchMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				HotLaunch:                  LaunchMetric{P95: 12, Delta: 1, UnselectedNoData: true},
				Sizes:                      SizeMetric{SelectedAppSize: 10, NaN: true}, // no other build: 0/0
			},
		},
		{
			name: "nothing at all",
			in:   MetricsInput{},
			want: HealthMetrics{
				Adoption:                   AdoptionMetric{NaN: true, NoData: true},
				CrashFreeSessions:          CrashFreeMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				PerceivedCrashFreeSessions: PerceivedCrashFreeMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				ANRFreeSessions:            ANRFreeMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				PerceivedANRFreeSessions:   PerceivedANRFreeMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				ColdLaunch:                 LaunchMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				WarmLaunch:                 LaunchMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				HotLaunch:                  LaunchMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				Sizes:                      SizeMetric{NaN: true, NoData: true},
			},
		},
		{
			name: "others all crashed, selected has no sessions",
			in: MetricsInput{
				AllSessions:  4,
				Others:       SessionCounts{Sessions: 4, Crashed: 4, CrashedForeground: 2, ANR: 1},
				OthersLaunch: Launches{Cold: LaunchSummary{Count: 2, P95: 100}},
				OtherSizes:   []int64{5},
			},
			want: HealthMetrics{
				Adoption:                   AdoptionMetric{AllVersions: 4, SelectedVersion: 0, Adoption: 0},
				CrashFreeSessions:          CrashFreeMetric{NaN: true, NoData: true},
				PerceivedCrashFreeSessions: PerceivedCrashFreeMetric{NaN: true, NoData: true, UnselectedPerceivedCrashFreeSessions: 50},
				ANRFreeSessions:            ANRFreeMetric{NaN: true, NoData: true, UnselectedANRFreeSessions: 75},
				PerceivedANRFreeSessions:   PerceivedANRFreeMetric{NaN: true, NoData: true, UnselectedPerceivedANRFreeSessions: 100},
				ColdLaunch:                 LaunchMetric{NaN: true, NoData: true, UnselectedP95: 100},
				WarmLaunch:                 LaunchMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				HotLaunch:                  LaunchMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				Sizes:                      SizeMetric{AverageAppSize: 5, NaN: true, NoData: true}, // selected size unknown
			},
		},
		{
			name: "others all crashed: the delta divides by zero",
			in: MetricsInput{
				AllSessions: 6,
				Selected:    SessionCounts{Sessions: 2},
				Others:      SessionCounts{Sessions: 4, Crashed: 4, CrashedForeground: 4, ANR: 4, ANRForeground: 4},
			},
			want: HealthMetrics{
				Adoption:                   AdoptionMetric{AllVersions: 6, SelectedVersion: 2, Adoption: 33.33},
				CrashFreeSessions:          CrashFreeMetric{CrashFreeSessions: 100, NaN: true},
				PerceivedCrashFreeSessions: PerceivedCrashFreeMetric{PerceivedCrashFreeSessions: 100, NaN: true},
				ANRFreeSessions:            ANRFreeMetric{ANRFreeSessions: 100, NaN: true},
				PerceivedANRFreeSessions:   PerceivedANRFreeMetric{PerceivedANRFreeSessions: 100, NaN: true},
				ColdLaunch:                 LaunchMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				WarmLaunch:                 LaunchMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				HotLaunch:                  LaunchMetric{Delta: 1, NaN: true, NoData: true, UnselectedNoData: true},
				Sizes:                      SizeMetric{NaN: true, NoData: true},
			},
		},
	}
	for _, c := range cases {
		if got := ComputeMetrics(&c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// TestHealthMetricsJSON pins the member names and types of the spec.
func TestHealthMetricsJSON(t *testing.T) {
	m := ComputeMetrics(&MetricsInput{AllSessions: 2, Selected: SessionCounts{Sessions: 1}, Others: SessionCounts{Sessions: 1, Crashed: 1},
		SelectedSize: 7, HasSelectedSize: true, OtherSizes: []int64{3}})
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	// The contract's members, then (beside them) the reference dashboard's comparison fields.
	const want = `{"adoption":{"all_versions":2,"selected_version":1,"adoption":50,"nan":false,"no_data":false},` +
		`"anr_free_sessions":{"anr_free_sessions":100,"delta":1,"nan":false,"unselected_anr_free_sessions":100,"no_data":false,"unselected_no_data":false},` +
		`"crash_free_sessions":{"crash_free_sessions":100,"delta":0,"nan":true,"unselected_crash_free_sessions":0,"no_data":false,"unselected_no_data":false},` +
		`"perceived_anr_free_sessions":{"perceived_anr_free_sessions":100,"delta":1,"nan":false,"unselected_perceived_anr_free_sessions":100,"no_data":false,"unselected_no_data":false},` +
		`"perceived_crash_free_sessions":{"perceived_crash_free_sessions":100,"delta":1,"nan":false,"unselected_perceived_crash_free_sessions":100,"no_data":false,"unselected_no_data":false},` +
		`"cold_launch":{"p95":0,"delta":1,"nan":true,"unselected_p95":0,"no_data":true,"unselected_no_data":true},` +
		`"warm_launch":{"p95":0,"delta":1,"nan":true,"unselected_p95":0,"no_data":true,"unselected_no_data":true},` +
		`"hot_launch":{"p95":0,"delta":1,"nan":true,"unselected_p95":0,"no_data":true,"unselected_no_data":true},` +
		`"sizes":{"average_app_size":3,"selected_app_size":7,"delta":4,"nan":false,"no_data":false}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestAddSession(t *testing.T) {
	v1, v2, v3 := AppVersion{"1.0", "1"}, AppVersion{"2.0", "2"}, AppVersion{"2.0", "3"}
	var in MetricsInput
	in.AddSession([]SessionVersionFacts{{Version: v2}}, v2)
	in.AddSession([]SessionVersionFacts{{Version: v2, Crashed: true, CrashedForeground: true}}, v2)
	in.AddSession([]SessionVersionFacts{{Version: v1, ANR: true}}, v2)
	in.AddSession([]SessionVersionFacts{{Version: v3, Crashed: true}}, v2) // same name, other code
	// An update within the session: it counts on both sides, each with its own flags.
	in.AddSession([]SessionVersionFacts{{Version: v1, Crashed: true}, {Version: v2, ANR: true, ANRForeground: true}}, v2)
	in.AddSession(nil, v2) // no version: not counted
	want := MetricsInput{
		AllSessions: 5,
		Selected:    SessionCounts{Sessions: 3, Crashed: 1, CrashedForeground: 1, ANR: 1, ANRForeground: 1},
		Others:      SessionCounts{Sessions: 3, Crashed: 2, ANR: 1},
	}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("got %+v\nwant %+v", in, want)
	}
	if got := SummarizeLaunches([]float64{30, 10, 20}); got != (LaunchSummary{Count: 3, P95: 30}) {
		t.Errorf("SummarizeLaunches: %+v", got)
	}
}

func TestFreeSessions(t *testing.T) {
	cases := []struct {
		sessions, bad uint64
		want          float64
		nan           bool
	}{
		{0, 0, 0, true},
		{3, 0, 100, false},
		{3, 1, 66.67, false},
		{3, 3, 0, false},
		{8, 1, 87.5, false},
		{200000, 1, 100, false}, // 99.9995 rounds up
	}
	for _, c := range cases {
		if got, nan := FreeSessions(c.sessions, c.bad); got != c.want || nan != c.nan {
			t.Errorf("FreeSessions(%d, %d) = %v %v, want %v %v", c.sessions, c.bad, got, nan, c.want, c.nan)
		}
	}
}
