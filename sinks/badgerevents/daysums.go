package badgerevents

// Day sums: what a query over whole UTC days would add up from many keys (journey facts of
// every session, issue rows), kept per app and day as one key while it holds. Two structures
// use them, each with its own tags: journey facts (journeydays.go) and issue cells
// (issuedays.go).
//
//	ev/ <mark> <app> <day 8B> → empty                   written by every transaction that changes the day
//	ev/ <sum>  <app> <day 8B> → format, read ts, body   the day summed, as of a read timestamp
//
// When a sum holds. Badger versions each key with the commit timestamp of the transaction that
// wrote it, and a read sees every commit up to its read timestamp. So a sum made by a read at
// timestamp r holds while the day's mark has a version at or below r: any later change of the
// day committed a mark above r. Marks are blind writes, so writers never conflict on them, and
// a sum is written by its own transaction that reads nothing: no clock, no margin. A day whose
// sum is missing or no longer holds is read from its keys and its sum written after the read.
// Today's sum is kept too: while the app sends events each flush ends it and each read sums the
// day again, as it would without sums (the sum is one key rewritten, not rows that pile up),
// and once the app is quiet it holds. The transactions that delete rows mark their days as
// writes do, and retention then deletes the sums of the days it emptied.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/badgerdb"
)

// dayKind is one structure kept in day sums: the tags of its marks and sums, and the format
// of the sums this release writes (a sum of another format is not used, and is summed again).
type dayKind struct{ mark, sum, format byte }

const (
	tagDayMark   = 'D' // journey facts' marks
	tagDaySum    = 'S' // journey facts' sums
	tagIssueMark = 'X' // the issue index's marks
	tagIssueSum  = 'G' // issue cells' sums
)

var (
	journeyDays = dayKind{mark: tagDayMark, sum: tagDaySum, format: 1}
	issueDays   = dayKind{mark: tagIssueMark, sum: tagIssueSum, format: 1}
)

// key is the mark (k.mark) or sum (k.sum) key of the app's day.
func (k dayKind) key(tag byte, app uuid.UUID, day int64) []byte {
	return appendTimeKey(make([]byte, 0, 3+1+16+8), badgerdb.PrefixEvents, tag, app, day, nil)
}

// markDay records in txn that the app's day changes.
func (k dayKind) markDay(txn *badger.Txn, app uuid.UUID, day int64) error {
	return txn.Set(k.key(k.mark, app, day), []byte{})
}

// begin starts a sum's value: its format and the read timestamp it was summed at. The body
// follows.
func (k dayKind) begin(readTs uint64) []byte {
	return binary.AppendUvarint([]byte{k.format}, readTs)
}

// read returns the body of the app's day sum, copied, when the sum holds in txn (a read-only
// transaction: in one that writes, Badger versions its own writes at its read timestamp), and
// says whether it does. A sum of another format is not used.
func (k dayKind) read(txn *badger.Txn, app uuid.UUID, day int64) (string, bool, error) {
	var marked uint64
	switch item, err := txn.Get(k.key(k.mark, app, day)); {
	case errors.Is(err, badger.ErrKeyNotFound):
	case err != nil:
		return "", false, err
	default:
		marked = item.Version()
	}
	item, err := txn.Get(k.key(k.sum, app, day))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	var body string
	ok := false
	err = item.Value(func(v []byte) error {
		r := reader{s: string(v)} // one copy: what is decoded from the body aliases it
		if r.byte() == k.format && r.uvarint() >= marked && r.err == nil {
			body, ok = r.s[r.i:], true
		}
		return nil
	})
	return body, ok && err == nil, err
}

// sumsClosed is the last write of Close: found at the next Open as the database's newest
// version, it says that nothing changed the store since, so the day sums kept then still hold.
// That relies on every change of rows setting a key (this release's day marks, and every
// release's count deltas): deletions alone, once compacted away, would leave no newer version.
var sumsClosed = []byte(badgerdb.PrefixEvents + "m" + "day sums closed")

// markClosed records that the store closes with its day sums as they are (Close).
func (s *Store) markClosed() error {
	return s.db.Update(func(txn *badger.Txn) error { return txn.Set(sumsClosed, nil) })
}

// keepOrDropSums, at Open, deletes every day sum unless Close was the last write to the
// database: after a crash, or a run of an earlier release (which changes rows without marking
// their days), a sum could hold for changes it never saw. The reads after it sum the days
// again. Either way the close mark goes, so that a crash from now on drops the sums too.
func (s *Store) keepOrDropSums() error {
	var closedAt uint64
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(sumsClosed)
		if err == nil {
			closedAt = item.Version()
		}
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	if closedAt == 0 || closedAt != s.db.MaxVersion() {
		for _, k := range [...]dayKind{journeyDays, issueDays} {
			keys, err := s.keysOf(nil, append([]byte(badgerdb.PrefixEvents), k.sum), nil)
			if err != nil {
				return err
			}
			for _, key := range keys {
				if err := wb.Delete(key); err != nil {
					return err
				}
			}
		}
	}
	if closedAt != 0 {
		if err := wb.Delete(sumsClosed); err != nil {
			return err
		}
	}
	return wb.Flush()
}

// firstDay is the start of the first whole UTC day int64 holds (1677-09-22).
const firstDay = math.MinInt64 - math.MinInt64%factDay

// wholeDay says whether the UTC day that starts at d lies whole in [from, to), so that its sum
// can answer for it. The first two days int64 holds never do: model.DayStart clamps every time
// before firstDay+factDay but firstDay itself to math.MinInt64, so the keys of the day
// math.MinInt64 hold more than a day, and those of firstDay one instant. Nor does the last,
// whose end overflows.
func wholeDay(d, from, to int64) bool {
	return d >= from && d >= math.MinInt64+factDay && d <= math.MaxInt64-factDay && d+factDay <= to
}

// summed is a day's sum to keep: its value (begin, then the body).
type summed struct {
	day int64
	val []byte
}

// writeSums keeps sums made by a read, in as many transactions as Badger's size limits need
// (a read of a long window, such as the app actor's rebuild, sums every day it holds). Commits
// are not waited for (the events database syncs each commit, and the answer is complete); a sum
// that is not kept (too big for a transaction of its own) is made again by the next read of its
// day.
func (s *Store) writeSums(k dayKind, app uuid.UUID, sums []summed) {
	txn := s.db.NewTransaction(true)
	for _, sum := range sums {
		key := k.key(k.sum, app, sum.day)
		if err := txn.Set(key, sum.val); errors.Is(err, badger.ErrTxnTooBig) {
			txn.CommitWith(func(error) {})
			txn = s.db.NewTransaction(true)
			_ = txn.Set(key, sum.val) // fails only for a sum too big for any transaction
		}
	}
	txn.CommitWith(func(error) {})
}

// deleteSums deletes the sums of the app's days before day: retention, once it has deleted
// every row of them. Their marks stay (an empty key per day): a read that summed one of those
// days before the rows went may still write its sum, which the marks the deletion wrote end,
// and retention's next round deletes. The keys are found by a read and deleted blindly, so
// that a sum written meanwhile cannot fail retention with a conflict.
func (s *Store) deleteSums(k dayKind, app uuid.UUID, day int64) error {
	keys, err := s.keysOf(nil, appendHead(nil, badgerdb.PrefixEvents, k.sum, app), k.key(k.sum, app, day))
	if err != nil || len(keys) == 0 {
		return err
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range keys {
		if err := wb.Delete(k); err != nil {
			return err
		}
	}
	return wb.Flush()
}

// keysOf appends to keys the keys with prefix below bound (nil: all of them).
func (s *Store) keysOf(keys [][]byte, prefix, bound []byte) ([][]byte, error) {
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid() && (bound == nil || bytes.Compare(it.Item().Key(), bound) < 0); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		return nil
	})
	return keys, err
}

// dayRef names a UTC day of an app.
type dayRef struct {
	app uuid.UUID
	day int64
}

// dayMarks collects the days a transaction changes, to mark each once (dayKind.markDay).
type dayMarks map[dayRef]struct{}

// add records the app's day (a model.DayStart), and says whether it is new. It makes the set at
// its first day: most write transactions change no issue row.
func (m *dayMarks) add(app uuid.UUID, day int64) bool {
	if *m == nil {
		*m = dayMarks{}
	}
	d := dayRef{app, day}
	if _, ok := (*m)[d]; ok {
		return false
	}
	(*m)[d] = struct{}{}
	return true
}

// write marks the days in txn.
func (m dayMarks) write(txn *badger.Txn, k dayKind) error {
	for d := range m {
		if err := k.markDay(txn, d.app, d.day); err != nil {
			return err
		}
	}
	return nil
}

// markSize is what a mark costs a transaction (entrySize of its key and empty value).
var markSize = entrySize(3+1+16+8, 0, math.MaxInt64)
