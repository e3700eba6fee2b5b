package badgerdb

import (
	"path/filepath"
)

// LogPager takes the pages Badger writes to its logs out of the process's memory, one PageOut
// call at a time (pageout_linux.go says why and which). It remembers which value log each
// directory was writing at the last call; it is not for concurrent use.
type LogPager struct {
	prefixes [][]byte // each dir with a trailing separator
	newest   []uint64 // per dir: fid+1 of the value log being written at the last call; 0: none
}

// NewLogPager pages out the logs of the databases in dirs, which must be absolute and free of
// symbolic links, as the kernel names mapped files (LogDirs gives them).
func NewLogPager(dirs []string) *LogPager {
	p := &LogPager{prefixes: make([][]byte, len(dirs)), newest: make([]uint64, len(dirs))}
	for i, d := range dirs {
		p.prefixes[i] = []byte(filepath.Clean(d) + string(filepath.Separator))
	}
	return p
}
