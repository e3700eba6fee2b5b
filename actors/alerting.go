package actors

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
)

// AlertSink takes the alerts app actors raise. Raise and Thresholds are called inside an
// actor's Receive, so neither may wait on a store.
type AlertSink interface {
	// Raise hands an alert over to be stored and delivered (the sink fills its team and URL).
	Raise(a model.Alert)
	// Thresholds returns the app's spike thresholds as last read (defaults until read).
	Thresholds(app uuid.UUID) model.ThresholdPrefs
	// Recent returns the app's newest alert per type and entity created at or after since, for
	// a rebuilt actor's cooldowns. It may wait on the store: only Rebuild calls it.
	Recent(ctx context.Context, app uuid.UUID, since time.Time) ([]model.Alert, error)
}

// AlertCooldown is how long a group's spike alert of one type silences the next.
var AlertCooldown = 7 * 24 * time.Hour

// spikeWindow is the sliding window of spikes, in minutes.
const spikeWindow = 60

// alerting is what an app actor keeps to raise alerts as batches arrive (issue #12):
//
//   - Spikes: per minute of arrival over the last hour, the crash and ANR events per group and
//     the distinct sessions of the app. A group whose events over the hour reach the app's
//     minimum count and its minimum share of the hour's sessions raises a spike, unless the
//     group had a spike of that type within AlertCooldown.
//   - New groups: a crash or ANR group the app never had (after a rebuild the actor knows every
//     group the store holds) raises one alert, ever.
//   - Bug reports: one alert each.
//
// Replayed batches (start-up) raise nothing: they were acknowledged before the restart, when
// their alerts were raised. Only a ready actor (one that knows its app's groups) raises alerts;
// ids are derived (model.AlertID), so a raise repeated anywhere stores one alert.
type alerting struct {
	sink     AlertSink
	now      func() time.Time
	ring     [spikeWindow]spikeMinute
	sessions map[uuid.UUID]uint32              // sessions of the window: in how many of its minutes
	counts   map[groupClass]uint64             // the window's crash and ANR events per group
	known    map[groupClass]struct{}           // crash and ANR groups the app has had
	last     map[alertKey]time.Time            // latest spike per type and group (cooldowns)
	display  map[groupClass]model.IssueDisplay // latest display per group, for messages
}

type groupClass struct {
	group string
	class model.IssueClass
}

type alertKey struct{ typ, entity string }

type spikeMinute struct {
	minute   int64 // Unix minute; 0 for an empty slot
	sessions map[uuid.UUID]struct{}
	issues   map[groupClass]uint64
}

func (al *alerting) reset() {
	sink, now := al.sink, al.now
	*al = alerting{sink: sink, now: now, sessions: map[uuid.UUID]uint32{}, counts: map[groupClass]uint64{},
		known: map[groupClass]struct{}{}, last: map[alertKey]time.Time{}, display: map[groupClass]model.IssueDisplay{}}
}

// alertable says whether the class raises alerts: crashes and ANRs.
func alertable(c model.IssueClass) bool { return c == model.ClassCrash || c == model.ClassANR }

// know records a group the app has (rebuilt or live), without raising anything.
func (al *alerting) know(c *model.IssueCell) {
	if alertable(c.Class) {
		k := groupClass{c.GroupID, c.Class}
		al.known[k] = struct{}{}
		al.display[k] = c.Last
	}
}

// slot returns the ring slot of minute m, emptied first when it held an older minute.
func (al *alerting) slot(m int64) *spikeMinute {
	s := &al.ring[m%spikeWindow]
	if s.minute != m {
		al.drop(s)
		*s = spikeMinute{minute: m, sessions: map[uuid.UUID]struct{}{}, issues: map[groupClass]uint64{}}
	}
	return s
}

// drop empties a slot: its sessions and issue events leave the window.
func (al *alerting) drop(s *spikeMinute) {
	for id := range s.sessions {
		if al.sessions[id] <= 1 {
			delete(al.sessions, id)
		} else {
			al.sessions[id]--
		}
	}
	for k, n := range s.issues {
		if al.counts[k] <= n {
			delete(al.counts, k)
		} else {
			al.counts[k] -= n
		}
	}
	*s = spikeMinute{}
}

// expire empties the slots of minutes that left the window ending at minute m.
func (al *alerting) expire(m int64) {
	for i := range al.ring {
		if s := &al.ring[i]; s.minute != 0 && s.minute <= m-spikeWindow {
			al.drop(s)
		}
	}
}

func minuteOf(t time.Time) int64 { return t.Unix() / 60 }

// batch counts a live batch's sessions and raises its bug reports' alerts.
func (al *alerting) batch(app uuid.UUID, m *actorpb.AppBatch) {
	now := al.now()
	al.expire(minuteOf(now))
	s := al.slot(minuteOf(now))
	for _, b := range m.Sessions {
		id, err := uuid.FromBytes(b)
		if err != nil {
			continue
		}
		if _, ok := s.sessions[id]; !ok {
			s.sessions[id] = struct{}{}
			al.sessions[id]++
		}
	}
	for _, br := range m.BugReports {
		id, err := uuid.FromBytes(br.Id)
		if err != nil {
			continue
		}
		desc := br.Description
		if desc == "" {
			desc = "No description provided."
		}
		al.sink.Raise(model.Alert{ID: model.AlertID(app, model.AlertBugReport, id.String(), ""), AppID: app,
			EntityID: id.String(), Type: model.AlertBugReport, Message: "A new bug report has been submitted:\n\n" + desc,
			CreatedAt: now, UpdatedAt: now})
	}
}

// issues counts a live session update's new issue events: a group new to the app raises its
// alert, and a group over the thresholds its spike.
func (al *alerting) issues(app uuid.UUID, cells []model.IssueCell) {
	now := al.now()
	nowMin := minuteOf(now)
	al.expire(nowMin)
	s := al.slot(nowMin)
	for i := range cells {
		c := &cells[i]
		if !alertable(c.Class) {
			continue
		}
		k := groupClass{c.GroupID, c.Class}
		if _, ok := al.known[k]; !ok {
			typ, what := model.AlertNewCrashGroup, "A new crash"
			if c.Class == model.ClassANR {
				typ, what = model.AlertNewANRGroup, "A new ANR"
			}
			al.sink.Raise(model.Alert{ID: model.AlertID(app, typ, c.GroupID, ""), AppID: app, EntityID: c.GroupID,
				Type: typ, Message: what + " appeared:\n\n" + describe(&c.Last), CreatedAt: now, UpdatedAt: now})
		}
		al.know(c)
		s.issues[k] += c.Count
		al.counts[k] += c.Count
		al.spike(app, k, now)
	}
}

// spike raises k's spike alert when its window count passes the thresholds and it is not
// cooling down.
func (al *alerting) spike(app uuid.UUID, k groupClass, now time.Time) {
	th := al.sink.Thresholds(app)
	n, sessions := al.counts[k], len(al.sessions)
	if sessions == 0 || int64(n) < int64(th.ErrorSpikeMinCountThreshold) ||
		float64(n)*100/float64(sessions) < th.ErrorSpikeMinRateThreshold {
		return
	}
	typ, what := model.AlertCrashSpike, "Crashes"
	if k.class == model.ClassANR {
		typ, what = model.AlertANRSpike, "ANRs"
	}
	ak := alertKey{typ, k.group}
	if last, ok := al.last[ak]; ok && now.Sub(last) < AlertCooldown {
		return
	}
	al.last[ak] = now
	d := al.display[k]
	msg := fmt.Sprintf("%s are spiking at:\n\n%s\n\n%d in the last hour, in %d sessions.", what, describe(&d), n, sessions)
	al.sink.Raise(model.Alert{ID: model.AlertID(app, typ, k.group, strconv.FormatInt(minuteOf(now), 10)), AppID: app,
		EntityID: k.group, Type: typ, Message: msg, CreatedAt: now, UpdatedAt: now})
}

// describe is a group's "file: method() - message" line.
func describe(d *model.IssueDisplay) string {
	file, method := d.FileName, d.MethodName
	if file == "" {
		file = "unknown_file"
	}
	if method == "" {
		method = "unknown_method"
	}
	s := file + ": " + method + "()"
	if d.Message != "" {
		s += " - " + d.Message
	}
	if d.Type != "" {
		s = d.Type + " at " + s
	}
	return s
}

// rebuild reads the cooldowns of the last AlertCooldown from the sink's store.
func (al *alerting) rebuild(ctx context.Context, app uuid.UUID) error {
	recent, err := al.sink.Recent(ctx, app, al.now().Add(-AlertCooldown))
	if err != nil {
		return fmt.Errorf("read recent alerts of app %s: %w", app, err)
	}
	for _, a := range recent {
		if a.Type == model.AlertCrashSpike || a.Type == model.AlertANRSpike {
			k := alertKey{a.Type, a.EntityID}
			if a.CreatedAt.After(al.last[k]) {
				al.last[k] = a.CreatedAt
			}
		}
	}
	return nil
}

// maxAlertDescription bounds the part of a bug report's description its alert carries.
const maxAlertDescription = 1000

// bugReportRef is what a bug report's alert needs of its event: the id and the description
// (model.BugReportDescription, as the stores read it; cut at maxAlertDescription bytes, on a
// character boundary).
func bugReportRef(e *model.Event) *actorpb.BugReportRef {
	d := model.BugReportDescription(e.Payload)
	if len(d) > maxAlertDescription {
		d = strings.ToValidUTF8(d[:maxAlertDescription], "") + "…"
	}
	id := e.ID
	return &actorpb.BugReportRef{Id: id[:], Description: d}
}
