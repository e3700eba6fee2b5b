package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/svc-dev/svc/cmd/internal/adminapi"
	"github.com/svc-dev/svc/cmd/internal/procfs"
)

// memoryIdle is the session idle time of the memory run's node: long enough that no session
// actor of the warm-up passivates before the load after it ends.
const memoryIdle = 30 * time.Minute

// warmConcurrency is the loadgen workers of the warm-up: one-event requests are bound by their
// round trip, and 64 in flight sent ~4,800 a second on 2 cores where 8 sent ~1,600.
const warmConcurrency = 64

// memoryRun is an embedded node's resident memory flat out with many live session actors: at
// the start, after a warm-up that started Sessions session actors, and the peak of a flat-out
// load after it.
type memoryRun struct {
	Start, Warmed, Peak int64 // bytes
	Warm                time.Duration
	Sessions            float64 // live session actors after the warm-up
	LiveAfter           float64 // and after the load
	Items               int64   // items the load sent
	Seconds             int     // its length
}

// sessionActors reads svc_session_actors from the node's /metrics.
func sessionActors(ctx context.Context, n *node, token string) (float64, error) {
	text, err := nodeMetrics(ctx, n, token)
	if err != nil {
		return 0, err
	}
	v, ok := metricSum(text, "svc_session_actors")
	if !ok {
		return 0, errors.New("no svc_session_actors in /metrics")
	}
	return v, nil
}

// measureMemory starts an embedded node whose session actors stay live (memoryIdle), brings it
// to c.sessions live session actors by sending as many one-event requests, each with a fresh
// session id, as fast as warmConcurrency workers go, then runs the flat-out load of c.seconds
// and samples the node's RSS over it (every 100 ms) for the peak.
func measureMemory(ctx context.Context, c config, corp *corpus, root, svcBin, lgBin string) (*memoryRun, error) {
	fixture, err := corp.oneSessionEvent()
	if err != nil {
		return nil, err
	}
	dataDir, err := os.MkdirTemp("", "svc-bench-memory-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)
	n, err := startNode(ctx, root, svcBin, dataDir, []string{"SVC_SESSION_IDLE=" + memoryIdle.String()})
	if err != nil {
		return nil, err
	}
	defer func() { _ = n.stop() }()
	_, a, err := benchApp(ctx, root, svcBin, n, dataDir)
	if err != nil {
		return nil, err
	}
	tb, err := os.ReadFile(filepath.Join(dataDir, adminapi.TokenFile))
	if err != nil {
		return nil, err
	}
	token := strings.TrimSpace(string(tb))
	pid := n.cmd.Process.Pid
	m := memoryRun{Seconds: c.seconds}
	if m.Start, err = procfs.RSS(pid); err != nil {
		return nil, err
	}
	base := []string{"-url", "http://" + n.addr, "-key", a["api_key"], "-json", "-progress", "0"}

	fmt.Printf("warm-up: %s one-event requests (%s), %d workers\n", thousands(float64(c.sessions)), fixture, warmConcurrency)
	t0 := time.Now()
	if _, err := runLoadgen(ctx, root, lgBin, append(base, "-match", "^"+regexp.QuoteMeta(fixture)+"$",
		"-batches", strconv.Itoa(c.sessions), "-concurrency", strconv.Itoa(warmConcurrency))...); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	m.Warm = time.Since(t0)
	if m.Sessions, err = sessionActors(ctx, n, token); err != nil {
		return nil, err
	}
	if m.Warmed, err = procfs.RSS(pid); err != nil {
		return nil, err
	}
	fmt.Printf("%s live session actors after %.0f s; RSS %d MiB\n", thousands(m.Sessions), m.Warm.Seconds(), m.Warmed>>20)

	m.Peak = m.Warmed
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // ends when stop closes
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if v, err := procfs.RSS(pid); err == nil {
					m.Peak = max(m.Peak, v)
				}
			}
		}
	}()
	s, err := runLoadgen(ctx, root, lgBin, append(append(base, "-concurrency", strconv.Itoa(c.concurrency),
		"-duration", strconv.Itoa(c.seconds)+"s"), c.retryArgs(c.seconds)...)...)
	close(stop)
	<-sampled
	if err != nil {
		return nil, err
	}
	m.Items = s.Items
	if c.memoryOnly {
		printMemoryBreakdown(ctx, n, token, pid)
		if err := fetch(ctx, "http://"+n.admin+"/debug/pprof/heap?gc=1", token, filepath.Join(root, "bench-out", "memory-heap.pprof")); err != nil {
			fmt.Fprintln(os.Stderr, "bench: heap profile:", err)
		}
	}
	if m.LiveAfter, err = sessionActors(ctx, n, token); err != nil {
		return nil, err
	}
	return &m, nil
}

// memoryRows are the table's rows of a memory run: the peak against the target, decided only
// when the warm-up left targetSessions session actors live.
func memoryRows(m *memoryRun, why string) []Row {
	fig := fmt.Sprintf("(f) node RSS, embedded, flat out with %s live sessions", thousands(targetSessions))
	tgt := fmt.Sprintf("< %s GB", thousands(targetRSS/1e9))
	if m == nil {
		return []Row{{Figure: fig, Value: dash(why), Target: tgt, Verdict: "–"}}
	}
	row := Row{Figure: fig, Target: tgt,
		Value: fmt.Sprintf("%s MiB (%.2f GB) at the peak of %d s flat out (%s items sent); %s live session actors before it, started in %.0f s by one-event requests (RSS then %s MiB), %s after it (--session-idle %s); %s MiB at the start",
			thousands(float64(m.Peak>>20)), float64(m.Peak)/1e9, m.Seconds, thousands(float64(m.Items)), thousands(m.Sessions), m.Warm.Seconds(),
			thousands(float64(m.Warmed>>20)), thousands(m.LiveAfter), memoryIdle, thousands(float64(m.Start>>20)))}
	if m.Sessions < targetSessions {
		row.Verdict = fmt.Sprintf("not decided (%s live sessions)", thousands(m.Sessions))
	} else {
		row.Verdict = below(float64(m.Peak), targetRSS)
	}
	return []Row{row}
}

// printMemoryBreakdown prints where the node's resident memory is after the load: the kernel's
// split of RSS (anonymous, file-backed) and the Go runtime's memory statistics from /metrics.
func printMemoryBreakdown(ctx context.Context, n *node, token string, pid int) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Rss") || strings.HasPrefix(l, "VmRSS") {
				fmt.Println(strings.Join(strings.Fields(l), " "))
			}
		}
	}
	text, err := nodeMetrics(ctx, n, token)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "go_memstats_") && strings.Contains(l, "_bytes ") || strings.HasPrefix(l, "go_gc_gogc") || strings.HasPrefix(l, "go_gc_gomemlimit") {
			fmt.Println(l)
		}
	}
}
