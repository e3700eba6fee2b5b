package eventstest

import (
	"bytes"
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// Reference answers every method of sinks.Analytics by brute force over the rows a store holds,
// the way the contract words it, with the model's Go definitions (IssueQuery.MatchIssue,
// EventFilter.Match, ClassOf, Buckets.Start, EventKey.Before, MetricsInput.AddSession, IsSample)
// and nothing of any backend's code. It is the one reference of the contract: RunAnalytics
// checks every backend against it on the suite's dataset, and a backend's own tests check
// theirs against it on data aimed at that backend's risks (scan bounds, replays, retention).
//
// Ties are settled as the contract settles them, never by the order rows were written: events
// of one timestamp are ordered by event id, bytes compared (the instance order, walks, paths).
//
// Where the contract leaves the order of a result open, the reference sorts it (SortCells,
// SortBuckets), so a store's answer sorted alike compares with reflect.DeepEqual. Empty
// results are empty, not nil, as both stores answer; FilterValues' empty lists are nil
// (NormFilterValues maps a store's answer alike).
type Reference struct {
	rows []model.Event
}

// NewReference is the reference over the rows written to a store, in any order. A row written
// more than once (the same app and event id, a replay) is held once, as the store holds it; its
// copies must be equal (NewReference panics otherwise: the test's data would be ambiguous).
func NewReference(rows []model.Event) *Reference {
	type key struct{ app, id uuid.UUID }
	at := make(map[key]int, len(rows))
	r := &Reference{rows: make([]model.Event, 0, len(rows))}
	for i := range rows {
		k := key{rows[i].AppID, rows[i].ID}
		if j, ok := at[k]; ok {
			if !reflect.DeepEqual(normEvent(r.rows[j]), normEvent(rows[i])) {
				panic(fmt.Sprintf("eventstest: event %s of app %s written twice with different fields", k.id, k.app))
			}
			continue
		}
		at[k] = len(r.rows)
		r.rows = append(r.rows, rows[i])
	}
	return r
}

// Rows are the rows the reference holds, each once, in the order first written.
func (r *Reference) Rows() []model.Event { return r.rows }

func bucketOf(ts int64, by model.Buckets) int64 {
	return by.Start(time.Unix(0, ts)).UnixNano()
}

func versionOf(e *model.Event) model.AppVersion {
	return model.AppVersion{Name: e.Attribute.AppVersion, Code: e.Attribute.AppBuild}
}

// after says whether (t, id) comes after (t0, id0): later, or as late with a greater id.
func after(t int64, id uuid.UUID, t0 int64, id0 uuid.UUID) bool {
	return t > t0 || t == t0 && bytes.Compare(id[:], id0[:]) > 0
}

// newer is the instance order: a comes before b (timestamp descending, then id descending).
func newer(a, b *model.Event) bool { return after(a.Timestamp, a.ID, b.Timestamp, b.ID) }

// timeOrder compares events by timestamp, then id, ascending (the reverse of the instance order).
func timeOrder(a, b *model.Event) int {
	return cmpAll(cmp.Compare(a.Timestamp, b.Timestamp), bytes.Compare(a.ID[:], b.ID[:]))
}

// IssueCells is sinks.Analytics.IssueCells: per (group, class, version, bucket) of the issue
// events matching q, their count, the earliest timestamp and the latest event with its display.
// Sorted by SortCells.
func (r *Reference) IssueCells(q *model.IssueQuery, by model.Cells) []model.IssueCell {
	type key struct {
		group  string
		class  model.IssueClass
		v      model.AppVersion
		bucket int64
	}
	at := map[key]int{}
	out := []model.IssueCell{}
	for i := range r.rows {
		e := &r.rows[i]
		if e.AppID != q.App || !q.MatchIssue(e) {
			continue
		}
		k := key{e.Facts.GroupID, model.ClassOf(e.Type, &e.Facts), versionOf(e), 0}
		if by.Bucketed {
			k.bucket = bucketOf(e.Timestamp, by.By)
		}
		j, ok := at[k]
		if !ok {
			j = len(out)
			at[k] = j
			out = append(out, model.IssueCell{GroupID: k.group, Class: k.class, Version: k.v, Bucket: k.bucket,
				FirstTime: e.Timestamp, LastTime: e.Timestamp, LastID: e.ID, Last: e.Facts.Issue})
		}
		c := &out[j]
		c.Count++
		c.FirstTime = min(c.FirstTime, e.Timestamp)
		if after(e.Timestamp, e.ID, c.LastTime, c.LastID) {
			c.LastTime, c.LastID, c.Last = e.Timestamp, e.ID, e.Facts.Issue
		}
	}
	return SortCells(out)
}

// SortCells sorts cells by group, class, version name, version code and bucket, the order of
// Reference.IssueCells, and returns them.
func SortCells(cs []model.IssueCell) []model.IssueCell {
	slices.SortFunc(cs, func(a, b model.IssueCell) int {
		return cmpAll(strings.Compare(a.GroupID, b.GroupID), int(a.Class)-int(b.Class),
			strings.Compare(a.Version.Name, b.Version.Name), strings.Compare(a.Version.Code, b.Version.Code),
			cmp.Compare(a.Bucket, b.Bucket))
	})
	return cs
}

func cmpAll(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}

// IssueList is every issue event matching q in the instance order (timestamp descending, then
// id descending): the list IssueEvents pages through.
func (r *Reference) IssueList(q *model.IssueQuery) []model.Event {
	out := []model.Event{}
	for i := range r.rows {
		if r.rows[i].AppID == q.App && q.MatchIssue(&r.rows[i]) {
			out = append(out, r.rows[i])
		}
	}
	slices.SortFunc(out, func(a, b model.Event) int { return timeOrder(&b, &a) })
	return out
}

// IssueEvents is sinks.Analytics.IssueEvents for page.Limit ≥ 1 (Backward without Key is the
// first page).
func (r *Reference) IssueEvents(q *model.IssueQuery, page model.EventPage) []model.Event {
	return PageOf(r.IssueList(q), page)
}

// PageOf cuts the page of model.EventPage out of list, which is in the instance order.
func PageOf(list []model.Event, p model.EventPage) []model.Event {
	out := []model.Event{}
	switch {
	case p.Key == nil:
		return append(out, list[:min(p.Limit, len(list))]...)
	case !p.Backward:
		for i := range list {
			if p.Key.Before(list[i].Timestamp, list[i].ID) && len(out) < p.Limit {
				out = append(out, list[i])
			}
		}
		return out
	}
	for i := range list {
		e := &list[i]
		if !p.Key.Before(e.Timestamp, e.ID) && !(e.Timestamp == p.Key.Timestamp && e.ID == p.Key.ID) {
			out = append(out, *e)
		}
	}
	return out[max(0, len(out)-p.Limit):]
}

// SessionBuckets is sinks.Analytics.SessionBuckets, sorted by SortBuckets.
func (r *Reference) SessionBuckets(f *model.EventFilter, by model.Buckets) []model.SessionBucket {
	type key struct {
		v      model.AppVersion
		bucket int64
	}
	type sets struct{ all, crashed, anr map[uuid.UUID]bool }
	m := map[key]*sets{}
	for i := range r.rows {
		e := &r.rows[i]
		if e.AppID != f.App || !f.Match(e) {
			continue
		}
		k := key{versionOf(e), bucketOf(e.Timestamp, by)}
		s := m[k]
		if s == nil {
			s = &sets{map[uuid.UUID]bool{}, map[uuid.UUID]bool{}, map[uuid.UUID]bool{}}
			m[k] = s
		}
		s.all[e.SessionID] = true
		if e.Type == "exception" && e.Facts.Fatal {
			s.crashed[e.SessionID] = true
		}
		if e.Type == "anr" {
			s.anr[e.SessionID] = true
		}
	}
	out := make([]model.SessionBucket, 0, len(m))
	for k, s := range m {
		out = append(out, model.SessionBucket{Version: k.v, Bucket: k.bucket,
			Sessions: uint64(len(s.all)), Crashed: uint64(len(s.crashed)), WithANR: uint64(len(s.anr))})
	}
	return SortBuckets(out)
}

// SortBuckets sorts buckets by version name, version code and bucket, the order of
// Reference.SessionBuckets, and returns them.
func SortBuckets(bs []model.SessionBucket) []model.SessionBucket {
	slices.SortFunc(bs, func(a, b model.SessionBucket) int {
		return cmpAll(strings.Compare(a.Version.Name, b.Version.Name), strings.Compare(a.Version.Code, b.Version.Code),
			cmp.Compare(a.Bucket, b.Bucket))
	})
	return bs
}

// Metrics is sinks.Analytics.Metrics: each session of [from, to) with the facts of each
// version its events there carry, counted by MetricsInput.AddSession (sessions in the order of
// their first row), and the launch summaries per side.
func (r *Reference) Metrics(app uuid.UUID, from, to int64, sel *model.AppVersion) model.MetricsInput {
	// With no selected version every version is selected: all of them count as one.
	all := model.AppVersion{Name: "\x00every version", Code: "\x00"}
	selected := all
	if sel != nil {
		selected = *sel
	}
	type sessionFacts struct {
		order []model.AppVersion
		by    map[model.AppVersion]*model.SessionVersionFacts
	}
	sessions := map[uuid.UUID]*sessionFacts{}
	var sessionOrder []uuid.UUID
	var selMs, othMs [3][]float64
	kinds := map[string]int{model.LaunchCold: 0, model.LaunchWarm: 1, model.LaunchHot: 2}
	for i := range r.rows {
		e := &r.rows[i]
		if e.AppID != app || e.Timestamp < from || e.Timestamp >= to {
			continue
		}
		v := versionOf(e)
		if sel == nil {
			v = all
		}
		s := sessions[e.SessionID]
		if s == nil {
			s = &sessionFacts{by: map[model.AppVersion]*model.SessionVersionFacts{}}
			sessions[e.SessionID] = s
			sessionOrder = append(sessionOrder, e.SessionID)
		}
		f := s.by[v]
		if f == nil {
			f = &model.SessionVersionFacts{Version: v}
			s.by[v] = f
			s.order = append(s.order, v)
		}
		if e.Type == "exception" && e.Facts.Fatal {
			f.Crashed = true
			f.CrashedForeground = f.CrashedForeground || e.Facts.Foreground
		}
		if e.Type == "anr" {
			f.ANR = true
			f.ANRForeground = f.ANRForeground || e.Facts.Foreground
		}
		if k, ok := kinds[e.Facts.LaunchKind]; ok {
			if v == selected {
				selMs[k] = append(selMs[k], e.Facts.LaunchMs)
			} else {
				othMs[k] = append(othMs[k], e.Facts.LaunchMs)
			}
		}
	}
	var in model.MetricsInput
	for _, id := range sessionOrder {
		s := sessions[id]
		facts := make([]model.SessionVersionFacts, len(s.order))
		for i, v := range s.order {
			facts[i] = *s.by[v]
		}
		in.AddSession(facts, selected)
	}
	in.SelectedLaunch = model.Launches{Cold: model.SummarizeLaunches(selMs[0]), Warm: model.SummarizeLaunches(selMs[1]), Hot: model.SummarizeLaunches(selMs[2])}
	in.OthersLaunch = model.Launches{Cold: model.SummarizeLaunches(othMs[0]), Warm: model.SummarizeLaunches(othMs[1]), Hot: model.SummarizeLaunches(othMs[2])}
	return in
}

// FilterValues is sinks.Analytics.FilterValues, its empty lists nil.
func (r *Reference) FilterValues(app uuid.UUID, classes []model.IssueClass) model.FilterValues {
	first := map[model.AppVersion]int64{}
	osv := map[model.OSVersion]bool{}
	sets := make([]map[string]bool, 6)
	for i := range sets {
		sets[i] = map[string]bool{}
	}
	ud := map[model.UDKey]bool{}
	for i := range r.rows {
		e := &r.rows[i]
		if e.AppID != app || len(classes) > 0 && !slices.Contains(classes, model.ClassOf(e.Type, &e.Facts)) {
			continue
		}
		if v := versionOf(e); v != (model.AppVersion{}) {
			if t, ok := first[v]; !ok || e.Timestamp < t {
				first[v] = e.Timestamp
			}
		}
		a := &e.Attribute
		if a.OSName != "" || a.OSVersion != "" {
			osv[model.OSVersion{Name: a.OSName, Version: a.OSVersion}] = true
		}
		for i, s := range []string{a.DeviceName, a.DeviceManufacturer, a.DeviceLocale, a.NetworkProvider, a.NetworkType, a.NetworkGeneration} {
			if s != "" {
				sets[i][s] = true
			}
		}
		for _, u := range e.UserDefined {
			ud[model.UDKey{Key: u.Key, Type: u.Type.String()}] = true
		}
	}
	var fv model.FilterValues
	for v := range first {
		fv.Versions = append(fv.Versions, v)
	}
	// Newest first by first seen; versions first seen at one time by name, then code,
	// descending.
	slices.SortFunc(fv.Versions, func(a, b model.AppVersion) int {
		return cmpAll(cmp.Compare(first[b], first[a]), strings.Compare(b.Name, a.Name), strings.Compare(b.Code, a.Code))
	})
	for o := range osv {
		fv.OSVersions = append(fv.OSVersions, o)
	}
	slices.SortFunc(fv.OSVersions, func(a, b model.OSVersion) int {
		return cmpAll(strings.Compare(a.Name, b.Name), strings.Compare(a.Version, b.Version))
	})
	lists := []*[]string{&fv.DeviceNames, &fv.DeviceManufacturers, &fv.Locales, &fv.NetworkProviders, &fv.NetworkTypes, &fv.NetworkGenerations}
	for i, set := range sets {
		for s := range set {
			*lists[i] = append(*lists[i], s)
		}
		slices.Sort(*lists[i])
	}
	for k := range ud {
		fv.UDKeys = append(fv.UDKeys, k)
	}
	slices.SortFunc(fv.UDKeys, func(a, b model.UDKey) int {
		return cmpAll(strings.Compare(a.Key, b.Key), strings.Compare(a.Type, b.Type))
	})
	return NormFilterValues(fv)
}

// NormFilterValues maps empty lists to nil: no value is no value, whichever a store returns.
func NormFilterValues(fv model.FilterValues) model.FilterValues {
	if len(fv.Versions) == 0 {
		fv.Versions = nil
	}
	if len(fv.OSVersions) == 0 {
		fv.OSVersions = nil
	}
	for _, l := range []*[]string{&fv.DeviceNames, &fv.DeviceManufacturers, &fv.Locales, &fv.NetworkProviders, &fv.NetworkTypes, &fv.NetworkGenerations} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	if len(fv.UDKeys) == 0 {
		fv.UDKeys = nil
	}
	return fv
}

// walkEventOf is the walk event of e, if it is one: a screen event, or a crash or ANR with a
// group (handled exceptions never walk).
func walkEventOf(e *model.Event) (model.WalkEvent, bool) {
	w := model.WalkEvent{Timestamp: e.Timestamp, Version: versionOf(e)}
	if e.Facts.Screen != "" {
		w.Screen = e.Facts.Screen
		return w, true
	}
	switch c := model.ClassOf(e.Type, &e.Facts); c {
	case model.ClassCrash, model.ClassANR:
		w.GroupID, w.Class, w.Title = e.Facts.GroupID, c, e.Facts.Issue.Title()
		return w, true
	}
	return w, false
}

// SessionWalks is sinks.Analytics.SessionWalks as a map: every session q selects (by a walk
// event in the window, or with GroupID by an issue event of that group and class in it) with
// all of its walk events, at any time, ascending by timestamp, then id; a selected session
// without walk events (selected by a handled exception) has an empty list.
func (r *Reference) SessionWalks(q *model.WalkQuery) map[uuid.UUID][]model.WalkEvent {
	out := map[uuid.UUID][]model.WalkEvent{}
	for i := range r.rows {
		e := &r.rows[i]
		if e.AppID != q.App || e.Timestamp < q.From || e.Timestamp >= q.To {
			continue
		}
		if q.GroupID != "" {
			if model.ClassOf(e.Type, &e.Facts) == q.Class && e.Facts.GroupID == q.GroupID {
				out[e.SessionID] = []model.WalkEvent{}
			}
			continue
		}
		if _, ok := walkEventOf(e); ok {
			out[e.SessionID] = []model.WalkEvent{}
		}
	}
	var walk []*model.Event
	for i := range r.rows {
		e := &r.rows[i]
		if _, ok := out[e.SessionID]; ok && e.AppID == q.App {
			if _, ok := walkEventOf(e); ok {
				walk = append(walk, e)
			}
		}
	}
	slices.SortFunc(walk, timeOrder)
	for _, e := range walk {
		w, _ := walkEventOf(e)
		out[e.SessionID] = append(out[e.SessionID], w)
	}
	return out
}

// pathRanking lists the sessions with an issue event of the group and class by their latest
// such event (timestamp, then id), newest first, with that event.
func (r *Reference) pathRanking(app uuid.UUID, class model.IssueClass, group string) ([]uuid.UUID, map[uuid.UUID]*model.Event) {
	latest := map[uuid.UUID]*model.Event{}
	for i := range r.rows {
		e := &r.rows[i]
		if e.AppID != app || e.Facts.GroupID != group || model.ClassOf(e.Type, &e.Facts) != class {
			continue
		}
		if l := latest[e.SessionID]; l == nil || newer(e, l) {
			latest[e.SessionID] = e
		}
	}
	sessions := make([]uuid.UUID, 0, len(latest))
	for s := range latest {
		sessions = append(sessions, s)
	}
	slices.SortFunc(sessions, func(a, b uuid.UUID) int { return timeOrder(latest[b], latest[a]) })
	return sessions, latest
}

// PathSessions is sinks.Analytics.PathSessions: for the n sessions whose latest issue event of
// the group and class is the newest (timestamp, then id), the session's events up to and
// including it in that order, oldest first, the last steps of them, samples left out.
func (r *Reference) PathSessions(app uuid.UUID, class model.IssueClass, group string, n, steps int) [][]model.Event {
	sessions, latest := r.pathRanking(app, class, group)
	out := [][]model.Event{}
	for _, s := range sessions[:min(max(n, 0), len(sessions))] {
		last := latest[s]
		var path []model.Event
		for i := range r.rows {
			e := &r.rows[i]
			if e.AppID != app || e.SessionID != s || model.IsSample(e.Type) || newer(e, last) {
				continue
			}
			path = append(path, *e)
		}
		slices.SortFunc(path, func(a, b model.Event) int { return timeOrder(&a, &b) })
		out = append(out, path[max(0, len(path)-steps):])
	}
	return out
}
