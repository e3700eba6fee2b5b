package clickhouse

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/eventstest"
)

// A write reuses the columns of the one before (Store.spareEvents): whatever that one held, the
// columns a reused set gives the driver must equal those of a fresh set, and a released set must
// refer to none of the rows it held.
func TestColumnsReused(t *testing.T) {
	app := uuid.New()
	big := eventstest.RealisticEvents(t, app, 400)
	bigSpans := eventstest.RealisticSpans(t, app, 400)
	// Smaller batches whose rows have more, fewer or no attributes, attachments and checkpoints
	// than the big ones' rows at the same index: a window left over would show.
	small := eventstest.RealisticEvents(t, app, 60)
	smallSpans := eventstest.RealisticSpans(t, app, 60)
	for i := range small {
		switch i % 3 {
		case 0:
			small[i].UserDefined, small[i].Attachments = nil, nil
		case 1:
			small[i].UserDefined = append(small[i].UserDefined, model.UDAttr{Key: "k", Type: model.UDType(1), Value: "v"})
			small[i].Attachments = append(small[i].Attachments, model.Attachment{ID: uuid.New(), Name: "n.png", Type: "screenshot"})
		}
	}
	for i := range smallSpans {
		if i%2 == 0 {
			smallSpans[i].Checkpoints, smallSpans[i].UserDefined = nil, nil
		} else {
			smallSpans[i].Checkpoints = append(smallSpans[i].Checkpoints, model.Checkpoint{Name: "cp", Timestamp: 7})
		}
	}

	t.Run("events", func(t *testing.T) {
		reused := fillEvents(new(eventCols), big)
		reused.release()
		assertNoRefs(t, "released", eventRefs(reused))
		fillEvents(reused, small)
		assertSameCols(t, fillEvents(new(eventCols), small).cols(), reused.cols())
	})
	t.Run("spans", func(t *testing.T) {
		reused := fillSpans(new(spanCols), bigSpans)
		reused.release()
		assertNoRefs(t, "released", spanRefs(reused))
		fillSpans(reused, smallSpans)
		assertSameCols(t, fillSpans(new(spanCols), smallSpans).cols(), reused.cols())
	})
}

func fillEvents(c *eventCols, events []model.Event) *eventCols {
	var ud, att int
	for i := range events {
		ud += len(events[i].UserDefined)
		att += len(events[i].Attachments)
	}
	c.reset(len(events), ud, att)
	for i := range events {
		c.set(i, &events[i])
	}
	return c
}

func fillSpans(c *spanCols, spans []model.Span) *spanCols {
	var ud, cp int
	for i := range spans {
		ud += len(spans[i].UserDefined)
		cp += len(spans[i].Checkpoints)
	}
	c.reset(len(spans), ud, cp)
	for i := range spans {
		c.set(i, &spans[i])
	}
	return c
}

func assertSameCols(t *testing.T, want, got []col) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d columns, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(want[i].values, got[i].values) {
			t.Errorf("column %s of the reused set differs from a fresh set's", want[i].name)
		}
	}
}

// eventRefs is every slice of c that may refer to an event's memory, by name, to its capacity.
func eventRefs(c *eventCols) map[string]any {
	m := attrRefs("", &c.attrs)
	udRefs(m, &c.ud)
	m["payload"] = c.payload[:cap(c.payload)]
	for i, s := range c.strs() {
		m[fmt.Sprint("str", i)] = (*s)[:cap(*s)]
	}
	for k, a := range c.attStrs() {
		m[fmt.Sprint("att", k)] = (*a)[:cap(*a)]
		m[fmt.Sprint("attFlat", k)] = c.attStrFlat[k][:cap(c.attStrFlat[k])]
	}
	return m
}

func spanRefs(c *spanCols) map[string]any {
	m := attrRefs("", &c.attrs)
	udRefs(m, &c.ud)
	for name, s := range map[string][]string{"spanID": c.spanID, "traceID": c.traceID, "parentID": c.parentID, "name": c.name, "cpNameFlat": c.cpNameFlat} {
		m[name] = s[:cap(s)]
	}
	m["cpNames"] = c.cpNames[:cap(c.cpNames)]
	return m
}

func attrRefs(prefix string, a *attrCols) map[string]any {
	m := map[string]any{prefix + "extra": a.extra[:cap(a.extra)]}
	for i, s := range a.strs() {
		m[fmt.Sprint(prefix, "attr", i)] = (*s)[:cap(*s)]
	}
	return m
}

func udRefs(m map[string]any, c *udCols) {
	m["udKeys"], m["udValues"] = c.keys[:cap(c.keys)], c.values[:cap(c.values)]
	m["udFlatK"], m["udFlatV"] = c.flatK[:cap(c.flatK)], c.flatV[:cap(c.flatV)]
}

// assertNoRefs fails for each slice in m that has an element other than its zero value.
func assertNoRefs(t *testing.T, when string, m map[string]any) {
	t.Helper()
	for name, s := range m {
		v := reflect.ValueOf(s)
		for i := range v.Len() {
			if !v.Index(i).IsZero() {
				t.Errorf("%s: %s[%d] is not zero", when, name, i)
				break
			}
		}
	}
}

// A store keeps the columns of its last writes for the next ones and lets them go when told it
// is idle (sinks.Idler).
func TestStoreKeepsColumns(t *testing.T) {
	s := migrated(t)
	app := uuid.New()
	if err := s.WriteEvents(ctxT(t), eventstest.RealisticEvents(t, app, 20)); err != nil {
		t.Fatalf("WriteEvents: %v", err)
	}
	if err := s.WriteSpans(ctxT(t), eventstest.RealisticSpans(t, app, 20)); err != nil {
		t.Fatalf("WriteSpans: %v", err)
	}
	ev, sp := s.spareEvents.Load(), s.spareSpans.Load()
	if ev == nil || sp == nil {
		t.Fatalf("columns kept: events %v, spans %v; want both", ev != nil, sp != nil)
	}
	assertNoRefs(t, "kept", eventRefs(ev))
	assertNoRefs(t, "kept", spanRefs(sp))
	var _ sinks.Idler = s
	s.Idle()
	if s.spareEvents.Load() != nil || s.spareSpans.Load() != nil {
		t.Fatal("Idle kept the columns")
	}
}
