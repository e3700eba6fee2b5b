//go:build !linux

package spool

import "os"

// datasync makes f's written bytes durable. Outside Linux there is no fdatasync everywhere;
// Go's File.Sync is fsync, and on macOS F_FULLFSYNC, which also empties the drive's cache as
// Linux's fdatasync does.
func datasync(f *os.File) error { return f.Sync() }
