package metatest

import (
	"testing"
	"time"

	"github.com/svc-dev/svc/sinks"
)

// Bench measures the MetaStore calls on the ingest path: looking up an app by its API key and
// recording that the key was used. Metadata is not hot (the HTTP layer caches keys), so these
// numbers are for spotting regressions, not for tuning.
func Bench(b *testing.B, s sinks.MetaStore) {
	ctx := b.Context()
	u, tm := newUser(at(0))
	if err := s.CreateUser(ctx, u, tm); err != nil {
		b.Fatalf("CreateUser: %v", err)
	}
	a, k := newApp(tm.ID, at(1))
	if err := s.CreateApp(ctx, a, k); err != nil {
		b.Fatalf("CreateApp: %v", err)
	}
	b.Run("AppByAPIKey", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := s.AppByAPIKey(ctx, k.Key); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("TouchAPIKey", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if err := s.TouchAPIKey(ctx, k.Key, at(2).Add(time.Duration(i)*time.Microsecond)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
