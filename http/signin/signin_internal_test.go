package signin

import (
	"net/http"
	"testing"
	"time"
)

// TestBoundedClient: every provider request has a deadline and a size limit, and a caller's own
// client keeps its timeout and transport.
func TestBoundedClient(t *testing.T) {
	own := &http.Transport{}
	tests := []struct {
		name        string
		in          *http.Client
		wantTimeout time.Duration
		wantBase    http.RoundTripper
	}{
		{name: "nil", in: nil, wantTimeout: defaultTimeout, wantBase: http.DefaultTransport},
		{name: "no timeout", in: &http.Client{Transport: own}, wantTimeout: defaultTimeout, wantBase: own},
		{name: "own timeout", in: &http.Client{Timeout: time.Second}, wantTimeout: time.Second, wantBase: http.DefaultTransport},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before http.Client
			if tc.in != nil {
				before = *tc.in
			}
			c := boundedClient(tc.in)
			if c.Timeout != tc.wantTimeout {
				t.Fatalf("timeout %v, want %v", c.Timeout, tc.wantTimeout)
			}
			lt, ok := c.Transport.(limitTransport)
			if !ok || lt.base != tc.wantBase {
				t.Fatalf("transport %#v does not limit bodies over the wanted base", c.Transport)
			}
			if tc.in != nil && (tc.in.Timeout != before.Timeout || tc.in.Transport != before.Transport) {
				t.Fatal("the caller's client was changed")
			}
		})
	}
}
