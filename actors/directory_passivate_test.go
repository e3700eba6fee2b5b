package actors_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/actors/actortest"
)

// TestLocalPassivationDrainsFirst: the local directory starts an identity's next actor only
// after the passivated one has stopped (actortest.PassivationDrainsFirst).
func TestLocalPassivationDrainsFirst(t *testing.T) {
	actortest.PassivationDrainsFirst(t, func(t *testing.T, session actors.Producer) actortest.Counter {
		sys := actors.NewSystem(slog.New(slog.NewTextHandler(io.Discard, nil)))
		dir := actors.NewLocalDirectory(sys, map[actors.Kind]actors.Producer{actors.KindSession: session})
		t.Cleanup(func() {
			dir.StopAll(5 * time.Second)
			sys.Shutdown()
		})
		return dir
	})
}
