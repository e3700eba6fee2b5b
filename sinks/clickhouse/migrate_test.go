package clickhouse

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/eventstest"
	"github.com/svc-dev/svc/sinks/sinktest"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func openT(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(ctxT(t), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func versionRows(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.Conn().Query(ctxT(t), "SELECT version_id, is_applied FROM "+VersionTable+" ORDER BY version_id, tstamp")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v int64
		var a uint8
		if err := rows.Scan(&v, &a); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d:%d", v, a))
	}
	return out
}

// migrationCount is how many migration files are embedded.
func migrationCount(t *testing.T) int {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func TestMigrateTwice(t *testing.T) {
	dsn := sinktest.ClickHouse(t)
	for run := 1; run <= 2; run++ {
		if err := Migrate(ctxT(t), dsn); err != nil {
			t.Fatalf("Migrate run %d: %v", run, err)
		}
	}
	s := openT(t, dsn)
	// Version 0 (goose's marker) and each migration once: the second run applied nothing.
	want := []string{"0:1"}
	for v := 1; v <= migrationCount(t); v++ {
		want = append(want, fmt.Sprintf("%d:1", v))
	}
	if got := versionRows(t, s); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("version rows after two runs = %v, want %v", got, want)
	}
}

// Two nodes starting at once both migrate the same database.
func TestMigrateConcurrently(t *testing.T) {
	dsn := sinktest.ClickHouse(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = Migrate(ctxT(t), dsn)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Migrate %d: %v", i, err)
		}
	}
	if err := Migrate(ctxT(t), dsn); err != nil {
		t.Fatalf("Migrate after concurrent runs: %v", err)
	}
	s := openT(t, dsn)
	if err := s.WriteEvents(ctxT(t), eventstest.RealisticEvents(t, uuid.New(), 10)); err != nil {
		t.Fatalf("WriteEvents on the migrated schema: %v", err)
	}
}

// The insert column lists must name every column of the tables: a column missing from them
// would be silently filled with its default.
func TestColumnsCoverSchema(t *testing.T) {
	dsn := sinktest.ClickHouse(t)
	if err := Migrate(ctxT(t), dsn); err != nil {
		t.Fatal(err)
	}
	s := openT(t, dsn)
	for table, cols := range map[string][]col{
		"events": newEventCols(1, 0, 0).cols(),
		"spans":  newSpanCols(1, 0, 0).cols(),
	} {
		rows, err := s.Conn().Query(ctxT(t), "SELECT name FROM system.columns WHERE database = currentDatabase() AND table = ? ORDER BY name", table)
		if err != nil {
			t.Fatal(err)
		}
		var schema []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			schema = append(schema, n)
		}
		rows.Close()
		var ours []string
		for _, c := range cols {
			ours = append(ours, c.name)
		}
		sort.Strings(ours)
		if strings.Join(schema, ",") != strings.Join(ours, ",") {
			t.Errorf("%s: table columns %v\ninsert columns %v", table, schema, ours)
		}
	}
}

// Replays are extra physical rows until ClickHouse merges parts; the sorting key must make a
// merge collapse them, so replays do not cost space for ever.
func TestMergeCollapsesReplays(t *testing.T) {
	dsn := sinktest.ClickHouse(t)
	if err := Migrate(ctxT(t), dsn); err != nil {
		t.Fatal(err)
	}
	s := openT(t, dsn)
	app := uuid.New()
	events := eventstest.RealisticEvents(t, app, 500)
	spans := eventstest.RealisticSpans(t, app, 300)
	for i := 0; i < 3; i++ {
		if err := s.WriteEvents(ctxT(t), events); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteSpans(ctxT(t), spans); err != nil {
			t.Fatal(err)
		}
	}
	for table, want := range map[string]uint64{"events": 500, "spans": 300} {
		if err := s.Conn().Exec(ctxT(t), "OPTIMIZE TABLE "+table+" FINAL"); err != nil {
			t.Fatal(err)
		}
		var n uint64
		if err := s.Conn().QueryRow(ctxT(t), "SELECT count() FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("%s: %d physical rows after OPTIMIZE FINAL, want %d", table, n, want)
		}
	}
}

func TestOpenFailsFast(t *testing.T) {
	port, err := sinktest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := Open(ctxT(t), fmt.Sprintf("clickhouse://127.0.0.1:%d/default", port)); err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	if d := time.Since(start); d > defaultDialTimeout+5*time.Second {
		t.Fatalf("Open of a closed port took %v", d)
	}
	if _, err := Open(ctxT(t), "clickhouse://[bad"); err == nil {
		t.Fatal("Open of a malformed DSN succeeded")
	}
}

func BenchmarkWriteEvents(b *testing.B) {
	dsn := sinktest.ClickHouse(b)
	if err := Migrate(ctxT(b), dsn); err != nil {
		b.Fatal(err)
	}
	s := openT(b, dsn)
	for _, batch := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			events := eventstest.RealisticEvents(b, uuid.New(), batch)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.WriteEvents(ctxT(b), events); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkBuildColumns is the client-side share of an insert: filling the column slices.
func BenchmarkBuildColumns(b *testing.B) {
	const batch = 10_000
	events := eventstest.RealisticEvents(b, uuid.New(), batch)
	var ud, att int
	for i := range events {
		ud += len(events[i].UserDefined)
		att += len(events[i].Attachments)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := newEventCols(batch, ud, att)
		for j := range events {
			c.set(j, &events[j])
		}
		_ = c.cols()
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
}
