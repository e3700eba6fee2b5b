package badgermeta_test

import (
	"testing"

	"github.com/svc-dev/svc/sinks/metatest"
)

func TestBugReportStatuses(t *testing.T) {
	t.Run("badger-memory", func(t *testing.T) {
		metatest.RunBugReportStatuses(t, open(func(*testing.T) string { return "" }))
	})
	t.Run("badger-disk", func(t *testing.T) {
		metatest.RunBugReportStatuses(t, open(func(t *testing.T) string { return t.TempDir() }))
	})
}
