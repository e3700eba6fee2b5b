package badgerdb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// PageOutLogs asks the kernel to take the pages of the value logs (*.vlog) and memtable logs
// (*.mem) of the databases in dirs out of this process's memory, and says how many bytes of
// mappings it asked about. dirs must be absolute and free of symbolic links, as the kernel
// names mapped files (LogDirs gives them).
//
// Badger writes both kinds of log through a shared memory mapping, so every page it writes
// stays resident in the process, and counted in its RSS, until the kernel runs short of memory:
// a node writing flat out held 0.77 GB of value log pages after 30 s, nearly all of its
// file-backed RSS, though nothing reads them (values are read back by queries, rarely and long
// after; a memtable log only when a database opens). MADV_PAGEOUT (Linux 5.4) unmaps a range's
// pages from the process and reclaims them: a clean page leaves the page cache too (a later
// read of it reads the file), a dirty one stays in the page cache until it is written back.
// It never discards data, which also makes it safe if Badger unmaps or remaps a file
// concurrently (value log rotation, garbage collection): advice about an address that now holds
// anonymous memory (the Go heap) would at most swap it out, never zero it. MADV_DONTNEED would.
//
// A kernel without MADV_PAGEOUT answers ErrPageOutUnsupported. A range the kernel refuses
// (locked or special memory: EINVAL) is skipped.
func PageOutLogs(dirs []string) (int64, error) {
	if !pageOutSupported() {
		return 0, ErrPageOutUnsupported
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("page out logs: %w", err)
	}
	defer f.Close()
	prefixes := make([][]byte, len(dirs))
	for i, d := range dirs {
		prefixes[i] = []byte(filepath.Clean(d) + string(filepath.Separator))
	}
	var total int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		start, end, path, ok := parseMapsLine(sc.Bytes())
		if !ok || !isLogPath(path, prefixes) {
			continue
		}
		switch _, _, errno := unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_PAGEOUT); errno {
		case 0:
			total += int64(end - start)
		case unix.ENOMEM, unix.EINVAL:
			// ENOMEM: part of the range was unmapped since maps was read (the rest was advised).
			// EINVAL: the kernel does not page out this kind of mapping.
		default:
			return total, fmt.Errorf("page out %s: %w", path, errno)
		}
	}
	if err := sc.Err(); err != nil {
		return total, fmt.Errorf("page out logs: read maps: %w", err)
	}
	return total, nil
}

// pageOutSupported says, once, whether the kernel knows MADV_PAGEOUT: advice on one anonymous
// page of its own, which an older kernel refuses with EINVAL.
var pageOutSupported = sync.OnceValue(func() bool {
	page, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return false
	}
	defer unix.Munmap(page)
	return unix.Madvise(page, unix.MADV_PAGEOUT) == nil
})

// ErrPageOutUnsupported is PageOutLogs on a system without MADV_PAGEOUT.
var ErrPageOutUnsupported = errors.New("page out logs: the kernel has no MADV_PAGEOUT (Linux 5.4 or later)")

// parseMapsLine reads "start-end perms offset dev inode path" of /proc/<pid>/maps.
func parseMapsLine(line []byte) (start, end uintptr, path []byte, ok bool) {
	fields := bytes.Fields(line)
	if len(fields) < 6 {
		return 0, 0, nil, false
	}
	lo, hi, found := bytes.Cut(fields[0], []byte{'-'})
	if !found {
		return 0, 0, nil, false
	}
	s, err1 := strconv.ParseUint(string(lo), 16, 64)
	e, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, nil, false
	}
	// The path is the rest of the line after the inode; it may hold spaces.
	i := bytes.Index(line, fields[5])
	return uintptr(s), uintptr(e), line[i:], true
}

// isLogPath says whether path is a value log or memtable log directly in one of the dirs.
func isLogPath(path []byte, prefixes [][]byte) bool {
	if !bytes.HasSuffix(path, []byte(".vlog")) && !bytes.HasSuffix(path, []byte(".mem")) {
		return false
	}
	for _, p := range prefixes {
		if bytes.HasPrefix(path, p) && bytes.IndexByte(path[len(p):], filepath.Separator) < 0 {
			return true
		}
	}
	return false
}
