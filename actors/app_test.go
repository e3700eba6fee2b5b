package actors

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
)

// liveRig is an ingest path of actors over a real Badger event store: session actors, the
// app actor and a flusher writing to the store.
type liveRig struct {
	dir     *LocalDirectory
	in      *Ingest
	sys     *System
	store   *badgerevents.Store
	flusher func() error
}

func newLiveRig(t *testing.T, db *badger.DB) *liveRig { return newLiveRigIdle(t, db, time.Minute) }

// newLiveRigIdle is newLiveRig with session actors passivated after idle.
func newLiveRigIdle(t *testing.T, db *badger.DB, idle time.Duration) *liveRig {
	return newLiveRigWith(t, db, idle, func(store *badgerevents.Store) Producer { return AppProducer(store, quiet) })
}

// newLiveRigWith is newLiveRigIdle whose app actors come from app.
func newLiveRigWith(t *testing.T, db *badger.DB, idle time.Duration, app func(*badgerevents.Store) Producer) *liveRig {
	t.Helper()
	store := badgerevents.New(db)
	sys := NewSystem(quiet)
	snaps := badgerdb.Snapshots{DB: db}
	var dir *LocalDirectory
	dir = NewLocalDirectory(sys, map[Kind]Producer{
		KindApp:     app(store),
		KindSession: SessionProducer(func() Directory { return dir }, snaps, idle, quiet),
	})
	fl := sys.AS.Root.Spawn(NewFlusher(store, nopAcker{}, FlushOptions{MaxRows: 1 << 20, Interval: time.Hour},
		NewFlushMetrics(prometheus.NewRegistry()), quiet))
	r := &liveRig{dir: dir, sys: sys, store: store, in: &Ingest{Dir: dir, Root: sys.AS.Root, Flusher: fl}}
	r.flusher = func() error {
		res, err := sys.AS.Root.RequestFuture(fl, FlushNow{}, 10*time.Second).Result()
		if err != nil {
			return err
		}
		return res.(FlushNowReply).Err
	}
	t.Cleanup(func() { dir.StopAll(5 * time.Second); sys.Shutdown() })
	return r
}

type nopAcker struct{}

func (nopAcker) Ack(uint64, int) {}

// settle waits until every actor has handled what it was told: a state request to each session
// actor and then the app actor queues behind their earlier messages.
func (r *liveRig) settle(t *testing.T, app uuid.UUID, sessions []uuid.UUID) {
	t.Helper()
	drainActors(t, r.dir, app, sessions)
	if err := r.flusher(); err != nil {
		t.Fatal(err)
	}
}

const (
	jvmCrash = `{"handled":false,"foreground":true,"framework":"jvm","exceptions":[{"type":"java.lang.%s","message":"m%d","frames":[{"class_name":"a.B","method_name":"run","file_name":"B.kt","line_num":%d}]}]}`
	anrBody  = `{"handled":false,"foreground":true,"exceptions":[{"type":"sh.measure.ANR","message":"blocked","frames":[{"class_name":"android.os.MessageQueue","method_name":"nativePollOnce","file_name":"MessageQueue.java","line_num":-2}]}]}`
	screen   = `{"type":"resumed","class_name":"%s"}`
)

// liveDataset is three UTC days of sessions in two versions: screen walks, crashes of three
// groups, handled exceptions and ANRs.
func liveDataset(app uuid.UUID, day0 time.Time) (batches [][]model.Event, sessions []uuid.UUID) {
	versions := []model.AppVersion{{Name: "1.0", Code: "1"}, {Name: "2.0", Code: "2"}}
	screens := []string{"Home", "List", "Detail", "Home", "Settings", "List"}
	for s := 0; s < 12; s++ {
		sess := uuid.New()
		sessions = append(sessions, sess)
		v := versions[s%2]
		start := day0.Add(time.Duration(s%3)*24*time.Hour + time.Duration(s)*time.Hour)
		var batch []model.Event
		at := func(i int) int64 { return start.Add(time.Duration(i) * time.Minute).UnixNano() }
		add := func(typ string, i int, payload string) {
			e := model.Event{ID: uuid.New(), AppID: app, SessionID: sess, Type: typ, Timestamp: at(i), Payload: []byte(payload)}
			e.Attribute.AppVersion, e.Attribute.AppBuild = v.Name, v.Code
			batch = append(batch, e)
		}
		for i := 0; i < 2+s%5; i++ {
			add("lifecycle_activity", i, fmt.Sprintf(screen, screens[(i+s)%len(screens)]))
		}
		add("exception", 10, fmt.Sprintf(jvmCrash, []string{"IllegalState", "NullPointer", "Arithmetic"}[s%3], s, s))
		if s%4 == 0 {
			add("anr", 11, anrBody)
		}
		if s%3 == 1 {
			add("exception", 12, `{"handled":true,"severity":"error","framework":"jvm","exceptions":[{"type":"java.io.IOException","frames":[{"class_name":"x.Y","method_name":"read","file_name":"Y.kt","line_num":1}]}]}`)
		}
		// Two batches per session: the journey continues across them; every third session's
		// arrive out of time order (an SDK retrying the first after sending the second).
		first, second := batch[:len(batch)/2], batch[len(batch)/2:]
		if s%3 == 2 {
			first, second = second, first
		}
		batches = append(batches, first, second)
	}
	return batches, sessions
}

func liveCells(t *testing.T, dir Directory, app uuid.UUID, q *actorpb.LiveQuery) ([]model.IssueCell, bool) {
	t.Helper()
	r, err := Live{Dir: dir}.Query(context.Background(), app, q)
	if err != nil {
		t.Fatal(err)
	}
	return CellsOf(r.Cells), r.Ok
}

func liveJourney(t *testing.T, dir Directory, app uuid.UUID, from, to int64) (model.JourneyJSON, bool) {
	t.Helper()
	r, err := Live{Dir: dir}.Query(context.Background(), app, &actorpb.LiveQuery{From: from, To: to, Journey: true})
	if err != nil {
		t.Fatal(err)
	}
	j, err := JourneyAnswer(r, true)
	if err != nil {
		t.Fatal(err)
	}
	return j, r.Ok
}

func storeJourney(t *testing.T, s *badgerevents.Store, app uuid.UUID, from, to int64) model.JourneyJSON {
	t.Helper()
	g := model.NewJourneyGraph()
	keep := model.KeepWalkEvent(from, to, nil)
	err := s.SessionWalks(context.Background(), &model.WalkQuery{App: app, From: from, To: to}, func(_ uuid.UUID, evs []model.WalkEvent) error {
		g.AddSessionWalk(evs, keep, "")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return g.Graph(true)
}

// liveRigWithDataset is a rig over a fresh Badger database whose app app has liveDataset from
// day0 (three days ago, UTC midnight) distributed and settled.
func liveRigWithDataset(t *testing.T) (rig *liveRig, app uuid.UUID, day0 time.Time, batches [][]model.Event, sessions []uuid.UUID) {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rig = newLiveRig(t, db)
	app = uuid.New()
	day0 = time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)
	batches, sessions = liveDataset(app, day0)
	for i, b := range batches {
		rig.in.Distribute(app, b, nil, uint64(i+1), 0, false)
	}
	rig.settle(t, app, sessions)
	return rig, app, day0, batches, sessions
}

// TestLiveAnswersMatchStore: the app actor's group lists and journeys over whole days equal
// the store's, before and after a rebuild, and replayed batches never count twice.
func TestLiveAnswersMatchStore(t *testing.T) {
	rig, app, day0, batches, sessions := liveRigWithDataset(t)

	day := 24 * time.Hour
	windows := []struct {
		name     string
		from, to time.Time
	}{
		{"all days", day0, day0.Add(3 * day)},
		{"middle day", day0.Add(day), day0.Add(2 * day)},
		{"first two days", day0, day0.Add(2 * day)},
		{"beyond the data", day0.Add(-time.Hour), day0.Add(10 * day).Add(time.Minute)},
	}
	check := func(t *testing.T, stage string) {
		for _, w := range windows {
			from, to := w.from.UnixNano(), w.to.UnixNano()
			for _, classes := range [][]model.IssueClass{nil, {model.ClassCrash}, {model.ClassANR}, {model.ClassHandled, model.ClassCrash}} {
				lq := &actorpb.LiveQuery{From: from, To: to}
				for _, c := range classes {
					lq.Classes = append(lq.Classes, uint32(c))
				}
				live, ok := liveCells(t, rig.dir, app, lq)
				if !ok {
					t.Fatalf("%s, %s: no live answer", stage, w.name)
				}
				stored, err := rig.store.IssueCells(context.Background(), &model.IssueQuery{
					EventFilter: model.EventFilter{App: app, From: from, To: to}, Classes: classes}, model.Cells{})
				if err != nil {
					t.Fatal(err)
				}
				lg, sg := model.MergeGroups(live), model.MergeGroups(stored)
				if len(sg) == 0 && w.name == "all days" {
					t.Fatal("the dataset has no groups")
				}
				if !reflect.DeepEqual(lg, sg) {
					t.Errorf("%s, %s, classes %v:\nlive  %+v\nstore %+v", stage, w.name, classes, lg, sg)
				}
			}
			lj, ok := liveJourney(t, rig.dir, app, from, to)
			sj := storeJourney(t, rig.store, app, from, to)
			if !ok || !reflect.DeepEqual(lj, sj) {
				t.Errorf("%s, %s journey (live %v):\nlive  %+v\nstore %+v", stage, w.name, ok, lj, sj)
			}
			if w.name == "all days" && len(sj.Links) == 0 {
				t.Fatal("the dataset has no journey links")
			}
		}
	}
	check(t, "live")

	// Windows the day cells cannot answer exactly are refused.
	if _, ok := liveCells(t, rig.dir, app, &actorpb.LiveQuery{From: day0.Add(time.Hour).UnixNano(), To: day0.Add(48 * time.Hour).UnixNano()}); ok {
		t.Error("a window starting inside the data at 01:00 was answered live")
	}

	// Replayed batches (start-up) are counted by the rebuild, never by the actor.
	for i, b := range batches {
		rig.in.Distribute(app, b, nil, uint64(i+100), 0, true)
	}
	rig.settle(t, app, sessions)
	check(t, "after replay")

	// The sessions go on after the replay: their moves count once.
	var more [][]model.Event
	for _, sess := range sessions {
		var b []model.Event
		for i, name := range []string{"Settings", "Home", "Detail"} {
			e := model.Event{ID: uuid.New(), AppID: app, SessionID: sess, Type: "lifecycle_activity",
				Timestamp: day0.Add(2*day + 23*time.Hour + time.Duration(i)*time.Minute).UnixNano(), Payload: []byte(fmt.Sprintf(screen, name))}
			e.Attribute.AppVersion, e.Attribute.AppBuild = "2.0", "2"
			b = append(b, e)
		}
		more = append(more, b)
	}
	for i, b := range more {
		rig.in.Distribute(app, b, nil, uint64(i+200), 0, false)
	}
	rig.settle(t, app, sessions)
	check(t, "sessions going on")

	r, err := rig.dir.Request(context.Background(), KindApp, app.String(), &actorpb.Rebuild{Ready: true})
	if err != nil || r.(*actorpb.RebuildReply).Error != "" {
		t.Fatalf("rebuild: %v %v", err, r)
	}
	check(t, "after rebuild")

	// An unready actor (the store may miss replayed rows) answers nothing live.
	if _, err := rig.dir.Request(context.Background(), KindApp, app.String(), &actorpb.Rebuild{Ready: false}); err != nil {
		t.Fatal(err)
	}
	if _, ok := liveCells(t, rig.dir, app, &actorpb.LiveQuery{From: day0.UnixNano(), To: day0.Add(day).UnixNano()}); ok {
		t.Error("an unready actor answered live")
	}
}

// TestLiveSplit: with split, a window whose bounds cut days the actor holds events of is answered
// for its whole days (LiveReply.from and to say which), exactly as the store answers those; a
// window with no whole day left is refused, and without split every such window is.
func TestLiveSplit(t *testing.T) {
	rig, app, day0, _, _ := liveRigWithDataset(t) // events from day0 00:00 to day 2 about 12:00

	d := func(days int, h time.Duration) int64 {
		return day0.Add(time.Duration(days)*24*time.Hour + h).UnixNano()
	}
	cases := []struct {
		name             string
		from, to         int64
		wantFrom, wantTo int64 // the part answered; both 0: refused
		whole            bool  // answered without split too
	}{
		{"whole days", d(0, 0), d(3, 0), d(0, 0), d(3, 0), true},
		{"from cuts day 0", d(0, time.Hour), d(3, 0), d(1, 0), d(3, 0), false},
		{"to cuts day 2", d(0, 0), d(2, 5*time.Hour), d(0, 0), d(2, 0), false},
		{"both cut", d(0, time.Hour+time.Millisecond), d(2, 5*time.Hour), d(1, 0), d(2, 0), false},
		{"bounds beyond the data", d(0, -time.Hour), d(10, time.Minute), d(0, -time.Hour), d(10, time.Minute), true},
		{"from cuts, to beyond the data", d(0, 7*time.Hour), d(10, time.Minute), d(1, 0), d(10, time.Minute), false},
		{"inside one day", d(1, 2*time.Hour), d(1, 5*time.Hour), 0, 0, false},
		// Day 1's events lie in [01:00, 10:12], day 2's in [02:00, 11:12].
		{"bounds cut no event of their days", d(1, 30*time.Minute), d(2, 20*time.Hour), d(1, 30*time.Minute), d(2, 20*time.Hour), true},
		{"from cuts day 1, to cuts none", d(1, 2*time.Hour), d(2, 20*time.Hour), d(2, 0), d(2, 20*time.Hour), false},
		{"cuts two adjacent days", d(0, 23*time.Hour), d(1, time.Hour), 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, journey := range []bool{false, true} {
				if _, ok := liveCells(t, rig.dir, app, &actorpb.LiveQuery{From: c.from, To: c.to, Journey: journey}); ok != c.whole {
					t.Errorf("journey %v without split: answered %v, want %v", journey, ok, c.whole)
				}
				r, err := Live{Dir: rig.dir}.Query(context.Background(), app, &actorpb.LiveQuery{From: c.from, To: c.to, Journey: journey, Split: true})
				if err != nil {
					t.Fatal(err)
				}
				if want := c.wantTo != 0; r.Ok != want {
					t.Fatalf("journey %v: answered %v (%s), want %v", journey, r.Ok, r.Reason, want)
				}
				if !r.Ok {
					continue
				}
				if r.From != c.wantFrom || r.To != c.wantTo {
					t.Errorf("journey %v: answered [%d, %d), want [%d, %d)", journey, r.From, r.To, c.wantFrom, c.wantTo)
				}
				if journey {
					lj, err := JourneyAnswer(r, true)
					if err != nil {
						t.Fatal(err)
					}
					if sj := storeJourney(t, rig.store, app, r.From, r.To); !reflect.DeepEqual(lj, sj) {
						t.Errorf("journey over [%d, %d):\nlive  %+v\nstore %+v", r.From, r.To, lj, sj)
					}
					continue
				}
				stored, err := rig.store.IssueCells(context.Background(), &model.IssueQuery{
					EventFilter: model.EventFilter{App: app, From: r.From, To: r.To}}, model.Cells{})
				if err != nil {
					t.Fatal(err)
				}
				if lg, sg := model.MergeGroups(CellsOf(r.Cells)), model.MergeGroups(stored); !reflect.DeepEqual(lg, sg) {
					t.Errorf("groups over [%d, %d):\nlive  %+v\nstore %+v", r.From, r.To, lg, sg)
				}
			}
		})
	}
}

// An event sent again in another batch (an SDK retry under a new request id) counts once in
// the live aggregates, as in the store: with the session actor live, after it was passivated,
// and after its state came back from a snapshot into a new actor system (a restart).
func TestResentEventsCountOnce(t *testing.T) {
	db, err := badgerdb.Open(t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	app := uuid.New()
	day0 := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)
	batches, sessions := liveDataset(app, day0)
	var all []model.Event
	for _, b := range batches {
		all = append(all, b...)
	}
	// resend tells every event again, cut into batches of n across sessions, as copies (a
	// new request decodes new rows).
	resend := func(rig *liveRig, n int, seq uint64) {
		for i := 0; i < len(all); i += n {
			b := slices.Clone(all[i:min(i+n, len(all))])
			rig.in.Distribute(app, b, nil, seq, 0, false)
			seq++
		}
		rig.settle(t, app, sessions)
	}
	check := func(t *testing.T, rig *liveRig, stage string) {
		t.Helper()
		from, to := day0.UnixNano(), day0.Add(72*time.Hour).UnixNano()
		live, ok := liveCells(t, rig.dir, app, &actorpb.LiveQuery{From: from, To: to})
		stored, err := rig.store.IssueCells(context.Background(), &model.IssueQuery{EventFilter: model.EventFilter{App: app, From: from, To: to}}, model.Cells{})
		if err != nil || !ok {
			t.Fatalf("%s: live %v, store %v", stage, ok, err)
		}
		if lg, sg := model.MergeGroups(live), model.MergeGroups(stored); !reflect.DeepEqual(lg, sg) || len(sg) == 0 {
			t.Errorf("%s: group lists differ:\nlive  %+v\nstore %+v", stage, lg, sg)
		}
		lj, _ := liveJourney(t, rig.dir, app, from, to)
		if sj := storeJourney(t, rig.store, app, from, to); !reflect.DeepEqual(lj, sj) {
			t.Errorf("%s: journeys differ:\nlive  %+v\nstore %+v", stage, lj, sj)
		}
	}

	const idle = 300 * time.Millisecond
	passivated := func(rig *liveRig) {
		deadline := time.Now().Add(10 * time.Second)
		for rig.dir.Count(KindSession) > 0 {
			if time.Now().After(deadline) {
				t.Fatal("session actors not passivated")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	rig := newLiveRigIdle(t, db, idle)
	for i, b := range batches {
		rig.in.Distribute(app, b, nil, uint64(i+1), 0, false)
	}
	rig.settle(t, app, sessions)
	check(t, rig, "sent once")
	resend(rig, 7, 100)
	check(t, rig, "sent again")

	// Passivated: the session actors saved their state and start again from it.
	passivated(rig)
	resend(rig, 3, 200)
	check(t, rig, "sent again after passivation")

	// Restarted: the actors stopped (sessions saved), a new actor system on the same Badger,
	// the app actor rebuilt from the store.
	rig.dir.StopAll(5 * time.Second)
	rig = newLiveRigIdle(t, db, idle)
	if r, err := rig.dir.Request(context.Background(), KindApp, app.String(), &actorpb.Rebuild{Ready: true}); err != nil || r.(*actorpb.RebuildReply).Error != "" {
		t.Fatalf("rebuild: %v %v", err, r)
	}
	resend(rig, len(all), 300)
	check(t, rig, "sent again after a restart")
}

// A session remembers the ids of its issue events in order, each once, up to maxIssueIDs;
// beyond that a new id counts (unremembered) rather than being taken for one seen before.
func TestFirstIssue(t *testing.T) {
	a := &sessionActor{}
	rng := rand.New(rand.NewPCG(3, 4))
	var ids [][]byte
	for i := 0; i < maxIssueIDs; i++ {
		id := make([]byte, 16)
		for j := range id {
			id[j] = byte(rng.IntN(4)) // shared prefixes: the order needs every byte
		}
		if slices.ContainsFunc(ids, func(x []byte) bool { return bytes.Equal(x, id) }) {
			i--
			continue
		}
		ids = append(ids, id)
		if !a.firstIssue(id) {
			t.Fatalf("id %d taken for one seen before", i)
		}
	}
	for i, id := range ids {
		if a.firstIssue(id) {
			t.Fatalf("id %d seen again counts", i)
		}
	}
	n := len(a.st.IssueIds)
	if n != 16*maxIssueIDs {
		t.Fatalf("%d bytes of ids, want %d", n, 16*maxIssueIDs)
	}
	for k := 16; k < n; k += 16 {
		if bytes.Compare(a.st.IssueIds[k-16:k], a.st.IssueIds[k:k+16]) >= 0 {
			t.Fatalf("ids out of order at %d", k/16)
		}
	}
	extra := bytes.Repeat([]byte{9}, 16)
	if !a.firstIssue(extra) || !a.firstIssue(extra) || len(a.st.IssueIds) != n {
		t.Fatal("past the bound a new id must count and not be remembered")
	}
	if !a.firstIssue(nil) {
		t.Fatal("an event without id counts")
	}
}
