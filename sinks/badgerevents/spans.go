package badgerevents

// Span queries (sinks.Spans) over the embedded store: each scans the app's time-ordered span
// rows ("sp/" r <app> <start time> <span id>) in one read transaction and answers with the
// model's Go definitions (SpanQuery.Match, SpanBucket, SpanDurationsOf, CompareSpansNewest).
// A row's trace id, parent id and name are read in place (peekSpan) before anything is
// decoded, so rows of other names or traces cost no allocation.
//
// Costs: RootSpans reads its window backwards and stops after offset+limit matches;
// RootSpanDurations reads its window; RootSpanNames reads the app's spans backwards until the
// names it returns are settled; Trace reads every span row of the app, since rows are keyed by
// time and there is no trace index yet.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"unsafe"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

var _ sinks.Spans = (*Store)(nil)

// spanWindow says which of an app's span rows a scan reads: start time in [lo, hi), or all of
// them when open; reverse reads newest first (time, then span id, descending).
type spanWindow struct {
	lo, hi  int64
	open    bool
	reverse bool
}

// scanSpans calls fn for the app's span rows of w in key order with the row's start time, span
// id and value (both valid only during the call). fn returns false to end the scan. ctx is
// checked every 1024 rows.
func (s *Store) scanSpans(ctx context.Context, app uuid.UUID, w spanWindow, fn func(ts int64, id, val []byte) (bool, error)) error {
	return s.db.View(func(txn *badger.Txn) error {
		head := appendHead(nil, badgerdb.PrefixSpans, tagRow, app)
		hl := len(head)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: head, Reverse: w.reverse})
		defer it.Close()
		var seek []byte
		switch {
		case !w.reverse && w.open:
			seek = head
		case !w.reverse:
			seek = timeKey(head, w.lo)
		case w.open:
			// After every row: longer than any time and span id, all 0xff.
			seek = append(head[:hl:hl], make([]byte, 8+256)...)
			for i := hl; i < len(seek); i++ {
				seek[i] = 0xff
			}
		default:
			seek = timeKey(head, w.hi) // the rows at hi sort after it
		}
		n := 0
		for it.Seek(seek); it.Valid(); it.Next() {
			if n&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			n++
			item := it.Item()
			k := item.Key()
			if len(k) <= hl+8 {
				return fmt.Errorf("%w: span row key of %d bytes", errCorrupt, len(k))
			}
			ts := getTime(k[hl:])
			if !w.open {
				if w.reverse && ts < w.lo || !w.reverse && ts >= w.hi {
					break
				}
				if ts < w.lo || ts >= w.hi {
					continue
				}
			}
			more := true
			if err := item.Value(func(v []byte) error {
				var err error
				more, err = fn(ts, k[hl+8:], v)
				return err
			}); err != nil {
				return err
			}
			if !more {
				break
			}
		}
		return nil
	})
}

// peekSpan reads a span row's trace id, parent id and name in place: the strings alias val.
func peekSpan(val []byte) (trace, parent, name string, err error) {
	if len(val) == 0 {
		return "", "", "", errCorrupt
	}
	r := reader{s: unsafe.String(&val[0], len(val))}
	r.version(spanLayout)
	trace = r.str()
	parent = r.str()
	r.uuid()
	name = r.str()
	return trace, parent, name, r.err
}

// spanOf decodes a whole span row (copying what it keeps).
func spanOf(app uuid.UUID, ts int64, id, val []byte) (model.Span, error) {
	sp := model.Span{AppID: app, SpanID: string(id), StartTime: ts}
	if err := decodeSpan(val, &sp); err != nil {
		return model.Span{}, fmt.Errorf("span %q at %d: %w", id, ts, err)
	}
	return sp, nil
}

// RootSpanNames lists root span names, most recently seen first; see sinks.Spans. Reading
// backwards, a name's first root row is its latest; once limit names are known, rows older
// than the last of them cannot change the answer, but rows at its time may tie with it.
func (s *Store) RootSpanNames(ctx context.Context, app uuid.UUID, limit int) ([]string, error) {
	type seen struct {
		name string
		ts   int64
	}
	var names []seen
	known := map[string]bool{}
	err := s.scanSpans(ctx, app, spanWindow{open: true, reverse: true}, func(ts int64, _, val []byte) (bool, error) {
		if len(names) >= limit && ts < names[len(names)-1].ts {
			return false, nil
		}
		_, parent, name, err := peekSpan(val)
		if err != nil {
			return false, err
		}
		if parent != "" || known[name] {
			return true, nil
		}
		name = string([]byte(name)) // outlives the row
		known[name] = true
		names = append(names, seen{name, ts})
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: root span names of app %s: %w", app, err)
	}
	slices.SortFunc(names, func(a, b seen) int {
		return cmp.Or(cmp.Compare(b.ts, a.ts), cmp.Compare(a.name, b.name))
	})
	out := make([]string, 0, min(len(names), limit))
	for _, n := range names[:min(len(names), limit)] {
		out = append(out, n.name)
	}
	return out, nil
}

// RootSpans returns a page of the selected root spans, newest first; see sinks.Spans. The
// window is read backwards, which is that order.
func (s *Store) RootSpans(ctx context.Context, q *model.SpanQuery, limit, offset int) ([]model.Span, error) {
	var out []model.Span
	skip := offset
	err := s.scanSpans(ctx, q.App, spanWindow{lo: q.From, hi: q.To, reverse: true}, func(ts int64, id, val []byte) (bool, error) {
		_, parent, name, err := peekSpan(val)
		if err != nil {
			return false, err
		}
		if parent != "" || name != q.Name {
			return true, nil
		}
		sp, err := spanOf(q.App, ts, id, val)
		if err != nil {
			return false, err
		}
		if !q.Match(&sp) {
			return true, nil
		}
		if skip > 0 {
			skip--
			return true, nil
		}
		out = append(out, sp)
		return len(out) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: root spans %q of app %s: %w", q.Name, q.App, err)
	}
	return out, nil
}

// RootSpanDurations aggregates the selected root spans per version and bucket; see
// sinks.Spans.
func (s *Store) RootSpanDurations(ctx context.Context, q *model.SpanQuery, by model.Buckets) ([]model.SpanDurations, error) {
	type key struct {
		v      model.AppVersion
		bucket int64
	}
	cells := map[key][]uint64{}
	err := s.scanSpans(ctx, q.App, spanWindow{lo: q.From, hi: q.To}, func(ts int64, id, val []byte) (bool, error) {
		_, parent, name, err := peekSpan(val)
		if err != nil {
			return false, err
		}
		if parent != "" || name != q.Name {
			return true, nil
		}
		sp, err := spanOf(q.App, ts, id, val)
		if err != nil {
			return false, err
		}
		if q.Match(&sp) {
			k := key{model.AppVersion{Name: sp.Attributes.AppVersion, Code: sp.Attributes.AppBuild}, model.SpanBucket(&sp, by)}
			cells[k] = append(cells[k], sp.Duration)
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: durations of root spans %q of app %s: %w", q.Name, q.App, err)
	}
	out := make([]model.SpanDurations, 0, len(cells))
	for k, ds := range cells {
		out = append(out, model.SpanDurationsOf(k.v, k.bucket, ds))
	}
	return out, nil
}

// Trace returns every span of a trace, newest first; see sinks.Spans.
func (s *Store) Trace(ctx context.Context, app uuid.UUID, traceID string) ([]model.Span, error) {
	var out []model.Span
	err := s.scanSpans(ctx, app, spanWindow{open: true, reverse: true}, func(ts int64, id, val []byte) (bool, error) {
		trace, _, _, err := peekSpan(val)
		if err != nil {
			return false, err
		}
		if trace != traceID {
			return true, nil
		}
		sp, err := spanOf(app, ts, id, val)
		if err != nil {
			return false, err
		}
		out = append(out, sp)
		return true, nil
	})
	if err == nil && len(out) == 0 {
		err = sinks.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("badgerevents: trace %q of app %s: %w", traceID, app, err)
	}
	return out, nil
}
