package badgerevents

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Bug report queries (sinks.BugReports): each scans the app's event rows of the window, as the
// other analytics do, reading only the head of each row (rowView.head) until its type shows a
// bug report, which is then decoded whole and selected by model.BugReportQuery.Match. Bug
// reports are rare among events, so the whole decode costs little.

var _ sinks.BugReports = (*Store)(nil)

// BugReports returns a page of the selected reports, newest first; see sinks.BugReports. The
// window is read backwards (time, then id, descending), which is that order.
func (s *Store) BugReports(ctx context.Context, q *model.BugReportQuery, limit, offset int) ([]model.Event, error) {
	var out []model.Event
	if q.From >= q.To || limit < 1 {
		return out, nil
	}
	skip := offset
	err := s.scanReports(ctx, q, true, func(e *model.Event) bool {
		if skip > 0 {
			skip--
			return true
		}
		out = append(out, *e)
		return len(out) < limit
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: bug reports of app %s: %w", q.App, err)
	}
	return out, nil
}

// BugReportCounts counts the selected reports per version and bucket; see sinks.BugReports.
func (s *Store) BugReportCounts(ctx context.Context, q *model.BugReportQuery, b model.Buckets) ([]model.BugReportCount, error) {
	type key struct {
		v      model.AppVersion
		bucket int64
	}
	counts := map[key]uint64{}
	var lo, hi, bucket int64 // the last bucket: [lo, hi) starts at bucket
	if q.From < q.To {
		err := s.scanReports(ctx, q, false, func(e *model.Event) bool {
			if ts := e.Timestamp; ts < lo || ts >= hi || hi == 0 {
				start := b.Start(time.Unix(0, ts))
				bucket, lo, hi = start.UnixNano(), start.UnixNano(), b.Next(start).UnixNano()
			}
			counts[key{model.AppVersion{Name: e.Attribute.AppVersion, Code: e.Attribute.AppBuild}, bucket}]++
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("badgerevents: bug report counts of app %s: %w", q.App, err)
		}
	}
	out := make([]model.BugReportCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, model.BugReportCount{Version: k.v, Bucket: k.bucket, Count: n})
	}
	slices.SortFunc(out, func(a, b model.BugReportCount) int { return model.CompareBugReportCounts(&a, &b) })
	return out, nil
}

// scanReports calls fn with each report of q's window that q selects, in time order (reverse:
// newest first), until fn returns false. The event is fn's to keep.
func (s *Store) scanReports(ctx context.Context, q *model.BugReportQuery, reverse bool, fn func(e *model.Event) bool) error {
	var v rowView
	return s.db.View(func(txn *badger.Txn) error {
		return scan(ctx, txn, q.App, window{lo: q.From, hi: q.To, reverse: reverse}, func(ts int64, id, val []byte) (bool, error) {
			if err := v.head(ts, id, val); err != nil {
				return false, rowErr(ts, id, err)
			}
			if v.e.Type != model.BugReportType {
				return true, nil
			}
			e, err := fullEvent(q.App, ts, id, val)
			if err != nil {
				return false, rowErr(ts, id, err)
			}
			if !q.Match(&e) {
				return true, nil
			}
			return fn(&e), nil
		})
	})
}
