//go:build !linux

package badgerdb

import "errors"

// PageOut is Linux only (MADV_PAGEOUT); elsewhere it answers ErrPageOutUnsupported.
func (p *LogPager) PageOut() (int64, error) { return 0, ErrPageOutUnsupported }

// ErrPageOutUnsupported is LogPager.PageOut on a system without MADV_PAGEOUT.
var ErrPageOutUnsupported = errors.New("page out logs: supported on Linux only")
