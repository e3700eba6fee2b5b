package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/svc-dev/svc/cmd/internal/adminapi"
	"github.com/svc-dev/svc/cmd/internal/procfs"
)

// memoryIdle is the session idle time of the memory run's node: short, so its actors passivate
// soon after the load stops.
const memoryIdle = 10 * time.Second

// memoryRun is a node's resident memory around a flat-out load: before, its peak during, and
// after the load once every session actor passivated and the node had time to give memory back.
type memoryRun struct {
	Before, Peak, After int64 // bytes
	Items               int64 // items the load sent
	Settle              time.Duration
}

var sessionActorsRe = regexp.MustCompile(`(?m)^svc_session_actors (\S+)$`)

// sessionActors reads svc_session_actors from the node's /metrics.
func sessionActors(ctx context.Context, n *node, token string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.admin+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := sessionActorsRe.FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("no svc_session_actors in /metrics (%s)", resp.Status)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// measureMemory runs an embedded node with a short session idle time under a flat-out load of
// c.seconds and follows its RSS until the actors passivated and the node is idle.
func measureMemory(ctx context.Context, c config, root, svcBin, lgBin string) (*memoryRun, error) {
	dataDir, err := os.MkdirTemp("", "svc-bench-memory-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)
	n, err := startNode(ctx, root, svcBin, dataDir, []string{"SVC_SESSION_IDLE=" + memoryIdle.String()})
	if err != nil {
		return nil, err
	}
	defer n.stop()
	_, a, err := benchApp(ctx, root, svcBin, n, dataDir)
	if err != nil {
		return nil, err
	}
	token, err := os.ReadFile(filepath.Join(dataDir, adminapi.TokenFile))
	if err != nil {
		return nil, err
	}
	pid := n.cmd.Process.Pid
	var m memoryRun
	if m.Before, err = procfs.RSS(pid); err != nil {
		return nil, err
	}
	m.Peak = m.Before
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // ends when stop closes
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				if v, err := procfs.RSS(pid); err == nil {
					m.Peak = max(m.Peak, v)
				}
			}
		}
	}()
	b, runErr := output(ctx, root, baseEnv(), lgBin, "-url", "http://"+n.addr, "-key", a["api_key"], "-concurrency",
		strconv.Itoa(c.concurrency), "-duration", strconv.Itoa(c.seconds)+"s", "-json", "-progress", "0")
	close(stop)
	<-sampled
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("loadgen summary: %v (run: %v)", err, runErr)
	}
	m.Items = s.Items
	// Passivation, then a period of the node's idle memory return (15 s) and some slack.
	start := time.Now()
	for {
		left, err := sessionActors(ctx, n, strings.TrimSpace(string(token)))
		if err != nil {
			return nil, err
		}
		if left == 0 {
			break
		}
		if time.Since(start) > 5*time.Minute {
			return nil, fmt.Errorf("%v session actors still live 5 minutes after the load", left)
		}
		time.Sleep(time.Second)
	}
	select {
	case <-time.After(35 * time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	m.Settle = time.Since(start)
	if m.After, err = procfs.RSS(pid); err != nil {
		return nil, err
	}
	return &m, nil
}

// memoryRows are the table's rows of a memory run.
func memoryRows(m *memoryRun, why string) []Row {
	const fig = "(f) node RSS, embedded, around a flat-out load"
	if m == nil {
		return []Row{{Figure: fig, Value: dash(why)}}
	}
	return []Row{{Figure: fig, Value: fmt.Sprintf("%d MiB before; %d MiB at the peak (%s items sent); %d MiB %.0f s after the load, every session actor passivated (--session-idle %s)",
		m.Before>>20, m.Peak>>20, thousands(float64(m.Items)), m.After>>20, m.Settle.Seconds(), memoryIdle)}}
}
