package ops

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReadyzAnswersWithinItsTimeout: a check that hangs past the timeout (as a frozen server's
// dial does) does not hold the answer, and the answer shows no cause.
func TestReadyzAnswersWithinItsTimeout(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	checks := []Check{
		{Name: "clickhouse (events)", Ping: func(context.Context) error { <-hang; return nil }}, // ignores ctx
		{Name: "postgres (metadata)", Ping: func(context.Context) error { return errors.New("dial tcp 10.0.0.7:5432: user svc") }},
		{Name: "localdisk (blobs)", Ping: func(context.Context) error { return nil }},
	}
	h := Readyz(checks, 300*time.Millisecond, nil)
	start := time.Now()
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if d := time.Since(start); d > time.Second {
		t.Fatalf("answered after %v, timeout 300ms", d)
	}
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d", rec.Code)
	}
	body := rec.Body.String()
	if strings.Contains(body, "10.0.0.7") || strings.Contains(body, "svc") && strings.Contains(body, "user") {
		t.Errorf("answer shows a cause: %s", body)
	}
	var m struct {
		Failing []string          `json:"failing"`
		Checks  map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Failing) != 2 || m.Checks["localdisk (blobs)"] != "ok" || !strings.Contains(m.Checks["clickhouse (events)"], "did not answer") {
		t.Errorf("answer %s", body)
	}
}
