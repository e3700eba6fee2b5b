package eventstest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// asyncDeadline is how long the suite waits for an asynchronous DeleteBefore (ClickHouse
// mutations) to show in reads.
const asyncDeadline = 30 * time.Second

// eventually polls cond until it returns "" or the deadline passes, then fails with its last
// answer. A synchronous backend passes on the first call.
func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(asyncDeadline)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still after %v: %s", what, asyncDeadline, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func countIs(t *testing.T, s sinks.EventStore, app uuid.UUID, events, spans int64) func() string {
	return func() string {
		e, sp, err := s.Count(ctx(t), app)
		if err != nil {
			t.Fatalf("Count: %v", err)
		}
		if e != events || sp != spans {
			return fmt.Sprintf("Count(%s) = %d events, %d spans; want %d, %d", app, e, sp, events, spans)
		}
		return ""
	}
}

func testDeleteBefore(t *testing.T, s sinks.EventStore) {
	app, other, empty := uuid.New(), uuid.New(), uuid.New()
	// An odd nanosecond cut: a backend that compares seconds or microseconds misplaces the
	// rows just around it.
	cut := time.Date(2026, 3, 10, 12, 0, 0, 123_456_789, time.UTC)
	c := cut.UnixNano()
	day := int64(24 * time.Hour)
	offsets := []struct {
		name string
		ts   int64
	}{
		{"before the epoch", -1_000_000_001},
		{"40 days before", c - 40*day},
		{"a second before", c - int64(time.Second)},
		{"a nanosecond before", c - 1},
		{"at the cut", c},
		{"a nanosecond after", c + 1},
		{"40 days after", c + 40*day},
	}
	var events, otherEvents []model.Event
	var spans, otherSpans []model.Span
	var keptEv, keptSp int64
	for i, o := range offsets {
		e := fullEvent(app, i)
		e.Timestamp = o.ts
		events = append(events, e)
		sp := fullSpan(app, i)
		sp.StartTime, sp.EndTime = o.ts, o.ts+5_000_000
		spans = append(spans, sp)
		if o.ts >= c {
			keptEv++
			keptSp++
		}
		// The other app has rows on both sides too; none of them may go.
		oe := fullEvent(other, i)
		oe.Timestamp = o.ts
		otherEvents = append(otherEvents, oe)
		osp := fullSpan(other, i)
		osp.StartTime = o.ts
		otherSpans = append(otherSpans, osp)
	}
	// Every row written twice, in separate calls: replayed copies (which ClickHouse keeps until
	// a merge) must go as well.
	for range 2 {
		if err := s.WriteEvents(ctx(t), append(append([]model.Event(nil), events...), otherEvents...)); err != nil {
			t.Fatalf("WriteEvents: %v", err)
		}
		if err := s.WriteSpans(ctx(t), append(append([]model.Span(nil), spans...), otherSpans...)); err != nil {
			t.Fatalf("WriteSpans: %v", err)
		}
	}
	n := int64(len(offsets))
	checkCount(t, s, app, n, n)

	if err := s.DeleteBefore(ctx(t), app, cut); err != nil {
		t.Fatalf("DeleteBefore: %v", err)
	}
	eventually(t, "Count after DeleteBefore", countIs(t, s, app, keptEv, keptSp))
	checkCount(t, s, other, n, n)
	for i, o := range offsets {
		if o.ts >= c {
			checkEvent(t, s, events[i])
			checkSpan(t, s, spans[i])
			continue
		}
		if _, err := s.Event(ctx(t), app, events[i].ID); !errors.Is(err, sinks.ErrNotFound) {
			t.Errorf("event %s: Event error = %v, want ErrNotFound", o.name, err)
		}
		if _, err := s.Span(ctx(t), app, spans[i].SpanID); !errors.Is(err, sinks.ErrNotFound) {
			t.Errorf("span %s: Span error = %v, want ErrNotFound", o.name, err)
		}
	}
	for i := range otherEvents {
		checkEvent(t, s, otherEvents[i])
		checkSpan(t, s, otherSpans[i])
	}

	// Again, at the same cut: nothing left to delete, nothing else goes.
	if err := s.DeleteBefore(ctx(t), app, cut); err != nil {
		t.Fatalf("DeleteBefore again: %v", err)
	}
	// On an app with no rows, and with a cut before every row.
	if err := s.DeleteBefore(ctx(t), empty, cut); err != nil {
		t.Fatalf("DeleteBefore of an app without rows: %v", err)
	}
	if err := s.DeleteBefore(ctx(t), other, time.Unix(0, 0).Add(-2*time.Second)); err != nil {
		t.Fatalf("DeleteBefore before every row: %v", err)
	}
	checkCount(t, s, app, keptEv, keptSp)
	checkCount(t, s, other, n, n)
	checkCount(t, s, empty, 0, 0)

	// A deleted row written again (a late replay) is stored again and counted once.
	if err := s.WriteEvents(ctx(t), events[:1]); err != nil {
		t.Fatalf("WriteEvents after delete: %v", err)
	}
	if err := s.WriteSpans(ctx(t), spans[:1]); err != nil {
		t.Fatalf("WriteSpans after delete: %v", err)
	}
	checkCount(t, s, app, keptEv+1, keptSp+1)
	checkEvent(t, s, events[0])
	checkSpan(t, s, spans[0])
}

func testUsage(t *testing.T, s sinks.EventStore) {
	app, other := uuid.New(), uuid.New()
	at := func(y int, m time.Month, d, h, min, sec, ns int) int64 {
		return time.Date(y, m, d, h, min, sec, ns, time.UTC).UnixNano()
	}
	from := time.Date(2025, 11, 10, 0, 0, 0, 0, time.UTC)
	to := time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC)
	sA, sB, sC, sD := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	type row struct {
		span    bool
		ts      int64
		session uuid.UUID
	}
	rows := []row{
		{false, from.UnixNano() - 1, sA}, // before from: left out
		{true, to.UnixNano(), sD},        // at to: left out
		// 2025-11, partly inside the range. sA has an event and a span: one session.
		{false, from.UnixNano(), sA},
		{false, at(2025, 11, 30, 23, 59, 59, 999_999_999), sB},
		{true, at(2025, 11, 15, 8, 0, 0, 0), sA},
		{true, at(2025, 11, 20, 8, 0, 0, 0), sC},
		// 2025-12: no rows of app (only other's), so no month.
		// 2026-01: sB again (a session counts in each month it has rows); an event without a
		// session counts as an event but not as a session.
		{false, at(2026, 1, 1, 0, 0, 0, 0), sB},
		{false, at(2026, 1, 15, 0, 0, 0, 0), uuid.Nil},
		{true, at(2026, 1, 31, 23, 59, 59, 999_999_999), sB},
		// 2026-02, partly inside the range.
		{false, at(2026, 2, 1, 0, 0, 0, 0), sC},
		{true, at(2026, 2, 19, 23, 59, 59, 999_999_999), sD},
	}
	want := []model.MonthUsage{
		{Month: "2025-11", Sessions: 3, Events: 2, Spans: 2},
		{Month: "2026-01", Sessions: 1, Events: 2, Spans: 1},
		{Month: "2026-02", Sessions: 2, Events: 1, Spans: 1},
	}
	var events []model.Event
	var spans []model.Span
	for i, r := range rows {
		if r.span {
			sp := fullSpan(app, i)
			sp.StartTime, sp.EndTime, sp.SessionID = r.ts, r.ts+1_000_000, r.session
			spans = append(spans, sp)
		} else {
			e := fullEvent(app, i)
			e.Timestamp, e.SessionID = r.ts, r.session
			events = append(events, e)
		}
	}
	// The other app: rows in 2025-11 and 2025-12, in the range.
	for i, ts := range []int64{at(2025, 11, 20, 0, 0, 0, 0), at(2025, 12, 5, 0, 0, 0, 0)} {
		e := fullEvent(other, 100+i)
		e.Timestamp = ts
		events = append(events, e)
		sp := fullSpan(other, 100+i)
		sp.StartTime = ts
		spans = append(spans, sp)
	}
	write := func() {
		t.Helper()
		if err := s.WriteEvents(ctx(t), events); err != nil {
			t.Fatalf("WriteEvents: %v", err)
		}
		if err := s.WriteSpans(ctx(t), spans); err != nil {
			t.Fatalf("WriteSpans: %v", err)
		}
	}
	usage := func(app uuid.UUID, from, to time.Time) []model.MonthUsage {
		t.Helper()
		u, err := s.Usage(ctx(t), app, from, to)
		if err != nil {
			t.Fatalf("Usage(%s, %s, %s): %v", app, from, to, err)
		}
		return u
	}
	// check compares everything but Bytes, which must be positive.
	check := func(name string, got, want []model.MonthUsage) {
		t.Helper()
		noBytes := make([]model.MonthUsage, len(got))
		for i, u := range got {
			if u.Bytes <= 0 {
				t.Errorf("%s: %s: Bytes = %d, want > 0", name, u.Month, u.Bytes)
			}
			u.Bytes = 0
			noBytes[i] = u
		}
		if len(noBytes) != len(want) || (len(want) > 0 && !reflect.DeepEqual(noBytes, want)) {
			t.Errorf("%s: Usage =\n  %+v\nwant (Bytes aside)\n  %+v", name, noBytes, want)
		}
	}

	write()
	first := usage(app, from, to)
	check("range", first, want)
	// Replayed rows (the same rows written again) count once, in every field, Bytes included.
	write()
	if again := usage(app, from, to); !reflect.DeepEqual(again, first) {
		t.Errorf("after writing every row again: Usage =\n  %+v\nwant what it was\n  %+v", again, first)
	}
	// One month's own bounds give that month's numbers, Bytes included.
	jan := usage(app, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	if !reflect.DeepEqual(jan, first[1:2]) {
		t.Errorf("January alone: Usage = %+v, want %+v", jan, first[1:2])
	}
	cases := []struct {
		name     string
		app      uuid.UUID
		from, to time.Time
		want     []model.MonthUsage
	}{
		{"other app", other, from, to, []model.MonthUsage{
			{Month: "2025-11", Sessions: 2, Events: 1, Spans: 1},
			{Month: "2025-12", Sessions: 2, Events: 1, Spans: 1},
		}},
		// to one nanosecond later than the range takes the span at to; from at the month's
		// start takes the event before from.
		{"wider range", app, time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC), to.Add(time.Nanosecond), []model.MonthUsage{
			{Month: "2025-11", Sessions: 3, Events: 3, Spans: 2},
			{Month: "2026-01", Sessions: 1, Events: 2, Spans: 1},
			{Month: "2026-02", Sessions: 2, Events: 1, Spans: 2}, // the span at to is sD's too
		}},
		{"empty month alone", app, time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nil},
		{"from equals to", app, from, from, nil},
		{"from after to", app, to, from, nil},
		{"unknown app", uuid.New(), from, to, nil},
	}
	for _, c := range cases {
		check(c.name, usage(c.app, c.from, c.to), c.want)
	}
}
