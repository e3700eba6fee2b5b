package badgerevents

// Analytics over the embedded store: every query scans the app's time-ordered rows of its
// window in one read transaction and aggregates in Go with the model's definitions
// (EventFilter.Match, IssueQuery.MatchIssue, ClassOf, Buckets.Start, MetricsInput.AddSession), so
// this backend is the reference the SQL of the other agrees with. Two read whole days from day
// sums of those rows where they can (IssueCells: issuedays.go; JourneyFacts: journeydays.go).
//
// Scans decode rows in place (rowView): the strings of the decoded event alias Badger's value
// bytes, attachments and payload are skipped, and user-defined attributes are read only when a
// filter needs them, so a row that does not match costs no allocation. Whatever outlives the row
// (map keys, cell displays, walk events) is cloned. Issue queries look at the type first and
// decode nothing more of rows that are no exception or anr. Beware of assigning to a map with an
// aliased key: Go replaces a stored string key with the one assigned, so assignments use the
// cloned (interned) key.
//
// Scans do not prefetch values: Badger's prefetch starts a goroutine per row, which doubled the
// time of a scan (BenchmarkBadgerIssueCells); most rows' values are inline in the LSM tree.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

var _ sinks.Analytics = (*Store)(nil)

// idLen is the length of an event id in a row key.
const idLen = 16

// window says which of an app's event rows a scan reads, and in which order.
type window struct {
	lo, hi  int64 // row time in [lo, hi)
	open    bool  // no upper bound: hi is ignored
	reverse bool  // descending key order: time, then id, descending
	// issues says that the scan needs only rows of issue types (isIssueType): it reads the
	// issue index instead of all rows. Store.useIndex clears it while the index is incomplete.
	issues bool
	// start, when set, is where the scan seeks to instead of its time bound: a time (8 bytes,
	// as in keys) and an id. The first row read is the one there or the next one in the
	// scan's direction. Rows outside [lo, hi) are still left out.
	start []byte
}

// rowFunc gets one row: its time, its id (aliasing the key) and value (valid only during the
// call). It returns false to end the scan.
type rowFunc func(ts int64, id, val []byte) (bool, error)

// scan calls fn for the app's event rows of w in key order, read from the rows or, with
// w.issues, from their copies in the issue index. Rows in blocks (docs/event-blocks.md) are
// merged with the row keys, a block's copy of a row winning over its row key. It checks ctx
// before the first row and every 1024 rows.
func scan(ctx context.Context, txn *badger.Txn, app uuid.UUID, w window, fn rowFunc) error {
	m := newMerged(txn, app, w, rowIterOpts{ctx: ctx}, false)
	defer m.close()
	return mergeSources(ctx, m, func(ts int64, id []byte, item *badger.Item) (more bool, err error) {
		err = item.Value(func(v []byte) error {
			more, err = fn(ts, id, v)
			return err
		})
		return more, err
	}, func(r *blockRow) (bool, error) { return fn(r.ts, r.id, r.val) })
}

// mergeSources walks m's rows, calling onRow with a row key's row and onBlock with a block's,
// until either returns false. A row both hold goes to onBlock alone: a block's copy of a row
// wins over its row key. It checks ctx before the first row and every 1024 rows.
func mergeSources(ctx context.Context, m *mergedRows,
	onRow func(ts int64, id []byte, item *badger.Item) (bool, error), onBlock func(r *blockRow) (bool, error)) error {
	for n := 0; ; n++ {
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		ts, id, item, b, err := m.peek()
		if err != nil || item == nil && b == nil {
			return err
		}
		var more bool
		if b != nil {
			more, err = onBlock(b)
		} else {
			more, err = onRow(ts, id, item)
		}
		m.next()
		if err != nil || !more {
			return err
		}
	}
}

// mergedRows merges an app's row keys (rows) and blocks (blocks; nil: none) in one order, one
// row at a time.
type mergedRows struct {
	rows    *rowIter
	blocks  *blockSource // nil: none
	reverse bool
	c       int // what peek returned: < 0 the row key's row, > 0 the block's, 0 both
}

// newMerged opens the app's rows of w from row keys (read as o says) and blocks (with ids, the
// id blocks: rows without values), merged in w's order; the issue index (w.issues) has no
// blocks. The caller closes it.
func newMerged(txn *badger.Txn, app uuid.UUID, w window, o rowIterOpts, ids bool) *mergedRows {
	m := &mergedRows{rows: newRowIter(txn, app, w, o), reverse: w.reverse}
	if !w.issues {
		m.blocks = newBlockSource(txn, app, w, ids)
	}
	return m
}

// close closes m's iterators; closing twice is harmless.
func (m *mergedRows) close() {
	m.rows.close()
	if m.blocks != nil {
		m.blocks.close()
	}
}

// peek returns the next row without moving past it: from a row key (its time, its id and its
// item) or from a block (b), or neither at the end.
func (m *mergedRows) peek() (ts int64, id []byte, item *badger.Item, b *blockRow, err error) {
	ts, id, item, ok, err := m.rows.peek()
	if err != nil {
		return 0, nil, nil, nil, err
	}
	if m.blocks != nil {
		if b, err = m.blocks.peek(); err != nil {
			return 0, nil, nil, nil, err
		}
	}
	m.c = compareNext(ok, ts, id, b, m.reverse)
	if m.c < 0 {
		return ts, id, item, nil, nil
	}
	if b == nil {
		return 0, nil, nil, nil, nil
	}
	return b.ts, b.id, nil, b, nil
}

// next moves past the row peek returned.
func (m *mergedRows) next() {
	if m.c <= 0 {
		m.rows.next()
	}
	if m.c >= 0 && m.blocks != nil {
		m.blocks.next()
	}
}

// compareNext says which of a row key's row (when ok: ts, id) and a block's row (b, when not
// nil) a scan in this direction gives next: < 0 the row key's, > 0 the block's, 0 both (the
// same row) or, with neither, nothing.
func compareNext(ok bool, ts int64, id []byte, b *blockRow, reverse bool) int {
	switch {
	case !ok && b == nil:
		return 0
	case !ok:
		return 1
	case b == nil:
		return -1
	}
	c := compareRows(&blockRow{ts: ts, id: id}, b)
	if reverse {
		c = -c
	}
	return c
}

// rowIter walks the app's row keys of a window (or, with w.issues, its issue index copies) in
// the window's order.
type rowIter struct {
	it   *badger.Iterator
	w    window
	o    rowIterOpts
	hl   int  // the length of the rows' head
	n    int  // keys walked, for the ctx checks
	done bool // past the window's end
}

// rowIterOpts are how a rowIter reads.
type rowIterOpts struct {
	ctx context.Context // checked every 1024 keys walked, rows passed over included; nil: never
	// prefetch reads values ahead of the rows (Badger's prefetch, 64 at a time): for a reader
	// of every row's value from the value log, such as Usage. Scans do without (analytics.go).
	prefetch bool
	// lenient passes over keys that are no row key (of another length) instead of failing, as
	// the point reads and Usage always did.
	lenient bool
}

func newRowIter(txn *badger.Txn, app uuid.UUID, w window, o rowIterOpts) *rowIter {
	tag := byte(tagRow)
	if w.issues {
		tag = tagIssue
	}
	head := appendHead(nil, badgerdb.PrefixEvents, tag, app)
	opts := badger.IteratorOptions{Prefix: head, Reverse: w.reverse}
	if o.prefetch {
		opts.PrefetchValues, opts.PrefetchSize = true, 64
	}
	it := txn.NewIterator(opts)
	var seek []byte
	switch {
	case w.start != nil:
		seek = append(head, w.start...)
	case !w.reverse:
		seek = timeKey(head, w.lo)
	case w.open:
		// After every row: a key of the head and 0xff bytes longer than any time and id.
		seek = append(head, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"...)
	default:
		// Reverse: the largest key at or below head+time(hi), which is a row before hi (a row
		// at hi has this as a prefix, so it sorts after).
		seek = timeKey(head, w.hi)
	}
	it.Seek(seek)
	return &rowIter{it: it, w: w, o: o, hl: len(head)}
}

func (r *rowIter) close() { r.it.Close() }

// peek returns the next row of the window without moving past it: its time, its id (aliasing
// the key) and its item, or ok false at the end.
func (r *rowIter) peek() (ts int64, id []byte, item *badger.Item, ok bool, err error) {
	for ; !r.done && r.it.Valid(); r.it.Next() {
		if r.n++; r.n&1023 == 0 && r.o.ctx != nil {
			if err := r.o.ctx.Err(); err != nil {
				return 0, nil, nil, false, err
			}
		}
		item := r.it.Item()
		k := item.Key()
		if len(k) != r.hl+8+idLen {
			if r.o.lenient {
				continue
			}
			return 0, nil, nil, false, fmt.Errorf("%w: event row key of %d bytes", errCorrupt, len(k))
		}
		ts := getTime(k[r.hl:])
		if r.w.reverse {
			if ts < r.w.lo {
				break
			}
			if !r.w.open && ts >= r.w.hi {
				continue
			}
		} else {
			if !r.w.open && ts >= r.w.hi {
				break
			}
			if ts < r.w.lo {
				continue
			}
		}
		return ts, k[r.hl+8:], item, true, nil
	}
	r.done = true
	return 0, nil, nil, false, nil
}

// next moves past the row peek returned.
func (r *rowIter) next() { r.it.Next() }

// useIndex keeps w.issues only if the issue index can be read (Store.issuesIndexed, which may
// build it). It must run before the scan's read transaction starts, so that the transaction's
// snapshot holds the copies the check found.
func (s *Store) useIndex(ctx context.Context, w *window) error {
	if !w.issues {
		return nil
	}
	var err error
	w.issues, err = s.issuesIndexed(ctx)
	return err
}

// scanView is scan in a read transaction of its own, over the issue index with w.issues when
// it can be read (useIndex).
func (s *Store) scanView(ctx context.Context, app uuid.UUID, w window, fn rowFunc) error {
	if err := s.useIndex(ctx, &w); err != nil {
		return err
	}
	return s.db.View(func(txn *badger.Txn) error { return scan(ctx, txn, app, w, fn) })
}

// timeKey is the key just before the rows at time ts: head and the time, without an id.
func timeKey(head []byte, ts int64) []byte {
	k := append(head[:len(head):len(head)], make([]byte, 8)...)
	putTime(k[len(head):], ts)
	return k
}

// rowView decodes event rows in place. Its event's strings alias the row's bytes: they are
// valid only as long as the value passed to head (inside Badger's Value callback).
type rowView struct {
	r  reader
	e  model.Event
	ud []model.UDAttr // reused for UserDefined
}

// head starts a row: it decodes the layout, flags, session id and type, nothing more.
func (v *rowView) head(ts int64, id, val []byte) error {
	v.e = model.Event{Timestamp: ts}
	copy(v.e.ID[:], id)
	v.r = reader{s: unsafe.String(unsafe.SliceData(val), len(val))}
	v.r.version(eventLayout)
	v.e.UserTriggered = v.r.byte()&1 != 0
	v.e.SessionID = v.r.uuid()
	v.e.Type = v.r.str()
	return v.r.err
}

// issueMatch decodes a row as far as an issue query needs (head, then the rest only for an
// exception or anr) and says whether q selects it; err names the row when it cannot be read.
// IssueCells, IssueEvents and IssueDistribution read their rows through it.
func (v *rowView) issueMatch(ts int64, id, val []byte, q *model.IssueQuery) (bool, error) {
	if err := v.head(ts, id, val); err != nil {
		return false, rowErr(ts, id, err)
	}
	if !v.isIssueType() {
		return false, nil
	}
	if err := v.rest(q.UD != nil); err != nil {
		return false, rowErr(ts, id, err)
	}
	return q.MatchIssue(&v.e), nil
}

// isIssueType says whether the row's type can have an issue class (ClassOf): exception or anr.
func (v *rowView) isIssueType() bool { return isIssueType(v.e.Type) }

// isIssueType says whether events of type typ can have an issue class (ClassOf), which is
// whether their rows have a copy in the issue index.
func isIssueType(typ string) bool { return typ == "exception" || typ == "anr" }

// rest decodes the remaining fields the analytics read: attributes (without Extra), the
// user-defined attributes when wantUD, and the facts. Attachments and payload are skipped.
func (v *rowView) rest(wantUD bool) error {
	r := &v.r
	a := &v.e.Attribute
	f := r.byte()
	a.DeviceIsFoldable = f&flagFoldable != 0
	a.DeviceIsPhysical = f&flagPhysical != 0
	a.DeviceLowPowerMode = f&flagLowPower != 0
	a.DeviceThermalThrottlingEnabled = f&flagThermal != 0
	for _, p := range [...]*string{&a.InstallationID, &a.AppVersion, &a.AppBuild, &a.AppUniqueID,
		&a.Platform, &a.SDKVersion, &a.ThreadName, &a.UserID, &a.DeviceName, &a.DeviceModel,
		&a.DeviceManufacturer, &a.DeviceType, &a.DeviceLocale, &a.OSName, &a.OSVersion,
		&a.NetworkType, &a.NetworkProvider, &a.NetworkGeneration, &a.DeviceCPUArch} {
		*p = r.str()
	}
	a.DeviceDensityDPI = r.u16()
	a.DeviceWidthPx = r.u16()
	a.DeviceHeightPx = r.u16()
	a.DeviceDensity = r.f32()
	a.OSPageSize = r.byte()
	a.SessionStartTime = r.varint()
	if r.v >= layoutV2 {
		r.str() // Extra
	}
	n := r.count(3)
	if wantUD {
		v.ud = v.ud[:0]
		for range n {
			key := r.str()
			typ := model.UDType(r.byte())
			v.ud = append(v.ud, model.UDAttr{Key: key, Type: typ, Value: r.str()})
		}
		if n > 0 {
			v.e.UserDefined = v.ud
		}
	} else {
		for range n {
			r.str()
			r.byte()
			r.str()
		}
	}
	minAtt := 16 + 5
	if r.v >= layoutV2 {
		minAtt += 2
	}
	for range r.count(minAtt) {
		r.skip(16)
		for range 5 {
			r.str()
		}
		if r.v >= layoutV2 {
			r.varint()
			r.str()
		}
	}
	r.str() // payload
	if r.v >= layoutV3 {
		r.facts(&v.e.Facts)
	}
	if r.err == nil && r.i != len(r.s) {
		r.err = errCorrupt
	}
	return r.err
}

// skip passes n bytes.
func (r *reader) skip(n int) {
	if len(r.s)-r.i < n {
		r.fail()
		return
	}
	r.i += n
}

// fullEvent decodes a whole row as Event returns it.
func fullEvent(app uuid.UUID, ts int64, id, val []byte) (model.Event, error) {
	e := model.Event{AppID: app, Timestamp: ts}
	copy(e.ID[:], id)
	err := decodeEvent(val, &e)
	return e, err
}

// rowErr names the row a decoding error came from.
func rowErr(ts int64, id []byte, err error) error {
	return fmt.Errorf("event row %x at %d: %w", id, ts, err)
}

// interner keeps one copy of each string that outlives a scan's rows; lookups with an aliased
// string allocate nothing.
type interner map[string]string

func (in interner) get(s string) string {
	if c, ok := in[s]; ok {
		return c
	}
	c := strings.Clone(s)
	in[c] = c
	return c
}

// keep is get(s) for a field whose kept value was have: have itself when s equals it, without
// a lookup.
func (in interner) keep(have, s string) string {
	if have == s {
		return have
	}
	return in.get(s)
}

func (in interner) version(a *model.Attributes) model.AppVersion {
	return model.AppVersion{Name: in.get(a.AppVersion), Code: in.get(a.AppBuild)}
}

// versionOf is the event's version, aliasing the row (not to be kept).
func versionOf(e *model.Event) model.AppVersion {
	return model.AppVersion{Name: e.Attribute.AppVersion, Code: e.Attribute.AppBuild}
}

// bucketer is model.Buckets.Start in Unix nanoseconds, remembering the last bucket (from its
// Start to its Next) so that a time-ordered scan computes a bucket once, not once per row.
type bucketer struct {
	by     model.Buckets
	lo, hi int64
	ok     bool
}

func (b *bucketer) start(ts int64) int64 {
	if b.ok && ts >= b.lo && ts < b.hi {
		return b.lo
	}
	t := b.by.Start(time.Unix(0, ts))
	b.lo, b.hi = nanos(t), nanos(b.by.Next(t))
	b.ok = ts >= b.lo && ts < b.hi // false only where nanos clamped (before 1678 or after 2261)
	return b.lo
}

// IssueCells aggregates the matching issue events into cells (IssueCell.Merge of one event at
// a time); see sinks.Analytics. It scans the window oldest first: Badger iterates forward
// much faster than in reverse, and Merge takes events in any order (IssueCell.Later picks
// the latest, ties included). A query a cell can say (cellsByDay) reads the days whole in its
// window from their sums (issuedays.go).
func (s *Store) IssueCells(ctx context.Context, q *model.IssueQuery, by model.Cells) ([]model.IssueCell, error) {
	return s.issueCells(ctx, q, by, true)
}

// issueCells is IssueCells, reading every row of the window when daySums is false (tests
// compare the two).
func (s *Store) issueCells(ctx context.Context, q *model.IssueQuery, by model.Cells, daySums bool) ([]model.IssueCell, error) {
	if q.From >= q.To {
		return []model.IssueCell{}, nil
	}
	out := newCellSet()
	bk := bucketer{by: by.By}
	var v rowView
	addRow := func(ts int64, id, val []byte) (bool, error) {
		if ok, err := v.issueMatch(ts, id, val, q); !ok {
			return err == nil, err
		}
		var bucket int64
		if by.Bucketed {
			bucket = bk.start(ts)
		}
		out.addEvent(&v.e, model.ClassOf(v.e.Type, &v.e.Facts), bucket)
		return true, nil
	}
	w := window{lo: q.From, hi: q.To, issues: true}
	err := s.useIndex(ctx, &w)
	if err == nil {
		if classes, ok := q.ByClass(); ok && daySums && w.issues && q.Unfiltered() {
			err = s.cellsByDay(ctx, q, by, classes, out, addRow)
		} else {
			err = s.db.View(func(txn *badger.Txn) error { return scan(ctx, txn, q.App, w, addRow) })
		}
	}
	if err != nil {
		return nil, fmt.Errorf("badgerevents: issue cells of app %s: %w", q.App, err)
	}
	return out.done(), nil
}

// IssueEvents returns a page of the matching issue events in the instance order; see
// sinks.Analytics. Rows are keyed by (time, id) ascending, the reverse of the instance order:
// a forward page scans descending from just below Key (or the window's end), a Backward page
// ascending from just above Key and is reversed before it is returned. Backward without Key
// is taken as the first page (EventPage calls it meaningless).
func (s *Store) IssueEvents(ctx context.Context, q *model.IssueQuery, page model.EventPage) ([]model.Event, error) {
	if page.Limit < 1 {
		return nil, fmt.Errorf("badgerevents: issue events: %w: page limit %d, want at least 1", sinks.ErrInvalid, page.Limit)
	}
	out := []model.Event{}
	if q.From >= q.To {
		return out, nil
	}
	key := page.Key
	backward := page.Backward && key != nil
	w := window{lo: q.From, hi: q.To, reverse: !backward, issues: true}
	switch {
	case key == nil:
	case backward && key.Timestamp >= q.From, !backward && key.Timestamp < q.To:
		w.start = append(timeKey(nil, key.Timestamp), key.ID[:]...)
	}
	var v rowView
	err := s.scanView(ctx, q.App, w, func(ts int64, id, val []byte) (bool, error) {
		if ok, err := v.issueMatch(ts, id, val, q); !ok {
			return err == nil, err
		}
		// The row at Key itself (the seek lands on it when it exists) is on no page.
		if key != nil && (backward && !afterKey(key, ts, v.e.ID) || !backward && !key.Before(ts, v.e.ID)) {
			return true, nil
		}
		e, err := fullEvent(q.App, ts, id, val)
		if err != nil {
			return false, rowErr(ts, id, err)
		}
		out = append(out, e)
		return len(out) < page.Limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: issue events of app %s: %w", q.App, err)
	}
	if backward {
		slices.Reverse(out)
	}
	return out, nil
}

// afterKey says whether (t, id) comes before k in the instance order (is newer).
func afterKey(k *model.EventKey, t int64, id uuid.UUID) bool {
	return t > k.Timestamp || t == k.Timestamp && slices.Compare(k.ID[:], id[:]) < 0
}

// SessionBuckets counts sessions per version and bucket; see sinks.Analytics. A crash is an
// exception event with the Fatal fact, an ANR any anr event (with a group or not).
func (s *Store) SessionBuckets(ctx context.Context, f *model.EventFilter, by model.Buckets) ([]model.SessionBucket, error) {
	type sessKey struct {
		v       model.AppVersion
		bucket  int64
		session uuid.UUID
	}
	type bucketKey struct {
		v      model.AppVersion
		bucket int64
	}
	const crashed, withANR = 1, 2
	out := []model.SessionBucket{}
	if f.From >= f.To {
		return out, nil
	}
	sessions := map[sessKey]uint8{}
	strs := interner{}
	bk := bucketer{by: by}
	var v rowView
	err := s.db.View(func(txn *badger.Txn) error {
		return scan(ctx, txn, f.App, window{lo: f.From, hi: f.To}, func(ts int64, id, val []byte) (bool, error) {
			if err := v.head(ts, id, val); err != nil {
				return false, rowErr(ts, id, err)
			}
			if err := v.rest(f.UD != nil); err != nil {
				return false, rowErr(ts, id, err)
			}
			e := &v.e
			if !f.Match(e) {
				return true, nil
			}
			k := sessKey{v: versionOf(e), bucket: bk.start(ts), session: e.SessionID}
			var flag uint8
			switch {
			case e.Type == "exception" && e.Facts.Fatal:
				flag = crashed
			case e.Type == "anr":
				flag = withANR
			}
			// Assigning to a map overwrites a stored key with the one given (Go updates string
			// keys), so only the interned version may be used to assign.
			if old, ok := sessions[k]; !ok || old|flag != old {
				k.v = strs.version(&e.Attribute)
				sessions[k] = old | flag
			}
			return true, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: session buckets of app %s: %w", f.App, err)
	}
	idx := map[bucketKey]int{}
	for k, flags := range sessions {
		bk := bucketKey{k.v, k.bucket}
		i, ok := idx[bk]
		if !ok {
			i = len(out)
			idx[bk] = i
			out = append(out, model.SessionBucket{Version: k.v, Bucket: k.bucket})
		}
		b := &out[i]
		b.Sessions++
		b.Crashed += uint64(flags & crashed)
		b.WithANR += uint64(flags&withANR) >> 1
	}
	return out, nil
}

// Metrics fills the store's part of the health metrics; see sinks.Analytics. Per session it
// collects the versions its events carried with their crash and ANR flags (a crash is an
// exception with the Fatal fact, an ANR an anr event, each foreground with the Foreground
// fact) and counts it with MetricsInput.AddSession; launches go to the side of their event's
// version. With sel nil every version counts as the selected one.
func (s *Store) Metrics(ctx context.Context, app uuid.UUID, from, to int64, sel *model.AppVersion) (model.MetricsInput, error) {
	var in model.MetricsInput
	if from >= to {
		return in, nil
	}
	sessions := map[uuid.UUID][]model.SessionVersionFacts{}
	strs := interner{}
	var launches [2][3][]float64 // side (0 selected, 1 others) × cold, warm, hot
	var v rowView
	err := s.db.View(func(txn *badger.Txn) error {
		return scan(ctx, txn, app, window{lo: from, hi: to}, func(ts int64, id, val []byte) (bool, error) {
			if err := v.head(ts, id, val); err != nil {
				return false, rowErr(ts, id, err)
			}
			if err := v.rest(false); err != nil {
				return false, rowErr(ts, id, err)
			}
			e := &v.e
			ver := versionOf(e)
			side := 0
			if sel != nil && ver != *sel {
				side = 1
			}
			if k := launchIndex(e.Facts.LaunchKind); k >= 0 {
				launches[side][k] = append(launches[side][k], e.Facts.LaunchMs)
			}
			facts := sessions[e.SessionID]
			i := slices.IndexFunc(facts, func(f model.SessionVersionFacts) bool { return f.Version == ver })
			if i < 0 {
				i = len(facts)
				facts = append(facts, model.SessionVersionFacts{Version: strs.version(&e.Attribute)})
				sessions[e.SessionID] = facts
			}
			x := &facts[i]
			switch e.Type {
			case "exception":
				if e.Facts.Fatal {
					x.Crashed = true
					x.CrashedForeground = x.CrashedForeground || e.Facts.Foreground
				}
			case "anr":
				x.ANR = true
				x.ANRForeground = x.ANRForeground || e.Facts.Foreground
			}
			return true, nil
		})
	})
	if err != nil {
		return model.MetricsInput{}, fmt.Errorf("badgerevents: metrics of app %s: %w", app, err)
	}
	var selected model.AppVersion
	if sel != nil {
		selected = *sel
	}
	for _, facts := range sessions {
		if sel == nil {
			for i := range facts {
				facts[i].Version = selected
			}
		}
		in.AddSession(facts, selected)
	}
	for side, l := range [...]*model.Launches{&in.SelectedLaunch, &in.OthersLaunch} {
		l.Cold = model.SummarizeLaunches(launches[side][0])
		l.Warm = model.SummarizeLaunches(launches[side][1])
		l.Hot = model.SummarizeLaunches(launches[side][2])
	}
	return in, nil
}

// launchIndex is the index of a launch kind in cold, warm, hot; -1 for none.
func launchIndex(kind string) int {
	switch kind {
	case "cold":
		return 0
	case "warm":
		return 1
	case "hot":
		return 2
	}
	return -1
}

// FilterValues lists the distinct attribute values of the app's events; see sinks.Analytics.
// Versions and OS versions are pairs: a pair counts when either of its two values is not
// empty.
func (s *Store) FilterValues(ctx context.Context, app uuid.UUID, classes []model.IssueClass) (model.FilterValues, error) {
	versions := map[model.AppVersion]int64{} // first seen
	oses := map[model.OSVersion]struct{}{}
	var sets [6]map[string]struct{}
	for i := range sets {
		sets[i] = map[string]struct{}{}
	}
	udKeys := map[model.UDKey]struct{}{}
	var v rowView
	err := s.scanView(ctx, app, window{lo: minTime, open: true, issues: len(classes) > 0}, func(ts int64, id, val []byte) (bool, error) {
		if err := v.head(ts, id, val); err != nil {
			return false, rowErr(ts, id, err)
		}
		if len(classes) > 0 && !v.isIssueType() {
			return true, nil
		}
		if err := v.rest(true); err != nil {
			return false, rowErr(ts, id, err)
		}
		e := &v.e
		if len(classes) > 0 && !slices.Contains(classes, model.ClassOf(e.Type, &e.Facts)) {
			return true, nil
		}
		a := &e.Attribute
		if ver := versionOf(e); ver != (model.AppVersion{}) {
			// Rows come in time order: the first row of a version is its first seen.
			if _, ok := versions[ver]; !ok {
				versions[model.AppVersion{Name: strings.Clone(ver.Name), Code: strings.Clone(ver.Code)}] = ts
			}
		}
		if os := (model.OSVersion{Name: a.OSName, Version: a.OSVersion}); os != (model.OSVersion{}) {
			if _, ok := oses[os]; !ok {
				oses[model.OSVersion{Name: strings.Clone(os.Name), Version: strings.Clone(os.Version)}] = struct{}{}
			}
		}
		for i, val := range [...]string{a.DeviceName, a.DeviceManufacturer, a.DeviceLocale,
			a.NetworkProvider, a.NetworkType, a.NetworkGeneration} {
			if _, ok := sets[i][val]; !ok && val != "" {
				sets[i][strings.Clone(val)] = struct{}{}
			}
		}
		for _, u := range e.UserDefined {
			k := model.UDKey{Key: u.Key, Type: u.Type.String()}
			if _, ok := udKeys[k]; !ok {
				k.Key = strings.Clone(k.Key)
				udKeys[k] = struct{}{}
			}
		}
		return true, nil
	})
	if err != nil {
		return model.FilterValues{}, fmt.Errorf("badgerevents: filter values of app %s: %w", app, err)
	}
	fv := model.FilterValues{
		Versions:            make([]model.AppVersion, 0, len(versions)),
		OSVersions:          make([]model.OSVersion, 0, len(oses)),
		DeviceNames:         sortedSet(sets[0]),
		DeviceManufacturers: sortedSet(sets[1]),
		Locales:             sortedSet(sets[2]),
		NetworkProviders:    sortedSet(sets[3]),
		NetworkTypes:        sortedSet(sets[4]),
		NetworkGenerations:  sortedSet(sets[5]),
		UDKeys:              make([]model.UDKey, 0, len(udKeys)),
	}
	for ver := range versions {
		fv.Versions = append(fv.Versions, ver)
	}
	slices.SortFunc(fv.Versions, func(a, b model.AppVersion) int {
		if c := cmp.Compare(versions[b], versions[a]); c != 0 {
			return c
		}
		if c := strings.Compare(b.Name, a.Name); c != 0 {
			return c
		}
		return strings.Compare(b.Code, a.Code)
	})
	for os := range oses {
		fv.OSVersions = append(fv.OSVersions, os)
	}
	slices.SortFunc(fv.OSVersions, func(a, b model.OSVersion) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	for k := range udKeys {
		fv.UDKeys = append(fv.UDKeys, k)
	}
	slices.SortFunc(fv.UDKeys, func(a, b model.UDKey) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	return fv, nil
}

// minTime is the lowest row time: scans over every row start there.
const minTime = -1 << 63

func sortedSet(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// SessionWalks calls fn with the walk events of each session q selects; see sinks.Analytics.
// One scan of the window selects the sessions, a second one over all of the app's rows
// collects their walk events, ascending by (timestamp, id) as the rows are keyed. fn runs
// after the read transaction has ended, once per session; a session selected by a handled
// exception of the group may have no walk event, and fn gets an empty slice. With GroupID set, a session is
// selected by an issue event whose group is GroupID and whose class (model.ClassOf) is q.Class
// exactly, so Class 0 selects none.
func (s *Store) SessionWalks(ctx context.Context, q *model.WalkQuery, fn func(session uuid.UUID, events []model.WalkEvent) error) error {
	if q.From >= q.To {
		return nil
	}
	walks := map[uuid.UUID][]model.WalkEvent{}
	strs := interner{}
	var v rowView
	// A group's sessions are selected by its issue events: the issue index has them all.
	sel := window{lo: q.From, hi: q.To, issues: q.GroupID != ""}
	if err := s.useIndex(ctx, &sel); err != nil {
		return fmt.Errorf("badgerevents: session walks of app %s: %w", q.App, err)
	}
	err := s.db.View(func(txn *badger.Txn) error {
		err := scan(ctx, txn, q.App, sel, func(ts int64, id, val []byte) (bool, error) {
			if err := v.head(ts, id, val); err != nil {
				return false, rowErr(ts, id, err)
			}
			if _, ok := walks[v.e.SessionID]; ok || q.GroupID != "" && !v.isIssueType() {
				return true, nil
			}
			if err := v.rest(false); err != nil {
				return false, rowErr(ts, id, err)
			}
			e := &v.e
			var selected bool
			if q.GroupID != "" {
				selected = e.Facts.GroupID == q.GroupID && model.ClassOf(e.Type, &e.Facts) == q.Class
			} else {
				_, selected = model.WalkEventOf(e)
			}
			if selected {
				walks[e.SessionID] = nil
			}
			return true, nil
		})
		if err != nil || len(walks) == 0 {
			return err
		}
		return scan(ctx, txn, q.App, window{lo: minTime, open: true}, func(ts int64, id, val []byte) (bool, error) {
			if err := v.head(ts, id, val); err != nil {
				return false, rowErr(ts, id, err)
			}
			evs, ok := walks[v.e.SessionID]
			if !ok {
				return true, nil
			}
			if err := v.rest(false); err != nil {
				return false, rowErr(ts, id, err)
			}
			w, ok := model.WalkEventOf(&v.e)
			if !ok {
				return true, nil
			}
			w.Version = strs.version(&v.e.Attribute)
			w.Screen, w.GroupID, w.Title = strs.get(w.Screen), strs.get(w.GroupID), strs.get(w.Title)
			walks[v.e.SessionID] = append(evs, w)
			return true, nil
		})
	})
	if err != nil {
		return fmt.Errorf("badgerevents: session walks of app %s: %w", q.App, err)
	}
	for sid, evs := range walks {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(sid, evs); err != nil {
			return err
		}
	}
	return nil
}

// PathSessions returns the events of the sessions with the group's latest issues; see
// sinks.Analytics. A descending scan of the issue index selects the first n sessions met, each
// with its latest issue event of the group and class (its start); one descending scan of the
// app's rows from the newest start on then collects each session's events from its start back,
// up to steps of them, until every session has steps events or the rows run out.
func (s *Store) PathSessions(ctx context.Context, app uuid.UUID, class model.IssueClass, groupID string, n, steps int) ([][]model.Event, error) {
	out := [][]model.Event{}
	if n <= 0 || steps <= 0 || groupID == "" {
		return out, nil
	}
	found := map[uuid.UUID]int{} // session → index in starts and out
	var starts []model.EventKey
	var v rowView
	sel := window{lo: minTime, open: true, reverse: true, issues: true}
	err := s.useIndex(ctx, &sel)
	if err == nil {
		err = s.db.View(func(txn *badger.Txn) error {
			err := scan(ctx, txn, app, sel, func(ts int64, id, val []byte) (bool, error) {
				if err := v.head(ts, id, val); err != nil {
					return false, rowErr(ts, id, err)
				}
				if _, ok := found[v.e.SessionID]; ok || !v.isIssueType() {
					return true, nil
				}
				if err := v.rest(false); err != nil {
					return false, rowErr(ts, id, err)
				}
				if v.e.Facts.GroupID != groupID || model.ClassOf(v.e.Type, &v.e.Facts) != class {
					return true, nil
				}
				found[v.e.SessionID] = len(starts)
				starts = append(starts, model.EventKey{Timestamp: ts, ID: v.e.ID})
				return len(starts) < n, nil
			})
			if err != nil || len(starts) == 0 {
				return err
			}
			for range starts {
				out = append(out, make([]model.Event, 0, min(steps, 64)))
			}
			full := 0 // sessions with steps events
			w := window{lo: minTime, open: true, reverse: true, start: append(timeKey(nil, starts[0].Timestamp), starts[0].ID[:]...)}
			return scan(ctx, txn, app, w, func(ts int64, id, val []byte) (bool, error) {
				if err := v.head(ts, id, val); err != nil {
					return false, rowErr(ts, id, err)
				}
				i, ok := found[v.e.SessionID]
				if !ok || len(out[i]) == steps || model.IsSample(v.e.Type) || afterKey(&starts[i], ts, v.e.ID) {
					return true, nil
				}
				e, err := fullEvent(app, ts, id, val)
				if err != nil {
					return false, rowErr(ts, id, err)
				}
				out[i] = append(out[i], e)
				if len(out[i]) == steps {
					full++
				}
				return full < len(out), nil
			})
		})
	}
	if err != nil {
		return nil, fmt.Errorf("badgerevents: path sessions of app %s, group %s: %w", app, groupID, err)
	}
	for _, evs := range out {
		slices.Reverse(evs)
	}
	return out, nil
}
