package badgerevents

// Session queries (sinks.Sessions) over the embedded store, answered with the model's Go
// definitions (SessionAcc, CompareSessionsNewest, SessionPlotOf).
//
// SessionPage and SessionPlot scan the app's event rows of the window once, in time order,
// folding each row into its session's SessionAcc; rows are decoded in place (rowView), and
// their payload is decoded only where the query reads it: for free text in the types of
// model.PayloadTypes, for foreground and background in lifecycle_app events.
//
// SessionEvents and SessionRootSpans have no session index to read: they scan every event (or
// span) row of the app, reading only each row's session id until one matches. Their cost grows
// with the app's stored rows, like Trace's.

import (
	"context"
	"fmt"
	"slices"
	"unsafe"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

var _ sinks.Sessions = (*Store)(nil)

// selectSessions returns the summaries of every session q selects, in no order.
func (s *Store) selectSessions(ctx context.Context, q *model.SessionQuery) ([]model.SessionSummary, error) {
	out := []model.SessionSummary{}
	if q.From >= q.To {
		return out, nil
	}
	accs := map[uuid.UUID]*model.SessionAcc{}
	wantUD := q.UD != nil
	var v rowView
	err := s.db.View(func(txn *badger.Txn) error {
		return scan(ctx, txn, q.App, window{lo: q.From, hi: q.To}, func(ts int64, id, val []byte) (bool, error) {
			if err := v.head(ts, id, val); err != nil {
				return false, rowErr(ts, id, err)
			}
			e := &v.e
			if needsPayload(q, e.Type) {
				full, err := fullEvent(q.App, ts, id, val)
				if err != nil {
					return false, rowErr(ts, id, err)
				}
				e = &full
			} else if err := v.rest(wantUD); err != nil {
				return false, rowErr(ts, id, err)
			}
			e.AppID = q.App
			a := accs[e.SessionID]
			if a == nil {
				a = &model.SessionAcc{}
				accs[e.SessionID] = a
			}
			a.Add(q, e)
			return true, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: sessions of app %s: %w", q.App, err)
	}
	for sid, a := range accs {
		if a.Selected(q) {
			out = append(out, a.Summary(sid))
		}
	}
	return out, nil
}

// needsPayload says whether a row of type typ must be decoded with its payload for q.
func needsPayload(q *model.SessionQuery, typ string) bool {
	return q.FreeText != "" && slices.Contains(model.PayloadTypes, typ) ||
		(q.Foreground || q.Background) && typ == "lifecycle_app"
}

// SessionPage returns a page of the selected sessions, newest first; see sinks.Sessions.
func (s *Store) SessionPage(ctx context.Context, q *model.SessionQuery, limit, offset int) ([]model.SessionSummary, error) {
	if limit < 1 || offset < 0 {
		return nil, fmt.Errorf("badgerevents: sessions: %w: limit %d, offset %d", sinks.ErrInvalid, limit, offset)
	}
	all, err := s.selectSessions(ctx, q)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b model.SessionSummary) int { return model.CompareSessionsNewest(&a, &b) })
	if offset >= len(all) {
		return []model.SessionSummary{}, nil
	}
	return all[offset:min(len(all), offset+limit)], nil
}

// SessionPlot counts the selected sessions per version and bucket; see sinks.Sessions.
func (s *Store) SessionPlot(ctx context.Context, q *model.SessionQuery, b model.Buckets) ([]model.SessionPlotCell, error) {
	all, err := s.selectSessions(ctx, q)
	if err != nil {
		return nil, err
	}
	return model.SessionPlotOf(all, b), nil
}

// SessionEvents returns every event of the session in time order; see sinks.Sessions. Rows are
// keyed by (time, id), the order asked for.
func (s *Store) SessionEvents(ctx context.Context, app, session uuid.UUID) ([]model.Event, error) {
	out := []model.Event{}
	var v rowView
	err := s.db.View(func(txn *badger.Txn) error {
		return scan(ctx, txn, app, window{lo: minTime, open: true}, func(ts int64, id, val []byte) (bool, error) {
			if err := v.head(ts, id, val); err != nil {
				return false, rowErr(ts, id, err)
			}
			if v.e.SessionID != session {
				return true, nil
			}
			e, err := fullEvent(app, ts, id, val)
			if err != nil {
				return false, rowErr(ts, id, err)
			}
			out = append(out, e)
			return true, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: events of session %s of app %s: %w", session, app, err)
	}
	return out, nil
}

// peekSpanSession reads a span row's parent id and session id in place (parent aliases val).
func peekSpanSession(val []byte) (parent string, session uuid.UUID, err error) {
	if len(val) == 0 {
		return "", uuid.Nil, errCorrupt
	}
	r := reader{s: unsafe.String(&val[0], len(val))}
	r.version(spanLayout)
	r.str() // trace id
	parent = r.str()
	session = r.uuid()
	return parent, session, r.err
}

// SessionRootSpans returns the session's root spans, newest first; see sinks.Spans. The app's
// span rows are read backwards, which is that order.
func (s *Store) SessionRootSpans(ctx context.Context, app, session uuid.UUID) ([]model.Span, error) {
	out := []model.Span{}
	err := s.scanSpans(ctx, app, spanWindow{open: true, reverse: true}, func(ts int64, id, val []byte) (bool, error) {
		parent, sid, err := peekSpanSession(val)
		if err != nil {
			return false, err
		}
		if parent != "" || sid != session {
			return true, nil
		}
		sp, err := spanOf(app, ts, id, val)
		if err != nil {
			return false, err
		}
		out = append(out, sp)
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgerevents: root spans of session %s of app %s: %w", session, app, err)
	}
	return out, nil
}
