package badgerevents

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// The block layout's writes (blockwrite.go): rows written again are suspects, settled against
// their newest copy by Count, retention and the background settler; these tests write copies
// whose side keys differ and check the store against what its rows say.

// blockStore is a store of db that writes blocks, whose background settler waits an hour
// unless delay says otherwise (0: the default), so that a test decides when suspects settle.
func blockStore(t testing.TB, db *badger.DB, delay time.Duration) *Store {
	t.Helper()
	if delay == 0 {
		delay = time.Hour
	}
	s := newStore(db, delay)
	if err := s.UseBlocks(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// checkBlocksConsistent fails unless, for the app, Count says how many rows a scan reads, no
// suspects are left (Count settles them), and the issue index holds exactly the scanned rows
// of an issue type, with their values. It returns the rows.
func checkBlocksConsistent(t *testing.T, db *badger.DB, s *Store, app uuid.UUID) []blockRow {
	t.Helper()
	n, _, err := s.Count(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	rows := scanAll(t, db, app, window{lo: math.MinInt64, open: true}, 0)
	if int64(len(rows)) != n {
		t.Fatalf("a scan reads %d rows, Count says %d", len(rows), n)
	}
	if u := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagSuspects, app)); u != 0 {
		t.Fatalf("%d suspects keys left after Count", u)
	}
	want := map[string][]byte{}
	head := appendHead(nil, badgerdb.PrefixEvents, tagIssue, app)
	for _, r := range rows {
		var v rowView
		issue, err := v.issueRow(r.val)
		if err != nil {
			t.Fatal(err)
		}
		if issue {
			want[string(appendIssueKey(nil, app, r.ts, r.id)[len(head):])] = r.val
		}
	}
	checkIssueCopies(t, db, head, want)
	return rows
}

// TestSettleAgainstNewestCopy: rows written three times with other side keys (an issue type,
// a session, a walk event) keep, once settled, the side keys of their newest copy, whether the
// suspects settle after all three writes or between them.
func TestSettleAgainstNewestCopy(t *testing.T) {
	sessions := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	issue := func(e *model.Event) {
		e.Type, e.Facts = "exception", model.EventFacts{GroupID: genGroups[0], Fatal: true,
			Issue: model.IssueDisplay{Type: "java.lang.X", Message: "m", Severity: "fatal"}}
	}
	plain := func(e *model.Event) { e.Type, e.Facts = "custom", model.EventFacts{} }
	screen := func(name string) func(e *model.Event) {
		return func(e *model.Event) { e.Type, e.Facts = "screen_view", model.EventFacts{Screen: name} }
	}
	in := func(i int) func(e *model.Event) {
		return func(e *model.Event) { e.SessionID = sessions[i] }
	}
	both := func(a, b func(e *model.Event)) func(e *model.Event) {
		return func(e *model.Event) { a(e); b(e) }
	}
	for _, c := range []struct {
		name   string
		copies [3]func(e *model.Event)
	}{
		{"issue, plain, issue", [3]func(*model.Event){issue, plain, issue}},
		{"plain, issue, plain", [3]func(*model.Event){plain, issue, plain}},
		{"issue, issue, plain", [3]func(*model.Event){issue, issue, plain}},
		{"session 0, 1, 0", [3]func(*model.Event){both(screen("A"), in(0)), both(screen("B"), in(1)), both(screen("C"), in(0))}},
		{"session 0, 1, 1", [3]func(*model.Event){both(screen("A"), in(0)), both(screen("B"), in(1)), both(screen("C"), in(1))}},
		{"session 0, 1, 2", [3]func(*model.Event){both(screen("A"), in(0)), both(screen("B"), in(1)), both(screen("C"), in(2))}},
		{"walk, plain, walk", [3]func(*model.Event){both(screen("A"), in(0)), both(plain, in(1)), both(screen("C"), in(0))}},
		{"walk, issue, plain", [3]func(*model.Event){both(screen("A"), in(2)), both(issue, in(1)), both(plain, in(0))}},
	} {
		for _, between := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/settled between=%v", c.name, between), func(t *testing.T) {
				db := memDB(t)
				s := blockStore(t, db, 0)
				app := uuid.New()
				base := genEvents(3, app, 400, genBase, sessions)
				writeEvents(t, s, base)
				filterReady(t, s)
				for k, change := range c.copies {
					var batch []model.Event
					for i := range base {
						if i%3 != 0 { // a third of the rows is left as written
							e := base[i]
							change(&e)
							e.Attribute.AppVersion = fmt.Sprint("copy ", k)
							batch = append(batch, e)
						}
					}
					writeEvents(t, s, batch)
					if between {
						if err := s.settleAll(context.Background()); err != nil {
							t.Fatal(err)
						}
					}
				}
				if rows := checkBlocksConsistent(t, db, s, app); len(rows) != len(base) {
					t.Fatalf("%d rows, want %d", len(rows), len(base))
				}
				checkJourney(t, s, app, c.name)
			})
		}
	}
}

// TestJourneyRewritesInBlocks is TestJourneyRewrites over the block layout, its suspects
// settled after each write.
func TestJourneyRewritesInBlocks(t *testing.T) {
	db := memDB(t)
	s := blockStore(t, db, 0)
	journeyRewrites(t, s, func() {
		if err := s.settleAll(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRetentionSettlesSuspects: retention that meets a bucket with suspects not yet settled
// settles them before it takes the bucket, so a row written twice is subtracted once more, in
// whole buckets and in the bucket it cuts, and a copy written during retention (after its
// reads) stays counted once.
func TestRetentionSettlesSuspects(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		cut  int64 // after genBase
		// during: copies of every row written between retention's reads and its commit, then
		// settled there too (a transaction of retention then reads every bucket)
		during bool
	}{
		{"all", 41 * int64(time.Second), false},
		{"a cut inside a bucket", 20*int64(time.Second) + 500*int64(time.Millisecond), false},
		{"copies written and settled during retention", 20*int64(time.Second) + 500*int64(time.Millisecond), true},
		{"all, copies written and settled during retention", 41 * int64(time.Second), true},
		{"before all", -int64(time.Second), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := smallDB(t) // retention takes several transactions
			if c.during {
				db = memDB(t) // one
			}
			s := blockStore(t, db, 0)
			app := uuid.New()
			sessions := []uuid.UUID{uuid.New(), uuid.New()}
			base := genEvents(5, app, 1500, genBase, sessions)
			for i := range base { // times within their second, so the cut falls inside a bucket
				base[i].Timestamp += int64(i%1000) * int64(time.Millisecond)
				if c.during {
					// Rows whose copies share no key retention reads (walks, bug report
					// entries), so that nothing but the bucket's guard makes it conflict.
					base[i].Type, base[i].Facts = "custom", model.EventFacts{}
					if i%3 == 0 { // handled: an issue row, and no walk event
						base[i].Type, base[i].Facts = "exception", model.EventFacts{GroupID: genGroups[0],
							Issue: model.IssueDisplay{Type: "java.lang.X", Message: "m", Severity: "handled"}}
					}
				}
			}
			writeEvents(t, s, base)
			filterReady(t, s)
			again := make([]model.Event, len(base))
			for i := range base {
				again[i] = base[i]
				again[i].SessionID = sessions[(i+1)%2]
				if i%2 == 0 {
					again[i].Type, again[i].Facts = "custom", model.EventFacts{}
				}
			}
			writeEvents(t, s, again)
			if u := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagSuspects, app)); u == 0 {
				t.Fatal("no suspects before retention: the test checks nothing")
			}
			hooked := 0
			if c.during {
				testHookBeforeDeleteCommit = func() {
					if hooked++; hooked == 1 {
						writeEvents(t, s, base)
						if err := s.settleApp(ctx, app); err != nil {
							t.Error(err)
						}
					}
				}
				defer func() { testHookBeforeDeleteCommit = nil }()
			}
			if err := s.DeleteBefore(ctx, app, time.Unix(0, genBase+c.cut)); err != nil {
				t.Fatal(err)
			}
			if c.during && hooked == 0 {
				t.Fatal("retention's hook never ran: no copy was written during it")
			}
			want := 0
			for _, e := range base {
				if e.Timestamp >= genBase+c.cut {
					want++
				}
			}
			if rows := checkBlocksConsistent(t, db, s, app); len(rows) != want {
				t.Fatalf("%d rows left, want %d", len(rows), want)
			}
			checkJourneyIfAny(t, s, app)
		})
	}
}

// checkJourneyIfAny is checkJourney for a store that may hold no walk event any more.
func checkJourneyIfAny(t *testing.T, s *Store, app uuid.UUID) {
	t.Helper()
	if len(factSet(t, walked(s), app, minTime, 1<<62)) == 0 {
		if got := factSet(t, s.JourneyFacts, app, minTime, 1<<62); len(got) != 0 {
			t.Fatalf("no walk event stored, yet %d journey facts: %q", len(got), got)
		}
		return
	}
	checkJourney(t, s, app, "after retention")
}

// TestSettleConcurrently: settles, Count, retention and the background settler running at
// once over the same suspects, while writers add more, all succeed (a suspects key another
// settled meanwhile is settled), and leave the store exact.
func TestSettleConcurrently(t *testing.T) {
	ctx := context.Background()
	db := smallDB(t)
	s := blockStore(t, db, time.Millisecond)
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	base := genEvents(7, app, 2000, genBase, sessions)
	writeEvents(t, s, base)
	filterReady(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	run := func(fn func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for w := 0; w < 2; w++ {
		r := rand.New(rand.NewPCG(uint64(w), 9))
		run(func(i int) error {
			batch := make([]model.Event, 0, 200)
			for range 200 {
				e := base[r.IntN(len(base))]
				e.SessionID = sessions[r.IntN(len(sessions))]
				if r.IntN(2) == 0 {
					e.Type, e.Facts = "custom", model.EventFacts{}
				}
				batch = append(batch, e)
			}
			return s.WriteEvents(ctx, batch)
		})
	}
	run(func(int) error { return s.settleAll(ctx) })
	run(func(int) error { return s.settleApp(ctx, app) })
	run(func(int) error { _, _, err := s.Count(ctx, app); return err })
	run(func(i int) error {
		return s.DeleteBefore(ctx, app, time.Unix(0, genBase+int64(i/4)*int64(time.Second)))
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkBlocksConsistent(t, db, s, app)
	checkJourneyIfAny(t, s, app)
}

// TestSettleDamagedSuspects: a suspects key that cannot be read (a value that is no id block,
// a key of the wrong length) is dropped and logged, and Count and retention go on; one that
// names a row no block holds settles to nothing; one already settled is settled.
func TestSettleDamagedSuspects(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		key  func(app uuid.UUID) []byte
		val  []byte
	}{
		{"value", func(app uuid.UUID) []byte {
			return appendBlockKey(nil, tagSuspects, app, bucketOf(genBase), 1, 0)
		}, []byte("not an id block")},
		{"key", func(app uuid.UUID) []byte {
			return append(appendBlockKey(nil, tagSuspects, app, bucketOf(genBase), 1, 0), 7)
		}, nil},
		{"a row no block holds", func(app uuid.UUID) []byte {
			return appendBlockKey(nil, tagSuspects, app, bucketOf(genBase), math.MaxUint64, 0)
		}, encodeIDs(nil, bucketOf(genBase), []blockRow{{ts: genBase, id: make([]byte, 16)}})},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := memDB(t)
			s := blockStore(t, db, 0)
			var logged bytes.Buffer
			s.SetLogger(slogTo(&logged))
			app := uuid.New()
			base := genEvents(11, app, 300, genBase, []uuid.UUID{uuid.New()})
			writeEvents(t, s, base)
			filterReady(t, s)
			writeEvents(t, s, base[:150]) // sound suspects beside the damaged one
			if err := db.Update(func(txn *badger.Txn) error { return txn.Set(c.key(app), c.val) }); err != nil {
				t.Fatal(err)
			}
			checkCount(t, s, app, len(base), "with a damaged suspects key")
			if c.name != "a row no block holds" && !bytes.Contains(logged.Bytes(), []byte("damaged suspects key")) {
				t.Fatalf("the damaged key was not logged: %q", logged.String())
			}
			if u := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagSuspects, app)); u != 0 {
				t.Fatalf("%d suspects keys left", u)
			}
			// And once more, met by retention rather than Count.
			if err := db.Update(func(txn *badger.Txn) error { return txn.Set(c.key(app), c.val) }); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteBefore(ctx, app, time.Unix(0, genBase+20*int64(time.Second))); err != nil {
				t.Fatal(err)
			}
			checkBlocksConsistent(t, db, s, app)
		})
	}
	t.Run("gone", func(t *testing.T) {
		s := blockStore(t, memDB(t), 0)
		if _, err := s.trySettle([][]byte{appendBlockKey(nil, tagSuspects, uuid.New(), 0, 1, 0)}); err != nil {
			t.Fatalf("a suspects key settled by another: %v", err)
		}
	})
}

// TestBlockWriteCharges: a write whose blocks stay in the LSM tree (every value of an
// in-memory database) charges their bytes, so it splits into transactions Badger takes
// instead of failing with ErrTxnTooBig.
func TestBlockWriteCharges(t *testing.T) {
	db := memDB(t) // 16 MB memtables: a transaction holds about 2.4 MB
	s := blockStore(t, db, 0)
	app := uuid.New()
	evs := genEvents(13, app, 3000, genBase, []uuid.UUID{uuid.New()})
	r := rand.New(rand.NewPCG(1, 1))
	for i := range evs {
		b := make([]byte, 3000) // incompressible: 9 MB of values in all
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		evs[i].Attribute.DeviceName = string(b)
	}
	rows := make([]row, len(evs))
	encodeEventRows(rows, nil, evs)
	rows = lastOfEach(rows)
	s.ids.Ensure(db)
	for done, txns := 0, 1; done < len(rows); txns++ {
		n, err := s.tryCommitBlocks(rows[done:])
		if err != nil {
			t.Fatalf("transaction %d, from row %d of %d: %v", txns, done, len(rows), err)
		}
		if done += n; done < len(rows) && txns > 10 {
			t.Fatalf("%d transactions for 9 MB", txns)
		}
	}
	checkCount(t, s, app, len(evs), "after the write")
}

// slogTo is a logger that writes text to w.
func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// TestBlocksOverRowKeys: a store of row keys that starts writing blocks settles the rows it
// writes again against their row keys: each is counted once, its row key goes (the block
// overrules it), and its side keys follow the block's copy.
func TestBlocksOverRowKeys(t *testing.T) {
	db := memDB(t)
	old := New(db)
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New()}
	base := genEvents(17, app, 600, genBase, sessions)
	writeEvents(t, old, base)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	s := blockStore(t, db, 0)
	s.ids.Ensure(db)
	filterReady(t, s)
	var again []model.Event
	for i := range base {
		if i%2 == 0 {
			e := base[i]
			e.SessionID = sessions[(i/2)%2]
			if i%4 == 0 {
				e.Type, e.Facts = "custom", model.EventFacts{}
			}
			again = append(again, e)
		}
	}
	writeEvents(t, s, again)
	if rows := checkBlocksConsistent(t, db, s, app); len(rows) != len(base) {
		t.Fatalf("%d rows, want %d", len(rows), len(base))
	}
	if n := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagRow, app)); n != len(base)-len(again) {
		t.Fatalf("%d row keys left, want %d (those not written again)", n, len(base)-len(again))
	}
	checkJourney(t, s, app, "rewritten in blocks")
}

// TestBackgroundSettler: suspects settle in the background, soon after the write that named
// them, with no Count or retention to ask: a row written again as another type leaves the
// issue index without a reader's help.
func TestBackgroundSettler(t *testing.T) {
	db := memDB(t)
	s := blockStore(t, db, 10*time.Millisecond)
	app := uuid.New()
	base := genEvents(19, app, 500, genBase, []uuid.UUID{uuid.New()})
	writeEvents(t, s, base)
	filterReady(t, s)
	issues := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagIssue, app))
	if issues == 0 {
		t.Fatal("no issue rows: the test checks nothing")
	}
	again := make([]model.Event, len(base))
	for i := range base {
		again[i] = base[i]
		again[i].Type, again[i].Facts = "custom", model.EventFacts{}
	}
	writeEvents(t, s, again)
	head := appendHead(nil, badgerdb.PrefixEvents, tagSuspects, app)
	for deadline := time.Now().Add(10 * time.Second); countKeys(t, db, head) > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("suspects not settled in the background within 10 s")
		}
	}
	if n := countKeys(t, db, appendHead(nil, badgerdb.PrefixEvents, tagIssue, app)); n != 0 {
		t.Fatalf("%d issue copies left of rows no longer issues (%d before)", n, issues)
	}
	checkBlocksConsistent(t, db, s, app)
}

// TestSettleKeepsKeysOnSharedDamage: damage in what a settle's keys share (a walk it edits)
// fails the settle and keeps the keys, rather than dropping a sound one as if it were damaged.
func TestSettleKeepsKeysOnSharedDamage(t *testing.T) {
	db := memDB(t)
	s := blockStore(t, db, 0)
	app := uuid.New()
	sessions := []uuid.UUID{uuid.New(), uuid.New()}
	base := genEvents(23, app, 300, genBase, sessions[:1])
	writeEvents(t, s, base)
	filterReady(t, s)
	again := make([]model.Event, len(base))
	for i := range base {
		again[i] = base[i]
		again[i].SessionID = sessions[1] // every walk step leaves the first session
	}
	writeEvents(t, s, again)
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set(walkKey(app, sessions[0]), []byte{0xff, 0xff}) }); err != nil {
		t.Fatal(err)
	}
	head := appendHead(nil, badgerdb.PrefixEvents, tagSuspects, app)
	before := countKeys(t, db, head)
	if before == 0 {
		t.Fatal("no suspects: the test checks nothing")
	}
	if err := s.settleApp(context.Background(), app); err == nil {
		t.Fatal("a settle that edits a damaged walk succeeded")
	}
	if after := countKeys(t, db, head); after != before {
		t.Fatalf("%d suspects keys left of %d: sound keys were dropped for a damaged walk", after, before)
	}
}
