//go:build !linux

package localblob

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/svc-dev/svc/sinks"
)

// syncBlobs makes blobs durable where there is no syncfs(2): each file, then each directory
// renamed into, once.
func (s *Store) syncBlobs(blobs []sinks.Blob) error {
	dirs := map[string]bool{}
	for i := range blobs {
		p := s.path(blobs[i].Key)
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("sync %q: %w", blobs[i].Key, err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("sync %q: %w", blobs[i].Key, err)
		}
		dirs[filepath.Dir(p)] = true
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}
