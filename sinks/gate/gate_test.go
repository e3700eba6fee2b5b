package gate_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/gate"
	"github.com/svc-dev/svc/sinks/gate/gatetest"
)

// openLocal returns a Local over a fresh in-memory Badger, closed when the test ends.
func openLocal(t testing.TB) *gate.Local {
	t.Helper()
	db, err := badgerdb.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return gate.New(db, 0)
}

func TestConformance(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		gatetest.Run(t, func(t *testing.T) gate.Store { return openLocal(t) })
	})
}

// TestLocalReopen: accepted ids survive a restart of the node; in-progress ids do not (they
// were in memory, and the requests holding them died with the process).
func TestLocalReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := badgerdb.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := gate.New(db, 0)
	app, accepted, held := uuid.New(), uuid.New(), uuid.New()
	for _, req := range []uuid.UUID{accepted, held} {
		if s, _, err := g.Begin(ctx, app, req); err != nil || s != gate.Unseen {
			t.Fatalf("Begin: %v %v, want Unseen", s, err)
		}
	}
	if err := g.Accept(ctx, app, accepted, []byte("info")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = badgerdb.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g = gate.New(db, 0)
	if s, info, err := g.Begin(ctx, app, accepted); err != nil || s != gate.Accepted || string(info) != "info" {
		t.Fatalf("accepted id after reopen: %v %q %v, want Accepted \"info\"", s, info, err)
	}
	if s, _, err := g.Begin(ctx, app, held); err != nil || s != gate.Unseen {
		t.Fatalf("in-progress id after reopen: %v %v, want Unseen", s, err)
	}
}
