package badgerevents

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/eventstest"
)

// layoutRow is a row of a test store and where it is kept: as a row key (seq 0) or in the block
// seq.
type layoutRow struct {
	blockRow
	seq uint64
}

// putLayout writes rows to db as they say: row keys, and per (bucket, seq) data blocks and their
// id blocks, cut into parts of at most partRows rows (0: maxBlockRows), as the block layout's
// writes will (docs/event-blocks.md).
func putLayout(t *testing.T, db *badger.DB, app uuid.UUID, rows []layoutRow) {
	putLayoutParts(t, db, app, rows, 0)
}

func putLayoutParts(t *testing.T, db *badger.DB, app uuid.UUID, rows []layoutRow, partRows int) {
	t.Helper()
	type blockID struct {
		bucket int64
		seq    uint64
	}
	blocks := map[blockID][]blockRow{}
	err := db.Update(func(txn *badger.Txn) error {
		for _, r := range rows {
			if r.seq == 0 {
				if err := txn.Set(appendRowKey(nil, badgerdb.PrefixEvents, app, r.ts, r.id), r.val); err != nil {
					return err
				}
				continue
			}
			k := blockID{bucketOf(r.ts), r.seq}
			blocks[k] = append(blocks[k], r.blockRow)
		}
		for k, rows := range blocks {
			rows = sortRows(rows)
			for part := uint16(0); len(rows) > 0; part++ {
				n := len(rows)
				if partRows > 0 {
					n = min(n, partRows)
				}
				block, _ := encodeBlock(nil, nil, k.bucket, rows[:n])
				if err := txn.Set(appendBlockKey(nil, tagBlock, app, k.bucket, k.seq, part), block); err != nil {
					return err
				}
				if err := txn.Set(appendBlockKey(nil, tagBlockIDs, app, k.bucket, k.seq, part), encodeIDs(nil, k.bucket, rows[:n])); err != nil {
					return err
				}
				rows = rows[n:]
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// scanReference is what a scan of w over rows gives: of each time and id, the copy of the
// highest seq (a block over a row key, a newer block over an older), in the window's order.
func scanReference(rows []layoutRow, w window) []blockRow {
	best := map[string]layoutRow{}
	for _, r := range rows {
		k := fmt.Sprint(r.ts, string(r.id))
		if b, ok := best[k]; !ok || r.seq >= b.seq {
			best[k] = r
		}
	}
	var out []blockRow
	for _, r := range best {
		if r.ts < w.lo || !w.open && r.ts >= w.hi {
			continue
		}
		if w.start != nil {
			c := compareStart(&r.blockRow, w.start)
			if !w.reverse && c < 0 || w.reverse && c > 0 {
				continue
			}
		}
		out = append(out, r.blockRow)
	}
	slices.SortFunc(out, byRowOrder)
	if w.reverse {
		slices.Reverse(out)
	}
	return out
}

func scanAll(t *testing.T, db *badger.DB, app uuid.UUID, w window, limit int) []blockRow {
	t.Helper()
	var got []blockRow
	err := db.View(func(txn *badger.Txn) error {
		return scan(context.Background(), txn, app, w, func(ts int64, id, val []byte) (bool, error) {
			got = append(got, blockRow{ts: ts, id: bytes.Clone(id), val: bytes.Clone(val)})
			return limit == 0 || len(got) < limit, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestScanMergesBlocks: scans over stores of row keys, of blocks and of both give the rows a
// store of row keys alone would, a block's copy of a row winning over its row key and a newer
// block's over an older one, for windows with and without bounds, in both directions, from a
// start, and stopped early.
func TestScanMergesBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	id := func(b byte) []byte { return bytes.Repeat([]byte{b}, 16) }
	const s = bucketSpan
	edges := []int64{math.MinInt64, math.MinInt64 + 1, -s - 1, -s, -1, 0, 1, s - 1, s, 5*s + 3, math.MaxInt64}
	randRows := func(n int, blocks bool, both bool) []layoutRow {
		var rows []layoutRow
		for i := range n {
			ts := int64(rng.IntN(8))*s + int64(rng.IntN(3))*(s/2) - 3*s // buckets -3..4, three times each
			if i < len(edges) {
				ts = edges[i]
			}
			r := layoutRow{blockRow{ts: ts, id: id(byte(rng.IntN(4))), val: []byte(fmt.Sprint("v", i))}, 0}
			if blocks {
				r.seq = uint64(1 + rng.IntN(5))
			}
			rows = append(rows, r)
			if both { // the same row again elsewhere, with other content
				again := r
				again.val = []byte(fmt.Sprint("again", i))
				again.seq = uint64(rng.IntN(6))
				rows = append(rows, again)
			}
		}
		return rows
	}
	stores := []struct {
		name string
		rows []layoutRow
	}{
		{"empty", nil},
		{"row keys only", randRows(60, false, false)},
		{"blocks only", randRows(60, true, false)},
		{"blocks and row keys, some rows in both", randRows(60, true, true)},
	}
	// Row keys and blocks interleaved: half of the rows each.
	mixed := randRows(80, true, false)
	for i := range mixed {
		if i%2 == 0 {
			mixed[i].seq = 0
		}
	}
	stores = append(stores, struct {
		name string
		rows []layoutRow
	}{"half row keys, half blocks", mixed})

	for _, st := range stores {
		for _, partRows := range []int{0, 2} { // one block per write and bucket, or parts of two rows
			t.Run(fmt.Sprintf("%s/parts=%d", st.name, partRows), func(t *testing.T) {
				db, err := badgerdb.OpenEvents("", nil)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				app, other := uuid.New(), uuid.New()
				putLayoutParts(t, db, app, st.rows, partRows)
				putLayout(t, db, other, randRows(20, true, true)) // another app's rows never show
				var windows []window
				for _, rev := range []bool{false, true} {
					windows = append(windows,
						window{lo: math.MinInt64, open: true, reverse: rev},
						window{lo: math.MinInt64, hi: math.MinInt64, reverse: rev},
						window{lo: math.MinInt64, hi: math.MaxInt64, reverse: rev},
						window{lo: 0, hi: s, reverse: rev},
						window{lo: -s, hi: 0, reverse: rev},
						window{lo: s / 2, hi: 2*s + s/2, reverse: rev},
						window{lo: 3 * s, open: true, reverse: rev},
					)
					for range 20 {
						lo := int64(rng.IntN(10)-5) * s / 2
						w := window{lo: lo, hi: lo + int64(rng.IntN(8))*s/2, reverse: rev, open: rng.IntN(4) == 0}
						if rng.IntN(2) == 0 {
							var st [8]byte
							putTime(st[:], int64(rng.IntN(10)-5)*s/2)
							w.start = append(st[:], id(byte(rng.IntN(4)))...)
						}
						windows = append(windows, w)
					}
				}
				// EventIDs reads the id blocks and row keys: the rows of the open window, oldest
				// first, without their values.
				var ids []blockRow
				if err := New(db).EventIDs(context.Background(), app, func(id uuid.UUID, ts int64) {
					ids = append(ids, blockRow{ts: ts, id: bytes.Clone(id[:])})
				}); err != nil {
					t.Fatal(err)
				}
				want := scanReference(st.rows, window{lo: math.MinInt64, open: true})
				for i := range want {
					want[i].val = nil
				}
				if !rowsEqual(ids, want) {
					t.Fatalf("EventIDs gave\n%s\nwant\n%s", showRows(ids), showRows(want))
				}
				for _, w := range windows {
					want := scanReference(st.rows, w)
					if got := scanAll(t, db, app, w, 0); !rowsEqual(got, want) {
						t.Fatalf("window %+v: scan gave\n%s\nwant\n%s", w, showRows(got), showRows(want))
					}
					if len(want) > 2 { // a scan its function stops
						if got := scanAll(t, db, app, w, 2); !rowsEqual(got, want[:2]) {
							t.Fatalf("window %+v stopped after 2: scan gave %s, want %s", w, showRows(got), showRows(want[:2]))
						}
					}
				}
			})
		}
	}
}

// TestScanRefusesDamagedBlocks: a damaged block or block key fails the scan as corrupt.
func TestScanRefusesDamagedBlocks(t *testing.T) {
	for _, c := range []struct {
		name string
		key  func(app uuid.UUID) []byte
		val  []byte
	}{
		{"a damaged block", func(app uuid.UUID) []byte { return appendBlockKey(nil, tagBlock, app, 0, 1, 0) }, []byte{blockVersion, 1, 2, 3}},
		{"a short block key", func(app uuid.UUID) []byte {
			return append(appendHead(nil, badgerdb.PrefixEvents, tagBlock, app), 1, 2, 3)
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := badgerdb.OpenEvents("", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			app := uuid.New()
			if err := db.Update(func(txn *badger.Txn) error { return txn.Set(c.key(app), c.val) }); err != nil {
				t.Fatal(err)
			}
			err = db.View(func(txn *badger.Txn) error {
				return scan(context.Background(), txn, app, window{lo: math.MinInt64, open: true}, func(int64, []byte, []byte) (bool, error) {
					return true, nil
				})
			})
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("err = %v, want errCorrupt", err)
			}
		})
	}
}

// BenchmarkScanRows scans every row of 200k realistic events kept as row keys, on disk: what
// each query that is no issue query pays per row to walk the rows, the blocks' merge included
// (a store of row keys alone has no block to merge, so this is its overhead on today's stores).
func BenchmarkScanRows(b *testing.B) {
	const n = 200_000
	db, _, app, _ := realisticStore(b, n)
	for _, reverse := range []bool{false, true} {
		b.Run(fmt.Sprintf("reverse=%v", reverse), func(b *testing.B) {
			for b.Loop() {
				rows := 0
				err := db.View(func(txn *badger.Txn) error {
					return scan(context.Background(), txn, app, window{lo: math.MinInt64, open: true, reverse: reverse}, func(int64, []byte, []byte) (bool, error) {
						rows++
						return true, nil
					})
				})
				if err != nil || rows != n {
					b.Fatalf("scanned %d rows (%v), want %d", rows, err, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
		})
	}
}

// TestPointReadsOverBlocks: Event finds an id's newest row wherever it is kept, a block's copy
// winning over its row key and the newest block over an older one; BugReport reads the row its
// point entry names from a block; the repair of a damaged entry finds newer bug reports in
// blocks.
func TestPointReadsOverBlocks(t *testing.T) {
	db, err := badgerdb.OpenEvents("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := New(db)
	app := uuid.New()
	ids := map[string]uuid.UUID{}
	for _, n := range []string{"A", "B", "C", "D", "E", "F", "G"} {
		ids[n] = uuid.New()
	}
	at := func(name string, ts int64, typ string, seq uint64) layoutRow {
		e := model.Event{ID: ids[name], AppID: app, SessionID: uuid.New(), Type: typ, Timestamp: ts}
		return layoutRow{blockRow{ts: ts, id: bytes.Clone(e.ID[:]), val: appendEvent(nil, &e)}, seq}
	}
	const s1 = bucketSpan
	putLayout(t, db, app, []layoutRow{
		at("A", 10*s1, "custom", 0), at("A", 20*s1+5, "lifecycle_app", 1), // newer in a block
		at("B", 30*s1, "x1", 0), at("B", 30*s1, "x2", 2), at("B", 30*s1, "x3", 3), // one row, three copies
		at("C", -40*s1, "only_a_row", 0),
		at("D", math.MaxInt64, "at_the_end", 4),
		at("F", 50*s1+7, model.BugReportType, 5),
		at("G", 60*s1, model.BugReportType, 6), at("G", 70*s1, model.BugReportType, 0), at("G", 80*s1, "custom", 7),
	})
	if err := db.Update(func(txn *badger.Txn) error {
		var t [8]byte
		putTime(t[:], 50*s1+7)
		if err := txn.Set(appendIdxKey(nil, badgerdb.PrefixEvents, app, idBytes(ids["F"])), t[:]); err != nil {
			return err
		}
		// An entry naming a time where its id has no row: damage, which is no "not found".
		var t2 [8]byte // Set keeps the slice until the commit
		putTime(t2[:], 90*s1)
		if err := txn.Set(appendIdxKey(nil, badgerdb.PrefixEvents, app, idBytes(ids["E"])), t2[:]); err != nil {
			return err
		}
		// A key among the rows that is no row key: the point reads pass over it, as they did.
		return txn.Set(append(appendHead(nil, badgerdb.PrefixEvents, tagRow, app), 1, 2, 3), []byte("?"))
	}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		ts   int64
		typ  string
	}{
		{"A", 20*s1 + 5, "lifecycle_app"},
		{"B", 30 * s1, "x3"},
		{"C", -40 * s1, "only_a_row"},
		{"D", math.MaxInt64, "at_the_end"},
		{"G", 80 * s1, "custom"},
	} {
		e, err := s.Event(ctx, app, ids[c.name])
		if err != nil || e.Timestamp != c.ts || e.Type != c.typ {
			t.Fatalf("Event %s = %d %q, %v; want %d %q", c.name, e.Timestamp, e.Type, err, c.ts, c.typ)
		}
	}
	if _, err := s.Event(ctx, app, ids["E"]); err == nil || errors.Is(err, sinks.ErrNotFound) {
		t.Fatalf("Event of an id whose entry names no row: %v, want the damage reported", err)
	}
	if _, err := s.Event(ctx, app, uuid.New()); !errors.Is(err, sinks.ErrNotFound) {
		t.Fatalf("Event of an id never stored: %v, want not found", err)
	}
	if r, err := s.BugReport(ctx, app, ids["F"]); err != nil || r.Timestamp != 50*s1+7 {
		t.Fatalf("BugReport F = %d, %v", r.Timestamp, err)
	}
	// Inside a write transaction, as the repair of a damaged entry runs it.
	err = db.Update(func(txn *badger.Txn) error {
		newest, err := newerBugReport(txn, &row{app: app, ts: 55 * s1, id: idBytes(ids["G"])})
		if err == nil && newest != 70*s1 {
			return fmt.Errorf("newest bug report of G after 55 s: %d, want %d", newest, 70*s1)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func idBytes(id uuid.UUID) []byte { return id[:] }

// TestUsageOverBlocks: Usage over a store of row keys and blocks, some rows in both with other
// sessions, counts what a store of the winning copies as row keys counts: each row once, with
// the session and size of its newest copy, its size as if it had a row key.
func TestUsageOverBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	app := uuid.New()
	sessions := []uuid.UUID{uuid.Nil, uuid.New(), uuid.New(), uuid.New()}
	start := time.Date(2026, 1, 30, 0, 0, 0, 0, time.UTC).UnixNano()
	var rows []layoutRow
	for i := range 300 {
		ts := start + rng.Int64N(int64(70*24*time.Hour)) // the end of January to April
		if i%50 == 0 {
			ts = start + int64(2*24*time.Hour) // a few rows at one time, in one bucket
		}
		e := model.Event{ID: uuid.New(), AppID: app, SessionID: sessions[rng.IntN(len(sessions))], Type: "custom", Timestamp: ts}
		r := layoutRow{blockRow{ts: ts, id: bytes.Clone(e.ID[:]), val: appendEvent(nil, &e)}, uint64(rng.IntN(3))}
		rows = append(rows, r)
		if i%3 == 0 { // written again, elsewhere, in another session and with more to say
			e.SessionID, e.Type = sessions[rng.IntN(len(sessions))], "custom_written_again"
			rows = append(rows, layoutRow{blockRow{ts: ts, id: r.id, val: appendEvent(nil, &e)}, uint64(rng.IntN(4))})
		}
	}
	var winners []layoutRow
	for _, r := range scanReference(rows, window{lo: math.MinInt64, open: true}) {
		winners = append(winners, layoutRow{r, 0})
	}
	open := func(rows []layoutRow) *Store {
		db, err := badgerdb.OpenEvents("", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		putLayout(t, db, app, rows)
		return New(db)
	}
	mixed, plain := open(rows), open(winners)
	day := 24 * time.Hour
	for _, r := range []struct{ from, to time.Time }{
		{time.Unix(0, 0), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{time.Unix(0, start).Add(2 * day), time.Unix(0, start).Add(2*day + time.Nanosecond)},
		{time.Unix(0, start).Add(20 * day), time.Unix(0, start).Add(45 * day)},
	} {
		got, err := mixed.Usage(context.Background(), app, r.from, r.to)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.Usage(context.Background(), app, r.from, r.to)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("Usage of %s to %s: %+v, want %+v", r.from, r.to, got, want)
		}
	}
}

// TestIDFilterKnowsBlockRows: the key filter's build reads the id blocks, so it knows the rows
// in blocks as it knows row keys, and sizes itself by rows, not by blocks.
func TestIDFilterKnowsBlockRows(t *testing.T) {
	db, err := badgerdb.OpenEvents("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	app := uuid.New()
	rng := rand.New(rand.NewPCG(11, 12))
	var rows []layoutRow
	for i := range 2000 {
		rows = append(rows, layoutRow{blockRow{ts: int64(rng.IntN(20)) * bucketSpan / 3, id: idBytes(uuid.New()), val: []byte("v")}, uint64(i%3 + 1)})
	}
	putLayout(t, db, app, rows)
	old := idFilterMinWords
	idFilterMinWords = 1 // sized by what its build counts alone
	t.Cleanup(func() { idFilterMinWords = old })
	s := New(db)
	defer s.Close()
	s.ids.Ensure(db)
	filterReady(t, s)
	for _, r := range rows {
		if !s.ids.MayHold(appendRowKey(nil, badgerdb.PrefixEvents, app, r.ts, r.id)) {
			t.Fatalf("the filter does not know the row at %d (seq %d)", r.ts, r.seq)
		}
	}
	unknown := 0
	for range 2000 {
		if !s.ids.MayHold(appendRowKey(nil, badgerdb.PrefixEvents, app, 0, idBytes(uuid.New()))) {
			unknown++
		}
	}
	if unknown < 1900 { // sized for the rows it found, it says "may hold" for about 1 % of new keys
		t.Fatalf("the filter knew only %d of 2,000 new keys as new", unknown)
	}
}

// TestDeleteBeforeOverBlocks: retention over a store of row keys and blocks deletes the rows
// before the cut wherever they are kept, each with its issue copy, counts each once, keeps the
// rest of the bucket it cuts (rewritten under the seq it read), and gives the same store when it
// stops after every few rows, inside buckets, as when it runs in one go.
func TestDeleteBeforeOverBlocks(t *testing.T) {
	const s1 = bucketSpan
	rng := rand.New(rand.NewPCG(13, 14))
	app := uuid.New()
	var rows []layoutRow
	for i := range 400 {
		ts := int64(rng.IntN(12))*s1 + int64(rng.IntN(4))*(s1/4) // buckets 0..11, four times each
		typ := "custom"
		if i%7 == 0 {
			typ = "exception"
		}
		e := model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: typ, Timestamp: ts}
		r := layoutRow{blockRow{ts: ts, id: idBytes(e.ID), val: appendEvent(nil, &e)}, uint64(rng.IntN(4))}
		rows = append(rows, r)
		if i%5 == 0 { // written again elsewhere
			again := r
			again.seq = uint64(rng.IntN(5))
			rows = append(rows, again)
		}
	}
	stored := scanReference(rows, window{lo: math.MinInt64, open: true})
	cut := 6*s1 + s1/2 // inside bucket 6
	var kept []blockRow
	for _, r := range stored {
		if r.ts >= cut {
			kept = append(kept, r)
		}
	}
	open := func() (*badger.DB, *Store) {
		db, err := badgerdb.OpenEvents("", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		putLayoutParts(t, db, app, rows, 3)
		err = db.Update(func(txn *badger.Txn) error {
			for _, r := range stored { // the issue copies, and the count the writes would have made
				if bytes.Contains(r.val, []byte("exception")) {
					if err := txn.Set(appendIssueKey(nil, app, r.ts, r.id), r.val); err != nil {
						return err
					}
				}
			}
			return txn.Set(countKey(badgerdb.PrefixEvents, tagCount, app), binary.AppendUvarint(nil, uint64(len(stored))))
		})
		if err != nil {
			t.Fatal(err)
		}
		return db, New(db)
	}
	check := func(t *testing.T, db *badger.DB, s *Store) {
		t.Helper()
		if got := scanAll(t, db, app, window{lo: math.MinInt64, open: true}, 0); !rowsEqual(got, kept) {
			t.Fatalf("left %d rows, want %d:\n%s\nwant\n%s", len(got), len(kept), showRows(got), showRows(kept))
		}
		if n, _, err := s.Count(context.Background(), app); err != nil || n != int64(len(kept)) {
			t.Fatalf("Count = %d, %v; want %d", n, err, len(kept))
		}
		err := db.View(func(txn *badger.Txn) error {
			for _, tag := range []byte{tagIssue, tagBlock, tagBlockIDs} {
				it := txn.NewIterator(badger.IteratorOptions{Prefix: appendHead(nil, badgerdb.PrefixEvents, tag, app)})
				for it.Rewind(); it.Valid(); it.Next() {
					k := it.Item().Key()
					ts := getTime(k[len(badgerdb.PrefixEvents)+1+16:])
					if tag == tagIssue && ts < cut || tag != tagIssue && ts < bucketOf(cut) {
						it.Close()
						return fmt.Errorf("a key of tag %q at %d is left before the cut", tag, ts)
					}
				}
				it.Close()
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Run("in one go", func(t *testing.T) {
		db, s := open()
		if err := s.DeleteBefore(context.Background(), app, time.Unix(0, cut)); err != nil {
			t.Fatal(err)
		}
		check(t, db, s)
	})
	t.Run("three rows a transaction", func(t *testing.T) {
		db, s := open()
		var from []byte
		for txns := 0; ; txns++ {
			next, _, err := s.tryDeleteEvents(app, from, cut, 3)
			if err != nil {
				t.Fatal(err)
			}
			if next == nil {
				break
			}
			if txns > len(rows) {
				t.Fatal("retention makes no progress")
			}
			from = next
		}
		check(t, db, s)
	})
	t.Run("a block written meanwhile wins", func(t *testing.T) {
		db, s := open()
		// Between retention's reads and its commit, a writer stores a newer copy of the first
		// row past the cut, which is in the bucket retention rewrites, in a block of its own.
		late := kept[0]
		late.val = []byte("newer")
		once := false
		testHookBeforeDeleteCommit = func() {
			if !once {
				once = true
				putLayout(t, db, app, []layoutRow{{late, 1000}})
			}
		}
		defer func() { testHookBeforeDeleteCommit = nil }()
		if err := s.DeleteBefore(context.Background(), app, time.Unix(0, cut)); err != nil {
			t.Fatal(err)
		}
		got := scanAll(t, db, app, window{lo: math.MinInt64, open: true}, 0)
		if len(got) != len(kept) || got[0].ts != late.ts || string(got[0].val) != "newer" {
			t.Fatalf("the newer copy did not win: %s", showRows(got[:1]))
		}
	})
}

// TestBlocksWrite: a store that uses blocks writes no row key, a busy second's rows go into a
// block or a few, rows written again (the same write, the next, or after the store reopened)
// are counted once once their suspects are settled, and none is left after a Count.
func TestBlocksWrite(t *testing.T) {
	db, err := badgerdb.OpenEvents(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := newStore(db, time.Hour) // the suspects wait for Count
	if err := s.UseBlocks(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	app := uuid.New()
	copies := eventstest.NewCopies(eventstest.FixtureBodies(t, app), app, time.Now(), 2*time.Minute, rand.New(rand.NewPCG(1, 2)))
	first := copies.Append(nil, 3000)
	again := append(slices.Clone(first[:300]), first[:10]...) // repeats within one write too
	if err := s.WriteEvents(ctx, first); err != nil {
		t.Fatal(err)
	}
	filterReady(t, s)
	if err := s.WriteEvents(ctx, again); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = newStore(db, time.Hour) // the marker keeps it writing blocks
	defer s.Close()
	more := copies.Append(nil, 500)
	if err := s.WriteEvents(ctx, append(more, first[300:400]...)); err != nil {
		t.Fatal(err)
	}
	count := func(tag byte) int {
		n := 0
		_ = db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: appendHead(nil, badgerdb.PrefixEvents, tag, app)})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				n++
			}
			return nil
		})
		return n
	}
	if n := count(tagRow); n != 0 {
		t.Fatalf("%d row keys written", n)
	}
	if blocks := count(tagBlock); blocks == 0 || blocks > 3500/5 { // about 7 rows a block here
		t.Fatalf("%d data blocks for 3,500 rows within two minutes", blocks)
	}
	if count(tagSuspects) == 0 {
		t.Fatal("rows written again named no suspect")
	}
	checkCount(t, s, app, 3500, "after the rows written again")
	if n := count(tagSuspects); n != 0 {
		t.Fatalf("%d suspects left after Count", n)
	}
	rows := scanAll(t, db, app, window{lo: math.MinInt64, open: true}, 0)
	if len(rows) != 3500 {
		t.Fatalf("a scan read %d rows, want 3500", len(rows))
	}
}
