package metatest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svc-dev/svc/sinks"
)

// testDeadline checks the contract's ErrUnavailable where a suite can reach it without taking
// the server down: a call whose context's deadline has passed either succeeds (a backend that
// never waits) or fails with ErrUnavailable naming the metadata store, never with ErrNotFound
// or another answer a caller would act on. The outage tests of cmd/svc stop and freeze a real
// server for the rest.
func testDeadline(t *testing.T, s sinks.MetaStore) {
	u, tm := mustUser(t, s, at(0))
	a, k := mustApp(t, s, tm.ID, at(1))
	session := mustSession(t, s, u.ID, at(2), at(600))
	acc := as[sinks.AppAccess](t, s)
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	calls := map[string]error{}
	_, _, calls["AppByAPIKey"] = s.AppByAPIKey(ctx, k.Key)
	_, calls["App"] = s.App(ctx, a.ID)
	_, calls["Role"] = s.Role(ctx, tm.ID, tm.ID)
	_, _, calls["AppRole"] = acc.AppRole(ctx, a.ID, u.ID)
	_, calls["SessionAppRole"] = acc.SessionAppRole(ctx, session.ID, a.ID, u.ID)
	calls["Ping"] = s.Ping(ctx)
	for name, err := range calls {
		if name == "Role" && errors.Is(err, sinks.ErrNotFound) {
			continue // not a member: a backend that does not wait answers truly
		}
		if err == nil {
			continue
		}
		var ue *sinks.UnavailableError
		if !errors.Is(err, sinks.ErrUnavailable) || !errors.As(err, &ue) || ue.Store != sinks.StoreMeta {
			t.Errorf("%s with an expired deadline: %v, want nil or ErrUnavailable of the %s store", name, err, sinks.StoreMeta)
		}
		if errors.Is(err, sinks.ErrNotFound) {
			t.Errorf("%s with an expired deadline: %v is ErrNotFound", name, err)
		}
	}
	// The store still works afterwards.
	if _, _, err := s.AppByAPIKey(t.Context(), k.Key); err != nil {
		t.Errorf("AppByAPIKey after expired calls: %v", err)
	}
}
