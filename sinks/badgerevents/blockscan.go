package badgerevents

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/badgerdb"
)

// blockSource gives the app's event rows held in blocks (docs/event-blocks.md) of a window, in
// the window's order: it reads the blocks a bucket at a time, merges them (the newest copy of
// a row wins) and leaves out the rows outside the window or before its start. It reads the
// data blocks, or with ids the id blocks (rows without values). A bucket's rows are valid
// until the next bucket is read.
type blockSource struct {
	it    *badger.Iterator
	w     window
	ids   bool
	hl    int // the length of the blocks' head
	merge bucketMerge
	bufs  [][]byte // one per block of the bucket: the merge keeps the rows of all of them
	dec   []blockRow
	rows  []blockRow // the bucket's merged rows, in time and id order
	i     int        // the next of rows in the window's order
	done  bool       // no bucket left in the window
	// With keep set, read holds each bucket read and the keys of its data blocks, for a
	// writer that deletes or rewrites them (retention).
	keep bool
	read []bucketRead
}

// bucketRead is a bucket a blockSource read: its start, the keys of the data blocks it read
// and the highest seq among them.
type bucketRead struct {
	bucket int64
	keys   [][]byte
	seq    uint64
}

func newBlockSource(txn *badger.Txn, app uuid.UUID, w window, ids bool) *blockSource {
	tag := byte(tagBlock)
	if ids {
		tag = tagBlockIDs
	}
	head := appendHead(nil, badgerdb.PrefixEvents, tag, app)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: head, Reverse: w.reverse})
	b := &blockSource{it: it, w: w, ids: ids, hl: len(head)}
	// The first bucket to read: the one of the start, else of the window's first bound.
	var bucket int64
	switch {
	case len(w.start) >= 8:
		bucket = bucketOf(getTime(w.start))
	case !w.reverse:
		bucket = bucketOf(w.lo)
	case w.open:
		bucket = math.MaxInt64
	case w.hi == math.MinInt64:
		b.done = true // nothing is before the smallest time
		return b
	default:
		bucket = bucketOf(w.hi - 1)
	}
	seek := timeKey(head, bucket)
	if w.reverse {
		// After every block of the bucket: Badger's reverse seek finds the largest key at or
		// below it.
		seek = append(seek, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"...)
	}
	it.Seek(seek)
	return b
}

func (b *blockSource) close() { b.it.Close() }

// peek returns the next row of the window without moving past it, or nil at the end.
func (b *blockSource) peek() (*blockRow, error) {
	for {
		for b.i >= 0 && b.i < len(b.rows) {
			r := &b.rows[b.i]
			if b.w.reverse {
				if r.ts < b.w.lo {
					b.done = true
					return nil, nil
				}
				if !b.w.open && r.ts >= b.w.hi || b.w.start != nil && compareStart(r, b.w.start) > 0 {
					b.i--
					continue
				}
			} else {
				if !b.w.open && r.ts >= b.w.hi {
					b.done = true // the rest of the bucket stays in rows (rest)
					return nil, nil
				}
				if r.ts < b.w.lo || b.w.start != nil && compareStart(r, b.w.start) < 0 {
					b.i++
					continue
				}
			}
			return r, nil
		}
		if b.done {
			return nil, nil
		}
		if err := b.readBucket(); err != nil {
			return nil, err
		}
	}
}

// rest is what of the last bucket read peek has not yet given (forward only).
func (b *blockSource) rest() []blockRow {
	if b.i >= len(b.rows) {
		return nil
	}
	return b.rows[b.i:]
}

// next moves past the row peek returned.
func (b *blockSource) next() {
	if b.w.reverse {
		b.i--
	} else {
		b.i++
	}
}

// readBucket reads the blocks of the iterator's bucket into rows, or sets done when no bucket
// of the window is left.
func (b *blockSource) readBucket() error {
	b.rows, b.i = nil, 0
	if !b.it.Valid() {
		b.done = true
		return nil
	}
	bucket, _, err := b.blockKey(b.it.Item().Key())
	if err != nil {
		return err
	}
	// Rows of a bucket past the window's end are all outside it.
	if b.w.reverse && bucket < bucketOf(b.w.lo) || !b.w.reverse && !b.w.open && bucket >= b.w.hi {
		b.done = true
		return nil
	}
	b.merge.reset()
	if b.keep {
		b.read = append(b.read, bucketRead{bucket: bucket})
	}
	n := 0
	for ; b.it.Valid(); b.it.Next() {
		item := b.it.Item()
		bk, seq, err := b.blockKey(item.Key())
		if err != nil {
			return err
		}
		if bk != bucket {
			break
		}
		if b.keep {
			r := &b.read[len(b.read)-1]
			r.keys, r.seq = append(r.keys, item.KeyCopy(nil)), max(r.seq, seq)
		}
		if n == len(b.bufs) {
			b.bufs = append(b.bufs, nil)
		}
		if b.ids {
			// An id block's rows alias its bytes, which Badger's callback would take back.
			if b.bufs[n], err = item.ValueCopy(b.bufs[n][:0]); err == nil {
				b.dec, err = decodeIDs(b.dec[:0], bucket, b.bufs[n])
			}
		} else {
			err = item.Value(func(v []byte) error {
				var err error
				b.dec, b.bufs[n], err = decodeBlock(b.dec[:0], b.bufs[n], bucket, v)
				return err
			})
		}
		if err != nil {
			return fmt.Errorf("block %d of bucket %d: %w", seq, bucket, err)
		}
		for _, r := range b.dec {
			if len(r.id) != idLen { // event ids are 16 bytes, as in row keys
				return fmt.Errorf("%w: block %d of bucket %d: an id of %d bytes", errCorrupt, seq, bucket, len(r.id))
			}
		}
		b.merge.add(seq, b.dec)
		n++
	}
	b.rows = b.merge.merged()
	if b.w.reverse {
		b.i = len(b.rows) - 1
	}
	return nil
}

// blockKey reads a data block's key: its bucket and seq (its part orders nothing: the parts of
// one seq hold disjoint rows).
func (b *blockSource) blockKey(k []byte) (bucket int64, seq uint64, err error) {
	if len(k) != b.hl+blockKeyLen {
		return 0, 0, fmt.Errorf("%w: block key of %d bytes", errCorrupt, len(k))
	}
	return getTime(k[b.hl:]), binary.BigEndian.Uint64(k[b.hl+8:]), nil
}

// compareStart compares r's place in key order (its time as keys hold it, then its id) with a
// window's start.
func compareStart(r *blockRow, start []byte) int {
	var t [8]byte
	putTime(t[:], r.ts)
	n := min(8, len(start))
	if c := bytes.Compare(t[:n], start[:n]); c != 0 {
		return c
	}
	if len(start) < 8 {
		return 1 // r's key goes on past the start
	}
	return bytes.Compare(r.id, start[8:])
}

// blockRowKeys gives the row key of each row of an id block (item): the key filter's build
// reads them, so that it knows the rows in blocks as it knows row keys (store.go).
func blockRowKeys(item *badger.Item, add func(key []byte)) error {
	k := item.KeyCopy(nil)
	hl := len(badgerdb.PrefixEvents) + 1 + 16
	if len(k) != hl+blockKeyLen {
		return fmt.Errorf("%w: id block key of %d bytes", errCorrupt, len(k))
	}
	app, bucket := uuid.UUID(k[hl-16:hl]), getTime(k[hl:])
	return item.Value(func(v []byte) error {
		rows, err := decodeIDs(nil, bucket, v)
		if err != nil {
			return err
		}
		var key []byte
		for _, r := range rows {
			key = appendRowKey(key[:0], badgerdb.PrefixEvents, app, r.ts, r.id)
			add(key)
		}
		return nil
	})
}
