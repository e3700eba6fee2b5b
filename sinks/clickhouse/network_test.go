package clickhouse_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/eventstest"
)

func TestNetwork(t *testing.T) {
	t.Run("clickhouse", func(t *testing.T) {
		eventstest.RunNetwork(t, func(t *testing.T) eventstest.NetworkStore {
			s, _ := openFresh(t)
			return s
		})
	})
}

// An endpoint map far larger than the server's limit on a query's text (256 KiB) goes as an
// external table; a (domain, path) added twice takes the pattern added last, as
// model.EndpointMap.Pattern does.
func TestNetworkLargeEndpointMap(t *testing.T) {
	s, _ := openFresh(t)
	defer s.Close()
	app, session := uuid.New(), uuid.New()
	t0 := time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	var evs []model.Event
	for i := range 40 {
		url := fmt.Sprintf("https://api.example.com/v%d/items/%d", i%4, i)
		evs = append(evs, eventstest.HTTPEvent(app, session, t0+int64(i)*int64(time.Second), "get", url, 200+i%4*100,
			1000, 1000+i*7, t0, model.Attributes{}))
	}
	if err := s.WriteEvents(testCtx(t), evs); err != nil {
		t.Fatal(err)
	}
	m := &model.EndpointMap{}
	for i := range 20_000 { // paths never stored, with long patterns
		m.Add("api.example.com", fmt.Sprintf("/unused/%06d/%s", i, "segment-of-some-length"),
			fmt.Sprintf("/unused/*/%s-%d", "a-pattern-of-some-length", i%97))
	}
	m.Add("api.example.com", "/v1/items/*", "/v1/**")
	m.Add("api.example.com", "/v2/items/*", "/first")
	m.Add("api.example.com", "/v2/items/*", "/v2/**") // replaces /first
	q := model.NetworkQuery{EventFilter: model.EventFilter{App: app, From: t0, To: t0 + int64(time.Hour)}, Endpoints: m}
	ref := eventstest.NewNetworkReference(evs)
	for _, by := range []model.HTTPGroup{0, model.ByPattern, model.ByPattern | model.ByStatus} {
		got, err := s.HTTPStats(testCtx(t), &q, by, model.Buckets{})
		if err != nil {
			t.Fatalf("HTTPStats(by %b): %v", by, err)
		}
		want := ref.HTTPStats(&q, by, model.Buckets{})
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("HTTPStats(by %b) =\n%+v\nwant\n%+v", by, got, want)
		}
	}
}
