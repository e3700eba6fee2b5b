package gate

import (
	"context"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/badgerdb"
)

// Local reads Badger only for ids its filter may hold: ids accepted before it started (the
// filter's build scanned them), and ids it accepted or marked itself, both after the
// background write left memory. An id it never saw is answered Unseen without a read, which
// the id written behind its back shows.
func TestLocalFilter(t *testing.T) {
	ctx := context.Background()
	db, err := badgerdb.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	app := uuid.New()
	begin := func(g *Local, req uuid.UUID, want State) {
		t.Helper()
		if s, _, err := g.Begin(ctx, app, req); err != nil || s != want {
			t.Fatalf("Begin(%s) = %v, %v; want %v", req, s, err, want)
		}
	}
	ids := func(n int) []uuid.UUID {
		r := make([]uuid.UUID, n)
		for i := range r {
			r[i] = uuid.New()
		}
		return r
	}

	// accept begins and accepts n new ids, marks m others, and returns them all once written.
	accept := func(g *Local, n, m int) []uuid.UUID {
		t.Helper()
		reqs := ids(n + m)
		for i, req := range reqs {
			if i < n {
				begin(g, req, Unseen)
				err = g.Accept(ctx, app, req, []byte("a"))
			} else {
				err = g.Mark(ctx, app, req, []byte("m"))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		g.Sync() // the accepted ids left memory: Begin must find them in Badger
		return reqs
	}

	first := New(db, 0)
	before := accept(first, 300, 100)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	g := New(db, 0)
	defer g.Close()
	begin(g, uuid.New(), Unseen) // starts the build
	for deadline := time.Now().Add(10 * time.Second); !g.ids.Ready(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the filter was not built within 10 s")
		}
	}
	for _, req := range before {
		begin(g, req, Accepted)
	}
	// Accepted and marked through g, after the filter was built.
	for _, req := range accept(g, 200, 50) {
		begin(g, req, Accepted)
	}

	behind := uuid.New()
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set(dbKey(makeKey(app, behind)), []byte("x")) }); err != nil {
		t.Fatal(err)
	}
	begin(g, behind, Unseen)
}
