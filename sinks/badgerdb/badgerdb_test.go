package badgerdb

import (
	"bytes"
	"os"
	"path/filepath"
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

// TestOpenAfterKillBetweenMemtableCreateAndSize: a process killed right after creating a
// memtable's log file leaves it empty; Badger alone then refuses to open the directory (seen
// in the SIGKILL test), Open removes the empty log and opens it with every committed key.
func TestOpenAfterKillBetweenMemtableCreateAndSize(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The log of the memtable a killed process was about to start.
	if err := os.WriteFile(filepath.Join(dir, "00099.mem"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil)); err == nil {
		t.Fatal("Badger opened a directory with an empty memtable log: the workaround may go")
	}
	db, err = Open(dir, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	err = db.View(func(txn *badger.Txn) error {
		it, err := txn.Get([]byte("k"))
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) error {
			if string(v) != "v" {
				t.Errorf("k = %q, want v", v)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
