package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
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
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(r.Figure), cell(r.Value), cell(dash(r.Target)), cell(dash(r.Verdict)))
	}
	return b.String()
}

// cellText keeps a value on its row: an error's line breaks and pipes would end it.
var cellText = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", "\\|")

func cell(s string) string { return cellText.Replace(strings.TrimSpace(s)) }

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

var recordedMemLine = regexp.MustCompile(`^BenchmarkSessionActorMemoryRecorded(?:-\d+)?\s.*?\s([0-9.]+) events/session\s+([0-9.]+) heap-bytes/actor`)

// ParseRecordedActorMemory reads BenchmarkSessionActorMemoryRecorded's result: the heap per
// session actor with sessions shaped like the recorded traffic, and their events per session.
func ParseRecordedActorMemory(out string) (perActor, eventsPerSession float64, ok bool) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := recordedMemLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		ev, err1 := strconv.ParseFloat(m[1], 64)
		v, err2 := strconv.ParseFloat(m[2], 64)
		if err1 == nil && err2 == nil {
			return v, ev, true
		}
	}
	return 0, 0, false
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

// Issue-17 targets, on 2 cores with loadgen on the same cores.
const (
	targetEmbedded     = 60_000 // items/s end to end, embedded store, flat out
	targetProduction   = 45_000 // items/s end to end, ClickHouse + PostgreSQL, flat out
	targetEfficiency   = 0.75   // flat-out rate ÷ the CPU-budget ceiling of the parts, both setups
	targetP99ms        = 10     // p99 of 50–149-item batches at half the flat-out rate, both setups
	targetLiveP99ms    = 1      // every live dashboard answer over HTTP
	targetGroupsP95ms  = 150    // crash group list from the store, 7 and 30 days, on targetEvents events
	targetJourneyP95ms = 300    // app journey from the store, 7 days, on targetEvents events
	targetEvents       = 10_000_000
	targetRSS          = 1_000_000_000 // node RSS, flat out with targetSessions live sessions
	targetSessions     = 100_000
	cores              = 2
)

// Percentile is the nearest-rank q-quantile (0 < q ≤ 1) of ds: the smallest value with at
// least q of the values at or below it; 0 for no values.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// UsageEvents sums the monthly events of app in the answer of GET /teams/{id}/usage.
func UsageEvents(body []byte, app string) (int64, error) {
	var apps []struct {
		AppID   string `json:"app_id"`
		Monthly []struct {
			Events int64 `json:"events"`
		} `json:"monthly"`
	}
	if err := json.Unmarshal(body, &apps); err != nil {
		return 0, fmt.Errorf("usage answer: %w", err)
	}
	for _, a := range apps {
		if a.AppID != app {
			continue
		}
		var n int64
		for _, m := range a.Monthly {
			n += m.Events
		}
		return n, nil
	}
	return 0, fmt.Errorf("usage answer has no app %s", app)
}

// QueryWindow says which window the dashboard queries ask for. loadgen moves each replay so
// its latest item lands on the send time; its events lie up to widest before it. When every
// event sent since sendStart falls inside the default window (the last 7 UTC days: from 00:00
// six days before now), from and to are empty; otherwise they cover those events with UTC
// midnight bounds, so that live answers (exact for whole days only) still answer.
func QueryWindow(now, sendStart time.Time, widest time.Duration) (from, to string) {
	day := func(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }
	today := day(now)
	earliest := sendStart.Add(-widest)
	if !earliest.Before(today.AddDate(0, 0, -6)) {
		return "", ""
	}
	return day(earliest).Format(time.RFC3339), today.AddDate(0, 0, 1).Format(time.RFC3339)
}

// LastDays is the explicit window of the last days UTC calendar days, today included, as the
// dashboard's default one is for 7: [00:00 days-1 days ago, 00:00 tomorrow). Whole days, so a
// live answer is exact for it too.
func LastDays(now time.Time, days int) (from, to string) {
	today := now.UTC().Truncate(24 * time.Hour)
	return today.AddDate(0, 0, 1-days).Format(time.RFC3339), today.AddDate(0, 0, 1).Format(time.RFC3339)
}

// DashboardWindow is a window shaped like the reference dashboard's, whose from and to are
// instants to the millisecond: from 12:00:00.002 UTC of the day days ago, so that it cuts a day
// of the synthetic copies (which cover the last 6 days) in half, to now. Such a bound is not a
// UTC midnight, so the app actor answers the whole days between and the store the half day
// (Svc-Answered-By: live+store).
func DashboardWindow(now time.Time, days int) (from, to string) {
	const layout = "2006-01-02T15:04:05.000Z07:00"
	start := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -days).Add(12*time.Hour + 2*time.Millisecond)
	return start.Format(layout), now.UTC().Format(layout)
}

// perItem is a CPU time per item in microseconds; 0 when nothing was counted.
func perItem(cpu time.Duration, items float64) float64 {
	if items <= 0 {
		return 0
	}
	return cpu.Seconds() * 1e6 / items
}

func (a *appendCost) perItem() float64 {
	if a == nil || a.Appends == 0 {
		return 0
	}
	return perItem(a.CPU, float64(a.Appends)*a.ItemsPerReq)
}

func (i *insertCost) perItem() float64 {
	if i == nil {
		return 0
	}
	return perItem(i.CPU+i.ServerCPU, float64(i.Rows))
}

// Efficiency is end-to-end items/s over the CPU-budget ceiling, cores ÷ Σ part costs (µs of
// CPU per item): the ceiling and the ratio. Both are 0 when a part is missing.
func Efficiency(itemsPerSec float64, partsMicros ...float64) (ceiling, ratio float64) {
	if len(partsMicros) == 0 {
		return 0, 0
	}
	var sum float64
	for _, p := range partsMicros {
		if p <= 0 {
			return 0, 0
		}
		sum += p
	}
	ceiling = cores * 1e6 / sum
	return ceiling, itemsPerSec / ceiling
}

// buildRows turns one run's figures into the table: each figure, the ratios to the
// decode-only ceiling the issue asks for, and the pipeline efficiency against the sum of all
// parts, which carries the verdict.
func buildRows(r results) []Row {
	ceiling := perCPU(r) * cores
	decodeUs := perItem(r.decodeCPU, float64(r.decodeItems))
	rows := []Row{{Figure: "(a) decode + validate, corpus in-process",
		Value: fmt.Sprintf("%s items per CPU-second, %.2f µs per item (ceiling on %d cores: %s items/s)", thousands(perCPU(r)), decodeUs, cores, thousands(ceiling))}}
	if a := r.appendPart; a != nil {
		rows = append(rows, Row{Figure: "part: durable append per request (spool, fdatasync'ed)",
			Value: fmt.Sprintf("%s appends in %.1f s by %d writers (%s/s); %.1f µs CPU per append ÷ %.1f items per request = %.2f µs per item",
				thousands(float64(a.Appends)), a.Wall.Seconds(), a.Writers, thousands(float64(a.Appends)/a.Wall.Seconds()),
				perItem(a.CPU, float64(a.Appends)), a.ItemsPerReq, a.perItem())})
	} else {
		rows = append(rows, Row{Figure: "part: durable append per request (spool, fdatasync'ed)", Value: dash(r.appendWhy)})
	}
	insertRow := func(name string, c *insertCost, why string) {
		fig := "part: store insert per row, " + name
		if c == nil {
			rows = append(rows, Row{Figure: fig, Value: dash(why)})
			return
		}
		v := fmt.Sprintf("%s rows in %.1f s (%s/s, %s-row batches); ", thousands(float64(c.Rows)), c.Wall.Seconds(),
			thousands(float64(c.Rows)/c.Wall.Seconds()), thousands(float64(c.Batch)))
		if c.Server {
			v += fmt.Sprintf("bench %.2f + server %.2f = %.2f µs CPU per row", perItem(c.CPU, float64(c.Rows)),
				perItem(c.ServerCPU, float64(c.Rows)), c.perItem())
		} else {
			v += fmt.Sprintf("%.2f µs CPU per row", c.perItem())
		}
		if c.Layout != "" {
			v += ", " + c.Layout
		}
		rows = append(rows, Row{Figure: fig, Value: v})
	}
	insertRow("embedded (Badger)", r.badgerPart, r.badgerWhy)
	insertRow("ClickHouse", r.chPart, r.chWhy)
	floorFig := "floor: loadgen flat out against a receiver that only reads each body and answers 202 (no decode, no spool, no store)"
	if f := r.floor; f != nil {
		rows = append(rows, Row{Figure: floorFig,
			Value: fmt.Sprintf("%s items/s, %s requests/s by %d workers; CPU per item: loadgen %.2f µs, the receiver %.2f µs",
				thousands(f.Run.ItemsPerSec), thousands(f.Run.BatchesPerSec), f.Workers, f.loadgenPerItem(), f.receiverPerItem())})
	} else {
		rows = append(rows, Row{Figure: floorFig, Value: dash(r.floorWhy)})
	}

	store := func(tag, name string, e *e2e, why string, target float64, insert *insertCost, insertName string) {
		if e == nil {
			rows = append(rows, Row{Figure: tag + " " + name + ", flat out", Value: why,
				Target: "≥ " + thousands(target) + " items/s", Verdict: "–"})
			return
		}
		// A half rate set by -half-rate is not the target's load: its rows say so and get no verdict.
		half, halfVerdict := ", half rate", below
		if e.halfFixed > 0 {
			half = fmt.Sprintf(", at %.1f requests/s (-half-rate, not half the flat-out rate)", e.halfFixed)
			halfVerdict = func(float64, float64) string { return "–" }
		}
		rows = append(rows,
			Row{Figure: tag + " " + name + ", flat out", Value: e2eValue(e.full) + storedValue(e),
				Target: "≥ " + thousands(target) + " items/s", Verdict: atLeast(e.sustained(), target)},
			Row{Figure: tag + " " + name + half, Value: e2eValue(e.half)})
		cpuFig := tag + " " + name + ", flat out, where the machine's CPU went per item acknowledged"
		if sp, ok := e.cpu.split(); ok {
			rows = append(rows, Row{Figure: cpuFig, Value: sp.String()})
		} else if e.cpuWhy != "" {
			rows = append(rows, Row{Figure: cpuFig, Value: e.cpuWhy})
		}
		p99, reqs, ok := sizeP99(e.half, "50-149")
		if ok {
			rows = append(rows, Row{Figure: tag + " " + name + half + ", p99 of 50–149-item batches",
				Value: fmt.Sprintf("%.1f ms (%d requests)", p99, reqs), Target: fmt.Sprintf("< %d ms", targetP99ms), Verdict: halfVerdict(p99, targetP99ms)})
		} else {
			rows = append(rows, Row{Figure: tag + " " + name + half + ", p99 of 50–149-item batches",
				Value: "no such batches acknowledged", Target: fmt.Sprintf("< %d ms", targetP99ms), Verdict: "–"})
		}
		if sp := e.spool; sp != nil {
			rows = append(rows, Row{Figure: tag + " " + name + half + ", the spool alone at the same request rate (the node stopped): one durable append",
				Value: fmt.Sprintf("p50 %.2f / p90 %.2f / p99 %.2f ms (%s appends asked at %.1f/s, %.1f/s done, by %d writers: each waits for the group sync in flight, then its own; %s)",
					msf(sp.P50), msf(sp.P90), msf(sp.P99), thousands(float64(sp.Appends)), sp.Rate, float64(sp.Appends)/max(sp.Wall.Seconds(), 1e-9), sp.Writers, sp.Settle)})
		} else if e.spoolWhy != "" {
			rows = append(rows, Row{Figure: tag + " " + name + half + ", the spool alone at the same request rate (the node stopped): one durable append",
				Value: e.spoolWhy})
		}
		if len(e.halfStages) > 0 {
			rows = append(rows, Row{Figure: tag + " " + name + half + ", where PUT /events spends its time (stage mean / p99, ms)",
				Value: stagesValue(e.halfStages)})
		}
		tailFig := tag + " " + name + half + ", what the requests of 10 ms or more spent their time on (an execution trace of the node in a second run at that rate)"
		if t := e.tail; t != nil {
			rows = append(rows, Row{Figure: tailFig,
				Value: fmt.Sprintf("%s of %s traced requests in %.0f s (server-side p50 %.2f / p99 %.2f ms), %s; while they waited for a CPU the node's processors ran %s; the other %s, %s; %s",
					thousands(float64(t.Slow.N)), thousands(float64(t.Requests)), t.TraceSeconds, msf(t.P50), msf(t.P99), t.Slow,
					meanwhile(t.RanMeanwhile), thousands(float64(t.Fast.N)), t.Fast, t.Writer)})
		} else if e.tailWhy != "" {
			rows = append(rows, Row{Figure: tailFig, Value: e.tailWhy})
		}
		if len(e.halfCPUWait) > 0 {
			w := e.halfCPUWait[0]
			at := "≤"
			if w.P99AtLeast {
				at = ">"
			}
			rows = append(rows, Row{Figure: tag + " " + name + half + ", how long the node's goroutines waited for a CPU once ready (Go runtime /sched/latencies)",
				Value: fmt.Sprintf("mean %.3f ms, p99 %s %.3f ms, over %s waits", millis(w.Mean), at, millis(w.P99), thousands(w.Count))})
		}
		if ceiling > 0 {
			rows = append(rows, Row{Figure: tag + "/(a) " + name + " ÷ decode ceiling", Value: fmt.Sprintf("%.3f", e.sustained()/ceiling)})
		} else {
			rows = append(rows, Row{Figure: tag + "/(a) " + name + " ÷ decode ceiling", Value: "no ceiling measured"})
		}
		fig := tag + " pipeline efficiency, " + name + ": end to end ÷ (" + strconv.Itoa(cores) + " cores ÷ Σ parts)"
		tgt := fmt.Sprintf("≥ %.2f", targetEfficiency)
		appendUs, insertUs := r.appendPart.perItem(), insert.perItem()
		pc, ratio := Efficiency(e.sustained(), decodeUs, appendUs, insertUs)
		if pc == 0 {
			rows = append(rows, Row{Figure: fig, Value: "a part was not measured", Target: tgt, Verdict: "–"})
			return
		}
		sum := decodeUs + appendUs + insertUs
		rows = append(rows, Row{Figure: fig,
			Value: fmt.Sprintf("%.3f (Σ = %.2f decode + %.2f append + %.2f %s insert = %.2f µs CPU per item → ceiling %s items/s)",
				ratio, decodeUs, appendUs, insertUs, insertName, sum, thousands(pc)),
			Target: tgt, Verdict: atLeast(ratio, targetEfficiency)})
		// Loadgen's cheaper figure of the two runs (the floor's, or this run's own), so that the
		// ceiling is one the node could not pass.
		lg, rcv, lgFrom := r.floor.loadgenPerItem(), r.floor.receiverPerItem(), "the floor's"
		sp, split := e.cpu.split()
		if split && sp.Loadgen > 0 && sp.Loadgen < lg {
			lg, lgFrom = sp.Loadgen, "this run's"
		}
		if top, perCore := EfficiencyCeiling(sum, lg, rcv); top > 0 {
			allow := sum * (1 - targetEfficiency) / targetEfficiency // beyond Σ, per item
			own := ""
			if split {
				own = ownWork(sp, sum, allow-lg-rcv)
			}
			rows = append(rows, Row{Figure: tag + " pipeline efficiency's ceiling, " + name + ", with loadgen on the same cores: Σ ÷ (Σ + loadgen + receiving)",
				Value: fmt.Sprintf("%.3f (%.2f ÷ (%.2f + %.2f loadgen, %s figure, + %.2f receiving, the floor's) → at most %s items/s on %d cores; %.2f needs loadgen + receiving ≤ Σ × %.2f = %.2f µs per item, before the node's own work past the parts%s)",
					top, sum, sum, lg, lgFrom, rcv, thousands(perCore*cores), cores, targetEfficiency, (1-targetEfficiency)/targetEfficiency, allow, own)})
		}
	}
	store("(b)", "embedded store", r.embedded, "", targetEmbedded, r.badgerPart, "Badger")
	store("(c)", "ClickHouse + PostgreSQL", r.production, r.productionWhy, targetProduction, r.chPart, "ClickHouse")

	queries := func(name string, e *e2e, why string) {
		tag := "(d) " + name
		switch {
		case e == nil:
			rows = append(rows, Row{Figure: tag + ", dashboard queries", Value: dash(why)})
			return
		case e.queries == nil:
			rows = append(rows, Row{Figure: tag + ", dashboard queries", Value: "not run (-skip-queries)"})
			return
		}
		q := e.queries
		ev := thousands(float64(q.Events)) + " (usage API)"
		if f := q.Fill; f != nil {
			ev += fmt.Sprintf(", %s of them synthetic copies written into %s with the node stopped in %.0f s (%s events/s), then the node restarted in %.0f s (app aggregates rebuilt from the store)",
				thousands(float64(f.Copies)), f.Store, f.Wall.Seconds(), thousands(f.rate()), f.Restart.Seconds())
		}
		if q.EventsErr != "" {
			ev += "; " + q.EventsErr
		}
		rows = append(rows, Row{Figure: tag + ", events in the store", Value: ev + "; windows " + q.Window + "; " + q.Settle.String()})
		for _, qr := range q.Queries {
			row := Row{Figure: tag + ", " + qr.Name}
			g, ok := goalOf(qr.query)
			if ok {
				row.Target = g.text
			}
			if qr.Err != "" {
				row.Value = "failed: " + qr.Err
				if ok {
					row.Verdict = "–"
				}
				rows = append(rows, row)
				continue
			}
			row.Value = fmt.Sprintf("p50 %.2f / p95 %.2f / p99 %.2f ms (%d requests, %s B answer", msf(qr.P50), msf(qr.P95), msf(qr.P99),
				qr.Requests, thousands(float64(qr.Bytes)))
			if qr.Want == "live+store" {
				row.Value += ", answered by " + qr.By
			}
			if qr.Counted {
				row.Value += fmt.Sprintf("; the node meanwhile: %d garbage collections, %s B allocated per request; the bench: %d collections", qr.GCs, thousands(qr.AllocPerReq), qr.BenchGCs)
				if qr.CPUKnown {
					row.Value += "; CPU: " + qr.CPU.String()
				}
			}
			row.Value += ")"
			if ok {
				row.Verdict = g.verdict(qr, q.Events)
			}
			rows = append(rows, row)
		}
	}
	queries("embedded", r.embedded, "")
	queries("ClickHouse + PostgreSQL", r.production, r.productionWhy)

	if len(r.actorMem) == 0 {
		rows = append(rows, Row{Figure: "(e) heap per live session actor", Value: "not run (-skip-memory)"})
	}
	for _, n := range []int{10_000, 100_000} {
		v, ok := r.actorMem[n]
		if !ok {
			continue
		}
		rows = append(rows, Row{Figure: fmt.Sprintf("(e) heap per live session actor, %s actors", thousands(float64(n))),
			Value: fmt.Sprintf("%s B/actor (%.0f MB for %s)", thousands(v), v*float64(n)/1e6, thousands(float64(n)))})
	}
	if r.recordedMem > 0 {
		rows = append(rows, Row{Figure: "(e) heap per live session actor, 10,000 sessions shaped like the recorded traffic",
			Value: fmt.Sprintf("%s B/actor (%.0f events per session, each session one recorded batch through Ingest.Distribute)",
				thousands(r.recordedMem), r.recordedEvents)})
	}
	return append(rows, memoryRows(r.memory, r.memoryWhy)...)
}

// queryGoal is a dashboard query's issue-17 target: a limit on its p95 or p99 and, for the
// answers from the store, the store size it holds for.
type queryGoal struct {
	text     string
	limitMs  float64
	p95      bool // else p99
	onEvents bool // decided only with targetEvents events in the store
}

// goalOf says which target a query answers to: every live answer < 1 ms p99; the crash group
// list from the store < 150 ms p95 (7 and 30 days) and the journey from the store < 300 ms
// p95, both on 10M events. The error group list has none.
func goalOf(q query) (queryGoal, bool) {
	onEvents := " on " + thousands(targetEvents) + " events"
	switch {
	case q.Want == "live":
		return queryGoal{text: fmt.Sprintf("live < %d ms p99", targetLiveP99ms), limitMs: targetLiveP99ms}, true
	case q.Path == "/crashGroups":
		return queryGoal{text: fmt.Sprintf("< %d ms p95%s", targetGroupsP95ms, onEvents), limitMs: targetGroupsP95ms, p95: true, onEvents: true}, true
	case q.Path == "/journey":
		return queryGoal{text: fmt.Sprintf("< %d ms p95%s", targetJourneyP95ms, onEvents), limitMs: targetJourneyP95ms, p95: true, onEvents: true}, true
	}
	return queryGoal{}, false
}

// verdict decides the goal on a query's figures, the store holding events events: a figure on
// fewer events than the target's says nothing about it.
func (g queryGoal) verdict(r queryResult, events int64) string {
	if g.onEvents && events < targetEvents {
		return fmt.Sprintf("not decided (%s events)", thousands(float64(events)))
	}
	v := r.P99
	if g.p95 {
		v = r.P95
	}
	return below(msf(v), g.limitMs)
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func e2eValue(s summary) string {
	v := fmt.Sprintf("%s items/s, %.0f batches/s; p50 %.1f / p90 %.1f / p99 %.1f ms", thousands(s.ItemsPerSec),
		s.BatchesPerSec, s.Latency.P50, s.Latency.P90, s.Latency.P99)
	if s.Failed > 0 {
		v += fmt.Sprintf("; %d failed", s.Failed)
	}
	if n := s.Status["503"] + s.Status["429"]; n > 0 {
		v += fmt.Sprintf("; %d answers were 503 or 429 (retry later: a full spool, or a retried request still in progress), each retried within -max-retry-wait", n)
	}
	return v
}

// sustained is the flat-out rate the verdicts use: the items acknowledged per second, or the
// rows the store took per second when that is less. A node acknowledges a batch once it is in
// the spool, so for as long as the spool's backlog may grow (up to --spool-max-bytes) it
// acknowledges faster than its store takes the rows, and a run that ends with a backlog
// overstates what the node keeps up.
func (e *e2e) sustained() float64 {
	if e.stored > 0 && e.stored < e.full.ItemsPerSec {
		return e.stored
	}
	return e.full.ItemsPerSec
}

// storedValue says what the store took meanwhile, when it was measured.
func storedValue(e *e2e) string {
	if e.stored == 0 && e.backlog == 0 {
		return ""
	}
	v := fmt.Sprintf("; the store took %s rows/s meanwhile, %.0f MiB acknowledged but not yet stored at the end",
		thousands(e.stored), e.backlog/(1<<20))
	if e.stored < e.full.ItemsPerSec {
		v += " (the verdict and the rows below use the store's rate)"
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

// tableTarget is the file the table goes to: -out (replaced whole) when given, else the
// generated section of -doc. Relative paths are relative to the repository root.
func tableTarget(root string, c config) (path string, whole bool) {
	rel := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	if c.out != "" {
		return rel(c.out), true
	}
	return rel(c.doc), false
}

// outFile is the whole content of an -out file: a title, then the section.
func outFile(section string) string {
	return "# svc benchmarks: a run outside docs/benchmarks.md (not committed)\n\n" + strings.TrimRight(section, "\n") + "\n"
}

// targetsProse says under the table what each target row measures and how the figures are made.
const targetsProse = `
Targets (issue 17: 2 cores, loadgen on the same cores):

- **flat out** (b, c): items per second a fresh node acknowledges while loadgen's workers replay
  the recorded SDK batches as fast as it answers: ≥ 60,000 embedded, ≥ 45,000 with ClickHouse +
  PostgreSQL. The node acknowledges a batch once it is in the spool, so the row also says how
  many rows per second the store took meanwhile and how much acknowledged data was still
  waiting for it at the end (up to --spool-max-bytes): a run that ends with a backlog
  acknowledged faster than its store keeps up, so the verdict, the ÷ decode ceiling and the
  efficiency rows use the lesser of the two rates. Once the spool is full the node answers 503
  with Retry-After 5 s; loadgen's workers retry sooner (-max-retry-wait, 100 ms by default, as
  many times as the run lasts), so that the load stays on while the store drains the spool
  rather than stopping for 5 s. The row says how many such answers there were.
- **pipeline efficiency**: that rate ÷ (2 cores ÷ Σ parts), the parts being decode + validate
  (a), the durable append and the store insert measured in isolation as CPU per item: ≥ 0.75 on
  both setups, i.e. the node spends at most a third more than the irreducible work.
- **where the CPU went, and the ceiling with loadgen on the same cores**: each flat-out run
  says how many µs of CPU per acknowledged item the node, loadgen (its rusage), the ClickHouse
  server and everything else (/proc/stat's busy time minus those) used, and how much was
  idle. Beside everything else, the counters that say what it is: the hypervisor's steal and
  the interrupts (both from /proc/stat), the kernel's threads and the other processes that
  lived through the run (a scan of /proc at its start and end), and the bench itself. They are
  read on their own, not as its parts: everything else is a difference of larger figures, and
  interrupts are partly inside the processes' time. Idle says how much of it had a disk
  request outstanding (iowait). The floor row runs loadgen flat out against a receiver in the bench that only reads
  each body and answers 202: what loadgen and the least of any HTTP service cost per item.
  Neither is a part, so the efficiency can be at most Σ ÷ (Σ + loadgen + receiving) before the
  node does anything of its own; that ceiling's row shows it (with loadgen's cheaper figure of
  the floor and the run) and what 0.75 would leave for them, then what the node (with the
  ClickHouse server) used flat out beyond Σ against what 0.75 leaves it once loadgen and
  receiving are paid: when that is none, or far less than the node's work beyond its parts, the
  target is out of reach with loadgen on the same cores. It holds as long as the parts cost
  the node no less than they cost measured alone. The receiver runs as a process of its own
  (the bench binary with -floor-receiver), so its figure is its CPU alone. The node's CPU after
  loadgen stopped, while its store took what the spool still held, is given apart.
- **p99 of 50–149-item batches**: loadgen paced at half the flat-out request rate; the 99th
  percentile of the time to acknowledge its requests of 50 to 149 items: < 10 ms, both setups.
  Two rows say what that time is made of. The spool alone, at the same request rate once the
  node has stopped and the other processes have settled (as for (d)), is what a durable
  acknowledgement waits for at least on this disk. A second run of 10 s at the half rate with
  an execution trace of the node (6 s of its admin /debug/pprof/trace; the measured run is not
  traced, as tracing costs CPU) follows each PUT /events, of every size, on its connection's
  goroutine, from when it woke for the request's first bytes to the flush of its answer, and
  sums for those of 10 ms or more how long they ran, waited for a CPU once runnable (or
  stopped by the collector), were in system calls and were blocked, and on what; and, while
  they waited for a CPU, which of the node's goroutines ran, as shares of that running time
  (a thread of another process that took a CPU from the node shows as the goroutine it
  interrupted, running). Over the whole trace it also gives the spool's writer goroutine's
  system calls (its writes and fdatasyncs, one of each per group) and its waits for a CPU,
  each one's length: the disk's part of the group sync a request blocks on, and the machine's.
- **crash groups / journey from the store** (d): the dashboard API asked with
  ` + "`Svc-Answer-From: store`" + ` on a store holding 10M events of the app: the crash group list over
  the last 7 days (the default window) and 30 days (explicit from/to) < 150 ms p95, the journey
  over 7 days < 300 ms p95, both stores. With fewer events the verdict is "not decided".
- **live**: the same requests answered from the app actor's memory (` + "`Svc-Answered-By: live`" + `):
  < 1 ms p99, every live row, over 3,000 sequential requests each (-live-requests; the store
  rows time 300, -query-requests). Each live row also says how many garbage collections the
  node ran during its timed requests and how many bytes it allocated per request (its
  /metrics): the slowest live answers are the ones that meet a collection. The bench collects
  its own garbage once before each row's timed requests and not during them (unless the memory
  its runtime holds grows by 512 MiB), so that its collections do not count as the node's latency; the row says
  how many it ran all the same.
- **settled**: (d) times its requests once the processes other than the node and the bench
  have used under 15 % of the machine's CPUs for 10 s (at most 5 minutes of waiting; the events
  row says how long, and how busy the node itself was): right after a load a ClickHouse next
  to the node still merges what it took in, and on 2 cores that work, not the node's answer,
  decided the live rows' tail. The node's own work (an embedded node compacting) is not waited
  for. Each live row says what the node, the bench and the other processes used of the CPUs
  during its timed requests. The timed requests go over one connection of the bench's own,
  written and read in one goroutine (no http.Client), so that the client's hand-offs between
  goroutines do not count as the node's time; runs before 2026-11-29 22:30 used an http.Client,
  and their live figures include about 0.1 ms more per request.
- **dashboard window**: the crash group list and the journey over a window shaped like the
  reference dashboard's, from 12:00:00.002 UTC five days ago to now (DashboardWindow): the app
  actor answers its whole days and the store the half day its start cuts
  (` + "`Svc-Answered-By: live+store`" + `); held to the store rows' targets.
- **node RSS** (f): the peak RSS (sampled every 100 ms) of an embedded node during a flat-out
  load that starts once 100k session actors are live (one-event requests, each a new session;
  ` + "`--session-idle`" + ` long enough that none passivates): < 1 GB (10⁹ bytes).

The parts' store insert is corpus rows (events and spans, Facts derived, fresh event, span and
session ids at each write, as loadgen renews them per request) written into a fresh store:
Badger on disk counting this process's CPU with Badger's background work, ClickHouse counting
this process and the server (its /proc stat, up to 1 s after the last insert); the durable
append is spool appends of the corpus bodies by concurrent writers (the fdatasync's wait is not
CPU), divided by the corpus's items per request. (b)/(a) and (c)/(a) divide by the decode-only
ceiling. Dashboard latencies are measured by a client over loopback
(sign-in checks and the JSON answer included) on the node loadgen filled; ` + "`-query-events N`" + `
first tops its store up to N events with synthetic copies of the corpus events (fresh ids, in
the last 6 days) written straight into the store with the node stopped, then starts the node
again, which rebuilds its live aggregates from the store: the live answers count the copies
too. Bench nodes let a dashboard request take 2 minutes (` + "`--request-timeout 2m`" + `), so a slow
store answer is timed, not cut at 30 s. The actor figure (e) is Go heap, not RSS.
`

// docSection is the generated part of docs/benchmarks.md.
func docSection(machine, cmdline string, c config, table, top string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Latest `make bench` (generated)\n\n%s\n\nCommand: `%s` (loadgen %d s per run, %d workers; a fresh node per store).\n\n",
		machine, cmdline, c.seconds, c.concurrency)
	b.WriteString(table)
	b.WriteString(targetsProse)
	if top != "" {
		b.WriteString("\nTop of the embedded node's CPU profile, 10 s of the flat-out run (`bench-out/embedded-cpu.pprof`):\n\n```\n")
		b.WriteString(top)
		b.WriteString("\n```\n")
	}
	return b.String()
}

// ownWork says, for the efficiency's ceiling row, what the node (and the ClickHouse server)
// used per item flat out beyond Σ, the parts' sum, against left: what the target leaves for it
// once loadgen and receiving are paid. The parts are measured alone, so this is the node's work
// that is no part (sessions, apps, the flusher, the collector, HTTP) and what its parts cost
// more inside it.
func ownWork(sp cpuSplit, sum, left float64) string {
	who, used := "the node", sp.Node+sp.NodeDrain
	if sp.ServerKnown {
		who, used = "the node and the ClickHouse server", used+sp.Server
	}
	room := fmt.Sprintf("%.2f left for it", left)
	if left <= 0 {
		room = fmt.Sprintf("none left for it (loadgen and receiving alone take %.2f more)", -left)
	}
	return fmt.Sprintf("; flat out %s used %.2f µs per item (with the node's CPU after loadgen stopped, while its store caught up), %.2f beyond Σ, against %s",
		who, used, used-sum, room)
}
