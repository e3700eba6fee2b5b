package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/clickhouse"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// clusterEnv is what the members of a test cluster share: the stores, the token secrets and
// the cluster's settings.
type clusterEnv struct {
	shared   []string
	addrs    []string // remoting addresses
	dirs     []string
	chDSN    string
	provider string
}

func newClusterEnv(t *testing.T, provider string, members int) *clusterEnv {
	t.Helper()
	s3 := sinktest.S3(t)
	e := &clusterEnv{chDSN: sinktest.ClickHouse(t), provider: provider}
	e.shared = []string{"SVC_CLICKHOUSE_DSN=" + e.chDSN, "SVC_POSTGRES_DSN=" + sinktest.Postgres(t),
		"SVC_S3_ENDPOINT=" + s3.Endpoint, "SVC_S3_ACCESS_KEY=" + s3.AccessKey, "SVC_S3_SECRET_KEY=" + s3.SecretKey,
		"SVC_S3_BUCKET=" + s3.Bucket, "SVC_S3_USE_SSL=false",
		"SVC_ACCESS_TOKEN_SECRET=" + strings.Repeat("a1", 16), "SVC_REFRESH_TOKEN_SECRET=" + strings.Repeat("b2", 16),
		"SVC_CLUSTER_NAME=test-" + uuid.NewString()[:8], "SVC_CLUSTER_PROVIDER=" + provider,
		"SVC_FLUSH_INTERVAL=200ms", "SVC_INGEST_RATE_LIMIT=1000000", "SVC_RATE_LIMIT_USER=1000000"}
	for range members {
		port, err := sinktest.FreePortPair() // the remoting port and the static provider's after it
		if err != nil {
			t.Fatal(err)
		}
		e.addrs = append(e.addrs, fmt.Sprintf("127.0.0.1:%d", port))
		e.dirs = append(e.dirs, t.TempDir())
	}
	switch provider {
	case "static":
		e.shared = append(e.shared, "SVC_CLUSTER_PEERS="+strings.Join(e.addrs, ","))
	case "etcd":
		etcd, err := sinktest.StartEtcd(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = etcd.Stop() })
		e.shared = append(e.shared, "SVC_ETCD_ENDPOINTS="+etcd.DSN)
	}
	return e
}

// start starts member i.
func (e *clusterEnv) start(t *testing.T, i int) *proc {
	t.Helper()
	return startServe(t, append(append([]string{}, e.shared...), "SVC_CLUSTER_ADDR="+e.addrs[i]), "--data-dir", e.dirs[i])
}

// members reads /debug/cluster of p.
func members(t *testing.T, p *proc) []map[string]any {
	t.Helper()
	code, b := p.adminGet(t, "/debug/cluster")
	if code != 200 {
		t.Fatalf("/debug/cluster: %d %s", code, b)
	}
	var m struct {
		Members []map[string]any `json:"members"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.Members
}

// waitMembers waits until every node lists n alive members that answer (a static peer that
// is down stays listed, as unreachable).
func waitMembers(t *testing.T, n int, ps ...*proc) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d members seen by every node", n), 60*time.Second, func() bool {
		for _, p := range ps {
			alive := 0
			for _, m := range members(t, p) {
				if m["status"] == "alive" && m["error"] == nil {
					alive++
				}
			}
			if alive != n {
				return false
			}
		}
		return true
	})
}

// issueBatch is one session that walks three screens and crashes on the last, with one of
// five crash groups, so group lists and journeys have something to agree on.
func issueBatch(at time.Time, k int) batch {
	b := batch{req: uuid.NewString()}
	session := uuid.NewString()
	attr := `{"installation_id":"i1","measure_sdk_version":"0.11.0","app_unique_id":"com.example.app","platform":"android","app_version":"1.0","app_build":"1","os_name":"android","os_version":"14","device_manufacturer":"Google","device_model":"Pixel","thread_name":"main"}`
	var evs []string
	add := func(typ, body string) {
		id := uuid.New()
		b.events = append(b.events, id)
		evs = append(evs, fmt.Sprintf(`{"id":%q,"session_id":%q,"timestamp":%q,"type":%q,%q:%s,"attribute":%s,"user_triggered":false}`,
			id, session, at.Add(time.Duration(len(evs))*time.Second).Format("2006-01-02T15:04:05.000000000Z"), typ, typ, body, attr))
	}
	for _, screen := range []string{"Home", fmt.Sprintf("List%d", k%3), "Detail"} {
		add("lifecycle_activity", fmt.Sprintf(`{"type":"resumed","class_name":"com.example.%s"}`, screen))
	}
	add("exception", fmt.Sprintf(`{"handled":false,"exceptions":[{"type":"java.lang.IllegalStateException%d","message":"m","frames":[{"class_name":"com.example.Detail","method_name":"show","file_name":"Detail.kt","line_num":%d}]}],"threads":[],"foreground":true}`, k%5, 10+k%5))
	b.body = []byte(`{"events":[` + strings.Join(evs, ",") + `],"spans":[]}`)
	return b
}

// answers reads the dashboard's group list, journey and metrics from base; fromStore forces
// the store. It also says whether the group list and the journey were answered live.
func answers(t *testing.T, base, token, app, window string, fromStore bool) (map[string]any, bool) {
	t.Helper()
	out := map[string]any{}
	live := true
	for _, path := range []string{"/crashGroups?" + window + "&limit=50", "/journey?" + window, "/metrics?" + window} {
		req, _ := http.NewRequest(http.MethodGet, base+"/apps/"+app+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if fromStore {
			req.Header.Set("Svc-Answer-From", "store")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s%s: %d %s", base, path, resp.StatusCode, body)
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatal(err)
		}
		out[path[:strings.Index(path, "?")]] = v
		if !strings.HasPrefix(path, "/metrics") { // metrics always come from the store
			live = live && resp.Header.Get("Svc-Answered-By") == "live"
		}
	}
	return out, live
}

// sendAll PUTs batches to base until each is acknowledged.
func sendAll(t *testing.T, base, key string, bs []batch) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	for _, b := range bs {
		deadline := time.Now().Add(30 * time.Second)
		for s := send(client, base, key, b); s != 200; s = send(client, base, key, b) {
			if time.Now().After(deadline) {
				t.Fatalf("batch %s refused (%d) for 30 s", b.req, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func TestClusterEtcd(t *testing.T)   { testCluster(t, "etcd") }
func TestClusterStatic(t *testing.T) { testCluster(t, "static") }

// testCluster runs three nodes as one cluster, sends load to all three, kills one with SIGKILL
// and starts it again: every acknowledged event is stored exactly once, and group lists,
// journeys and metrics from every node equal those of one node fed the same data, from the
// store and live once the app actor settled.
func testCluster(t *testing.T, provider string) {
	e := newClusterEnv(t, provider, 3)
	ps := make([]*proc, 3)
	for i := range ps {
		ps[i] = e.start(t, i)
	}
	waitMembers(t, 3, ps...)
	u := adminJSON(t, ps[0], e.dirs[0], "create-user", "--email", "cluster@example.com", "--name", "C")
	a := adminJSON(t, ps[0], e.dirs[0], "create-app", "--team", u["own_team_id"], "--name", "cluster")
	app := uuid.MustParse(a["app_id"])
	tok := adminJSON(t, ps[1], e.dirs[1], "token", "--email", "cluster@example.com")["access_token"]

	// Sessions with crashes and journeys, spread over the nodes.
	at := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	var issues []batch
	for k := range 30 {
		issues = append(issues, issueBatch(at.Add(time.Duration(k)*time.Minute), k))
	}
	for i := range 3 {
		sendAll(t, "http://"+ps[i].addr, a["api_key"], issues[i*10:(i+1)*10])
	}

	// Load on every node; node 1 dies with SIGKILL and comes back; its load goes to node 0
	// meanwhile, as a load balancer would send it.
	loads := make([]*load, 3)
	stop, done := make(chan struct{}), make(chan struct{}, 3)
	for i := range loads {
		loads[i] = &load{base: "http://" + ps[i].addr, key: a["api_key"], status: map[int]int{}, perReq: 20, workers: 2}
		go func() { loads[i].run(stop); done <- struct{}{} }()
	}
	time.Sleep(1500 * time.Millisecond)
	if err := ps[1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ps[1].exited
	loads[1].mu.Lock()
	loads[1].base = "http://" + ps[0].addr
	loads[1].mu.Unlock()
	time.Sleep(2 * time.Second)
	ps[1] = e.start(t, 1)
	loads[1].mu.Lock()
	loads[1].base = "http://" + ps[1].addr
	loads[1].mu.Unlock()
	waitMembers(t, 3, ps...)
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	for range loads {
		<-done
	}
	var acked []batch
	for i, l := range loads {
		l.drain(t)
		if len(l.acked) < 10 {
			t.Fatalf("load %d: only %d requests acknowledged (statuses %v)", i, len(l.acked), l.status)
		}
		if l.status[500] > 0 {
			t.Errorf("load %d: 500 answers: %v", i, l.status)
		}
		t.Logf("load %d: %d acknowledged, statuses %v", i, len(l.acked), l.status)
		acked = append(acked, l.acked...)
	}
	acked = append(acked, issues...)

	// Every acknowledged event is in the store once, once every node flushed.
	store, err := clickhouse.New(e.chDSN, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.MigrateOnce(t.Context()); err != nil { // applied by the nodes already: marks the store ready
		t.Fatal(err)
	}
	// The nodes flush every 200 ms; checkExactlyOnceCH names what is missing after 30 s.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if n, _, err := store.Count(t.Context(), app); err == nil && n >= int64(countEvents(acked)) {
			break
		}
	}
	checkExactlyOnceCH(t, store, app, acked)

	// One node fed the same data: the answers every member must give.
	singleDSN := sinktest.ClickHouse(t)
	single := startServe(t, []string{"SVC_CLICKHOUSE_DSN=" + singleDSN, "SVC_POSTGRES_DSN=" + sinktest.Postgres(t),
		"SVC_FLUSH_INTERVAL=200ms", "SVC_INGEST_RATE_LIMIT=1000000", "SVC_RATE_LIMIT_USER=1000000"}, "--data-dir", t.TempDir())
	su := adminJSON(t, single, single.dataDir, "create-user", "--email", "single@example.com", "--name", "S")
	sa := adminJSON(t, single, single.dataDir, "create-app", "--team", su["own_team_id"], "--name", "single")
	stok := adminJSON(t, single, single.dataDir, "token", "--email", "single@example.com")["access_token"]
	sendAll(t, "http://"+single.addr, sa["api_key"], acked)
	window := "from=" + url.QueryEscape(at.Add(-24*time.Hour).Format(time.RFC3339)) + "&to=" + url.QueryEscape(time.Now().UTC().Add(time.Hour).Format(time.RFC3339))
	sstore, err := clickhouse.New(singleDSN, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sstore.Close()
	if err := sstore.MigrateOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every event in the single node's store", 60*time.Second, func() bool {
		n, _, err := sstore.Count(t.Context(), uuid.MustParse(sa["app_id"]))
		return err == nil && n == int64(countEvents(acked))
	})
	want, _ := answers(t, "http://"+single.addr, stok, sa["app_id"], window, true)
	normalize := func(v map[string]any) string {
		b, _ := json.Marshal(v)
		return strings.ReplaceAll(string(b), sa["app_id"], "APP")
	}
	wantJSON := normalize(want)
	for i, p := range ps {
		got, _ := answers(t, "http://"+p.addr, tok, app.String(), window, true)
		if g := strings.ReplaceAll(normalize(got), app.String(), "APP"); g != wantJSON {
			t.Errorf("node %d from the store:\n got %s\nwant %s", i, g, wantJSON)
		}
	}
	// Live answers come once the app actor settled (a quiet app, a flush across the cluster).
	for i, p := range ps {
		var got map[string]any
		waitFor(t, fmt.Sprintf("node %d answers live", i), 60*time.Second, func() bool {
			var live bool
			got, live = answers(t, "http://"+p.addr, tok, app.String(), window, false)
			return live
		})
		if g := strings.ReplaceAll(normalize(got), app.String(), "APP"); g != wantJSON {
			t.Errorf("node %d live:\n got %s\nwant %s", i, g, wantJSON)
		}
	}

	// The debug endpoint shows the app actor's state on whichever node owns it.
	code, b := ps[2].adminGet(t, "/debug/actors/app/"+app.String())
	var st map[string]any
	_ = json.Unmarshal(b, &st)
	if code != 200 || st["node"] == "" || st["state"] == nil {
		t.Errorf("/debug/actors/app from node 2: %d %s", code, b)
	}
	owner := fmt.Sprint(st["node"])
	ready := fmt.Sprint(st["state"].(map[string]any)["ready"])
	t.Logf("app actor on %s (ready %s)", owner, ready)
	// Its owner stops: the actor moves, and the debug endpoint shows it on another member.
	for i, p := range ps {
		if e.addrs[i] != owner {
			continue
		}
		p.stop(t)
		rest := append(append([]*proc{}, ps[:i]...), ps[i+1:]...)
		waitMembers(t, 2, rest...)
		// The members may take a moment to agree that the owner left: until then a request can
		// still be placed on it and time out. The actor must be found on another member soon.
		var moved map[string]any
		waitFor(t, "the app actor on another member after its owner stopped", 30*time.Second, func() bool {
			code, b = rest[0].adminGet(t, "/debug/actors/app/"+app.String())
			moved = nil
			_ = json.Unmarshal(b, &moved)
			return code == 200 && moved["node"] != owner && moved["node"] != "" && moved["node"] != nil
		})
		t.Logf("app actor moved to %s: %s", moved["node"], b)
		ps = rest
		break
	}
	for _, p := range ps {
		p.stop(t)
	}
	single.stop(t)
}

func countEvents(bs []batch) int {
	n := 0
	for _, b := range bs {
		n += len(b.events)
	}
	return n
}
