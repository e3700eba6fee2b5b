package badgerevents

// Day sums of journey facts. A journey over whole days read every session's facts of those days
// (journey.go): at 10M events a week holds about a million, 230–370 ms to read. A day's facts
// summed over its sessions are a few hundred, so a whole day of a window is read from its sum
// while the sum holds, and summed again (and kept) when it does not.
//
//	ev/ D <app> <day 8B> → empty     written by every transaction that changes the day's facts
//	ev/ S <app> <day 8B> → the sum   the day's facts summed, as of a read timestamp
//
// When a sum holds. Badger versions each key with the commit timestamp of the transaction that
// wrote it, and a read sees every commit up to its read timestamp. So a sum made by a read at
// timestamp r holds while the day's mark (D) has a version at or below r: any later change of
// the day's facts committed a mark above r. Marks are blind writes, so writers never conflict on
// them, and a sum is written by its own transaction that reads nothing: no clock, no margin.
// A day whose sum is missing or no longer holds is read from its sessions' facts and its sum
// written after the read. Today's sum is kept too: while the app sends events each flush ends
// it and each read sums the day again, as it would without sums (the sum is one key rewritten,
// not rows that pile up), and once the app is quiet it holds. The transactions that delete rows
// mark their days as writes do, and retention then deletes the sums of the days it emptied.

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

const (
	tagDayMark   = 'D'
	tagDaySum    = 'S'
	daySumFormat = 1
)

// dayKey is the mark (tagDayMark) or sum (tagDaySum) key of the app's day.
func dayKey(tag byte, app uuid.UUID, day int64) []byte {
	return appendTimeKey(make([]byte, 0, 3+1+16+8), badgerdb.PrefixEvents, tag, app, day, nil)
}

// markDay records in txn that the app's facts of day change.
func markDay(txn *badger.Txn, app uuid.UUID, day int64) error {
	return txn.Set(dayKey(tagDayMark, app, day), []byte{})
}

// factSumKey is a fact without its time: what a day's sum adds up.
type factSumKey struct {
	from, screen, group, title, name, code string
	class                                  model.IssueClass
}

// daySum sums a day's facts as a read at readTs sees them.
type daySum struct {
	day    int64
	readTs uint64
	keys   []factSumKey // in the order first seen
	sums   map[factSumKey]*factCount
}

type factCount struct{ n, first, last int64 }

func newDaySum(day int64, readTs uint64) *daySum {
	return &daySum{day: day, readTs: readTs, sums: map[factSumKey]*factCount{}}
}

// add counts one fact; its strings are copied (they alias the value being read).
func (s *daySum) add(f *model.JourneyFact) {
	e := &f.Event
	k := factSumKey{f.From, e.Screen, e.GroupID, e.Title, e.Version.Name, e.Version.Code, e.Class}
	if c := s.sums[k]; c != nil {
		c.n += int64(f.Count())
		c.first, c.last = min(c.first, e.Timestamp), max(c.last, f.LastTime())
		return
	}
	k = factSumKey{strings.Clone(k.from), strings.Clone(k.screen), strings.Clone(k.group), strings.Clone(k.title),
		strings.Clone(k.name), strings.Clone(k.code), k.class}
	s.keys = append(s.keys, k)
	s.sums[k] = &factCount{int64(f.Count()), e.Timestamp, f.LastTime()}
}

// encode is the sum's value: format, read timestamp, then each summed fact (appendFact: its
// event's time is the earliest) with its count and latest time.
func (s *daySum) encode() []byte {
	b := binary.AppendUvarint([]byte{daySumFormat}, s.readTs)
	for _, k := range s.keys {
		c := s.sums[k]
		f := model.JourneyFact{From: k.from, Event: model.WalkEvent{Timestamp: c.first,
			Version: model.AppVersion{Name: k.name, Code: k.code}, Screen: k.screen, GroupID: k.group, Class: k.class, Title: k.title}}
		b = binary.AppendVarint(binary.AppendUvarint(appendFact(b, &f), uint64(c.n)), c.last)
	}
	return b
}

// readDaySum passes fn the facts of the app's day from its sum when the sum holds in txn (a
// read-only transaction: in one that writes, Badger versions its own writes at its read
// timestamp), and says whether it did. A sum that does not decode (damaged, or of a format this
// release does not know) is derived data: it is not used, and the day is summed again.
func readDaySum(txn *badger.Txn, app uuid.UUID, day int64, fn func(f *model.JourneyFact) error) (bool, error) {
	var marked uint64
	switch item, err := txn.Get(dayKey(tagDayMark, app, day)); {
	case errors.Is(err, badger.ErrKeyNotFound):
	case err != nil:
		return false, err
	default:
		marked = item.Version()
	}
	item, err := txn.Get(dayKey(tagDaySum, app, day))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	var facts []model.JourneyFact
	usable := false
	err = item.Value(func(v []byte) error {
		r := reader{s: string(v)} // one copy: the facts' strings alias it
		if r.byte() != daySumFormat || r.uvarint() < marked || r.err != nil {
			return nil // not this release's, or the day's facts changed since it was summed
		}
		for r.err == nil && r.i < len(r.s) {
			var f model.JourneyFact
			f.From = r.str()
			r.walkEvent(&f.Event)
			f.N = r.uvarint()
			f.Last = r.varint()
			facts = append(facts, f)
		}
		usable = r.err == nil
		return nil
	})
	if err != nil || !usable {
		return false, err
	}
	for i := range facts {
		if err := fn(&facts[i]); err != nil {
			return true, err
		}
	}
	return true, nil
}

// writeDaySums keeps sums made by a read. The commit is not waited for (the events database
// syncs each commit, and the answer is complete); a sum that is not kept is made again by the
// next read of its day.
func (s *Store) writeDaySums(app uuid.UUID, sums []*daySum) {
	txn := s.db.NewTransaction(true)
	for _, sum := range sums {
		if err := txn.Set(dayKey(tagDaySum, app, sum.day), sum.encode()); err != nil {
			break // too big for one transaction: the rest are summed again next time
		}
	}
	txn.CommitWith(func(error) {})
}

// deleteDaySums deletes the sums of the app's days before day: retention, once it has deleted
// every row of them. Their marks stay (an empty key per day): a read that summed one of those
// days before the rows went may still write its sum, which the marks the deletion wrote end,
// and retention's next round deletes. The keys are found by a read and deleted blindly, so
// that a sum written meanwhile cannot fail retention with a conflict.
func (s *Store) deleteDaySums(app uuid.UUID, day int64) error {
	head := appendHead(nil, badgerdb.PrefixEvents, tagDaySum, app)
	bound := string(dayKey(tagDaySum, app, day))
	var keys [][]byte
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: head})
		defer it.Close()
		for it.Rewind(); it.Valid() && string(it.Item().Key()) < bound; it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		return nil
	})
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
