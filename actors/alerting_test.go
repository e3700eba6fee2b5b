package actors

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
)

// raisedSink records what alerting raises; thresholds are fixed.
type raisedSink struct {
	raised []model.Alert
	th     model.ThresholdPrefs
	recent []model.Alert
}

func (s *raisedSink) Raise(a model.Alert)                       { s.raised = append(s.raised, a) }
func (s *raisedSink) Thresholds(uuid.UUID) model.ThresholdPrefs { return s.th }
func (s *raisedSink) Recent(context.Context, uuid.UUID, time.Time) ([]model.Alert, error) {
	return s.recent, nil
}

func (s *raisedSink) types() []string {
	var out []string
	for _, a := range s.raised {
		out = append(out, a.Type)
	}
	return out
}

// TestAlertingSpikes drives the sliding hour with a fake clock: each step adds sessions and
// crash events at a minute, and says which alerts it raises.
func TestAlertingSpikes(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	type step struct {
		at       time.Duration
		sessions int    // new sessions of the step's batch
		crashes  uint64 // events of group g
		anrs     uint64 // events of group h
		want     []string
	}
	for _, tc := range []struct {
		name  string
		th    model.ThresholdPrefs
		steps []step
	}{
		{"new groups, then a spike at the count", model.ThresholdPrefs{ErrorSpikeMinCountThreshold: 5, ErrorSpikeMinRateThreshold: 10},
			[]step{
				{0, 2, 3, 0, []string{model.AlertNewCrashGroup}},
				{time.Minute, 0, 1, 1, []string{model.AlertNewANRGroup}},
				{2 * time.Minute, 1, 1, 0, []string{model.AlertCrashSpike}}, // 5 crashes, 3 sessions
				{3 * time.Minute, 0, 50, 0, nil},                            // cooling down
			}},
		{"the rate holds it back until sessions leave the hour", model.ThresholdPrefs{ErrorSpikeMinCountThreshold: 2, ErrorSpikeMinRateThreshold: 50},
			[]step{
				{0, 10, 1, 0, []string{model.AlertNewCrashGroup}},
				{30 * time.Minute, 0, 1, 0, nil},                             // 2 crashes / 10 sessions = 20%
				{61 * time.Minute, 1, 1, 0, []string{model.AlertCrashSpike}}, // minute 0 left: 2 crashes / 1 session
			}},
		{"the count is over the last hour only", model.ThresholdPrefs{ErrorSpikeMinCountThreshold: 3, ErrorSpikeMinRateThreshold: 0},
			[]step{
				{0, 1, 2, 0, []string{model.AlertNewCrashGroup}},
				{60 * time.Minute, 1, 1, 0, nil}, // the first 2 left the hour
				{70 * time.Minute, 0, 2, 0, []string{model.AlertCrashSpike}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			sink := &raisedSink{th: tc.th}
			al := alerting{sink: sink, now: func() time.Time { return now }}
			al.reset()
			app := uuid.New()
			for i, s := range tc.steps {
				now = t0.Add(s.at)
				sink.raised = nil
				m := &actorpb.AppBatch{}
				for range s.sessions {
					id := uuid.New()
					m.Sessions = append(m.Sessions, id[:])
				}
				al.batch(app, m)
				var cells []model.IssueCell
				if s.crashes > 0 {
					cells = append(cells, model.IssueCell{GroupID: "g", Class: model.ClassCrash, Count: s.crashes})
				}
				if s.anrs > 0 {
					cells = append(cells, model.IssueCell{GroupID: "h", Class: model.ClassANR, Count: s.anrs})
				}
				al.issues(app, cells)
				if got := sink.types(); !equalStrings(got, s.want) {
					t.Errorf("step %d (%v): raised %q, want %q", i, s.at, got, s.want)
				}
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A rebuilt alerting knows the store's groups and cooldowns: nothing is raised again.
func TestAlertingRebuilt(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	app := uuid.New()
	sink := &raisedSink{th: model.ThresholdPrefs{ErrorSpikeMinCountThreshold: 1},
		recent: []model.Alert{{Type: model.AlertCrashSpike, EntityID: "g", CreatedAt: now.Add(-6 * 24 * time.Hour)},
			{Type: model.AlertANRSpike, EntityID: "h", CreatedAt: now.Add(-8 * 24 * time.Hour)}}}
	al := alerting{sink: sink, now: func() time.Time { return now }}
	al.reset()
	al.know(&model.IssueCell{GroupID: "g", Class: model.ClassCrash})
	al.know(&model.IssueCell{GroupID: "h", Class: model.ClassANR})
	if err := al.rebuild(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	al.batch(app, &actorpb.AppBatch{Sessions: [][]byte{id[:]}})
	al.issues(app, []model.IssueCell{{GroupID: "g", Class: model.ClassCrash, Count: 5}, {GroupID: "h", Class: model.ClassANR, Count: 5}})
	// g's spike six days ago still cools; h's eight days ago does not.
	if got := sink.types(); !equalStrings(got, []string{model.AlertANRSpike}) {
		t.Errorf("raised %q, want only the anr spike", got)
	}
	if a := sink.raised[0]; a.ID != model.AlertID(app, model.AlertANRSpike, "h", "29923800") || a.EntityID != "h" {
		t.Errorf("alert %+v: id must derive from app, type, group and the minute", a)
	}
}
