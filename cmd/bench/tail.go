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
	TraceSeconds float64
	// RanMeanwhile is what ran on the node's processors while the slow requests waited for
	// a CPU (ranMeanwhile).
	RanMeanwhile []share
	// Writer is what the spool's writer goroutine, whose group sync requests block on, spent
	// in system calls and in waits for a CPU (stopped by the collector included, as for the
	// requests) over the whole trace.
	Writer writerSplit
}

// writerSplit is the spool writer's system calls (its writes and fdatasyncs) and its waits for
// a CPU once runnable, each one's length: it tells the disk's part of the group sync from the
// machine's.
type writerSplit struct {
	Syscalls, Waits []time.Duration
}

// String says what the writer did over the trace (its seconds given apart).
func (w writerSplit) String() string {
	if len(w.Syscalls) == 0 {
		return "the spool's writer was not seen in the trace"
	}
	v := fmt.Sprintf("over the whole trace the spool's writer made %s system calls (its writes and fdatasyncs) of p50 %.2f / p99 %.2f / max %.2f ms",
		thousands(float64(len(w.Syscalls))), msf(Percentile(w.Syscalls, 0.5)), msf(Percentile(w.Syscalls, 0.99)), msf(slices.Max(w.Syscalls)))
	if len(w.Waits) == 0 {
		return v + ", and never waited for a CPU"
	}
	return v + fmt.Sprintf(", and waited for a CPU %s times, p99 %.2f / max %.2f ms",
		thousands(float64(len(w.Waits))), msf(Percentile(w.Waits, 0.99)), msf(slices.Max(w.Waits)))
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
	g                           trace.GoID
	waits                       []span // its spans waiting for a CPU
}

// span is a stretch of trace time.
type span struct{ from, to trace.Time }

// ran is a stretch a goroutine ran.
type ran struct {
	span
	g trace.GoID
}

// goState is what the analysis knows of a goroutine: its state since when, why it waits, and
// the request it is serving (connection goroutines only).
type goState struct {
	since   trace.Time // since when it is in state, or since a new generation restated it
	entered trace.Time // when it entered state
	state   trace.GoState
	why     string
	conn    bool
	cur     *segment
	kind    int // what it is: an index in goKinds (len(goKinds): not known)
}

// goKinds name a goroutine by a function on a stack of it, to say who ran while requests
// waited for a CPU; of the kinds its stacks show, a goroutine takes the first listed.
var goKinds = []struct{ frame, kind string }{
	// First: a request's goroutine calls into the actors, the spool and the stores.
	{"net/http.(*conn).serve", "the other requests"},
	{"net/http.(*connReader).backgroundRead", "the other requests"},
	{"badger/v4.(*levelsController)", "Badger's compactions"},
	{"badger/v4/table.(*Builder)", "Badger's compactions"},
	{"badger/v4.(*DB).flushMemtable", "Badger's compactions"},
	{"badger/v4.(*DB).doWrites", "Badger's writes"},
	{"badger/v4.(*DB).writeRequests", "Badger's writes"},
	{"runtime.gcBgMarkWorker", "the collector"},
	{"sinks/spool.(*Spool).writer", "the spool's writer"},
	// Last: a mailbox goroutine is an actor's until a stack shows which.
	{"actors.(*flusher)", "the flusher"},
	{"protoactor-go", "the actors"},
}

// writerKind is the spool writer's index in goKinds.
var writerKind = slices.IndexFunc(goKinds, func(k struct{ frame, kind string }) bool { return k.kind == "the spool's writer" })

// goKind is the index in goKinds of the first kind stack names, or len(goKinds) for none.
func goKind(stack string) int {
	for i, k := range goKinds {
		if strings.Contains(stack, k.frame) {
			return i
		}
	}
	return len(goKinds)
}

// analyzeTail reads an execution trace of a node and splits the time of its requests whose
// goroutine stacks name isRequest (e.g. "ingest.(*Events).ServeHTTP"). A request is the span of
// a net/http connection goroutine from its start, or from reading a request's first bytes
// (bufio Peek in conn.serve, when that read finds them at once or wakes when they come), to
// the next such read, or to its wait in abortPendingRead: net/http flushes the answer before
// it, so what follows is not the client's time. Keep-alive connections give one segment per
// request; requests under way when the trace starts or ends are left out.
func analyzeTail(r io.Reader, isRequest string, slowAt time.Duration) (*tailSplit, error) {
	read, err := requestSegments(r, isRequest)
	if err != nil {
		return nil, err
	}
	split := &tailSplit{TraceSeconds: read.seconds}
	var slow, fast []*segment
	var durs []time.Duration
	for _, sg := range read.segs {
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
	split.RanMeanwhile = ranMeanwhile(slow, read)
	split.Writer = read.writer
	return split, nil
}

// ranMeanwhile is what ran on the node's processors while the requests of segs waited for a
// CPU: each other goroutine's running time that overlapped a wait, summed by kind, as shares,
// largest first. Threads of other processes that took a CPU from the node show as its
// goroutines running: the trace cannot tell them apart.
func ranMeanwhile(segs []*segment, read *traceRead) []share {
	var waits []ran // each wait, with the goroutine that waited
	for _, sg := range segs {
		for _, w := range sg.waits {
			waits = append(waits, ran{w, sg.g})
		}
	}
	if len(waits) == 0 {
		return nil
	}
	runs := slices.Clone(read.runs)
	slices.SortFunc(runs, func(a, b ran) int { return cmp.Compare(a.from, b.from) })
	var longest trace.Time // no run starts further before a wait's start than this
	for _, r := range runs {
		longest = max(longest, r.to-r.from)
	}
	by := map[string]time.Duration{}
	var total time.Duration
	for _, w := range waits {
		i, _ := slices.BinarySearchFunc(runs, w.from-longest, func(r ran, t trace.Time) int { return cmp.Compare(r.from, t) })
		for ; i < len(runs) && runs[i].from < w.to; i++ {
			r := runs[i]
			if r.g == w.g {
				continue
			}
			if lo, hi := max(r.from, w.from), min(r.to, w.to); hi > lo {
				k := read.kinds[r.g]
				if k == "" {
					k = "other goroutines"
				}
				by[k] += time.Duration(hi - lo)
				total += time.Duration(hi - lo)
			}
		}
	}
	if total == 0 {
		return nil
	}
	out := make([]share, 0, len(by))
	for k, d := range by {
		out = append(out, share{What: k, Of: float64(d) / float64(total)})
	}
	slices.SortFunc(out, func(a, b share) int {
		if c := cmp.Compare(b.Of, a.Of); c != 0 {
			return c
		}
		return strings.Compare(a.What, b.What)
	})
	return out
}

// meanwhile says ranMeanwhile's shares: the largest five, the rest together.
func meanwhile(shares []share) string {
	if len(shares) == 0 {
		return "nothing recorded"
	}
	var parts []string
	var rest float64
	for i, sh := range shares {
		if i >= 5 {
			rest += sh.Of
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f %%", sh.What, 100*sh.Of))
	}
	if rest > 0 {
		parts = append(parts, fmt.Sprintf("the rest %.0f %%", 100*rest))
	}
	return strings.Join(parts, ", ")
}

// share is a part of a whole.
type share struct {
	What string
	Of   float64
}

// traceRead is analyzeTail's reading of a trace: the requests naming isRequest, every
// goroutine's stretches of running and what each goroutine is (goKinds), and how many seconds
// the trace spans.
type traceRead struct {
	segs    []*segment
	runs    []ran // in the order they ended
	kinds   map[trace.GoID]string
	seconds float64
	writer  writerSplit
}

func requestSegments(r io.Reader, isRequest string) (*traceRead, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	var runs []ran
	var writer writerSplit
	gs := map[trace.GoID]*goState{}
	var segs []*segment
	// finish ends s's request at t, kept if it named isRequest; start begins one.
	finish := func(s *goState, t trace.Time) {
		if s.cur != nil && s.cur.match {
			s.cur.end = t
			segs = append(segs, s.cur)
		}
		s.cur = nil
	}
	start := func(s *goState, g trace.GoID, t trace.Time) {
		s.cur = &segment{start: t, blocked: map[string]time.Duration{}, g: g}
	}
	var first, last trace.Time
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
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
			s = &goState{since: ev.Time(), entered: ev.Time(), state: trace.GoUndetermined, kind: len(goKinds)}
			gs[g] = s
		}
		if s.state == trace.GoRunning {
			runs = append(runs, ran{span{s.since, ev.Time()}, g})
		}
		if c := s.cur; c != nil {
			d := time.Duration(ev.Time() - s.since)
			switch s.state {
			case trace.GoRunning:
				c.running += d
			case trace.GoRunnable:
				c.runnable += d
				c.waits = append(c.waits, span{s.since, ev.Time()})
			case trace.GoSyscall:
				c.syscalls += d
			case trace.GoWaiting:
				if s.why == preempted { // stopped for the collector: it waits to run again
					c.runnable += d
					c.waits = append(c.waits, span{s.since, ev.Time()})
				} else {
					c.blocked[s.why] += d
				}
			}
		}
		stack := frames(st.Stack)
		s.kind = min(s.kind, goKind(stack))
		if s.kind == writerKind && from != to {
			// Whole stretches only (entered), not the pieces a new generation cuts them into.
			d := time.Duration(ev.Time() - s.entered)
			switch {
			case s.state == trace.GoSyscall:
				writer.Syscalls = append(writer.Syscalls, d)
			case s.state == trace.GoRunnable, s.state == trace.GoWaiting && s.why == preempted:
				writer.Waits = append(writer.Waits, d)
			}
		}
		if from == to {
			// A new generation of the trace restates every goroutine's state (with no reason,
			// sometimes no stack): nothing changed, so what it waits on stays as it was.
			s.since = ev.Time()
			continue
		}
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
				finish(s, ev.Time())
			}
			if s.cur == nil {
				start(s, g, ev.Time())
			}
		case answered && to == trace.GoWaiting:
			// net/http has flushed the answer and waits for the goroutine that watched the
			// connection during the request to stop: the client has its answer, so the
			// request ends here (the wait is two wake-ups, long only on a busy machine).
			finish(s, ev.Time())
			s.why = "answered"
		case peek && to == trace.GoWaiting:
			finish(s, ev.Time()) // a request that did not read through the syscall path
			s.why = "idle"
		case to == trace.GoNotExist && s.cur != nil:
			finish(s, ev.Time()) // the connection closed after a request
		case to == trace.GoWaiting && st.Reason == preempted:
			s.why = preempted
		case to == trace.GoWaiting:
			s.why = blockedWhy(stack, st.Reason)
		case to == trace.GoRunnable && s.conn && s.state == trace.GoWaiting && s.why == "idle",
			to == trace.GoRunnable && from == trace.GoNotExist && s.conn:
			// woken by the next request's bytes, or a new connection's first request
			start(s, g, ev.Time())
		}
		s.state, s.since, s.entered = to, ev.Time(), ev.Time()
	}
	kinds := make(map[trace.GoID]string, len(gs))
	for g, st := range gs {
		if st.kind < len(goKinds) {
			kinds[g] = goKinds[st.kind].kind
		}
	}
	return &traceRead{segs: segs, runs: runs, kinds: kinds, seconds: time.Duration(last - first).Seconds(), writer: writer}, nil
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
		msf(p.Mean), msf(p.Running), msf(p.Runnable), msf(p.Syscal))
	var rest time.Duration
	for i, b := range p.Blocked {
		if i >= 4 || b.Mean < 5*time.Microsecond { // past the four longest, or 0.00 ms printed
			rest += b.Mean
			continue
		}
		v += fmt.Sprintf(", blocked on %s %.2f", b.What, msf(b.Mean))
	}
	if rest >= 5*time.Microsecond {
		v += fmt.Sprintf(", blocked on other things %.2f", msf(rest))
	}
	return v + " ms"
}
