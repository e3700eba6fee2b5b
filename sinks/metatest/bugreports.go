package metatest

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// RunBugReportStatuses checks the sinks.BugReportStatuses contract on stores made by open,
// which must also implement it (both metadata stores do). Beyond the doc comments it pins down:
// UpdatedAt comes back in UTC to the microsecond as set; reading no ids gives an empty map;
// ClosedBugReports of an app without closed reports is an empty (not nil) list; statuses are
// per app (the same report id in two apps is two reports).
func RunBugReportStatuses(t *testing.T, open func(t *testing.T) sinks.MetaStore) {
	store := func(t *testing.T) (sinks.MetaStore, sinks.BugReportStatuses) {
		s := open(t)
		bs, ok := s.(sinks.BugReportStatuses)
		if !ok {
			t.Fatalf("%T does not implement sinks.BugReportStatuses", s)
		}
		return s, bs
	}
	// ids returns n report ids in byte order, with the high bit set in some so that a signed
	// comparison would order them differently.
	ids := func(n int) []uuid.UUID {
		out := make([]uuid.UUID, n)
		for i := range out {
			out[i] = uuid.New()
			if i%2 == 0 {
				out[i][0] |= 0x80
			} else {
				out[i][0] &^= 0x80
			}
		}
		slices.SortFunc(out, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
		return out
	}

	t.Run("SetAndRead", func(t *testing.T) {
		s, bs := store(t)
		ctx := t.Context()
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		b, _ := mustApp(t, s, tm.ID, at(1))
		r := ids(6)
		closed, err := bs.ClosedBugReports(ctx, a.ID)
		wantErr(t, "ClosedBugReports of a new app", err, nil)
		if closed == nil || len(closed) != 0 {
			t.Errorf("ClosedBugReports of a new app = %v, want []", closed)
		}
		states, err := bs.BugReportStates(ctx, a.ID, r)
		wantErr(t, "BugReportStates before any set", err, nil)
		check(t, "BugReportStates before any set", sorted(states), []model.BugReportState{})

		// A time in another zone, to the microsecond (what every store keeps).
		odd := time.Date(2025, 6, 2, 10, 0, 0, 123456000, time.FixedZone("x", 5*3600+1800))
		set := func(app uuid.UUID, id uuid.UUID, st model.BugReportStatus, when time.Time) model.BugReportState {
			t.Helper()
			v := model.BugReportState{AppID: app, ID: id, Status: st, UpdatedAt: when}
			if err := bs.SetBugReportStatus(ctx, v); err != nil {
				t.Fatalf("SetBugReportStatus(%+v): %v", v, err)
			}
			return v
		}
		s0 := set(a.ID, r[0], model.BugReportClosed, odd)
		s1 := set(a.ID, r[1], model.BugReportOpen, at(3))
		set(a.ID, r[2], model.BugReportClosed, at(4))
		set(a.ID, r[3], model.BugReportClosed, at(5))
		s3 := set(a.ID, r[3], model.BugReportOpen, at(6))   // reopened
		s2 := set(a.ID, r[2], model.BugReportClosed, at(7)) // the same status again: a later time
		set(b.ID, r[4], model.BugReportClosed, at(8))       // another app's
		set(b.ID, r[0], model.BugReportOpen, at(8))         // the same id in another app

		closed, err = bs.ClosedBugReports(ctx, a.ID)
		wantErr(t, "ClosedBugReports", err, nil)
		check(t, "ClosedBugReports", closed, []uuid.UUID{r[0], r[2]})
		closed, err = bs.ClosedBugReports(ctx, b.ID)
		wantErr(t, "ClosedBugReports of the other app", err, nil)
		check(t, "ClosedBugReports of the other app", closed, []uuid.UUID{r[4]})

		states, err = bs.BugReportStates(ctx, a.ID, r)
		wantErr(t, "BugReportStates", err, nil)
		check(t, "BugReportStates", sorted(states), []model.BugReportState{s0, s1, s2, s3})
		states, err = bs.BugReportStates(ctx, a.ID, []uuid.UUID{r[5], r[1], r[1]})
		wantErr(t, "BugReportStates of some", err, nil)
		check(t, "BugReportStates of some (repeated, unknown)", sorted(states), []model.BugReportState{s1})
		states, err = bs.BugReportStates(ctx, a.ID, nil)
		wantErr(t, "BugReportStates of no ids", err, nil)
		check(t, "BugReportStates of no ids", sorted(states), []model.BugReportState{})
		states, err = bs.BugReportStates(ctx, uuid.New(), r)
		wantErr(t, "BugReportStates of an unknown app", err, nil)
		check(t, "BugReportStates of an unknown app", sorted(states), []model.BugReportState{})
		closed, err = bs.ClosedBugReports(ctx, uuid.New())
		wantErr(t, "ClosedBugReports of an unknown app", err, nil)
		check(t, "ClosedBugReports of an unknown app", closed, []uuid.UUID{})
	})

	t.Run("Refused", func(t *testing.T) {
		s, bs := store(t)
		ctx := t.Context()
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		id := uuid.New()
		for _, tc := range []struct {
			name string
			st   model.BugReportState
			want error
		}{
			{"unknown app", model.BugReportState{AppID: uuid.New(), ID: id, Status: model.BugReportClosed, UpdatedAt: at(2)}, sinks.ErrNotFound},
			{"status 2", model.BugReportState{AppID: a.ID, ID: id, Status: 2, UpdatedAt: at(2)}, sinks.ErrInvalid},
			{"status 255", model.BugReportState{AppID: a.ID, ID: id, Status: 255, UpdatedAt: at(2)}, sinks.ErrInvalid},
			{"no time", model.BugReportState{AppID: a.ID, ID: id, Status: model.BugReportClosed}, sinks.ErrInvalid},
		} {
			wantErr(t, "SetBugReportStatus("+tc.name+")", bs.SetBugReportStatus(ctx, tc.st), tc.want)
		}
		states, err := bs.BugReportStates(ctx, a.ID, []uuid.UUID{id})
		wantErr(t, "BugReportStates after refused sets", err, nil)
		check(t, "BugReportStates after refused sets", sorted(states), []model.BugReportState{})
	})

	t.Run("Many", func(t *testing.T) {
		s, bs := store(t)
		ctx := t.Context()
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		r := ids(1200)
		var want []uuid.UUID
		for i, id := range r {
			st := model.BugReportStatus(i % 3 % 2) // open, closed, open, open, closed, open, …
			if err := bs.SetBugReportStatus(ctx, model.BugReportState{AppID: a.ID, ID: id, Status: st, UpdatedAt: at(i)}); err != nil {
				t.Fatalf("SetBugReportStatus %d: %v", i, err)
			}
			if st == model.BugReportClosed {
				want = append(want, id)
			}
		}
		closed, err := bs.ClosedBugReports(ctx, a.ID)
		wantErr(t, "ClosedBugReports of many", err, nil)
		check(t, "ClosedBugReports of many", closed, want)
		states, err := bs.BugReportStates(ctx, a.ID, r[:1001])
		wantErr(t, "BugReportStates of a page", err, nil)
		if len(states) != 1001 || !states[r[1000]].UpdatedAt.Equal(at(1000)) {
			t.Errorf("BugReportStates of 1001 ids: %d states, [1000] = %+v", len(states), states[r[1000]])
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		s, bs := store(t)
		ctx := t.Context()
		_, tm := mustUser(t, s, at(0))
		a, _ := mustApp(t, s, tm.ID, at(1))
		id := uuid.New()
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = bs.SetBugReportStatus(ctx, model.BugReportState{AppID: a.ID, ID: id,
					Status: model.BugReportStatus(i % 2), UpdatedAt: at(10 + i)})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			wantErr(t, fmt.Sprintf("concurrent SetBugReportStatus %d", i), err, nil)
		}
		states, err := bs.BugReportStates(ctx, a.ID, []uuid.UUID{id})
		wantErr(t, "BugReportStates after concurrent sets", err, nil)
		st, ok := states[id]
		// One of the writes won, whole: its status goes with its time.
		if !ok || st.Status != model.BugReportStatus(st.UpdatedAt.Sub(at(10))/time.Minute%2) {
			t.Errorf("after concurrent sets: %+v (found %v), want one write whole", st, ok)
		}
	})
}

// sorted lists states by report id (byte order), after checking that each is filed under its
// own id; nil for a nil map.
func sorted(states map[uuid.UUID]model.BugReportState) []model.BugReportState {
	if states == nil {
		return nil
	}
	out := []model.BugReportState{}
	for id, st := range states {
		if st.ID != id {
			st.ID = uuid.Nil // shows as a difference
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b model.BugReportState) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return out
}
