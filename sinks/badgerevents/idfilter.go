package badgerevents

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"

	"github.com/svc-dev/svc/sinks/badgerdb"
)

// idFilter knows which row ids a Store may have stored, so that a write skips reading the id
// index of an id it has never seen: nearly every row, as SDKs send each event once. That read
// was a quarter of a write's time (BenchmarkWriteCopies: 100k → 134k rows/s without it).
//
// It is a blocked Bloom filter over the id index keys: an id sets its bits in one 64-bit word
// with one atomic Or, so of two writers of one new id exactly one finds it unseen and skips
// the read, and the other reads the index (and, as before, one of them loses at commit and
// retries). It knows the ids present when its build read the index and every id this Store
// has written since, so a Store must be the only one writing its database's rows while it is
// open (other Stores, and other processes after it, may read).
//
// The first write starts a build: a keys-only scan of the id index in the background, during
// which every write reads the index as before. Once the filter holds more ids than its size
// keeps accurate, a larger one is built the same way while the current one goes on answering.
type idFilter struct {
	seed     maphash.Seed
	start    sync.Once
	building atomic.Bool
	closed   atomic.Bool    // Close was called: builds stop and none starts
	builds   sync.WaitGroup // the build under way
	// mu is held shared by each write transaction from its first id to its commit, and
	// exclusively by a build to publish its filter and take its snapshot: every id committed
	// after that snapshot was added to the filter being built.
	mu   sync.RWMutex
	cur  atomic.Pointer[bloom] // answers; nil until the first build ends
	next atomic.Pointer[bloom] // being built; writes add to it too
}

// idFilterMinWords is the smallest filter (64 KiB); a package variable so tests can make
// rebuilds happen with a few thousand ids.
var idFilterMinWords = 8192

// bitsPerID is the filter size per id it is built for; with 6 bits set per id in one word, a
// filter at that load answers "maybe stored" for about 1 % of new ids.
const bitsPerID = 16

// bloom is a blocked Bloom filter of a fixed size.
type bloom struct {
	words []atomic.Uint64
	added atomic.Int64 // ids that set a bit
	limit int64        // added beyond it: build a larger filter
}

func newBloom(ids int) *bloom {
	n := max(idFilterMinWords, ids*bitsPerID/64)
	return &bloom{words: make([]atomic.Uint64, n), limit: int64(n) * 64 / bitsPerID * 2}
}

// mask is the word of h and the six bits an id with hash h sets in it.
func (b *bloom) mask(h uint64) (*atomic.Uint64, uint64) {
	hi, _ := bits.Mul64(h, uint64(len(b.words)))
	x := h*0x9e3779b97f4a7c15 ^ h>>29
	var m uint64
	for range 6 {
		m |= 1 << (x & 63)
		x >>= 6
	}
	return &b.words[hi], m
}

// add sets h's bits and says whether they were all set already (the id may be stored).
func (b *bloom) add(h uint64) (seen bool) {
	w, m := b.mask(h)
	if w.Load()&m == m {
		return true
	}
	if w.Or(m)&m == m {
		return true
	}
	b.added.Add(1)
	return false
}

func (f *idFilter) hash(key []byte) uint64 { return maphash.Bytes(f.seed, key) }

// unseen adds the id index key k to the filter and says whether it is certain that k was not
// stored before: then the write need not read it. Call it with mu held shared.
func (f *idFilter) unseen(k []byte) bool {
	h := f.hash(k)
	if n := f.next.Load(); n != nil {
		n.add(h)
	}
	c := f.cur.Load()
	if c == nil {
		return false
	}
	return !c.add(h)
}

// close stops a build under way and waits for it; no build starts after it.
func (f *idFilter) close() {
	f.mu.Lock()
	f.closed.Store(true)
	f.mu.Unlock()
	f.builds.Wait()
}

// ensure starts the first build (once) and a larger one once the current filter is full.
func (f *idFilter) ensure(db *badger.DB) {
	f.start.Do(func() {
		f.seed = maphash.MakeSeed()
		f.startBuild(db, estimateIDs(db))
	})
	if c := f.cur.Load(); c != nil && c.added.Load() > c.limit {
		f.startBuild(db, int(c.added.Load())*2)
	}
}

// startBuild builds a filter for about ids ids in a goroutine that ends with its scan; none
// starts while one runs.
func (f *idFilter) startBuild(db *badger.DB, ids int) {
	if !f.building.CompareAndSwap(false, true) {
		return
	}
	b := newBloom(ids)
	f.mu.Lock()
	if f.closed.Load() {
		f.mu.Unlock()
		f.building.Store(false)
		return
	}
	f.next.Store(b)
	txn := db.NewTransaction(false) // the snapshot: what it lacks, writes add to b
	f.builds.Add(1)
	f.mu.Unlock()
	go func() { // ends when the scan does, or at close
		defer f.builds.Done()
		defer f.building.Store(false)
		defer f.next.CompareAndSwap(b, nil)
		// Badger panics with ErrDBClosed when its database is closed under a transaction. A
		// Store closed before its database stops the scan first; one whose owner closes the
		// database without closing it loses the build, nothing else.
		defer func() { _ = recover() }()
		defer txn.Discard()
		if f.scanIDs(db, txn, b) {
			f.cur.Store(b)
		}
	}()
}

// scanIDs adds every id index key of events and spans in txn's snapshot to b, and says
// whether it saw them all (close stops it).
func (f *idFilter) scanIDs(db *badger.DB, txn *badger.Txn, b *bloom) bool {
	for _, prefix := range []string{badgerdb.PrefixEvents, badgerdb.PrefixSpans} {
		head := append([]byte(prefix), tagIdx)
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = head
		it := txn.NewIterator(opts)
		n := 0
		for it.Seek(head); it.ValidForPrefix(head); it.Next() {
			if n++; n%4096 == 0 && (f.closed.Load() || db.IsClosed()) {
				it.Close()
				return false
			}
			b.add(f.hash(it.Item().Key()))
		}
		it.Close()
	}
	return true
}

// estimateIDs is an upper bound of the stored ids from the table statistics: each row has at
// least a row key and an index key.
func estimateIDs(db *badger.DB) int {
	var keys uint64
	for _, t := range db.Tables() {
		keys += uint64(t.KeyCount)
	}
	return int(min(keys/2, 1<<31))
}
