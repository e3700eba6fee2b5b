package badgerevents_test

import (
	"testing"

	"github.com/svc-dev/svc/sinks/badgerevents"
	"github.com/svc-dev/svc/sinks/eventstest"
)

func TestSessions(t *testing.T) {
	t.Run("badger", func(t *testing.T) {
		eventstest.RunSessions(t, func(t *testing.T) eventstest.SessionStore { return badgerevents.New(openDB(t, t.TempDir())) })
	})
	t.Run("badger-blocks", func(t *testing.T) {
		eventstest.RunSessions(t, func(t *testing.T) eventstest.SessionStore { return blocksStore(t, t.TempDir()) })
	})
}
