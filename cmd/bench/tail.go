package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// The half-rate target is about the slowest requests, and their stage histograms say where
// the time went only to a power of two. An execution trace of the node says what each request's
// goroutine was doing all along: running, waiting for a CPU, blocked (and on what), in a system
// call. tailSplit sums that over the requests the target counts as slow.

// tailSplit is the time the node's PUT /events requests of a trace spent in each state, summed
// over the slow ones (at least slowAt) and over the others, and the server-side durations.
type tailSplit struct {
	Requests     int
	P50, P99     time.Duration // server-side: from the request's first bytes to its end
	Slow, Fast   tailPart
	SlowAt       time.Duration
	TraceSeconds float64
}

// tailPart is a group of requests: how many, and their mean time per state.
type tailPart struct {
	N                               int
	Mean, Running, Runnable, Syscal time.Duration
	Blocked                         []blockedOn // by time, longest first
}

type blockedOn struct {
	What string
	Mean time.Duration
}

// The blocking points a request meets, named by a function on the blocked goroutine's stack
// (the first that matches).
var blockPoints = []struct{ frame, what string }{
	{"spool.(*Spool).Append", "the spool's group sync"},
	{"actors.(*LocalDirectory).Request", "session actors' replies"},
	{"actors.(*Ingest)", "the ingest actors"},
	{"sinks/gate.", "the request gate"},
	{"net/http.(*body).Read", "reading the body"},
}

// preempted is the reason Go 1.26 traces give a goroutine the collector stopped: not a wait for
// anything but a CPU, so it counts as waiting for one.
const preempted = "preempted"

// segment is one request of a connection goroutine: from when it woke for the request's first
// bytes (or read them at once, or started) to when its answer was flushed or it read the next
// request's.
type segment struct {
	start, end                  trace.Time
	running, runnable, syscalls time.Duration
	blocked                     map[string]time.Duration
	match                       bool // a frame of the requests counted (isRequest) was seen in it
}

// goState is what the analysis knows of a goroutine: its state since when, why it waits, and
// the request it is serving (connection goroutines only).
type goState struct {
	since trace.Time
	state trace.GoState
	why   string
	conn  bool
	cur   *segment
}

// analyzeTail reads an execution trace of a node and splits the time of its requests whose
// goroutine stacks name isRequest (e.g. "ingest.(*Events).ServeHTTP"). A request is the span of
// a net/http connection goroutine from its start, or from reading a request's first bytes
// (bufio Peek in conn.serve, when that read finds them at once or wakes when they come), to
// the next such read, or to its wait in abortPendingRead: net/http flushes the answer before
// it, so what follows is not the client's time. Keep-alive connections give one segment per
// request; requests under way when the trace starts or ends are left out.
func analyzeTail(r io.Reader, isRequest string, slowAt time.Duration) (*tailSplit, error) {
	segs, seconds, err := requestSegments(r, isRequest)
	if err != nil {
		return nil, err
	}
	split := &tailSplit{SlowAt: slowAt, TraceSeconds: seconds}
	var slow, fast []*segment
	var durs []time.Duration
	for _, sg := range segs {
		d := time.Duration(sg.end - sg.start)
		durs = append(durs, d)
		if d >= slowAt {
			slow = append(slow, sg)
		} else {
			fast = append(fast, sg)
		}
	}
	split.Requests = len(durs)
	if len(durs) == 0 {
		return nil, fmt.Errorf("trace: no request naming %s", isRequest)
	}
	split.P50, split.P99 = Percentile(durs, 0.5), Percentile(durs, 0.99)
	split.Slow, split.Fast = sumPart(slow), sumPart(fast)
	return split, nil
}

// requestSegments is analyzeTail's reading of the trace: the requests naming isRequest, and
// how many seconds the trace spans.
func requestSegments(r io.Reader, isRequest string) ([]*segment, float64, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, 0, fmt.Errorf("trace: %w", err)
	}
	gs := map[trace.GoID]*goState{}
	var segs []*segment
	var first, last trace.Time
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("trace: %w", err)
		}
		if first == 0 {
			first = ev.Time()
		}
		last = ev.Time()
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		g := st.Resource.Goroutine()
		from, to := st.Goroutine()
		s := gs[g]
		if s == nil {
			s = &goState{since: ev.Time(), state: trace.GoUndetermined}
			gs[g] = s
		}
		if c := s.cur; c != nil {
			d := time.Duration(ev.Time() - s.since)
			switch s.state {
			case trace.GoRunning:
				c.running += d
			case trace.GoRunnable:
				c.runnable += d
			case trace.GoSyscall:
				c.syscalls += d
			case trace.GoWaiting:
				if s.why == preempted { // stopped for the collector: it waits to run again
					c.runnable += d
				} else {
					c.blocked[s.why] += d
				}
			}
		}
		if from == to {
			// A new generation of the trace restates every goroutine's state (with no reason,
			// sometimes no stack): nothing changed, so what it waits on stays as it was.
			s.since = ev.Time()
			continue
		}
		stack := frames(st.Stack)
		if !s.conn && strings.Contains(stack, "net/http.(*conn).serve") {
			s.conn = true
		}
		if s.cur != nil && !s.cur.match && strings.Contains(stack, isRequest) {
			s.cur.match = true
		}
		peek := s.conn && strings.Contains(stack, "(*Reader).Peek\nnet/http.(*conn).serve")
		answered := s.conn && strings.Contains(stack, "net/http.(*connReader).abortPendingRead")
		switch {
		case peek && to == trace.GoSyscall:
			// The connection reads the next request's first bytes. A request before it ended
			// here; the next one starts now unless the read finds nothing and it waits. A
			// segment begun when the goroutine woke for the bytes (and not yet in a handler)
			// goes on: this is its read, and its wait for a CPU counts.
			if s.cur != nil && s.cur.match {
				s.cur.end = ev.Time()
				segs = append(segs, s.cur)
				s.cur = nil
			}
			if s.cur == nil {
				s.cur = &segment{start: ev.Time(), blocked: map[string]time.Duration{}}
			}
		case answered && to == trace.GoWaiting:
			// net/http has flushed the answer and waits for the goroutine that watched the
			// connection during the request to stop: the client has its answer, so the
			// request ends here (the wait is two wake-ups, long only on a busy machine).
			if s.cur != nil && s.cur.match {
				s.cur.end = ev.Time()
				segs = append(segs, s.cur)
			}
			s.cur, s.why = nil, "answered"
		case peek && to == trace.GoWaiting:
			if s.cur != nil && s.cur.match { // a request that did not read through the syscall path
				s.cur.end = ev.Time()
				segs = append(segs, s.cur)
			}
			s.cur, s.why = nil, "idle"
		case to == trace.GoNotExist && s.cur != nil:
			if s.cur.match { // the connection closed after a request
				s.cur.end = ev.Time()
				segs = append(segs, s.cur)
			}
			s.cur = nil
		case to == trace.GoWaiting && st.Reason == preempted:
			s.why = preempted
		case to == trace.GoWaiting:
			s.why = blockedWhy(stack, st.Reason)
		case to == trace.GoRunnable && s.conn && s.state == trace.GoWaiting && s.why == "idle",
			to == trace.GoRunnable && from == trace.GoNotExist && s.conn:
			// woken by the next request's bytes, or a new connection's first request
			s.cur = &segment{start: ev.Time(), blocked: map[string]time.Duration{}}
		}
		s.state, s.since = to, ev.Time()
	}
	var matched []*segment
	for _, sg := range segs {
		if sg.match {
			matched = append(matched, sg)
		}
	}
	return matched, time.Duration(last - first).Seconds(), nil
}

func frames(st trace.Stack) string {
	var b strings.Builder
	for f := range st.Frames() {
		b.WriteString(f.Func)
		b.WriteByte('\n')
	}
	return b.String()
}

// blockedWhy names what a goroutine blocked on from its stack: a known blocking point, else
// the runtime's reason and the innermost function of ours, or else the innermost one past the
// runtime's, sync's and internal packages.
func blockedWhy(stack, reason string) string {
	for _, p := range blockPoints {
		if strings.Contains(stack, p.frame) {
			return p.what
		}
	}
	fs := strings.Split(strings.TrimSuffix(stack, "\n"), "\n")
	where := ""
	for _, f := range fs {
		if strings.HasPrefix(f, "github.com/svc-dev/svc/") {
			where = strings.TrimPrefix(f, "github.com/svc-dev/svc/")
			break
		}
		if where == "" && !strings.HasPrefix(f, "runtime.") && !strings.HasPrefix(f, "sync.") &&
			!strings.HasPrefix(f, "internal/") {
			where = f // the innermost frame past the runtime's and sync's
		}
	}
	if where == "" {
		where = fs[0]
	}
	if reason == "" {
		reason = "blocked"
	}
	return reason + " in " + where
}

func sumPart(segs []*segment) tailPart {
	p := tailPart{N: len(segs)}
	if p.N == 0 {
		return p
	}
	n := time.Duration(p.N)
	by := map[string]time.Duration{}
	var total time.Duration
	for _, s := range segs {
		total += time.Duration(s.end - s.start)
		p.Running += s.running
		p.Runnable += s.runnable
		p.Syscal += s.syscalls
		for k, v := range s.blocked {
			by[k] += v
		}
	}
	p.Mean, p.Running, p.Runnable, p.Syscal = total/n, p.Running/n, p.Runnable/n, p.Syscal/n
	for k, v := range by {
		p.Blocked = append(p.Blocked, blockedOn{What: k, Mean: v / n})
	}
	slices.SortFunc(p.Blocked, func(a, b blockedOn) int {
		if c := cmp.Compare(b.Mean, a.Mean); c != 0 {
			return c
		}
		return strings.Compare(a.What, b.What)
	})
	return p
}

func (p tailPart) String() string {
	if p.N == 0 {
		return "none"
	}
	v := fmt.Sprintf("mean %.2f ms: running %.2f, waiting for a CPU %.2f, in system calls %.2f",
		millisD(p.Mean), millisD(p.Running), millisD(p.Runnable), millisD(p.Syscal))
	var rest time.Duration
	for i, b := range p.Blocked {
		if i >= 4 || b.Mean < 5*time.Microsecond { // past the four longest, or 0.00 ms printed
			rest += b.Mean
			continue
		}
		v += fmt.Sprintf(", blocked on %s %.2f", b.What, millisD(b.Mean))
	}
	if rest >= 5*time.Microsecond {
		v += fmt.Sprintf(", blocked on other things %.2f", millisD(rest))
	}
	return v + " ms"
}

func millisD(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
