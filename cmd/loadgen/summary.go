package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Summary is the outcome of a run; -json prints it as is.
type Summary struct {
	Format      string  `json:"format"`
	Fixtures    int     `json:"fixtures"`
	Concurrency int     `json:"concurrency"`
	TargetRate  float64 `json:"target_rate"` // requests/s; 0 = as fast as possible
	ElapsedSec  float64 `json:"elapsed_s"`

	Requests int64 `json:"requests"` // acknowledged (2xx)
	Failed   int64 `json:"failed"`   // ended without acknowledgement
	Attempts int64 `json:"attempts"` // HTTP exchanges, retries included
	Retries  int64 `json:"retries"`  // after 429 or 503
	Events   int64 `json:"events"`   // of acknowledged requests
	Spans    int64 `json:"spans"`
	Items    int64 `json:"items"` // events + spans
	Bytes    int64 `json:"bytes"` // bodies of acknowledged requests

	EventsPerSec  float64 `json:"events_per_s"`
	ItemsPerSec   float64 `json:"items_per_s"`
	BatchesPerSec float64 `json:"batches_per_s"`
	MBPerSec      float64 `json:"mb_per_s"`

	// Latency of acknowledged attempts, request sent to answer read, in milliseconds.
	Latency Latency `json:"latency_ms"`
	// The same by batch size: the corpus mixes 1-item and 500-item bodies.
	BySize []SizeLatency `json:"latency_by_size"`

	Status          map[string]int64 `json:"status"` // every answer, retried ones included
	TransportErrors int64            `json:"transport_errors"`
	Abandoned       int64            `json:"abandoned"` // given up while waiting to retry (interrupted)
	FirstError      string           `json:"first_error,omitempty"`
}

// sizeClasses group batches by items (events + spans) for SizeLatency.
var sizeClasses = [...]struct {
	name     string
	min, max int
}{{"1-9", 1, 9}, {"10-49", 10, 49}, {"50-149", 50, 149}, {"150+", 150, math.MaxInt}}

func sizeClass(items int) int {
	for i, c := range sizeClasses {
		if items <= c.max {
			return i
		}
	}
	return len(sizeClasses) - 1
}

// SizeLatency is the latency of acknowledged requests whose batches have Items items.
type SizeLatency struct {
	Items    string  `json:"items"`
	Requests int     `json:"requests"`
	Latency  Latency `json:"latency_ms"`
}

// Latency percentiles in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func summarize(cfg Config, stats []*workerStats, elapsed time.Duration) Summary {
	s := Summary{Format: "json", Fixtures: len(cfg.Templates), Concurrency: cfg.Concurrency,
		TargetRate: cfg.Rate, ElapsedSec: elapsed.Seconds(), Status: map[string]int64{}}
	if cfg.Multipart {
		s.Format = "multipart"
	}
	var lat []time.Duration
	for _, w := range stats {
		s.Requests += w.requests
		s.Failed += w.failed
		s.Attempts += w.attempts
		s.Retries += w.retries
		s.Events += w.events
		s.Spans += w.spans
		s.Bytes += w.bytes
		s.TransportErrors += w.transportErrors
		s.Abandoned += w.abandoned
		for code, n := range w.status {
			s.Status[strconv.Itoa(code)] += n
		}
		if s.FirstError == "" {
			s.FirstError = w.firstErr
		}
		lat = append(lat, w.latencies...)
	}
	s.Items = s.Events + s.Spans
	if sec := elapsed.Seconds(); sec > 0 {
		s.EventsPerSec = float64(s.Events) / sec
		s.ItemsPerSec = float64(s.Items) / sec
		s.BatchesPerSec = float64(s.Requests) / sec
		s.MBPerSec = float64(s.Bytes) / 1e6 / sec
	}
	s.Latency = percentiles(lat)
	for c := range sizeClasses {
		var l []time.Duration
		for _, w := range stats {
			l = append(l, w.bySize[c]...)
		}
		if len(l) > 0 {
			s.BySize = append(s.BySize, SizeLatency{Items: sizeClasses[c].name, Requests: len(l), Latency: percentiles(l)})
		}
	}
	return s
}

// percentiles uses the nearest-rank method on every sample (a run keeps them all: 8 bytes per
// request).
func percentiles(d []time.Duration) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	slices.Sort(d)
	rank := func(p float64) float64 {
		i := int(p*float64(len(d))+0.999999) - 1
		i = max(0, min(i, len(d)-1))
		return ms(d[i])
	}
	var sum time.Duration
	for _, v := range d {
		sum += v
	}
	return Latency{P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: ms(d[len(d)-1]),
		Mean: ms(sum / time.Duration(len(d)))}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Failures counts the requests that ended without acknowledgement: transport errors, 4xx,
// 5xx, and 429/503 still answered after the last retry. A 503 or 429 whose retry was accepted
// is back-pressure working as the contract says: counted in Status and Retries, not a failure.
func (s Summary) Failures() int64 { return s.Failed }

// Print writes the summary for a person.
func (s Summary) Print(w io.Writer) {
	rate := "as fast as possible"
	if s.TargetRate > 0 {
		rate = fmt.Sprintf("target %.0f req/s", s.TargetRate)
	}
	fmt.Fprintf(w, "%s bodies from %d fixtures, %d workers, %s, %.1f s\n", s.Format, s.Fixtures, s.Concurrency, rate, s.ElapsedSec)
	fmt.Fprintf(w, "requests    %d acknowledged, %d failed, %d attempts, %d retried\n", s.Requests, s.Failed, s.Attempts, s.Retries)
	fmt.Fprintf(w, "sent        %d events + %d spans = %d items, %.1f MB\n", s.Events, s.Spans, s.Items, float64(s.Bytes)/1e6)
	fmt.Fprintf(w, "throughput  %.0f events/s, %.0f items/s, %.1f batches/s, %.1f MB/s\n", s.EventsPerSec, s.ItemsPerSec, s.BatchesPerSec, s.MBPerSec)
	fmt.Fprintf(w, "latency ms  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f  mean %.2f\n", s.Latency.P50, s.Latency.P90, s.Latency.P99, s.Latency.Max, s.Latency.Mean)
	for _, c := range s.BySize {
		fmt.Fprintf(w, "  %-6s items, %6d requests: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", c.Items, c.Requests,
			c.Latency.P50, c.Latency.P90, c.Latency.P99, c.Latency.Max)
	}
	codes := make([]string, 0, len(s.Status))
	for c := range s.Status {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%s: %d", c, s.Status[c]))
	}
	fmt.Fprintf(w, "status      %s\n", strings.Join(parts, "  "))
	fmt.Fprintf(w, "errors      %d transport, %d abandoned\n", s.TransportErrors, s.Abandoned)
	if s.FirstError != "" {
		fmt.Fprintf(w, "first error %s\n", s.FirstError)
	}
}
