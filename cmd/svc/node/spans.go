package node

import "github.com/svc-dev/svc/sinks"

// spansOf returns the event store's span and trace queries (issue #13), nil when it has none
// (the dashboard then answers 500 on the span routes).
func spansOf(events sinks.EventStore) sinks.Spans {
	s, _ := events.(sinks.Spans)
	return s
}
