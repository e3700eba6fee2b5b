package clickhouse

// Session starts (migration 00007). A journey walk needs each session of its window from the
// session's first event, and nothing says when that was: without this table the walk read
// every walk event of the app before the window's end, so a dashboard window grew with the
// data kept (30 days kept: up to 30 days read on every request). session_starts holds, per
// session, the earliest time of its events as each batch wrote them; the walk reads the events
// from the least of those among the window's sessions, when every one of them has a row.
//
// Like the journey rollups, the table is used only when events is this server's alone
// (rollupsOn): with a cluster layout another server's rows would be missing here, which the
// walk would take for "start unknown" every time anyway.

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// startsKnownMax bounds the sessions whose written start a store remembers (48 bytes each);
// past it the memory starts empty again, and the next batch of each session writes a row.
const startsKnownMax = 1 << 18

// sessionKey is an app id and a session id.
type sessionKey [32]byte

func keyOf(app, session uuid.UUID) (k sessionKey) {
	copy(k[:16], app[:])
	copy(k[16:], session[:])
	return k
}

// sessionStarts remembers the start this store wrote per session: a batch whose events of a
// session are none earlier writes no row for it.
type sessionStarts struct {
	mu    sync.Mutex
	known map[sessionKey]int64
	made  atomic.Int64 // when the table was created; 0 until asked (startsMade)
}

// writeStarts writes, before the events are inserted, a row per session of events that no
// earlier row of this store covers: the earliest time of the session's events here.
func (s *Store) writeStarts(ctx context.Context, events []model.Event) error {
	if on, err := s.rollupsOn(ctx); !on {
		return err
	}
	batch := map[sessionKey]int64{}
	for i := range events {
		e := &events[i]
		k := keyOf(e.AppID, e.SessionID)
		if ts, ok := batch[k]; !ok || e.Timestamp < ts {
			batch[k] = e.Timestamp
		}
	}
	s.starts.mu.Lock()
	for k, ts := range batch {
		if w, ok := s.starts.known[k]; ok && w <= ts {
			delete(batch, k)
		}
	}
	s.starts.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	apps, sessions, firsts := make([]uuid.UUID, 0, len(batch)), make([]uuid.UUID, 0, len(batch)), make([]int64, 0, len(batch))
	for k, ts := range batch {
		apps, sessions, firsts = append(apps, uuid.UUID(k[:16])), append(sessions, uuid.UUID(k[16:])), append(firsts, ts)
	}
	err := s.insert(ctx, "session_starts", []col{{name: "app_id", values: apps}, {name: "session_id", values: sessions}, {name: "first", values: firsts}})
	if err != nil {
		return fmt.Errorf("clickhouse: write session starts: %w", err)
	}
	s.starts.mu.Lock()
	defer s.starts.mu.Unlock()
	if s.starts.known == nil || len(s.starts.known)+len(batch) > startsKnownMax {
		s.starts.known = make(map[sessionKey]int64, len(batch))
	}
	for k, ts := range batch {
		if w, ok := s.starts.known[k]; !ok || ts < w {
			s.starts.known[k] = ts
		}
	}
	return nil
}

// walkStart returns a time at or before every event of the sessions that have an event of
// sel (with its arguments) in [from, to), and whether it knows one: not when one of them has
// no row in session_starts, nor when the table is not used.
func (s *Store) walkStart(ctx context.Context, app uuid.UUID, from, to int64, sel string, selArgs []any) (int64, bool, error) {
	if on, err := s.rollupsOn(ctx); !on {
		return 0, false, err
	}
	// Each session of the window, with has = 1 when session_starts has a row of it and f the
	// least of its rows.
	window := func(q *query, cols string) {
		q.sql("SELECT "+cols+" FROM events WHERE app_id = toUUID(?)", app)
		timeWindow(q, from, to)
		q.sql(" AND ")
		q.sql(sel, selArgs...)
	}
	var q query
	q.sql("SELECT count(), sum(has), min(f) FROM (SELECT session_id, max(has) AS has, min(f) AS f FROM (")
	window(&q, "session_id, toUInt8(0) AS has, toInt64("+fmt.Sprint(int64(math.MaxInt64))+") AS f")
	q.sql(" UNION ALL SELECT session_id, toUInt8(1) AS has, first AS f FROM session_starts WHERE app_id = toUUID(?) AND session_id IN (", app)
	window(&q, "session_id")
	q.sql(")) GROUP BY session_id)")
	var sessions, known uint64
	var start int64
	if err := s.conn.QueryRow(ctx, q.String(), q.args...).Scan(&sessions, &known, &start); err != nil {
		return 0, false, fmt.Errorf("session starts: %w", err)
	}
	if sessions == 0 || known != sessions {
		return 0, false, nil
	}
	// A session under way when the table was made may have events from before it without a
	// row, and a later row: it is walked from a day before the table's creation.
	made, err := s.startsMade(ctx)
	if err != nil {
		return 0, false, err
	}
	if start < made+startsKeep {
		start = min(start, made-startsKeep)
	}
	return start, true, nil
}

// startsMade is when session_starts was created (Unix nanoseconds), asked of the server once.
func (s *Store) startsMade(ctx context.Context) (int64, error) {
	if t := s.starts.made.Load(); t != 0 {
		return t, nil
	}
	var made time.Time
	if err := s.conn.QueryRow(ctx, "SELECT metadata_modification_time FROM system.tables"+
		" WHERE database = currentDatabase() AND name = 'session_starts'").Scan(&made); err != nil {
		return 0, fmt.Errorf("session_starts creation time: %w", err)
	}
	s.starts.made.Store(made.UnixNano())
	return made.UnixNano(), nil
}

// startsKeep is how long before a retention cut a session's latest row must be for its rows to
// go: a session whose rows all went but that still has events after the cut is walked from the
// app's first event (as with no row), which this margin leaves to sessions over a day long. It
// is also how far before the table's creation the sessions under way then are walked from.
const startsKeep = int64(24 * 60 * 60 * 1e9)

// deleteStarts deletes the rows of the app's sessions whose every row is older than
// startsKeep before cut: all of a session's rows or none, so that no session is left with a
// later row that does not bound its earlier events.
func (s *Store) deleteStarts(ctx context.Context, app uuid.UUID, cut int64) error {
	var ids []string
	var q query
	q.sql("SELECT toString(session_id) FROM session_starts WHERE app_id = toUUID(?) GROUP BY session_id HAVING max(first) < ?", app, cut-startsKeep)
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var id string
		if err := scan(&id); err != nil {
			return err
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("clickhouse: delete session starts of app %s: %w", app, err)
	}
	// One mutation per chunk; each id is a parsed UUID, so it is safe in the statement.
	const chunk = 4000 // 180 KB of statement: under max_query_size (256 KiB)
	for len(ids) > 0 {
		n := min(chunk, len(ids))
		var b strings.Builder
		for i, id := range ids[:n] {
			if _, err := uuid.Parse(id); err != nil {
				return fmt.Errorf("clickhouse: delete session starts of app %s: session id %q: %w", app, id, err)
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("toUUID('" + id + "')")
		}
		if err := s.conn.Exec(ctx, "ALTER TABLE session_starts DELETE WHERE app_id = toUUID(?) AND session_id IN ("+b.String()+")", app); err != nil {
			return fmt.Errorf("clickhouse: delete session starts of app %s: %w", app, err)
		}
		ids = ids[n:]
	}
	return nil
}
