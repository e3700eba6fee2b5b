package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	fixtures "github.com/svc-dev/svc/model/corpus"
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
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	r := results{decodeItems: 100_000, decodeWall: time.Second, decodeCPU: time.Second, // 10 µs/item, ceiling 200k/s
		appendPart: &appendCost{Appends: 1000, Writers: 8, Wall: time.Second, CPU: 50 * time.Millisecond, ItemsPerReq: 50}, // 1 µs/item
		badgerPart: &insertCost{Rows: 100_000, Batch: 10_000, Wall: time.Second, CPU: 900 * time.Millisecond},              // 9 µs/row
		chWhy:      "failed: no clickhouse-server process",
		// 1M items: loadgen 5 µs and the receiver 2 µs per item.
		floor: &floorCost{Run: summary{Items: 1_000_000, ItemsPerSec: 100_000, BatchesPerSec: 1_639, CPU: 5 * time.Second}, Workers: 8, Receiver: 2 * time.Second},
		embedded: &e2e{
			// 300k items in 15 s on 2 cores (3,000 ticks, 2,700 busy): node 1,800 ticks = 60 µs per item.
			cpu: &machineCPU{Busy: 2_700, Total: 3_000, Node: 1_800, Loadgen: 6 * time.Second, Items: 300_000,
				DrainNode: 90, Drain: 4500 * time.Millisecond},
			spool: &pacedAppend{Rate: 169.2, Writers: 8, Appends: 3_384, P50: ms(0.6), P90: ms(1.2), P99: ms(4.25), Wall: 20 * time.Second,
				Settle: settleRun{Waited: 10 * time.Second, First: cpuShares{Others: 0.05}, Last: cpuShares{Others: 0.02}, Settled: true}},
			tail: &tailSplit{Requests: 1_000, P50: ms(2), P99: ms(30), TraceSeconds: 6,
				Slow: tailPart{N: 40, Mean: ms(20), Running: ms(3), Runnable: ms(9), Syscal: ms(0.5),
					Blocked: []blockedOn{{"the spool's group sync", ms(5)}, {"session actors' replies", ms(2)}}},
				Fast: tailPart{N: 960, Mean: ms(2.5), Running: ms(1), Runnable: ms(0.2), Syscal: ms(0.2)},
				RanMeanwhile: []share{{"Badger's compactions", 0.4}, {"the other requests", 0.3}, {"the collector", 0.1},
					{"the actors", 0.08}, {"Badger's writes", 0.07}, {"the flusher", 0.03}, {"other goroutines", 0.02}},
				Writer: writerSplit{Syscalls: []time.Duration{ms(0.3), ms(0.2), ms(4), ms(0.4), ms(12)}, Waits: []time.Duration{ms(0.01), ms(3)}}},
			full: summary{ItemsPerSec: 20_000, BatchesPerSec: 338, Latency: latency{P50: 11, P90: 57, P99: 163}},
			half: summary{ItemsPerSec: 10_000, BatchesPerSec: 169, BySize: []sizeLatency{{Items: "50-149", Requests: 40, Latency: latency{P99: 50}}}},
			queries: &queryRun{Events: 500_000, Window: "7 days: default (the last 7 UTC days)",
				Settle: settleRun{Waited: 42 * time.Second, First: cpuShares{Node: 0.3, Others: 0.93}, Last: cpuShares{Node: 0.01, Bench: 0.005, Others: 0.04}, Settled: true}, Queries: []queryResult{
					{query: dashboardQueries[0], Requests: 300, P50: ms(0.3), P95: ms(0.5), P99: ms(0.8), Bytes: 2253},
					{query: dashboardQueries[1], Requests: 300, P50: ms(50), P95: ms(100), P99: ms(120), Bytes: 2253},
					{query: dashboardQueries[2], Requests: 300, P50: ms(60), P95: ms(110), P99: ms(130), Bytes: 2253},
					{query: dashboardQueries[3], Requests: 300, P50: ms(0.9), P95: ms(1.1), P99: ms(1.5), Bytes: 15672, Counted: true, GCs: 2, AllocPerReq: 24321.6, BenchGCs: 1,
						CPU: cpuShares{Node: 0.41, Bench: 0.22, Others: 0.03}, CPUKnown: true},
					{query: dashboardQueries[4], Requests: 300, P50: ms(200), P95: ms(300), P99: ms(400), Bytes: 19000},
					{query: dashboardQueries[5], Err: "GET /errorGroups: 500 Internal Server Error: {\"error\":\"a|b\"}\n"},
				}},
		},
		productionWhy: "skipped: run under make bench",
		actorMem:      map[int]float64{10_000: 2024, 100_000: 1777},
	}
	table := Table(buildRows(r))
	for _, want := range []string{
		"| (a) decode + validate, corpus in-process | 100,000 items per CPU-second, 10.00 µs per item (ceiling on 2 cores: 200,000 items/s) |",
		"| part: durable append per request (spool, fdatasync'ed) | 1,000 appends in 1.0 s by 8 writers (1,000/s); 50.0 µs CPU per append ÷ 50.0 items per request = 1.00 µs per item |",
		"| part: store insert per row, embedded (Badger) | 100,000 rows in 1.0 s (100,000/s, 10,000-row batches); 9.00 µs CPU per row |",
		"| part: store insert per row, ClickHouse | failed: no clickhouse-server process |",
		"| (b) embedded store, flat out | 20,000 items/s, 338 batches/s; p50 11.0 / p90 57.0 / p99 163.0 ms | ≥ 60,000 items/s | no (3.0× short) |",
		"| (b) embedded store, half rate, p99 of 50–149-item batches | 50.0 ms (40 requests) | < 10 ms | no (5.0× over) |",
		"| (b)/(a) embedded store ÷ decode ceiling | 0.100 | – | – |",
		"| (b) embedded store, half rate, what the requests of 10 ms or more spent their time on (an execution trace of the node in a second run at that rate) | 40 of 1,000 traced requests in 6 s (server-side p50 2.00 / p99 30.00 ms), mean 20.00 ms: running 3.00, waiting for a CPU 9.00, in system calls 0.50, blocked on the spool's group sync 5.00, blocked on session actors' replies 2.00 ms; while they waited for a CPU the node's processors ran Badger's compactions 40 %, the other requests 30 %, the collector 10 %, the actors 8 %, Badger's writes 7 %, the rest 5 %; the other 960, mean 2.50 ms: running 1.00, waiting for a CPU 0.20, in system calls 0.20 ms; over the whole trace the spool's writer made 5 system calls (its writes and fdatasyncs) of p50 0.40 / p99 12.00 / max 12.00 ms, and waited for a CPU 2 times, p99 3.00 / max 3.00 ms | – | – |",
		"| (b) embedded store, half rate, the spool alone at the same request rate (the node stopped): one durable append | p50 0.60 / p90 1.20 / p99 4.25 ms (3,384 appends asked at 169.2/s, 169.2/s done, by 8 writers: each waits for the group sync in flight, then its own; timed once other processes had settled: 10 s waited (first second: node 0 %, bench 0 %, other processes 5 % of the machine's CPUs; last: node 0 %, bench 0 %, other processes 2 % of the machine's CPUs)) | – | – |",
		"| floor: loadgen flat out against a receiver that only reads each body and answers 202 (no decode, no spool, no store) | 100,000 items/s, 1,639 requests/s by 8 workers; CPU per item: loadgen 5.00 µs, the receiver 2.00 µs |",
		fmt.Sprintf("| (b) embedded store, flat out, where the machine's CPU went per item acknowledged | node 60.0 + loadgen 20.0 + everything else 10.0 (by their own counters, which overlap the processes' time in part: the hypervisor's steal 0.0, interrupts 0.0, the kernel's threads and other processes not read (/proc could not be scanned), the bench 0.0) = 90.0 µs of CPU per item; idle 10.0 (0.0 of it with a disk request outstanding) (the machine %.2f of %d CPUs busy); once loadgen stopped, the node spent 3.0 µs more per item in the 4.5 s its store took for what the spool still held |",
			0.9*float64(runtime.NumCPU()), runtime.NumCPU()),
		"| (b) pipeline efficiency's ceiling, embedded store, with loadgen on the same cores: Σ ÷ (Σ + loadgen + receiving) | 0.741 (20.00 ÷ (20.00 + 5.00 loadgen, the floor's figure, + 2.00 receiving, the floor's) → at most 74,074 items/s on 2 cores; 0.75 needs loadgen + receiving ≤ Σ × 0.33 = 6.67 µs per item, before the node's own work past the parts; flat out the node used 63.00 µs per item (with the node's CPU after loadgen stopped, while its store caught up), 43.00 beyond Σ, against none left for it (loadgen and receiving alone take 0.33 more)) |",
		"| (b) pipeline efficiency, embedded store: end to end ÷ (2 cores ÷ Σ parts) | 0.200 (Σ = 10.00 decode + 1.00 append + 9.00 Badger insert = 20.00 µs CPU per item → ceiling 100,000 items/s) | ≥ 0.75 | no (3.8× short) |",
		"| (c) ClickHouse + PostgreSQL, flat out | skipped: run under make bench |",
		"| (d) embedded, events in the store | 500,000 (usage API); windows 7 days: default (the last 7 UTC days); timed once other processes had settled: 42 s waited (first second: node 30 %, bench 0 %, other processes 93 % of the machine's CPUs; last: node 1 %, bench 0 %, other processes 4 % of the machine's CPUs) | – | – |",
		"| (d) embedded, crashGroups, live, 7 days | p50 0.30 / p95 0.50 / p99 0.80 ms (300 requests, 2,253 B answer) | live < 1 ms p99 | yes |",
		"| (d) embedded, crashGroups, from the store, 7 days | p50 50.00 / p95 100.00 / p99 120.00 ms (300 requests, 2,253 B answer) | < 150 ms p95 on 10,000,000 events | not decided (500,000 events) |",
		"| (d) embedded, crashGroups, from the store, 30 days | p50 60.00 / p95 110.00 / p99 130.00 ms (300 requests, 2,253 B answer) | < 150 ms p95 on 10,000,000 events | not decided (500,000 events) |",
		"| (d) embedded, journey, live, 7 days | p50 0.90 / p95 1.10 / p99 1.50 ms (300 requests, 15,672 B answer; the node meanwhile: 2 garbage collections, 24,322 B allocated per request; the bench: 1 collections; CPU: node 41 %, bench 22 %, other processes 3 % of the machine's CPUs) | live < 1 ms p99 | no (1.5× over) |",
		"| (d) embedded, journey, from the store, 7 days | p50 200.00 / p95 300.00 / p99 400.00 ms (300 requests, 19,000 B answer) | < 300 ms p95 on 10,000,000 events | not decided (500,000 events) |",
		"| (d) embedded, errorGroups, from the store, 7 days | failed: GET /errorGroups: 500 Internal Server Error: {\"error\":\"a\\|b\"} | – | – |",
		"| (d) ClickHouse + PostgreSQL, dashboard queries | skipped: run under make bench | – | – |",
		"| (e) heap per live session actor, 100,000 actors | 1,777 B/actor (178 MB for 100,000) | – | – |",
	} {
		wantRow(t, table, want)
	}
	if strings.Contains(table, "(c)/(a)") || strings.Contains(table, "(c) pipeline efficiency") {
		t.Errorf("a skipped store has no ratio:\n%s", table)
	}
	if n := strings.Count(table, "\n"); n != len(buildRows(r))+2 {
		t.Errorf("%d lines for %d rows: a value broke its row:\n%s", n, len(buildRows(r)), table)
	}
	// Without the run's CPU split the ceiling row cannot say what the node used.
	noCPU := *r.embedded
	noCPU.cpu = nil
	r.embedded = &noCPU
	wantRow(t, Table(buildRows(r)), "0.75 needs loadgen + receiving ≤ Σ × 0.33 = 6.67 µs per item, before the node's own work past the parts) |")
}

// TestBuildRowsServerStore covers the ClickHouse side: the server's CPU counts in the insert
// part, and a missing part leaves the efficiency undecided rather than flattering it.
func TestBuildRowsServerStore(t *testing.T) {
	base := results{decodeItems: 100_000, decodeCPU: time.Second,
		appendPart: &appendCost{Appends: 1000, Wall: time.Second, CPU: 50 * time.Millisecond, ItemsPerReq: 50},
		chPart:     &insertCost{Rows: 200_000, Batch: 100_000, Wall: 2 * time.Second, CPU: time.Second, ServerCPU: time.Second, Server: true},
		badgerWhy:  "not measured",
		production: &e2e{full: summary{ItemsPerSec: 50_000}, half: summary{ItemsPerSec: 25_000}}}
	table := Table(buildRows(base))
	for _, want := range []string{
		"| part: store insert per row, ClickHouse | 200,000 rows in 2.0 s (100,000/s, 100,000-row batches); bench 5.00 + server 5.00 = 10.00 µs CPU per row |",
		"| (c) pipeline efficiency, ClickHouse + PostgreSQL: end to end ÷ (2 cores ÷ Σ parts) | 0.525 (Σ = 10.00 decode + 1.00 append + 10.00 ClickHouse insert = 21.00 µs CPU per item → ceiling 95,238 items/s) | ≥ 0.75 | no (1.4× short) |",
	} {
		wantRow(t, table, want)
	}
	if strings.Contains(table, "| (b) pipeline efficiency") {
		t.Errorf("(b) was not run but has an efficiency row:\n%s", table)
	}
	r := base
	r.chPart = nil
	table = Table(buildRows(r))
	wantRow(t, table, "| (c) pipeline efficiency, ClickHouse + PostgreSQL: end to end ÷ (2 cores ÷ Σ parts) | a part was not measured | ≥ 0.75 | – |")
}

// TestTargets checks every row of issue 17's targets: its target cell, and its verdict when
// the figure meets it, misses it, or cannot decide it (too few events or live sessions, not
// measured).
func TestTargets(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	res := func(i int, p95, p99 float64) queryResult {
		return queryResult{query: dashboardQueries[i], Requests: 300, P50: ms(p95 / 2), P95: ms(p95), P99: ms(p99)}
	}
	// Parts of 10 + 1 + 9 µs per item: the ceiling is 100,000 items/s on 2 cores.
	base := func() results {
		return results{decodeItems: 100_000, decodeCPU: time.Second,
			appendPart: &appendCost{Appends: 1000, Wall: time.Second, CPU: 50 * time.Millisecond, ItemsPerReq: 50},
			badgerPart: &insertCost{Rows: 100_000, Wall: time.Second, CPU: 900 * time.Millisecond},
			chPart:     &insertCost{Rows: 100_000, Wall: time.Second, CPU: 900 * time.Millisecond, Server: true}}
	}
	store := func(rate, sizeP99 float64, events int64, qs ...queryResult) *e2e {
		e := &e2e{full: summary{ItemsPerSec: rate}, queries: &queryRun{Events: events, Queries: qs}}
		if sizeP99 > 0 {
			e.half.BySize = []sizeLatency{{Items: "50-149", Requests: 100, Latency: latency{P99: sizeP99}}}
		}
		return e
	}
	const (
		flatB   = "(b) embedded store, flat out"
		flatC   = "(c) ClickHouse + PostgreSQL, flat out"
		effB    = "(b) pipeline efficiency, embedded store: end to end ÷ (2 cores ÷ Σ parts)"
		effC    = "(c) pipeline efficiency, ClickHouse + PostgreSQL: end to end ÷ (2 cores ÷ Σ parts)"
		p99B    = "(b) embedded store, half rate, p99 of 50–149-item batches"
		p99C    = "(c) ClickHouse + PostgreSQL, half rate, p99 of 50–149-item batches"
		groupsC = "(d) ClickHouse + PostgreSQL, crashGroups, from the store, 7 days"
		groups  = "(d) embedded, crashGroups, from the store, 7 days"
		groups3 = "(d) embedded, crashGroups, from the store, 30 days"
		journey = "(d) embedded, journey, from the store, 7 days"
		liveG   = "(d) embedded, crashGroups, live, 7 days"
		liveJC  = "(d) ClickHouse + PostgreSQL, journey, live, 7 days"
		errG    = "(d) embedded, errorGroups, from the store, 7 days"
		rss     = "(f) node RSS, embedded, flat out with 100,000 live sessions"
	)
	const (
		rate     = "≥ 60,000 items/s"
		groupsT  = "< 150 ms p95 on 10,000,000 events"
		journeyT = "< 300 ms p95 on 10,000,000 events"
		liveT    = "live < 1 ms p99"
		rssT     = "< 1 GB"
	)
	type want struct{ figure, target, verdict string }
	cases := []struct {
		name  string
		set   func(r *results)
		wants []want
	}{
		{"throughput and efficiency met", func(r *results) {
			r.embedded, r.production = store(80_000, 9.9, 0), store(45_000, 5, 0)
		}, []want{{flatB, rate, "yes"}, {effB, "≥ 0.75", "yes"}, {flatC, "≥ 45,000 items/s", "yes"}, {effC, "≥ 0.75", "no (1.7× short)"},
			{p99B, "< 10 ms", "yes"}, {p99C, "< 10 ms", "yes"}}},
		{"throughput and p99 missed", func(r *results) {
			r.embedded, r.production = store(30_000, 25, 0), store(30_000, 10, 0)
		}, []want{{flatB, rate, "no (2.0× short)"}, {effB, "≥ 0.75", "no (2.5× short)"}, {flatC, "≥ 45,000 items/s", "no (1.5× short)"},
			{p99B, "< 10 ms", "no (2.5× over)"}, {p99C, "< 10 ms", "no (1.0× over)"}}},
		{"p99 without batches of that size, a store not run", func(r *results) {
			r.embedded, r.productionWhy = store(30_000, 0, 0), "skipped: run under make bench"
		}, []want{{p99B, "< 10 ms", "–"}, {flatC, "≥ 45,000 items/s", "–"}}},
		{"store queries met on 10M events", func(r *results) {
			r.embedded = store(1, 0, 10_000_000, res(1, 149, 500), res(2, 100, 500), res(4, 299, 900), res(5, 99, 99))
			r.production = store(1, 0, 10_000_000, res(1, 20, 30))
		}, []want{{groups, groupsT, "yes"}, {groups3, groupsT, "yes"}, {journey, journeyT, "yes"}, {groupsC, groupsT, "yes"}, {errG, "", ""}}},
		{"store queries missed on 10M events", func(r *results) {
			r.embedded = store(1, 0, 12_000_000, res(1, 150, 150), res(2, 1500, 1500), res(4, 600, 600))
		}, []want{{groups, groupsT, "no (1.0× over)"}, {groups3, groupsT, "no (10.0× over)"}, {journey, journeyT, "no (2.0× over)"}}},
		{"store queries not decided under 10M events", func(r *results) {
			r.embedded = store(1, 0, 9_999_999, res(1, 10, 10), res(2, 10, 10), res(4, 10, 10))
		}, []want{{groups, groupsT, "not decided (9,999,999 events)"}, {groups3, groupsT, "not decided (9,999,999 events)"},
			{journey, journeyT, "not decided (9,999,999 events)"}}},
		{"a failed store query", func(r *results) {
			r.embedded = store(1, 0, 10_000_000, queryResult{query: dashboardQueries[4], Err: "GET /journey: 503"})
		}, []want{{journey, journeyT, "–"}}},
		{"live answers on p99, whatever the store holds", func(r *results) {
			r.embedded = store(1, 0, 1000, res(0, 0.5, 0.99))
			r.production = store(1, 0, 1000, res(3, 0.5, 3))
		}, []want{{liveG, liveT, "yes"}, {liveJC, liveT, "no (3.0× over)"}}},
		{"RSS met with 100k live sessions", func(r *results) {
			r.memory = &memoryRun{Peak: 900 << 20, Sessions: 100_000}
		}, []want{{rss, rssT, "yes"}}},
		{"RSS over", func(r *results) {
			r.memory = &memoryRun{Peak: 1_500_000_000, Sessions: 100_437}
		}, []want{{rss, rssT, "no (1.5× over)"}}},
		{"RSS not decided with fewer live sessions", func(r *results) {
			r.memory = &memoryRun{Peak: 100 << 20, Sessions: 5_000}
		}, []want{{rss, rssT, "not decided (5,000 live sessions)"}}},
		{"RSS not measured", func(r *results) { r.memoryWhy = "not run (-skip-memory)" }, []want{{rss, rssT, "–"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.set(&r)
			rows := buildRows(r)
			for _, w := range tc.wants {
				i := slices.IndexFunc(rows, func(row Row) bool { return row.Figure == w.figure })
				if i < 0 {
					t.Errorf("no row %q in\n%s", w.figure, Table(rows))
					continue
				}
				if got := rows[i]; got.Target != w.target || got.Verdict != w.verdict {
					t.Errorf("%s: target %q, verdict %q; want %q, %q (value %q)", w.figure, got.Target, got.Verdict, w.target, w.verdict, got.Value)
				}
			}
		})
	}
}

func TestLastDays(t *testing.T) {
	from, to := LastDays(time.Date(2026, 11, 22, 23, 59, 0, 0, time.FixedZone("x", -3*3600)), 30) // 2026-11-23T02:59Z
	if from != "2026-10-25T00:00:00Z" || to != "2026-11-24T00:00:00Z" {
		t.Errorf("got %s to %s", from, to)
	}
	from, to = LastDays(time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC), 7) // the default window
	if from != "2026-11-16T00:00:00Z" || to != "2026-11-23T00:00:00Z" {
		t.Errorf("got %s to %s", from, to)
	}
}

func TestDashboardWindow(t *testing.T) {
	cases := []struct {
		now            time.Time
		days           int
		wantFrom, want string
	}{
		{time.Date(2026, 11, 24, 21, 40, 5, 123_456_789, time.UTC), 5, "2026-11-19T12:00:00.002Z", "2026-11-24T21:40:05.123Z"},
		{time.Date(2026, 11, 24, 0, 30, 0, 0, time.FixedZone("x", 3*3600)), 5, "2026-11-18T12:00:00.002Z", "2026-11-23T21:30:00.000Z"},
	}
	for _, c := range cases {
		if from, to := DashboardWindow(c.now, c.days); from != c.wantFrom || to != c.want {
			t.Errorf("DashboardWindow(%s, %d) = %s to %s, want %s to %s", c.now, c.days, from, to, c.wantFrom, c.want)
		}
	}
}

func TestEfficiency(t *testing.T) {
	cases := []struct {
		name                 string
		rate                 float64
		parts                []float64
		wantCeiling, wantEff float64
	}{
		{"issue's reference pipeline", 29_000, []float64{1e6 / 41_000, 30, 10}, 2e6 / (1e6/41_000 + 40), 29_000 / (2e6 / (1e6/41_000 + 40))},
		{"exactly at the ceiling", 100_000, []float64{10, 5, 5}, 100_000, 1},
		{"one part missing", 100_000, []float64{10, 0, 5}, 0, 0},
		{"no parts", 100_000, nil, 0, 0},
	}
	for _, tc := range cases {
		c, e := Efficiency(tc.rate, tc.parts...)
		if !near(c, tc.wantCeiling) || !near(e, tc.wantEff) {
			t.Errorf("%s: Efficiency = %v, %v; want %v, %v", tc.name, c, e, tc.wantCeiling, tc.wantEff)
		}
	}
}

func near(a, b float64) bool { return a == b || (a-b)/b < 1e-9 && (b-a)/b < 1e-9 }

func TestPercentile(t *testing.T) {
	seq := func(n int) []time.Duration { // n, n-1, …, 1 ms: unsorted on purpose
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = time.Duration(n-i) * time.Millisecond
		}
		return out
	}
	cases := []struct {
		name string
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{"empty", nil, 0.99, 0},
		{"one", []time.Duration{7}, 0.5, 7},
		{"p50 of 300", seq(300), 0.50, 150 * time.Millisecond},
		{"p95 of 300", seq(300), 0.95, 285 * time.Millisecond},
		{"p99 of 300", seq(300), 0.99, 297 * time.Millisecond},
		{"p99 of 10 is the max", seq(10), 0.99, 10 * time.Millisecond},
		{"p100", seq(10), 1, 10 * time.Millisecond},
	}
	for _, tc := range cases {
		in := append([]time.Duration(nil), tc.ds...)
		if got := Percentile(tc.ds, tc.q); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.ds[i] {
				t.Fatalf("%s: Percentile reordered its input", tc.name)
			}
		}
	}
}

func TestUsageEvents(t *testing.T) {
	const app = "0b0e7d56-3f4c-4c2b-9a55-6b0d0f1b2c3d"
	body := `[{"app_id":"11111111-1111-4111-8111-111111111111","app_name":"Other","monthly":[{"month":"2026-11","events":5}]},
	{"app_id":"` + app + `","app_name":"Bench","monthly":[{"month":"2026-10","sessions":1,"events":100,"spans":7,"bytes":9},{"month":"2026-11","events":23}]}]`
	cases := []struct {
		name, body, app string
		want            int64
		wantErr         bool
	}{
		{"months summed, other apps ignored", body, app, 123, false},
		{"app without months", `[{"app_id":"` + app + `","monthly":[]}]`, app, 0, false},
		{"app missing", body, "22222222-2222-4222-8222-222222222222", 0, true},
		{"not JSON", `{"error":"x"}`, app, 0, true},
	}
	for _, tc := range cases {
		got, err := UsageEvents([]byte(tc.body), tc.app)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestQueryWindow(t *testing.T) {
	now := time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC) // default window from 2026-11-16T00:00Z
	cases := []struct {
		name           string
		sendStart      time.Time
		widest         time.Duration
		wantFrom, want string
	}{
		{"minutes-wide bodies: default window", now.Add(-2 * time.Minute), 7 * time.Minute, "", ""},
		{"earliest exactly at the window start", now.Add(-2 * time.Minute), now.Add(-2 * time.Minute).Sub(time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)), "", ""},
		{"a body spanning 8 days", now.Add(-2 * time.Minute), 8 * 24 * time.Hour, "2026-11-14T00:00:00Z", "2026-11-23T00:00:00Z"},
		{"earliest just before the window", time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC), time.Nanosecond, "2026-11-15T00:00:00Z", "2026-11-23T00:00:00Z"},
	}
	for _, tc := range cases {
		from, to := QueryWindow(now, tc.sendStart, tc.widest)
		if from != tc.wantFrom || to != tc.want {
			t.Errorf("%s: got %q, %q; want %q, %q", tc.name, from, to, tc.wantFrom, tc.want)
		}
	}
}

func TestParseProcStatCPU(t *testing.T) {
	cases := []struct {
		name, stat string
		want       int64
		wantErr    bool
	}{
		{"clickhouse-server", "27933 (clickhouse-serv) S 1 27933 27933 0 -1 4194560 812 0 0 0 1234 567 0 0 20 0 48 0 11 0 0 18446744073709551615\n", 1801, false},
		{"name with spaces and parens", "42 (a (b) c) R 1 1 1 0 -1 0 0 0 0 0 10 5 0 0 20 0 1 0 1\n", 15, false},
		{"no name", "42 a R 1", 0, true},
		{"short", "42 (x) R 1 1 1", 0, true},
		{"not a number", "42 (x) R 1 1 1 0 -1 0 0 0 0 0 ten 5 0", 0, true},
		{"flags not a number", "42 (x) R 1 1 1 0 -1 x 0 0 0 0 10 5 0", 0, true},
	}
	for _, tc := range cases {
		got, err := ParseProcStatCPU(tc.stat)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestParseProcStatLine: a kernel thread is told by its flags, a process by its start time.
func TestParseProcStatLine(t *testing.T) {
	cases := []struct {
		name, stat string
		want       procStat
	}{
		{"kworker", "37 (kworker/1:1-events) I 2 0 0 0 -1 69238880 0 0 0 0 0 412 0 0 20 0 1 0 95 0 0 18446744073709551615\n",
			procStat{ticks: 412, kthread: true, start: 95}},
		{"clickhouse-server", "27933 (clickhouse-serv) S 1 27933 27933 0 -1 4194560 812 0 0 0 1234 567 0 0 20 0 48 0 11 0 0 18446744073709551615\n",
			procStat{ticks: 1801, start: 11}},
		{"no start time", "42 (x) R 1 1 1 0 -1 0 0 0 0 0 10 5 0", procStat{ticks: 15}},
	}
	for _, tc := range cases {
		got, err := parseProcStatLine(tc.stat)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestListenInodes(t *testing.T) {
	// Port 9000 is 2328 in hex; 0A is LISTEN, 01 ESTABLISHED.
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 31337 1 0000000000000000 100 0 0 10 0
   1: 0100007F:2328 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:2329 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5555 1 0000000000000000 100 0 0 10 0
`
	cases := []struct {
		port int
		want string
	}{{9000, "31337"}, {9001, "5555"}, {9002, ""}}
	for _, tc := range cases {
		if got := strings.Join(ListenInodes(table, tc.port), ","); got != tc.want {
			t.Errorf("port %d: got %q, want %q", tc.port, got, tc.want)
		}
	}
}

func TestIsClickHouseServer(t *testing.T) {
	cases := []struct {
		comm string
		args []string
		want bool
	}{
		{"clickhouse-serv", []string{"/usr/sbin/clickhouse-server", "--config-file=/tmp/x/config.xml", ""}, true},
		{"clickhouse", []string{"/usr/bin/clickhouse", "server", "--config-file=c.xml"}, true},
		{"clickhouse", []string{"/usr/bin/clickhouse", "client"}, false},
		{"clickhouse.test", []string{"/tmp/go-build1/b001/clickhouse.test", "-test.run=X"}, false},
		{"bash", nil, false},
	}
	for _, tc := range cases {
		if got := IsClickHouseServer(tc.comm, tc.args); got != tc.want {
			t.Errorf("%s %v: got %v, want %v", tc.comm, tc.args, got, tc.want)
		}
	}
}

func TestItemTimes(t *testing.T) {
	cases := []struct {
		name                 string
		b                    model.Batch
		wantLatest, wantEarl int64
	}{
		{"events and a later span end", model.Batch{Events: []model.Event{{Timestamp: 50}, {Timestamp: 10}}, Spans: []model.Span{{StartTime: 20, EndTime: 90}}}, 90, 10},
		{"events only", model.Batch{Events: []model.Event{{Timestamp: 30}, {Timestamp: 40}}}, 40, 30},
		{"spans only", model.Batch{Spans: []model.Span{{StartTime: 5, EndTime: 8}}}, 8, 8},
		{"empty", model.Batch{}, 0, 0},
	}
	for _, tc := range cases {
		l, e := itemTimes(&tc.b)
		if l != tc.wantLatest || e != tc.wantEarl {
			t.Errorf("%s: got %d, %d; want %d, %d", tc.name, l, e, tc.wantLatest, tc.wantEarl)
		}
	}
}

// testCorpus loads testdata/sdk; the test fails when it cannot.
func testCorpus(t *testing.T) *corpus {
	t.Helper()
	dir, err := fixtures.Dir()
	if err != nil {
		t.Fatal(err)
	}
	c, err := loadCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRows checks the insert batches of the part measurements on the real corpus: the asked
// size, the corpus's mix of events and spans with their Facts, times moved to now, and fresh
// unique ids on every next.
func TestRows(t *testing.T) {
	c := testCorpus(t)
	if c.itemsPerRequest() < 1 {
		t.Fatalf("items per request %v", c.itemsPerRequest())
	}
	app, now := uuid.New(), time.Now().UnixNano()
	const n = 5_000
	src := newRows(c, app, n, now)
	seen := map[string]bool{}
	facts := false
	for round := range 2 {
		ev, sp := src.next()
		if len(ev)+len(sp) != n || len(ev) == 0 || len(sp) == 0 {
			t.Fatalf("round %d: %d events + %d spans, want %d with both kinds", round, len(ev), len(sp), n)
		}
		for i := range ev {
			e := &ev[i]
			if e.AppID != app || e.Timestamp > now || e.ID.Version() != 4 || e.ID.Variant() != uuid.RFC4122 {
				t.Fatalf("event %d: app %v, time %d (now %d), id %v", i, e.AppID, e.Timestamp, now, e.ID)
			}
			facts = facts || e.Facts.GroupID != ""
			if seen[e.ID.String()] {
				t.Fatalf("event id %v repeats", e.ID)
			}
			seen[e.ID.String()] = true
		}
		for i := range sp {
			s := &sp[i]
			if s.AppID != app || s.EndTime > now || len(s.SpanID) != 16 {
				t.Fatalf("span %d: app %v, end %d (now %d), id %q", i, s.AppID, s.EndTime, now, s.SpanID)
			}
			if seen[s.SpanID] {
				t.Fatalf("span id %q repeats", s.SpanID)
			}
			seen[s.SpanID] = true
		}
	}
	if !facts {
		t.Error("no event has a group id: Facts were not derived")
	}
	// (f)'s warm-up body: one event with a session id, the smallest such.
	name, err := c.oneSessionEvent()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(c.names, name)
	if b := c.batches[i]; len(b.Events) != 1 || len(b.Spans) != 0 || b.Events[0].SessionID == uuid.Nil {
		t.Errorf("%s: %d events, %d spans", name, len(b.Events), len(b.Spans))
	}
}

func TestTableKeepsRows(t *testing.T) {
	got := Table([]Row{{Figure: "f", Value: "line one\nline two | piped\n"}})
	want := "| figure | value | target | met? |\n|---|---|---|---|\n| f | line one line two \\| piped | – | – |\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestTableTarget(t *testing.T) {
	tests := []struct {
		doc, out  string
		wantPath  string
		wantWhole bool
	}{
		{"docs/benchmarks.md", "", "/repo/docs/benchmarks.md", false},
		{"docs/benchmarks.md", "bench-out/benchmarks-quick.md", "/repo/bench-out/benchmarks-quick.md", true},
		{"docs/benchmarks.md", "/tmp/b.md", "/tmp/b.md", true},
		{"/elsewhere/b.md", "", "/elsewhere/b.md", false},
	}
	for _, tt := range tests {
		path, whole := tableTarget("/repo", config{doc: tt.doc, out: tt.out})
		if path != tt.wantPath || whole != tt.wantWhole {
			t.Errorf("doc %q out %q: %q, %v; want %q, %v", tt.doc, tt.out, path, whole, tt.wantPath, tt.wantWhole)
		}
	}
	got := outFile("## Latest `make bench` (generated)\n\ntable\n\n")
	if !strings.HasPrefix(got, "# ") || !strings.HasSuffix(got, "\ntable\n") || strings.Contains(got, beginMarker) {
		t.Errorf("outFile = %q", got)
	}
}

func TestMemoryRows(t *testing.T) {
	got := memoryRows(&memoryRun{Start: 30 << 20, Warmed: 600 << 20, Peak: 1400 << 20, Warm: 21 * time.Second, Sessions: 100_000,
		LiveAfter: 160_000, Items: 400_000, Seconds: 30}, "")
	want := "1,400 MiB (1.47 GB) at the peak of 30 s flat out (400,000 items sent); 100,000 live session actors before it, started in 21 s by one-event requests (RSS then 600 MiB), 160,000 after it (--session-idle 30m0s); 30 MiB at the start"
	if len(got) != 1 || got[0].Value != want {
		t.Fatalf("%+v", got)
	}
	if got := memoryRows(nil, "not run (-skip-memory)"); len(got) != 1 || !strings.Contains(got[0].Value, "not run") {
		t.Fatalf("%+v", got)
	}
	if rows := buildRows(results{memoryWhy: "not run"}); !strings.Contains(rows[len(rows)-1].Figure, "(f) node RSS") {
		t.Fatalf("last row %+v", rows[len(rows)-1])
	}
}

func TestParseRecordedActorMemory(t *testing.T) {
	out := "BenchmarkSessionActorMemory/10000-2 1 5 ns/op 2024 heap-bytes/actor\n" +
		"BenchmarkSessionActorMemoryRecorded-2   \t       1\t6565192345 ns/op\t        58.70 events/session\t      6897 heap-bytes/actor\nPASS\n"
	v, ev, ok := ParseRecordedActorMemory(out)
	if !ok || v != 6897 || ev != 58.70 {
		t.Fatalf("got %v %v %v", v, ev, ok)
	}
	if _, _, ok := ParseRecordedActorMemory("BenchmarkSessionActorMemory/10000-2 1 5 ns/op 2024 heap-bytes/actor\n"); ok {
		t.Fatal("found a recorded result where there is none")
	}
	if rows := buildRows(results{recordedMem: 6897, recordedEvents: 58.7}); !strings.Contains(rows[len(rows)-2].Value, "6,897 B/actor (59 events per session") {
		t.Fatalf("row %+v", rows[len(rows)-2])
	}
}

// TestWriteCopies checks the synthetic copies both stores are topped up with: exactly n events
// of the app in batches of at most the asked size, fresh unique ids, no original session id, all
// in the last 6 days; and a failed write ends the fill with its error.
func TestWriteCopies(t *testing.T) {
	c := testCorpus(t)
	orig := map[uuid.UUID]bool{}
	for _, b := range c.batches {
		for _, e := range b.Events {
			orig[e.SessionID] = true
		}
	}
	app := uuid.New()
	const n, batch = 25_001, 1_000
	var mu sync.Mutex
	seen := map[uuid.UUID]bool{}
	start := time.Now()
	_, err := writeCopies(context.Background(), c, app, n, batch, func(_ context.Context, evs []model.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if len(evs) > batch {
			t.Errorf("a batch of %d events", len(evs))
		}
		for _, e := range evs {
			if e.AppID != app || seen[e.ID] || e.SessionID != uuid.Nil && orig[e.SessionID] ||
				e.Timestamp < start.Add(-6*24*time.Hour).UnixNano() || e.Timestamp > time.Now().UnixNano() {
				t.Fatalf("event %+v", e)
			}
			seen[e.ID] = true
		}
		return nil
	})
	if err != nil || len(seen) != n {
		t.Fatalf("%d events written, err %v; want %d", len(seen), err, n)
	}
	boom := errors.New("store down")
	if _, err := writeCopies(context.Background(), c, app, n, batch, func(context.Context, []model.Event) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

// A flat-out row says how many answers were the node's back-pressure: a run whose workers
// waited on 503s is not the same measurement as one without.
func TestE2EValueBackPressure(t *testing.T) {
	tests := []struct {
		name   string
		status map[string]int64
		want   string
	}{
		{"none", map[string]int64{"200": 10}, ""},
		{"503 and 429", map[string]int64{"200": 10, "503": 3, "429": 1}, "; 4 answers were 503 or 429"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := e2eValue(summary{ItemsPerSec: 1000, BatchesPerSec: 10, Status: tt.status})
			has := strings.Contains(v, "answers were 503 or 429")
			if tt.want == "" && has || tt.want != "" && !strings.Contains(v, tt.want) {
				t.Errorf("e2eValue = %q, want it to say %q", v, tt.want)
			}
		})
	}
}

// A half rate fixed by -half-rate is not the target's load: its rows say the rate and the p99
// row gets no verdict.
func TestBuildRowsFixedHalfRate(t *testing.T) {
	e := &e2e{halfFixed: 300,
		full: summary{ItemsPerSec: 20_000, BatchesPerSec: 338},
		half: summary{ItemsPerSec: 18_000, BatchesPerSec: 300, BySize: []sizeLatency{{Items: "50-149", Requests: 40, Latency: latency{P99: 50}}}}}
	table := Table(buildRows(results{embedded: e, productionWhy: "skipped"}))
	for _, want := range []string{
		"| (b) embedded store, at 300.0 requests/s (-half-rate, not half the flat-out rate) | 18,000 items/s, 300 batches/s;",
		"| (b) embedded store, at 300.0 requests/s (-half-rate, not half the flat-out rate), p99 of 50–149-item batches | 50.0 ms (40 requests) | < 10 ms | – |",
	} {
		wantRow(t, table, want)
	}
	if strings.Contains(table, "embedded store, half rate") {
		t.Errorf("a fixed rate is called the half rate:\n%s", table)
	}
}

func TestRetryArgs(t *testing.T) {
	tests := []struct {
		wait    time.Duration
		seconds int
		want    []string
	}{
		{100 * time.Millisecond, 20, []string{"-max-retry-wait", "100ms", "-max-retries", "210"}},
		{time.Minute, 30, []string{"-max-retry-wait", "1m0s", "-max-retries", "10"}},
	}
	for _, tt := range tests {
		c := config{retryWait: tt.wait}
		if got := c.retryArgs(tt.seconds); strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("retryArgs(%d) with wait %v = %v, want %v", tt.seconds, tt.wait, got, tt.want)
		}
	}
}

// TestOwnWork: the efficiency's ceiling row says what the node (and the ClickHouse server) used
// beyond Σ flat out, against what the target leaves it, or that nothing is left.
func TestOwnWork(t *testing.T) {
	// Ticks of 1e6/clkTck µs over 100k items: 30 node ticks are 300/clkTck µs per item.
	per := func(ticks int64) float64 { return float64(ticks) * 1e6 / float64(clkTck) / 100_000 }
	cases := []struct {
		name      string
		cpu       *machineCPU
		sum, left float64
		want      string
	}{
		{"embedded", &machineCPU{Busy: 100, Total: 200, Node: 30, DrainNode: 3, Items: 100_000}, 1, 0.5,
			fmt.Sprintf("; flat out the node used %.2f µs per item (with the node's CPU after loadgen stopped, while its store caught up), %.2f beyond Σ, against 0.50 left for it",
				per(33), per(33)-1)},
		{"server, nothing left", &machineCPU{Busy: 100, Total: 200, Node: 30, Server: 10, ServerKnown: true, Items: 100_000}, 1, -0.25,
			fmt.Sprintf("; flat out the node and the ClickHouse server used %.2f µs per item (with the node's CPU after loadgen stopped, while its store caught up), %.2f beyond Σ, against none left for it (loadgen and receiving alone take 0.25 more)",
				per(40), per(40)-1)},
		{"server and catch-up", &machineCPU{Busy: 100, Total: 200, Node: 30, Server: 10, ServerKnown: true, DrainNode: 5, Items: 100_000}, 2, 1.25,
			fmt.Sprintf("; flat out the node and the ClickHouse server used %.2f µs per item (with the node's CPU after loadgen stopped, while its store caught up), %.2f beyond Σ, against 1.25 left for it",
				per(45), per(45)-2)},
	}
	for _, tc := range cases {
		sp, _ := tc.cpu.split()
		if got := ownWork(sp, tc.sum, tc.left); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// wantRow fails t unless table holds want.
func wantRow(t *testing.T, table, want string) {
	t.Helper()
	if !strings.Contains(table, want) {
		t.Errorf("table lacks\n%s\nin\n%s", want, table)
	}
}
