package cluster

import (
	"testing"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/actors/actortest"
)

// TestPassivationDrainsFirst: the cluster's router starts an identity's next actor only after
// the passivated one has stopped (actortest.PassivationDrainsFirst). It once spawned the next
// one at once, beside the stopping one: "no tell lost across passivations" then saw tells out
// of order, rarely.
func TestPassivationDrainsFirst(t *testing.T) {
	actortest.PassivationDrainsFirst(t, func(t *testing.T, session actors.Producer) actortest.Counter {
		cfg := staticConfigs(t, 1)[0]
		cfg.Log = testLog("SVC_TEST_CLUSTER_LOG", 0, true)
		sys := actors.NewSystem(testLog("SVC_TEST_PROTOACTOR_LOG", 0, true))
		c, err := Start(sys, cfg, map[actors.Kind]actors.Producer{actors.KindSession: session})
		if err != nil {
			sys.Shutdown()
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c.Shutdown(false)
			sys.Shutdown()
		})
		return c
	})
}
