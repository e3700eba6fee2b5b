package badgerevents

// Writes of event rows in blocks, and the settling of suspects (docs/event-blocks.md, step 3).
// A store writes blocks once UseBlocks was called on it or on an earlier Store of its database
// (the marker); before that, it writes a key per row as it always did.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// blocksMarker says that the store writes its event rows in blocks. It is never removed: a
// store that wrote blocks goes on writing them, since a row key written later beside a block
// of the same row would be counted twice.
var blocksMarker = []byte(badgerdb.PrefixEvents + "m" + "blocks v1")

// blockSeqKey holds the lease of the blocks' sequence (badger.Sequence).
var blockSeqKey = []byte(badgerdb.PrefixEvents + "m" + "block seq")

// UseBlocks makes the store write event rows in blocks, from now on and for good (the marker
// makes later Stores of the database do so too). It waits for a write in flight, which keeps
// the layout it started with.
func (s *Store) UseBlocks() error {
	s.writing.Lock()
	defer s.writing.Unlock()
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(blocksMarker, nil) }); err != nil {
		return fmt.Errorf("badgerevents: use blocks: %w", err)
	}
	s.blocks.Store(true)
	return nil
}

// UsesBlocks says whether the store writes event rows in blocks.
func (s *Store) UsesBlocks() bool { return s.blocks.Load() }

// usesBlocks says whether the database's marker says to write blocks, read once.
func usesBlocks(db *badger.DB) bool {
	err := db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(blocksMarker)
		return err
	})
	return err == nil
}

// nextSeq returns a block seq never used before in this database (0 never is: the merge gives
// row keys seq 0).
func (s *Store) nextSeq() (uint64, error) {
	s.seqMu.Lock()
	defer s.seqMu.Unlock()
	if s.seq == nil {
		seq, err := s.db.GetSequence(blockSeqKey, 1000)
		if err != nil {
			return 0, err
		}
		s.seq = seq
	}
	for {
		n, err := s.seq.Next()
		if err != nil || n > 0 {
			return n, err
		}
	}
}

// lastOfEach sorts rows by app, time and id and keeps the last of each repeated row, as a
// write of row keys would leave it: a bucket's rows are then runs, and no row is counted twice
// within a write of blocks.
func lastOfEach(rows []row) []row {
	slices.SortStableFunc(rows, func(a, b row) int {
		if c := bytes.Compare(a.app[:], b.app[:]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ts, b.ts); c != 0 {
			return c
		}
		return bytes.Compare(a.id, b.id)
	})
	out := rows[:0]
	for i := range rows {
		if k := len(out) - 1; k >= 0 && out[k].app == rows[i].app && out[k].ts == rows[i].ts && bytes.Equal(out[k].id, rows[i].id) {
			out[k] = rows[i]
			continue
		}
		out = append(out, rows[i])
	}
	return out
}

// maxRunRows bounds the rows of one app and bucket that a transaction takes or leaves as one:
// what they cost is known only once they are encoded.
const maxRunRows = maxBlockRows

// blockBufs is the scratch of a write of blocks, kept from one transaction to the next.
type blockBufs struct {
	keys, out, raw  []byte
	group, suspects []blockRow
	parts           []blockPart
}

// blockArenaSize is about what a transaction of rows encodes into its arena at most: each
// row's value uncompressed (the encoder reserves that much before it compresses) with room for
// its id in the data, id and suspects blocks. Past it the arena grows.
func blockArenaSize(rows []row) int {
	n := 0
	for i := range rows {
		n += len(rows[i].val) + 3*(len(rows[i].id)+12)
	}
	return n + 128<<10
}

// blockPart is a block a write encoded: its rows and where its data and id blocks are in the
// write's arena.
type blockPart struct {
	rows             []blockRow
	data0, ids0, end int
}

// tryCommitBlocks writes a prefix of rows (sorted, without repeats) in one transaction: each
// run of one app and bucket as blocks under one seq, numbered by part, with the side keys a row
// key's write has (issue copies, bug report entries, walk steps, day marks, count deltas). A row
// the key filter may have seen is written like a new one, counted, and named in its block's
// suspects, which settle resolves later. It returns how many rows it wrote (or tried to, with
// ErrTxnTooBig, so that commitSome retries with fewer).
//
// A run is encoded before it is charged, so each block costs what Badger charges it: a block
// under the value threshold stays in the LSM tree with its bytes (id and suspects blocks of a
// few rows; every block of an in-memory database), a larger one costs its pointer.
func (s *Store) tryCommitBlocks(rows []row) (int, error) {
	s.ids.Hold()
	defer s.ids.Release()
	seq, err := s.nextSeq()
	if err != nil {
		return 0, err
	}
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	maxCount, maxSize := s.writeLimits()
	var count, size int64
	var deltas []appDelta
	var marks dayMarks
	mark := func(app uuid.UUID, ts int64) {
		if marks.add(app, model.DayStart(ts)) {
			count, size = count+1, size+markSize
		}
	}
	var edits journeyEdits
	const blockKeyBytes = len(badgerdb.PrefixEvents) + 1 + 16 + blockKeyLen
	// Keys and values must stay untouched until Commit: they live in arenas that only grow (a
	// reallocation leaves the earlier slices on the old array, which nothing writes again).
	// They are kept for the next transaction (under the write lock), since Badger holds them
	// only until Commit, and the values' arena is sized at once: growing it as blocks come
	// was 1.2 KB of copies a row.
	b := &s.blockBufs
	keys, out, raw, group, suspects, parts := b.keys[:0], b.out[:0], b.raw, b.group[:0], b.suspects[:0], b.parts[:0]
	if need := blockArenaSize(rows); cap(out) < need {
		out = make([]byte, 0, need)
	}
	defer func() { *b = blockBufs{keys[:0], out[:0], raw, group[:0], suspects[:0], parts[:0]} }()
	var lastApp uuid.UUID
	lastBucket, part, suspected := int64(0), uint16(0), false
	n := 0
	for n < len(rows) {
		app, bucket := rows[n].app, bucketOf(rows[n].ts)
		end := n + 1
		for end < len(rows) && end-n < maxRunRows && rows[end].app == app && bucketOf(rows[end].ts) == bucket {
			end++
		}
		if n == 0 || app != lastApp || bucket != lastBucket {
			part = 0 // the parts of one seq and bucket go on across runs
		}
		group, parts = group[:0], parts[:0]
		for i := n; i < end; i++ {
			group = append(group, blockRow{ts: rows[i].ts, id: rows[i].id, val: rows[i].val})
		}
		cutBlocks(group, func(b int64, rs []blockRow) {
			p := blockPart{rows: rs, data0: len(out)}
			out, raw = encodeBlock(out, raw, b, rs)
			p.ids0 = len(out)
			out = encodeIDs(out, b, rs)
			p.end = len(out)
			parts = append(parts, p)
		})
		// Each block: its data, its ids, and its suspects, which are at most its ids.
		var need, cnt int64
		for _, p := range parts {
			ids := entrySize(blockKeyBytes, p.end-p.ids0, s.vt)
			need, cnt = need+entrySize(blockKeyBytes, p.ids0-p.data0, s.vt)+2*ids, cnt+3
		}
		for i := n; i < end; i++ {
			sn, sc := s.sideCost(&rows[i], len(badgerdb.PrefixEvents)+1+16+8+len(rows[i].id))
			need, cnt = need+sn, cnt+sc
		}
		need, cnt = need+entrySize(guardKeyLen, 0, s.vt), cnt+1 // the bucket's guard, if it names suspects
		if n > 0 && (count+cnt > maxCount || size+need > maxSize) {
			break
		}
		count, size = count+cnt, size+need

		suspects = suspects[:0]
		for i := n; i < end; i++ {
			r := &rows[i]
			start := len(keys)
			keys = appendRowKey(keys, badgerdb.PrefixEvents, r.app, r.ts, r.id)
			rk := keys[start:len(keys):len(keys)]
			if !s.ids.Add(rk) {
				suspects = append(suspects, blockRow{ts: r.ts, id: r.id})
			}
			deltas = addDelta(deltas, r.app)
			if r.walk {
				if edits == nil {
					edits = journeyEdits{}
				}
				ed := edits.of(r.app, r.session)
				ed.add = append(ed.add, r.step)
			}
			if keys, err = setSideKeys(txn, keys, badgerdb.PrefixEvents, r, rk, mark); err != nil {
				return end, err
			}
		}
		if len(suspects) > 0 {
			start := len(keys)
			keys = appendGuardKey(keys, app, bucket)
			if err := txn.Set(keys[start:len(keys):len(keys)], nil); err != nil {
				return end, err
			}
		}
		for _, p := range parts {
			start := len(keys)
			keys = appendBlockKey(keys, tagBlock, app, bucket, seq, part)
			if err := txn.Set(keys[start:len(keys):len(keys)], out[p.data0:p.ids0:p.ids0]); err != nil {
				return end, err
			}
			start = len(keys)
			keys = appendBlockKey(keys, tagBlockIDs, app, bucket, seq, part)
			if err := txn.Set(keys[start:len(keys):len(keys)], out[p.ids0:p.end:p.end]); err != nil {
				return end, err
			}
			// This part's suspects: those of the run within its rows' range.
			lo, _ := slices.BinarySearchFunc(suspects, p.rows[0], byRowOrder)
			hi, found := slices.BinarySearchFunc(suspects, p.rows[len(p.rows)-1], byRowOrder)
			if found {
				hi++
			}
			if hi > lo {
				u0 := len(out)
				out = encodeIDs(out, bucket, suspects[lo:hi])
				start = len(keys)
				keys = appendBlockKey(keys, tagSuspects, app, bucket, seq, part)
				if err := txn.Set(keys[start:len(keys):len(keys)], out[u0:len(out):len(out)]); err != nil {
					return end, err
				}
				suspected = true
			}
			part++
		}
		lastApp, lastBucket, n = app, bucket, end
	}
	n, err = endWrite(txn, badgerdb.PrefixEvents, n, marks, deltas, edits)
	if err == nil && suspected {
		s.settler.poke(s.settleAll)
	}
	return n, err
}

// Suspects are settled (settle) in the background shortly after a write names them
// (settler), and by Count and retention for their app before they count.

// settleAll settles every app's suspects present now.
func (s *Store) settleAll(ctx context.Context) error {
	return s.settle(ctx, append([]byte(badgerdb.PrefixEvents), tagSuspects))
}

// settleApp settles the app's suspects present now.
func (s *Store) settleApp(ctx context.Context, app uuid.UUID) error {
	return s.settle(ctx, appendHead(nil, badgerdb.PrefixEvents, tagSuspects, app))
}

// settle settles the suspects keys under head present when it starts (those that writers add
// meanwhile wait for the next call, so it ends however busy the writers are), settleBatch keys
// a transaction. A key another settle took meanwhile is settled. A damaged key goes with its
// rows left as counted, and is logged: one damaged key must not hold up Count and retention
// for good.
func (s *Store) settle(ctx context.Context, head []byte) error {
	if s.db.IsClosed() { // a transaction of a closed database waits for ever
		return fmt.Errorf("badgerevents: settle suspects: %w", badger.ErrDBClosed)
	}
	keys, err := s.keysOf(nil, head, nil)
	if err != nil {
		return fmt.Errorf("badgerevents: list suspects: %w", err)
	}
	for len(keys) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := s.settleSome(keys)
		if err != nil {
			return fmt.Errorf("badgerevents: settle suspects: %w", err)
		}
		keys = keys[n:]
	}
	return nil
}

// settleBatch is how many suspects keys one transaction settles: each costs its transaction a
// commit (with its sync) when settled alone, which made settling the larger part of a write
// of rows sent again.
const settleBatch = 64

// settleSome settles a prefix of keys in one transaction and returns how many. It retries a
// conflict, takes fewer keys when they outgrow a transaction, and settles a damaged key alone
// by deleting it.
func (s *Store) settleSome(keys [][]byte) (int, error) {
	n := min(len(keys), settleBatch)
	for attempt := 0; ; attempt++ {
		bad, err := s.trySettle(keys[:n])
		switch {
		case err == nil:
			return n, nil
		case errors.Is(err, errCorrupt) && bad > 0:
			n = bad // those before it first
		case errors.Is(err, errCorrupt) && bad == 0:
			s.logger().Error("badgerevents: a damaged suspects key dropped; the rows it names may be counted twice", "key", fmt.Sprintf("%x", keys[0]), "err", err)
			return 1, s.db.Update(func(txn *badger.Txn) error { return txn.Delete(keys[0]) })
		case errors.Is(err, badger.ErrConflict) && attempt < maxConflictRetries:
		case errors.Is(err, badger.ErrTxnTooBig) && n > 1:
			n /= 2
		default:
			return 0, err
		}
	}
}

// settling is what a transaction that settles suspects keys has gathered besides its deletes.
type settling struct {
	dups  map[uuid.UUID]int64 // rows counted twice, by app
	marks dayMarks
	edits journeyEdits
	keys  []byte
	// The blocks of the bucket last settled, read once for all its suspects keys (which
	// settle takes in key order, so a bucket's keys come together): its id blocks, and its
	// data blocks as they are needed. Settling writes no block, so they stay true.
	read   bool         // a bucket was read
	at     [16 + 8]byte // its app and bucket
	idBlks []idBlock
	data   map[blockRef][]blockRow
}

// idBlock is an id block read: which block, and its rows (without values).
type idBlock struct {
	ref  blockRef
	rows []blockRow
}

// readBucket makes acc hold the app's bucket's blocks (its id blocks; data blocks on demand).
// An id block it cannot read is passed over: the scans refuse its bucket already, and its rows
// are then not known as copies here.
func (acc *settling) readBucket(txn *badger.Txn, app uuid.UUID, bucket int64) error {
	var at [16 + 8]byte
	copy(at[:], app[:])
	putTime(at[16:], bucket)
	if acc.read && acc.at == at {
		return nil
	}
	acc.read, acc.at, acc.idBlks, acc.data = true, at, acc.idBlks[:0], map[blockRef][]blockRow{}
	head := bucketHead(tagBlockIDs, app, bucket)
	hl := len(head) - 8
	it := txn.NewIterator(badger.IteratorOptions{Prefix: head})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().Key()
		if len(k) != hl+blockKeyLen {
			continue
		}
		ref := blockRef{binary.BigEndian.Uint64(k[hl+8:]), binary.BigEndian.Uint16(k[hl+16:])}
		v, err := it.Item().ValueCopy(nil) // the rows alias it
		if err != nil {
			return err
		}
		ids, err := decodeIDs(nil, bucket, v)
		if err != nil {
			continue
		}
		acc.idBlks = append(acc.idBlks, idBlock{ref, ids})
	}
	return nil
}

// copiesOf gives the blocks of the bucket read that hold su, by seq and part.
func (acc *settling) copiesOf(su blockRow) []blockRef {
	var refs []blockRef
	for _, b := range acc.idBlks {
		if _, ok := slices.BinarySearchFunc(b.rows, su, byRowOrder); ok {
			refs = append(refs, b.ref)
		}
	}
	return refs
}

// trySettle settles keys in one transaction (settleKey each). On error it commits nothing and
// says which key failed, or -1 when the error is of what they share (the deltas, the day
// marks, the walks), which no key is dropped for.
func (s *Store) trySettle(keys [][]byte) (bad int, err error) {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	acc := settling{dups: map[uuid.UUID]int64{}}
	for i, k := range keys {
		if err := settleKey(txn, k, &acc); err != nil {
			return i, err
		}
	}
	for app, n := range acc.dups {
		if err := txn.Set(countKey(badgerdb.PrefixEvents, tagDel, app), binary.AppendUvarint(nil, uint64(n))); err != nil {
			return -1, err
		}
	}
	if err := acc.marks.write(txn, issueDays); err != nil {
		return -1, err
	}
	if err := applyJourney(txn, acc.edits); err != nil {
		return -1, err
	}
	return -1, txn.Commit()
}

// blockRef names a block of a bucket.
type blockRef struct {
	seq  uint64
	part uint16
}

// settleKey settles the suspects key ukey in txn. A suspect with an older copy (its row key,
// or the row in a block of its bucket with a lower seq) was stored before: it is counted once
// more as deleted, and the row key a block overrules is deleted. The side keys of every copy
// are then set to what the newest copy (of the highest seq) says, since each copy's write set
// its own: the issue copy goes unless the newest is of an issue type (with its day mark), and
// a walk step goes from every session but the newest copy's walk. A suspect without an older
// copy was new (the filter took it for another). The issue copy is read before it is deleted
// and the walks are read to be edited, so a writer that commits a newer copy meanwhile makes
// the transaction conflict. A key already gone was settled by another.
func settleKey(txn *badger.Txn, ukey []byte, acc *settling) error {
	hl := len(badgerdb.PrefixEvents) + 1 + 16
	if len(ukey) != hl+blockKeyLen {
		return fmt.Errorf("%w: suspects key of %d bytes", errCorrupt, len(ukey))
	}
	app := uuid.UUID(ukey[hl-16 : hl])
	bucket, seq := getTime(ukey[hl:]), binary.BigEndian.Uint64(ukey[hl+8:])
	item, err := txn.Get(ukey)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	uval, err := item.ValueCopy(nil)
	if err != nil {
		return err
	}
	suspects, err := decodeIDs(nil, bucket, uval)
	if err != nil {
		return err
	}
	if err := acc.readBucket(txn, app, bucket); err != nil {
		return err
	}
	valueIn := func(ref blockRef, su blockRow) ([]byte, error) {
		rows, ok := acc.data[ref]
		if !ok {
			if rows, err = dataBlock(txn, app, bucket, ref); err != nil {
				return nil, err
			}
			acc.data[ref] = rows
		}
		i, ok := slices.BinarySearchFunc(rows, su, byRowOrder)
		if !ok {
			return nil, fmt.Errorf("%w: block %d.%d of bucket %d lacks a row its id block names", errCorrupt, ref.seq, ref.part, bucket)
		}
		return rows[i].val, nil
	}
	var nv, ov rowView
	for _, su := range suspects {
		refs := acc.copiesOf(su) // by seq, oldest first
		if len(refs) == 0 {
			continue // its own block is gone with its bucket: retention settled it
		}
		rk := appendRowKey(nil, badgerdb.PrefixEvents, app, su.ts, su.id)
		var older [][]byte // the values of the copies the newest overrules
		if item, err := txn.Get(rk); err == nil {
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if err := txn.Delete(rk); err != nil {
				return err
			}
			older = append(older, v)
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		if len(older) == 0 && refs[0].seq >= seq {
			continue // no copy older than this one: the row was new
		}
		acc.dups[app]++
		for _, ref := range refs[:len(refs)-1] {
			v, err := valueIn(ref, su)
			if err != nil {
				return err
			}
			older = append(older, v)
		}
		newest, err := valueIn(refs[len(refs)-1], su)
		if err != nil {
			return err
		}
		_, newWalk, err := nv.walkRow(su.ts, su.id, newest)
		if err != nil {
			continue // a newest copy that cannot be read leaves the side keys as they are
		}
		if !nv.isIssueType() {
			var had bool
			if acc.keys, had, err = deleteIssueCopy(txn, acc.keys, app, su.ts, su.id); err != nil {
				return err
			}
			if had {
				acc.marks.add(app, model.DayStart(su.ts))
			}
		}
		for _, v := range older {
			st, walk, err := ov.walkRow(su.ts, su.id, v)
			if err != nil || !walk || newWalk && ov.e.SessionID == nv.e.SessionID {
				continue
			}
			if acc.edits == nil {
				acc.edits = journeyEdits{}
			}
			acc.edits.of(app, ov.e.SessionID).dropStep(st.key())
		}
	}
	return txn.Delete(ukey)
}

// dataBlock reads the rows of the app's data block ref of bucket.
func dataBlock(txn *badger.Txn, app uuid.UUID, bucket int64, ref blockRef) ([]blockRow, error) {
	item, err := txn.Get(appendBlockKey(nil, tagBlock, app, bucket, ref.seq, ref.part))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: data block %d.%d of bucket %d missing beside its id block", errCorrupt, ref.seq, ref.part, bucket)
	}
	if err != nil {
		return nil, err
	}
	var rows []blockRow
	err = item.Value(func(v []byte) error {
		var err error
		rows, _, err = decodeBlock(nil, nil, bucket, v) // the rows alias the decompressed copy
		return err
	})
	return rows, err
}

// guardKeyLen is the length of a bucket's guard key (appendGuardKey).
const guardKeyLen = len(badgerdb.PrefixEvents) + 1 + 16 + 8

// appendGuardKey appends the guard key of the app's bucket: a write that names suspects in the
// bucket sets it, and retention reads it for each bucket it takes, so that such a write
// committed after retention's read (its blocks unseen, as every new key is) makes retention
// conflict and read the bucket again; otherwise retention and a settle could both subtract
// the one copy the write's block had made a second.
func appendGuardKey(b []byte, app uuid.UUID, bucket int64) []byte {
	b = appendHead(b, badgerdb.PrefixEvents, tagGuard, app)
	var t [8]byte
	putTime(t[:], bucket)
	return append(b, t[:]...) // into b's arena: timeKey would copy all of it
}

// bucketHead is the prefix of the app's keys of kind tag (a block kind) in bucket.
func bucketHead(tag byte, app uuid.UUID, bucket int64) []byte {
	return timeKey(appendHead(nil, badgerdb.PrefixEvents, tag, app), bucket)
}

// hasSuspects says whether db holds a suspects key.
func hasSuspects(db *badger.DB) bool {
	found, _ := badgerdb.HasPrefix(db, badgerdb.PrefixEvents+string(rune(tagSuspects)))
	return found
}

// errUnsettled is retention's: a bucket it would take has suspects not yet settled.
var errUnsettled = errors.New("badgerevents: suspects not settled")

// checkSettled reads the bucket's guard (appendGuardKey) and fails with errUnsettled if a
// block of the app's bucket read up to seq has a suspects key: retention settles them before
// it deletes or rewrites the blocks, so that a row kept twice is subtracted once more and
// stale side keys go. Suspects of blocks written after retention's read (a higher seq) stay
// for later: retention leaves those blocks alone.
func checkSettled(txn *badger.Txn, app uuid.UUID, bucket int64, seq uint64) error {
	if _, err := txn.Get(appendGuardKey(nil, app, bucket)); err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
		return err // read even when missing: a write that sets it meanwhile conflicts
	}
	head := bucketHead(tagSuspects, app, bucket)
	hl := len(head) - 8
	it := txn.NewIterator(badger.IteratorOptions{Prefix: head, PrefetchValues: false})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().Key()
		if len(k) != hl+blockKeyLen || binary.BigEndian.Uint64(k[hl+8:]) <= seq {
			return errUnsettled
		}
	}
	return nil
}

// settler settles suspects in the background, so that a row written again with other content
// (another type, another session) leaves issue queries and journeys within about delay: its
// one goroutine starts at the first write that names suspects and ends at Close.
type settler struct {
	mu     sync.Mutex
	delay  time.Duration // how long a burst of writes (a replay) gathers before it settles
	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	closed bool
	log    func() *slog.Logger
}

// settleDelay is the background settler's wait after a write that names suspects.
const settleDelay = time.Second

// poke asks for a settle soon, starting the goroutine at the first call.
func (st *settler) poke(settle func(ctx context.Context) error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return
	}
	if st.kick == nil {
		ctx, cancel := context.WithCancel(context.Background())
		st.kick, st.cancel, st.done = make(chan struct{}, 1), cancel, make(chan struct{})
		go st.loop(ctx, settle, st.delay)
	}
	select {
	case st.kick <- struct{}{}:
	default:
	}
}

// loop settles after each poke, once delay has passed. A settle that fails is tried again
// after a wait that doubles up to a minute.
func (st *settler) loop(ctx context.Context, settle func(ctx context.Context) error, delay time.Duration) {
	defer close(st.done)
	wait := delay
	for {
		select {
		case <-ctx.Done():
			return
		case <-st.kick:
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := settle(ctx); err != nil && ctx.Err() == nil {
			st.log().Warn("badgerevents: settling suspects failed; retrying", "err", err)
			wait = min(2*wait, time.Minute)
			select {
			case st.kick <- struct{}{}:
			default:
			}
			continue
		}
		wait = delay
	}
}

// close stops the goroutine and waits for it; no settle starts after it.
func (st *settler) close() {
	st.mu.Lock()
	st.closed = true
	cancel, done := st.cancel, st.done
	st.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
