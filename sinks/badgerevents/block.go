package badgerevents

// The block layout's codec and per-bucket merge (docs/event-blocks.md, step 1). The store does
// not write or read blocks yet: the readers that merge them with row keys come next, then the
// writes. Rows of one app and one second (a bucket) that one write stores go into one data
// block, S2-compressed, and one id block that holds only their times and ids, so that what
// needs identities (the key filter's build, point reads, resolving suspects) reads about 20
// bytes a row instead of decompressing rows.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/s2"

	"github.com/svc-dev/svc/sinks/badgerdb"
)

// Tags of the block layout's keys, each followed by the app, the bucket (8 bytes, as row times),
// the block's seq (8 bytes, big-endian) and its part (2 bytes, big-endian): a bucket's blocks
// sort by the order they were written in. One write (or a rewrite, under the seq it keeps)
// gives all its blocks of a bucket one seq and numbers them by part; their rows are disjoint.
const (
	tagBlock    = 'b' // the data block: the rows, compressed
	tagBlockIDs = 'B' // the id block: each row's time and id
	tagSuspects = 'u' // rows of the block the key filter may have seen (resolved later)
	tagGuard    = 'g' // per bucket: a write named suspects in it (blockwrite.go, checkSettled)
)

const (
	// bucketSpan is the time a bucket covers. A read decodes one bucket of an app at a time, so
	// it bounds what a read holds (a busy app at 60k rows/s: about 28 MB), while a flat-out
	// flush, whose rows spread over minutes, still fills blocks of about a hundred rows.
	bucketSpan = int64(time.Second)
	// blockVersion is the first byte of data and id blocks.
	blockVersion = 1
	// maxBlockRows bounds a block's rows, so that a block with its keys and side keys stays
	// well inside one Badger transaction (about 2.4 MB): at a recorded row's 470 bytes, 1,024
	// rows are under half a megabyte before compression.
	maxBlockRows = 1024
	// maxBlockBytes bounds a block's values before compression, for rows far larger than the
	// recorded ones (long texts); a row larger than it alone makes a block of one row.
	maxBlockBytes = 512 << 10
	// maxDecodedBlock is the most a data block may say it decompresses to: maxBlockRows rows of
	// the largest kind a write cuts (maxBlockBytes of values, or one row with its long texts),
	// far above, so that a damaged length cannot make a read allocate gigabytes.
	maxDecodedBlock = 64 << 20
)

// blockRow is one event row of a block: its time, its id and its encoded value (empty in id
// blocks). Decoded rows alias the buffer they were decoded into.
type blockRow struct {
	ts  int64
	id  []byte
	val []byte
}

// byRowOrder is compareRows for values (slices' search and sort functions).
func byRowOrder(a, b blockRow) int { return compareRows(&a, &b) }

// compareRows orders rows by time, then id: the order of row keys.
func compareRows(a, b *blockRow) int {
	if c := cmp.Compare(a.ts, b.ts); c != 0 {
		return c
	}
	return bytes.Compare(a.id, b.id)
}

// bucketOf is the start of the bucket that holds time ts: ts floored to bucketSpan, and
// math.MinInt64 for the times below the first whole bucket (their floor would not fit in an
// int64), so that a row's offset in its bucket is always in [0, bucketSpan).
func bucketOf(ts int64) int64 {
	d := ts % bucketSpan
	if d < 0 {
		d += bucketSpan
		// ts is negative here, so ts-MinInt64 fits: it is how far above the smallest time ts is.
		if ts-math.MinInt64 < d {
			return math.MinInt64
		}
	}
	return ts - d
}

// blockKeyLen is the length of a block key past its head: the bucket, the seq and the part.
const blockKeyLen = 8 + 8 + 2

// appendBlockKey appends the key of app's block (seq, part) in bucket, of kind tag (tagBlock,
// tagBlockIDs or tagSuspects).
func appendBlockKey(b []byte, tag byte, app uuid.UUID, bucket int64, seq uint64, part uint16) []byte {
	b = appendHead(b, badgerdb.PrefixEvents, tag, app)
	var t [blockKeyLen]byte
	putTime(t[:8], bucket)
	binary.BigEndian.PutUint64(t[8:], seq)
	binary.BigEndian.PutUint16(t[16:], part)
	return append(b, t[:]...)
}

// cutBlocks calls fn with each block's rows of sorted (by time and id, without repeats): a run
// of rows of one bucket, at most maxBlockRows of them and, past the first, at most
// maxBlockBytes of values, in order.
func cutBlocks(sorted []blockRow, fn func(bucket int64, rows []blockRow)) {
	for len(sorted) > 0 {
		bucket := bucketOf(sorted[0].ts)
		n, size := 1, len(sorted[0].val)
		for n < len(sorted) && n < maxBlockRows && bucketOf(sorted[n].ts) == bucket && size+len(sorted[n].val) <= maxBlockBytes {
			size += len(sorted[n].val)
			n++
		}
		fn(bucket, sorted[:n])
		sorted = sorted[n:]
	}
}

// appendRowsRaw appends rows, all in bucket, sorted by time and id and without repeats, in the
// blocks' uncompressed form: their count, then each row's offset in the bucket, id and, with
// vals, value, each behind its length.
func appendRowsRaw(b []byte, bucket int64, rows []blockRow, vals bool) []byte {
	b = binary.AppendUvarint(b, uint64(len(rows)))
	for i := range rows {
		r := &rows[i]
		b = binary.AppendUvarint(b, uint64(r.ts-bucket))
		b = binary.AppendUvarint(b, uint64(len(r.id)))
		b = append(b, r.id...)
		if vals {
			b = binary.AppendUvarint(b, uint64(len(r.val)))
			b = append(b, r.val...)
		}
	}
	return b
}

// encodeBlock appends the data block of rows to dst: all in bucket, sorted and without repeats,
// at most maxBlockRows. raw is scratch for the uncompressed form; both grown buffers are
// returned for reuse.
func encodeBlock(dst, raw []byte, bucket int64, rows []blockRow) (block, rawOut []byte) {
	raw = appendRowsRaw(raw[:0], bucket, rows, true)
	n := s2.MaxEncodedLen(len(raw))
	dst = slices.Grow(dst, 1+n)
	dst = append(dst, blockVersion)
	enc := s2.Encode(dst[len(dst):len(dst)+n], raw)
	return dst[:len(dst)+len(enc)], raw
}

// encodeIDs appends the id block of rows to dst (rows as for encodeBlock; values are left out).
func encodeIDs(dst []byte, bucket int64, rows []blockRow) []byte {
	dst = append(dst, blockVersion)
	return appendRowsRaw(dst, bucket, rows, false)
}

// decodeBlock decodes the data block val of bucket, appending its rows to rows. buf is scratch
// for the decompressed bytes, which the rows alias, so it is overwritten from its start: a
// caller that keeps the rows of several blocks (a bucket's merge) gives each its own buffer.
// Both grown buffers are returned for reuse; on error no row is appended.
func decodeBlock(rows []blockRow, buf []byte, bucket int64, val []byte) ([]blockRow, []byte, error) {
	if len(val) == 0 || val[0] != blockVersion {
		return rows, buf, fmt.Errorf("%w: data block of unknown version", errCorrupt)
	}
	n, err := s2.DecodedLen(val[1:])
	if err != nil {
		return rows, buf, fmt.Errorf("%w: data block: %w", errCorrupt, err)
	}
	if n > maxDecodedBlock {
		return rows, buf, fmt.Errorf("%w: data block of %d bytes decompressed", errCorrupt, n)
	}
	buf = slices.Grow(buf[:0], n)[:n]
	raw, err := s2.Decode(buf, val[1:])
	if err != nil {
		return rows, buf, fmt.Errorf("%w: data block: %w", errCorrupt, err)
	}
	rows, err = parseRowsRaw(rows, bucket, raw, true)
	return rows, buf, err
}

// decodeIDs decodes the id block val of bucket, appending its rows (without values) to rows;
// their ids alias val. On error no row is appended.
func decodeIDs(rows []blockRow, bucket int64, val []byte) ([]blockRow, error) {
	if len(val) == 0 || val[0] != blockVersion {
		return rows, fmt.Errorf("%w: id block of unknown version", errCorrupt)
	}
	return parseRowsRaw(rows, bucket, val[1:], false)
}

// parseRowsRaw reads appendRowsRaw's form. It refuses what a block cannot hold: times outside
// the bucket, rows out of order or repeated, lengths past the end, bytes left over. On error it
// returns rows as given.
func parseRowsRaw(rows []blockRow, bucket int64, b []byte, vals bool) ([]blockRow, error) {
	first := len(rows)
	bad := func(what string) ([]blockRow, error) {
		clear(rows[first:])
		return rows[:first], fmt.Errorf("%w: block: %s", errCorrupt, what)
	}
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return v, true
	}
	bytesOf := func() ([]byte, bool) {
		l, ok := uv()
		if !ok || l > uint64(len(b)) {
			return nil, false
		}
		v := b[:l:l]
		b = b[l:]
		return v, true
	}
	n, ok := uv()
	if !ok || n > maxBlockRows {
		return bad("row count")
	}
	rows = slices.Grow(rows, int(n))
	for range n {
		off, ok := uv()
		// The first and last buckets are shorter than bucketSpan: a time past math.MaxInt64,
		// or in the first whole bucket above math.MinInt64, is not of the bucket either.
		if !ok || off >= uint64(bucketSpan) || bucket > 0 && int64(off) > math.MaxInt64-bucket ||
			bucketOf(bucket+int64(off)) != bucket {
			return bad("row time outside its bucket")
		}
		r := blockRow{ts: bucket + int64(off)}
		if r.id, ok = bytesOf(); !ok {
			return bad("row id")
		}
		if vals {
			if r.val, ok = bytesOf(); !ok {
				return bad("row value")
			}
		}
		if len(rows) > first && compareRows(&rows[len(rows)-1], &r) >= 0 {
			return bad("rows out of order")
		}
		rows = append(rows, r)
	}
	if len(b) != 0 {
		return bad("bytes after the last row")
	}
	return rows, nil
}

// bucketMerge merges the blocks of one bucket: of rows that more than one block holds (a row
// written again), the copy in the block written last (the highest seq) wins, as a row
// overwritten in place did in the row layout.
type bucketMerge struct {
	rows []seqRow
	out  []blockRow
}

type seqRow struct {
	blockRow
	seq uint64
}

// reset empties m for the next bucket, keeping its buffers.
func (m *bucketMerge) reset() {
	clear(m.rows)
	m.rows = m.rows[:0]
}

// add takes the rows of the bucket's block seq; blocks may come in any order.
func (m *bucketMerge) add(seq uint64, rows []blockRow) {
	for _, r := range rows {
		m.rows = append(m.rows, seqRow{r, seq})
	}
}

// merged returns the bucket's rows sorted by time and id, one copy of each: the newest. The
// slice is valid until the next reset.
func (m *bucketMerge) merged() []blockRow {
	slices.SortFunc(m.rows, func(a, b seqRow) int {
		if c := compareRows(&a.blockRow, &b.blockRow); c != 0 {
			return c
		}
		return cmp.Compare(b.seq, a.seq) // newest first among copies
	})
	clear(m.out)
	m.out = m.out[:0]
	for i := range m.rows {
		if len(m.out) > 0 && compareRows(&m.out[len(m.out)-1], &m.rows[i].blockRow) == 0 {
			continue
		}
		m.out = append(m.out, m.rows[i].blockRow)
	}
	return m.out
}
