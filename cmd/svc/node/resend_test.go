package node

import (
	"encoding/json"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/svc-dev/svc/actors"
)

// SDKs send an event again when they did not get the answer to the request that carried it,
// and the retry need not be the same request: its events may be cut into other batches, each
// with a new request id, which the request gate does not recognise. The event store keeps such
// an event once (it is idempotent on the event id); the live answers must count it once as
// well, whatever happened to the node and the session actor in between.

// resendSplit cuts an app's held events into the requests of a resend.
type resendSplit struct {
	name string
	cut  func(rng *rand.Rand, evs []*gEvent) [][]*gEvent
}

var resendSplits = []resendSplit{
	// Across sessions: all events shuffled, 37 to a request.
	{"shuffled", func(rng *rand.Rand, evs []*gEvent) [][]*gEvent {
		evs = append([]*gEvent(nil), evs...)
		rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		return chunks(evs, 37)
	}},
	// Per session, the later half before the earlier one.
	{"later half first", func(_ *rand.Rand, evs []*gEvent) [][]*gEvent {
		var out [][]*gEvent
		for _, s := range bySession(evs) {
			h := len(s) / 2
			out = append(out, s[h:])
			if h > 0 {
				out = append(out, s[:h])
			}
		}
		return out
	}},
	// The whole app in one request.
	{"one request", func(_ *rand.Rand, evs []*gEvent) [][]*gEvent { return [][]*gEvent{evs} }},
	// Newest first, seven to a request.
	{"newest first", func(_ *rand.Rand, evs []*gEvent) [][]*gEvent {
		evs = append([]*gEvent(nil), evs...)
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].ts > evs[j].ts })
		return chunks(evs, 7)
	}},
}

func chunks(evs []*gEvent, n int) [][]*gEvent {
	var out [][]*gEvent
	for i := 0; i < len(evs); i += n {
		out = append(out, evs[i:min(i+n, len(evs))])
	}
	return out
}

// bySession groups events by session, each group in time order, sessions in first-seen order.
func bySession(evs []*gEvent) [][]*gEvent {
	idx := map[*gSession]int{}
	var out [][]*gEvent
	for _, e := range evs {
		i, ok := idx[e.s]
		if !ok {
			i = len(out)
			idx[e.s] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], e)
	}
	for _, s := range out {
		sort.SliceStable(s, func(i, j int) bool { return s[i].ts < s[j].ts })
	}
	return out
}

// resend sends every held event of both apps again, cut by split, each request under a new
// request id, and waits until the store holds them.
func (c *aClient) resend(t *testing.T, rng *rand.Rand, split resendSplit) {
	t.Helper()
	for _, app := range []*gApp{c.d.a, c.d.b} {
		for _, req := range split.cut(rng, c.d.events(app)) {
			c.send(t, app, req, nil)
		}
	}
	c.settle(t)
}

// waitPassivated waits until the node has no live session actor: the next event of any
// session reaches an actor that starts from its snapshot.
func (c *aClient) waitPassivated(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.tn.Dir.Count(actors.KindSession) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d session actors still live after 30 s", c.tn.Dir.Count(actors.KindSession))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkResent compares every answer the app actor gives (the three group lists and the
// journey, over every window of the suite, with and without versions) with the store's and
// with the truth, and the stored counts with the events sent.
func (c *aClient) checkResent(t *testing.T) {
	d := c.d
	for _, app := range []*gApp{d.a, d.b} {
		if n, _ := c.tn.counts(t, app.id); n != int64(len(d.events(app))) {
			t.Errorf("app %s: the store holds %d events, %d were sent", app.label, n, len(d.events(app)))
		}
		for _, w := range d.windows() {
			for _, vs := range [][]gVer{nil, {d.vA20}, {d.vA10, d.vA11}, {d.vB91}} {
				q := with(w.q, func(q *aq) { q.versions = vs })
				for _, ep := range groupEndpoints {
					c.groupList(t, app, ep.path, ep.classes, ep.errors, q)
				}
				for _, bigraph := range []bool{true, false} {
					v := q.values()
					v.Set("bigraph", map[bool]string{true: "1", false: "0"}[bigraph])
					want := d.journey(app, q, bigraph, "", "")
					for _, b := range c.liveStore(t, app, "/journey", v, d.answeredBy(app, q)) {
						var got jGraph
						if err := json.Unmarshal(b, &got); err != nil {
							t.Fatalf("journey: %v %s", err, clip(b))
						}
						c.diffJourney(t, app.label+" /journey?"+v.Encode(), got, want)
					}
				}
			}
		}
	}
}

// shortIdle passivates session actors a moment after their last event.
func shortIdle(c *Config) { c.SessionIdle = 300 * time.Millisecond }

// TestAnalyticsResend sends the whole dataset again, cut into other requests, four times:
// with the session actors live; after a restart (the actors rebuilt from the store, the
// session actors from their snapshots); after every session actor was passivated; and after
// a restart of a node whose session actors were passivated. Every live answer must stay
// equal to the store's and to the truth, and the store must hold each event once.
func TestAnalyticsResend(t *testing.T) {
	for _, be := range analyticsBackends {
		t.Run(be.name, func(t *testing.T) {
			tn := startNode(t, be.harness, analyticsConfig)
			d := buildDataset(time.Now())
			c := d.load(t, tn)
			rng := rand.New(rand.NewPCG(6, 10))
			t.Run("Sent", c.checkResent)

			c.resend(t, rng, resendSplits[0])
			t.Run("Resent", c.checkResent)

			c.tn = restartNode(t, be.harness, c.tn, nil, shortIdle)
			c.login(t)
			c.settle(t)
			c.resend(t, rng, resendSplits[1])
			t.Run("ResentAfterRestart", c.checkResent)

			c.waitPassivated(t)
			c.resend(t, rng, resendSplits[2])
			t.Run("ResentAfterPassivation", c.checkResent)

			c.waitPassivated(t)
			c.tn = restartNode(t, be.harness, c.tn, nil, shortIdle)
			c.login(t)
			c.settle(t)
			c.resend(t, rng, resendSplits[3])
			t.Run("ResentAfterPassivationAndRestart", c.checkResent)

			// The answers only the store gives count each event once as well.
			t.Run("GroupLists", c.testGroupLists)
			t.Run("ErrorGroups", c.testErrorGroups)
			t.Run("Instances", c.testInstances)
			t.Run("Plots", c.testPlots)
			t.Run("Journeys", c.testJourneys)
			t.Run("Metrics", c.testMetrics)
		})
	}
}
