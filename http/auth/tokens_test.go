package auth

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestTokens(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := now
	is := &Issuer{AccessSecret: []byte("a-secret"), RefreshSecret: []byte("r-secret"),
		AccessTTL: 30 * time.Minute, RefreshTTL: 7 * 24 * time.Hour, Now: func() time.Time { return clock }}
	user, sess, ref := uuid.New(), uuid.New(), uuid.New()
	p, err := is.Issue(user, sess, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !p.RefreshExpiresAt.Equal(now.Add(7 * 24 * time.Hour)) {
		t.Errorf("refresh expiry %v", p.RefreshExpiresAt)
	}
	a, err := is.ParseAccess(p.AccessToken)
	if err != nil || a.UserID != user || a.SessionID != sess {
		t.Fatalf("access: %+v %v", a, err)
	}
	// A token verified once is answered from memory: the same claims, no allocation.
	if allocs := testing.AllocsPerRun(10, func() {
		if b, err := is.ParseAccess(p.AccessToken); err != nil || b != a {
			t.Fatalf("access again: %+v %v", b, err)
		}
	}); allocs != 0 {
		t.Errorf("verifying a verified token again: %v allocations, want 0", allocs)
	}
	r, err := is.ParseRefresh(p.RefreshToken)
	if err != nil || r.UserID != user || r.SessionID != sess || r.RefreshID != ref {
		t.Fatalf("refresh: %+v %v", r, err)
	}
	other := &Issuer{AccessSecret: []byte("other"), RefreshSecret: []byte("other2"), AccessTTL: time.Minute, RefreshTTL: time.Minute,
		Now: func() time.Time { return clock }}
	cases := []struct {
		name string
		err  func() error
	}{
		{"refresh token used as access", func() error { _, err := is.ParseAccess(p.RefreshToken); return err }},
		{"access token used as refresh", func() error { _, err := is.ParseRefresh(p.AccessToken); return err }},
		{"other secret", func() error { _, err := other.ParseAccess(p.AccessToken); return err }},
		{"garbage", func() error { _, err := is.ParseAccess("not.a.jwt"); return err }},
		{"signature changed after the token was verified", func() error {
			tok := []byte(p.AccessToken)
			tok[len(tok)-2] ^= 1
			_, err := is.ParseAccess(string(tok))
			return err
		}},
		{"access expired", func() error {
			clock = now.Add(31 * time.Minute)
			defer func() { clock = now }()
			_, err := is.ParseAccess(p.AccessToken)
			return err
		}},
		{"refresh expired", func() error {
			clock = now.Add(8 * 24 * time.Hour)
			defer func() { clock = now }()
			_, err := is.ParseRefresh(p.RefreshToken)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.err(); !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("want ErrInvalidToken, got %v", err)
			}
		})
	}
}
