// Package badgerevents is the embedded sinks.EventStore: events and spans in the node's shared
// Badger database (sinks/badgerdb) under badgerdb.PrefixEvents and badgerdb.PrefixSpans.
//
// Key layout (P is the table's prefix, "ev/" or "sp/"; app ids are 16 raw bytes):
//
//	P r <app> <time 8B> <id>  → the row         time-ordered per app, for later range scans
//	P i <app> <id>            → <time 8B>       point index: bug reports only (see below)
//	P c <app> <16B random>    → uvarint delta   rows added, summed by Count
//	P d <app> <16B random>    → uvarint delta   rows deleted (DeleteBefore), subtracted by Count
//	ev/ x <app> <time 8B> <id> → the row        issue index: a copy of each exception and anr row
//	ev/ m issue-index v1       → empty          marker: every issue row has its copy
//	ev/ w <app> <session>      → walk steps     a session's walk events (journey.go)
//	ev/ j <app> <day 8B> <session> → facts      the journey facts of a session's day
//	ev/ m journey v1           → empty          marker: every walk event has its step
//	ev/ D <app> <day 8B>       → empty          the day's facts changed (its version says when)
//	ev/ S <app> <day 8B>       → summed facts   a day's facts summed over sessions (journeydays.go)
//	ev/ X <app> <day 8B>       → empty          the day's issue index rows changed
//	ev/ G <app> <day 8B>       → issue cells    a day's issue rows summed into cells (issuedays.go)
//	ev/ b <app> <bucket 8B> <seq 8B> <part 2B> → data block   rows of a second, compressed (block.go)
//	ev/ B <app> <bucket 8B> <seq 8B> <part 2B> → id block     the data block's times and ids
//	ev/ u <app> <bucket 8B> <seq 8B> <part 2B> → suspects     its rows maybe stored before (blockwrite.go)
//	ev/ g <app> <bucket 8B>    → empty          a write named suspects in the bucket (retention reads it)
//	ev/ m blocks v1            → empty          marker: event rows are written in blocks
//
// Event rows are written in blocks (docs/event-blocks.md) once a store used them (UseBlocks);
// readers merge blocks with row keys, so a store of row keys needs no migration.
//
// The issue index exists because issue queries (the crash and ANR group lists, their events,
// distributions, filter values and paths) need only exception and anr rows, about 1% of real
// traffic: scanning all rows of a window to skip the other 99% made a group list over 1M events
// take seconds. Each copy is a whole row value, so the same decoder reads both ranges, and it is
// written, moved and deleted in the transaction that writes, moves or deletes its row; Count and
// Usage never read it. Stores written before the index have no marker: the index is built from
// their rows once (Open, or the first issue query; see index.go), and until then issue queries
// read all rows as before.
//
// The one-byte tags keep the kinds apart whatever bytes an app id starts with. Times are
// big-endian with the sign bit flipped so negative times sort before positive ones. Event ids
// are 16 raw bytes, span ids their string bytes (the last part of the key, so any length works).
//
// A row is identified by its key: the app, its time and its id. Idempotency and exact counts:
// each write transaction reads the row keys it writes (a point read; skipped for a key the
// Store's key filter, a badgerdb.KeyFilter, has never seen), writes only the deltas of rows
// that are new, and commits under Badger's serializable snapshot isolation. Writes run one at a
// time (Store.writing): the filter tells the first writer of a new key that it is new, and that
// writer does not read it, so two writers of one new key at once could both count it.
// Retention, the other writer, adds no rows; a write that rewrites a row retention read
// conflicts with it, and one of the two retries and sees the other's commit.
//
// A row written again at its own time overwrites itself (the last write wins); that is what SDK
// retries and the spool's replays send. The same id at another time is another row, as in
// ClickHouse, whose sorting key holds the time too. (It holds the type as well: there, the same
// id and time with another type is a second row, here it overwrites the first. ClickHouse's
// Count, uniqExact of ids, counts an id once; this one counts rows.) SDKs send each event once,
// at the time it happened.
//
// Point index: Event, BugReport and Span find a row by its id alone. Bug reports, which the
// dashboard reads that way (BugReport), have an entry naming the newest bug report row of the
// id (one point read, then the row), unless the id was used by another type too: a row
// rewritten at its time as another type, or a newer row of another type that an earlier release
// indexed, keeps the entry, and BugReport then answers not found (ClickHouse would find the
// report). SDKs never reuse an id. Event and Span find any other id by a keys-only scan of
// the app's rows (and id blocks), newest first; BugReport never scans the app's rows: it reads
// the entry, then the blocks of the second it names (none until writes make blocks,
// docs/event-blocks.md) and the row key. Earlier releases gave every row an
// entry, which each write read and wrote: with its random keys, that was about 40 % of a
// write's CPU (BenchmarkWriteCopies, docs/benchmarks.md). Stores they wrote keep their entries,
// which the reads use, and retention deletes with their rows.
//
// Count deltas go to fresh random keys rather than one counter per app: writers never conflict
// on the count, and Count sums the app's delta keys (one per committed transaction that added
// rows; it folds them into one once there are many). Deletions record their own deltas under
// another tag rather than a signed value, so the uvarint deltas written before deletion existed
// still decode as they are.
//
// Retention (DeleteBefore) walks the app's time-ordered rows up to the cut and deletes each row
// with its point index entry if the entry names it or is damaged (an earlier release's store
// has one for every row; a bug report's names the newest bug report row of its id; a damaged
// entry goes with any row of its id, and a newer bug report row of the id is then found by
// Event's scan, not by BugReport, until that newest row is written again); the walk reads every
// row it deletes, so a writer that rewrites one of them concurrently conflicts with it and one
// of the two retries. Usage walks the rows of [from, to) month by month. See retention.go.
package badgerevents

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// Store is the Badger EventStore. It does not own the DB.
type Store struct {
	db      *badger.DB
	index   backfill // the issue index
	journey backfill // journey facts (journey.go)
	// ids knows which row keys it may have stored, so that a write skips reading a row key
	// never seen: that read was a quarter of a write's time (BenchmarkWriteCopies: 100k →
	// 134k rows/s without it, when it read the id index).
	ids *badgerdb.KeyFilter
	// spare is the last write's scratch, kept for the next one (see scratch).
	spare atomic.Pointer[scratch]
	// vt is the database's value threshold, for entrySize.
	vt int64
	// blocks says that event rows are written in blocks (blockwrite.go); seq numbers them.
	blocks atomic.Bool
	seqMu  sync.Mutex
	seq    *badger.Sequence
	// blockBufs is the scratch of the writes of blocks, used under writing (blockwrite.go).
	blockBufs blockBufs
	// settler settles the blocks' suspects in the background (blockwrite.go).
	settler settler
	// log takes what the store reports on its own (a damaged key it passed over); unset:
	// slog.Default(). Atomic: the settler may log as soon as New returns.
	log atomic.Pointer[slog.Logger]
	// writing is held by each write, so that writes of rows run one at a time: the key filter
	// tells the first writer of a new key that it is new, and that writer does not read the key,
	// so a second writer of the same key committing first would count the row twice. The node
	// writes rows from one flusher, so this costs it nothing.
	writing sync.Mutex
}

var (
	_ sinks.EventStore = (*Store)(nil)
	_ sinks.Idler      = (*Store)(nil)
)

// New returns a store over the node's shared database. While it is open it must be the only
// writer of the database's event and span rows (its key filter knows only the row keys present
// when it started and those it wrote), and it is closed before the database. A store written before
// the issue index or journey facts gets each built by the first query that reads it (which
// other queries do not wait for: they read all rows meanwhile); Open builds both before it
// returns.
func New(db *badger.DB) *Store { return newStore(db, settleDelay) }

// newStore is New with the background settler's wait (tests make it long, to settle
// suspects when they choose). A store of blocks that holds suspects from before (a crash,
// a Close) gets them settled at once.
func newStore(db *badger.DB, delay time.Duration) *Store {
	s := &Store{db: db, vt: db.Opts().ValueThreshold, ids: badgerdb.NewKeyFilter(idFilterMinWords,
		append([]byte(badgerdb.PrefixEvents), tagRow), append([]byte(badgerdb.PrefixSpans), tagRow))}
	s.ids.Expand(append([]byte(badgerdb.PrefixEvents), tagBlockIDs), blockRowKeys)
	s.blocks.Store(usesBlocks(db))
	s.settler.delay, s.settler.log = delay, s.logger
	s.index.marker, s.index.try = issueMarker, (*Store).tryIndexIssues
	s.journey.marker, s.journey.try = journeyMarker, (*Store).tryJourney
	if s.blocks.Load() && hasSuspects(db) {
		s.settler.poke(s.settleAll)
	}
	return s
}

// idFilterMinWords is the smallest key filter; tests make it small to see it rebuilt.
var idFilterMinWords = badgerdb.KeyFilterMinWords

const (
	tagRow   = 'r'
	tagIdx   = 'i'
	tagCount = 'c'
	tagDel   = 'd'
	tagIssue = 'x' // events only: the issue index
	// maxConflictRetries bounds retries of one transaction that lost a race with a concurrent
	// writer of the same ids; each retry reads a newer snapshot, so a handful suffices.
	maxConflictRetries = 50
	// foldAt is how many count deltas of an app Count tolerates before folding them into one.
	foldAt = 256
)

// row is one encoded event or span, ready to write.
type row struct {
	app   uuid.UUID
	ts    int64
	id    []byte // 16 bytes of an event id, or a span id's bytes
	val   []byte
	issue bool // an event of an issue type: the row has a copy in the issue index
	point bool // a bug report: the row has a point index entry (BugReport reads it by id alone)
	// Events only: the row's session and, when walk is set, its walk step (journey.go).
	session uuid.UUID
	walk    bool
	step    walkStep
}

func putTime(b []byte, ts int64) { binary.BigEndian.PutUint64(b, uint64(ts)^(1<<63)) }
func getTime(b []byte) int64     { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

func appendHead(b []byte, prefix string, tag byte, app uuid.UUID) []byte {
	b = append(b, prefix...)
	b = append(b, tag)
	return append(b, app[:]...)
}

func appendRowKey(b []byte, prefix string, app uuid.UUID, ts int64, id []byte) []byte {
	return appendTimeKey(b, prefix, tagRow, app, ts, id)
}

// appendIssueKey is the key of an event row's copy in the issue index.
func appendIssueKey(b []byte, app uuid.UUID, ts int64, id []byte) []byte {
	return appendTimeKey(b, badgerdb.PrefixEvents, tagIssue, app, ts, id)
}

// appendTimeKey is a key of a time-ordered range: rows (tagRow) or the issue index (tagIssue).
func appendTimeKey(b []byte, prefix string, tag byte, app uuid.UUID, ts int64, id []byte) []byte {
	b = appendHead(b, prefix, tag, app)
	var t [8]byte
	putTime(t[:], ts)
	b = append(b, t[:]...)
	return append(b, id...)
}

func appendIdxKey(b []byte, prefix string, app uuid.UUID, id []byte) []byte {
	return append(appendHead(b, prefix, tagIdx, app), id...)
}

// scratch is a write's rows and the arena of their ids and values, kept for the next write:
// made anew, they were a tenth of an embedded node's allocated bytes flat out. Badger has
// copied what it keeps of them (into its memtable or value log) once Commit returned.
//
// The Store keeps one (spare) rather than a sync.Pool, which empties at every other
// collection: flat out the collector ran more often than the flusher wrote, and every write
// allocated, cleared and grew a new arena of tens of MB (3 % of the embedded node's CPU in its
// flat-out profile). The spare holds at most spareMax bytes of arena and as many rows as fill
// it, about what a flush of 50,000 rows needs (the node's default for this store is 10,000). It shrinks once shrinkAfter
// writes in a row needed less than a quarter of it, and Idle drops it.
type scratch struct {
	rows  []row
	arena []byte
	small int // writes in a row that needed less than a quarter of the arena
}

const (
	// spareMax bounds the arena the Store keeps between writes, and so its rows: getScratch
	// gives n rows an arena of at least n*arenaPerRow bytes.
	spareMax = 64 << 20
	// arenaPerRow is the arena room a write starts with per row: a little above a recorded
	// event's encoded size with its id.
	arenaPerRow = 640
	// shrinkAfter is how many small writes in a row make the spare shrink to their size: flat
	// out, flushes of a few hundred rows come between flushes of tens of thousands, and a
	// lower load keeps writing small ones about once a second.
	shrinkAfter = 8
)

// getScratch returns n empty rows and an arena with room for about n values: the spare, when
// no other write holds it, else a new one.
func (s *Store) getScratch(n int) *scratch {
	sc := s.spare.Swap(nil)
	need := n * arenaPerRow
	if sc == nil {
		sc = new(scratch)
	} else if need*4 >= cap(sc.arena) {
		sc.small = 0
	} else if sc.small++; sc.small >= shrinkAfter {
		sc = new(scratch)
	}
	if cap(sc.rows) < n {
		sc.rows = make([]row, n) // no copy of the old rows, unlike growing them
	}
	sc.rows = sc.rows[:n]
	if cap(sc.arena) < need {
		sc.arena = make([]byte, 0, need)
	}
	sc.arena = sc.arena[:0]
	return sc
}

// putScratch keeps sc as the spare unless it is larger than a flush of the node's needs.
func (s *Store) putScratch(sc *scratch) {
	if cap(sc.arena) > spareMax {
		return
	}
	clear(sc.rows) // no row keeps a session's walk step (its strings) alive
	s.spare.Store(sc)
}

// Idle drops the spare scratch; see sinks.Idler. A write in flight keeps its scratch as the
// next spare.
func (s *Store) Idle() { s.spare.Store(nil) }

// WriteEvents stores events; see sinks.EventStore.
func (s *Store) WriteEvents(ctx context.Context, events []model.Event) error {
	sc := s.getScratch(len(events))
	defer s.putScratch(sc)
	// One arena for all values and ids: a few allocations per call, none per row.
	rows := sc.rows
	sc.arena = encodeEventRows(rows, sc.arena, events)
	if err := s.write(ctx, badgerdb.PrefixEvents, rows); err != nil {
		return fmt.Errorf("badgerevents: write %d events: %w", len(events), err)
	}
	return nil
}

// encodeEventRows fills rows (one per event) with the events encoded into arena, which it
// returns grown.
func encodeEventRows(rows []row, arena []byte, events []model.Event) []byte {
	for i := range events {
		e := &events[i]
		start := len(arena)
		arena = append(arena, e.ID[:]...)
		arena = appendEvent(arena, e)
		b := arena[start:len(arena):len(arena)]
		rows[i] = row{app: e.AppID, ts: e.Timestamp, id: b[:16], val: b[16:], issue: isIssueType(e.Type),
			point: e.Type == model.BugReportType, session: e.SessionID}
		rows[i].step, rows[i].walk = walkStepOf(e)
	}
	return arena
}

// WriteSpans stores spans; see sinks.EventStore.
func (s *Store) WriteSpans(ctx context.Context, spans []model.Span) error {
	sc := s.getScratch(len(spans))
	defer s.putScratch(sc)
	rows, arena := sc.rows, sc.arena
	for i := range spans {
		sp := &spans[i]
		start := len(arena)
		arena = append(arena, sp.SpanID...)
		arena = appendSpan(arena, sp)
		b := arena[start:len(arena):len(arena)]
		n := len(sp.SpanID)
		rows[i] = row{app: sp.AppID, ts: sp.StartTime, id: b[:n:n], val: b[n:]}
	}
	sc.arena = arena
	if err := s.write(ctx, badgerdb.PrefixSpans, rows); err != nil {
		return fmt.Errorf("badgerevents: write %d spans: %w", len(spans), err)
	}
	return nil
}

// write commits rows in as many transactions as Badger's size limit needs, then syncs.
//
// Durability: the node's events database syncs every commit (badgerdb.OpenEvents; Badger
// groups concurrent commits into one sync), so the closing db.Sync() finds nothing left to
// write there (skipping it measured no difference). It is what makes a database opened without
// SyncWrites durable: it syncs the active memtable's log and the value log, and a memtable that
// rotated out during the call is durable once Badger flushes it to a table (usually within a
// second). A process crash loses nothing either way (the data is in the page cache); only an
// OS crash inside that window could.
func (s *Store) write(ctx context.Context, prefix string, rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	s.writing.Lock()
	defer s.writing.Unlock()
	// The layout is read under the lock, which UseBlocks takes to switch it.
	try := func(rows []row) (int, error) { return s.tryCommit(prefix, rows) }
	if prefix == badgerdb.PrefixEvents && s.blocks.Load() {
		rows, try = lastOfEach(rows), s.tryCommitBlocks // blockwrite.go
	}
	s.ids.Ensure(s.db)
	for done := 0; done < len(rows); {
		n, err := s.commitSome(ctx, rows[done:], try)
		if err != nil {
			return err
		}
		done += n
	}
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// commitSome writes a prefix of rows in one transaction, retrying it when it loses a race
// with another writer, and returns how many rows it committed.
// A transaction whose journey writes (long sessions) outgrow Badger's limits is retried with
// half as many rows.
func (s *Store) commitSome(ctx context.Context, rows []row, try func([]row) (int, error)) (int, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n, err := try(rows)
		switch {
		case errors.Is(err, badger.ErrConflict) && attempt < maxConflictRetries:
			continue
		case errors.Is(err, badger.ErrTxnTooBig) && n > 1:
			rows = rows[:n/2]
			continue
		}
		return n, err
	}
}

// entrySize is what Badger charges an entry against a transaction's size limit (Txn.checkSize
// in v4: the key, its 8-byte version and 2 bytes of metadata, with the value when it stays in
// the LSM tree, else the 12-byte pointer to it in the value log), with 8 bytes to spare;
// values from threshold on go to the value log (the database's ValueThreshold). Counting the
// whole value of a row that goes to the value log, as an earlier bound did, cut a 10,000-row
// write into three transactions, each with its syncs, where one fits.
func entrySize(k, v int, threshold int64) int64 {
	if int64(v) >= threshold {
		v = 12
	}
	return int64(k + v + 2 + 10 + 8)
}

func (s *Store) tryCommit(prefix string, rows []row) (int, error) {
	s.ids.Hold() // from the first id the filter takes to the commit (badgerdb.KeyFilter)
	defer s.ids.Release()
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	maxCount, maxSize := s.writeLimits()
	var count, size int64
	var deltas []appDelta
	var marks dayMarks // the days whose issue index rows change (issuedays.go)
	mark := func(app uuid.UUID, ts int64) {
		if marks.add(app, model.DayStart(ts)) {
			count, size = count+1, size+markSize
		}
	}
	var edits journeyEdits // made at the first walk event or rewrite
	edit := func(session uuid.UUID, app uuid.UUID) *journeyEdit {
		if edits == nil {
			edits = journeyEdits{}
		}
		return edits.of(app, session)
	}
	// Keys and index values must stay untouched until Commit; they live in one arena.
	keys := make([]byte, 0, min(len(rows), 4096)*(len(prefix)+1+16+8+16+8))
	n := 0
	for ; n < len(rows); n++ {
		r := &rows[n]
		rkLen := len(prefix) + 1 + 16 + 8 + len(r.id) // row and issue keys alike
		// Worst case per row: set the row, and for events delete the stored row's issue copy;
		// an issue row adds its own copy, a bug report its point index entry.
		need, cnt := entrySize(rkLen, len(r.val), s.vt), int64(1)
		if prefix == badgerdb.PrefixEvents {
			need, cnt = need+entrySize(rkLen, 0, s.vt), cnt+1
		}
		sn, sc := s.sideCost(r, rkLen)
		need, cnt = need+sn, cnt+sc
		if n > 0 && (count+cnt > maxCount || size+need > maxSize) {
			break
		}
		count, size = count+cnt, size+need

		start := len(keys)
		keys = appendRowKey(keys, prefix, r.app, r.ts, r.id)
		rk := keys[start:len(keys):len(keys)]
		var item *badger.Item
		err := badger.ErrKeyNotFound
		if !s.ids.Add(rk) { // it may be stored: read it
			item, err = txn.Get(rk)
		}
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
			deltas = addDelta(deltas, r.app)
			if r.walk {
				ed := edit(r.session, r.app)
				ed.add = append(ed.add, r.step)
			}
		case err != nil:
			return 0, err
		case prefix == badgerdb.PrefixEvents:
			// Stored before: overwritten in place (the last write wins).
			if err := rewriteSteps(item, r, edit); err != nil {
				return 0, err
			}
			if !r.issue {
				var had bool
				if keys, had, err = deleteIssueCopy(txn, keys, r.app, r.ts, r.id); err != nil {
					return 0, err
				}
				if had {
					mark(r.app, r.ts)
				}
			}
		}
		if err := txn.Set(rk, r.val); err != nil {
			return 0, err
		}
		if keys, err = setSideKeys(txn, keys, prefix, r, rk, mark); err != nil {
			return 0, err
		}
	}
	return endWrite(txn, prefix, n, marks, deltas, edits)
}

// writeLimits are the entries and bytes a write's transaction stays within: 90 % of Badger's
// limits, less a reserve for the delta keys and the day marks of the last row (counted after
// it).
func (s *Store) writeLimits() (maxCount, maxSize int64) {
	return s.db.MaxBatchCount()*9/10 - 16 - 2, s.db.MaxBatchSize()*9/10 - 16*64 - 2*markSize
}

// endWrite writes what a write's rows changed besides themselves (the issue days' marks, the
// count deltas, the journey edits) and commits; n is the rows written, returned with an error
// of the journey's edits so that the caller can retry with fewer (ErrTxnTooBig).
func endWrite(txn *badger.Txn, prefix string, n int, marks dayMarks, deltas []appDelta, edits journeyEdits) (int, error) {
	if err := marks.write(txn, issueDays); err != nil {
		return 0, err
	}
	for _, d := range deltas {
		if err := txn.Set(countKey(prefix, tagCount, d.app), binary.AppendUvarint(nil, uint64(d.n))); err != nil {
			return 0, err
		}
	}
	if err := applyJourney(txn, edits); err != nil {
		return n, err
	}
	return n, txn.Commit()
}

// sideCost is what a row's own index keys cost a transaction: its issue copy and its bug
// report entry (rkLen: its row key's length).
func (s *Store) sideCost(r *row, rkLen int) (need, cnt int64) {
	if r.issue {
		need, cnt = need+entrySize(rkLen, len(r.val), s.vt), cnt+1
	}
	if r.point {
		need, cnt = need+entrySize(rkLen-8, 8, s.vt), cnt+1
	}
	return need, cnt
}

// setSideKeys sets a written row's own index keys: its bug report entry (setPointEntry) and its
// issue copy, whose day it marks. rk is its row key; the keys go to keys, which it returns.
func setSideKeys(txn *badger.Txn, keys []byte, prefix string, r *row, rk []byte, mark func(uuid.UUID, int64)) ([]byte, error) {
	var err error
	if r.point {
		if keys, err = setPointEntry(txn, keys, prefix, r, rk); err != nil {
			return keys, err
		}
	}
	if r.issue {
		start := len(keys)
		keys = appendIssueKey(keys, r.app, r.ts, r.id)
		if err := txn.Set(keys[start:len(keys):len(keys)], r.val); err != nil {
			return keys, err
		}
		mark(r.app, r.ts)
	}
	return keys, nil
}

// setPointEntry sets the point index entry of bug report r (row key rk) to name its row, unless
// it names a newer row of the id already: the entry names the newest, so retention, which
// deletes the oldest rows first and an entry only with the row it names, never leaves a bug
// report without one. A damaged entry is overwritten to name the id's newest bug report row
// (newerBugReport). The key and value go to keys, which it returns.
func setPointEntry(txn *badger.Txn, keys []byte, prefix string, r *row, rk []byte) ([]byte, error) {
	start := len(keys)
	keys = appendIdxKey(keys, prefix, r.app, r.id)
	ik := keys[start:len(keys):len(keys)]
	when := rk[len(rk)-len(r.id)-8 : len(rk)-len(r.id)] // r's time as its row key holds it
	item, err := txn.Get(ik)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
	case err != nil:
		return keys, err
	default:
		ts, whole, err := entryTime(item)
		if err != nil || whole && ts > r.ts {
			return keys, err
		}
		if !whole {
			// A damaged entry names no row: this write repairs it, naming the id's newest bug
			// report row, which may be newer than r when r is a replay.
			newest, err := newerBugReport(txn, r)
			if err != nil {
				return keys, err
			}
			var t [8]byte
			putTime(t[:], newest)
			when = t[:]
		}
	}
	keys = append(keys, when...)
	return keys, txn.Set(ik, keys[len(keys)-8:len(keys):len(keys)])
}

// newerBugReport returns the time of the newest bug report event row of r's id newer than r,
// or r's own time when there is none: it walks the app's row keys (keys only; keys of another
// length are passed over) and blocks from the newest back to r's time, reading the value of
// each row of the id on the way (rows it cannot read are passed over). Only the repair of a
// damaged entry calls it.
func newerBugReport(txn *badger.Txn, r *row) (int64, error) {
	newest := r.ts
	if r.ts == math.MaxInt64 {
		return newest, nil
	}
	w := window{lo: r.ts + 1, open: true, reverse: true}
	m := newMerged(txn, r.app, w, rowIterOpts{lenient: true}, false)
	defer m.close()
	isReport := func(ts int64, val []byte) bool {
		var e model.Event
		if decodeEvent(val, &e) == nil && e.Type == model.BugReportType {
			newest = ts
			return true
		}
		return false
	}
	err := mergeSources(context.Background(), m, func(ts int64, id []byte, item *badger.Item) (bool, error) {
		found := false
		if bytes.Equal(id, r.id) {
			_ = item.Value(func(v []byte) error { found = isReport(ts, v); return nil })
		}
		return !found, nil
	}, func(b *blockRow) (bool, error) {
		return !(bytes.Equal(b.id, r.id) && isReport(b.ts, b.val)), nil
	})
	return newest, err
}

// entryTime reads a point index entry: the time of the row it names, and whether the entry is
// whole (8 bytes). Readers refuse a damaged entry (get), writers overwrite it (setPointEntry)
// and retention deletes it with any row of its id (entryNames).
func entryTime(item *badger.Item) (ts int64, whole bool, err error) {
	err = item.Value(func(v []byte) error {
		if whole = len(v) == 8; whole {
			ts = getTime(v)
		}
		return nil
	})
	return ts, whole, err
}

// rewriteSteps records in the journey edits what overwriting the stored row item with r (same
// key) changes: the stored row's step goes (from its session) and r's step comes. A row written
// again unchanged changes nothing.
func rewriteSteps(item *badger.Item, r *row, edit func(session, app uuid.UUID) *journeyEdit) error {
	var v rowView
	same := false
	err := item.Value(func(val []byte) error {
		if same = bytes.Equal(val, r.val); same {
			return nil
		}
		st, walk, err := v.walkRow(r.ts, r.id, val)
		if err != nil {
			return rowErr(r.ts, r.id, err)
		}
		if walk {
			edit(v.e.SessionID, r.app).dropStep(st.key())
		}
		return nil
	})
	if err != nil || same {
		return err
	}
	if r.walk {
		ed := edit(r.session, r.app)
		ed.add = append(ed.add, r.step)
	}
	return nil
}

// deleteIssueCopy deletes the issue index's copy of the event row stored at ts, if it has one.
// It reads the copy rather than deleting blindly: rewriting a row that is no issue then writes
// no tombstone into the index, and the read makes a concurrent index build that copies the
// row conflict with this rewrite. The key goes to keys, which it returns, and it says whether
// there was a copy.
func deleteIssueCopy(txn *badger.Txn, keys []byte, app uuid.UUID, ts int64, id []byte) ([]byte, bool, error) {
	start := len(keys)
	keys = appendIssueKey(keys, app, ts, id)
	xk := keys[start:len(keys):len(keys)]
	if _, err := txn.Get(xk); errors.Is(err, badger.ErrKeyNotFound) {
		return keys, false, nil
	} else if err != nil {
		return keys, false, err
	}
	return keys, true, txn.Delete(xk)
}

type appDelta struct {
	app uuid.UUID
	n   int64
}

// addDelta counts one new row of app; a batch has one app or a few, so a slice beats a map.
func addDelta(ds []appDelta, app uuid.UUID) []appDelta {
	for i := range ds {
		if ds[i].app == app {
			ds[i].n++
			return ds
		}
	}
	return append(ds, appDelta{app: app, n: 1})
}

// countKey is a fresh delta key of kind tag (tagCount or tagDel): random, so concurrent
// writers never write the same one.
func countKey(prefix string, tag byte, app uuid.UUID) []byte {
	k := appendHead(make([]byte, 0, len(prefix)+1+16+16), prefix, tag, app)
	var r [16]byte
	_, _ = rand.Read(r[:]) // never fails (crypto/rand panics rather than return an error)
	return append(k, r[:]...)
}

// Event returns one stored event; see sinks.EventStore. An id without a point index entry is
// looked for by a scan of the app's row keys.
func (s *Store) Event(ctx context.Context, appID, eventID uuid.UUID) (model.Event, error) {
	e, err := s.event(ctx, appID, eventID, true)
	if err != nil {
		return model.Event{}, fmt.Errorf("badgerevents: event %s of app %s: %w", eventID, appID, err)
	}
	return e, nil
}

// BugReport returns the app's bug report with this id; see sinks.EventStore. It reads the
// point index entry and its row (rowAt), never scans the app's rows.
func (s *Store) BugReport(ctx context.Context, appID, id uuid.UUID) (model.Event, error) {
	e, err := s.event(ctx, appID, id, false)
	if err == nil && e.Type != model.BugReportType {
		err = sinks.ErrNotFound
	}
	if err != nil {
		return model.Event{}, fmt.Errorf("badgerevents: bug report %s of app %s: %w", id, appID, err)
	}
	return e, nil
}

func (s *Store) event(ctx context.Context, appID, eventID uuid.UUID, scan bool) (model.Event, error) {
	e := model.Event{ID: eventID, AppID: appID}
	err := s.get(ctx, badgerdb.PrefixEvents, appID, eventID[:], scan, func(ts int64, val []byte) error {
		e.Timestamp = ts
		return decodeEvent(val, &e)
	})
	return e, err
}

// Span returns one stored span; see sinks.EventStore. Spans have no point index entries (but
// in stores of earlier releases): a span is looked for by a scan of the app's span keys.
func (s *Store) Span(ctx context.Context, appID uuid.UUID, spanID string) (model.Span, error) {
	sp := model.Span{AppID: appID, SpanID: spanID}
	err := s.get(ctx, badgerdb.PrefixSpans, appID, []byte(spanID), true, func(ts int64, val []byte) error {
		sp.StartTime = ts
		return decodeSpan(val, &sp)
	})
	if err != nil {
		return model.Span{}, fmt.Errorf("badgerevents: span %q of app %s: %w", spanID, appID, err)
	}
	return sp, nil
}

// get reads the row of id: the one its point index entry names when it has one (bug reports,
// whose entry names the newest bug report row of the id, and every row of a store an earlier
// release wrote), else, when scan is set, the newest row of the app with the id, found by a
// scan of the app's row keys and id blocks from the newest back. An event row in blocks is
// read from its bucket (rowAt).
func (s *Store) get(ctx context.Context, prefix string, app uuid.UUID, id []byte, scan bool, fn func(ts int64, val []byte) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(appendIdxKey(nil, prefix, app, id))
		if errors.Is(err, badger.ErrKeyNotFound) {
			if !scan {
				return sinks.ErrNotFound
			}
			return scanRow(ctx, txn, prefix, app, id, fn)
		}
		if err != nil {
			return err
		}
		ts, whole, err := entryTime(item)
		if err != nil {
			return err
		}
		if !whole {
			return fmt.Errorf("%w: point index entry is not a time", errCorrupt)
		}
		// An entry is written with its row and deleted with it (retention deletes an entry only
		// with the row it names, or damaged): a missing row is damage, not a row not found.
		if prefix == badgerdb.PrefixEvents {
			err = rowAt(txn, app, ts, id, fn)
		} else if item, err = txn.Get(appendRowKey(nil, prefix, app, ts, id)); err == nil {
			err = item.Value(func(v []byte) error { return fn(ts, v) })
		}
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("index points at a missing row: %w", err)
		}
		return err
	})
}

// EventIDs calls fn with the id and time of each of the app's event rows, oldest first, from
// the row keys and the id blocks (docs/event-blocks.md), without reading the rows themselves:
// what a check of everything a store holds (the fault tests) reads instead of an Event per id,
// each of which scans. It stops when ctx ends.
func (s *Store) EventIDs(ctx context.Context, app uuid.UUID, fn func(id uuid.UUID, ts int64)) error {
	w := window{lo: minTime, open: true}
	err := s.db.View(func(txn *badger.Txn) error {
		m := newMerged(txn, app, w, rowIterOpts{ctx: ctx}, true)
		defer m.close()
		return mergeSources(ctx, m, func(ts int64, id []byte, _ *badger.Item) (bool, error) {
			fn(uuid.UUID(id), ts)
			return true, nil
		}, func(r *blockRow) (bool, error) {
			fn(uuid.UUID(r.id), r.ts)
			return true, nil
		})
	})
	if err != nil {
		return fmt.Errorf("badgerevents: event ids of app %s: %w", app, err)
	}
	return nil
}

// scanRow calls fn with the newest row of the app whose key ends with id, or returns
// sinks.ErrNotFound. It reads keys only (and id blocks), from the newest back, then the one
// row it needs; it stops when ctx ends.
func scanRow(ctx context.Context, txn *badger.Txn, prefix string, app uuid.UUID, id []byte, fn func(ts int64, val []byte) error) error {
	if prefix == badgerdb.PrefixEvents {
		ts, found, err := newestOf(ctx, txn, app, id)
		if err != nil || !found {
			return cmp.Or(err, sinks.ErrNotFound)
		}
		return rowAt(txn, app, ts, id, fn)
	}
	found := false
	err := walkBack(ctx, txn, prefix, app, id, func(ts int64, ofID bool, item *badger.Item) (bool, error) {
		if !ofID {
			return false, nil
		}
		found = true
		return true, item.Value(func(v []byte) error { return fn(ts, v) })
	})
	if err == nil && !found {
		return sinks.ErrNotFound
	}
	return err
}

// newestOf finds the time of the app's newest event row of id, in row keys (keys only; keys of
// another length are passed over) and id blocks.
func newestOf(ctx context.Context, txn *badger.Txn, app uuid.UUID, id []byte) (ts int64, found bool, err error) {
	w := window{lo: minTime, open: true, reverse: true}
	m := newMerged(txn, app, w, rowIterOpts{ctx: ctx, lenient: true}, true)
	defer m.close()
	err = mergeSources(ctx, m, func(t int64, rid []byte, _ *badger.Item) (bool, error) {
		if found = bytes.Equal(rid, id); found {
			ts = t
		}
		return !found, nil
	}, func(r *blockRow) (bool, error) {
		if found = bytes.Equal(r.id, id); found {
			ts = r.ts
		}
		return !found, nil
	})
	return ts, found, err
}

// rowAt calls fn with the app's event row of id at ts: the newest copy in its second's blocks,
// else its row key (a point read), else it returns badger.ErrKeyNotFound.
func rowAt(txn *badger.Txn, app uuid.UUID, ts int64, id []byte, fn func(ts int64, val []byte) error) error {
	w := window{lo: ts, hi: ts + 1}
	if ts == math.MaxInt64 {
		w = window{lo: ts, open: true}
	}
	blocks := newBlockSource(txn, app, w, false)
	defer blocks.close()
	for {
		b, err := blocks.peek()
		if err != nil {
			return err
		}
		if b == nil {
			break
		}
		if bytes.Equal(b.id, id) {
			return fn(b.ts, b.val)
		}
		blocks.next()
	}
	item, err := txn.Get(appendRowKey(nil, badgerdb.PrefixEvents, app, ts, id))
	if err != nil {
		return err
	}
	return item.Value(func(v []byte) error { return fn(ts, v) })
}

// walkBack walks the keys of the app's rows from the newest back (values are not read unless
// visit reads them), calling visit with each row's time, whether its key ends with id, and its
// item, until visit says done or fails. It stops when ctx ends.
func walkBack(ctx context.Context, txn *badger.Txn, prefix string, app uuid.UUID, id []byte, visit func(ts int64, ofID bool, item *badger.Item) (bool, error)) error {
	head := appendHead(nil, prefix, tagRow, app)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: head, PrefetchValues: false, Reverse: true})
	defer it.Close()
	end := append(slices.Clone(head), bytes.Repeat([]byte{0xff}, 8+len(id)+1)...)
	n := 0
	for it.Seek(end); it.Valid(); it.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		item := it.Item()
		k := item.Key()
		if len(k) < len(head)+8 {
			continue // not a row key: no time to read
		}
		ofID := len(k) == len(head)+8+len(id) && bytes.Equal(k[len(head)+8:], id)
		if done, err := visit(getTime(k[len(head):]), ofID, item); done || err != nil {
			return err
		}
	}
	return nil
}

// Count returns how many event and span rows of the app are stored. It reads one key per
// write transaction that added rows since the last fold, so its cost grows with the number of
// writes, not rows; past foldAt keys it folds them into one.
func (s *Store) Count(ctx context.Context, appID uuid.UUID) (events, spans int64, err error) {
	// Suspects settled first: a row written twice is then counted once (blockwrite.go).
	if err := s.settleApp(ctx, appID); err != nil {
		return 0, 0, err
	}
	if events, err = s.count(badgerdb.PrefixEvents, appID); err != nil {
		return 0, 0, fmt.Errorf("badgerevents: count events of app %s: %w", appID, err)
	}
	if spans, err = s.count(badgerdb.PrefixSpans, appID); err != nil {
		return 0, 0, fmt.Errorf("badgerevents: count spans of app %s: %w", appID, err)
	}
	return events, spans, nil
}

func (s *Store) count(prefix string, app uuid.UUID) (int64, error) {
	var total int64
	var keys [][]byte
	err := s.db.View(func(txn *badger.Txn) error {
		total, keys = 0, keys[:0]
		for _, tag := range [...]byte{tagCount, tagDel} {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: appendHead(nil, prefix, tag, app), PrefetchValues: false})
			for it.Rewind(); it.Valid(); it.Next() {
				item := it.Item()
				if err := item.Value(func(v []byte) error {
					d, n := binary.Uvarint(v)
					if n <= 0 {
						return errCorrupt
					}
					if tag == tagDel {
						total -= int64(d)
					} else {
						total += int64(d)
					}
					return nil
				}); err != nil {
					it.Close()
					return err
				}
				keys = append(keys, item.KeyCopy(nil))
			}
			it.Close()
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if total < 0 {
		return 0, fmt.Errorf("%w: count deltas sum to %d", errCorrupt, total)
	}
	if len(keys) >= foldAt {
		s.fold(prefix, app, keys, total)
	}
	return total, nil
}

// fold replaces an app's delta keys (added and deleted) with one holding their sum. It reads
// the keys again inside its transaction, so a concurrent fold of the same keys conflicts and
// one of them gives up; writers and deletions add new keys and never conflict with it. Failure
// only postpones the fold.
func (s *Store) fold(prefix string, app uuid.UUID, keys [][]byte, total int64) {
	_ = s.db.Update(func(txn *badger.Txn) error {
		for _, k := range keys {
			if _, err := txn.Get(k); err != nil {
				return err
			}
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return txn.Set(countKey(prefix, tagCount, app), binary.AppendUvarint(nil, uint64(total)))
	})
}

// Ping reports whether the shared database is open.
func (s *Store) Ping(ctx context.Context) error {
	if s.db.IsClosed() {
		return errors.New("badgerevents: database is closed")
	}
	return nil
}

// SetLogger sets where the store reports what it does on its own (a damaged key it passed
// over); until then, slog.Default().
func (s *Store) SetLogger(l *slog.Logger) { s.log.Store(l) }

// logger is the logger SetLogger set, or slog.Default().
func (s *Store) logger() *slog.Logger {
	if l := s.log.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// Close ends a build of the key filter under way and records that the day sums hold as kept
// (keepOrDropSums). The database is shared and its owner closes it, after the Store.
func (s *Store) Close() error {
	s.settler.close()
	s.ids.Close()
	s.seqMu.Lock()
	if s.seq != nil {
		_ = s.seq.Release() // what it leased and did not hand out is skipped at the next start
		s.seq = nil
	}
	s.seqMu.Unlock()
	if err := s.markClosed(); err != nil && !errors.Is(err, badger.ErrDBClosed) {
		return fmt.Errorf("badgerevents: close: %w", err)
	}
	return nil
}
