package badgerevents

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// nanos is t as Unix nanoseconds, clamped to int64 (years 1677 to 2262): time.UnixNano is
// undefined outside that range.
func nanos(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// DeleteBefore removes the app's events whose timestamp, and spans whose start time, is before
// `before`; see sinks.EventStore. The deletion is synchronous: when it returns nil the rows are
// gone from every read and the deletion is durable as a write is (see write). It runs in as many
// transactions as Badger's size limit needs; if it fails midway, the rows deleted so far stay
// deleted (Count stays exact) and calling it again finishes the job.
func (s *Store) DeleteBefore(ctx context.Context, appID uuid.UUID, before time.Time) error {
	cut := nanos(before)
	for _, prefix := range [...]string{badgerdb.PrefixEvents, badgerdb.PrefixSpans} {
		if err := s.deleteBefore(ctx, prefix, appID, cut); err != nil {
			return fmt.Errorf("badgerevents: delete rows of app %s before %s: %w", appID, before.UTC().Format(time.RFC3339Nano), err)
		}
	}
	for _, k := range [...]dayKind{journeyDays, issueDays} {
		if err := s.deleteSums(k, appID, model.DayStart(cut)); err != nil {
			return fmt.Errorf("badgerevents: delete day sums of app %s: %w", appID, err)
		}
	}
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("badgerevents: delete rows of app %s: sync: %w", appID, err)
	}
	return nil
}

// deleteBefore deletes one table's rows of app with time < cut, one bounded transaction at a
// time; each resumes where the last stopped, so it never walks the tombstones it left. A
// transaction that conflicts with a writer of the same rows is retried with half as many rows
// (and grows again after a commit), so deletion makes progress even against writers that keep
// touching the range (in practice rare: retention cuts far behind what SDKs send). Events are
// row keys and blocks, walked merged (tryDeleteEvents); spans are row keys (tryDeleteSpans).
func (s *Store) deleteBefore(ctx context.Context, prefix string, app uuid.UUID, cut int64) error {
	// from is where a transaction resumes: for events a time and id (nil: the first row), for
	// spans a key.
	var from []byte
	try := func(from []byte, limit int64) ([]byte, int64, error) { return s.tryDeleteEvents(app, from, cut, limit) }
	if prefix != badgerdb.PrefixEvents {
		head := appendHead(nil, prefix, tagRow, app)
		bound := binary.BigEndian.AppendUint64(head[:len(head):len(head)], 0)
		putTime(bound[len(head):], cut)
		from = head
		try = func(from []byte, limit int64) ([]byte, int64, error) {
			return s.tryDeleteSpans(prefix, app, head, from, bound, limit)
		}
	}
	limit := int64(math.MaxInt64)
	for {
		var next []byte
		var n int64
		var err error
		for attempt := 0; ; attempt++ {
			if err = ctx.Err(); err != nil {
				return err
			}
			next, n, err = try(from, limit)
			if errors.Is(err, errUnsettled) && attempt < maxConflictRetries {
				// A bucket to take has suspects: settled, then the bucket is read again.
				if err = s.settleApp(ctx, app); err != nil {
					return err
				}
				continue
			}
			tooBig := errors.Is(err, badger.ErrTxnTooBig) && n > 1 // long sessions' journey writes
			if !errors.Is(err, badger.ErrConflict) && !tooBig || attempt >= maxConflictRetries {
				break
			}
			limit = max(n/2, 1)
		}
		if err != nil || next == nil {
			return err
		}
		from = next
		if limit < math.MaxInt64/2 {
			limit *= 2 // the conflict may have passed: grow back
		}
	}
}

// tryDeleteSpans deletes, in one transaction, the span rows from the key `from` up to (not
// including) the key `bound`: at most limit rows, and as many as the transaction's size limits
// allow. It returns the key to resume from (nil when it reached bound) and how many rows it
// took.
func (s *Store) tryDeleteSpans(prefix string, app uuid.UUID, head, from, bound []byte, limit int64) ([]byte, int64, error) {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	maxCount, maxSize := s.deleteLimits()
	var count, size, n int64
	var next []byte
	// Deleted keys must stay untouched until Commit; they live in one arena (a reallocation
	// leaves the earlier slices on the old array, which nothing writes again).
	keys := make([]byte, 0, 64<<10)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: head, PrefetchValues: false})
	for it.Seek(from); it.Valid(); it.Next() {
		// Item adds the row to the transaction's reads: a concurrent rewrite of it conflicts.
		item := it.Item()
		k := item.Key()
		if bytes.Compare(k, bound) >= 0 {
			break
		}
		id := k[len(head)+8:]
		ikLen := len(prefix) + 1 + 16 + len(id)
		need, cnt := entrySize(len(k), 0, s.vt)+entrySize(ikLen, 0, s.vt), int64(2)
		if n > 0 && (n >= limit || count+cnt > maxCount || size+need > maxSize) {
			next = append([]byte(nil), k...)
			break
		}
		count, size, n = count+cnt, size+need, n+1
		start := len(keys)
		keys = append(keys, k...)
		err := txn.Delete(keys[start:len(keys):len(keys)])
		if err == nil {
			keys, err = deletePointEntry(txn, keys, prefix, app, id, k[len(head):len(head)+8])
		}
		if err != nil {
			it.Close()
			return nil, n, err
		}
	}
	it.Close()
	return endDelete(txn, prefix, app, next, n, nil, nil)
}

// deleteLimits are the entries and bytes a deletion's transaction stays within: 90 % of
// Badger's limits, less a reserve for the delta key and the last row's day mark (counted after
// it).
func (s *Store) deleteLimits() (maxCount, maxSize int64) {
	return s.db.MaxBatchCount()*9/10 - 2, s.db.MaxBatchSize()*9/10 - 64 - markSize
}

// deletePointEntry deletes the point index entry of the row of id at t (its 8 bytes as in a row
// key) if it names this row or is damaged: an id written at two times has the entry of its
// newest bug report row, which may stay. The key goes to keys, which it returns.
func deletePointEntry(txn *badger.Txn, keys []byte, prefix string, app uuid.UUID, id, t []byte) ([]byte, error) {
	start := len(keys)
	keys = appendIdxKey(keys, prefix, app, id)
	ik := keys[start:len(keys):len(keys)]
	names, err := entryNames(txn, ik, t)
	if err == nil && names {
		err = txn.Delete(ik)
	}
	return keys, err
}

// endDelete ends a deletion's transaction of n rows (none: it commits nothing): their deletion
// delta, the issue days' marks and the journey edits, then the commit; next is where the next
// transaction resumes.
func endDelete(txn *badger.Txn, prefix string, app uuid.UUID, next []byte, n int64, marks dayMarks, edits journeyEdits) ([]byte, int64, error) {
	if n == 0 {
		return nil, 0, nil
	}
	if err := txn.Set(countKey(prefix, tagDel, app), binary.AppendUvarint(nil, uint64(n))); err != nil {
		return nil, n, err
	}
	if err := marks.write(txn, issueDays); err != nil {
		return nil, n, err
	}
	if err := applyJourney(txn, edits); err != nil {
		return nil, n, err
	}
	if testHookBeforeDeleteCommit != nil {
		testHookBeforeDeleteCommit()
	}
	return next, n, txn.Commit()
}

// tryDeleteEvents deletes, in one transaction, the app's event rows from the time and id from
// (nil: the first) up to the time cut: at most limit rows, and as many as the transaction's
// limits allow. It returns the time and id to resume from (nil when it reached cut) and how
// many rows it took. Each row goes with its point index entry (if it names the row), its issue
// copy (an issue row's; the type is read from the row, so rows without a copy leave no
// tombstone in the index) and its walk step. A bucket of blocks it went through whole goes;
// one it stopped inside (at the limit or at the cut) is rewritten with what is left of it, in
// parts under the highest seq it read, so that a block written meanwhile (a higher seq) still
// wins, and every other block it read goes.
func (s *Store) tryDeleteEvents(app uuid.UUID, from []byte, cut int64, limit int64) ([]byte, int64, error) {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	maxCount, maxSize := s.deleteLimits()
	var count, size, n int64
	var marks dayMarks
	var edits journeyEdits
	var v rowView
	keys := make([]byte, 0, 64<<10)
	head := appendHead(nil, badgerdb.PrefixEvents, tagRow, app)
	rw := window{lo: minTime, hi: cut, start: from}
	// The blocks are read from the start of from's bucket: rows of it before from are none,
	// unless a writer added them since, and they go too.
	bw := window{lo: minTime, hi: cut}
	if len(from) >= 8 {
		bw.lo = bucketOf(getTime(from))
	}
	blocks := newBlockSource(txn, app, bw, false)
	blocks.keep = true
	m := &mergedRows{rows: newRowIter(txn, app, rw, rowIterOpts{lenient: true}), blocks: blocks}
	defer m.close()
	var next []byte
	var fromBlocks int64 // rows taken from the last bucket read
	// Every block read is deleted (3 keys at most with its suspects) or rewritten (2 a part):
	// reserve counts their entries, kept up as buckets are read.
	var reserve int64
	buckets := 0
	for {
		ts, id, item, b, err := m.peek()
		if err != nil {
			return nil, n, err
		}
		if item == nil && b == nil {
			break
		}
		for ; buckets < len(blocks.read); buckets++ {
			reserve += 5*int64(len(blocks.read[buckets].keys)) + 1 // and the bucket's guard
			fromBlocks = 0
		}
		ikLen := len(badgerdb.PrefixEvents) + 1 + 16 + len(id)
		rkLen := len(head) + 8 + len(id)
		need, cnt := entrySize(rkLen, 0, s.vt)+entrySize(ikLen, 0, s.vt), int64(2)
		issue, walk := false, false
		var session uuid.UUID
		read := func(val []byte) error {
			var err error
			if _, walk, err = v.walkRow(ts, id, val); err != nil {
				return err
			}
			issue, session = v.isIssueType(), v.e.SessionID
			return nil
		}
		if b != nil {
			err = read(b.val)
		} else {
			err = item.Value(read)
		}
		if err != nil { // a row whose value cannot be read may have a copy: it goes blindly
			issue, walk = true, false
		}
		if issue {
			need, cnt = need+entrySize(rkLen, 0, s.vt), cnt+1
		}
		if n > 0 && (n >= limit || count+cnt+reserve > maxCount || size+need+reserve*100 > maxSize) {
			next = make([]byte, 8, 8+len(id))
			putTime(next, ts)
			next = append(next, id...)
			break
		}
		count, size, n = count+cnt, size+need, n+1
		if walk {
			if edits == nil {
				edits = journeyEdits{}
			}
			edits.of(app, session).dropStep(stepKey{[16]byte(id), ts})
		}
		var t [8]byte
		putTime(t[:], ts)
		if m.c <= 0 { // the row has a row key
			start := len(keys)
			keys = append(keys, head...)
			keys = append(append(keys, t[:]...), id...)
			if err := txn.Delete(keys[start:len(keys):len(keys)]); err != nil {
				return nil, n, err
			}
		}
		if b != nil {
			fromBlocks++
		}
		if keys, err = deletePointEntry(txn, keys, badgerdb.PrefixEvents, app, id, t[:]); err != nil {
			return nil, n, err
		}
		if issue {
			start := len(keys)
			keys = appendIssueKey(keys, app, ts, id)
			if err := txn.Delete(keys[start:len(keys):len(keys)]); err != nil {
				return nil, n, err
			}
			if marks.add(app, model.DayStart(ts)) {
				count, size = count+1, size+markSize
			}
		}
		m.next()
	}
	m.close() // Badger refuses a commit with an iterator open
	if n == 0 {
		return nil, 0, nil
	}
	// The buckets read: all but the last were gone through whole; the last was stopped inside
	// unless nothing of it is left, and is left alone if no row of it was taken.
	for i, r := range blocks.read {
		var rest []blockRow
		if i == len(blocks.read)-1 {
			if rest = blocks.rest(); len(rest) > 0 && fromBlocks == 0 {
				break // none of its rows was taken: nothing changes
			}
		}
		if err := checkSettled(txn, app, r.bucket, r.seq); err != nil {
			return nil, n, err
		}
		if len(rest) == 0 { // the bucket goes, and its guard with it
			if err := txn.Delete(appendGuardKey(nil, app, r.bucket)); err != nil {
				return nil, n, err
			}
		}
		if err := rewriteBucket(txn, app, r, rest); err != nil {
			return nil, n, err
		}
	}
	return endDelete(txn, badgerdb.PrefixEvents, app, next, n, marks, edits)
}

// rewriteBucket replaces the data and id blocks r read with rest (merged rows of the bucket,
// sorted; none: the bucket goes), in parts under r's highest seq: a block written since r was
// read has a higher seq and keeps winning over them, and every key r read that no part
// overwrites is deleted.
func rewriteBucket(txn *badger.Txn, app uuid.UUID, r bucketRead, rest []blockRow) error {
	written := map[string]bool{}
	part := uint16(0)
	var err error
	cutBlocks(rest, func(bucket int64, rows []blockRow) {
		if err != nil {
			return
		}
		data, _ := encodeBlock(nil, nil, bucket, rows)
		k := appendBlockKey(nil, tagBlock, app, bucket, r.seq, part)
		if err = txn.Set(k, data); err != nil {
			return
		}
		written[string(k)] = true
		err = txn.Set(appendBlockKey(nil, tagBlockIDs, app, bucket, r.seq, part), encodeIDs(nil, bucket, rows))
		part++
	})
	if err != nil {
		return err
	}
	hl := len(badgerdb.PrefixEvents)
	for _, k := range r.keys {
		if written[string(k)] {
			continue
		}
		if err := txn.Delete(k); err != nil {
			return err
		}
		ik := slices.Clone(k)
		ik[hl] = tagBlockIDs
		if err := txn.Delete(ik); err != nil {
			return err
		}
	}
	return nil
}

// testHookBeforeDeleteCommit, when set by a test, runs between a deletion's reads and its
// commit: the one moment a concurrent write can race it.
var testHookBeforeDeleteCommit func()

// Usage counts the app's rows of [from, to) per UTC calendar month; see sinks.EventStore.
//
// Bytes is the encoded size of each row as this backend keeps it: the row's key plus its value
// (the codec's layout, before Badger's compression), without the id index and count keys. It
// approximates the space the rows take and is not comparable with another backend's Bytes.
//
// It reads every row of the range in one snapshot, events and spans side by side in time order,
// and finishes a month before it starts the next, so its memory is the set of one month's
// distinct session ids (about 50 bytes each: a million sessions in a month take ~50 MB).
func (s *Store) Usage(ctx context.Context, appID uuid.UUID, from, to time.Time) ([]model.MonthUsage, error) {
	lo, hi := nanos(from), nanos(to)
	var out []model.MonthUsage
	if lo >= hi {
		return out, nil
	}
	err := s.db.View(func(txn *badger.Txn) error {
		ev := newEventCursor(txn, appID, lo, hi)
		defer ev.close()
		sp := newRowCursor(txn, badgerdb.PrefixSpans, appID, lo, spanSession)
		defer sp.close()
		sessions := make(map[uuid.UUID]struct{})
		for {
			ts, ok := ev.peek(hi)
			if t2, ok2 := sp.peek(hi); ok2 && (!ok || t2 < ts) {
				ts, ok = t2, true
			}
			if !ok {
				return ev.err
			}
			t := time.Unix(0, ts).UTC()
			first := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
			end := min(nanos(first.AddDate(0, 1, 0)), hi)
			u := model.MonthUsage{Month: t.Format("2006-01")}
			var err error
			if u.Events, err = ev.consume(ctx, end, sessions, &u.Bytes); err != nil {
				return fmt.Errorf("events of %s: %w", u.Month, err)
			}
			if u.Spans, err = sp.consume(ctx, end, sessions, &u.Bytes); err != nil {
				return fmt.Errorf("spans of %s: %w", u.Month, err)
			}
			u.Sessions = int64(len(sessions))
			clear(sessions)
			out = append(out, u)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: usage of app %s: %w", appID, err)
	}
	return out, nil
}

// eventCursor walks the app's event rows of [from, to) in time order, from row keys and blocks
// (docs/event-blocks.md) merged, for Usage.
type eventCursor struct {
	m      *mergedRows
	keyLen int   // a row key's length: a row's bytes are counted as if it had one
	err    error // what ended peek early
}

func newEventCursor(txn *badger.Txn, app uuid.UUID, from, to int64) *eventCursor {
	w := window{lo: from, hi: to}
	return &eventCursor{
		m:      newMerged(txn, app, w, rowIterOpts{prefetch: true, lenient: true}, false),
		keyLen: len(appendHead(nil, badgerdb.PrefixEvents, tagRow, app)) + 8 + idLen,
	}
}

func (c *eventCursor) close() { c.m.close() }

// peek returns the time of the next row, if there is one before hi; an error ends the rows
// (err says it).
func (c *eventCursor) peek(hi int64) (int64, bool) {
	ts, _, item, b, err := c.m.peek()
	if err != nil || item == nil && b == nil {
		c.err = err
		return 0, false
	}
	return ts, ts < hi
}

// consume reads the rows before end as rowCursor.consume does.
func (c *eventCursor) consume(ctx context.Context, end int64, sessions map[uuid.UUID]struct{}, bytes *int64) (int64, error) {
	var n int64
	for ; ; n++ {
		if n&1023 == 1023 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		ts, _, item, b, err := c.m.peek()
		if err != nil || item == nil && b == nil || ts >= end {
			return n, err
		}
		count := func(v []byte) error {
			sid, err := eventSession(v)
			if err != nil {
				return err
			}
			if sid != uuid.Nil {
				sessions[sid] = struct{}{}
			}
			*bytes += int64(c.keyLen + len(v))
			return nil
		}
		if b != nil {
			err = count(b.val)
		} else {
			err = item.Value(count)
		}
		if err != nil {
			return n, err
		}
		c.m.next()
	}
}

// rowCursor walks one table's rows of an app in time order.
type rowCursor struct {
	it      *badger.Iterator
	hl      int // length of the rows' common head; the time follows it
	session func(val []byte) (uuid.UUID, error)
}

func newRowCursor(txn *badger.Txn, prefix string, app uuid.UUID, from int64, session func([]byte) (uuid.UUID, error)) *rowCursor {
	head := appendHead(nil, prefix, tagRow, app)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: head, PrefetchValues: true, PrefetchSize: 64})
	seek := binary.BigEndian.AppendUint64(head[:len(head):len(head)], 0)
	putTime(seek[len(head):], from)
	it.Seek(seek)
	return &rowCursor{it: it, hl: len(head), session: session}
}

func (c *rowCursor) close() { c.it.Close() }

// peek returns the time of the current row, if there is one before hi.
func (c *rowCursor) peek(hi int64) (int64, bool) {
	if !c.it.Valid() {
		return 0, false
	}
	k := c.it.Item().Key()
	if len(k) < c.hl+8 {
		return 0, false
	}
	ts := getTime(k[c.hl:])
	return ts, ts < hi
}

// consume reads the rows before end: it counts them, adds their session ids to sessions (the
// nil id is no session) and their sizes to bytes.
func (c *rowCursor) consume(ctx context.Context, end int64, sessions map[uuid.UUID]struct{}, bytes *int64) (int64, error) {
	var n int64
	for ; c.it.Valid(); c.it.Next() {
		if n&1023 == 1023 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		item := c.it.Item()
		k := item.Key()
		if len(k) < c.hl+8 {
			return n, errCorrupt
		}
		if getTime(k[c.hl:]) >= end {
			break
		}
		if err := item.Value(func(v []byte) error {
			sid, err := c.session(v)
			if err != nil {
				return err
			}
			if sid != uuid.Nil {
				sessions[sid] = struct{}{}
			}
			*bytes += int64(len(k) + len(v))
			return nil
		}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// entryNames says whether the point index entry ik exists and holds the time t (its 8 bytes as
// in a row key), or is damaged. The read makes a writer that sets the entry meanwhile conflict
// with the deletion.
func entryNames(txn *badger.Txn, ik, t []byte) (bool, error) {
	item, err := txn.Get(ik)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ts, whole, err := entryTime(item)
	return !whole || ts == getTime(t), err // a damaged entry goes with any row of its id
}
