package model

import (
	"bytes"
	"testing"
)

// fixtureEvents decodes every batch fixture and returns its events by id.
func fixtureEvents(t *testing.T) map[string]*Event {
	t.Helper()
	out := map[string]*Event{}
	for name, body := range fixtureBatches(t) {
		b, err := DecodeBatch(body, testApp, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range b.Events {
			out[b.Events[i].ID.String()] = &b.Events[i]
		}
	}
	return out
}

func TestDeriveFactsFixtures(t *testing.T) {
	events := fixtureEvents(t)
	cases := []struct {
		id   string
		kind string
		want EventFacts
	}{
		{"1d84ef75-2e7f-4901-9d87-e97a20b7d39f", "exception", // dart, handled false: a crash
			EventFacts{GroupID: "ed2878416c2194b7823f36207fd498de", Fatal: true, Foreground: true}},
		{"decbedd9-12eb-4a7b-b74c-156843b7495c", "exception", // jvm, handled
			EventFacts{GroupID: "9dfa4c09c9ad5c4b4e8498cc58a45af3", Foreground: true}},
		{"fa36b479-b6ca-47e5-b968-2511bfb8b00e", "exception", // apple error without exceptions
			EventFacts{GroupID: "22eb50ce9c079cab11bac0a4a029c1d1", Foreground: true}},
		{"471d320e-7ccd-46a8-bb0a-180ef65cccc6", "exception", // js, severity fatal
			EventFacts{GroupID: "b7cce7a699616350c22ddb52598acfec", Fatal: true, Foreground: true}},
		{"55e37029-3a95-4ea8-9089-8c9abee29a12", "exception", // js, severity handled
			EventFacts{GroupID: "37c2a9139c87d2ab20b2312448001df2", Foreground: true}},
		{"c934cf57-1b55-4bbe-89a6-1a5e689f55b6", "anr", // never fatal
			EventFacts{GroupID: "2c8134adabc90e3f288f66bab461b783", Foreground: true}},
		{"4dc55b8a-964e-45ca-9df7-5b195a95bcac", "screen_view", EventFacts{Screen: "/"}},
		{"9d0dcea8-cfd1-43a2-861f-c238a284c135", "lifecycle_activity",
			EventFacts{Screen: "sh.measure.android.flutter.MainActivity"}},
		{"03d3db16-347c-4c0f-b551-2daef3e73965", "lifecycle_activity", EventFacts{}}, // paused
		{"1005ec70-bd7b-4970-a35e-1ce1325595ec", "lifecycle_fragment", EventFacts{Screen: "M3.g"}},
		{"700af0ca-ddbb-4f54-b613-3da7e2476ed0", "lifecycle_view_controller", EventFacts{Screen: "ViewController"}},
		{"ddc0f19f-6850-44fd-a276-fcdcae51ec16", "lifecycle_swift_ui", EventFacts{Screen: "DetailListView"}},
		{"09e74316-d95b-4aab-85e4-ebf786ea4c27", "cold_launch", EventFacts{LaunchKind: LaunchCold, LaunchMs: 238}},
		{"5e91dd84-7947-42be-a3bc-c4cc8321987a", "cold_launch", EventFacts{LaunchKind: LaunchCold, LaunchMs: 702}},
		{"99d93939-c672-420d-8138-cc0936d4b5c1", "warm_launch", EventFacts{LaunchKind: LaunchWarm, LaunchMs: 1188}},
		{"745199b3-697c-4735-80f6-4fea41069c02", "warm_launch", EventFacts{}}, // lukewarm: no usable duration
		{"fc2b500e-41b0-4ec7-8c10-cf23712e1703", "hot_launch", EventFacts{LaunchKind: LaunchHot, LaunchMs: 474}},
		{"12e48dd3-b1df-4bef-b5c4-d1a2896838b2", "lifecycle_app", EventFacts{}},
		{"13a437af-fc29-4805-ba34-f3829fdf8f79", "app_exit", EventFacts{}}, // importance FOREGROUND is not a fact
		{"f3c9aa4a-7cf9-4e9e-bc64-0db703406c4b", "custom", EventFacts{}},
	}
	for _, c := range cases {
		e, ok := events[c.id]
		if !ok {
			t.Fatalf("fixture event %s missing", c.id)
		}
		if e.Type != c.kind {
			t.Fatalf("%s is a %s, want %s", c.id, e.Type, c.kind)
		}
		got := DeriveFacts(e)
		got.Issue = IssueDisplay{} // checked against GroupOf in TestDeriveFactsAgrees
		if got != c.want {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.kind, c.id, got, c.want)
		}
	}
}

// Every fixture event agrees with the functions the facts come from.
func TestDeriveFactsAgrees(t *testing.T) {
	for id, e := range fixtureEvents(t) {
		f := DeriveFacts(e)
		g, grouped := GroupOf(e)
		if f.GroupID != g.ID || f.Fatal != g.Fatal || grouped != (f.GroupID != "") {
			t.Errorf("%s %s: facts %+v, group %+v", e.Type, id, f, g)
		}
		want := IssueDisplay{}
		if grouped {
			want = IssueDisplay{Type: g.Type, Message: g.Message, MethodName: g.MethodName,
				FileName: g.FileName, LineNumber: int32(g.LineNumber), Severity: g.Severity}
		}
		if f.Issue != want || grouped && f.Issue.Title() != g.Title() {
			t.Errorf("%s %s: issue display %+v, group %+v", e.Type, id, f.Issue, g)
		}
		if sf := FactsOf(e); f.Screen != sf.Screen || (e.Type == "exception" && f.Fatal != sf.Fatal) {
			t.Errorf("%s %s: facts %+v, session facts %+v", e.Type, id, f, sf)
		}
		kind, ms, ok := LaunchDuration(e)
		if ok && (f.LaunchKind != kind || f.LaunchMs != ms) || !ok && (f.LaunchKind != "" || f.LaunchMs != 0) {
			t.Errorf("%s %s: facts %+v, launch %q %v %v", e.Type, id, f, kind, ms, ok)
		}
		if f.Foreground && e.Type != "exception" && e.Type != "anr" {
			t.Errorf("%s %s: foreground fact on a kind without one", e.Type, id)
		}
	}
}

// foreground is read from the payload, not assumed: a real crash sent from the background.
func TestDeriveFactsForeground(t *testing.T) {
	events := fixtureEvents(t)
	for _, id := range []string{"1d84ef75-2e7f-4901-9d87-e97a20b7d39f", "c934cf57-1b55-4bbe-89a6-1a5e689f55b6"} {
		e := *events[id]
		fg := DeriveFacts(&e)
		e.Payload = bytes.Replace(e.Payload, []byte(`"foreground":true`), []byte(`"foreground":false`), 1)
		bg := DeriveFacts(&e)
		if !fg.Foreground || bg.Foreground || bg.GroupID != fg.GroupID || bg.Fatal != fg.Fatal {
			t.Errorf("%s %s: foreground %+v, background %+v", e.Type, id, fg, bg)
		}
	}
	for _, c := range []struct {
		payload string
		want    bool
	}{
		{`{"foreground":true,"exceptions":[]}`, true},
		{`{"threads":[{"foreground":true}],"foreground":false}`, false}, // only the top level counts
		{`{"foreground":"true"}`, false},
		{`{"foreground":null}`, false},
		{`{}`, false},
		{`not json`, false},
	} {
		e := Event{Type: "exception", Payload: []byte(c.payload)}
		if got := DeriveFacts(&e).Foreground; got != c.want {
			t.Errorf("%s: foreground %v, want %v", c.payload, got, c.want)
		}
	}
}

// BenchmarkIngestFacts compares the per-event parsing on the ingest path over the whole batch
// corpus: before, FactsOf on every event (session facts only); now, DeriveFacts on every event
// plus FactsOf on lifecycle_app (what actors.Ingest.Distribute does).
func BenchmarkIngestFacts(b *testing.B) {
	var events []Event
	for _, body := range fixtureBatches(b) {
		bt, err := DecodeBatch(body, testApp, false)
		if err != nil {
			b.Fatal(err)
		}
		events = append(events, bt.Events...)
	}
	b.Run("FactsOf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range events {
				_ = FactsOf(&events[i])
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
	})
	b.Run("DeriveFacts", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range events {
				events[i].Facts = DeriveFacts(&events[i])
				if events[i].Type == "lifecycle_app" {
					_ = FactsOf(&events[i])
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
	})
}
