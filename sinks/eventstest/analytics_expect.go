package eventstest

import (
	"bytes"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// The brute-force answers of RunAnalytics: each method of sinks.Analytics computed from an
// app's rows (each row once) with the model's Go definitions, the way the contract words it.

func bucketOf(ts int64, g model.PlotTimeGroup) int64 {
	return model.BucketStart(time.Unix(0, ts), g).UnixNano()
}

func versionOf(e *model.Event) model.AppVersion {
	return model.AppVersion{Name: e.Attribute.AppVersion, Code: e.Attribute.AppBuild}
}

// newer is the instance order: a comes before b (timestamp descending, then id descending).
func newer(a, b *model.Event) bool {
	return a.Timestamp > b.Timestamp || a.Timestamp == b.Timestamp && bytes.Compare(a.ID[:], b.ID[:]) > 0
}

func expectIssueCells(rows []model.Event, q *model.IssueQuery, by model.Cells) []model.IssueCell {
	type key struct {
		group  string
		class  model.IssueClass
		v      model.AppVersion
		bucket int64
	}
	cells := map[key]*model.IssueCell{}
	for i := range rows {
		e := &rows[i]
		if e.AppID != q.App || !q.MatchIssue(e) {
			continue
		}
		k := key{e.Facts.GroupID, model.ClassOf(e.Type, &e.Facts), versionOf(e), 0}
		if by.Bucketed {
			k.bucket = bucketOf(e.Timestamp, by.By)
		}
		c := cells[k]
		if c == nil {
			c = &model.IssueCell{GroupID: k.group, Class: k.class, Version: k.v, Bucket: k.bucket, FirstTime: e.Timestamp, LastTime: e.Timestamp, LastID: e.ID, Last: e.Facts.Issue}
			cells[k] = c
		}
		c.Count++
		c.FirstTime = min(c.FirstTime, e.Timestamp)
		if c.Later(e.Timestamp, e.ID) {
			c.LastTime, c.LastID, c.Last = e.Timestamp, e.ID, e.Facts.Issue
		}
	}
	out := make([]model.IssueCell, 0, len(cells))
	for _, c := range cells {
		out = append(out, *c)
	}
	return out
}

// expectIssueList is every issue event matching q in the instance order.
func expectIssueList(rows []model.Event, q *model.IssueQuery) []model.Event {
	var out []model.Event
	for i := range rows {
		if rows[i].AppID == q.App && q.MatchIssue(&rows[i]) {
			out = append(out, rows[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return newer(&out[i], &out[j]) })
	return out
}

// expectPage cuts a page out of list (in the instance order) as model.EventPage says.
func expectPage(list []model.Event, p model.EventPage) []model.Event {
	if p.Key == nil {
		return list[:min(p.Limit, len(list))]
	}
	if !p.Backward {
		var out []model.Event
		for i := range list {
			if p.Key.Before(list[i].Timestamp, list[i].ID) && len(out) < p.Limit {
				out = append(out, list[i])
			}
		}
		return out
	}
	var newerThanKey []model.Event
	for i := range list {
		e := &list[i]
		if !p.Key.Before(e.Timestamp, e.ID) && !(e.Timestamp == p.Key.Timestamp && e.ID == p.Key.ID) {
			newerThanKey = append(newerThanKey, *e)
		}
	}
	return newerThanKey[max(0, len(newerThanKey)-p.Limit):]
}

func expectSessionBuckets(rows []model.Event, f *model.EventFilter, by model.PlotTimeGroup) []model.SessionBucket {
	type key struct {
		v      model.AppVersion
		bucket int64
	}
	type sets struct{ all, crashed, anr map[uuid.UUID]bool }
	m := map[key]*sets{}
	for i := range rows {
		e := &rows[i]
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
	return out
}

func expectMetrics(rows []model.Event, app uuid.UUID, from, to int64, sel *model.AppVersion) model.MetricsInput {
	// With no selected version every version is selected: all of them are counted as one.
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
	for i := range rows {
		e := &rows[i]
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

func expectFilterValues(rows []model.Event, app uuid.UUID, class model.IssueClass) model.FilterValues {
	first := map[model.AppVersion]int64{}
	osv := map[model.OSVersion]bool{}
	sets := make([]map[string]bool, 6)
	for i := range sets {
		sets[i] = map[string]bool{}
	}
	ud := map[model.UDKey]bool{}
	for i := range rows {
		e := &rows[i]
		if e.AppID != app || class != 0 && model.ClassOf(e.Type, &e.Facts) != class {
			continue
		}
		v := versionOf(e)
		if v != (model.AppVersion{}) {
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
	sort.Slice(fv.Versions, func(i, j int) bool {
		a, b := fv.Versions[i], fv.Versions[j]
		if first[a] != first[b] {
			return first[a] > first[b]
		}
		if a.Name != b.Name {
			return a.Name > b.Name
		}
		return a.Code > b.Code
	})
	for o := range osv {
		fv.OSVersions = append(fv.OSVersions, o)
	}
	sort.Slice(fv.OSVersions, func(i, j int) bool {
		a, b := fv.OSVersions[i], fv.OSVersions[j]
		return a.Name < b.Name || a.Name == b.Name && a.Version < b.Version
	})
	lists := []*[]string{&fv.DeviceNames, &fv.DeviceManufacturers, &fv.Locales, &fv.NetworkProviders, &fv.NetworkTypes, &fv.NetworkGenerations}
	for i, set := range sets {
		for s := range set {
			*lists[i] = append(*lists[i], s)
		}
		sort.Strings(*lists[i])
	}
	for k := range ud {
		fv.UDKeys = append(fv.UDKeys, k)
	}
	sort.Slice(fv.UDKeys, func(i, j int) bool {
		a, b := fv.UDKeys[i], fv.UDKeys[j]
		return a.Key < b.Key || a.Key == b.Key && a.Type < b.Type
	})
	return normFilterValues(fv)
}

// normFilterValues maps empty lists to nil: no value is no value, whichever a store returns.
func normFilterValues(fv model.FilterValues) model.FilterValues {
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

// expectWalks is the sessions q selects with their whole walks. withHandled selects sessions
// by handled exceptions too (a reading the contract rules out; the suite checks that its
// windows do not depend on it).
func expectWalks(rows []model.Event, q *model.WalkQuery, withHandled bool) map[uuid.UUID][]model.WalkEvent {
	selected := map[uuid.UUID]bool{}
	for i := range rows {
		e := &rows[i]
		if e.AppID != q.App || e.Timestamp < q.From || e.Timestamp >= q.To {
			continue
		}
		c := model.ClassOf(e.Type, &e.Facts)
		if q.GroupID != "" {
			if c == q.Class && e.Facts.GroupID == q.GroupID {
				selected[e.SessionID] = true
			}
			continue
		}
		if _, ok := walkEventOf(e); ok || withHandled && c == model.ClassHandled {
			selected[e.SessionID] = true
		}
	}
	out := map[uuid.UUID][]model.WalkEvent{}
	for i := range rows {
		e := &rows[i]
		if e.AppID != q.App || !selected[e.SessionID] {
			continue
		}
		if w, ok := walkEventOf(e); ok {
			out[e.SessionID] = append(out[e.SessionID], w)
		}
	}
	for _, ws := range out {
		sort.Slice(ws, func(i, j int) bool { return ws[i].Timestamp < ws[j].Timestamp })
	}
	return out
}

// pathRanking lists the sessions with an issue event of the group and class by their latest
// such event, newest first, with that event.
func pathRanking(rows []model.Event, app uuid.UUID, class model.IssueClass, group string) ([]uuid.UUID, map[uuid.UUID]*model.Event) {
	latest := map[uuid.UUID]*model.Event{}
	for i := range rows {
		e := &rows[i]
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
	sort.Slice(sessions, func(i, j int) bool { return newer(latest[sessions[i]], latest[sessions[j]]) })
	return sessions, latest
}

func expectPaths(rows []model.Event, app uuid.UUID, class model.IssueClass, group string, n, steps int) [][]model.Event {
	sessions, latest := pathRanking(rows, app, class, group)
	var out [][]model.Event
	for _, s := range sessions[:min(n, len(sessions))] {
		last := latest[s]
		var path []model.Event
		for i := range rows {
			e := &rows[i]
			if e.AppID != app || e.SessionID != s || model.IsSample(e.Type) || newer(e, last) {
				continue
			}
			path = append(path, *e)
		}
		sort.Slice(path, func(i, j int) bool { return newer(&path[j], &path[i]) })
		out = append(out, path[max(0, len(path)-steps):])
	}
	return out
}
