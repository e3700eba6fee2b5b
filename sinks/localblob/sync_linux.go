package localblob

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/svc-dev/svc/sinks"
)

// syncBlobs makes the files and renames of blobs durable with one syncfs(2) of the store's file
// system: one journal commit for the batch where per-file fsyncs cost two each. It also writes
// back whatever else is dirty on that file system, which a busy disk makes slower but never
// wrong. Linux reports writeback errors through syncfs since 5.8.
func (s *Store) syncBlobs([]sinks.Blob) error {
	d, err := os.Open(s.root)
	if err != nil {
		return fmt.Errorf("syncfs: %w", err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", s.root, err)
	}
	return nil
}
