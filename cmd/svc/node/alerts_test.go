package node

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Alerts end to end (issue #12): batches through PUT /events raise alerts in the app actor, the
// node stores them, lists them on GET /apps/{id}/alerts and posts them to the team's chat app
// (an httptest server speaking Slack's incoming-webhook protocol).

// chatServer is a Slack-compatible incoming webhook that records what it is posted, and
// answers 500 while failing is set.
type chatServer struct {
	*httptest.Server
	mu      sync.Mutex
	texts   []string
	failing atomic.Bool
	refused atomic.Int64
}

func newChatServer(t *testing.T) *chatServer {
	c := &chatServer{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Text string }
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &body) != nil {
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		if c.failing.Load() {
			c.refused.Add(1)
			http.Error(w, "internal_error", http.StatusInternalServerError)
			return
		}
		c.mu.Lock()
		c.texts = append(c.texts, body.Text)
		c.mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(c.Close)
	return c
}

// posted counts the posts whose text holds s.
func (c *chatServer) posted(s string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.texts {
		if strings.Contains(t, s) {
			n++
		}
	}
	return n
}

func (c *chatServer) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.texts)
}

type alertJSONT struct {
	ID        string `json:"id"`
	TeamID    string `json:"team_id"`
	AppID     string `json:"app_id"`
	EntityID  string `json:"entity_id"`
	Type      string `json:"type"`
	Message   string `json:"message"`
	URL       string `json:"url"`
	CreatedAt string `json:"created_at"`
}

// crashBatch is n fatal crashes of one group (the same exception) in a new session.
func crashBatch(n int, at time.Time, msg string) []byte {
	session := uuid.NewString()
	attr := `{"installation_id":"i1","measure_sdk_version":"0.11.0","app_unique_id":"com.example.app","platform":"android","app_version":"1.0","app_build":"1","os_name":"android","os_version":"14","device_manufacturer":"Google","device_model":"Pixel","thread_name":"main"}`
	var evs []string
	for i := range n {
		evs = append(evs, fmt.Sprintf(`{"id":%q,"session_id":%q,"timestamp":%q,"type":"exception","exception":{"handled":false,"exceptions":[{"type":"java.lang.IllegalStateException","message":%q,"frames":[{"class_name":"com.example.Checkout","method_name":"pay","file_name":"Checkout.kt","line_num":42}]}],"threads":[],"foreground":true},"attribute":%s,"user_triggered":false}`,
			uuid.NewString(), session, tsOf(at.Add(time.Duration(i)*time.Millisecond)), msg, attr))
	}
	return []byte(`{"events":[` + strings.Join(evs, ",") + `],"spans":[]}`)
}

func bugReportBatch(at time.Time, desc string) ([]byte, string) {
	id := uuid.NewString()
	attr := `{"installation_id":"i1","measure_sdk_version":"0.11.0","app_unique_id":"com.example.app","platform":"android","app_version":"1.0","app_build":"1","os_name":"android","os_version":"14","thread_name":"main"}`
	return []byte(fmt.Sprintf(`{"events":[{"id":%q,"session_id":%q,"timestamp":%q,"type":"bug_report","bug_report":{"description":%q},"attribute":%s,"user_triggered":true}],"spans":[]}`,
		id, uuid.NewString(), tsOf(at), desc, attr)), id
}

func TestAlerts(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			chat := newChatServer(t)
			tn := startNode(t, backend, nil)
			owner := tn.accessToken(t, tn.email)
			call := func(method, path, body string) response {
				t.Helper()
				var r io.Reader
				if body != "" {
					r = strings.NewReader(body)
				}
				return tn.do(t, method, path, owner, map[string]string{"Content-Type": "application/json"}, r)
			}
			if r := call(http.MethodPatch, "/apps/"+tn.app.ID.String()+"/thresholdPrefs",
				`{"error_good_threshold":95,"error_caution_threshold":85,"error_spike_min_count_threshold":5,"error_spike_min_rate_threshold":50}`); r.status != http.StatusOK {
				t.Fatalf("thresholds: %d %s", r.status, r.body)
			}
			if r := call(http.MethodPatch, "/teams/"+tn.app.TeamID.String()+"/chatapp/status",
				`{"enabled":true,"webhook_url":"`+chat.URL+`/hooks/T1"}`); r.status != http.StatusOK {
				t.Fatalf("chat app: %d %s", r.status, r.body)
			}
			put := func(body []byte) {
				t.Helper()
				if r := tn.putJSON(t, tn.key, uuid.NewString(), body); r.status != http.StatusOK {
					t.Fatalf("PUT /events: %d %s", r.status, r.body)
				}
			}
			list := func() []alertJSONT {
				t.Helper()
				r := call(http.MethodGet, "/apps/"+tn.app.ID.String()+"/alerts?limit=100", "")
				var page struct {
					Meta    struct{ Next, Previous bool }
					Results []alertJSONT
				}
				if r.status != http.StatusOK || json.Unmarshal(r.body, &page) != nil {
					t.Fatalf("GET alerts: %d %s", r.status, r.body)
				}
				return page.Results
			}
			// waitFor polls the list until it holds n alerts (an alert is listed within 5 s of
			// the acknowledgement of the batch that raised it).
			waitFor := func(n int, what string) []alertJSONT {
				t.Helper()
				deadline := time.Now().Add(5 * time.Second)
				for {
					got := list()
					if len(got) >= n || time.Now().After(deadline) {
						if len(got) != n {
							t.Fatalf("%s: %d alerts, want %d: %+v", what, len(got), n, got)
						}
						return got
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			now := time.Now().UTC()

			// A new crash group: one alert. Three crashes in one session are under the count.
			put(crashBatch(3, now, "card declined"))
			got := waitFor(1, "new group")
			if a := got[0]; a.Type != "new_crash_group" || a.AppID != tn.app.ID.String() || a.TeamID != tn.app.TeamID.String() ||
				!strings.Contains(a.Message, "Checkout.kt: pay() - card declined") || !strings.HasPrefix(a.URL, tn.cfg.PublicURL+"/"+tn.app.TeamID.String()+"/crashes/"+tn.app.ID.String()+"/") || len(a.EntityID) != 32 {
				t.Errorf("new group alert: %+v", a)
			}
			group := got[0].EntityID

			// Three more in another session: 6 crashes in 2 sessions (300%) pass 5 and 50%.
			put(crashBatch(3, now.Add(time.Second), "card declined"))
			got = waitFor(2, "spike")
			if a := got[0]; a.Type != "crash_spike" || a.EntityID != group || !strings.Contains(a.Message, "Crashes are spiking") {
				t.Errorf("spike alert: %+v", a)
			}
			// A second burst inside the cooldown raises nothing.
			put(crashBatch(10, now.Add(2*time.Second), "card declined"))
			// A bug report raises its alert, and a resent bug report no second one.
			br, brID := bugReportBatch(now, "The pay button does nothing")
			put(br)
			put(br)
			got = waitFor(3, "bug report")
			if a := got[0]; a.Type != "bug_report" || a.EntityID != brID || !strings.Contains(a.Message, "The pay button does nothing") {
				t.Errorf("bug report alert: %+v", a)
			}

			// Each alert reaches the chat app once.
			waitDelivered := func(n int) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for chat.total() < n && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
				}
				time.Sleep(1500 * time.Millisecond) // a duplicate would come within a poll
				if got := chat.total(); got != n {
					t.Fatalf("chat posts: %d, want %d", got, n)
				}
			}
			waitDelivered(3)
			for _, s := range []string{"New Crash", "Crash Spike Alert", "New Bug Report"} {
				if chat.posted(s) != 1 {
					t.Errorf("chat posts with %q: %d, want 1", s, chat.posted(s))
				}
			}

			// A restart raises nothing again, and the cooldown holds after it.
			old := tn
			tn = restartNode(t, backend, tn, nil)
			tn.app, tn.key, tn.email = old.app, old.key, old.email
			owner = tn.accessToken(t, tn.email)
			put(crashBatch(10, time.Now().UTC(), "card declined"))
			time.Sleep(time.Second)
			if got := list(); len(got) != 3 {
				t.Errorf("after a restart and another burst: %d alerts, want 3: %+v", len(got), got)
			}

			// A chat app that fails for a while gets the alert once it answers again.
			chat.failing.Store(true)
			br2, _ := bugReportBatch(time.Now().UTC(), "second report")
			put(br2)
			waitFor(4, "second bug report")
			deadline := time.Now().Add(10 * time.Second)
			for chat.refused.Load() < 2 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if chat.refused.Load() < 2 {
				t.Fatalf("the failing chat app was tried %d times, want at least 2", chat.refused.Load())
			}
			chat.failing.Store(false)
			waitDelivered(4)
			if chat.posted("second report") != 1 {
				t.Errorf("the alert posted after the chat app recovered: %d times, want 1", chat.posted("second report"))
			}
		})
	}
}

// What the metadata stores refuse never reaches them: NUL and invalid UTF-8 are replaced.
func TestStorable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"nul\x00inside", "nul\uFFFDinside"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"ünïcode ✓", "ünïcode ✓"},
	} {
		if got := storable(tc.in); got != tc.want {
			t.Errorf("storable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestThresholdsAtOnce: thresholds the dashboard stores judge the very next batch on this node.
// Before, the alerter answered its first question about an app with the defaults (minimum 100
// events) and read the stored ones in the background, so a spike right after a change could
// go unraised (TestAlerts failed so under load).
func TestThresholdsAtOnce(t *testing.T) {
	tn := startNode(t, "embedded", nil)
	owner := tn.accessToken(t, tn.email)
	for _, count := range []int{5, 7} {
		body := fmt.Sprintf(`{"error_good_threshold":95,"error_caution_threshold":85,"error_spike_min_count_threshold":%d,"error_spike_min_rate_threshold":50}`, count)
		if r := tn.do(t, http.MethodPatch, "/apps/"+tn.app.ID.String()+"/thresholdPrefs", owner,
			map[string]string{"Content-Type": "application/json"}, strings.NewReader(body)); r.status != http.StatusOK {
			t.Fatalf("thresholds: %d %s", r.status, r.body)
		}
		if got := tn.alerts.Thresholds(tn.app.ID); got.ErrorSpikeMinCountThreshold != count || got.ErrorSpikeMinRateThreshold != 50 {
			t.Errorf("right after storing a minimum of %d: the alerter judges by %+v", count, got)
		}
	}
}
