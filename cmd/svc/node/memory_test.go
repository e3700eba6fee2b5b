package node

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

var sink, live [][]byte

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestReturnIdleMemory: garbage left by a burst that no collection followed is collected by the
// returner once a period passes without one, and a heap that stays is not collected again and
// again.
func TestReturnIdleMemory(t *testing.T) {
	runtime.GC()
	base := heapObjects()
	// A burst: 256 MiB allocated and dropped, with a large live heap during it so the runtime's
	// own next collection is far away.
	for i := 0; i < 256; i++ {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
	if heapObjects() < base+200<<20 {
		t.Skip("the runtime collected the burst by itself")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		returnIdleMemory(ctx, 200*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for heapObjects() > base+idleMemorySlack {
		if time.Now().After(deadline) {
			t.Fatalf("heap still %d MiB (base %d MiB) 10 s after the burst", heapObjects()>>20, base>>20)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A live heap over the slack that stays: collected at most once, not at every period.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.NumForcedGC
	for i := 0; i < 128; i++ {
		live = append(live, make([]byte, 1<<20))
	}
	time.Sleep(1500 * time.Millisecond)
	runtime.ReadMemStats(&ms)
	if forced := ms.NumForcedGC - before; forced > 1 {
		t.Errorf("%d collections forced on an idle heap that did not change", forced)
	}
	live = nil
}

func TestRuntimeMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		limit      int64
		gomemlimit string
		want       int64
	}{
		{1 << 30, "", 768 << 20},
		{400_000_000, "", 300_000_000},
		{0, "", -1},             // no limit asked
		{1 << 30, "500MiB", -1}, // the environment's, which the runtime applied, wins
		{0, "500MiB", -1},
	} {
		if got := runtimeMemoryLimit(c.limit, c.gomemlimit); got != c.want {
			t.Errorf("runtimeMemoryLimit(%d, %q) = %d, want %d", c.limit, c.gomemlimit, got, c.want)
		}
	}
}

// TestLogsPagedOut: the events database's value log and memtable log pages that ingest wrote
// leave the node's memory within a few page-out periods (it runs in this process, so this
// process's mappings are the node's), with an absolute data directory and with a relative one
// such as the default ./data.
func TestLogsPagedOut(t *testing.T) {
	var bodies [][]byte // read before a subtest leaves the repository's directory
	for _, path := range fixtures(t) {
		bodies = append(bodies, readFile(t, path))
	}
	for _, c := range []struct {
		name  string
		tweak func(*Config)
	}{
		{"absolute data dir", nil},
		{"relative data dir", func(cfg *Config) {
			t.Chdir(t.TempDir())
			cfg.DataDir = "./data"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tn := startNode(t, "embedded", c.tweak)
			for i, body := range bodies {
				if r := tn.putJSON(t, tn.key, uuid.NewString(), body); r.status != http.StatusOK {
					t.Fatalf("recorded batch %d: %d %s", i, r.status, r.body)
				}
			}
			tn.waitFlushed(t)
			events, _ := tn.counts(t, tn.app.ID)
			if events < 1000 {
				t.Fatalf("%d events stored from the recorded batches; the test expects at least 1,000", events)
			}
			dir, err := filepath.Abs(filepath.Join(tn.cfg.DataDir, "badger-events"))
			if err == nil {
				dir, err = filepath.EvalSymlinks(dir)
			}
			if err != nil {
				t.Fatal(err)
			}
			wait := 3 * min(logPageOutPeriod, 5*time.Second)
			deadline := time.Now().Add(wait)
			for {
				kb := mappedResidentKB(t, dir)
				if kb < 512 {
					t.Logf("%d KiB of the events database's logs resident, %d events stored", kb, events)
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d KiB of the events database's logs still resident after %v", kb, wait)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// mappedResidentKB sums the resident KiB of this process's mappings of *.vlog and *.mem files
// in dir (/proc/self/smaps: a mapping's line, then its fields, Rss among them; the fields after
// an anonymous mapping's line, which has no path, are not a file's).
func mappedResidentKB(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	ours, kb := false, 0
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && !strings.HasSuffix(f[0], ":"): // a mapping's line; an anonymous one has no path
			p := strings.Join(f[min(5, len(f)):], " ") // the path, which may hold spaces
			ours = filepath.Dir(p) == dir && (strings.HasSuffix(p, ".vlog") || strings.HasSuffix(p, ".mem"))
		case ours && len(f) == 3 && f[0] == "Rss:":
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("smaps: %q: %v", line, err)
			}
			kb += n
		}
	}
	return kb
}
