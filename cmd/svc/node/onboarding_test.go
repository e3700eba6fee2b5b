package node

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/eventstest"
)

// getApp reads an app through GET /teams/{id}/apps/{appID}.
func (tn *testNode) getApp(t *testing.T, token string, app model.App) map[string]any {
	t.Helper()
	r := tn.do(t, http.MethodGet, "/teams/"+app.TeamID.String()+"/apps/"+app.ID.String(), token, nil, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET app: %d %s", r.status, r.body)
	}
	return r.json(t)
}

// waitApp polls the app until ok holds of it (onboarding is recorded in the background).
func (tn *testNode) waitApp(t *testing.T, token string, app model.App, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		m := tn.getApp(t, token, app)
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("app after 20 s: %v", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// onboarding is the part of an app's JSON that onboarding sets.
func onboarding(m map[string]any) map[string]any {
	return map[string]any{"onboarded": m["onboarded"], "onboarded_at": m["onboarded_at"],
		"unique_identifier": m["unique_identifier"], "os_names": m["os_names"]}
}

// TestAppOnboarding: an app without a batch is not onboarded; its first accepted batch sets
// onboarded, onboarded_at, unique_identifier and os_names, a batch of another OS adds its name,
// and a restarted node answers the same, on both backends.
func TestAppOnboarding(t *testing.T) {
	dir := eventstest.FixturesDir(t)
	android := readFile(t, filepath.Join(dir, "batch_android_sample-android_sdk0.11.0-SNAPSHOT_appexit_0c9ac5e0.json"))
	ios := readFile(t, filepath.Join(dir, "batch_ios_wikipedia-ios_sdk0.0.1_coldlaunch_16a27697.json")) // os_name "iOS"
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, nil)
			idle, _ := tn.newApp(t) // another user's app, never sent a batch
			idleEmail := tn.lastEmail
			token := tn.accessToken(t, tn.email)
			want := map[string]any{"onboarded": false, "onboarded_at": nil, "unique_identifier": "", "os_names": []any{}}
			if got := onboarding(tn.getApp(t, token, tn.app)); !reflect.DeepEqual(got, want) {
				t.Errorf("before any batch: %v, want %v", got, want)
			}

			before := time.Now().UTC().Truncate(time.Microsecond)
			if r := tn.putJSON(t, tn.key, uuid.NewString(), android); r.status != http.StatusOK {
				t.Fatalf("PUT /events: %d %s", r.status, r.body)
			}
			m := tn.waitApp(t, token, tn.app, func(m map[string]any) bool { return m["onboarded"] == true })
			after := time.Now().UTC()
			at, err := time.Parse(time.RFC3339Nano, m["onboarded_at"].(string))
			if err != nil || at.Before(before) || at.After(after) {
				t.Errorf("onboarded_at %v (%v), want between %s and %s", m["onboarded_at"], err, before, after)
			}
			want = map[string]any{"onboarded": true, "onboarded_at": m["onboarded_at"], "unique_identifier": "sh.measure.sample",
				"os_names": []any{"android"}}
			if got := onboarding(m); !reflect.DeepEqual(got, want) {
				t.Errorf("after the first batch: %v, want %v", got, want)
			}

			// A batch of another OS adds its name (lowercased); the rest stays.
			if r := tn.putJSON(t, tn.key, uuid.NewString(), ios); r.status != http.StatusOK {
				t.Fatalf("PUT /events (iOS): %d %s", r.status, r.body)
			}
			want["os_names"] = []any{"android", "ios"}
			m = tn.waitApp(t, token, tn.app, func(m map[string]any) bool { return len(m["os_names"].([]any)) == 2 })
			if got := onboarding(m); !reflect.DeepEqual(got, want) {
				t.Errorf("after an iOS batch: %v, want %v", got, want)
			}
			// Again: nothing changes.
			if r := tn.putJSON(t, tn.key, uuid.NewString(), android); r.status != http.StatusOK {
				t.Fatalf("PUT /events (again): %d %s", r.status, r.body)
			}

			// The list carries the fields too; the other app is not onboarded.
			r := tn.do(t, http.MethodGet, "/teams/"+tn.app.TeamID.String()+"/apps", token, nil, nil)
			var list []map[string]any
			if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list) != 1 {
				t.Fatalf("GET /teams/{id}/apps: %d %s", r.status, r.body)
			}
			if got := onboarding(list[0]); !reflect.DeepEqual(got, want) {
				t.Errorf("in the list: %v, want %v", got, want)
			}
			idleToken := tn.accessToken(t, idleEmail)
			idleWant := map[string]any{"onboarded": false, "onboarded_at": nil, "unique_identifier": "", "os_names": []any{}}
			if got := onboarding(tn.getApp(t, idleToken, idle)); !reflect.DeepEqual(got, idleWant) {
				t.Errorf("an app without a batch: %v, want %v", got, idleWant)
			}
			tn.waitFlushed(t)

			// A restarted node reads them back from the metadata store.
			old := tn
			tn = restartNode(t, backend, tn, nil)
			tn.app, tn.key, tn.email = old.app, old.key, old.email
			token = tn.accessToken(t, tn.email)
			if got := onboarding(tn.getApp(t, token, tn.app)); !reflect.DeepEqual(got, want) {
				t.Errorf("after a restart: %v, want %v", got, want)
			}
			if got := onboarding(tn.getApp(t, tn.accessToken(t, idleEmail), idle)); !reflect.DeepEqual(got, idleWant) {
				t.Errorf("an app without a batch after a restart: %v, want %v", got, idleWant)
			}
			// Batches after the restart change nothing known.
			if r := tn.putJSON(t, tn.key, uuid.NewString(), ios); r.status != http.StatusOK {
				t.Fatalf("PUT /events after the restart: %d %s", r.status, r.body)
			}
			time.Sleep(200 * time.Millisecond)
			if got := onboarding(tn.getApp(t, token, tn.app)); !reflect.DeepEqual(got, want) {
				t.Errorf("after a batch on the restarted node: %v, want %v", got, want)
			}
		})
	}
}
