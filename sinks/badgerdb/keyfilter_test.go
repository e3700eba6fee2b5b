package badgerdb

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Of many adders of one hash exactly one is told it is new, and a filter at its design load
// calls few new hashes seen.
func TestBloomAdd(t *testing.T) {
	b := NewKeyFilter(1, KeyFilterMinWords).newBloom(100_000)
	hashes := make([]uint64, 100_000)
	for i := range hashes {
		hashes[i] = rand.Uint64()
	}
	var unseen [8]int
	var wg sync.WaitGroup
	for w := range unseen {
		wg.Go(func() {
			for _, i := range rand.Perm(len(hashes)) {
				if !b.add(hashes[i]) {
					unseen[w]++
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for _, n := range unseen {
		total += n
	}
	if total > len(hashes) {
		t.Fatalf("%d adds were told their hash is new, of %d hashes: one was told twice", total, len(hashes))
	}
	if fp := len(hashes) - total; fp > len(hashes)/50 {
		t.Errorf("%d of %d new hashes were called seen (over 2 %%)", fp, len(hashes))
	}
	if b.added.Load() != int64(total) {
		t.Errorf("added = %d, want %d", b.added.Load(), total)
	}
}

// keyFilterReady waits until f answers (its build has scanned the database).
func keyFilterReady(t *testing.T, f *KeyFilter) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !f.Ready(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the key filter was not built within 10 s")
		}
	}
}

// MayHold answers true for every key present under the filtered prefixes when the build ran
// and for every key added since, and false for nearly every other key; until a build has ended
// it answers true for every key. A key that expired before a build is forgotten by it.
func TestKeyFilterMayHold(t *testing.T) {
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(prefix string, i int) []byte { return fmt.Appendf(nil, "%s%08d", prefix, i) }
	const n = 5000
	err = db.Update(func(txn *badger.Txn) error {
		for i := range n {
			if err := txn.Set(key("t/", i), nil); err != nil {
				return err
			}
			if err := txn.Set(key("o/", i), nil); err != nil {
				return err
			}
		}
		return txn.SetEntry(badger.NewEntry(key("t/", -1), nil).WithTTL(time.Second))
	})
	if err != nil {
		t.Fatal(err)
	}
	f := NewKeyFilter(2, KeyFilterMinWords, []byte("t/"))
	defer f.Close()
	if !f.MayHold(key("t/", n+1)) || !f.MayHold(key("o/", 0)) {
		t.Fatal("MayHold answered false before any build")
	}
	time.Sleep(1100 * time.Millisecond) // the TTL key expires
	f.Ensure(db)
	keyFilterReady(t, f)
	for i := range n {
		if !f.MayHold(key("t/", i)) {
			t.Fatalf("key %d, present before the build, is said to be absent", i)
		}
	}
	// Keys added (and written) after the build are held too.
	for i := n; i < n+100; i++ {
		f.Hold()
		if !f.Add(key("t/", i)) {
			t.Errorf("new key %d was said to be seen", i)
		}
		f.Release()
		if !f.MayHold(key("t/", i)) {
			t.Fatalf("key %d, added, is said to be absent", i)
		}
	}
	var maybe int
	for i := n + 100; i < 3*n; i++ {
		if f.MayHold(key("t/", i)) {
			maybe++
		}
	}
	if maybe > n/25 {
		t.Errorf("%d of %d keys never written may be held (over 2 %%)", maybe, 2*n-100)
	}
	maybe = 0
	for i := range n {
		if f.MayHold(key("o/", i)) {
			maybe++
		}
	}
	if maybe > n/50 {
		t.Errorf("%d of %d keys under another prefix may be held (over 2 %%)", maybe, n)
	}
	// 5,000 keys in 8,192 words: a false positive is about one in 10⁷.
	if f.MayHold(key("t/", -1)) {
		t.Error("a key that expired before the build may be held")
	}
}
