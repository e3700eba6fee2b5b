package clickhouse

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
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

// columns00002 are the columns migration 00002 adds.
var columns00002 = []string{"attribute_extra", "attachment_sizes", "attachment_paths"}

// Rows written before migration 00002, by the code of that time (its column list), read after it
// with the new fields absent; the migration's Down and Up run on 18.16 with such rows in place.
func TestMigration00002KeepsOldRows(t *testing.T) {
	dsn := sinktest.ClickHouse(t)
	p, closeAll, err := newProvider(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	if _, err := p.UpTo(ctxT(t), 1); err != nil {
		t.Fatalf("migrate to 1: %v", err)
	}
	s := openT(t, dsn)
	app := uuid.New()
	events := eventstest.RealisticEvents(t, app, 300)
	spans := eventstest.RealisticSpans(t, app, 40)
	old := func(cols []col) []col {
		return slices.DeleteFunc(cols, func(c col) bool {
			return slices.Contains(columns00002, c.name) || slices.Contains(columns00003, c.name) ||
				slices.Contains(columns00004, c.name) || slices.Contains(columns00005, c.name)
		})
	}
	ec := new(eventCols).fill(events)
	if err := s.insert(ctxT(t), "events", old(ec.cols())); err != nil {
		t.Fatalf("insert with the 00001 columns: %v", err)
	}
	sc := new(spanCols).fill(spans)
	if err := s.insert(ctxT(t), "spans", old(sc.cols())); err != nil {
		t.Fatalf("insert with the 00001 columns: %v", err)
	}
	check := func(step string) {
		t.Helper()
		var withAtt, withExtra int
		for _, e := range events {
			want := e
			want.Attribute.Extra = nil
			want.Facts = model.EventFacts{}
			want.Attachments = slices.Clone(e.Attachments)
			for j := range want.Attachments {
				want.Attachments[j].Size, want.Attachments[j].Path = model.SizeUnknown, ""
			}
			if len(e.Attachments) > 0 {
				withAtt++
			}
			if e.Attribute.Extra != nil {
				withExtra++
			}
			got, err := s.Event(ctxT(t), app, e.ID)
			if err != nil {
				t.Fatalf("%s: Event: %v", step, err)
			}
			if !reflect.DeepEqual(normEvent(got), normEvent(want)) {
				t.Fatalf("%s: old event read back\n got %+v\nwant %+v", step, got, want)
			}
		}
		if withAtt == 0 || withExtra == 0 {
			t.Fatalf("the test rows have %d events with attachments, %d with Attributes.Extra: no test", withAtt, withExtra)
		}
		for _, sp := range spans {
			want := sp
			want.Attributes.Extra = nil
			got, err := s.Span(ctxT(t), app, sp.SpanID)
			if err != nil {
				t.Fatalf("%s: Span: %v", step, err)
			}
			if !reflect.DeepEqual(normSpan(got), normSpan(want)) {
				t.Fatalf("%s: old span read back\n got %+v\nwant %+v", step, got, want)
			}
		}
	}
	if _, err := p.Up(ctxT(t)); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	check("after 00002")
	if _, err := p.DownTo(ctxT(t), 1); err != nil {
		t.Fatalf("migrate down to 1: %v", err)
	}
	var n uint64
	if err := s.Conn().QueryRow(ctxT(t), "SELECT count() FROM system.columns WHERE database = currentDatabase() AND name IN (?, ?, ?)",
		columns00002[0], columns00002[1], columns00002[2]).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after down to 1: %d of the 00002 columns left (%v)", n, err)
	}
	if _, err := p.Up(ctxT(t)); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
	check("after down and up")
}

// columns00003 are the columns migration 00003 adds: the derived facts.
var columns00003 = []string{"group_id", "fatal", "foreground", "screen", "launch_kind", "launch_ms"}

// columns00004 are the columns migration 00004 adds: the issue display facts.
var columns00004 = []string{"issue_type", "issue_message", "issue_method", "issue_file", "issue_line", "severity"}

// columns00005 are the columns migration 00005 adds: the request facts of http events.
var columns00005 = []string{"http_domain", "http_path", "http_method", "http_status", "http_latency_ms", "http_elapsed_ms"}

// Rows written before migration 00003, by the code of that time (without the facts columns),
// read after it with zero Facts; the migration's Down and Up run on 18.16 with such rows in place,
// and rows written after it keep their Facts.
func TestMigration00003KeepsOldRows(t *testing.T) {
	dsn := sinktest.ClickHouse(t)
	p, closeAll, err := newProvider(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	if _, err := p.UpTo(ctxT(t), 2); err != nil {
		t.Fatalf("migrate to 2: %v", err)
	}
	s := openT(t, dsn)
	app := uuid.New()
	events := eventstest.RealisticEvents(t, app, 200)
	withFacts := 0
	for i := range events {
		if events[i].Facts != (model.EventFacts{}) {
			withFacts++
		}
	}
	if withFacts == 0 {
		t.Fatal("no test event has facts: no test")
	}
	ec := new(eventCols).fill(events)
	old := slices.DeleteFunc(ec.cols(), func(c col) bool {
		return slices.Contains(columns00003, c.name) || slices.Contains(columns00004, c.name) ||
			slices.Contains(columns00005, c.name)
	})
	if err := s.insert(ctxT(t), "events", old); err != nil {
		t.Fatalf("insert with the 00002 columns: %v", err)
	}
	check := func(step string) {
		t.Helper()
		for _, e := range events {
			want := e
			want.Facts = model.EventFacts{}
			got, err := s.Event(ctxT(t), app, e.ID)
			if err != nil {
				t.Fatalf("%s: Event: %v", step, err)
			}
			if !reflect.DeepEqual(normEvent(got), normEvent(want)) {
				t.Fatalf("%s: old event read back\n got %+v\nwant %+v", step, got, want)
			}
		}
	}
	if _, err := p.Up(ctxT(t)); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	check("after 00003")
	if _, err := p.DownTo(ctxT(t), 2); err != nil {
		t.Fatalf("migrate down to 2: %v", err)
	}
	var n uint64
	if err := s.Conn().QueryRow(ctxT(t), "SELECT count() FROM system.columns WHERE database = currentDatabase() AND table = 'events' AND name IN (?, ?, ?, ?, ?, ?)",
		columns00003[0], columns00003[1], columns00003[2], columns00003[3], columns00003[4], columns00003[5]).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after down to 2: %d of the 00003 columns left (%v)", n, err)
	}
	if _, err := p.Up(ctxT(t)); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
	check("after down and up")
	// New rows carry their facts.
	fresh := eventstest.RealisticEvents(t, app, 50)
	if err := s.WriteEvents(ctxT(t), fresh); err != nil {
		t.Fatal(err)
	}
	for _, e := range fresh {
		got, err := s.Event(ctxT(t), app, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Facts != e.Facts {
			t.Fatalf("event %s facts\n got %+v\nwant %+v", e.ID, got.Facts, e.Facts)
		}
	}
}

// An ADD COLUMN whose column is already there (a run that stopped half way, or another node)
// is done when the type is the one the migration declares, and an error naming both otherwise.
func TestMigrateAddColumnExists(t *testing.T) {
	cases := []struct {
		name, pre, wantErr string
	}{
		{"half-applied", "ALTER TABLE events ADD COLUMN attachment_sizes Array(Int64)", ""},
		{"other type", "ALTER TABLE events ADD COLUMN attachment_sizes Array(UInt32)", "exists as Array(UInt32), the migration adds it as Array(Int64)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dsn := sinktest.ClickHouse(t)
			p, closeAll, err := newProvider(dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer closeAll()
			if _, err := p.UpTo(ctxT(t), 1); err != nil {
				t.Fatal(err)
			}
			if err := openT(t, dsn).Conn().Exec(ctxT(t), c.pre); err != nil {
				t.Fatal(err)
			}
			err = Migrate(ctxT(t), dsn)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("Migrate: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("Migrate error = %v, want one saying %q", err, c.wantErr)
			}
		})
	}
}

// normEvent and normSpan map empty optional slices to nil, as a store reads them.
func normEvent(e model.Event) model.Event {
	if len(e.UserDefined) == 0 {
		e.UserDefined = nil
	}
	if len(e.Attachments) == 0 {
		e.Attachments = nil
	}
	if len(e.Payload) == 0 {
		e.Payload = nil
	}
	return e
}

func normSpan(s model.Span) model.Span {
	if len(s.UserDefined) == 0 {
		s.UserDefined = nil
	}
	if len(s.Checkpoints) == 0 {
		s.Checkpoints = nil
	}
	return s
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

// BenchmarkBuildColumns is the client-side share of an insert: filling the column slices, as
// WriteEvents does (one set of columns kept from write to write).
func BenchmarkBuildColumns(b *testing.B) {
	const batch = 10_000
	events := eventstest.RealisticEvents(b, uuid.New(), batch)
	c := new(eventCols).fill(events) // made once, as the store's kept set is
	c.release()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = c.fill(events).cols()
		c.release()
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
}
