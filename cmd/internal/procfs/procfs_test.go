package procfs

import (
	"os"
	"testing"
)

func TestRSS(t *testing.T) {
	n, err := RSS(os.Getpid())
	if err != nil || n < 1<<20 || n > 64<<30 {
		t.Fatalf("RSS of this test: %d, %v", n, err)
	}
	if _, err := RSS(-1); err == nil {
		t.Fatal("no error for a process that cannot exist")
	}
}
