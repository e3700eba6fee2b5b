package sinks

import (
	"context"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// WalkJourneyFacts is Analytics.JourneyFacts computed from Analytics.SessionWalks (walks): every
// session with a walk event in the window is walked whole and its facts in the window are
// passed on. A store without kept facts answers this way; its cost is that of SessionWalks.
func WalkJourneyFacts(ctx context.Context, walks func(ctx context.Context, q *model.WalkQuery, fn func(uuid.UUID, []model.WalkEvent) error) error,
	app uuid.UUID, from, to int64, fn func(f *model.JourneyFact) error) error {
	var facts []model.JourneyFact
	return walks(ctx, &model.WalkQuery{App: app, From: from, To: to}, func(_ uuid.UUID, events []model.WalkEvent) error {
		facts = model.AppendJourneyFacts(facts[:0], events)
		for i := range facts {
			if t := facts[i].Event.Timestamp; t >= from && t < to {
				if err := fn(&facts[i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
