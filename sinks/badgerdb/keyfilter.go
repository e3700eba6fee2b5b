package badgerdb

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// KeyFilter knows which keys under some prefixes a database may hold, so that a caller skips
// the Badger read of a key it is sure was never written: nearly every event row id (SDKs send
// each event once) and nearly every request id. A read of a missing key still goes through the
// memtables and every level's bloom filter, and first waits for every commit before it to be
// applied, which on a busy disk is what makes it slow.
//
// It is a blocked Bloom filter: a key sets six bits in one 64-bit word with one atomic Or, so
// of two writers of one new key exactly one is told it is new. It knows the keys present when
// its build scanned the database and every key added since, so its owner must be the only
// writer of those keys while it is open, and must Add each key before writing it, holding the
// filter (Hold) from the first Add until the write is committed.
//
// The first Ensure starts a build: it takes a snapshot, and keys-only scans of it run in the
// background, during which the filter answers "may hold" for every key. Ensure must be called
// only while the database is open (by its user, never after the owner closed it). Once it holds more keys than its size keeps accurate, a new
// one, sized for the keys then present, is built the same way while the current one goes on
// answering; so a build also forgets keys that expired (TTL) or were deleted. A filter is at
// most keyFilterMaxWords; past that it answers "may hold" more often, never wrongly.
type KeyFilter struct {
	prefixes [][]byte
	expanded []expansion
	minWords int

	seed     maphash.Seed
	start    sync.Once
	building atomic.Bool
	closed   atomic.Bool    // Close was called: builds stop and none starts
	builds   sync.WaitGroup // the build under way
	// mu is held shared by each writer from its first Add to its commit, and exclusively by a
	// build to publish its filter and take its snapshot: every key committed after that
	// snapshot was added to the filter being built.
	mu   sync.RWMutex
	cur  atomic.Pointer[bloom] // answers; nil until the first build ends
	next atomic.Pointer[bloom] // being built; Add adds to it too

	// While a build counts its snapshot it has no filter yet: the keys added meanwhile are
	// recorded (by hash) and added to its filter when it is made. Switched under mu, held
	// exclusively, so no Add sees half of the switch.
	recording atomic.Bool
	pmu       sync.Mutex
	pending   []uint64
	pendingN  int         // keys recorded, kept or not
	retry     atomic.Bool // a build gave up on too many recorded keys: the next Ensure starts one
}

// KeyFilterMinWords is the smallest filter, in 64-bit words (64 KiB): tests that want rebuilds
// after a few thousand keys pass less to NewKeyFilter.
const KeyFilterMinWords = 8192

// keyFilterMaxWords bounds a filter's memory (64 MiB, about 33M keys at its design load).
const keyFilterMaxWords = 1 << 23

// bitsPerKey is the filter size per key it is built for; with 6 bits set per key in one word,
// a filter at that load answers "may hold" for about 1 % of new keys.
const bitsPerKey = 16

// NewKeyFilter returns a filter of the keys under prefixes. minWords is the smallest filter
// (KeyFilterMinWords, or less in tests).
func NewKeyFilter(minWords int, prefixes ...[]byte) *KeyFilter {
	return &KeyFilter{prefixes: prefixes, minWords: max(minWords, 1), seed: maphash.MakeSeed()}
}

// expansion is a prefix whose entries each stand for keys under the filter's prefixes (Expand).
type expansion struct {
	prefix []byte
	keys   func(item *badger.Item, add func(key []byte)) error
}

// Expand makes the filter's builds also read the entries under prefix and add, for each, the
// keys that keys gives (add's argument is only read during the call): for a store that keeps
// many of its keys in one entry, such as rows in a block. An entry keys cannot read adds what
// it gave before its error; the build goes on. It must be called before the first Ensure.
func (f *KeyFilter) Expand(prefix []byte, keys func(item *badger.Item, add func(key []byte)) error) {
	f.expanded = append(f.expanded, expansion{prefix, keys})
}

// bloom is a blocked Bloom filter of a fixed size.
type bloom struct {
	words   []atomic.Uint64
	added   atomic.Int64 // keys that set a bit
	limit   int64        // added beyond it: build a new filter
	scanned int64        // keys its build found (set before it answers)
	built   time.Time    // when its build ended
}

func (f *KeyFilter) newBloom(keys int64) *bloom {
	n := int(min(max(int64(f.minWords), keys*bitsPerKey/64), keyFilterMaxWords))
	return &bloom{words: make([]atomic.Uint64, n), limit: int64(n) * 64 / bitsPerKey * 2}
}

// mask is the word of h and the six bits a key with hash h sets in it.
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

// add sets h's bits and says whether they were all set already (the key may be there).
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

// has says whether h's bits are all set.
func (b *bloom) has(h uint64) bool {
	w, m := b.mask(h)
	return w.Load()&m == m
}

func (f *KeyFilter) hash(key []byte) uint64 { return maphash.Bytes(f.seed, key) }

// Hold is taken by a writer from its first Add until its write is committed; Release ends it.
func (f *KeyFilter) Hold() { f.mu.RLock() }

// Release ends Hold.
func (f *KeyFilter) Release() { f.mu.RUnlock() }

// Add adds k, which the caller is about to write, and says whether it is certain that k was
// not in the database before: then the caller need not read it. Call it between Hold and
// Release.
func (f *KeyFilter) Add(k []byte) (unseen bool) {
	h := f.hash(k)
	if n := f.next.Load(); n != nil {
		n.add(h)
	} else if f.recording.Load() {
		f.record(h)
	}
	c := f.cur.Load()
	if c == nil {
		return false
	}
	return !c.add(h)
}

// record keeps h for the build counting its snapshot. Past keyFilterMaxPending it keeps
// none and the build's filter is not used: a count that slow means the build is starved.
func (f *KeyFilter) record(h uint64) {
	f.pmu.Lock()
	if f.recording.Load() {
		if f.pendingN++; f.pendingN <= keyFilterMaxPending {
			f.pending = append(f.pending, h)
		}
	}
	f.pmu.Unlock()
}

// keyFilterMaxPending bounds the keys recorded during a build's count (32 MiB): at 60k keys/s
// that is 9 minutes of count.
const keyFilterMaxPending = 1 << 22

// MayHold says whether k may be in the database: false only when it is certain that it is not
// (nobody added it, and the build found it absent), true until a build has ended.
func (f *KeyFilter) MayHold(k []byte) bool {
	c := f.cur.Load()
	return c == nil || c.has(f.hash(k))
}

// Ready says whether the filter answers and no build is under way (tests).
func (f *KeyFilter) Ready() bool { return f.cur.Load() != nil && !f.building.Load() }

// Words is the size of the filter that answers, in 64-bit words; 0 before the first build.
func (f *KeyFilter) Words() int {
	if c := f.cur.Load(); c != nil {
		return len(c.words)
	}
	return 0
}

// Close stops a build under way and waits for it; no build starts after it.
func (f *KeyFilter) Close() {
	f.mu.Lock()
	f.closed.Store(true)
	f.mu.Unlock()
	f.builds.Wait()
}

// keyFilterRefresh is how often a filter at its size cap that was built at least half full is
// built again (to forget keys that expired or were deleted meanwhile), once it is full.
const keyFilterRefresh = 24 * time.Hour

// Ensure starts the first build (once), and a new one once the current filter is full. The
// builds run in the background; the call that starts one waits only to take its snapshot
// (startBuild).
func (f *KeyFilter) Ensure(db *badger.DB) {
	f.start.Do(func() { _ = f.startBuild(db) })
	c := f.cur.Load()
	if c == nil {
		// A build that gave up may not have ended yet: the retry waits for the next call.
		if f.retry.CompareAndSwap(true, false) && !f.startBuild(db) {
			f.retry.Store(true)
		}
		return
	}
	if c.added.Load() <= c.limit {
		return
	}
	// A build sizes its filter for twice the keys it counted, so one is full again only after
	// that many more keys, unless the cap held it smaller: then a new one helps only if keys
	// went meanwhile, which a daily build finds out.
	if c.scanned <= c.limit/2 || time.Since(c.built) > keyFilterRefresh {
		_ = f.startBuild(db)
	}
}

// startBuild starts a build in a goroutine that ends with its scans; none starts while one
// runs, nor after Close. It takes the build's snapshot itself, in its caller: a caller uses
// the database, so it is open, whereas a goroutine that takes a Badger transaction once the
// database is closed waits forever (its read timestamp waits for commits nobody marks done).
// So it waits for the filter's writers under way and for Badger's earlier commits, once per
// build.
func (f *KeyFilter) startBuild(db *badger.DB) (started bool) {
	if !f.building.CompareAndSwap(false, true) {
		return false
	}
	f.mu.Lock()
	if f.closed.Load() || db.IsClosed() {
		f.mu.Unlock()
		f.building.Store(false)
		return false
	}
	// No writer is between an Add and its commit: what the snapshot lacks is added after it,
	// and recorded until the build has a filter to add it to.
	txn := db.NewTransaction(false)
	f.recording.Store(true)
	f.builds.Add(1)
	f.mu.Unlock()
	go f.build(db, txn) // ends when its scans do, or at Close
	return true
}

// testBuildStep, when set (tests), is called by a build at its steps: "start", "counted".
var testBuildStep func(step string)

// build counts the keys in txn's snapshot, sizes a filter for twice as many, and fills it from
// the same snapshot; the keys added since the snapshot (recorded during the count) go into it
// too. So the filter holds no key that expired or was deleted before the build, and its size
// follows the keys present rather than all the keys it was ever told of.
func (f *KeyFilter) build(db *badger.DB, txn *badger.Txn) {
	defer f.builds.Done()
	defer f.building.Store(false)
	defer f.stopRecording()
	// Badger panics with ErrDBClosed when its database is closed under a transaction. An owner
	// that closes the filter before its database stops the scan first; one that closes the
	// database first loses the build, nothing else. Deferred before Discard, which can panic
	// too (an iterator a panicking scan left open).
	defer func() { _ = recover() }()
	defer txn.Discard()
	if testBuildStep != nil {
		testBuildStep("start")
	}
	n, ok := f.scan(db, txn, nil)
	if !ok {
		return
	}
	if testBuildStep != nil {
		testBuildStep("counted")
	}
	b := f.newBloom(2 * n)
	f.mu.Lock()
	if f.closed.Load() {
		f.mu.Unlock()
		return
	}
	f.pmu.Lock()
	if f.pendingN > keyFilterMaxPending {
		f.pmu.Unlock()
		f.mu.Unlock()
		f.retry.Store(true)
		return
	}
	for _, h := range f.pending {
		b.add(h)
	}
	f.pending, f.pendingN = nil, 0
	f.recording.Store(false)
	f.pmu.Unlock()
	f.next.Store(b)
	f.mu.Unlock()
	defer f.next.CompareAndSwap(b, nil)
	if b.scanned, ok = f.scan(db, txn, b); ok {
		b.built = time.Now()
		f.cur.Store(b)
	}
}

// stopRecording drops the keys recorded for a build that ended without a filter.
func (f *KeyFilter) stopRecording() {
	f.pmu.Lock()
	f.recording.Store(false)
	f.pending, f.pendingN = nil, 0
	f.pmu.Unlock()
}

// scan counts every key under the prefixes in txn's snapshot, adding each to b unless b is
// nil, and says whether it saw them all (Close stops it).
func (f *KeyFilter) scan(db *badger.DB, txn *badger.Txn, b *bloom) (int64, bool) {
	var n int64
	for _, head := range f.prefixes {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = head
		it := txn.NewIterator(opts)
		for it.Seek(head); it.ValidForPrefix(head); it.Next() {
			if n++; n%4096 == 0 && (f.closed.Load() || db.IsClosed()) {
				it.Close()
				return n, false
			}
			if b != nil {
				b.add(f.hash(it.Item().Key()))
			}
		}
		it.Close()
	}
	for _, x := range f.expanded {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = x.prefix
		it := txn.NewIterator(opts)
		for it.Seek(x.prefix); it.ValidForPrefix(x.prefix); it.Next() {
			if f.closed.Load() || db.IsClosed() {
				it.Close()
				return n, false
			}
			_ = x.keys(it.Item(), func(k []byte) {
				n++
				if b != nil {
					b.add(f.hash(k))
				}
			})
		}
		it.Close()
	}
	return n, true
}
