package replay

import (
	"bytes"
	"io"
	"mime/multipart"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// loadFixtures parses every batch fixture; the suite fails when they are missing.
func loadFixtures(tb testing.TB, multipartRules bool) []*Template {
	tb.Helper()
	dir, err := FixturesDir()
	if err != nil {
		tb.Fatal(err)
	}
	ts, err := LoadTemplates(dir, nil, multipartRules)
	if err != nil {
		tb.Fatal(err)
	}
	if len(ts) < 20 {
		tb.Fatalf("only %d fixtures in %s", len(ts), dir)
	}
	return ts
}

func decode(t *testing.T, body []byte) model.Batch {
	t.Helper()
	b, err := model.DecodeBatch(body, uuid.Nil, false)
	if err != nil {
		t.Fatalf("rewritten body is not a valid batch: %v", err)
	}
	return b
}

// mapping checks that a replay renamed values one to one: the same original always became
// the same new value, different originals different ones, and no new value is an original.
type mapping struct {
	t         *testing.T
	what      string
	fwd, back map[string]string
	orig      map[string]bool
}

func newMapping(t *testing.T, what string) *mapping {
	return &mapping{t: t, what: what, fwd: map[string]string{}, back: map[string]string{}, orig: map[string]bool{}}
}

func (m *mapping) add(old, new string) {
	m.t.Helper()
	m.orig[old] = true
	if prev, ok := m.fwd[old]; ok && prev != new {
		m.t.Errorf("%s %s became both %s and %s", m.what, old, prev, new)
	}
	if prev, ok := m.back[new]; ok && prev != old {
		m.t.Errorf("%s %s and %s both became %s", m.what, prev, old, new)
	}
	m.fwd[old], m.back[new] = new, old
}

func (m *mapping) check() {
	m.t.Helper()
	for n := range m.back {
		if m.orig[n] {
			m.t.Errorf("%s %s was not renewed", m.what, n)
		}
	}
}

// times gathers (original, new) instant pairs to check they all moved by one delta.
type times struct {
	t      *testing.T
	delta  int64
	set    bool
	latest int64
}

func (tm *times) add(what string, old, new int64, itemTime bool) {
	tm.t.Helper()
	if !tm.set {
		tm.delta, tm.set = new-old, true
	} else if new-old != tm.delta {
		tm.t.Errorf("%s moved by %v, others by %v: order not kept", what, time.Duration(new-old), time.Duration(tm.delta))
	}
	if itemTime && new > tm.latest {
		tm.latest = new
	}
}

func TestRenderFreshIDsConsistentWithinBatch(t *testing.T) {
	for _, tpl := range loadFixtures(t, false) {
		t.Run(tpl.Name, func(t *testing.T) {
			orig := decode(t, tpl.raw)
			rw := NewRewriter()
			now := time.Now().UnixNano()
			outs := [][]byte{rw.Render(nil, tpl, now), rw.Render(nil, tpl, now)}
			seenEvent := map[uuid.UUID]bool{}
			for _, out := range outs {
				assertOnlyValuesChanged(t, tpl, out)
				got := decode(t, out)
				if len(got.Events) != len(orig.Events) || len(got.Spans) != len(orig.Spans) {
					t.Fatalf("got %d events, %d spans; want %d, %d", len(got.Events), len(got.Spans), len(orig.Events), len(orig.Spans))
				}
				ids, sessions := newMapping(t, "event id"), newMapping(t, "session id")
				atts, spans, traces := newMapping(t, "attachment id"), newMapping(t, "span id"), newMapping(t, "trace id")
				tm := &times{t: t}
				for i, e := range got.Events {
					o := orig.Events[i]
					ids.add(o.ID.String(), e.ID.String())
					if seenEvent[e.ID] {
						t.Errorf("event id %s sent twice", e.ID)
					}
					seenEvent[e.ID] = true
					sessions.add(o.SessionID.String(), e.SessionID.String())
					for j, a := range e.Attachments {
						atts.add(o.Attachments[j].ID.String(), a.ID.String())
					}
					tm.add("event timestamp", o.Timestamp, e.Timestamp, true)
					if o.Attribute.SessionStartTime != 0 {
						tm.add("session_start_time", o.Attribute.SessionStartTime, e.Attribute.SessionStartTime, false)
					}
					assertSameEvent(t, i, o, e)
				}
				newSpanID := map[string]string{}
				for i, s := range got.Spans {
					o := orig.Spans[i]
					spans.add(o.SpanID, s.SpanID)
					newSpanID[o.SpanID] = s.SpanID
					traces.add(o.TraceID, s.TraceID)
					sessions.add(o.SessionID.String(), s.SessionID.String())
					tm.add("span start_time", o.StartTime, s.StartTime, true)
					tm.add("span end_time", o.EndTime, s.EndTime, true)
					for j, c := range s.Checkpoints {
						tm.add("checkpoint", o.Checkpoints[j].Timestamp, c.Timestamp, true)
					}
					if o.Attributes.SessionStartTime != 0 {
						tm.add("span session_start_time", o.Attributes.SessionStartTime, s.Attributes.SessionStartTime, false)
					}
					assertSameSpan(t, i, o, s)
				}
				for i, s := range got.Spans {
					o := orig.Spans[i]
					switch p, inBatch := newSpanID[o.ParentID]; {
					case o.ParentID == "":
						if s.ParentID != "" {
							t.Errorf("root span %d got parent %s", i, s.ParentID)
						}
					case inBatch && s.ParentID != p:
						t.Errorf("span %d: parent link broken: parent %s became %s, the parent span's id %s", i, o.ParentID, s.ParentID, p)
					case !inBatch:
						spans.add(o.ParentID, s.ParentID)
					}
				}
				for _, m := range []*mapping{ids, sessions, atts, spans, traces} {
					m.check()
				}
				if tm.delta%int64(time.Millisecond) != 0 {
					t.Errorf("times moved by %v, not whole milliseconds", time.Duration(tm.delta))
				}
				if tm.latest > now || tm.latest <= now-int64(time.Millisecond) {
					t.Errorf("latest time is %v before now; want less than 1ms", time.Duration(now-tm.latest))
				}
			}
		})
	}
}

// assertOnlyValuesChanged checks the replay is the original byte for byte outside the values
// the template names (ids keep their length; times keep their precision and zone letter).
func assertOnlyValuesChanged(t *testing.T, tpl *Template, out []byte) {
	t.Helper()
	if len(out) != len(tpl.raw) {
		t.Fatalf("replay is %d bytes, original %d", len(out), len(tpl.raw))
	}
	pos := int32(0)
	for _, s := range tpl.subs {
		if !bytes.Equal(out[pos:s.start], tpl.raw[pos:s.start]) {
			t.Fatalf("bytes %d..%d changed outside the rewritten values", pos, s.start)
		}
		if bytes.Equal(out[s.start:s.end], tpl.raw[s.start:s.end]) {
			t.Errorf("value %q at %d was not rewritten", tpl.raw[s.start:s.end], s.start)
		}
		pos = s.end
	}
	if !bytes.Equal(out[pos:], tpl.raw[pos:]) {
		t.Fatalf("tail changed")
	}
}

// assertSameEvent compares everything a replay must keep.
func assertSameEvent(t *testing.T, i int, o, e model.Event) {
	t.Helper()
	o.ID, e.ID, o.SessionID, e.SessionID, o.Timestamp, e.Timestamp = uuid.Nil, uuid.Nil, uuid.Nil, uuid.Nil, 0, 0
	o.Attribute.SessionStartTime, e.Attribute.SessionStartTime = 0, 0
	o.Attachments, e.Attachments = clearIDs(o.Attachments), clearIDs(e.Attachments)
	if !reflect.DeepEqual(o, e) {
		t.Errorf("event %d changed beyond ids and times:\n got %+v\nwant %+v", i, e, o)
	}
}

func clearIDs(a []model.Attachment) []model.Attachment {
	out := append([]model.Attachment(nil), a...)
	for i := range out {
		out[i].ID = uuid.Nil
	}
	return out
}

func assertSameSpan(t *testing.T, i int, o, s model.Span) {
	t.Helper()
	o.SpanID, s.SpanID, o.TraceID, s.TraceID, o.ParentID, s.ParentID = "", "", "", "", "", ""
	o.SessionID, s.SessionID, o.StartTime, s.StartTime, o.EndTime, s.EndTime = uuid.Nil, uuid.Nil, 0, 0, 0, 0
	o.Attributes.SessionStartTime, s.Attributes.SessionStartTime = 0, 0
	o.Checkpoints = append([]model.Checkpoint(nil), o.Checkpoints...)
	s.Checkpoints = append([]model.Checkpoint(nil), s.Checkpoints...)
	for j := range o.Checkpoints {
		o.Checkpoints[j].Timestamp = 0
	}
	for j := range s.Checkpoints {
		s.Checkpoints[j].Timestamp = 0
	}
	if !reflect.DeepEqual(o, s) {
		t.Errorf("span %d changed beyond ids and times:\n got %+v\nwant %+v", i, s, o)
	}
}

func TestRenderWithoutNowKeepsTimes(t *testing.T) {
	for _, tpl := range loadFixtures(t, false) {
		orig := decode(t, tpl.raw)
		got := decode(t, NewRewriter().Render(nil, tpl, 0))
		for i := range got.Events {
			if got.Events[i].Timestamp != orig.Events[i].Timestamp || got.Events[i].ID == orig.Events[i].ID {
				t.Fatalf("%s event %d: timestamp %d (want %d), id %s (want a new one)", tpl.Name, i,
					got.Events[i].Timestamp, orig.Events[i].Timestamp, got.Events[i].ID)
			}
		}
		for i := range got.Spans {
			if got.Spans[i].StartTime != orig.Spans[i].StartTime || got.Spans[i].SpanID == orig.Spans[i].SpanID {
				t.Fatalf("%s span %d: times changed or id kept", tpl.Name, i)
			}
		}
	}
}

// TestRenderMultipart reads each replay as the server does: one part per item, decoded with
// the multipart rules, in the original order.
func TestRenderMultipart(t *testing.T) {
	for _, tpl := range loadFixtures(t, true) {
		t.Run(tpl.Name, func(t *testing.T) {
			orig := decode(t, tpl.raw)
			rw := NewRewriter()
			body := rw.RenderMultipart(nil, tpl, time.Now().UnixNano())
			mr := multipart.NewReader(bytes.NewReader(body), rw.Boundary())
			var b model.Batch
			var names []string
			for {
				p, err := mr.NextPart()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("part %d: %v", len(names), err)
				}
				data, err := io.ReadAll(p)
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, p.FormName())
				switch p.FormName() {
				case "event":
					err = b.AddEventPart(data, uuid.Nil)
				case "span":
					err = b.AddSpanPart(data, uuid.Nil)
				default:
					t.Fatalf("unexpected part %q", p.FormName())
				}
				if err != nil {
					t.Fatalf("part %d (%s): %v", len(names)-1, p.FormName(), err)
				}
			}
			if err := b.Validate(); err != nil {
				t.Fatal(err)
			}
			want := strings.Repeat("event ", len(orig.Events)) + strings.Repeat("span ", len(orig.Spans))
			if got := strings.Join(names, " ") + " "; got != want {
				t.Fatalf("parts %q, want %q", got, want)
			}
			for i := range b.Events {
				if b.Events[i].ID == orig.Events[i].ID || b.Events[i].Type != orig.Events[i].Type {
					t.Fatalf("event %d: id %s kept or type changed", i, b.Events[i].ID)
				}
			}
			for i := range b.Spans {
				if b.Spans[i].SpanID == orig.Spans[i].SpanID || b.Spans[i].Name != orig.Spans[i].Name {
					t.Fatalf("span %d: id kept or name changed", i)
				}
			}
		})
	}
}

func TestAppendTime(t *testing.T) {
	tests := []struct {
		when   string
		digits int
	}{
		{"1970-01-01T00:00:00Z", 0},
		{"1999-12-31T23:59:59.999999999Z", 9},
		{"2000-02-29T12:00:00.123Z", 3},
		{"2024-02-29T23:59:59.12345678Z", 8},
		{"2025-03-01T00:00:00.000Z", 3},
		{"2026-11-22T00:34:43.5Z", 1},
		{"2100-03-01T01:02:03.040506070Z", 9},
		{"1969-12-31T23:59:59.900Z", 3},
		{"2261-12-31T23:59:59.999Z", 3},
	}
	for _, tt := range tests {
		t.Run(tt.when, func(t *testing.T) {
			ns, err := model.ParseTimestamp(tt.when)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(appendTime(nil, ns, tt.digits)); got != tt.when {
				t.Errorf("appendTime = %s, want %s", got, tt.when)
			}
		})
	}
	// And against the standard library over a spread of instants and precisions.
	for ns := int64(-1e17); ns < 9e18; ns += 7_777_777_777_777_777 {
		for _, digits := range []int{0, 3, 8, 9} {
			tm := time.Unix(0, ns).UTC()
			want := tm.Format("2006-01-02T15:04:05")
			if digits > 0 {
				want += tm.Format(".000000000")[:1+digits]
			}
			want += "Z"
			if got := string(appendTime(nil, ns, digits)); got != want {
				t.Fatalf("appendTime(%d, %d) = %s, want %s", ns, digits, got, want)
			}
		}
	}
}

func TestParseTemplateRefuses(t *testing.T) {
	tests := []struct {
		name, body string
	}{
		{"escaped id", `{"events":[{"id":"\u0030ba7b810-9dad-11d1-80b4-00c04fd430c8","session_id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","timestamp":"2025-01-01T00:00:00Z"}]}`},
		{"no items", `{"events":[],"spans":[]}`},
		{"syntax", `{"events":[{"id":"x",}]}`},
		{"bad timestamp", `{"events":[{"timestamp":"yesterday"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseTemplate(tt.name, []byte(tt.body)); err == nil {
				t.Fatal("ParseTemplate accepted it")
			}
		})
	}
}

// BenchmarkRewrite measures the generator's own cost per replay over the whole corpus,
// round-robin as a run sends it: items/s is what one core can feed the server.
func BenchmarkRewrite(b *testing.B) {
	for _, format := range []string{"json", "multipart"} {
		b.Run(format, func(b *testing.B) {
			ts := loadFixtures(b, format == "multipart")
			rw := NewRewriter()
			var buf []byte
			var items, size int64
			for _, t := range ts {
				items += int64(t.Items())
				size += int64(t.Size())
			}
			b.SetBytes(size / int64(len(ts)))
			b.ReportAllocs()
			b.ResetTimer()
			now := time.Now().UnixNano()
			var sent int64
			for i := 0; b.Loop(); i++ {
				t := ts[i%len(ts)]
				if format == "json" {
					buf = rw.Render(buf[:0], t, now)
				} else {
					buf = rw.RenderMultipart(buf[:0], t, now)
				}
				sent += int64(t.Items())
			}
			b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "items/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(sent), "ns/item")
		})
	}
}

// TestParseTemplatePaths checks which values a replay renews: the ids and times of events and
// spans, and nothing that merely looks like one elsewhere.
func TestParseTemplatePaths(t *testing.T) {
	const (
		ev   = "11111111-1111-4111-8111-111111111111"
		sess = "22222222-2222-4222-8222-222222222222"
		att  = "33333333-3333-4333-8333-333333333333"
		kind = "44444444-4444-4444-8444-444444444444" // inside the kind member: payload, kept
		inst = "55555555-5555-4555-8555-555555555555" // installation_id: kept
	)
	body := `{"events":[{"id":"` + ev + `","session_id":"` + sess + `","timestamp":"2025-01-01T00:00:01.5Z",` +
		`"type":"custom","custom":{"name":"x","id":"` + kind + `","timestamp":"2025-01-01T00:00:00Z"},` +
		`"attachments":[{"id":"` + att + `","name":"a","type":"screenshot","timestamp":"2025-01-01T00:00:00Z"}],` +
		`"attribute":{"installation_id":"` + inst + `","session_start_time":"2025-01-01T00:00:00.000Z"}}],` +
		`"spans":[{"span_id":"aaaaaaaaaaaaaaaa","parent_id":"bbbbbbbbbbbbbbbb","trace_id":"cccccccccccccccccccccccccccccccc",` +
		`"session_id":"` + sess + `","start_time":"2025-01-01T00:00:02Z","end_time":"2025-01-01T00:00:03.25Z",` +
		`"checkpoints":[{"name":"c","timestamp":"2025-01-01T00:00:02.5Z"}],"attributes":{"user_id":"` + inst + `"}},` +
		`{"span_id":"bbbbbbbbbbbbbbbb","parent_id":"","trace_id":"cccccccccccccccccccccccccccccccc","start_time":"2025-01-01T00:00:00Z","end_time":"2025-01-01T00:00:01Z"}],` +
		`"extra":[{"id":"` + ev + `"}]}`
	tpl, err := ParseTemplate("hand-made", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range tpl.subs {
		got = append(got, body[s.start:s.end])
	}
	want := []string{ev, sess, "2025-01-01T00:00:01.5Z", att, "2025-01-01T00:00:00.000Z",
		"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "cccccccccccccccccccccccccccccccc", sess, "2025-01-01T00:00:02Z", "2025-01-01T00:00:03.25Z", "2025-01-01T00:00:02.5Z",
		"bbbbbbbbbbbbbbbb", "cccccccccccccccccccccccccccccccc", "2025-01-01T00:00:00Z", "2025-01-01T00:00:01Z"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("renewed values\n got %q\nwant %q", got, want)
	}
	if tpl.Events != 1 || tpl.Spans != 2 {
		t.Errorf("%d events, %d spans; want 1, 2", tpl.Events, tpl.Spans)
	}
	// Slots: event id, session, attachment, two span ids, one trace.
	if len(tpl.slots) != 6 {
		t.Errorf("%d id slots, want 6", len(tpl.slots))
	}
	if latest, _ := model.ParseTimestamp("2025-01-01T00:00:03.25Z"); tpl.maxTime != latest {
		t.Errorf("anchor %d, want the latest span end %d", tpl.maxTime, latest)
	}
	out := string(NewRewriter().Render(nil, tpl, 0))
	for _, kept := range []string{kind, inst, `"parent_id":""`, `"extra":[{"id":"` + ev + `"}]`} {
		if !strings.Contains(out, kept) {
			t.Errorf("replay lost %s", kept)
		}
	}
}
