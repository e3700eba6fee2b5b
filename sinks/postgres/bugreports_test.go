package postgres

import (
	"testing"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/metatest"
)

func TestBugReportStatuses(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		metatest.RunBugReportStatuses(t, func(t *testing.T) sinks.MetaStore { return openStore(t, migrated(t)) })
	})
}
