package main

import "testing"

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
		{e2e{stored: 12345.6, backlog: 256 << 20}, "; the store took 12,346 rows/s meanwhile, 256 MiB acknowledged but not yet stored at the end"},
	} {
		if got := storedValue(&c.e); got != c.want {
			t.Errorf("storedValue(%+v) = %q, want %q", c.e, got, c.want)
		}
	}
}
