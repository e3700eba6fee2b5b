package model

import (
	"encoding/json"
	"math/rand"
	"slices"
	"testing"
)

func TestLaunchDuration(t *testing.T) {
	cases := []struct {
		name, typ, payload string
		kind               string
		ms                 float64
		ok                 bool
	}{
		// Real SDK payloads (fixtures).
		{"android cold, requested null", "cold_launch", `{"process_start_uptime":104153515,"process_start_requested_uptime":null,"content_provider_attach_uptime":104153596,"on_next_draw_uptime":104154217,"launched_activity":"a","has_saved_state":false}`,
			"cold", 104154217 - 104153515, true},
		{"android cold, requested first", "cold_launch", `{"process_start_uptime":28985416,"process_start_requested_uptime":28985370,"content_provider_attach_uptime":28985440,"on_next_draw_uptime":28985608}`,
			"cold", 28985608 - 28985370, true},
		{"ios cold, zeros", "cold_launch", `{"process_start_uptime":1742049396000,"process_start_requested_uptime":0,"content_provider_attach_uptime":0,"on_next_draw_uptime":1742049398095}`,
			"cold", 2095, true},
		{"android warm", "warm_launch", `{"process_start_uptime":265919422,"process_start_requested_uptime":265919382,"content_provider_attach_uptime":265919447,"app_visible_uptime":265919485,"on_next_draw_uptime":265919597}`,
			"warm", 112, true},
		{"ios warm", "warm_launch", `{"app_visible_uptime":1742053005000,"on_next_draw_uptime":1742053006188}`, "warm", 1188, true},
		{"hot", "hot_launch", `{"app_visible_uptime":137180,"on_next_draw_uptime":137208}`, "hot", 28, true},
		// Bounds.
		{"cold provider only", "cold_launch", `{"content_provider_attach_uptime":100,"on_next_draw_uptime":350}`, "cold", 250, true},
		{"cold exactly 30 s", "cold_launch", `{"process_start_uptime":1000,"on_next_draw_uptime":31000}`, "cold", 30000, true},
		{"cold over 30 s", "cold_launch", `{"process_start_uptime":1000,"on_next_draw_uptime":31001}`, "cold", 0, false},
		{"cold zero", "cold_launch", `{"process_start_uptime":1000,"on_next_draw_uptime":1000}`, "cold", 0, false},
		{"cold negative", "cold_launch", `{"process_start_uptime":2000,"on_next_draw_uptime":1000}`, "cold", 0, false},
		{"cold no start", "cold_launch", `{"on_next_draw_uptime":1000}`, "cold", 0, false},
		{"warm exactly 10 s", "warm_launch", `{"app_visible_uptime":5,"on_next_draw_uptime":10005}`, "warm", 10000, true},
		{"warm over 10 s", "warm_launch", `{"app_visible_uptime":5,"on_next_draw_uptime":10006}`, "warm", 0, false},
		{"warm no app_visible", "warm_launch", `{"process_start_uptime":5,"on_next_draw_uptime":100}`, "warm", 0, false},
		{"warm lukewarm bool", "warm_launch", `{"app_visible_uptime":5,"on_next_draw_uptime":100,"is_lukewarm":true}`, "warm", 0, false},
		{"warm lukewarm string", "warm_launch", `{"app_visible_uptime":5,"on_next_draw_uptime":100,"is_lukewarm":"true"}`, "warm", 0, false},
		{"warm not lukewarm string", "warm_launch", `{"app_visible_uptime":5,"on_next_draw_uptime":100,"is_lukewarm":"false"}`, "warm", 95, true},
		{"warm lukewarm false", "warm_launch", `{"is_lukewarm":false,"app_visible_uptime":5,"on_next_draw_uptime":100}`, "warm", 95, true},
		{"hot long is counted", "hot_launch", `{"app_visible_uptime":5,"on_next_draw_uptime":60005}`, "hot", 60000, true},
		{"hot zero", "hot_launch", `{"app_visible_uptime":5,"on_next_draw_uptime":5}`, "hot", 0, false},
		{"hot no app_visible", "hot_launch", `{"on_next_draw_uptime":5000}`, "hot", 0, false},
		// Not launches, bad payloads.
		{"other kind", "custom", `{"name":"x"}`, "", 0, false},
		{"malformed", "hot_launch", `{"app_visible_uptime":`, "hot", 0, false},
		{"fraction ignored", "hot_launch", `{"app_visible_uptime":5.5,"on_next_draw_uptime":10}`, "hot", 0, false},
	}
	for _, c := range cases {
		kind, ms, ok := LaunchDuration(&Event{Type: c.typ, Payload: []byte(c.payload)})
		if kind != c.kind || ms != c.ms || ok != c.ok {
			t.Errorf("%s: got (%q, %v, %v), want (%q, %v, %v)", c.name, kind, ms, ok, c.kind, c.ms, c.ok)
		}
	}
}

// TestLaunchDurationFixtures runs every launch event of the fixtures through the decoder and
// compares with the rule computed independently from the payload with encoding/json.
func TestLaunchDurationFixtures(t *testing.T) {
	counted, excluded := 0, 0
	for name, body := range fixtureBatches(t) {
		b, err := DecodeBatch(body, testApp, false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Events {
			e := &b.Events[i]
			kind, ms, ok := LaunchDuration(e)
			switch e.Type {
			case "cold_launch", "warm_launch", "hot_launch":
			default:
				if ok || kind != "" {
					t.Errorf("%s: %s counted as a launch", name, e.Type)
				}
				continue
			}
			var raw map[string]any
			if err := json.Unmarshal(e.Payload, &raw); err != nil {
				t.Fatal(err)
			}
			num := func(k string) float64 { f, _ := raw[k].(float64); return f }
			var p struct{ Requested, Process, Provider, Visible, Draw float64 }
			p.Requested, p.Process, p.Provider = num("process_start_requested_uptime"), num("process_start_uptime"), num("content_provider_attach_uptime")
			p.Visible, p.Draw = num("app_visible_uptime"), num("on_next_draw_uptime")
			lukewarm := raw["is_lukewarm"] == true || raw["is_lukewarm"] == "true"
			var want float64
			wantOK := false
			switch e.Type {
			case "cold_launch":
				start := p.Requested
				if start == 0 {
					start = p.Process
				}
				if start == 0 {
					start = p.Provider
				}
				want = p.Draw - start
				wantOK = start > 0 && want > 0 && want <= 30000
			case "warm_launch":
				want = p.Draw - p.Visible
				wantOK = p.Visible > 0 && want > 0 && want <= 10000 && !lukewarm
			case "hot_launch":
				want = p.Draw - p.Visible
				wantOK = p.Visible > 0 && want > 0
			}
			if !wantOK {
				want = 0
			}
			if ok != wantOK || ms != want || kind+"_launch" != e.Type {
				t.Errorf("%s %s: got (%q, %v, %v), want (%v, %v) from %s", name, e.Type, kind, ms, ok, want, wantOK, e.Payload)
			}
			if ok {
				counted++
			} else {
				excluded++
			}
		}
	}
	// The fixtures hold both counted launches and excluded ones (a lukewarm launch, a warm
	// launch over 10 s).
	if counted < 10 || excluded < 2 {
		t.Fatalf("counted %d, excluded %d launch events", counted, excluded)
	}
}

func TestP95(t *testing.T) {
	seq := func(n int) []float64 { // 1..n, shuffled
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i + 1)
		}
		rand.New(rand.NewSource(int64(n))).Shuffle(n, func(i, j int) { v[i], v[j] = v[j], v[i] })
		return v
	}
	cases := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1}, 3},          // ⌊1.9⌋ = 1
		{seq(10), 10},                 // ⌊9.5⌋ = 9
		{seq(19), 19},                 // ⌊18.05⌋ = 18
		{seq(20), 20},                 // 0.95·20 is 19 in float64
		{seq(21), 20},                 // ⌊19.95⌋ = 19
		{seq(100), 96},                // ⌊95⌋
		{seq(1000), 951},              // ⌊950⌋
		{[]float64{5, 5, 5, 1, 9}, 9}, // ⌊4.75⌋ = 4
		{[]float64{2, 2, 2, 2, 2}, 2},
	}
	for _, c := range cases {
		before := slices.Clone(c.in)
		if got := P95(c.in); got != c.want {
			t.Errorf("P95 of %d values: %v, want %v", len(c.in), got, c.want)
		}
		if !slices.Equal(before, c.in) {
			t.Error("P95 modified its input")
		}
	}
}
