package badgerevents

// Structures derived from the event rows that stores written before them lack (the issue
// index, tagIssue, see the package comment; journey facts, journey.go): built from their rows
// once, in bounded transactions, then marked complete.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/badgerdb"
)

// issueMarker says that every issue row of the store has its copy in the issue index.
var issueMarker = []byte(badgerdb.PrefixEvents + "m" + "issue-index v1")

// indexChunk bounds the rows one build transaction reads, and so its conflict-tracking set.
const indexChunk = 1 << 16

// backfill is what a Store knows of one structure derived from its event rows (the issue
// index, journey facts) that stores written before it lack: built from their rows once, in
// bounded transactions (try), then marked complete (marker). Writes keep it from the start, and
// a build applies each row idempotently, so a row written during a build is never wrong.
type backfill struct {
	marker []byte
	// try applies, in one transaction, at most limit event rows (of every app) from the key
	// from, and returns the key to resume from (nil at the end).
	try   func(s *Store, head, from []byte, limit int) ([]byte, error)
	ready atomic.Bool // the marker is set: queries read the structure
	mu    sync.Mutex  // held while checking the marker or building
	// resume is the row key an interrupted build of this Store goes on from (nil: the start).
	// The rows before it are applied, and writes keep them: the work is not redone.
	resume []byte
}

// Open returns a store over the node's shared database with its issue index and journey facts
// complete: a store written before either gets it built first, which reads every event row
// once per structure. Day sums are kept only when the store's last Close was its last write
// (keepOrDropSums).
func Open(ctx context.Context, db *badger.DB) (*Store, error) {
	s := New(db)
	if err := s.keepOrDropSums(); err != nil {
		return nil, fmt.Errorf("badgerevents: day sums: %w", err)
	}
	for _, b := range []*backfill{&s.index, &s.journey} {
		b.mu.Lock()
		err := s.build(ctx, b)
		b.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("badgerevents: build %s: %w", b.marker[len(badgerdb.PrefixEvents)+1:], err)
		}
	}
	return s, nil
}

// issuesIndexed says whether issue queries can read the issue index (else they read all rows);
// see built.
func (s *Store) issuesIndexed(ctx context.Context) (bool, error) {
	ok, err := s.built(ctx, &s.index)
	if err != nil {
		return false, fmt.Errorf("issue index: %w", err)
	}
	return ok, nil
}

// built says whether b is complete. The first call of a Store checks the marker and builds b if
// it is missing; calls meanwhile answer false rather than wait.
func (s *Store) built(ctx context.Context, b *backfill) (bool, error) {
	if b.ready.Load() {
		return true, nil
	}
	if !b.mu.TryLock() {
		return false, nil
	}
	defer b.mu.Unlock()
	if err := s.build(ctx, b); err != nil {
		return false, err
	}
	return true, nil
}

// buildIssueIndex builds the issue index (tests); see build.
func (s *Store) buildIssueIndex(ctx context.Context) error { return s.build(ctx, &s.index) }

// build, with b.mu held, applies every event row not applied yet, then sets the marker. A
// writer or deletion racing a build transaction on the same row conflicts with it (the build
// reads the row), and applying a row twice changes nothing. A build that stops (an error, a
// closed process) resumes or restarts later. A transaction that conflicts or outgrows Badger's
// limits is retried with half as many rows.
func (s *Store) build(ctx context.Context, b *backfill) error {
	if b.ready.Load() {
		return nil
	}
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(b.marker)
		return err
	})
	if err == nil {
		b.ready.Store(true)
		return nil
	}
	if !errors.Is(err, badger.ErrKeyNotFound) {
		return err
	}
	head := append([]byte(badgerdb.PrefixEvents), tagRow)
	from := b.resume
	if from == nil {
		from = head
	}
	limit := indexChunk
	for attempt := 0; from != nil; {
		if err := ctx.Err(); err != nil {
			return err
		}
		next, err := b.try(s, head, from, limit)
		if (errors.Is(err, badger.ErrConflict) || errors.Is(err, badger.ErrTxnTooBig) && limit > 1) && attempt < maxConflictRetries {
			attempt++
			limit = max(limit/2, 1)
			continue
		}
		if err != nil {
			return err
		}
		from, attempt, limit = next, 0, min(limit*2, indexChunk)
		b.resume = next
	}
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(b.marker, nil) }); err != nil {
		return err
	}
	b.ready.Store(true)
	return nil
}

// buildRows calls fn, in txn, with the event rows (of every app) from the key from: their key
// (app, time and id parts), and the item, which adds the row to the transaction's reads so
// that a concurrent rewrite or deletion of it conflicts with the build. It stops after limit
// rows, or at a row fn declines (false), and returns the key to resume from, nil at the end.
func buildRows(txn *badger.Txn, head, from []byte, limit int, fn func(item *badger.Item, app uuid.UUID, ts int64, id []byte) (bool, error)) ([]byte, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: head})
	defer it.Close()
	n := 0
	for it.Seek(from); it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if len(k) != len(head)+16+8+idLen {
			return nil, fmt.Errorf("%w: event row key of %d bytes", errCorrupt, len(k))
		}
		ok := n < limit
		if ok {
			ts, id := getTime(k[len(head)+16:]), k[len(head)+16+8:]
			var err error
			if ok, err = fn(item, uuid.UUID(k[len(head):len(head)+16]), ts, id); err != nil {
				return nil, rowErr(ts, id, err)
			}
		}
		if !ok {
			return append([]byte(nil), k...), nil
		}
		n++
	}
	return nil, nil
}

// tryIndexIssues copies, in one transaction, the issue rows among the event rows (of every app)
// from the key `from`: at most limit rows read, and as many copies as the transaction's size
// limits allow. It returns the key to resume from, nil at the end.
func (s *Store) tryIndexIssues(head, from []byte, limit int) ([]byte, error) {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	maxCount := s.db.MaxBatchCount()*9/10 - 1
	maxSize := s.db.MaxBatchSize()*9/10 - 64
	var count, size int64
	// Keys and values set must stay untouched until Commit; they live in one arena (a
	// reallocation leaves the earlier slices on the old array, which nothing writes again).
	arena := make([]byte, 0, 64<<10)
	var v rowView
	next, err := buildRows(txn, head, from, limit, func(item *badger.Item, _ uuid.UUID, _ int64, _ []byte) (bool, error) {
		var val []byte
		if err := item.Value(func(b []byte) error {
			issue, err := v.issueRow(b)
			if issue {
				start := len(arena)
				arena = append(arena, b...)
				val = arena[start:len(arena):len(arena)]
			}
			return err
		}); err != nil || val == nil {
			return true, err
		}
		k := item.Key()
		need := entrySize(len(k), len(val), s.vt)
		if count > 0 && (count+1 > maxCount || size+need > maxSize) {
			return false, nil
		}
		count, size = count+1, size+need
		start := len(arena)
		arena = append(arena, k...)
		xk := arena[start:len(arena):len(arena)]
		xk[len(badgerdb.PrefixEvents)] = tagIssue
		return true, txn.Set(xk, val)
	})
	if err != nil {
		return nil, err
	}
	return next, txn.Commit()
}

// issueRow says whether an encoded event row is of an issue type (has a copy in the index).
func (v *rowView) issueRow(val []byte) (bool, error) {
	if err := v.head(0, nil, val); err != nil {
		return false, err
	}
	return v.isIssueType(), nil
}
