package clickhouse

// Journey rollups (migrations 00006 and 00007). A journey's facts at a time depend on every
// earlier walk event of the session, so a journey read from the events walks each session of the
// window from its start: 3.4 s for 7 days of 10M events. Instead, JourneyFacts keeps the facts of
// whole UTC hours summed in journey_hours, one build at a time, and reads those while they hold;
// it walks only the hours whose build no longer holds (and builds them again as it goes) and the
// parts of hours at the window's ends. Hours rather than days: a window that cuts a day, as the
// reference dashboard's default does (from 12:00 five days ago), walked up to a day of sessions
// at each end (0.3-0.7 s at 10M events), and now walks at most an hour.
//
// When a build holds. WriteEvents marks, after its insert, the earliest UTC day of each app's
// walk events in journey_dirty: those events can change the facts of that day and of every
// later one (the session walks on). Marks stay by the day, as 00006 wrote them, so that nodes of
// the release before share them during an upgrade; a mark of a day's start covers each of its
// hours. A build started at b holds for an hour H while no mark of H's day or an earlier one is
// at or after b - journeyMargin. A writer skips a mark when it wrote one for the app at that day
// or an earlier one less than journeyMarkEvery ago, so a busy app adds one small insert per
// journeyMarkEvery; the margin covers that skip and clocks of nodes up to 20 s apart.
// DeleteBefore marks every day (the deleted events change the facts after them), and no build is
// made by a query that finds a mutation of events pending: the rows it deletes may still be read.

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

const (
	dayNanos         = int64(24 * time.Hour)
	hourNanos        = int64(time.Hour)
	journeyMarkEvery = 10 * time.Second
	journeyMargin    = 30 * time.Second
	// Times are kept inside ±2^62 ns (years 1823 to 2116), so that hour and day arithmetic
	// never overflows; a window beyond them is walked there.
	timeLimit = int64(1) << 62
)

func clampTime(ts int64) int64 { return min(max(ts, -timeLimit), timeLimit) }

// floorDay is the start of ts's UTC day: what a journey mark says.
func floorDay(ts int64) int64 { return model.DayStart(clampTime(ts)) }

// floorHour is the start of ts's UTC hour, ceilHour the first hour start at or after ts: the
// bounds of what rollups hold.
func floorHour(ts int64) int64 {
	ts = clampTime(ts)
	r := ts % hourNanos
	if r < 0 {
		r += hourNanos
	}
	return ts - r
}

func ceilHour(ts int64) int64 {
	if h := floorHour(ts); h < ts {
		return h + hourNanos
	}
	return floorHour(ts)
}

// journeyMark is a mark of an app's days from day on, written at t.
type journeyMark struct {
	app uuid.UUID
	day int64
	t   time.Time
}

// recent says whether a mark written at t covers one at now: less than journeyMarkEvery
// before it by the monotonic clock, so that a wall clock stepped back skips no mark.
func recent(t, now time.Time) bool {
	d := now.Sub(t)
	return d >= 0 && d < journeyMarkEvery
}

// journeyMarks remembers the latest mark this store wrote per app.
type journeyMarks struct {
	mu   sync.Mutex
	last map[uuid.UUID]journeyMark
}

// rollupsOn says whether journey rollups are kept and read: only when events is a table of
// this server alone. With replicated or distributed events (deploy/README.md) the rollup tables
// and marks would live on one server while events are read from others, so a build could miss
// events its marks never reach; svc then walks the events for every store journey. The answer
// is asked of the server once.
func (s *Store) rollupsOn(ctx context.Context) (bool, error) {
	switch s.rollups.Load() {
	case rollupsYes:
		return true, nil
	case rollupsNo:
		return false, nil
	}
	var engine string
	if err := s.conn.QueryRow(ctx, "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = 'events'").Scan(&engine); err != nil {
		return false, fmt.Errorf("clickhouse: events table engine: %w", err)
	}
	on := rollupsFor(engine)
	v := int32(rollupsNo)
	if on {
		v = rollupsYes
	}
	s.rollups.Store(v)
	return on, nil
}

// rollupsFor says whether an events table of this engine is one server's alone.
func rollupsFor(engine string) bool {
	return !strings.HasPrefix(engine, "Replicated") && engine != "Distributed"
}

const (
	rollupsYes = 1
	rollupsNo  = 2
)

// markJourneys writes the marks of events just inserted (see above).
func (s *Store) markJourneys(ctx context.Context, events []model.Event) error {
	if on, err := s.rollupsOn(ctx); !on {
		return err
	}
	var marks []journeyMark // per app; a batch has one app or a few
	for i := range events {
		e := &events[i]
		if _, walk := model.WalkEventOf(e); !walk {
			continue
		}
		d := floorDay(e.Timestamp)
		j := slices.IndexFunc(marks, func(m journeyMark) bool { return m.app == e.AppID })
		switch {
		case j < 0:
			marks = append(marks, journeyMark{app: e.AppID, day: d})
		case d < marks[j].day:
			marks[j].day = d
		}
	}
	return s.writeMarks(ctx, marks, false)
}

// writeMarks writes marks (app and day) at the current time, leaving out those a recent mark
// covers unless forced.
func (s *Store) writeMarks(ctx context.Context, marks []journeyMark, force bool) error {
	if len(marks) == 0 {
		return nil
	}
	now := s.now()
	s.marks.mu.Lock()
	marks = slices.DeleteFunc(marks, func(m journeyMark) bool {
		l, ok := s.marks.last[m.app]
		return !force && ok && l.day <= m.day && recent(l.t, now)
	})
	s.marks.mu.Unlock()
	if len(marks) == 0 {
		return nil
	}
	apps, days, ats := make([]uuid.UUID, len(marks)), make([]int64, len(marks)), make([]uint64, len(marks))
	for i, m := range marks {
		apps[i], days[i], ats[i] = m.app, m.day, uint64(max(now.UnixNano(), 0))
	}
	err := s.insert(ctx, "journey_dirty", []col{{name: "app_id", values: apps}, {name: "day", values: days}, {name: "at", values: ats}})
	if err != nil {
		return fmt.Errorf("clickhouse: mark journey days: %w", err)
	}
	s.marks.mu.Lock()
	defer s.marks.mu.Unlock()
	if s.marks.last == nil {
		s.marks.last = map[uuid.UUID]journeyMark{}
	}
	for _, m := range marks {
		if l, ok := s.marks.last[m.app]; !ok || !recent(l.t, now) || m.day <= l.day {
			s.marks.last[m.app] = journeyMark{app: m.app, day: m.day, t: now}
		}
	}
	return nil
}

// buildTime is a new build's time: now, and later than this store's builds before it, so
// that two builds of one store never share a time (their rows are told apart by it).
func (s *Store) buildTime() int64 {
	for {
		last := s.lastBuilt.Load()
		t := max(s.now().UnixNano(), last+1)
		if s.lastBuilt.CompareAndSwap(last, t) {
			return t
		}
	}
}

// hourSpan is the whole hours [from, to), and the build that holds for them (0: none).
type hourSpan struct{ from, to, built int64 }

// journeyBuilds reads the app's builds, the rest of the query (conditions, order) after the app.
func (s *Store) journeyBuilds(ctx context.Context, app uuid.UUID, rest string, args ...any) ([]hourSpan, error) {
	var builds []hourSpan
	var q query
	q.sql("SELECT from_hour, to_hour, built FROM journey_hour_builds WHERE app_id = toUUID(?)", app)
	q.sql(rest, args...)
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var b hourSpan
		if err := scan(&b.from, &b.to, &b.built); err != nil {
			return err
		}
		builds = append(builds, b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("builds: %w", err)
	}
	return builds, nil
}

// planSpan is a span of a plan: a build holds for it (built set) or it is walked (built 0).
// A walked span is dead when a mark already ends the hold of a build made at the plan's time:
// writing one would only add rows to prune (today's hours, while the app sends events).
type planSpan struct {
	hourSpan
	dead bool
}

// journeyPlan splits the whole hours [h0, h1) into spans a build holds for and spans to walk,
// adjacent ones merged, for a build made at now. A mark of a day counts from the day's start,
// clamped to h0: from there on no build older than it holds.
func (s *Store) journeyPlan(ctx context.Context, app uuid.UUID, h0, h1, now int64) ([]planSpan, error) {
	builds, err := s.journeyBuilds(ctx, app, " AND from_hour < ? AND to_hour > ?", h1, h0)
	if err != nil {
		return nil, err
	}
	type mark struct {
		day int64
		at  uint64
	}
	var marks []mark
	var q query
	q.sql("SELECT day, max(at) FROM journey_dirty WHERE app_id = toUUID(?) AND day < ? GROUP BY day ORDER BY day", app, h1)
	err = s.each(ctx, &q, func(scan func(...any) error) error {
		var m mark
		if err := scan(&m.day, &m.at); err != nil {
			return err
		}
		marks = append(marks, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("marks: %w", err)
	}
	// Between two consecutive points the latest build and the latest mark stay the same.
	points := []int64{h0, h1}
	for _, b := range builds {
		points = append(points, min(max(b.from, h0), h1), min(max(b.to, h0), h1))
	}
	for _, m := range marks {
		points = append(points, min(max(m.day, h0), h1))
	}
	slices.Sort(points)
	points = slices.Compact(points)
	var spans []planSpan
	dirty, mi := int64(math.MinInt64), 0
	for i := 0; i+1 < len(points); i++ {
		d := points[i]
		for ; mi < len(marks) && marks[mi].day <= d; mi++ {
			dirty = max(dirty, int64(min(marks[mi].at, math.MaxInt64)))
		}
		var built int64
		for _, b := range builds {
			if b.from <= d && d < b.to {
				built = max(built, b.built)
			}
		}
		if built != 0 && dirty >= built-int64(journeyMargin) {
			built = 0
		}
		dead := built == 0 && dirty >= now-int64(journeyMargin)
		if n := len(spans); n > 0 && spans[n-1].built == built && spans[n-1].dead == dead {
			spans[n-1].to = points[i+1]
			continue
		}
		spans = append(spans, planSpan{hourSpan{d, points[i+1], built}, dead})
	}
	return spans, nil
}

// factKey is a fact without its time, in one UTC hour: what journey_hours sums.
type factKey struct {
	hour                             int64
	from, screen, group, title, name string
	code                             string
	class                            model.IssueClass
}

// factSum is the facts of a factKey: how many, the earliest and latest time.
type factSum struct{ n, first, last int64 }

// JourneyFacts passes the facts of the app's sessions in [from, to); see sinks.Analytics. Whole
// hours come from journey rollups while a build holds for them (summed per hour,
// model.JourneyFact's N); the rest is walked from the events, and the whole hours walked are
// built again.
func (s *Store) JourneyFacts(ctx context.Context, app uuid.UUID, from, to int64, fn func(f *model.JourneyFact) error) error {
	if from >= to {
		return nil
	}
	fail := func(err error) error { return fmt.Errorf("clickhouse: journey facts of app %s: %w", app, err) }
	on, err := s.rollupsOn(ctx)
	if err != nil {
		return fail(err)
	}
	if !on || floorHour(from) >= floorHour(to) {
		return s.walkFacts(ctx, app, from, to, fn)
	}
	built := s.buildTime() // before anything is read: a build holds for what it read
	h0, h1 := ceilHour(from), floorHour(to)
	lead := floorHour(from)
	if lead < from {
		h0 = lead // planned whole, and read whole when the check below allows
	}
	plan, err := s.journeyPlan(ctx, app, h0, h1, built)
	if err != nil {
		return fail(err)
	}
	// The window's first hour is read whole when it has no walk event before from: the
	// reference dashboard's windows start at 12:00:00.002, and walking the rest of that hour
	// costs a scan of every walk event before it (200 ms at 10M events). A fact is an event's,
	// so a build of the hour then holds none from before from. The check comes after the plan:
	// every build the plan read was written after its walk, so the check sees every event it
	// walked. Events written there after the check are marked; a walk of the hour may read them,
	// and their facts are left out of the answer below.
	start := from
	if lead < from {
		none, err := s.noWalkEvents(ctx, app, lead, from)
		if err != nil {
			return fail(err)
		}
		if none {
			start = lead
		} else {
			h0 = lead + hourNanos
			plan = planFrom(plan, h0)
		}
	}
	// What to walk: the spans no build holds for, with the parts of hours at either end.
	var walks [][2]int64
	add := func(a, b int64) {
		if a < b {
			walks = addSpan(walks, a, b)
		}
	}
	add(start, h0)
	var stale []hourSpan
	for _, sp := range plan {
		if sp.built == 0 {
			add(sp.from, sp.to)
			if !sp.dead {
				stale = append(stale, sp.hourSpan)
			}
		}
	}
	add(h1, to)
	// A mutation of the app's events pending now may complete under the walks, which would then read
	// rows it deletes: no build. One scheduled after this is followed by a later mark.
	build := len(stale) > 0
	if build {
		var pending uint64
		if err := s.conn.QueryRow(ctx, "SELECT count() FROM system.mutations WHERE database = currentDatabase()"+
			" AND table = 'events' AND is_done = 0 AND position(command, ?) > 0", app.String()).Scan(&pending); err != nil {
			return fail(fmt.Errorf("mutations: %w", err))
		}
		build = pending == 0
	}
	if err := s.rollupFacts(ctx, app, plan, fn); err != nil {
		return err
	}
	sums := map[factKey]*factSum{}
	inStale := func(ts int64) bool {
		for _, sp := range stale {
			if sp.from <= ts && ts < sp.to {
				return true
			}
		}
		return false
	}
	tally := func(f *model.JourneyFact) error {
		if inStale(f.Event.Timestamp) {
			e := &f.Event
			k := factKey{floorHour(e.Timestamp), f.From, e.Screen, e.GroupID, e.Title, e.Version.Name, e.Version.Code, e.Class}
			if c := sums[k]; c != nil {
				c.n++
				c.first, c.last = min(c.first, e.Timestamp), max(c.last, e.Timestamp)
			} else {
				sums[k] = &factSum{1, e.Timestamp, e.Timestamp}
			}
		}
		if f.Event.Timestamp < from { // in the hour start moved to, written since it was checked
			return nil
		}
		return fn(f)
	}
	for _, w := range walks {
		if err := s.walkFacts(ctx, app, w[0], w[1], tally); err != nil {
			return err
		}
	}
	if build {
		// The answer is complete; a build that fails to be written leaves its hours to be
		// walked by the next query, so its error is not the caller's.
		_ = s.writeBuild(ctx, app, built, stale, sums)
	}
	return nil
}

// planFrom is plan without its hours before t.
func planFrom(plan []planSpan, t int64) []planSpan {
	out := plan[:0]
	for _, sp := range plan {
		if sp.to > t {
			sp.from = max(sp.from, t)
			out = append(out, sp)
		}
	}
	return out
}

// noWalkEvents says whether the app has no walk event in [from, to).
func (s *Store) noWalkEvents(ctx context.Context, app uuid.UUID, from, to int64) (bool, error) {
	var q query
	q.sql("SELECT count() FROM (SELECT 1 FROM events WHERE app_id = toUUID(?)", app)
	timeWindow(&q, from, to)
	q.sql(" AND " + walkSQL + " LIMIT 1)")
	var n uint64
	if err := s.conn.QueryRow(ctx, q.String(), q.args...).Scan(&n); err != nil {
		return false, fmt.Errorf("walk events before the window: %w", err)
	}
	return n == 0, nil
}

// walkFacts is JourneyFacts by walking the sessions of [from, to), each up to to.
func (s *Store) walkFacts(ctx context.Context, app uuid.UUID, from, to int64, fn func(f *model.JourneyFact) error) error {
	walks := func(ctx context.Context, q *model.WalkQuery, fn func(uuid.UUID, []model.WalkEvent) error) error {
		return s.sessionWalks(ctx, q, to, fn)
	}
	return sinks.WalkJourneyFacts(ctx, walks, app, from, to, fn)
}

// rollupFacts passes the summed facts of the plan's spans that a build holds for, one per fact
// and UTC day: the server sums the hours of a day, so a week sends the ~1.3k rows of its days
// rather than the ~27k of its hours (BenchmarkBigJourneyFacts/7d, 58 ms p95 unsummed). A day's
// facts are what callers place by day (the app actor's rebuild), and first and last stay in it.
func (s *Store) rollupFacts(ctx context.Context, app uuid.UUID, plan []planSpan, fn func(f *model.JourneyFact) error) error {
	var q query
	q.sql("SELECT from_screen, screen, group_id, class, title, app_version, app_build, sum(n), min(first), max(last)"+
		" FROM journey_hours WHERE app_id = toUUID(?) AND n > 0 AND (", app)
	held := 0
	for _, sp := range plan {
		if sp.built == 0 {
			continue
		}
		if held++; held > 1 {
			q.sql(" OR ")
		}
		q.sql("(hour >= ? AND hour < ? AND built = ?)", sp.from, sp.to, sp.built)
	}
	if held == 0 {
		return nil
	}
	// The UTC day of an hour, floor division: intDiv truncates toward zero.
	q.sql(") GROUP BY from_screen, screen, group_id, class, title, app_version, app_build,"+
		" if(hour >= 0, intDiv(hour, toInt64(?)), intDiv(hour + 1, toInt64(?)) - 1)", dayNanos, dayNanos)
	var (
		f     model.JourneyFact
		class uint8
		fnErr error
	)
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		e := &f.Event
		if err := scan(&f.From, &e.Screen, &e.GroupID, &class, &e.Title, &e.Version.Name, &e.Version.Code, &f.N, &e.Timestamp, &f.Last); err != nil {
			return err
		}
		e.Class = model.IssueClass(class)
		fnErr = fn(&f)
		return fnErr
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return fmt.Errorf("clickhouse: journey facts of app %s: rollups: %w", app, err)
	}
	return nil
}

// writeBuild writes the build started at built of the stale spans: their summed facts, then
// the spans.
func (s *Store) writeBuild(ctx context.Context, app uuid.UUID, built int64, stale []hourSpan, sums map[factKey]*factSum) error {
	if len(sums) > 0 {
		n := len(sums)
		var (
			apps                                         = make([]uuid.UUID, n)
			hours, builts, firsts, lasts                 = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
			froms, screens, groups, titles, names, codes = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			classes                                      = make([]uint8, n)
			ns                                           = make([]uint64, n)
		)
		i := 0
		for k, c := range sums {
			apps[i], hours[i], builts[i] = app, k.hour, built
			froms[i], screens[i], groups[i], classes[i], titles[i] = k.from, k.screen, k.group, uint8(k.class), k.title
			names[i], codes[i], ns[i], firsts[i], lasts[i] = k.name, k.code, uint64(c.n), c.first, c.last
			i++
		}
		err := s.insert(ctx, "journey_hours", []col{
			{name: "app_id", values: apps}, {name: "hour", values: hours}, {name: "built", values: builts},
			{name: "from_screen", values: froms}, {name: "screen", values: screens}, {name: "group_id", values: groups},
			{name: "class", values: classes}, {name: "title", values: titles}, {name: "app_version", values: names},
			{name: "app_build", values: codes}, {name: "n", values: ns}, {name: "first", values: firsts}, {name: "last", values: lasts},
		})
		if err != nil {
			return fmt.Errorf("clickhouse: journey build of app %s: %w", app, err)
		}
	}
	n := len(stale)
	apps, froms, tos, builts := make([]uuid.UUID, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, sp := range stale {
		apps[i], froms[i], tos[i], builts[i] = app, sp.from, sp.to, built
	}
	err := s.insert(ctx, "journey_hour_builds", []col{{name: "app_id", values: apps}, {name: "from_hour", values: froms},
		{name: "to_hour", values: tos}, {name: "built", values: builts}})
	if err != nil {
		return fmt.Errorf("clickhouse: journey build of app %s: %w", app, err)
	}
	return nil
}

// pruneJourneyBuilds deletes the app's journey builds that newer ones cover hour for hour: the
// latest build of an hour is the one read, and an older one holds for no hour the newer one does
// not (a mark late enough to end the newer ends it too). Each query that walks whole hours
// writes a build, so without this they would pile up; retention (DeleteBefore) calls it. One
// mutation per table, and none when nothing is superseded.
func (s *Store) pruneJourneyBuilds(ctx context.Context, app uuid.UUID) error {
	fail := func(err error) error { return fmt.Errorf("clickhouse: prune journey builds of app %s: %w", app, err) }
	builds, err := s.journeyBuilds(ctx, app, " ORDER BY built DESC")
	if err != nil {
		return fail(err)
	}
	old := superseded(builds)
	if len(old) == 0 {
		return nil
	}
	var q query
	q.sql("built IN (")
	list(&q, old)
	q.sql(")")
	if err := s.deleteBuilds(ctx, app, q.String(), q.args...); err != nil {
		return fail(err)
	}
	return nil
}

// deleteBuilds deletes the app's journey builds (their spans and facts) that cond selects, one
// mutation per table.
func (s *Store) deleteBuilds(ctx context.Context, app uuid.UUID, cond string, args ...any) error {
	for _, table := range []string{"journey_hour_builds", "journey_hours"} {
		if err := s.conn.Exec(ctx, "ALTER TABLE "+table+" DELETE WHERE app_id = toUUID(?) AND "+cond, append([]any{app}, args...)...); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
	}
	return nil
}

// superseded returns the builds (by time) whose spans newer builds cover; builds is every span
// of the builds, newest build first. A build may have several spans (rows): it is superseded
// only when all of them are covered.
func superseded(builds []hourSpan) []int64 {
	var covered [][2]int64 // the hours newer builds cover, sorted, merged
	var old []int64
	for i := 0; i < len(builds); {
		j, all := i, true
		for ; j < len(builds) && builds[j].built == builds[i].built; j++ {
			b := builds[j]
			all = all && slices.ContainsFunc(covered, func(c [2]int64) bool { return c[0] <= b.from && b.to <= c[1] })
		}
		if all {
			old = append(old, builds[i].built)
		}
		for ; i < j; i++ {
			covered = addSpan(covered, builds[i].from, builds[i].to)
		}
	}
	return old
}

// addSpan adds [from, to) to sorted, merged spans.
func addSpan(spans [][2]int64, from, to int64) [][2]int64 {
	spans = append(spans, [2]int64{from, to})
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	out := spans[:1]
	for _, sp := range spans[1:] {
		if last := &out[len(out)-1]; sp[0] <= last[1] {
			last[1] = max(last[1], sp[1])
			continue
		}
		out = append(out, sp)
	}
	return out
}
