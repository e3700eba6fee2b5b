//go:build !linux

package badgerdb

import "errors"

// PageOutLogs is Linux only (MADV_PAGEOUT); elsewhere it answers ErrPageOutUnsupported.
func PageOutLogs(dirs []string) (int64, error) { return 0, ErrPageOutUnsupported }

// ErrPageOutUnsupported is PageOutLogs on a system without MADV_PAGEOUT.
var ErrPageOutUnsupported = errors.New("page out logs: supported on Linux only")
