package spool

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync makes f's written bytes durable. fdatasync skips the metadata a record append does
// not need (times), which fsync would also write.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
