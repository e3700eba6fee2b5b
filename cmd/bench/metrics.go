package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// nodeMetrics reads the node's /metrics (Prometheus text) from its admin listener.
func nodeMetrics(ctx context.Context, n *node, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.admin+"/metrics", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(b), nil
}

// metricSum is the sum of every series of the metric name in Prometheus text (all label
// values), and whether there was one.
func metricSum(text, name string) (float64, bool) {
	var sum float64
	found := false
	for _, l := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(l, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			sum += v
			found = true
		}
	}
	return sum, found
}

// stageTimes is svc_ingest_stage_seconds of one node at one moment: per stage, the cumulative
// bucket counts by upper bound, the sum and the count.
type stageTimes map[string]*stageHist

type stageHist struct {
	le    []float64 // upper bounds, ascending, +Inf last
	cum   []float64 // cumulative counts
	sum   float64
	count float64
}

// parseStages reads svc_ingest_stage_seconds from Prometheus text.
func parseStages(text string) stageTimes {
	return histograms(text, "svc_ingest_stage_seconds", "stage")
}

// schedLatencies is the Go runtime's histogram of the time goroutines spent ready to run
// before they ran (runtime/metrics /sched/latencies), as the node's /metrics names it.
const schedLatencies = "go_sched_latencies_seconds"

// histograms reads the histogram name from Prometheus text, one per value of the label by
// (by "": the one unlabelled histogram, under "").
func histograms(text, name, by string) stageTimes {
	st := stageTimes{}
	get := func(key string) *stageHist {
		h := st[key]
		if h == nil {
			h = &stageHist{}
			st[key] = h
		}
		return h
	}
	for _, l := range strings.Split(text, "\n") {
		series, labels, val := l, "", ""
		if n, rest, ok := strings.Cut(l, "{"); ok {
			var found bool
			if labels, val, found = strings.Cut(rest, "} "); !found {
				continue
			}
			series = n
		} else if series, val, ok = strings.Cut(l, " "); !ok {
			continue
		}
		part, ok := strings.CutPrefix(series, name+"_")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		var key, le string
		for _, kv := range strings.Split(labels, ",") {
			k, q, _ := strings.Cut(kv, "=")
			q = strings.Trim(q, `"`)
			switch k {
			case by:
				key = q
			case "le":
				le = q
			}
		}
		if by != "" && key == "" {
			continue
		}
		h := get(key)
		switch part {
		case "bucket":
			b, err := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
			if err != nil {
				continue
			}
			h.le = append(h.le, b)
			h.cum = append(h.cum, v)
		case "sum":
			h.sum = v
		case "count":
			h.count = v
		}
	}
	return st
}

// stageSummary is one stage's requests, mean and 99th percentile over an interval.
type stageSummary struct {
	Stage      string
	Count      float64
	Mean, P99  time.Duration
	P99AtLeast bool // the 99th percentile is past the largest finite bucket
}

// stagesBetween is each stage's summary of what happened between two snapshots, in the order
// of their mean time, longest first. The 99th percentile is the upper bound of the bucket that
// holds it.
func stagesBetween(before, after stageTimes) []stageSummary {
	var out []stageSummary
	for stage, a := range after {
		b := before[stage]
		n := a.count
		sum := a.sum
		if b != nil {
			n -= b.count
			sum -= b.sum
		}
		if n <= 0 {
			continue
		}
		s := stageSummary{Stage: stage, Count: n, Mean: time.Duration(sum / n * float64(time.Second))}
		for i, le := range a.le {
			c := a.cum[i]
			if b != nil && i < len(b.cum) {
				c -= b.cum[i]
			}
			if c >= 0.99*n {
				if math.IsInf(le, 1) {
					s.P99AtLeast = true
					if i > 0 {
						le = a.le[i-1]
					}
				}
				s.P99 = time.Duration(le * float64(time.Second))
				break
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Mean != out[j].Mean {
			return out[i].Mean > out[j].Mean
		}
		return out[i].Stage < out[j].Stage
	})
	return out
}

// stagesValue is the stage summaries as one line of the table: "spool_append 1.20 / ≤ 6.4, …" (mean / p99 in ms).
func stagesValue(ss []stageSummary) string {
	parts := make([]string, 0, len(ss))
	for _, s := range ss {
		at := "≤ "
		if s.P99AtLeast {
			at = "> "
		}
		parts = append(parts, fmt.Sprintf("%s %.2f / %s%.1f", s.Stage, millis(s.Mean), at, millis(s.P99)))
	}
	return strings.Join(parts, ", ")
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// drained waits until the node's spool holds nothing the store has not taken
// (svc_spool_pending_bytes is 0), up to 10 minutes, and returns its metrics then and how long
// that took.
func drained(ctx context.Context, n *node, token string) (string, time.Duration, error) {
	t0 := time.Now()
	for {
		text, err := nodeMetrics(ctx, n, token)
		if err != nil {
			return "", 0, err
		}
		if v, ok := metricSum(text, "svc_spool_pending_bytes"); !ok || v == 0 {
			return text, time.Since(t0), nil
		}
		if time.Since(t0) > 10*time.Minute {
			return "", 0, errors.New("the spool still holds rows the store has not taken 10 minutes after the load")
		}
		select {
		case <-ctx.Done():
			return "", 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
