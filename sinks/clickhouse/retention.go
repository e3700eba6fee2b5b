package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// nanos is t as Unix nanoseconds, clamped to int64 (years 1677 to 2262), the range of the
// timestamp columns.
func nanos(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// retention names, per table, the column that holds the row's nanosecond time.
var retention = [...]struct{ table, ts string }{{"events", "timestamp"}, {"spans", "start_time"}}

// DeleteBefore removes the app's events whose timestamp, and spans whose start time, is before
// `before`; see sinks.EventStore.
//
// It schedules one `ALTER TABLE … DELETE` mutation per table (18.16 has no lightweight DELETE
// and no mutations_sync) and returns: ClickHouse rewrites the affected parts in the background,
// and reads keep showing the rows until it has. The filter is on the Int64 nanosecond column,
// so the cut is exact (the DateTime column is rounded to seconds and clamped to 1970–2106). A
// table with no such row gets no mutation: a mutation rewrites parts, which is worth skipping
// when a retention job finds nothing to delete. Rows inserted after the call are never touched
// by its mutations.
func (s *Store) DeleteBefore(ctx context.Context, appID uuid.UUID, before time.Time) error {
	cut := nanos(before)
	rollups, err := s.rollupsOn(ctx)
	if err != nil {
		return fmt.Errorf("clickhouse: delete events of app %s: %w", appID, err)
	}
	deleted := false
	for _, r := range retention {
		var found uint64
		err := s.conn.QueryRow(ctx, "SELECT count() FROM (SELECT 1 FROM "+r.table+
			" WHERE app_id = toUUID(?) AND "+r.ts+" < ? LIMIT 1)", appID, cut).Scan(&found)
		if err != nil {
			return fmt.Errorf("clickhouse: delete %s of app %s: look for rows: %w", r.table, appID, err)
		}
		if found == 0 {
			continue
		}
		if r.table == "events" && rollups {
			// Every journey day, before the mutation: whatever happens after, no build made
			// before it is read again, and one made after sees the mutation (journey.go).
			if err := s.writeMarks(ctx, []journeyMark{{app: appID, day: math.MinInt64}}, true); err != nil {
				return err
			}
		}
		if err := s.conn.Exec(ctx, "ALTER TABLE "+r.table+" DELETE WHERE app_id = toUUID(?) AND "+r.ts+" < ?", appID, cut); err != nil {
			return fmt.Errorf("clickhouse: delete %s of app %s: %w", r.table, appID, err)
		}
		deleted = deleted || r.table == "events"
	}
	switch {
	case !rollups:
		return nil
	case deleted:
		return s.dropJourneyBuilds(ctx, appID)
	}
	return s.pruneJourneyBuilds(ctx, appID)
}

// dropJourneyBuilds marks every journey day of the app again (the deleted events change the
// facts of the days after them; journey.go), now that the mutation that deletes them is
// scheduled, and deletes the app's builds so far, which the marks end.
func (s *Store) dropJourneyBuilds(ctx context.Context, appID uuid.UUID) error {
	at := s.now().UnixNano()
	if err := s.writeMarks(ctx, []journeyMark{{app: appID, day: math.MinInt64}}, true); err != nil {
		return err
	}
	if err := s.deleteBuilds(ctx, appID, "built < ?", at); err != nil {
		return fmt.Errorf("clickhouse: delete journey builds of app %s: %w", appID, err)
	}
	// 00006's day rollups, left for nodes of the release before (00007), sum the facts of the
	// events just deleted too; once a store has none of the app's, this is one small read.
	for _, table := range []string{"journey_builds", "journey_days"} {
		var found uint64
		if err := s.conn.QueryRow(ctx, "SELECT count() FROM (SELECT 1 FROM "+table+" WHERE app_id = toUUID(?) AND built < ? LIMIT 1)",
			appID, at).Scan(&found); err != nil {
			return fmt.Errorf("clickhouse: delete day journey builds of app %s: %w", appID, err)
		}
		if found == 0 {
			continue
		}
		if err := s.conn.Exec(ctx, "ALTER TABLE "+table+" DELETE WHERE app_id = toUUID(?) AND built < ?", appID, at); err != nil {
			return fmt.Errorf("clickhouse: delete day journey builds of app %s: %w", appID, err)
		}
	}
	return nil
}

// sizeExpr is the SQL expression of a row's size over cols: each string's and array's
// content, and the width of each fixed-size value (length prefixes and compression left out).
// The derived `time` column is a DateTime: 4 bytes.
func sizeExpr(cols []col) (string, error) {
	fixed := 0
	var parts []string
	for _, c := range cols {
		switch c.values.(type) {
		case []string, []json.RawMessage, [][]uint8:
			parts = append(parts, "length("+c.name+")")
		case [][]string:
			parts = append(parts, "arraySum(arrayMap(x -> length(x), "+c.name+"))")
		case [][]int64:
			parts = append(parts, "8 * length("+c.name+")")
		case [][]uuid.UUID:
			parts = append(parts, "16 * length("+c.name+")")
		case []uuid.UUID:
			fixed += 16
		case []int64, []uint64, []float64:
			if c.derived {
				fixed += 4
			} else {
				fixed += 8
			}
		case []float32, []int32:
			fixed += 4
		case []uint16:
			fixed += 2
		case []uint8:
			fixed++
		default:
			return "", fmt.Errorf("column %s: no size for values of type %T", c.name, c.values)
		}
	}
	return "toUInt64(" + strings.Join(append([]string{strconv.Itoa(fixed)}, parts...), " + ") + ")", nil
}

// usageQuery builds Usage's query. Each table's rows are first grouped by id, so a replayed
// row that merges have not collapsed yet counts once, in its events or spans and in its bytes.
// The month comes from the DateTime column in UTC, whatever the server's time zone; the Int64
// nanosecond column bounds the range exactly, and the DateTime bounds, implied by them, let
// ClickHouse skip the partitions (months) outside it.
func usageQuery() (string, error) {
	ev, err := sizeExpr(newEventCols(1, 0, 0).cols())
	if err != nil {
		return "", err
	}
	sp, err := sizeExpr(newSpanCols(1, 0, 0).cols())
	if err != nil {
		return "", err
	}
	where := func(ts string) string {
		return " WHERE app_id = toUUID(?) AND " + ts + " >= ? AND " + ts + " < ?" +
			" AND time >= toDateTime(?) AND time <= toDateTime(?)"
	}
	return "SELECT m, uniqExactIf(toString(s), s != toUUID('00000000-0000-0000-0000-000000000000')), countIf(k = 0), countIf(k = 1), sum(b) FROM (" +
		"SELECT 0 AS k, any(toYYYYMM(time, 'UTC')) AS m, any(session_id) AS s, any(" + ev + ") AS b FROM events" +
		where("timestamp") + " GROUP BY id" +
		" UNION ALL " +
		"SELECT 1 AS k, any(toYYYYMM(time, 'UTC')) AS m, any(session_id) AS s, any(" + sp + ") AS b FROM spans" +
		where("start_time") + " GROUP BY span_id" +
		") GROUP BY m ORDER BY m", nil
}

// Usage counts the app's rows of [from, to) per UTC calendar month; see sinks.EventStore.
//
// Bytes is the uncompressed size of each distinct row's values: the content of its strings and
// arrays and the width of its fixed-size columns, without length prefixes. What the rows take
// on disk is that compressed (typically several times smaller); it is not comparable with
// another backend's Bytes. Months come from the DateTime column, which is clamped to
// 1970–2106: rows outside those years count in the first or last month of that range.
func (s *Store) Usage(ctx context.Context, appID uuid.UUID, from, to time.Time) ([]model.MonthUsage, error) {
	lo, hi := nanos(from), nanos(to)
	var out []model.MonthUsage
	if lo >= hi {
		return out, nil
	}
	q, err := usageQuery()
	if err != nil {
		return nil, fmt.Errorf("clickhouse: usage of app %s: %w", appID, err)
	}
	args := []any{appID, lo, hi, dateTime(lo), dateTime(hi)}
	rows, err := s.conn.Query(ctx, q, append(args, args...)...)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: usage of app %s: %w", appID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var m uint32
		var sessions, events, spans, bytes uint64
		if err := rows.Scan(&m, &sessions, &events, &spans, &bytes); err != nil {
			return nil, fmt.Errorf("clickhouse: usage of app %s: %w", appID, err)
		}
		out = append(out, model.MonthUsage{
			Month:    fmt.Sprintf("%04d-%02d", m/100, m%100),
			Sessions: int64(sessions), Events: int64(events), Spans: int64(spans), Bytes: int64(bytes),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("clickhouse: usage of app %s: %w", appID, err)
	}
	return out, nil
}
