package clickhouse_test

import (
	"testing"

	"github.com/svc-dev/svc/sinks/eventstest"
)

func TestSessions(t *testing.T) {
	t.Run("clickhouse", func(t *testing.T) {
		eventstest.RunSessions(t, func(t *testing.T) eventstest.SessionStore {
			s, _ := openFresh(t)
			return s
		})
	})
}
