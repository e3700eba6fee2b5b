package badgerdb

import (
	"bytes"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestLargeValues: rows of real events are often over 1 KB; both modes must take them.
func TestLargeValues(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		db, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		val := bytes.Repeat([]byte("v"), 100<<10)
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("k"), val) }); err != nil {
			t.Fatalf("dir %q: %v", dir, err)
		}
		err = db.View(func(txn *badger.Txn) error {
			it, err := txn.Get([]byte("k"))
			if err != nil {
				return err
			}
			got, err := it.ValueCopy(nil)
			if !bytes.Equal(got, val) {
				t.Errorf("dir %q: value changed", dir)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
}
