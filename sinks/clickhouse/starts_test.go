package clickhouse

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// A journey walk reads the events from the earliest start among its window's sessions when
// every one of them has a start row, and from the app's first event otherwise; either way a
// session's whole walk comes back. Retention deletes a session's rows only together.
func TestSessionStarts(t *testing.T) {
	s := migrated(t)
	ctx := ctxT(t)
	app := uuid.New()
	day := func(d int, h time.Duration) int64 {
		return time.Date(2026, 3, 1+d, 0, 0, 0, 0, time.UTC).UnixNano() + int64(h)
	}
	screen := func(session uuid.UUID, ts int64, name string) model.Event {
		return model.Event{ID: uuid.New(), AppID: app, SessionID: session, Type: "screen_view", Timestamp: ts,
			Attribute: model.Attributes{AppVersion: "1.0", AppBuild: "1"}, Facts: model.EventFacts{Screen: name}}
	}
	old, long, recent, bare := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	write := func(events ...model.Event) {
		t.Helper()
		if err := s.WriteEvents(ctx, events); err != nil {
			t.Fatal(err)
		}
	}
	// old lies before everything; long starts on day 0 and goes on on day 5, in a later batch
	// (which writes no row: the store knows an earlier start); recent is all on day 5.
	write(screen(old, day(-10, time.Hour), "Home"), screen(old, day(-10, 2*time.Hour), "List"))
	write(screen(long, day(0, time.Hour), "Home"), screen(long, day(0, 2*time.Hour), "List"))
	write(screen(long, day(5, time.Hour), "Detail"), screen(long, day(5, 2*time.Hour), "Home"),
		screen(recent, day(5, 3*time.Hour), "Home"), screen(recent, day(5, 4*time.Hour), "Settings"))
	from, to := day(5, 0), day(5, 12*time.Hour)

	// walks returns the screens of each session's walk, and the start walkStart found.
	walks := func() (map[uuid.UUID][]string, int64, bool) {
		t.Helper()
		start, known, err := s.walkStart(ctx, app, from, to, walkSQL, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[uuid.UUID][]string{}
		err = s.SessionWalks(ctx, &model.WalkQuery{App: app, From: from, To: to}, func(id uuid.UUID, events []model.WalkEvent) error {
			for _, e := range events {
				got[id] = append(got[id], e.Screen)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, start, known
	}
	want := map[uuid.UUID][]string{long: {"Home", "List", "Detail", "Home"}, recent: {"Home", "Settings"}}
	check := func(name string, wantStart int64, wantKnown bool) {
		t.Helper()
		got, start, known := walks()
		if known != wantKnown || known && start != wantStart {
			t.Errorf("%s: start %d (known %v), want %d (known %v)", name, start, known, wantStart, wantKnown)
		}
		for id, w := range want {
			if !slices.Equal(got[id], w) {
				t.Errorf("%s: walk of session %s = %v, want %v", name, id, got[id], w)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d sessions walked, want %d", name, len(got), len(want))
		}
	}
	check("every session has a start", day(0, time.Hour), true)
	// Had the table been made within a day after that start, a session under way then might
	// have earlier events without a row: the walk starts a day before the table was made.
	s.starts.made.Store(day(0, 12*time.Hour))
	check("a start near the table's creation", day(-1, 12*time.Hour), true)
	s.starts.made.Store(0)

	// A session written without a start row (before migration 00007): the walk reads from the
	// app's first event.
	c := newEventCols(1, 0, 0)
	e := screen(bare, day(5, 5*time.Hour), "Home")
	c.set(0, &e)
	if err := s.insert(ctx, "events", c.cols()); err != nil {
		t.Fatal(err)
	}
	want[bare] = []string{"Home"}
	check("a session without a start row", 0, false)
	write(screen(bare, day(5, 6*time.Hour), "List"))
	want[bare] = []string{"Home", "List"}
	check("its next batch writes one", day(0, time.Hour), true)

	// Retention at day 3 deletes the events before it (long's day 0 screens, old's) and the
	// start rows of sessions whose every row is older than a day before it: old's, and long's
	// one row (its day 5 batch wrote none). So long is walked from the app's first event again.
	if err := s.DeleteBefore(ctx, app, time.Unix(0, day(3, 0))); err != nil {
		t.Fatal(err)
	}
	want[long] = []string{"Detail", "Home"}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var rows uint64
		if err := s.conn.QueryRow(ctx, "SELECT count() FROM session_starts WHERE app_id = toUUID(?)", app).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		got, _, _ := walks()
		if rows == 2 && slices.Equal(got[long], want[long]) { // recent's and bare's rows; the mutations are done
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after retention: %d start rows (want 2), long's walk %v", rows, got[long])
		}
	}
	check("after retention", 0, false)
}

// A batch writes one row per session it has the earliest event of, and none for a session
// whose earlier start the store wrote already.
func TestWriteStarts(t *testing.T) {
	s := migrated(t)
	ctx := ctxT(t)
	app := uuid.New()
	a, b := uuid.New(), uuid.New()
	ev := func(session uuid.UUID, ts int64) model.Event {
		return model.Event{ID: uuid.New(), AppID: app, SessionID: session, Type: "gesture_click", Timestamp: ts}
	}
	rows := func() map[uuid.UUID][]int64 {
		t.Helper()
		out := map[uuid.UUID][]int64{}
		var q query
		q.sql("SELECT session_id, first FROM session_starts WHERE app_id = toUUID(?) ORDER BY session_id, first", app)
		err := s.each(ctx, &q, func(scan func(...any) error) error {
			var id uuid.UUID
			var first int64
			if err := scan(&id, &first); err != nil {
				return err
			}
			out[id] = append(out[id], first)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		batch []model.Event
		want  map[uuid.UUID][]int64
	}{
		{"first batch: the earliest of each", []model.Event{ev(a, 30), ev(b, 50), ev(a, 10), ev(a, 20)},
			map[uuid.UUID][]int64{a: {10}, b: {50}}},
		{"later events only: no row", []model.Event{ev(a, 40), ev(b, 60)},
			map[uuid.UUID][]int64{a: {10}, b: {50}}},
		{"an earlier event of b: a row", []model.Event{ev(a, 15), ev(b, 5)},
			map[uuid.UUID][]int64{a: {10}, b: {5, 50}}},
	} {
		if err := s.WriteEvents(ctx, c.batch); err != nil {
			t.Fatal(err)
		}
		if got := rows(); len(got) != len(c.want) || !slices.Equal(got[a], c.want[a]) || !slices.Equal(got[b], c.want[b]) {
			t.Errorf("%s: rows %v, want %v", c.name, got, c.want)
		}
	}
}
