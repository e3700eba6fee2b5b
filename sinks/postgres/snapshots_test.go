package postgres

import (
	"errors"
	"testing"
	"time"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/snaptest"
)

func TestSnapshotsConformance(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		snaptest.Run(t, func(t *testing.T) sinks.Snapshots { return openStore(t, migrated(t)).Snapshots() })
	})
}

// TestSnapshotsExpired: DeleteExpiredSnapshots removes the expired snapshots and nothing else;
// what a text column cannot hold, and a ttl that is not positive, are ErrInvalid.
func TestSnapshotsExpired(t *testing.T) {
	ctx := t.Context()
	p := openStore(t, migrated(t)).Snapshots()
	for _, id := range []string{"a/1", "a/2"} {
		if err := p.SaveSnapshot(ctx, "session", id, []byte("x"), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.SaveSnapshot(ctx, "session", "a/3", []byte("kept"), time.Hour); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	if n, err := p.DeleteExpiredSnapshots(ctx); err != nil || n != 2 {
		t.Fatalf("DeleteExpiredSnapshots = %d, %v; want 2", n, err)
	}
	if n, err := p.DeleteExpiredSnapshots(ctx); err != nil || n != 0 {
		t.Fatalf("DeleteExpiredSnapshots again = %d, %v; want 0", n, err)
	}
	if state, found, err := p.LoadSnapshot(ctx, "session", "a/3"); err != nil || !found || string(state) != "kept" {
		t.Fatalf("LoadSnapshot of the kept one: %q %v %v", state, found, err)
	}
	for name, err := range map[string]error{
		"NUL in the identity": p.SaveSnapshot(ctx, "session", "a\x00b", nil, time.Hour),
		"invalid UTF-8":       p.SaveSnapshot(ctx, "session\xff", "a", nil, time.Hour),
		"zero ttl":            p.SaveSnapshot(ctx, "session", "a", nil, 0),
	} {
		if !errors.Is(err, sinks.ErrInvalid) {
			t.Errorf("SaveSnapshot with %s: %v, want ErrInvalid", name, err)
		}
	}
	if _, found, err := p.LoadSnapshot(ctx, "session", "a\x00b"); err != nil || found {
		t.Errorf("LoadSnapshot with a NUL in the identity: found %v, %v; want not found", found, err)
	}
}
