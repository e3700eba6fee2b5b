package signin

import (
	"net/http"
	"testing"
	"time"

	"golang.org/x/oauth2"
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

// TestAuthStyle: the client authenticates at the token endpoint as discovery allows, with
// client_secret_basic when discovery says nothing (OpenID Connect Discovery 1.0 §3).
func TestAuthStyle(t *testing.T) {
	tests := []struct {
		methods []string
		want    oauth2.AuthStyle
	}{
		{nil, oauth2.AuthStyleInHeader},
		{[]string{"client_secret_post", "client_secret_basic"}, oauth2.AuthStyleInHeader},
		{[]string{"client_secret_post"}, oauth2.AuthStyleInParams},
		{[]string{"private_key_jwt"}, oauth2.AuthStyleAutoDetect},
	}
	for _, tc := range tests {
		if got := authStyle(tc.methods); got != tc.want {
			t.Errorf("authStyle(%v) = %v, want %v", tc.methods, got, tc.want)
		}
	}
}
