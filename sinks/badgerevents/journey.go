package badgerevents

// Journey facts: each session's walk kept whole, and the facts it counts (model.JourneyFact)
// filed by UTC day, so that a journey over a window reads the facts of its days instead of
// walking every session that had an event in it (at 10M events that walk read every row of the
// app and took 20 s).
//
//	ev/ w <app> <session>            → the session's walk steps, ascending by (time, id)
//	ev/ j <app> <day 8B> <session>   → the session's facts of that UTC day, in walk order
//	ev/ m journey v1                 → empty: every stored walk event has its step
//
// Both are written in the transaction that writes, rewrites or deletes the rows they come from
// (applyJourney): the transaction reads the session's steps, merges its changes (steps are
// identified by event id and time, as rows are, so writing a row again changes nothing), walks
// the session again and writes the facts of the days that changed. A row that arrives out of
// time order is merged where it belongs, so the facts always equal a walk of the stored events
// in time order, which is what SessionWalks gives. Two writers of one session conflict on its
// steps and one retries. A session keeps at most maxSessionSteps steps, its earliest ones.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

const (
	tagWalk  = 'w'
	tagFacts = 'j'
	// maxSessionSteps bounds the steps a session keeps (about 60 bytes each), so that one
	// session's walk fits a transaction with room to spare. A session with more walk events
	// counts only its earliest maxSessionSteps in journeys.
	maxSessionSteps = 20000
	factDay         = int64(24 * time.Hour)
	walkFormat      = 1
)

// journeyMarker says that every stored walk event has its step (stores written before journey
// facts get them built, see index.go).
var journeyMarker = []byte(badgerdb.PrefixEvents + "m" + "journey v1")

// walkStep is one walk event of a session with its event id.
type walkStep struct {
	id [16]byte
	w  model.WalkEvent
}

func stepOrder(a, b walkStep) int {
	if c := cmp.Compare(a.w.Timestamp, b.w.Timestamp); c != 0 {
		return c
	}
	return bytes.Compare(a.id[:], b.id[:])
}

// sessionRef names a session of an app.
type sessionRef struct{ app, session uuid.UUID }

// journeyEdit is what one transaction changes of one session's walk: steps to remove (rows
// rewritten or deleted) and steps to add (rows written), later adds of a step replacing earlier.
type journeyEdit struct {
	drop []stepKey
	add  []walkStep
}

// stepKey names a walk step as its row's key does: by its event's id and time (an id sent
// again at another time is another row, and another step).
type stepKey struct {
	id [16]byte
	ts int64
}

func (s *walkStep) key() stepKey { return stepKey{s.id, s.w.Timestamp} }

// journeyEdits collects a transaction's edits per session.
type journeyEdits map[sessionRef]*journeyEdit

func (e journeyEdits) of(app, session uuid.UUID) *journeyEdit {
	k := sessionRef{app, session}
	ed := e[k]
	if ed == nil {
		ed = &journeyEdit{}
		e[k] = ed
	}
	return ed
}

// dropStep removes the step k: an add of it earlier in the transaction goes too.
func (ed *journeyEdit) dropStep(k stepKey) {
	ed.add = slices.DeleteFunc(ed.add, func(s walkStep) bool { return s.key() == k })
	ed.drop = append(ed.drop, k)
}

func walkKey(app, session uuid.UUID) []byte {
	return append(appendHead(make([]byte, 0, 3+1+32), badgerdb.PrefixEvents, tagWalk, app), session[:]...)
}

func factsHead(app uuid.UUID) []byte {
	return appendHead(make([]byte, 0, 3+1+16+8+16), badgerdb.PrefixEvents, tagFacts, app)
}

func factsKey(app uuid.UUID, day int64, session uuid.UUID) []byte {
	k := factsHead(app)
	var t [8]byte
	putTime(t[:], day)
	return append(append(k, t[:]...), session[:]...)
}

// applyJourney merges the edits into their sessions' steps and rewrites the facts that changed,
// in txn. It returns Badger's errors as they are (ErrTxnTooBig when the transaction has no room).
func applyJourney(txn *badger.Txn, edits journeyEdits) error {
	var changed dayMarks // the days whose facts change
	for ref, ed := range edits {
		if err := applySession(txn, ref, ed, &changed); err != nil {
			return err
		}
	}
	return changed.write(txn, journeyDays)
}

// walkHead is what a session's walk value says before its steps: how many there are, the
// last of them (the order appended steps must follow) and the walk's state after them, so that
// steps arriving in time order are walked on without reading the earlier ones.
type walkHead struct {
	n    int
	last walkStep // the last step's time and id (its event is not kept)
	walk model.Walk
}

// walkValue is a session's walk as stored: its head and its steps' encoding.
type walkValue struct {
	head  walkHead
	steps []byte // the encoded steps (16-byte id, then the walk event), ascending
}

func applySession(txn *badger.Txn, ref sessionRef, ed *journeyEdit, changed *dayMarks) error {
	wk := walkKey(ref.app, ref.session)
	var old walkValue
	item, err := txn.Get(wk)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
	case err != nil:
		return err
	default:
		val, err := item.ValueCopy(nil) // the head's strings alias it
		if err == nil {
			old, err = decodeWalk(val)
		}
		if err != nil {
			return fmt.Errorf("walk of session %s: %w", ref.session, err)
		}
	}
	adds := lastAdds(ed.add)
	if len(ed.drop) == 0 && len(adds) > 0 && old.head.n+len(adds) <= maxSessionSteps &&
		(old.head.n == 0 || stepOrder(old.head.last, adds[0]) < 0) {
		return appendSession(txn, ref, wk, old, adds, changed)
	}
	// Out of order, rewritten or deleted steps: merge and walk the whole session again.
	before, err := decodeSteps(old)
	if err != nil {
		return fmt.Errorf("walk of session %s: %w", ref.session, err)
	}
	steps := mergeSteps(before, ed.drop, adds)
	if slices.Equal(before, steps) {
		return nil
	}
	oldFacts, _ := factsByDay(before)
	newFacts, walk := factsByDay(steps)
	if len(steps) == 0 {
		err = txn.Delete(wk)
	} else {
		err = txn.Set(wk, encodeWalk(walkHead{n: len(steps), last: steps[len(steps)-1], walk: walk}, nil, steps))
	}
	if err != nil {
		return err
	}
	for d, b := range newFacts {
		if !bytes.Equal(oldFacts[d], b) {
			if err := txn.Set(factsKey(ref.app, d, ref.session), b); err != nil {
				return err
			}
			changed.add(ref.app, d)
		}
	}
	for d := range oldFacts {
		if _, ok := newFacts[d]; !ok {
			if err := txn.Delete(factsKey(ref.app, d, ref.session)); err != nil {
				return err
			}
			changed.add(ref.app, d)
		}
	}
	return nil
}

// appendSession walks on over adds, all after the session's last step: the stored steps are
// copied as they are, and the new facts are appended to their days' facts.
func appendSession(txn *badger.Txn, ref sessionRef, wk []byte, old walkValue, adds []walkStep, changed *dayMarks) error {
	events := make([]model.WalkEvent, len(adds))
	for i := range adds {
		events[i] = adds[i].w
	}
	walk := old.head.walk
	walk.Edges = slices.Clip(walk.Edges) // Step appends: never onto the decoded value's slice
	facts := walk.AppendFacts(nil, events)
	head := walkHead{n: old.head.n + len(adds), last: adds[len(adds)-1], walk: walk}
	if err := txn.Set(wk, encodeWalk(head, old.steps, adds)); err != nil {
		return err
	}
	for i := 0; i < len(facts); {
		d := model.DayStart(facts[i].Event.Timestamp)
		fk := factsKey(ref.app, d, ref.session)
		b := []byte{walkFormat}
		item, err := txn.Get(fk)
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			if b, err = item.ValueCopy(make([]byte, 0, int(item.ValueSize())+64*(len(facts)-i))); err != nil {
				return err
			}
		}
		for ; i < len(facts) && model.DayStart(facts[i].Event.Timestamp) == d; i++ {
			b = appendFact(b, &facts[i])
		}
		if err := txn.Set(fk, b); err != nil {
			return err
		}
		changed.add(ref.app, d)
	}
	return nil
}

// lastAdds is adds with only the last add of each step, sorted.
func lastAdds(adds []walkStep) []walkStep {
	last := make(map[stepKey]int, len(adds))
	for i := range adds {
		last[adds[i].key()] = i
	}
	out := make([]walkStep, 0, len(last))
	for i := range adds {
		if last[adds[i].key()] == i {
			out = append(out, adds[i])
		}
	}
	slices.SortFunc(out, stepOrder)
	return out
}

// mergeSteps is old without the dropped and added steps, plus adds (one per step), sorted, cut
// to maxSessionSteps.
func mergeSteps(old []walkStep, drop []stepKey, adds []walkStep) []walkStep {
	gone := make(map[stepKey]bool, len(drop)+len(adds))
	for _, k := range drop {
		gone[k] = true
	}
	for i := range adds {
		gone[adds[i].key()] = true
	}
	out := make([]walkStep, 0, len(old)+len(adds))
	for _, s := range old {
		if !gone[s.key()] {
			out = append(out, s)
		}
	}
	out = append(out, adds...)
	slices.SortFunc(out, stepOrder)
	if len(out) > maxSessionSteps {
		out = out[:maxSessionSteps]
	}
	return out
}

// factsByDay walks the steps and encodes their facts per UTC day; it returns the walk's end
// state too.
func factsByDay(steps []walkStep) (map[int64][]byte, model.Walk) {
	var walk model.Walk
	if len(steps) == 0 {
		return nil, walk
	}
	events := make([]model.WalkEvent, len(steps))
	for i := range steps {
		events[i] = steps[i].w
	}
	out := map[int64][]byte{}
	for _, f := range walk.AppendFacts(nil, events) {
		d := model.DayStart(f.Event.Timestamp)
		b := out[d]
		if b == nil {
			b = []byte{walkFormat}
		}
		out[d] = appendFact(b, &f)
	}
	return out, walk
}

func appendWalkEvent(b []byte, w *model.WalkEvent) []byte {
	b = binary.AppendVarint(b, w.Timestamp)
	b = appendStr(b, w.Version.Name)
	b = appendStr(b, w.Version.Code)
	if w.Screen != "" {
		return appendStr(append(b, 0), w.Screen)
	}
	b = append(b, byte(w.Class))
	return appendStr(appendStr(b, w.GroupID), w.Title)
}

func (r *reader) walkEvent(w *model.WalkEvent) {
	w.Timestamp = r.varint()
	w.Version.Name, w.Version.Code = r.str(), r.str()
	w.Screen, w.GroupID, w.Title, w.Class = "", "", "", 0
	switch c := r.byte(); c {
	case 0:
		w.Screen = r.str()
		if w.Screen == "" {
			r.fail()
		}
	case byte(model.ClassCrash), byte(model.ClassANR):
		w.Class = model.IssueClass(c)
		w.GroupID, w.Title = r.str(), r.str()
	default:
		r.fail()
	}
}

// encodeWalk is a walk value: the head, then the steps already encoded (stored), then steps.
//
//	format, n, last time, last id, screen, edge count, edges…, steps…
func encodeWalk(h walkHead, stored []byte, steps []walkStep) []byte {
	b := make([]byte, 0, 64+len(stored)+len(steps)*64)
	b = binary.AppendUvarint(append(b, walkFormat), uint64(h.n))
	b = binary.AppendVarint(b, h.last.w.Timestamp)
	b = append(b, h.last.id[:]...)
	b = appendStr(b, h.walk.Screen)
	b = binary.AppendUvarint(b, uint64(len(h.walk.Edges)))
	for _, e := range h.walk.Edges {
		b = appendStr(b, e)
	}
	b = append(b, stored...)
	for i := range steps {
		b = append(b, steps[i].id[:]...)
		b = appendWalkEvent(b, &steps[i].w)
	}
	return b
}

// decodeWalk reads a walk value's head; its strings alias v.
func decodeWalk(v []byte) (walkValue, error) {
	r := reader{s: unsafe.String(unsafe.SliceData(v), len(v))}
	if r.byte() != walkFormat {
		r.fail()
	}
	var w walkValue
	w.head.n = r.count(20)
	w.head.last.w.Timestamp = r.varint()
	w.head.last.id = r.uuid()
	w.head.walk.Screen = r.str()
	w.head.walk.Edges = make([]string, r.count(1))
	for i := range w.head.walk.Edges {
		w.head.walk.Edges[i] = r.str()
	}
	if r.err != nil {
		return walkValue{}, r.err
	}
	w.steps = v[r.i:]
	return w, nil
}

// decodeSteps decodes a walk value's steps; their strings alias the value.
func decodeSteps(w walkValue) ([]walkStep, error) {
	r := reader{s: unsafe.String(unsafe.SliceData(w.steps), len(w.steps))}
	out := make([]walkStep, w.head.n)
	for i := range out {
		out[i].id = r.uuid()
		r.walkEvent(&out[i].w)
	}
	if r.err == nil && r.i != len(r.s) {
		r.fail()
	}
	return out, r.err
}

func appendFact(b []byte, f *model.JourneyFact) []byte {
	return appendWalkEvent(appendStr(b, f.From), &f.Event)
}

// eachFact decodes a day's facts of a session, calling fn with each; strings alias s.
func eachFact(s string, fn func(f *model.JourneyFact) error) error {
	r := reader{s: s}
	if r.byte() != walkFormat {
		r.fail()
	}
	var f model.JourneyFact
	for r.err == nil && r.i < len(r.s) {
		f.From = r.str()
		r.walkEvent(&f.Event)
		if r.err != nil {
			break
		}
		if err := fn(&f); err != nil {
			return err
		}
	}
	return r.err
}

// fact points every string of f at the interner's copies (TestInternFact checks it misses none).
func (in interner) fact(f *model.JourneyFact) {
	f.From = in.get(f.From)
	w := &f.Event
	w.Version.Name, w.Version.Code = in.get(w.Version.Name), in.get(w.Version.Code)
	w.Screen, w.GroupID, w.Title = in.get(w.Screen), in.get(w.GroupID), in.get(w.Title)
}

// JourneyFacts calls fn with the facts of the app's sessions in [from, to); see sinks.Analytics.
// It reads the facts filed under the days the window touches, and keeps those inside it; a day
// whole in the window comes from its sum while that holds, and is summed as it is read when not
// (journeydays.go). Until a store written before journey facts has them built, it walks the
// sessions (SessionWalks).
func (s *Store) JourneyFacts(ctx context.Context, app uuid.UUID, from, to int64, fn func(f *model.JourneyFact) error) error {
	if from >= to {
		return nil
	}
	ready, err := s.built(ctx, &s.journey)
	if err != nil {
		return fmt.Errorf("badgerevents: journey facts of app %s: %w", app, err)
	}
	if !ready {
		return sinks.WalkJourneyFacts(ctx, s.SessionWalks, app, from, to, fn)
	}
	head := factsHead(app)
	dayAt := func(d int64) []byte { return appendTimeKey(nil, badgerdb.PrefixEvents, tagFacts, app, d, nil) }
	// The days whose facts can be in the window. DayStart clamps the times of int64's first two
	// days to its floor, all but firstDay's first instant, whose facts are filed under firstDay.
	first, last := model.DayStart(from), model.DayStart(to-1)
	if first < math.MinInt64+factDay {
		first = math.MinInt64
	}
	if last == math.MinInt64 {
		last = firstDay
	}
	var (
		fnErr error
		sums  []*daySum // the whole days summed by this read
		strs  = interner{}
	)
	err = s.db.View(func(txn *badger.Txn) error {
		// No prefetch: facts values are small and live in the LSM tree, and Badger's prefetch
		// starts a goroutine per item (43 % of the read's time, BenchmarkJourney1M).
		it := txn.NewIterator(badger.IteratorOptions{Prefix: head, PrefetchValues: false})
		defer it.Close()
		n := 0
		day := int64(math.MinInt64) // the day of the keys being read
		var sum *daySum             // that day's sum being made, when it is whole in the window
		for it.Seek(dayAt(first)); it.Valid(); {
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			item := it.Item()
			k := item.Key()
			if len(k) != len(head)+8+16 {
				return fmt.Errorf("%w: journey facts key of %d bytes", errCorrupt, len(k))
			}
			if d := getTime(k[len(head):]); d != day {
				if d > last {
					break
				}
				day, sum = d, nil
				if wholeDay(d, from, to) {
					used, err := readDaySum(txn, app, d, func(f *model.JourneyFact) error {
						fnErr = fn(f)
						return fnErr
					})
					if err != nil {
						return err
					}
					if used {
						it.Seek(dayAt(d + factDay))
						continue
					}
					sum = newDaySum(d, txn.ReadTs())
					sums = append(sums, sum)
				}
			}
			// The facts are read in place, and their strings interned before fn sees them: fn
			// may keep them, and Badger reuses v after this call. A copy of each value was
			// most of what a cut day's read allocated (BenchmarkJourney1M/facts-half-day).
			if err := item.Value(func(v []byte) error {
				return eachFact(unsafe.String(unsafe.SliceData(v), len(v)), func(f *model.JourneyFact) error {
					if f.Event.Timestamp < from || f.Event.Timestamp >= to {
						return nil
					}
					strs.fact(f)
					if sum != nil {
						sum.add(f)
					}
					fnErr = fn(f)
					return fnErr
				})
			}); err != nil {
				return err
			}
			it.Next()
		}
		return nil
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return fmt.Errorf("badgerevents: journey facts of app %s: %w", app, err)
	}
	if len(sums) > 0 {
		s.writeDaySums(app, sums)
	}
	return nil
}

// walkStepOf is the step of an event row being written, ok false when it is no walk event.
func walkStepOf(e *model.Event) (walkStep, bool) {
	w, ok := model.WalkEventOf(e)
	return walkStep{id: e.ID, w: w}, ok
}

// walkRow decodes an event row as far as its walk step (and session) and says whether it is a
// walk event. The step's strings alias val.
func (v *rowView) walkRow(ts int64, id, val []byte) (walkStep, bool, error) {
	if err := v.head(ts, id, val); err != nil {
		return walkStep{}, false, err
	}
	if err := v.rest(false); err != nil {
		return walkStep{}, false, err
	}
	st, ok := walkStepOf(&v.e)
	return st, ok, nil
}

// tryJourney applies, in one transaction, the walk events among at most limit event rows (of
// every app) from the key from to their sessions' steps and facts (the journey backfill). It
// returns the key to resume from, nil at the end.
func (s *Store) tryJourney(head, from []byte, limit int) ([]byte, error) {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	edits := journeyEdits{}
	var v rowView
	next, err := buildRows(txn, head, from, limit, func(item *badger.Item, app uuid.UUID, ts int64, id []byte) (bool, error) {
		val, err := item.ValueCopy(nil) // the step's strings alias it until the commit
		if err != nil {
			return false, err
		}
		st, walk, err := v.walkRow(ts, id, val)
		if walk {
			ed := edits.of(app, v.e.SessionID)
			ed.add = append(ed.add, st)
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if err := applyJourney(txn, edits); err != nil {
		return nil, err
	}
	return next, txn.Commit()
}
