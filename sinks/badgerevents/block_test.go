package badgerevents

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/s2"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/eventstest"
)

func TestBucketOf(t *testing.T) {
	const s = bucketSpan
	// The first bucket start above math.MinInt64 that is a whole multiple of bucketSpan.
	first := math.MinInt64 - math.MinInt64%s
	for _, c := range []struct {
		name   string
		ts     int64
		bucket int64
	}{
		{"zero", 0, 0},
		{"inside the first second", s - 1, 0},
		{"a whole second", s, s},
		{"a nanosecond before zero", -1, -s},
		{"a whole negative second", -s, -s},
		{"just below it", -s - 1, -2 * s},
		{"a recorded time", 1_732_000_000_123_456_789, 1_732_000_000_000_000_000},
		{"the smallest time", math.MinInt64, math.MinInt64},
		{"just below the first whole bucket", first - 1, math.MinInt64},
		{"the first whole bucket", first, first},
		{"inside the first whole bucket", first + 5, first},
		{"the largest time", math.MaxInt64, math.MaxInt64 - math.MaxInt64%s},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := bucketOf(c.ts)
			if got != c.bucket {
				t.Fatalf("bucketOf(%d) = %d, want %d", c.ts, got, c.bucket)
			}
			if off := c.ts - got; off < 0 || off >= s {
				t.Fatalf("offset %d outside [0, %d)", off, s)
			}
		})
	}
}

// TestBlockKeysOrder: a bucket's blocks sort by seq and part, and buckets by time, negative
// times first, as the readers walk them.
func TestBlockKeysOrder(t *testing.T) {
	app := uuid.New()
	keys := [][]byte{
		appendBlockKey(nil, tagBlock, app, math.MinInt64, 7, 0),
		appendBlockKey(nil, tagBlock, app, -bucketSpan, 1, 0),
		appendBlockKey(nil, tagBlock, app, 0, 1, 0),
		appendBlockKey(nil, tagBlock, app, 0, 1, 1),
		appendBlockKey(nil, tagBlock, app, 0, 1, 300),
		appendBlockKey(nil, tagBlock, app, 0, 2, 0),
		appendBlockKey(nil, tagBlock, app, 0, 256, 0),
		appendBlockKey(nil, tagBlock, app, bucketSpan, 0, 0),
		appendBlockKey(nil, tagBlock, app, bucketOf(math.MaxInt64), math.MaxUint64, math.MaxUint16),
	}
	if !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Fatal("block keys do not sort by bucket, then seq, then part")
	}
	for _, k := range keys {
		if len(k) != len(appendHead(nil, "ev/", tagBlock, app))+blockKeyLen {
			t.Fatalf("key of %d bytes", len(k))
		}
	}
}

// sortRows (for tests: the store has no writer of blocks yet) sorts rows by time and id and drops repeats, keeping of each the one given last:
// within one write, as across writes, the last write of a row wins. It returns the rows kept.
func sortRows(rows []blockRow) []blockRow {
	slices.SortStableFunc(rows, byRowOrder)
	out := rows[:0]
	for i := range rows {
		if len(out) > 0 && compareRows(&out[len(out)-1], &rows[i]) == 0 {
			out[len(out)-1] = rows[i]
			continue
		}
		out = append(out, rows[i])
	}
	clear(rows[len(out):]) // no dropped row keeps its bytes alive
	return out
}

func TestSortRows(t *testing.T) {
	id := func(b byte) []byte { return bytes.Repeat([]byte{b}, 16) }
	rows := []blockRow{
		{ts: 5, id: id(2), val: []byte("a")},
		{ts: 3, id: id(9), val: []byte("b")},
		{ts: 5, id: id(1), val: []byte("c")},
		{ts: 5, id: id(2), val: []byte("d")}, // the same row again: the last one given wins
		{ts: 3, id: id(9), val: []byte("e")},
		{ts: 5, id: id(2), val: []byte("f")},
	}
	got := sortRows(rows)
	want := []blockRow{
		{ts: 3, id: id(9), val: []byte("e")},
		{ts: 5, id: id(1), val: []byte("c")},
		{ts: 5, id: id(2), val: []byte("f")},
	}
	if !rowsEqual(got, want) {
		t.Fatalf("sortRows = %s, want %s", showRows(got), showRows(want))
	}
	for _, r := range rows[len(got):] {
		if r.id != nil || r.val != nil {
			t.Fatal("a dropped row keeps its bytes")
		}
	}

	// Past 12 rows the sort is no longer an insertion sort: an unstable one would keep some
	// other copy than the last.
	rng := rand.New(rand.NewPCG(5, 6))
	var many []blockRow
	last := map[string]string{}
	for i := range 300 {
		k := rng.IntN(20)
		r := blockRow{ts: int64(k % 4), id: id(byte(k)), val: []byte(fmt.Sprint(i))}
		many = append(many, r)
		last[fmt.Sprint(r.ts, r.id)] = string(r.val)
	}
	got = sortRows(many)
	if len(got) != len(last) {
		t.Fatalf("%d rows kept of %d distinct", len(got), len(last))
	}
	for i, r := range got {
		if i > 0 && compareRows(&got[i-1], &r) >= 0 {
			t.Fatal("rows out of order")
		}
		if want := last[fmt.Sprint(r.ts, r.id)]; string(r.val) != want {
			t.Fatalf("row %d %x kept copy %s, want the last given, %s", r.ts, r.id, r.val, want)
		}
	}
}

// TestBlockRoundTrip: data and id blocks give back the rows they were made of, at the edges of
// a bucket and of the time range too.
func TestBlockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	randRows := func(bucket int64, n int, span int64) []blockRow {
		rows := make([]blockRow, n)
		for i := range rows {
			id := make([]byte, 16)
			for j := range id {
				id[j] = byte(rng.Uint32())
			}
			val := make([]byte, rng.IntN(600))
			for j := range val {
				val[j] = "abcdefgh{}\":,0123"[rng.IntN(17)]
			}
			rows[i] = blockRow{ts: bucket + rng.Int64N(span), id: id, val: val}
		}
		return sortRows(rows)
	}
	last := bucketOf(math.MaxInt64)
	for _, c := range []struct {
		name   string
		bucket int64
		rows   []blockRow
	}{
		{"one row", 0, []blockRow{{ts: 0, id: make([]byte, 16), val: []byte("x")}}},
		{"an empty value", bucketSpan, []blockRow{{ts: bucketSpan + 1, id: make([]byte, 16), val: []byte{}}}},
		{"a span id's length", 0, []blockRow{{ts: 9, id: []byte("0123456789abcdef0123"), val: []byte("v")}}},
		{"the bucket's edges", 7 * bucketSpan, []blockRow{
			{ts: 7 * bucketSpan, id: make([]byte, 16), val: []byte("first")},
			{ts: 8*bucketSpan - 1, id: make([]byte, 16), val: []byte("last")},
		}},
		{"one time, many ids", -3 * bucketSpan, randRows(-3*bucketSpan, 200, 1)},
		{"a full block", 1_732_000_000 * bucketSpan, randRows(1_732_000_000*bucketSpan, maxBlockRows, bucketSpan)},
		{"the smallest bucket", math.MinInt64, randRows(math.MinInt64, 50, 100)},
		{"the largest bucket", last, []blockRow{{ts: math.MaxInt64, id: make([]byte, 16), val: []byte("end")}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Blocks are appended to what dst holds, as a write appends them to one buffer.
			prefix := []byte("earlier block")
			block, _ := encodeBlock(slices.Clone(prefix), nil, c.bucket, c.rows)
			if !bytes.HasPrefix(block, prefix) {
				t.Fatal("encodeBlock overwrote what dst held")
			}
			block = block[len(prefix):]
			got, _, err := decodeBlock(nil, nil, c.bucket, block)
			if err != nil {
				t.Fatal(err)
			}
			if !rowsEqual(got, c.rows) {
				t.Fatalf("data block gave %s, want %s", showRows(got), showRows(c.rows))
			}
			idBlock := encodeIDs(slices.Clone(prefix), c.bucket, c.rows)
			if !bytes.HasPrefix(idBlock, prefix) {
				t.Fatal("encodeIDs overwrote what dst held")
			}
			ids, err := decodeIDs(nil, c.bucket, idBlock[len(prefix):])
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(c.rows)
			for i := range want {
				want[i].val = nil
			}
			if !rowsEqual(ids, want) {
				t.Fatalf("id block gave %s, want %s", showRows(ids), showRows(want))
			}
		})
	}
}

// TestBlockDecodeAppendsAndReuses: decoding appends to the rows given and reuses the buffer,
// as a read that decodes a bucket's blocks one after another does.
func TestBlockDecodeAppendsAndReuses(t *testing.T) {
	a := []blockRow{{ts: 1, id: []byte("a"), val: []byte("one")}}
	b := []blockRow{{ts: 2, id: []byte("b"), val: []byte("two")}}
	ba, _ := encodeBlock(nil, nil, 0, a)
	bb, _ := encodeBlock(nil, nil, 0, b)
	rows, buf, err := decodeBlock(nil, nil, 0, ba)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err = decodeBlock(rows, nil, 0, bb)
	if err != nil {
		t.Fatal(err)
	}
	if !rowsEqual(rows, append(slices.Clone(a), b...)) {
		t.Fatalf("got %s", showRows(rows))
	}
	if _, again, err := decodeBlock(nil, buf, 0, bb); err != nil || &again[0] != &buf[0] {
		t.Fatalf("the buffer was not reused (err %v)", err)
	}
}

// TestBlockDecodeRefuses: what a block cannot hold is refused as corrupt, never read as rows
// of another time or bucket.
func TestBlockDecodeRefuses(t *testing.T) {
	raw := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	uv := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	id := make([]byte, 16)
	row := func(off uint64, id []byte, val string) []byte {
		return raw(uv(off), uv(uint64(len(id))), id, uv(uint64(len(val))), []byte(val))
	}
	data := func(b []byte) []byte { return append([]byte{blockVersion}, s2.Encode(nil, b)...) }
	idsOf := func(b []byte) []byte { return append([]byte{blockVersion}, b...) }
	good := raw(uv(1), row(5, id, "v"))
	if _, _, err := decodeBlock(nil, nil, 0, data(good)); err != nil {
		t.Fatalf("the control block: %v", err)
	}
	for _, c := range []struct {
		name   string
		bucket int64
		block  []byte
		ids    bool
	}{
		{"empty", 0, nil, false},
		{"unknown version", 0, append([]byte{9}, s2.Encode(nil, good)...), false},
		{"not S2", 0, []byte{blockVersion, 0xff, 0xff, 0xff}, false},
		{"truncated", 0, data(good)[:len(data(good))-2], false},
		{"too many rows", 0, data(raw(uv(maxBlockRows + 1))), false},
		{"fewer rows than counted", 0, data(raw(uv(2), row(5, id, "v"))), false},
		{"bytes after the last row", 0, data(raw(good, []byte{0})), false},
		{"a time past its bucket", 0, data(raw(uv(1), row(uint64(bucketSpan), id, "v"))), false},
		{"a time past the largest", bucketOf(math.MaxInt64), data(raw(uv(1), row(uint64(bucketSpan-1), id, "v"))), false},
		{"a time past the smallest bucket", math.MinInt64, data(raw(uv(1), row(uint64(-(math.MinInt64%bucketSpan)), id, "v"))), false},
		{"a bucket that is no bucket's start", 5, data(good), false},
		// Refused before anything is allocated for it (the error names the length).
		{"a decompressed length past the bound", 0, append([]byte{blockVersion}, binary.AppendUvarint(nil, maxDecodedBlock+1)...), false},
		{"an id past the end", 0, data(raw(uv(1), uv(5), uv(40), id)), false},
		{"a value past the end", 0, data(raw(uv(1), uv(5), uv(16), id, uv(10), []byte("v"))), false},
		{"rows out of order", 0, data(raw(uv(2), row(6, id, "a"), row(5, id, "b"))), false},
		{"a row twice", 0, data(raw(uv(2), row(5, id, "a"), row(5, id, "b"))), false},
		{"ids: unknown version", 0, []byte{2, 0}, true},
		{"ids: a time past its bucket", 0, idsOf(raw(uv(1), uv(uint64(bucketSpan)), uv(16), id)), true},
		{"ids: out of order", 0, idsOf(raw(uv(2), uv(9), uv(16), id, uv(3), uv(16), id)), true},
		{"ids: too many rows", 0, idsOf(uv(maxBlockRows + 1)), true},
		{"ids: bytes after the last row", 0, idsOf(raw(uv(1), uv(9), uv(16), id, []byte{1})), true},
		{"ids: an id past the end", 0, idsOf(raw(uv(1), uv(9), uv(16), id[:10])), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			given := []blockRow{{ts: 1}}
			var rows []blockRow
			if c.ids {
				rows, err = decodeIDs(given, c.bucket, c.block)
			} else {
				rows, _, err = decodeBlock(given, nil, c.bucket, c.block)
			}
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("err = %v, want errCorrupt", err)
			}
			if len(rows) != len(given) {
				t.Fatalf("a refused block appended %d rows", len(rows)-len(given))
			}
			if strings.Contains(c.name, "decompressed length") && !strings.Contains(err.Error(), "decompressed") {
				t.Fatalf("err = %v, want the length refused", err)
			}
		})
	}
}

// TestCutBlocks: blocks are runs of one bucket, cut at maxBlockRows rows and, past a block's
// first row, at maxBlockBytes of values.
func TestCutBlocks(t *testing.T) {
	rowsOf := func(bucket int64, n, size int) []blockRow {
		rows := make([]blockRow, n)
		for i := range rows {
			id := binary.BigEndian.AppendUint32(nil, uint32(i))
			rows[i] = blockRow{ts: bucket + int64(i%1000), id: id, val: make([]byte, size)}
		}
		return sortRows(rows)
	}
	for _, c := range []struct {
		name  string
		rows  []blockRow
		sizes []int // rows per block, in order
	}{
		{"none", nil, nil},
		{"one bucket", rowsOf(0, 10, 5), []int{10}},
		{"two buckets", append(rowsOf(0, 3, 5), rowsOf(bucketSpan, 2, 5)...), []int{3, 2}},
		{"more rows than a block holds", rowsOf(0, maxBlockRows+5, 1), []int{maxBlockRows, 5}},
		{"more bytes than a block holds", rowsOf(0, 5, maxBlockBytes/2), []int{2, 2, 1}},
		{"a row larger than a block", rowsOf(0, 2, maxBlockBytes+1), []int{1, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sizes []int
			var all []blockRow
			cutBlocks(c.rows, func(bucket int64, rows []blockRow) {
				for _, r := range rows {
					if bucketOf(r.ts) != bucket {
						t.Fatalf("row at %d in a block of bucket %d", r.ts, bucket)
					}
				}
				sizes = append(sizes, len(rows))
				all = append(all, rows...)
			})
			if !slices.Equal(sizes, c.sizes) {
				t.Fatalf("blocks of %v rows, want %v", sizes, c.sizes)
			}
			if !rowsEqual(all, c.rows) {
				t.Fatal("the blocks do not hold the rows in order")
			}
		})
	}
}

// TestBucketMerge: of a row in several blocks, the copy of the highest seq wins whatever order
// the blocks come in; the rest merge in time and id order.
func TestBucketMerge(t *testing.T) {
	id := func(b byte) []byte { return bytes.Repeat([]byte{b}, 16) }
	blocks := map[uint64][]blockRow{
		3: {{ts: 1, id: id(1), val: []byte("1@3")}, {ts: 4, id: id(4), val: []byte("4@3")}},
		9: {{ts: 1, id: id(1), val: []byte("1@9")}, {ts: 2, id: id(2), val: []byte("2@9")}},
		5: {{ts: 1, id: id(1), val: []byte("1@5")}, {ts: 4, id: id(3), val: []byte("3@5")}, {ts: 4, id: id(4), val: []byte("4@5")}},
		// Span ids are of any length: a longer id that starts with a shorter one sorts after it.
		7: {{ts: 4, id: append(id(4), 0), val: []byte("4+@7")}},
	}
	want := []blockRow{
		{ts: 1, id: id(1), val: []byte("1@9")},
		{ts: 2, id: id(2), val: []byte("2@9")},
		{ts: 4, id: id(3), val: []byte("3@5")},
		{ts: 4, id: id(4), val: []byte("4@5")},
		{ts: 4, id: append(id(4), 0), val: []byte("4+@7")},
	}
	var m bucketMerge
	for _, order := range [][]uint64{{3, 5, 7, 9}, {9, 7, 5, 3}, {5, 9, 3, 7}} {
		m.reset()
		for _, seq := range order {
			m.add(seq, blocks[seq])
		}
		if got := m.merged(); !rowsEqual(got, want) {
			t.Fatalf("blocks %v merged to %s, want %s", order, showRows(got), showRows(want))
		}
	}
	m.reset()
	if got := m.merged(); len(got) != 0 {
		t.Fatalf("an empty bucket merged to %s", showRows(got))
	}
}

func rowsEqual(a, b []blockRow) bool {
	return slices.EqualFunc(a, b, func(x, y blockRow) bool {
		return x.ts == y.ts && bytes.Equal(x.id, y.id) && bytes.Equal(x.val, y.val)
	})
}

func showRows(rows []blockRow) string {
	var b bytes.Buffer
	for _, r := range rows {
		fmt.Fprintf(&b, "[%d %x %q]", r.ts, r.id, r.val)
	}
	return b.String()
}

// FuzzDecodeBlock: no input makes the decoders panic or return rows out of order or outside the
// bucket.
func FuzzDecodeBlock(f *testing.F) {
	rows := []blockRow{{ts: 3, id: make([]byte, 16), val: []byte("v")}, {ts: 9, id: []byte("x"), val: nil}}
	block, _ := encodeBlock(nil, nil, 0, rows)
	f.Add(int64(0), block, false)
	f.Add(int64(0), encodeIDs(nil, 0, rows), true)
	low, _ := encodeBlock(nil, nil, math.MinInt64, []blockRow{{ts: math.MinInt64 + 1, id: []byte("x"), val: []byte("v")}})
	f.Add(int64(math.MinInt64), low, false)
	f.Fuzz(func(t *testing.T, ts int64, b []byte, ids bool) {
		bucket := bucketOf(ts)
		var got []blockRow
		var err error
		if ids {
			got, err = decodeIDs(nil, bucket, b)
		} else {
			got, _, err = decodeBlock(nil, nil, bucket, b)
		}
		if err != nil {
			return
		}
		for i, r := range got {
			if bucketOf(r.ts) != bucket {
				t.Fatalf("row at %d outside bucket %d", r.ts, bucket)
			}
			if i > 0 && compareRows(&got[i-1], &got[i]) >= 0 {
				t.Fatal("rows out of order")
			}
		}
	})
}

// BenchmarkBlockEncode is the block writer's part: a 10,000-row write shaped like the recorded
// traffic arriving flat out (copies of the fixture batches within the last two minutes, where
// the recorded bodies themselves span up to seven), its rows encoded as today's store encodes
// them, sorted, cut by bucket and encoded into data and id blocks. It reports what the cutting
// and encoding cost per row beyond today's encoding, how many rows a block holds, and the bytes
// written per row against the rows' own.
func BenchmarkBlockEncode(b *testing.B) {
	const batch = 10_000
	rows, rowBytes := eventRows(b, uuid.New(), 2*time.Minute, batch)
	work := make([]blockRow, len(rows))
	var out, raw []byte
	var blocks, written int
	b.ReportAllocs()
	for b.Loop() {
		copy(work, rows)
		out, blocks = out[:0], 0
		cutBlocks(sortRows(work), func(bucket int64, rows []blockRow) {
			out, raw = encodeBlock(out, raw, bucket, rows)
			out = encodeIDs(out, bucket, rows)
			blocks++
		})
		written = len(out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/row")
	b.ReportMetric(float64(batch)/float64(blocks), "rows/block")
	b.ReportMetric(float64(written)/float64(batch), "B/row-written")
	b.ReportMetric(float64(rowBytes)/float64(batch), "B/row-encoded")
}

// BenchmarkBucketRead decodes and merges the blocks BenchmarkBlockEncode makes, bucket by
// bucket, as a read of the block layout will: its ns/row is what a scan pays per row beyond
// today's decoding of the row itself.
func BenchmarkBucketRead(b *testing.B) {
	const batch = 10_000
	rows, _ := eventRows(b, uuid.New(), 2*time.Minute, batch)
	type stored struct {
		bucket int64
		block  []byte
	}
	var blocks []stored
	sorted := sortRows(rows)
	total := len(sorted)
	cutBlocks(sorted, func(bucket int64, rows []blockRow) {
		block, _ := encodeBlock(nil, nil, bucket, rows)
		blocks = append(blocks, stored{bucket, block})
	})
	var m bucketMerge
	var dec []blockRow
	bufs := make([][]byte, len(blocks))
	b.ReportAllocs()
	for b.Loop() {
		got := 0
		for i := 0; i < len(blocks); {
			m.reset()
			dec = dec[:0]
			j := i
			for ; j < len(blocks) && blocks[j].bucket == blocks[i].bucket; j++ {
				var err error
				if dec, bufs[j], err = decodeBlock(dec[:0], bufs[j], blocks[j].bucket, blocks[j].block); err != nil {
					b.Fatal(err)
				}
				m.add(uint64(j), dec)
			}
			got += len(m.merged())
			i = j
		}
		if got != total {
			b.Fatalf("read %d rows of %d", got, total)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/row")
}

// eventRows makes n copies of the recorded events of app, their times within window before
// now, encoded as the store encodes them (encodeRows), and gives their encoded bytes (ids and
// times included) in all.
func eventRows(tb testing.TB, app uuid.UUID, window time.Duration, n int) ([]blockRow, int) {
	copies := eventstest.NewCopies(eventstest.FixtureBodies(tb, app), app, time.Now(), window, rand.New(rand.NewPCG(1, 2)))
	rows, arena := encodeRows(copies.Append(nil, n), nil, nil)
	return rows, len(arena) + 8*len(rows)
}

// encodeRows encodes events as the store does into block rows, reusing rows and arena, and
// returns both: the rows alias the arena.
func encodeRows(events []model.Event, rows []blockRow, arena []byte) ([]blockRow, []byte) {
	rows, arena = rows[:0], arena[:0]
	for i := range events {
		e := &events[i]
		start := len(arena)
		arena = append(arena, e.ID[:]...)
		arena = appendEvent(arena, e)
		rows = append(rows, blockRow{ts: e.Timestamp, id: arena[start : start+16], val: arena[start+16:]})
	}
	return rows, arena
}
