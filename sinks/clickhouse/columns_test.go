package clickhouse

import (
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
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
			small[i].UserDefined = append(slices.Clone(small[i].UserDefined), model.UDAttr{Key: "k", Type: model.UDType(1), Value: "v"})
			small[i].Attachments = append(slices.Clone(small[i].Attachments), model.Attachment{ID: uuid.New(), Name: "n.png", Type: "screenshot"})
		}
	}
	for i := range smallSpans {
		if i%2 == 0 {
			smallSpans[i].Checkpoints, smallSpans[i].UserDefined = nil, nil
		} else {
			smallSpans[i].Checkpoints = append(slices.Clone(smallSpans[i].Checkpoints), model.Checkpoint{Name: "cp", Timestamp: 7})
		}
	}

	t.Run("events", func(t *testing.T) {
		reused := new(eventCols).fill(big)
		reused.release()
		assertNoRefs(t, "released", eventRefs(reused))
		reused.fill(small)
		assertSameCols(t, new(eventCols).fill(small).cols(), reused.cols())
	})
	t.Run("spans", func(t *testing.T) {
		reused := new(spanCols).fill(bigSpans)
		reused.release()
		assertNoRefs(t, "released", spanRefs(reused))
		reused.fill(smallSpans)
		assertSameCols(t, new(spanCols).fill(smallSpans).cols(), reused.cols())
	})
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

// refSlices adds to out, by field path, every slice in the struct v that holds references
// (strings, slices, pointers), to its capacity: found by walking the struct, so that a column
// added later is checked without being listed here.
func refSlices(path string, v reflect.Value, out map[string]reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		refSlices(path, v.Elem(), out)
	case reflect.Struct:
		for i := range v.NumField() {
			refSlices(path+"."+v.Type().Field(i).Name, v.Field(i), out)
		}
	case reflect.Array:
		for i := range v.Len() {
			refSlices(fmt.Sprintf("%s[%d]", path, i), v.Index(i), out)
		}
	case reflect.Slice:
		switch v.Type().Elem().Kind() {
		case reflect.String, reflect.Slice, reflect.Pointer, reflect.Interface, reflect.Map:
			out[path] = v.Slice(0, v.Cap())
		}
	}
}

func eventRefs(c *eventCols) map[string]reflect.Value {
	m := map[string]reflect.Value{}
	refSlices("events", reflect.ValueOf(c), m)
	return m
}

func spanRefs(c *spanCols) map[string]reflect.Value {
	m := map[string]reflect.Value{}
	refSlices("spans", reflect.ValueOf(c), m)
	return m
}

// assertNoRefs fails for each slice in m that has an element other than its zero value.
func assertNoRefs(t *testing.T, when string, m map[string]reflect.Value) {
	t.Helper()
	if len(m) == 0 {
		t.Fatal("no slices found")
	}
	for name, v := range m {
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

// A column set is kept for the next write unless it is larger than spareMaxBytes or has been
// used for under a quarter of its rows shrinkAfter times in a row.
func TestKeepCols(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int // rows of each write, in order
		kept  bool
	}{
		{"a flush's size", []int{50_000}, true},
		{"larger than spareMaxBytes", []int{100_000}, false},
		{"smaller writes, fewer than shrinkAfter", []int{4000, 900, 900, 900, 900, 900, 900, 900}, true},
		{"smaller writes, shrinkAfter of them", []int{4000, 900, 900, 900, 900, 900, 900, 900, 900}, false},
		{"a large write between resets the count", []int{4000, 900, 900, 900, 900, 3000, 900, 900, 900, 900}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spare atomic.Pointer[eventCols]
			c := new(eventCols)
			for _, n := range tt.sizes {
				c.reset(n, n, 0)
				c.release()
			}
			keepCols(&spare, c)
			if got := spare.Load() != nil; got != tt.kept {
				b, small := c.held()
				t.Errorf("kept %v, want %v (%d bytes, %d small writes in a row)", got, tt.kept, b, small)
			}
		})
	}
}
