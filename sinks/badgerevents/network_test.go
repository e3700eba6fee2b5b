package badgerevents_test

import (
	"testing"

	"github.com/svc-dev/svc/sinks/badgerevents"
	"github.com/svc-dev/svc/sinks/eventstest"
)

func TestNetwork(t *testing.T) {
	t.Run("badger", func(t *testing.T) {
		eventstest.RunNetwork(t, func(t *testing.T) eventstest.NetworkStore { return badgerevents.New(openDB(t, t.TempDir())) })
	})
	t.Run("badger-blocks", func(t *testing.T) {
		eventstest.RunNetwork(t, func(t *testing.T) eventstest.NetworkStore { return blocksStore(t, t.TempDir()) })
	})
}
