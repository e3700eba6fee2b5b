package clickhouse_test

import (
	"testing"

	"github.com/svc-dev/svc/sinks/eventstest"
)

func TestBugReports(t *testing.T) {
	t.Run("clickhouse", func(t *testing.T) {
		eventstest.RunBugReports(t, func(t *testing.T) eventstest.BugReportStore {
			s, _ := openFresh(t)
			return s
		})
	})
}
