package badgerdb

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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
			mapped, err := NewLogPager(dirs).PageOut()
			if err != nil {
				t.Fatal(err)
			}
			after := residentKB(t, real, ".vlog")
			t.Logf("value log resident %d KiB → %d KiB (%d MiB of mappings)", before, after, mapped>>20)
			if mapped == 0 || after > before/8 {
				t.Fatalf("after PageOut of %q: %d bytes of mappings asked about, %d KiB of the value log still resident (was %d)", dirs, mapped, after, before)
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
func checkValues(t testing.TB, db *badger.DB, n int, val func(i int) []byte) {
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
	prefix := filepath.Clean(dir) + "/"
	return residentKBOf(t, func(p string) bool { return strings.HasPrefix(p, prefix) && strings.HasSuffix(p, suffix) })
}

// residentKBOf sums the Rss of this process's mappings of the files match says yes to.
func residentKBOf(t *testing.T, match func(path string) bool) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kb, err := smapsResidentKB(f, match)
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// smapsResidentKB sums the Rss fields of the mappings in r (the text of /proc/<pid>/smaps)
// whose file match says yes to. Each mapping is a maps line, then its fields ("Name: value");
// an anonymous mapping's line has no path, and its fields are nobody's.
func smapsResidentKB(r io.Reader, match func(path string) bool) (int, error) {
	var ours bool
	kb := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		name, rest, _ := strings.Cut(line, " ")
		if !strings.HasSuffix(name, ":") { // a mapping's line
			_, _, path, ok := parseMapsLine([]byte(line))
			ours = ok && match(string(path))
			continue
		}
		if name == "Rss:" && ours {
			v, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				return 0, fmt.Errorf("smaps line %q: %w", line, err)
			}
			kb += v
		}
	}
	return kb, sc.Err()
}

func TestSmapsResidentKB(t *testing.T) {
	const smaps = `7f6ed4600000-7f6ed6600000 rw-s 00000000 fe:00 10837923                   /d/00001.mem
Size:              32768 kB
Rss:                  12 kB
VmFlags: rd wr sh mr mw me ms
7f6ed660c000-7f6ed67fc000 rw-p 00000000 00:00 0 
Size:               1984 kB
Rss:                 496 kB
VmFlags: rd wr mr mw me ac
7f6ed67fd000-7f6ed6ffd000 rw-s 00000000 fe:00 10837924                   /d/000001.vlog
Rss:                 100 kB
7f6ed6ffd000-7f6ed77fe000 rw-p 00000000 00:00 0                          [heap]
Rss:                   8 kB
7f6ed77fe000-7f6ed79fe000 rw-s 00000000 fe:00 10837925                   /d d/00002.mem
Rss:                  20 kB
7f6ed79fe000-7f6ed7bfe000 rw-s 00000000 fe:00 10837926                   /d/00003.mem (deleted)
Rss:                  40 kB
`
	for _, c := range []struct {
		suffix string
		want   int
	}{
		{"/d/00001.mem", 12}, // not the 496 of the anonymous mapping after it
		{".mem", 32},         // a path with a space; not the deleted file's
		{"(deleted)", 40},
		{".vlog", 100},
		{"[heap]", 8},
		{".sst", 0},
	} {
		got, err := smapsResidentKB(strings.NewReader(smaps), func(p string) bool { return strings.HasSuffix(p, c.suffix) })
		if err != nil || got != c.want {
			t.Errorf("%s: %d KiB, %v; want %d", c.suffix, got, err, c.want)
		}
	}
}

// TestLogPagerLeavesReadLogs: a pass pages out the value log being written and the memtable
// logs; value logs written before keep their resident pages (a query's reads of older rows stay
// in memory), except that a value log rotated out since the last pass is paged out once more.
func TestLogPagerLeavesReadLogs(t *testing.T) {
	if !pageOutSupported() {
		t.Skip(ErrPageOutUnsupported)
	}
	defer func(n int64) { valueLogFileSize = n }(valueLogFileSize)
	valueLogFileSize = 4 << 20
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	db, err := OpenEvents(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	val := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 64<<10) }
	setValues(t, db, 256, val) // 16 MiB: four or five value logs
	vlogs := func() []string {
		names, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
		slices.Sort(names)
		return names
	}
	resident := func(path string) int { return residentKBOf(t, func(p string) bool { return p == path }) }
	first := vlogs()
	if len(first) < 3 {
		t.Fatalf("%d value logs after 16 MiB of 4 MiB files", len(first))
	}
	pager := NewLogPager([]string{dir})
	if _, err := pager.PageOut(); err != nil {
		t.Fatal(err)
	}
	written := first[len(first)-1]
	if kb := resident(written); kb > 256 {
		t.Errorf("the value log being written, %s, keeps %d KiB resident after a pass", filepath.Base(written), kb)
	}
	if kb := residentKB(t, dir, ".mem"); kb > 256 {
		t.Errorf("the memtable logs keep %d KiB resident after a pass", kb)
	}
	older := first[0]
	if kb := resident(older); kb < 2<<10 {
		t.Errorf("a value log written before the pass keeps %d KiB resident; it should keep its pages", kb)
	}
	checkValues(t, db, 256, val) // reads every file, the one being written too
	if _, err := pager.PageOut(); err != nil {
		t.Fatal(err)
	}
	if kb := resident(older); kb < 2<<10 {
		t.Errorf("a value log read since the last pass keeps %d KiB resident after the next; it should keep its pages", kb)
	}
	setValues(t, db, 128, val) // 8 MiB more: the value log written at the last pass rotates out
	if vlogs()[len(vlogs())-1] == written {
		t.Fatal("no value log rotated out")
	}
	if kb := resident(written); kb < 1<<10 {
		t.Fatalf("%s holds %d KiB resident after it was read and written; the test expects more", filepath.Base(written), kb)
	}
	if _, err := pager.PageOut(); err != nil {
		t.Fatal(err)
	}
	if kb := resident(written); kb > 256 {
		t.Errorf("%s, rotated out since the last pass, keeps %d KiB resident; it should be paged out once more", filepath.Base(written), kb)
	}
	checkValues(t, db, 256, val)
}

func TestLogOf(t *testing.T) {
	p := NewLogPager([]string{"/data/badger-events", "/data/badger/"})
	for _, c := range []struct {
		path string
		want mappedLog
		ok   bool
	}{
		{"/data/badger-events/000001.vlog", mappedLog{dir: 0, fid: 1, vlog: true}, true},
		{"/data/badger-events/00004.mem", mappedLog{dir: 0, fid: 4}, true},
		{"/data/badger/1000012.vlog", mappedLog{dir: 1, fid: 1000012, vlog: true}, true},
		{"/data/badger-events/000007.sst", mappedLog{}, false}, // tables stay: reads of the LSM tree use them
		{"/data/badger-local/000001.vlog", mappedLog{}, false}, // not one of the dirs
		{"/data/badger-events/sub/000001.vlog", mappedLog{}, false},
		{"/data/badger-events/000001.vlog (deleted)", mappedLog{}, false},
		{"/data/badger-events/DISCARD", mappedLog{}, false},
		{"[heap]", mappedLog{}, false},
	} {
		if got, ok := p.logOf([]byte(c.path)); ok != c.ok || got != c.want {
			t.Errorf("logOf(%q) = %+v, %v; want %+v, %v", c.path, got, ok, c.want, c.ok)
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
	v := bytes.Repeat([]byte("v"), 64<<10)
	val := func(int) []byte { return v }
	setValues(b, db, 512, val)
	dirs, err := LogDirs(db)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("resident", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			checkValues(b, db, 512, val) // the pages back in memory
			b.StartTimer()
			if _, err := NewLogPager(dirs).PageOut(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("idle", func(b *testing.B) {
		for b.Loop() {
			if _, err := NewLogPager(dirs).PageOut(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
