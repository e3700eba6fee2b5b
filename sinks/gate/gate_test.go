package gate

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/badgerdb"
)

func TestGateStates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := badgerdb.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := New(db, 0)
	app, other, req := uuid.New(), uuid.New(), uuid.New()

	steps := []struct {
		name string
		do   func() (State, []byte)
		want State
		info string
	}{
		{"first sight", func() (State, []byte) { s, i, _ := g.Begin(ctx, app, req); return s, i }, Unseen, ""},
		{"while in progress", func() (State, []byte) { s, i, _ := g.Begin(ctx, app, req); return s, i }, InProgress, ""},
		{"same id, other app", func() (State, []byte) { s, i, _ := g.Begin(ctx, other, req); return s, i }, Unseen, ""},
		{"after abort", func() (State, []byte) {
			g.Abort(ctx, other, req)
			s, i, _ := g.Begin(ctx, other, req)
			g.Abort(ctx, other, req)
			return s, i
		}, Unseen, ""},
		{"after accept", func() (State, []byte) {
			if err := g.Accept(ctx, app, req, []byte("info")); err != nil {
				t.Fatal(err)
			}
			s, i, _ := g.Begin(ctx, app, req)
			return s, i
		}, Accepted, "info"},
	}
	for _, st := range steps {
		s, info := st.do()
		if s != st.want || string(info) != st.info {
			t.Fatalf("%s: state %v info %q, want %v %q", st.name, s, info, st.want, st.info)
		}
	}
	// Accepted ids survive a restart.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = badgerdb.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g = New(db, 0)
	if s, info, err := g.Begin(ctx, app, req); err != nil || s != Accepted || string(info) != "info" {
		t.Fatalf("after reopen: %v %q %v", s, info, err)
	}
}

func TestGateConcurrentSameID(t *testing.T) {
	ctx := context.Background()
	db, err := badgerdb.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g := New(db, time.Hour)
	app, req := uuid.New(), uuid.New()
	var news atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _, err := g.Begin(ctx, app, req)
			if err != nil {
				t.Error(err)
			}
			if s == Unseen {
				news.Add(1)
				time.Sleep(10 * time.Millisecond)
				if err := g.Accept(ctx, app, req, nil); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if news.Load() != 1 {
		t.Fatalf("%d requests processed, want exactly 1", news.Load())
	}
}
