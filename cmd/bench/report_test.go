package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseActorMemory(t *testing.T) {
	cases := []struct {
		name    string
		out     string
		want    map[int]float64
		wantErr bool
	}{
		{"both sizes", `goos: linux
goarch: amd64
pkg: github.com/svc-dev/svc/actors
BenchmarkSessionActorMemory/10000-2         	       1	 512345678 ns/op	      2024 heap-bytes/actor
BenchmarkSessionActorMemory/100000-2        	       1	5123456789 ns/op	      1777 heap-bytes/actor
PASS
`, map[int]float64{10000: 2024, 100000: 1777}, false},
		{"GOMAXPROCS=1 has no suffix, fractions", "BenchmarkSessionActorMemory/10000 \t 1\t 5 ns/op\t 2024.5 heap-bytes/actor\n",
			map[int]float64{10000: 2024.5}, false},
		{"other benchmarks ignored", "BenchmarkOther/10000-2 1 5 ns/op 9 heap-bytes/actor\nBenchmarkSessionActorMemory/100000-2 1 5 ns/op 1800 heap-bytes/actor\n",
			map[int]float64{100000: 1800}, false},
		{"no metric", "BenchmarkSessionActorMemory/10000-2 1 5 ns/op\nFAIL\n", nil, true},
		{"empty", "", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseActorMemory(tc.out)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("[%d] = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func TestReplaceSection(t *testing.T) {
	cases := []struct {
		name, doc, want string
		wantErr         bool
	}{
		{"no markers: after the title", "# Benchmarks\n\nold text\n",
			"# Benchmarks\n\n" + beginMarker + "\nNEW\n" + endMarker + "\n\nold text\n", false},
		{"markers: replaced, rest kept", "# B\n\n" + beginMarker + "\nOLD\nOLD\n" + endMarker + "\n\ntail\n",
			"# B\n\n" + beginMarker + "\nNEW\n" + endMarker + "\n\ntail\n", false},
		{"only begin", "# B\n" + beginMarker + "\n", "", true},
		{"end before begin", "# B\n" + endMarker + "\n" + beginMarker + "\n", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReplaceSection(tc.doc, "NEW\n")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
			if err == nil { // a second run changes nothing
				again, _ := ReplaceSection(got, "NEW\n")
				if again != got {
					t.Errorf("not idempotent:\n%q", again)
				}
			}
		})
	}
}

func TestVerdicts(t *testing.T) {
	cases := []struct {
		name, got, want string
	}{
		{"at least, met", atLeast(61_000, 60_000), "yes"},
		{"at least, short", atLeast(20_000, 60_000), "no (3.0× short)"},
		{"at least, zero", atLeast(0, 60_000), "no"},
		{"below, met", below(24.9, 25), "yes"},
		{"below, over", below(131, 25), "no (5.2× over)"},
		{"below, equal is over", below(25, 25), "no (1.0× over)"},
		{"thousands", thousands(1234567.4), "1,234,567"},
		{"thousands small", thousands(999), "999"},
		{"thousands negative", thousands(-1234), "-1,234"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestBuildRows(t *testing.T) {
	r := results{decodeItems: 100_000, decodeWall: time.Second, decodeCPU: time.Second, // ceiling 200k/s
		embedded: &e2e{
			full: summary{ItemsPerSec: 20_000, BatchesPerSec: 338, Latency: latency{P50: 11, P90: 57, P99: 163}},
			half: summary{ItemsPerSec: 10_000, BatchesPerSec: 169, BySize: []sizeLatency{{Items: "50-149", Requests: 40, Latency: latency{P99: 50}}}},
		},
		productionWhy: "skipped: run under make bench",
		actorMem:      map[int]float64{10_000: 2024, 100_000: 1777},
	}
	table := Table(buildRows(r))
	for _, want := range []string{
		"| (a) decode + validate, corpus in-process | 100,000 items per CPU-second (ceiling on 2 cores: 200,000 items/s) |",
		"| (b) embedded store, flat out | 20,000 items/s, 338 batches/s; p50 11.0 / p90 57.0 / p99 163.0 ms | ≥ 60,000 items/s | no (3.0× short) |",
		"| (b) embedded store, half rate, p99 of 50–149-item batches | 50.0 ms (40 requests) | < 25 ms | no (2.0× over) |",
		"| (b)/(a) embedded store ÷ decode ceiling | 0.100 |",
		"| (c) ClickHouse + PostgreSQL, flat out | skipped: run under make bench |",
		"| (d) dashboard query latency | not measured: needs the issue-3 endpoints |",
		"| (e) heap per live session actor, 100,000 actors | 1,777 B/actor (178 MB for 100,000) | 100k actors < 512 MB RSS (this is heap only) | yes |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks\n%s\nin\n%s", want, table)
		}
	}
	if strings.Contains(table, "(c)/(a)") {
		t.Errorf("a skipped store has no ratio:\n%s", table)
	}
}
