package badgerdb

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestPageOutLogs: the value log pages a write left resident leave the process's memory, and
// every value reads back the same afterwards, also once the database is closed and opened
// again: for the synced events database and the unsynced local one (whose pages are dirty when
// paged out), opened by an absolute path, a relative one (the node's default data directory is
// ./data) and one through a symbolic link (the kernel names mapped files by neither).
func TestPageOutLogs(t *testing.T) {
	if !pageOutSupported() {
		t.Skip(ErrPageOutUnsupported)
	}
	for _, c := range []struct {
		name string
		open func(string, *slog.Logger) (*badger.DB, error)
		dir  func(t *testing.T, base string) string
	}{
		{"events, absolute", OpenEvents, func(t *testing.T, base string) string { return base }},
		{"local, absolute", OpenLocal, func(t *testing.T, base string) string { return base }},
		{"events, relative", OpenEvents, func(t *testing.T, base string) string {
			t.Chdir(filepath.Dir(base))
			return filepath.Join(".", filepath.Base(base))
		}},
		{"events, through a link", OpenEvents, func(t *testing.T, base string) string {
			link := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(base, link); err != nil {
				t.Fatal(err)
			}
			return link
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			dir := c.dir(t, base)
			real, err := filepath.EvalSymlinks(base)
			if err != nil {
				t.Fatal(err)
			}
			db, err := c.open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { db.Close() }()
			const n, size = 512, 64 << 10 // 32 MiB of values, all in the value log
			val := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, size) }
			setValues(t, db, n, val)
			before := residentKB(t, real, ".vlog")
			if before < 16<<10 {
				t.Fatalf("the value log holds %d KiB resident after 32 MiB written; the test expects Badger to write it through a mapping", before)
			}
			dirs, err := LogDirs(db)
			if err != nil {
				t.Fatal(err)
			}
			mapped, err := PageOutLogs(dirs)
			if err != nil {
				t.Fatal(err)
			}
			after := residentKB(t, real, ".vlog")
			t.Logf("value log resident %d KiB → %d KiB (%d MiB of mappings)", before, after, mapped>>20)
			if mapped == 0 || after > before/8 {
				t.Fatalf("after PageOutLogs(%q): %d bytes of mappings asked about, %d KiB of the value log still resident (was %d)", dirs, mapped, after, before)
			}
			checkValues(t, db, n, val)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if db, err = c.open(dir, nil); err != nil {
				t.Fatal(err)
			}
			checkValues(t, db, n, val)
		})
	}
}

// checkValues reads keys k0000… back and compares each with val(i).
func checkValues(t *testing.T, db *badger.DB, n int, val func(i int) []byte) {
	t.Helper()
	if err := db.View(func(txn *badger.Txn) error {
		for i := range n {
			it, err := txn.Get(fmt.Appendf(nil, "k%04d", i))
			if err != nil {
				return err
			}
			if err := it.Value(func(v []byte) error {
				if !bytes.Equal(v, val(i)) {
					return fmt.Errorf("value %d changed", i)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// setValues sets keys k0000… to val(i), n of them, 16 per transaction.
func setValues(tb testing.TB, db *badger.DB, n int, val func(i int) []byte) {
	tb.Helper()
	for i := 0; i < n; i += 16 {
		if err := db.Update(func(txn *badger.Txn) error {
			for j := i; j < min(i+16, n); j++ {
				if err := txn.Set(fmt.Appendf(nil, "k%04d", j), val(j)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			tb.Fatal(err)
		}
	}
}

// residentKB sums the Rss of this process's mappings of files in dir ending in suffix.
func residentKB(t *testing.T, dir, suffix string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prefix := filepath.Clean(dir) + "/"
	var ours bool
	kb := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if _, _, path, ok := parseMapsLine([]byte(line)); ok {
			p := string(path)
			ours = strings.HasPrefix(p, prefix) && strings.HasSuffix(p, suffix)
			continue
		}
		if rest, found := strings.CutPrefix(line, "Rss:"); found && ours {
			v, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatalf("smaps line %q: %v", line, err)
			}
			kb += v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return kb
}

func TestIsLogPath(t *testing.T) {
	prefixes := [][]byte{[]byte("/data/badger-events/"), []byte("/data/badger/")}
	for _, c := range []struct {
		path string
		want bool
	}{
		{"/data/badger-events/000001.vlog", true},
		{"/data/badger-events/00004.mem", true},
		{"/data/badger/000012.vlog", true},
		{"/data/badger-events/000007.sst", false}, // tables stay: reads of the LSM tree use them
		{"/data/badger-local/000001.vlog", false}, // not one of the dirs
		{"/data/badger-events/sub/000001.vlog", false},
		{"/data/badger-events/000001.vlog (deleted)", false},
		{"[heap]", false},
	} {
		if got := isLogPath([]byte(c.path), prefixes); got != c.want {
			t.Errorf("isLogPath(%q) = %v, want %v", c.path, got, c.want)
		}
	}
}

func TestParseMapsLine(t *testing.T) {
	for _, c := range []struct {
		line       string
		start, end uintptr
		path       string
		ok         bool
	}{
		{"7f2c4a000000-7f2c6a000000 rw-s 00000000 fe:01 1234 /data/badger events/000001.vlog", 0x7f2c4a000000, 0x7f2c6a000000, "/data/badger events/000001.vlog", true},
		{"c000000000-c004000000 rw-p 00000000 00:00 0 ", 0, 0, "", false}, // anonymous: no path
		{"55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0 [heap]", 0x55d0c0a00000, 0x55d0c0a21000, "[heap]", true},
		{"garbage", 0, 0, "", false},
		{"20-10 rw-p 0 00:00 0 /x", 0, 0, "", false},
	} {
		start, end, path, ok := parseMapsLine([]byte(c.line))
		if ok != c.ok || (ok && (start != c.start || end != c.end || string(path) != c.path)) {
			t.Errorf("parseMapsLine(%q) = %x, %x, %q, %v; want %x, %x, %q, %v", c.line, start, end, path, ok, c.start, c.end, c.path, c.ok)
		}
	}
}

// BenchmarkPageOutLogs: one call over a database whose 32 MiB of value log pages are resident
// (resident), and over the same once paged out (idle: what every period costs a node whose
// value logs nobody wrote or read since).
func BenchmarkPageOutLogs(b *testing.B) {
	if !pageOutSupported() {
		b.Skip(ErrPageOutUnsupported)
	}
	dir := b.TempDir()
	db, err := OpenEvents(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	val := bytes.Repeat([]byte("v"), 64<<10)
	setValues(b, db, 512, func(int) []byte { return val })
	readAll := func() {
		if err := db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.DefaultIteratorOptions)
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				if err := it.Item().Value(func([]byte) error { return nil }); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("resident", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			readAll()
			b.StartTimer()
			if _, err := PageOutLogs([]string{dir}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("idle", func(b *testing.B) {
		for b.Loop() {
			if _, err := PageOutLogs([]string{dir}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
