package badgerevents

// Day sums of issue cells (daysums.go). A group list read every issue index row of its window
// (about 2 µs each): at 10M events a week holds some 100k of them, 170 ms to read. A day's
// issue rows summed into cells (one per group, class and version) are a few hundred to a few
// thousand, so IssueCells reads a day that lies whole in its window from its sum while the sum
// holds, and sums the day as it reads its rows when not. Every transaction that adds, moves or
// deletes an issue index row marks the row's day (tryCommit, tryDeleteEvents). The index's build
// (index.go) marks nothing: sums are read and written only once the index is complete.
//
// A sum holds every issue event of its day, so it answers the queries that select by what a
// cell says: classes (and severities said by class, IssueQuery.ByClass), group id and versions.
// A query with another filter (attributes, user-defined ones) reads rows, as does a bucketed
// one for a day its buckets cut (hours, days in a zone other than UTC).

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// cellKey is what a cell of IssueCells' answer is one of.
type cellKey struct {
	group  string
	class  model.IssueClass
	v      model.AppVersion
	bucket int64
}

// cellSet aggregates issue cells (IssueCell.Merge): IssueCells' answer, and a day's sum.
// Strings passed in may alias a row being read; what a cell keeps is interned or copied.
type cellSet struct {
	idx   map[cellKey]int
	cells []model.IssueCell
	msgs  [][]byte // per cell: the message of its display (Last.Message is set by done)
	strs  interner
}

func newCellSet() *cellSet {
	return &cellSet{idx: map[cellKey]int{}, cells: []model.IssueCell{}, strs: interner{}}
}

// cell is the index of k's cell, made empty when missing.
func (s *cellSet) cell(k cellKey) int {
	i, ok := s.idx[k]
	if !ok {
		k.group, k.v = s.strs.get(k.group), model.AppVersion{Name: s.strs.get(k.v.Name), Code: s.strs.get(k.v.Code)}
		i = len(s.cells)
		s.idx[k] = i
		s.cells = append(s.cells, model.IssueCell{GroupID: k.group, Class: k.class, Version: k.v, Bucket: k.bucket})
		s.msgs = append(s.msgs, nil)
	}
	return i
}

// addEvent counts issue event e of class in its cell of bucket. A time-ordered scan makes each
// event its cell's latest in turn, so a replaced display costs no allocation: its strings are
// interned (compared with the display they replace first) and its message copied into the
// cell's reused buffer.
func (s *cellSet) addEvent(e *model.Event, class model.IssueClass, bucket int64) {
	i := s.cell(cellKey{group: e.Facts.GroupID, class: class, v: versionOf(e), bucket: bucket})
	one := model.IssueCell{Class: class, Count: 1, FirstTime: e.Timestamp, LastTime: e.Timestamp, LastID: e.ID, Last: e.Facts.Issue}
	s.merge(i, &one)
}

// merge merges o (its GroupID, Version and Bucket are ignored) into cell i.
func (s *cellSet) merge(i int, o *model.IssueCell) {
	c := &s.cells[i]
	prev := c.Last
	if c.Merge(o) {
		d := &o.Last
		c.Last = model.IssueDisplay{Type: s.strs.keep(prev.Type, d.Type),
			MethodName: s.strs.keep(prev.MethodName, d.MethodName), FileName: s.strs.keep(prev.FileName, d.FileName),
			LineNumber: d.LineNumber, Severity: s.strs.keep(prev.Severity, d.Severity)}
		s.msgs[i] = append(s.msgs[i][:0], d.Message...)
	}
}

// done is the cells with their messages.
func (s *cellSet) done() []model.IssueCell {
	for i := range s.cells {
		s.cells[i].Last.Message = string(s.msgs[i])
	}
	return s.cells
}

// encodeIssueSum is a day sum's value: issueDays.begin, then each cell (bucket 0).
func encodeIssueSum(readTs uint64, cells []model.IssueCell) []byte {
	b := issueDays.begin(readTs)
	for i := range cells {
		c := &cells[i]
		b = append(appendStr(b, c.GroupID), byte(c.Class))
		b = appendStr(appendStr(b, c.Version.Name), c.Version.Code)
		b = binary.AppendUvarint(b, c.Count)
		b = binary.AppendVarint(binary.AppendVarint(b, c.FirstTime), c.LastTime)
		b = append(b, c.LastID[:]...)
		d := &c.Last
		for _, s := range [...]string{d.Type, d.Message, d.MethodName, d.FileName, d.Severity} {
			b = appendStr(b, s)
		}
		b = binary.AppendVarint(b, int64(d.LineNumber))
	}
	return b
}

// readIssueSum returns the cells of the app's day from its sum when the sum holds in txn
// (issueDays.read), and says whether it did. A sum that does not decode (damaged) is derived
// data: it is not used, and the day is summed again. The cells' strings alias one copy of the sum.
func readIssueSum(txn *badger.Txn, app uuid.UUID, day int64) ([]model.IssueCell, bool, error) {
	body, ok, err := issueDays.read(txn, app, day)
	if err != nil || !ok {
		return nil, false, err
	}
	var cells []model.IssueCell
	r := reader{s: body}
	for r.err == nil && r.i < len(r.s) {
		var c model.IssueCell
		c.GroupID, c.Class = r.str(), model.IssueClass(r.byte())
		c.Version = model.AppVersion{Name: r.str(), Code: r.str()}
		c.Count = r.uvarint()
		c.FirstTime, c.LastTime = r.varint(), r.varint()
		c.LastID = r.uuid()
		d := &c.Last
		d.Type, d.Message, d.MethodName, d.FileName, d.Severity = r.str(), r.str(), r.str(), r.str(), r.str()
		line := r.varint()
		d.LineNumber = int32(line)
		if int64(d.LineNumber) != line || c.Count == 0 {
			r.fail()
		}
		cells = append(cells, c)
	}
	if r.err != nil {
		return nil, false, nil
	}
	return cells, true, nil
}

// cellsByDay adds to out the cells of q over the issue index (which must be complete), where
// a day whole in the window (and in one bucket of by) comes from its sum, or is summed as its
// rows are read; the rows of the other days go to addRow, which applies q. classes are q's
// classes said by class (IssueQuery.ByClass); q must have no filter a cell cannot say
// (EventFilter.Unfiltered).
func (s *Store) cellsByDay(ctx context.Context, q *model.IssueQuery, by model.Cells, classes []model.IssueClass, out *cellSet, addRow rowFunc) error {
	app := q.App
	head := appendHead(nil, badgerdb.PrefixEvents, tagIssue, app)
	hl := len(head)
	bk := bucketer{by: by.By}
	// whole says whether day d is whole in the window (wholeDay), and in one bucket: which.
	whole := func(d int64) (int64, bool) {
		if !wholeDay(d, q.From, q.To) {
			return 0, false
		}
		if !by.Bucketed {
			return 0, true
		}
		b := bk.start(d)
		return b, bk.ok && bk.hi >= d+factDay
	}
	// keep adds a cell of a day's sum to out when q selects it.
	keep := func(c *model.IssueCell, bucket int64) {
		if q.GroupID != "" && c.GroupID != q.GroupID || !q.MatchVersion(c.Version.Name, c.Version.Code) {
			return
		}
		if len(classes) > 0 && !slices.Contains(classes, c.Class) {
			return
		}
		out.merge(out.cell(cellKey{group: c.GroupID, class: c.Class, v: c.Version, bucket: bucket}), c)
	}
	var sums []summed // the whole days summed by this read
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: head})
		defer it.Close()
		var (
			day    = int64(math.MinInt64) // the day of the rows being read
			sum    *cellSet               // that day's sum being made, when it is whole
			bucket int64                  // and its bucket
			every  model.IssueQuery       // what a sum counts: every issue event of the day
			v      rowView
		)
		finish := func() {
			if sum == nil {
				return
			}
			cells := sum.done()
			sums = append(sums, summed{day, encodeIssueSum(txn.ReadTs(), cells)})
			for i := range cells {
				keep(&cells[i], bucket)
			}
			sum = nil
		}
		n := 0
		for it.Seek(timeKey(head, q.From)); it.Valid(); {
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			item := it.Item()
			k := item.Key()
			if len(k) != hl+8+idLen {
				return fmt.Errorf("%w: event row key of %d bytes", errCorrupt, len(k))
			}
			ts := getTime(k[hl:])
			if ts >= q.To {
				break
			}
			if d := model.DayStart(ts); d != day {
				finish()
				day = d
				var ok bool
				if bucket, ok = whole(d); ok {
					cells, used, err := readIssueSum(txn, app, d)
					if err != nil {
						return err
					}
					if used {
						for i := range cells {
							keep(&cells[i], bucket)
						}
						it.Seek(timeKey(head, d+factDay))
						continue
					}
					sum = newCellSet()
					every.From, every.To = d, d+factDay
				}
			}
			id := k[hl+8:]
			if err := item.Value(func(val []byte) error {
				if sum == nil {
					_, err := addRow(ts, id, val)
					return err
				}
				ok, err := v.issueMatch(ts, id, val, &every)
				if ok {
					sum.addEvent(&v.e, model.ClassOf(v.e.Type, &v.e.Facts), 0)
				}
				return err
			}); err != nil {
				return err
			}
			it.Next()
		}
		finish()
		return nil
	})
	if err != nil {
		return err
	}
	if len(sums) > 0 {
		if testHookBeforeSumsWritten != nil {
			testHookBeforeSumsWritten()
		}
		s.writeSums(issueDays, app, sums)
	}
	return nil
}

// testHookBeforeSumsWritten, when set by a test, runs between a read that summed days and the
// write of its sums: the moment a concurrent write can make them stale.
var testHookBeforeSumsWritten func()
