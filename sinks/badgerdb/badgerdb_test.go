package badgerdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// vlogBytes is the size of dir's value log files.
func vlogBytes(t *testing.T, dir string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// TestCollectGarbage: the values of deleted rows leave the value log once compactions have seen
// them dropped, and the values still live read back the same. Without CollectGarbage the files
// of the deleted values stay on disk for good (retention would free nothing).
func TestCollectGarbage(t *testing.T) {
	defer func(n int64) { valueLogFileSize = n }(valueLogFileSize)
	valueLogFileSize = 1 << 20
	dir := t.TempDir()
	db, err := OpenEvents(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "ev/%06d", i) }
	val := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 4<<10) }
	// Compactions record what they drop. Each round ends by reopening the database, which
	// flushes its memtable to a level 0 table: more of them than Badger keeps at level 0 start
	// compactions, and Flatten then compacts every level into one.
	reopen := func() {
		t.Helper()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if db, err = OpenEvents(dir, nil); err != nil {
			t.Fatal(err)
		}
	}
	const rows, kept = 2000, 100 // 8 MiB of values in 1 MiB files; the last 100 rows stay
	for i := 0; i < rows; i += 200 {
		err := db.Update(func(txn *badger.Txn) error {
			for j := i; j < i+200; j++ {
				if err := txn.Set(key(j), val(j)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		reopen()
	}
	err = db.Update(func(txn *badger.Txn) error {
		for i := range rows - kept {
			if err := txn.Delete(key(i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reopen()
	defer func() { _ = db.Close() }()
	if err := db.Flatten(1); err != nil {
		t.Fatal(err)
	}
	before := vlogBytes(t, dir)
	files, err := CollectGarbage(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	after := vlogBytes(t, dir)
	t.Logf("value log %d → %d bytes, %d files rewritten", before, after, files)
	if files == 0 || after > before/2 {
		t.Fatalf("value log %d → %d bytes (%d files rewritten), want at most half left", before, after, files)
	}
	err = db.View(func(txn *badger.Txn) error {
		for i := range rows {
			it, err := txn.Get(key(i))
			if i < rows-kept {
				if !errors.Is(err, badger.ErrKeyNotFound) {
					return fmt.Errorf("deleted row %d: %v", i, err)
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("row %d: %w", i, err)
			}
			if got, err := it.ValueCopy(nil); err != nil || !bytes.Equal(got, val(i)) {
				return fmt.Errorf("row %d changed (%v)", i, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := CollectGarbage(context.Background(), db); err != nil || n != 0 {
		t.Fatalf("second collection: %d files, %v; want nothing left to do", n, err)
	}
}
