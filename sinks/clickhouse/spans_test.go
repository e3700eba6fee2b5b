package clickhouse_test

import (
	"testing"

	"github.com/svc-dev/svc/sinks/eventstest"
)

func TestSpans(t *testing.T) {
	t.Run("clickhouse", func(t *testing.T) {
		eventstest.RunSpans(t, func(t *testing.T) eventstest.SpanStore {
			s, _ := openFresh(t)
			return s
		})
	})
}
