package badgerevents

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

var _ sinks.Network = (*Store)(nil)

// The network queries scan the app's event rows of the window, as the other analytics do,
// decoding rows in place (rowView) and reading only http rows' attributes and facts.

// HTTPPaths lists the app's distinct (domain, path) of completed requests; see sinks.Network.
func (s *Store) HTTPPaths(ctx context.Context, app uuid.UUID) ([]model.HTTPPath, error) {
	seen := map[model.HTTPPath]struct{}{}
	var v rowView
	err := s.db.View(func(txn *badger.Txn) error {
		return scan(ctx, txn, app, window{lo: minTime, open: true}, func(ts int64, id, val []byte) (bool, error) {
			if err := v.head(ts, id, val); err != nil {
				return false, rowErr(ts, id, err)
			}
			if v.e.Type != "http" {
				return true, nil
			}
			if err := v.rest(false); err != nil {
				return false, rowErr(ts, id, err)
			}
			h := &v.e.Facts.HTTP
			if !h.Completed() {
				return true, nil
			}
			if _, ok := seen[model.HTTPPath{Domain: h.Domain, Path: h.Path}]; !ok {
				seen[model.HTTPPath{Domain: strings.Clone(h.Domain), Path: strings.Clone(h.Path)}] = struct{}{}
			}
			return true, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: http paths of app %s: %w", app, err)
	}
	out := make([]model.HTTPPath, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b model.HTTPPath) int {
		if c := strings.Compare(a.Domain, b.Domain); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, nil
}

// HTTPStats aggregates the requests q selects per group; see sinks.Network.
func (s *Store) HTTPStats(ctx context.Context, q *model.NetworkQuery, by model.HTTPGroup, b model.Buckets) ([]model.HTTPStat, error) {
	out := []model.HTTPStat{}
	if q.From >= q.To {
		return out, nil
	}
	accs := map[model.HTTPKey]*model.HTTPAcc{}
	var lo, hi, bucket int64 // the last bucket: [lo, hi) starts at bucket
	var v rowView
	err := s.db.View(func(txn *badger.Txn) error {
		return scan(ctx, txn, q.App, window{lo: q.From, hi: q.To}, func(ts int64, id, val []byte) (bool, error) {
			if err := v.head(ts, id, val); err != nil {
				return false, rowErr(ts, id, err)
			}
			if v.e.Type != "http" {
				return true, nil
			}
			if err := v.rest(q.UD != nil); err != nil {
				return false, rowErr(ts, id, err)
			}
			v.e.AppID = q.App
			h := &v.e.Facts.HTTP
			if !q.Match(&v.e, h) {
				return true, nil
			}
			if by&model.ByBucket != 0 && (ts < lo || ts >= hi || hi == 0) {
				start := b.Start(time.Unix(0, ts))
				bucket, lo, hi = start.UnixNano(), start.UnixNano(), b.Next(start).UnixNano()
			}
			k, ok := q.KeyOf(h, by, bucket)
			if !ok {
				return true, nil
			}
			a := accs[k]
			if a == nil { // the key's strings alias the row: keep copies
				k.Domain, k.Pattern = strings.Clone(k.Domain), strings.Clone(k.Pattern)
				a = &model.HTTPAcc{}
				accs[k] = a
			}
			a.Add(h, v.e.SessionID)
			return true, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: http stats of app %s: %w", q.App, err)
	}
	for k, a := range accs {
		out = append(out, a.Stat(k))
	}
	slices.SortFunc(out, func(a, b model.HTTPStat) int { ka, kb := a.Key(), b.Key(); return model.CompareHTTPKeys(&ka, &kb) })
	return out, nil
}
