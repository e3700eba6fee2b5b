package badgerevents

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/eventstest"
)

// BenchmarkRowsVsBlocks prices the rows' share of a write in the two layouts, on disk in the
// node's events database: 10,000-row writes of copies of the recorded batches, set as one key
// per row (today's layout, every row new, as the key filter lets a write of new rows skip
// reading them) or cut by bucket into data and id blocks (docs/event-blocks.md). Side keys (the
// issue index, walks, counts) are left out: they do not change between the layouts.
//
// The window is where the copies' times fall. Two minutes is a busy app flat out, whose rows
// of a flush crowd into few buckets; a day is a write whose rows share almost no second, as a
// quiet app's would, and makes blocks of a row or two.
//
// go test -run '^$' -bench BenchmarkRowsVsBlocks -benchtime 100x ./sinks/badgerevents/
func BenchmarkRowsVsBlocks(b *testing.B) {
	for _, window := range []time.Duration{2 * time.Minute, 24 * time.Hour} {
		for _, blocks := range []bool{false, true} {
			name := fmt.Sprintf("window=%s/layout=rows", window)
			if blocks {
				name = fmt.Sprintf("window=%s/layout=blocks", window)
			}
			b.Run(name, func(b *testing.B) { benchRowsVsBlocks(b, window, blocks) })
		}
	}
}

func benchRowsVsBlocks(b *testing.B, window time.Duration, blocks bool) {
	const batch = 10_000
	db, err := badgerdb.OpenEvents(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	app := uuid.New()
	copies := eventstest.NewCopies(eventstest.FixtureBodies(b, app), app, time.Now(), window, rand.New(rand.NewPCG(1, 2)))
	var events []model.Event
	var rows []blockRow
	var arena, keys, out, raw []byte
	var making time.Duration
	var seq uint64
	var keysSet, written int64
	cpu0 := eventstest.CPUTime(b)
	for b.Loop() {
		b.StopTimer()
		m := eventstest.CPUTime(b)
		events = copies.Append(events[:0], batch)
		rows, arena = encodeRows(events, rows, arena)
		making += eventstest.CPUTime(b) - m
		b.StartTimer()

		txn := db.NewTransaction(true)
		maxCount, maxSize := db.MaxBatchCount()*9/10, db.MaxBatchSize()*9/10
		var count, size int64
		set := func(k, v []byte) {
			if count+1 > maxCount || size+entrySize(len(k), len(v), db.Opts().ValueThreshold) > maxSize {
				if err := txn.Commit(); err != nil {
					b.Fatal(err)
				}
				txn = db.NewTransaction(true)
				count, size = 0, 0
			}
			if err := txn.Set(k, v); err != nil {
				b.Fatal(err)
			}
			count, size = count+1, size+entrySize(len(k), len(v), db.Opts().ValueThreshold)
			keysSet, written = keysSet+1, written+int64(len(k)+len(v))
		}
		keys = keys[:0]
		if !blocks {
			for i := range rows {
				r := &rows[i]
				start := len(keys)
				keys = appendRowKey(keys, badgerdb.PrefixEvents, app, r.ts, r.id)
				set(keys[start:len(keys):len(keys)], r.val)
			}
		} else {
			out = out[:0]
			seq++ // one per write; its blocks of one bucket are numbered by part
			last, part := int64(0), uint16(0)
			cutBlocks(sortRows(rows), func(bucket int64, rows []blockRow) {
				if bucket != last {
					last, part = bucket, 0
				} else {
					part++
				}
				start := len(out)
				out, raw = encodeBlock(out, raw, bucket, rows)
				data := out[start:len(out):len(out)]
				start = len(out)
				out = encodeIDs(out, bucket, rows)
				ids := out[start:len(out):len(out)]
				start = len(keys)
				keys = appendBlockKey(keys, tagBlock, app, bucket, seq, part)
				set(keys[start:len(keys):len(keys)], data)
				start = len(keys)
				keys = appendBlockKey(keys, tagBlockIDs, app, bucket, seq, part)
				set(keys[start:len(keys):len(keys)], ids)
			})
		}
		if err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
		if err := db.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	cpu := eventstest.CPUTime(b) - cpu0 - making
	n := float64(b.N * batch)
	b.ReportMetric(n/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/row")
	b.ReportMetric(float64(keysSet)/n, "keys/row")
	b.ReportMetric(float64(written)/n, "B/row")
	checkRows(b, db, app, blocks, b.N*batch)
}

// checkRows counts what the benchmark stored, so that a layout that lost rows cannot look fast.
func checkRows(b *testing.B, db *badger.DB, app uuid.UUID, blocks bool, want int) {
	got := 0
	err := db.View(func(txn *badger.Txn) error {
		if !blocks {
			head := appendHead(nil, badgerdb.PrefixEvents, tagRow, app)
			it := txn.NewIterator(badger.IteratorOptions{Prefix: head})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				got++
			}
			return nil
		}
		head := appendHead(nil, badgerdb.PrefixEvents, tagBlockIDs, app)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: head, PrefetchValues: true})
		defer it.Close()
		var rows []blockRow
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			err := it.Item().Value(func(v []byte) error {
				var err error
				rows, err = decodeIDs(rows[:0], getTime(k[len(head):]), v)
				return err
			})
			if err != nil {
				return err
			}
			got += len(rows)
		}
		return nil
	})
	if err != nil || got != want {
		b.Fatalf("stored %d rows (%v), want %d", got, err, want)
	}
}
