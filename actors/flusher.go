package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// FlushItem is one accepted batch handed to the flusher, with the spool record to acknowledge
// once its rows are stored. The flusher always runs on the node that holds the spool, so its
// messages never cross nodes and are plain Go values.
type FlushItem struct {
	Events  []model.Event
	Spans   []model.Span
	Blobs   []Blob // inline attachment bytes of the batch, written before its rows
	Seq     uint64
	BodyLen int
}

// Blob is an attachment's bytes that came inline in a batch, and the blob store key they go to.
// The spool record holds them too, so writing them after the acknowledgement loses nothing.
type Blob = sinks.Blob

// Acker is told which spool records are stored (spool.Spool implements it).
type Acker interface{ Ack(seq uint64, bodyLen int) }

// FlushOptions tune a flusher.
type FlushOptions struct {
	MaxRows int // flush when this many rows are held; default 50,000 (the node passes --flush-rows)
	// MaxBytes: flush when the held batches' bodies reach this many bytes, so rows waiting for
	// the interval never fill the spool's back-pressure bound (the node sets a quarter of it);
	// 0 = no such limit.
	MaxBytes int64
	Interval time.Duration // flush what is held at least this often; default 1 s
	Timeout  time.Duration // one store write; default 60 s
	// Probe is how often a failing flusher pings the store (each ping within ProbeTimeout) and
	// writes again as soon as it answers; defaults 250 ms and 2 s.
	Probe, ProbeTimeout time.Duration
	// Blobs receives inline attachment bytes; without it they are dropped (tests of rows only).
	Blobs sinks.BlobStore
	// IdleRelease is how long after its last write a flusher that holds no rows lets its
	// buffers go, and tells a store that keeps memory between writes (sinks.Idler) to do the
	// same; default 10 s, so that they are garbage before the node's idle collection
	// (cmd/svc/node, every 15 s without one) looks.
	IdleRelease time.Duration
}

type flushTick struct{}

// FlushNow asks the flusher to write what it holds now; it responds with a FlushNowReply once
// the write succeeded or failed. Start-up uses it to know the spool's replayed rows are stored.
type FlushNow struct{}

// FlushNowReply answers FlushNow: nil when nothing is held any more.
type FlushNowReply struct{ Err error }

type pendingAck struct {
	seq     uint64
	bodyLen int
}

// flusher batches rows by count, bytes and time so the event store gets few, large inserts
// (ClickHouse wants 10k–100k rows per insert, about one insert per second per table). When the
// store fails it keeps the rows and pings the store every Probe; the first ping answered
// triggers a write of everything held (in MaxRows chunks), so it recovers within a probe of the
// store's return instead of sleeping out a backoff. A store that answers pings but keeps
// refusing writes is written to with a backoff growing to maxWriteBackoff. The spool's
// back-pressure bound keeps what it holds bounded.
type flusher struct {
	store sinks.EventStore
	acker Acker
	opts  FlushOptions
	log   *slog.Logger
	m     *FlushMetrics

	events []model.Event
	spans  []model.Span
	blobs  []Blob
	acks   []pendingAck
	bytes  int64     // body bytes of the held batches
	last   time.Time // when the last write started
	done   time.Time // when the last write that succeeded ended
	stop   context.CancelFunc

	failing   bool          // the last write failed
	failedAt  time.Time     // when the current outage was first seen
	nextProbe time.Time     // when a failing flusher next pings the store
	backoff   time.Duration // between writes to a store that answers pings but refuses writes
}

// FlushMetrics are the flusher's Prometheus metrics.
type FlushMetrics struct {
	Rows     *prometheus.CounterVec
	Failures prometheus.Counter
	Duration prometheus.Histogram
	Held     prometheus.Gauge
}

// NewFlushMetrics registers the flusher's metrics on reg.
func NewFlushMetrics(reg prometheus.Registerer) *FlushMetrics {
	m := &FlushMetrics{
		Rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svc_flush_rows_total",
			Help: "Rows written to the event store, by table."}, []string{"table"}),
		Failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "svc_flush_failures_total",
			Help: "Event store writes that failed and will be retried."}),
		Duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "svc_flush_duration_seconds",
			Help: "Duration of one flush to the event store.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		Held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "svc_flush_rows_held",
			Help: "Rows held by the flusher, waiting for the next flush."}),
	}
	reg.MustRegister(m.Rows, m.Failures, m.Duration, m.Held)
	return m
}

// NewFlusher returns the props of a flusher actor.
func NewFlusher(store sinks.EventStore, acker Acker, opts FlushOptions, m *FlushMetrics, log *slog.Logger) *actor.Props {
	if opts.MaxRows <= 0 {
		opts.MaxRows = 50_000
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.IdleRelease <= 0 {
		opts.IdleRelease = 10 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.Probe <= 0 {
		opts.Probe = 250 * time.Millisecond
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = 2 * time.Second
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &flusher{store: store, acker: acker, opts: opts, m: m, log: log.With("component", "flusher")}
	})
}

func (f *flusher) rows() int { return len(f.events) + len(f.spans) }

func (f *flusher) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		f.last = time.Now()
		f.done = f.last
		tickCtx, cancel := context.WithCancel(context.Background())
		f.stop = cancel
		self, root := ctx.Self(), ctx.ActorSystem().Root
		interval := min(f.opts.Interval/4, f.opts.Probe)
		go func() { // ends when the flusher stops
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-tickCtx.Done():
					return
				case <-t.C:
					root.Send(self, flushTick{})
				}
			}
		}()
	case *FlushItem:
		f.events = append(f.events, m.Events...)
		f.spans = append(f.spans, m.Spans...)
		f.blobs = append(f.blobs, m.Blobs...)
		f.acks = append(f.acks, pendingAck{m.Seq, m.BodyLen})
		f.bytes += int64(m.BodyLen)
		f.m.Held.Set(float64(f.rows()))
		full := f.rows() >= f.opts.MaxRows || (f.opts.MaxBytes > 0 && f.bytes >= f.opts.MaxBytes)
		if full && !f.failing {
			f.flush()
		}
	case FlushNow:
		var err error
		if len(f.acks) > 0 {
			err = f.flush()
		}
		ctx.Respond(FlushNowReply{Err: err})
	case flushTick:
		switch {
		case len(f.acks) == 0:
		case f.failing:
			if time.Now().After(f.nextProbe) {
				f.probe()
			}
		case time.Since(f.last) >= f.opts.Interval:
			f.flush()
		}
		// Idle: the row buffers (up to MaxRows rows of capacity) go back to the heap, so a node
		// whose load stopped holds no more than it needs.
		if len(f.acks) == 0 && cap(f.events)+cap(f.spans) > 0 && time.Since(f.done) >= f.opts.IdleRelease {
			f.events, f.spans, f.blobs, f.acks = nil, nil, nil, nil
			if st, ok := f.store.(sinks.Idler); ok {
				st.Idle()
			}
		}
	case *actor.Stopping:
		f.stop()
		if len(f.acks) > 0 {
			f.flush() // what fails here stays in the spool and is replayed at the next start
		}
	}
}

// maxWriteBackoff caps the wait between writes to a store that answers pings but refuses
// writes.
const maxWriteBackoff = 5 * time.Second

// probe pings the store of a failing flusher and writes what it holds when the store answers.
func (f *flusher) probe() {
	ctx, cancel := context.WithTimeout(context.Background(), f.opts.ProbeTimeout)
	err := f.store.Ping(ctx)
	cancel()
	if err != nil {
		f.nextProbe = time.Now().Add(f.opts.Probe)
		return
	}
	f.flush()
}

// flush writes everything held, in chunks of MaxRows, then acknowledges the spool records.
func (f *flusher) flush() error {
	start := time.Now()
	f.last = start
	err := f.write()
	f.m.Duration.Observe(time.Since(start).Seconds())
	if err != nil {
		f.m.Failures.Inc()
		if !f.failing {
			f.failing, f.failedAt, f.backoff = true, time.Now(), 0
			f.log.Warn("event store write failed; rows kept, probing the store every "+f.opts.Probe.String(),
				"error", err.Error(), "rows_held", f.rows(), "took", time.Since(start).String())
		} else {
			// The store answered a ping but refused the write again: back off.
			f.backoff = min(max(2*f.backoff, f.opts.Probe), maxWriteBackoff)
			f.log.Warn("event store write failed again; rows kept", "error", err.Error(),
				"rows_held", f.rows(), "retry_in", f.backoff.String())
		}
		f.nextProbe = time.Now().Add(max(f.backoff, f.opts.Probe))
		return err
	}
	if f.failing {
		f.log.Info("event store writes recovered", "outage", time.Since(f.failedAt).String(),
			"rows", f.rows(), "took", time.Since(start).String())
	}
	f.failing, f.backoff, f.done = false, 0, time.Now()
	f.m.Rows.WithLabelValues("events").Add(float64(len(f.events)))
	f.m.Rows.WithLabelValues("spans").Add(float64(len(f.spans)))
	for _, a := range f.acks {
		f.acker.Ack(a.seq, a.bodyLen)
	}
	clear(f.events) // drop references so the GC can reclaim the rows' strings
	clear(f.spans)
	clear(f.blobs)
	f.events, f.spans, f.blobs, f.acks = f.events[:0], f.spans[:0], f.blobs[:0], f.acks[:0]
	f.bytes = 0
	f.m.Held.Set(0)
	return nil
}

// write stores every held blob, then every held row. What an earlier, failed attempt wrote is
// written again; blob puts and the store's writes are idempotent.
func (f *flusher) write() error {
	if err := f.writeBlobs(); err != nil {
		return err
	}
	for i := 0; i < len(f.events); i += f.opts.MaxRows {
		ctx, cancel := context.WithTimeout(context.Background(), f.opts.Timeout)
		err := f.store.WriteEvents(ctx, f.events[i:min(i+f.opts.MaxRows, len(f.events))])
		cancel()
		if err != nil {
			return err
		}
	}
	for i := 0; i < len(f.spans); i += f.opts.MaxRows {
		ctx, cancel := context.WithTimeout(context.Background(), f.opts.Timeout)
		err := f.store.WriteSpans(ctx, f.spans[i:min(i+f.opts.MaxRows, len(f.spans))])
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeBlobs puts the held inline attachments: in one PutBatch when the blob store has it (one
// sync for all, instead of the two fsyncs per blob a Put costs on local disk: 19% of the
// embedded node's CPU flat out before, docs/benchmarks.md), else several Puts at once; every
// goroutine ends with its put.
func (f *flusher) writeBlobs() error {
	if f.opts.Blobs == nil || len(f.blobs) == 0 {
		return nil
	}
	if bb, ok := f.opts.Blobs.(sinks.BlobBatch); ok {
		ctx, cancel := context.WithTimeout(context.Background(), f.opts.Timeout)
		defer cancel()
		if err := bb.PutBatch(ctx, f.blobs); err != nil {
			return fmt.Errorf("store inline attachments: %w", err)
		}
		return nil
	}
	const parallel = 8
	errs := make([]error, len(f.blobs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range f.blobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), f.opts.Timeout)
			defer cancel()
			b := &f.blobs[i]
			errs[i] = f.opts.Blobs.Put(ctx, b.Key, bytes.NewReader(b.Bytes), int64(len(b.Bytes)))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store inline attachments: %w", err)
	}
	return nil
}
