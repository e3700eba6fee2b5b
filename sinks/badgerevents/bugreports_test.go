package badgerevents_test

import (
	"testing"

	"github.com/svc-dev/svc/sinks/badgerevents"
	"github.com/svc-dev/svc/sinks/eventstest"
)

func TestBugReports(t *testing.T) {
	t.Run("badger-memory", func(t *testing.T) {
		eventstest.RunBugReports(t, func(t *testing.T) eventstest.BugReportStore { return badgerevents.New(openDB(t, "")) })
	})
	t.Run("badger-disk", func(t *testing.T) {
		eventstest.RunBugReports(t, func(t *testing.T) eventstest.BugReportStore { return badgerevents.New(openDB(t, t.TempDir())) })
	})
	t.Run("badger-blocks", func(t *testing.T) {
		eventstest.RunBugReports(t, func(t *testing.T) eventstest.BugReportStore { return blocksStore(t, t.TempDir()) })
	})
}
