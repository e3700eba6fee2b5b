package dashboard

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
)

// journeyReply is a live journey reply shaped like the recorded fixtures' (69 screens, 156
// links, some both ways, tied counts; issues of both kinds on some screens), in the map order
// an app actor sends.
func journeyReply() *actorpb.LiveReply {
	rng := rand.New(rand.NewPCG(7, 8))
	screens := make([]string, 69)
	for i := range screens {
		screens[i] = fmt.Sprintf("sh.measure.sample.%sActivity%d", []string{"Checkout", "Settings", "Main", "Product", "Search"}[i%5], i)
	}
	p := actors.JourneyPack{Reply: &actorpb.LiveReply{Ok: true}}
	var last [2]int
	seen := map[[2]int]bool{}
	for len(seen) < 156 {
		l := [2]int{rng.IntN(len(screens)), rng.IntN(len(screens))}
		if len(seen)%3 == 0 && len(seen) > 0 { // a way back
			l = [2]int{last[1], last[0]}
		}
		if l[0] == l[1] || seen[l] {
			continue
		}
		seen[l], last = true, l
		p.Link(screens[l[0]], screens[l[1]], uint64(1+rng.IntN(40)))
	}
	for i := range 30 {
		class := model.ClassCrash
		if i%4 == 0 {
			class = model.ClassANR
		}
		p.Issue(screens[rng.IntN(len(screens))], fmt.Sprintf("%032x", i%12), uint32(class),
			"java.lang.IllegalStateException@CheckoutActivity.kt", uint64(1+rng.IntN(20)))
	}
	return p.Reply
}

// replyLive answers every live query with its reply.
type replyLive struct{ r *actorpb.LiveReply }

func (l replyLive) Query(context.Context, uuid.UUID, *actorpb.LiveQuery) (*actorpb.LiveReply, error) {
	return l.r, nil
}

// discardWriter is a ResponseWriter that keeps nothing but its headers.
type discardWriter struct{ h http.Header }

func (w discardWriter) Header() http.Header       { return w.h }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}

// BenchmarkLiveJourneyAnswer times the journey handler answering from an app actor's reply
// (journeyReply; the actor itself is a stub): parameters, the graph and its JSON, without HTTP.
//
//	go test -run '^$' -bench LiveJourneyAnswer ./http/dashboard/
func BenchmarkLiveJourneyAnswer(b *testing.B) {
	for _, bigraph := range []string{"1", "0"} {
		b.Run("bigraph="+bigraph, func(b *testing.B) {
			a := &API{Live: replyLive{journeyReply()}}
			ctx := context.WithValue(context.Background(), appKey, model.App{ID: uuid.New(), RetentionDays: 30})
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/journey?bigraph="+bigraph, nil)
			w := discardWriter{http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				a.journey(w, req)
			}
			if w.h.Get(HeaderAnsweredBy) != "live" {
				b.Fatalf("answered by %q", w.h.Get(HeaderAnsweredBy))
			}
		})
	}
}

// BenchmarkLiveJourneyRoute is BenchmarkLiveJourneyAnswer over loopback HTTP, with p50 and p99
// (no sign-in checks: BenchmarkAppRoute times those).
func BenchmarkLiveJourneyRoute(b *testing.B) {
	a := &API{Live: replyLive{journeyReply()}}
	app := model.App{ID: uuid.New(), RetentionDays: 30}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.journey(w, r.WithContext(context.WithValue(r.Context(), appKey, app)))
	}))
	defer srv.Close()
	client := srv.Client()
	b.ReportAllocs()
	var took []time.Duration
	for b.Loop() {
		t0 := time.Now()
		resp, err := client.Get(srv.URL + "/journey")
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took = append(took, time.Since(t0))
		if resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderAnsweredBy) != "live" || n < 10000 {
			b.Fatalf("GET journey: %s, answered by %q, %d bytes", resp.Status, resp.Header.Get(HeaderAnsweredBy), n)
		}
	}
	slices.Sort(took)
	for _, p := range []float64{0.50, 0.99} {
		b.ReportMetric(float64(took[int(p*float64(len(took)-1))].Microseconds()), fmt.Sprintf("p%02.0f-µs", p*100))
	}
}
