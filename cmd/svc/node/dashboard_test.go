package node

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestKeyRotationThroughDashboard: PATCH /apps/{id}/apiKey revokes the old key, and ingest
// refuses it with the very next request.
func TestKeyRotationThroughDashboard(t *testing.T) {
	tn := startNode(t, "embedded", nil)
	token := tn.accessToken(t, tn.email)
	r := tn.do(t, http.MethodPatch, "/apps/"+tn.app.ID.String()+"/apiKey", token, nil, nil)
	if r.status != 200 {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	var v struct {
		APIKey struct {
			Key string `json:"key"`
		} `json:"api_key"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil || v.APIKey.Key == "" {
		t.Fatalf("%s", r.body)
	}
	if r := tn.putJSON(t, tn.key, uuid.NewString(), sampleBatch(uuid.New(), time.Now(), 1)); r.status != 401 {
		t.Fatalf("old key: %d %s", r.status, r.body)
	}
	if r := tn.putJSON(t, v.APIKey.Key, uuid.NewString(), sampleBatch(uuid.New(), time.Now(), 1)); r.status != 200 {
		t.Fatalf("new key: %d %s", r.status, r.body)
	}
}

// TestRetentionAndUsage: the janitor deletes an app's data older than its retention, on both
// backends, and GET /teams/{id}/usage counts what is stored per month.
func TestRetentionAndUsage(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			tn := startNode(t, backend, nil)
			now := time.Now().UTC()
			old := sampleBatch(uuid.New(), now.AddDate(0, 0, -45), 4)
			freshAt := now.Add(-time.Hour) // in the month before now's during a month's first hour
			fresh := sampleBatch(uuid.New(), freshAt, 3)
			for _, b := range [][]byte{old, fresh} {
				if r := tn.putJSON(t, tn.key, uuid.NewString(), b); r.status != 200 {
					t.Fatalf("%d %s", r.status, r.body)
				}
			}
			tn.waitFlushed(t)
			token := tn.accessToken(t, tn.email)
			usage := func() string {
				r := tn.do(t, http.MethodGet, "/teams/"+tn.app.TeamID.String()+"/usage", token, nil, nil)
				if r.status != 200 {
					t.Fatalf("usage: %d %s", r.status, r.body)
				}
				return string(r.body)
			}
			u := usage()
			if !strings.Contains(u, `"events":3`) || !strings.Contains(u, freshAt.Format("2006-01")) || !strings.Contains(u, `"sessions":1`) {
				t.Fatalf("usage before retention: %s", u)
			}
			tn.sweep(context.Background()) // retention 30 days: the 45-day-old batch goes
			deadline := time.Now().Add(60 * time.Second)
			for {
				if e, _ := tn.counts(t, tn.app.ID); e == 3 {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("after retention %d events remain, want 3", e)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// TestJanitorRunsAtItsInterval: retention needs no call from anyone; the janitor's rounds after
// its first one, at start, delete what falls beyond an app's retention.
func TestJanitorRunsAtItsInterval(t *testing.T) {
	tn := startNode(t, "embedded", func(c *Config) { c.JanitorInterval = 200 * time.Millisecond })
	now := time.Now().UTC()
	for _, b := range [][]byte{sampleBatch(uuid.New(), now.AddDate(0, 0, -45), 4), sampleBatch(uuid.New(), now, 3)} {
		if r := tn.putJSON(t, tn.key, uuid.NewString(), b); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	tn.waitFlushed(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		e, _ := tn.counts(t, tn.app.ID)
		if e == 3 {
			return
		}
		if e != 7 || time.Now().After(deadline) {
			t.Fatalf("%d events stored, want 7 until a round of the janitor, then 3", e)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestExpiredSessionsCleanedUp: the janitor removes sessions past their expiry.
func TestExpiredSessionsCleanedUp(t *testing.T) {
	tn := startNode(t, "embedded", func(c *Config) { c.RefreshTokenTTL = 2 * time.Second; c.AccessTokenTTL = time.Second })
	token := tn.accessToken(t, tn.email)
	if r := tn.do(t, http.MethodGet, "/auth/session", token, nil, nil); r.status != 200 {
		t.Fatalf("session: %d %s", r.status, r.body)
	}
	time.Sleep(2500 * time.Millisecond)
	tn.sweep(context.Background())
	n, err := tn.Meta.DeleteExpiredAuthSessions(context.Background(), time.Now())
	if err != nil || n != 0 {
		t.Fatalf("the janitor left %d expired sessions (%v)", n, err)
	}
}

// TestConfigPatchChangesETag: a PATCH of the app's SDK configuration on the dashboard is what
// GET /config serves next, under a new ETag.
func TestConfigPatchChangesETag(t *testing.T) {
	tn := startNode(t, "embedded", nil)
	first := tn.do(t, http.MethodGet, "/config", tn.key, nil, nil)
	etag := first.header.Get("ETag")
	token := tn.accessToken(t, tn.email)
	r := tn.do(t, http.MethodPatch, "/apps/"+tn.app.ID.String()+"/config", token, nil, strings.NewReader(`{"trace_sampling_rate": 10}`))
	if r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	if r := tn.do(t, http.MethodPatch, "/apps/"+tn.app.ID.String()+"/config", token, nil, strings.NewReader(`{"cpu_usage_interval": 0}`)); r.status != 400 {
		t.Fatalf("out of bounds: %d %s", r.status, r.body)
	}
	next := tn.do(t, http.MethodGet, "/config", tn.key, map[string]string{"If-None-Match": etag}, nil)
	if next.status != 200 || next.header.Get("ETag") == etag || !strings.Contains(string(next.body), `"trace_sampling_rate":10`) {
		t.Fatalf("after patch: %d %v %s", next.status, next.header, next.body)
	}
}
