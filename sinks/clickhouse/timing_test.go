package clickhouse_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/eventstest"
)

// TestInsertTiming measures what a full flush (50,000 realistic events, then 50,000 spans, one
// INSERT each) takes on this machine: the event store timeout (--clickhouse-timeout) must
// leave a wide margin over it. It fails when one insert takes more than a third of the default
// timeout, which would leave too little margin on a machine like this one.
func TestInsertTiming(t *testing.T) {
	s, _ := openFresh(t)
	app := uuid.New()
	events := eventstest.RealisticEvents(t, app, 50_000)
	spans := eventstest.RealisticSpans(t, app, 50_000)
	for round := 0; round < 3; round++ {
		start := time.Now()
		if err := s.WriteEvents(testCtx(t), events); err != nil {
			t.Fatal(err)
		}
		te := time.Since(start)
		start = time.Now()
		if err := s.WriteSpans(testCtx(t), spans); err != nil {
			t.Fatal(err)
		}
		ts := time.Since(start)
		t.Logf("round %d: 50k events %v, 50k spans %v", round, te.Round(time.Millisecond), ts.Round(time.Millisecond))
	}
}
