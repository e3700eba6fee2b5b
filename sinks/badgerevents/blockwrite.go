package badgerevents

// Writes of event rows in blocks, and the resolution of suspects (docs/event-blocks.md, step 3).
// A store writes blocks once UseBlocks was called on it or on an earlier Store of its database
// (the marker); before that, it writes a key per row as it always did.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

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
// makes later Stores of the database do so too).
func (s *Store) UseBlocks() error {
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(blocksMarker, nil) }); err != nil {
		return fmt.Errorf("badgerevents: use blocks: %w", err)
	}
	s.blocks.Store(true)
	return nil
}

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

// blockEntries is what a block costs a transaction, in entries: its data and id blocks and its
// suspects.
const blockEntries = 3

// tryCommitBlocks writes a prefix of rows (sorted, without repeats) in one transaction: each
// run of one app and bucket as blocks under one seq, numbered by part, with the side keys a row
// key's write has (issue copies, bug report entries, walk steps, day marks, count deltas). A row
// the key filter may have seen is written like a new one, counted, and named in its block's
// suspects, which resolveSuspects settles later. It returns how many rows it wrote.
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
	keys := make([]byte, 0, min(len(rows), 4096)*(len(badgerdb.PrefixEvents)+1+16+8+16+8))
	var group, suspects []blockRow // the run being gathered, and its rows the filter may know
	var runApp uuid.UUID
	var runBucket int64
	var out, raw []byte
	emit := func() error {
		part := uint16(0)
		var err error
		cutBlocks(group, func(bucket int64, rows []blockRow) {
			if err != nil {
				return
			}
			start := len(out)
			out, raw = encodeBlock(out, raw, bucket, rows)
			data := out[start:len(out):len(out)]
			if err = txn.Set(appendBlockKey(nil, tagBlock, runApp, bucket, seq, part), data); err != nil {
				return
			}
			start = len(out)
			out = encodeIDs(out, bucket, rows)
			if err = txn.Set(appendBlockKey(nil, tagBlockIDs, runApp, bucket, seq, part), out[start:len(out):len(out)]); err != nil {
				return
			}
			// This part's suspects: those of the run within its time and id range.
			lo, _ := slices.BinarySearchFunc(suspects, rows[0], func(a, b blockRow) int { return compareRows(&a, &b) })
			hi, _ := slices.BinarySearchFunc(suspects, rows[len(rows)-1], func(a, b blockRow) int { return compareRows(&a, &b) })
			if hi < len(suspects) && compareRows(&suspects[hi], &rows[len(rows)-1]) == 0 {
				hi++
			}
			if hi > lo {
				start = len(out)
				out = encodeIDs(out, bucket, suspects[lo:hi])
				err = txn.Set(appendBlockKey(nil, tagSuspects, runApp, bucket, seq, part), out[start:len(out):len(out)])
			}
			part++
		})
		group, suspects = group[:0], suspects[:0]
		return err
	}
	n := 0
	for ; n < len(rows); n++ {
		r := &rows[n]
		bucket := bucketOf(r.ts)
		newRun := len(group) == 0 || r.app != runApp || bucket != runBucket || len(group)%maxBlockRows == 0
		rkLen := len(badgerdb.PrefixEvents) + 1 + 16 + 8 + len(r.id)
		need, cnt := int64(0), int64(0)
		if newRun {
			need, cnt = blockEntries*entrySize(len(badgerdb.PrefixEvents)+1+16+blockKeyLen, int(s.vt), s.vt), blockEntries
		}
		sn, sc := s.sideCost(r, rkLen)
		need, cnt = need+sn, cnt+sc
		if n > 0 && (count+cnt > maxCount || size+need > maxSize) {
			break
		}
		count, size = count+cnt, size+need
		if len(group) > 0 && (r.app != runApp || bucket != runBucket) {
			if err := emit(); err != nil {
				return 0, err
			}
		}
		runApp, runBucket = r.app, bucket

		start := len(keys)
		keys = appendRowKey(keys, badgerdb.PrefixEvents, r.app, r.ts, r.id)
		rk := keys[start:len(keys):len(keys)]
		br := blockRow{ts: r.ts, id: r.id, val: r.val}
		if !s.ids.Add(rk) {
			suspects = append(suspects, br)
		}
		group = append(group, br)
		deltas = addDelta(deltas, r.app)
		if r.walk {
			if edits == nil {
				edits = journeyEdits{}
			}
			ed := edits.of(r.app, r.session)
			ed.add = append(ed.add, r.step)
		}
		if keys, err = setSideKeys(txn, keys, badgerdb.PrefixEvents, r, rk, mark); err != nil {
			return 0, err
		}
	}
	if len(group) > 0 {
		if err := emit(); err != nil {
			return 0, err
		}
	}
	if err := marks.write(txn, issueDays); err != nil {
		return 0, err
	}
	for _, d := range deltas {
		if err := txn.Set(countKey(badgerdb.PrefixEvents, tagCount, d.app), binary.AppendUvarint(nil, uint64(d.n))); err != nil {
			return 0, err
		}
	}
	if err := applyJourney(txn, edits); err != nil {
		return n, err
	}
	return n, txn.Commit()
}

// resolveSuspects settles the app's suspects (rows a block names as maybe stored before), one
// suspects key per transaction, oldest bucket and seq first: see resolveOne. Count and
// retention call it first, so that what they count is exact.
func (s *Store) resolveSuspects(ctx context.Context, app uuid.UUID) error {
	head := appendHead(nil, badgerdb.PrefixEvents, tagSuspects, app)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var key []byte
		err := s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: head})
			defer it.Close()
			if it.Rewind(); it.Valid() {
				key = it.Item().KeyCopy(nil)
			}
			return nil
		})
		if err != nil || key == nil {
			return err
		}
		for attempt := 0; ; attempt++ {
			err = s.resolveOne(app, key)
			if !errors.Is(err, badger.ErrConflict) || attempt >= maxConflictRetries {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("badgerevents: resolve suspects of app %s: %w", app, err)
		}
	}
}

// resolveOne settles the suspects key ukey. A suspect with an older copy (its row key, or the
// row in a block of its bucket with a lower seq) was stored before: it is counted once more as
// deleted, the row key its block overrules is deleted, and what the older copy's side keys say
// that the newer copy's do not is undone: an issue copy of a row no longer of an issue type
// (with its day mark), a walk step in a session the row left. A suspect without one was new.
func (s *Store) resolveOne(app uuid.UUID, ukey []byte) error {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	hl := len(appendHead(nil, badgerdb.PrefixEvents, tagSuspects, app))
	if len(ukey) != hl+blockKeyLen {
		return fmt.Errorf("%w: suspects key of %d bytes", errCorrupt, len(ukey))
	}
	bucket, seq := getTime(ukey[hl:]), binary.BigEndian.Uint64(ukey[hl+8:])
	part := binary.BigEndian.Uint16(ukey[hl+16:])
	item, err := txn.Get(ukey)
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
	newer, err := blockRows(txn, app, bucket, seq, part)
	if err != nil {
		return err
	}
	// The older copies in blocks: of each suspect, the one of the highest seq below this one.
	type older struct {
		seq  uint64
		part uint16
	}
	found := map[string]older{}
	bhead := appendBlockKey(nil, tagBlockIDs, app, bucket, 0, 0)[:hl+8]
	it := txn.NewIterator(badger.IteratorOptions{Prefix: bhead})
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().Key()
		if len(k) != hl+blockKeyLen {
			it.Close()
			return fmt.Errorf("%w: id block key of %d bytes", errCorrupt, len(k))
		}
		bseq, bpart := binary.BigEndian.Uint64(k[hl+8:]), binary.BigEndian.Uint16(k[hl+16:])
		if bseq >= seq {
			break
		}
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			it.Close()
			return err
		}
		ids, err := decodeIDs(nil, bucket, v)
		if err != nil {
			it.Close()
			return err
		}
		for _, su := range suspects {
			if _, ok := slices.BinarySearchFunc(ids, su, func(a, b blockRow) int { return compareRows(&a, &b) }); ok {
				found[rowName(su)] = older{bseq, bpart}
			}
		}
	}
	it.Close()
	var dups int64
	var marks dayMarks
	var edits journeyEdits
	var ov, nv rowView
	for _, su := range suspects {
		var oldVal []byte
		rk := appendRowKey(nil, badgerdb.PrefixEvents, app, su.ts, su.id)
		if o, ok := found[rowName(su)]; ok {
			rows, err := blockRows(txn, app, bucket, o.seq, o.part)
			if err != nil {
				return err
			}
			if i, ok := slices.BinarySearchFunc(rows, su, func(a, b blockRow) int { return compareRows(&a, &b) }); ok {
				oldVal = rows[i].val
			}
		}
		if item, err := txn.Get(rk); err == nil {
			if oldVal == nil {
				if oldVal, err = item.ValueCopy(nil); err != nil {
					return err
				}
			}
			if err := txn.Delete(rk); err != nil {
				return err
			}
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		if oldVal == nil {
			continue // the row was new: the filter took it for another
		}
		dups++
		i, ok := slices.BinarySearchFunc(newer, su, func(a, b blockRow) int { return compareRows(&a, &b) })
		if !ok {
			continue // the block is gone (retention): nothing of the newer copy to compare with
		}
		oldStep, oldWalk, oerr := ov.walkRow(su.ts, su.id, oldVal)
		_, newWalk, nerr := nv.walkRow(su.ts, su.id, newer[i].val)
		if oerr != nil || nerr != nil {
			continue // a copy that cannot be read keeps its side keys
		}
		if ov.isIssueType() && !nv.isIssueType() {
			if err := txn.Delete(appendIssueKey(nil, app, su.ts, su.id)); err != nil {
				return err
			}
			marks.add(app, model.DayStart(su.ts))
		}
		if oldWalk && (!newWalk || ov.e.SessionID != nv.e.SessionID) {
			if edits == nil {
				edits = journeyEdits{}
			}
			edits.of(app, ov.e.SessionID).dropStep(oldStep.key())
		}
	}
	if dups > 0 {
		if err := txn.Set(countKey(badgerdb.PrefixEvents, tagDel, app), binary.AppendUvarint(nil, uint64(dups))); err != nil {
			return err
		}
	}
	if err := marks.write(txn, issueDays); err != nil {
		return err
	}
	if err := applyJourney(txn, edits); err != nil {
		return err
	}
	if err := txn.Delete(ukey); err != nil {
		return err
	}
	return txn.Commit()
}

// blockRows reads the rows of the app's data block (seq, part) of bucket, or none when it is
// gone.
func blockRows(txn *badger.Txn, app uuid.UUID, bucket int64, seq uint64, part uint16) ([]blockRow, error) {
	item, err := txn.Get(appendBlockKey(nil, tagBlock, app, bucket, seq, part))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rows []blockRow
	err = item.Value(func(v []byte) error {
		var err error
		rows, _, err = decodeBlock(nil, nil, bucket, v)
		return err
	})
	return rows, err
}

// rowName names a row by its time and id, as a map key.
func rowName(r blockRow) string {
	var t [8]byte
	putTime(t[:], r.ts)
	return string(t[:]) + string(r.id)
}
