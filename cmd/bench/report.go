package main

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Row is one line of the results table: a figure, its value as printed, the issue-4 target it
// answers to (empty when none) and whether the value meets it.
type Row struct {
	Figure, Value, Target, Verdict string
}

// Table renders rows as a Markdown table, which reads the same on a terminal.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| figure | value | target | met? |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Figure, r.Value, dash(r.Target), dash(r.Verdict))
	}
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// atLeast and below say whether v meets a target, and by how much it misses it: the doc must
// say how far off a missed target is.
func atLeast(v, target float64) string {
	if v >= target {
		return "yes"
	}
	if v <= 0 {
		return "no"
	}
	return fmt.Sprintf("no (%.1f× short)", target/v)
}

func below(v, target float64) string {
	if v < target {
		return "yes"
	}
	return fmt.Sprintf("no (%.1f× over)", v/target)
}

// thousands prints n with comma separators, as the rest of docs/benchmarks.md does.
func thousands(n float64) string {
	s := strconv.FormatInt(int64(math.Round(n)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

var memBenchLine = regexp.MustCompile(`^BenchmarkSessionActorMemory/(\d+)(?:-\d+)?\s.*?\s([0-9.]+) heap-bytes/actor`)

// ParseActorMemory reads the output of `go test -bench BenchmarkSessionActorMemory` and returns
// heap bytes per actor keyed by the number of live actors.
func ParseActorMemory(out string) (map[int]float64, error) {
	got := map[int]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := memBenchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("actor count %q: %w", m[1], err)
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("heap-bytes/actor %q: %w", m[2], err)
		}
		got[n] = v
	}
	if len(got) == 0 {
		return nil, errors.New("no BenchmarkSessionActorMemory result with heap-bytes/actor in the output")
	}
	return got, nil
}

const (
	beginMarker = "<!-- make bench: begin -->"
	endMarker   = "<!-- make bench: end -->"
)

// ReplaceSection puts section between the markers of doc, keeping everything else. A doc without
// markers gets them after its first line (the title), so the latest run sits near the top.
func ReplaceSection(doc, section string) (string, error) {
	block := beginMarker + "\n" + strings.TrimRight(section, "\n") + "\n" + endMarker
	i, j := strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	switch {
	case i < 0 && j < 0:
		title, rest, _ := strings.Cut(doc, "\n")
		return title + "\n\n" + block + "\n" + rest, nil
	case i < 0 || j < i:
		return "", errors.New("docs: the make bench markers are unbalanced; fix them by hand")
	}
	return doc[:i] + block + doc[j+len(endMarker):], nil
}

// Issue-4 targets.
const (
	targetEmbedded   = 60_000 // items/s end to end, embedded store
	targetProduction = 40_000 // items/s end to end, ClickHouse + PostgreSQL
	targetP99ms      = 25     // p99 of a ~100-item batch at half the maximum rate
	targetEfficiency = 0.75
	targetActorBytes = 512 << 20 // 100k live session actors
	cores            = 2
)

// buildRows turns one run's figures into the table, with the ratios to the decode-only
// ceiling (a's items per CPU-second × 2 cores).
func buildRows(r results) []Row {
	ceiling := perCPU(r) * cores
	rows := []Row{{Figure: "(a) decode + validate, corpus in-process",
		Value: fmt.Sprintf("%s items per CPU-second (ceiling on %d cores: %s items/s)", thousands(perCPU(r)), cores, thousands(ceiling))}}
	store := func(tag, name string, e *e2e, why string, target float64) {
		if e == nil {
			rows = append(rows, Row{Figure: tag + " " + name + ", flat out", Value: why,
				Target: "≥ " + thousands(target) + " items/s", Verdict: "–"})
			return
		}
		rows = append(rows,
			Row{Figure: tag + " " + name + ", flat out", Value: e2eValue(e.full),
				Target: "≥ " + thousands(target) + " items/s", Verdict: atLeast(e.full.ItemsPerSec, target)},
			Row{Figure: tag + " " + name + ", half rate", Value: e2eValue(e.half)})
		p99, reqs, ok := sizeP99(e.half, "50-149")
		if ok {
			rows = append(rows, Row{Figure: tag + " " + name + ", half rate, p99 of 50–149-item batches",
				Value: fmt.Sprintf("%.1f ms (%d requests)", p99, reqs), Target: fmt.Sprintf("< %d ms", targetP99ms), Verdict: below(p99, targetP99ms)})
		} else {
			rows = append(rows, Row{Figure: tag + " " + name + ", half rate, p99 of 50–149-item batches",
				Value: "no such batches acknowledged", Target: fmt.Sprintf("< %d ms", targetP99ms), Verdict: "–"})
		}
		if ceiling > 0 {
			ratio := e.full.ItemsPerSec / ceiling
			v := "yes"
			if ratio < targetEfficiency {
				// The target is against the ceiling of all parts (decode, durable append, store
				// insert); this ratio uses decode alone, so a low one does not decide it.
				v = "not decided (decode-only ceiling)"
			}
			rows = append(rows, Row{Figure: tag + "/(a) " + name + " ÷ decode ceiling", Value: fmt.Sprintf("%.3f", ratio),
				Target: fmt.Sprintf("efficiency ≥ %.2f (vs. Σ of all parts)", targetEfficiency), Verdict: v})
		} else {
			rows = append(rows, Row{Figure: tag + "/(a) " + name + " ÷ decode ceiling", Value: "no ceiling measured"})
		}
	}
	store("(b)", "embedded store", r.embedded, "", targetEmbedded)
	store("(c)", "ClickHouse + PostgreSQL", r.production, r.productionWhy, targetProduction)
	rows = append(rows, Row{Figure: "(d) dashboard query latency", Value: "not measured: needs the issue-3 endpoints",
		Target: "live < 1 ms p99; store group list < 150 ms p95 on 10M events", Verdict: "–"})
	if len(r.actorMem) == 0 {
		rows = append(rows, Row{Figure: "(e) heap per live session actor", Value: "not run (-skip-memory)"})
	}
	for _, n := range []int{10_000, 100_000} {
		v, ok := r.actorMem[n]
		if !ok {
			continue
		}
		row := Row{Figure: fmt.Sprintf("(e) heap per live session actor, %s actors", thousands(float64(n))),
			Value: fmt.Sprintf("%s B/actor (%.0f MB for %s)", thousands(v), v*float64(n)/1e6, thousands(float64(n)))}
		if n == 100_000 {
			row.Target = "100k actors < 512 MB RSS (this is heap only)"
			row.Verdict = below(v*float64(n), targetActorBytes)
		}
		rows = append(rows, row)
	}
	return rows
}

func e2eValue(s summary) string {
	v := fmt.Sprintf("%s items/s, %.0f batches/s; p50 %.1f / p90 %.1f / p99 %.1f ms", thousands(s.ItemsPerSec),
		s.BatchesPerSec, s.Latency.P50, s.Latency.P90, s.Latency.P99)
	if s.Failed > 0 {
		v += fmt.Sprintf("; %d failed", s.Failed)
	}
	return v
}

// sizeP99 is the p99 of one of loadgen's batch-size classes.
func sizeP99(s summary, class string) (float64, int, bool) {
	for _, c := range s.BySize {
		if c.Items == class && c.Requests > 0 {
			return c.Latency.P99, c.Requests, true
		}
	}
	return 0, 0, false
}

// docSection is the generated part of docs/benchmarks.md.
func docSection(machine, cmdline string, c config, table, top string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Latest `make bench` (generated)\n\n%s\n\nCommand: `%s` (loadgen %d s per run, %d workers; a fresh node per store).\n\n",
		machine, cmdline, c.seconds, c.concurrency)
	b.WriteString(table)
	b.WriteString("\nThe ratios divide end-to-end items/s by (a) × 2 cores, a ceiling that counts decoding only; the\n" +
		"efficiency target counts every part (durable append, store insert too), so a ratio under 0.75\n" +
		"does not decide it. The actor figure is Go heap, not RSS.\n")
	if top != "" {
		b.WriteString("\nTop of the embedded node's CPU profile, 10 s of the flat-out run (`bench-out/embedded-cpu.pprof`):\n\n```\n")
		b.WriteString(top)
		b.WriteString("\n```\n")
	}
	return b.String()
}
