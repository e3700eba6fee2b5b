package main

import (
	"testing"
	"time"
)

func TestMetricSum(t *testing.T) {
	text := `# HELP svc_flush_rows_total Rows written to the event store, by table.
# TYPE svc_flush_rows_total counter
svc_flush_rows_total{table="events"} 1.5e+06
svc_flush_rows_total{table="spans"} 2500
svc_flush_rows_totally 7
svc_session_actors 100000
svc_spool_pending_bytes{node="a b"} 42
`
	for _, c := range []struct {
		name string
		want float64
		ok   bool
	}{
		{"svc_flush_rows_total", 1_502_500, true},
		{"svc_session_actors", 100_000, true},
		{"svc_spool_pending_bytes", 42, true},
		{"svc_flush_rows", 0, false},
		{"svc_missing", 0, false},
	} {
		got, ok := metricSum(text, c.name)
		if got != c.want || ok != c.ok {
			t.Errorf("metricSum(%s) = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestStoredValue(t *testing.T) {
	for _, c := range []struct {
		e    e2e
		want string
	}{
		{e2e{}, ""},
		{e2e{stored: 12345.6, backlog: 256 << 20, full: summary{ItemsPerSec: 10000}}, "; the store took 12,346 rows/s meanwhile, 256 MiB acknowledged but not yet stored at the end"},
		{e2e{stored: 12345.6, backlog: 256 << 20, full: summary{ItemsPerSec: 20000}}, "; the store took 12,346 rows/s meanwhile, 256 MiB acknowledged but not yet stored at the end (the verdict and the rows below use the store's rate)"},
	} {
		if got := storedValue(&c.e); got != c.want {
			t.Errorf("storedValue(%+v) = %q, want %q", c.e, got, c.want)
		}
		if want := min(c.e.full.ItemsPerSec, c.e.stored); c.e.stored > 0 && c.e.sustained() != want {
			t.Errorf("sustained(%+v) = %v, want %v", c.e, c.e.sustained(), want)
		}
	}
}

func TestStagesBetween(t *testing.T) {
	before := parseStages(`svc_ingest_stage_seconds_bucket{stage="spool_append",le="0.001"} 10
svc_ingest_stage_seconds_bucket{stage="spool_append",le="0.002"} 10
svc_ingest_stage_seconds_bucket{stage="spool_append",le="+Inf"} 10
svc_ingest_stage_seconds_sum{stage="spool_append"} 0.005
svc_ingest_stage_seconds_count{stage="spool_append"} 10
`)
	after := parseStages(`# HELP svc_ingest_stage_seconds Time PUT /events spends in each step of an accepted request.
svc_ingest_stage_seconds_bucket{stage="spool_append",le="0.001"} 60
svc_ingest_stage_seconds_bucket{stage="spool_append",le="0.002"} 109
svc_ingest_stage_seconds_bucket{stage="spool_append",le="+Inf"} 110
svc_ingest_stage_seconds_sum{stage="spool_append"} 0.105
svc_ingest_stage_seconds_count{stage="spool_append"} 110
svc_ingest_stage_seconds_bucket{stage="gate_begin",le="0.001"} 99
svc_ingest_stage_seconds_bucket{stage="gate_begin",le="0.002"} 100
svc_ingest_stage_seconds_bucket{stage="gate_begin",le="+Inf"} 100
svc_ingest_stage_seconds_sum{stage="gate_begin"} 0.05
svc_ingest_stage_seconds_count{stage="gate_begin"} 100
svc_ingest_stage_seconds_bucket{stage="respond",le="0.001"} 0
svc_ingest_stage_seconds_bucket{stage="respond",le="0.002"} 0
svc_ingest_stage_seconds_bucket{stage="respond",le="+Inf"} 4
svc_ingest_stage_seconds_sum{stage="respond"} 0.04
svc_ingest_stage_seconds_count{stage="respond"} 4
svc_ingest_stage_seconds_bucket{stage="idle",le="+Inf"} 0
svc_ingest_stage_seconds_count{stage="idle"} 0
`)
	got := stagesValue(stagesBetween(before, after))
	// respond: mean 10 ms, p99 past the last finite bucket; spool_append: 100 new requests,
	// mean 1 ms, 99 of them within 2 ms; gate_begin: mean 0.5 ms, 99 within 1 ms; idle: none.
	want := "respond 10.00 / > 2.0, spool_append 1.00 / ≤ 2.0, gate_begin 0.50 / ≤ 1.0"
	if got != want {
		t.Errorf("stagesValue = %q\nwant          %q", got, want)
	}
	if got := stagesValue(stagesBetween(after, after)); got != "" {
		t.Errorf("no requests between equal snapshots: got %q", got)
	}
}

// TestSchedLatencies reads the runtime's unlabelled histogram, whose sum and count lines have
// no braces, and ignores the other histograms around it.
func TestSchedLatencies(t *testing.T) {
	before := histograms(`go_sched_latencies_seconds_bucket{le="6.4e-08"} 100
go_sched_latencies_seconds_bucket{le="0.001"} 190
go_sched_latencies_seconds_bucket{le="0.01"} 200
go_sched_latencies_seconds_bucket{le="+Inf"} 200
go_sched_latencies_seconds_sum 0.1
go_sched_latencies_seconds_count 200
`, schedLatencies, "")
	after := histograms(`# TYPE go_sched_latencies_seconds histogram
go_sched_latencies_seconds_bucket{le="6.4e-08"} 500
go_sched_latencies_seconds_bucket{le="0.001"} 1180
go_sched_latencies_seconds_bucket{le="0.01"} 1200
go_sched_latencies_seconds_bucket{le="+Inf"} 1200
go_sched_latencies_seconds_sum 2.1
go_sched_latencies_seconds_count 1200
go_gc_duration_seconds{quantile="0.5"} 0.001
go_gc_duration_seconds_sum 7
go_gc_duration_seconds_count 9
svc_ingest_stage_seconds_count{stage="respond"} 4
`, schedLatencies, "")
	s := stagesBetween(before, after)
	// 1,000 waits, 2 s in all (mean 2 ms); the 990th within 1 ms.
	if len(s) != 1 || s[0].Count != 1000 || s[0].Mean != 2*time.Millisecond || s[0].P99 != time.Millisecond || s[0].P99AtLeast {
		t.Fatalf("got %+v", s)
	}
}
