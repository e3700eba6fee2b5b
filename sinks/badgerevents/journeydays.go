package badgerevents

// Day sums of journey facts (daysums.go). A journey over whole days read every session's facts
// of those days (journey.go): at 10M events a week holds about a million, 230–370 ms to read. A
// day's facts summed over its sessions are a few hundred, so a whole day of a window is read
// from its sum while the sum holds, and summed again (and kept) when it does not. Every
// transaction that changes a day's journey facts marks the day (applyJourney).

import (
	"encoding/binary"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

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

// encode is the sum's value: journeyDays.begin, then each summed fact (appendFact: its event's
// time is the earliest) with its count and latest time.
func (s *daySum) encode() []byte {
	b := journeyDays.begin(s.readTs)
	for _, k := range s.keys {
		c := s.sums[k]
		f := model.JourneyFact{From: k.from, Event: model.WalkEvent{Timestamp: c.first,
			Version: model.AppVersion{Name: k.name, Code: k.code}, Screen: k.screen, GroupID: k.group, Class: k.class, Title: k.title}}
		b = binary.AppendVarint(binary.AppendUvarint(appendFact(b, &f), uint64(c.n)), c.last)
	}
	return b
}

// readDaySum passes fn the facts of the app's day from its sum when the sum holds in txn
// (journeyDays.read), and says whether it did. A sum that does not decode (damaged) is derived
// data: it is not used, and the day is summed again.
func readDaySum(txn *badger.Txn, app uuid.UUID, day int64, fn func(f *model.JourneyFact) error) (bool, error) {
	body, ok, err := journeyDays.read(txn, app, day)
	if err != nil || !ok {
		return false, err
	}
	var facts []model.JourneyFact
	r := reader{s: body}
	for r.err == nil && r.i < len(r.s) {
		var f model.JourneyFact
		f.From = r.str()
		r.walkEvent(&f.Event)
		f.N = r.uvarint()
		f.Last = r.varint()
		facts = append(facts, f)
	}
	if r.err != nil {
		return false, nil
	}
	for i := range facts {
		if err := fn(&facts[i]); err != nil {
			return true, err
		}
	}
	return true, nil
}

// writeDaySums keeps journey day sums made by a read (Store.writeSums).
func (s *Store) writeDaySums(app uuid.UUID, sums []*daySum) {
	vals := make([]summed, len(sums))
	for i, sum := range sums {
		vals[i] = summed{sum.day, sum.encode()}
	}
	s.writeSums(journeyDays, app, vals)
}
