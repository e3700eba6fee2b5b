package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// IssueClass is what an issue event is for the group lists: a crash (a fatal exception), a
// handled exception, or an ANR. Only events with a group id (EventFacts.GroupID) have one.
type IssueClass uint8

// The issue classes; the zero value is no class.
const (
	ClassCrash IssueClass = iota + 1
	ClassANR
	ClassHandled
)

// AllIssueClasses lists every class, for queries that take all.
var AllIssueClasses = []IssueClass{ClassCrash, ClassANR, ClassHandled}

// String is the name the errorGroups API uses (its `type` filter and `error_type` field).
func (c IssueClass) String() string {
	switch c {
	case ClassCrash:
		return "crash"
	case ClassANR:
		return "anr"
	case ClassHandled:
		return "handled"
	}
	return ""
}

// ParseIssueClass is the inverse of String; ok is false for any other text.
func ParseIssueClass(s string) (IssueClass, bool) {
	for _, c := range AllIssueClasses {
		if c.String() == s {
			return c, true
		}
	}
	return 0, false
}

// ClassOf is the class of an event from its type and facts: 0 for an event that is no issue
// (any other kind, or an exception or anr whose payload had no group).
func ClassOf(typ string, f *EventFacts) IssueClass {
	if f.GroupID == "" {
		return 0
	}
	switch typ {
	case "exception":
		if f.Fatal {
			return ClassCrash
		}
		return ClassHandled
	case "anr":
		return ClassANR
	}
	return 0
}

// EventFilter selects events of one app for the analytics queries. App and the window [From,
// To) are always set; the zero value of each other member selects everything, and lists match
// any of their values (an empty list: no condition).
type EventFilter struct {
	App uuid.UUID
	// From and To bound the event timestamp, [From, To), in Unix nanoseconds.
	From, To int64
	// Versions: the event's (app_version, app_build) is one of them.
	Versions []AppVersion
	// The attribute lists of the dashboard filters, compared exactly with the stored attribute.
	// Countries: events carry no country (svc does not geolocate), so a non-empty list
	// matches nothing.
	Countries, DeviceNames, DeviceManufacturers, Locales []string
	NetworkProviders, NetworkTypes, NetworkGenerations   []string
	// UD is a parsed ud_expression (UDExpr.Eval on the event's user-defined attributes).
	UD *UDExpr
}

// Unfiltered says whether f has no condition beyond app, time and versions: the queries the
// app actor's aggregates can answer.
func (f *EventFilter) Unfiltered() bool {
	return len(f.Countries)+len(f.DeviceNames)+len(f.DeviceManufacturers)+len(f.Locales)+
		len(f.NetworkProviders)+len(f.NetworkTypes)+len(f.NetworkGenerations) == 0 && f.UD == nil
}

// Match is the filter as Go code: every backend that filters in Go calls it, and the SQL of
// the others must agree with it (the conformance suite checks).
func (f *EventFilter) Match(e *Event) bool {
	if e.Timestamp < f.From || e.Timestamp >= f.To {
		return false
	}
	if !f.MatchVersion(e.Attribute.AppVersion, e.Attribute.AppBuild) {
		return false
	}
	a := &e.Attribute
	if len(f.Countries) > 0 ||
		!anyOf(f.DeviceNames, a.DeviceName) || !anyOf(f.DeviceManufacturers, a.DeviceManufacturer) ||
		!anyOf(f.Locales, a.DeviceLocale) || !anyOf(f.NetworkProviders, a.NetworkProvider) ||
		!anyOf(f.NetworkTypes, a.NetworkType) || !anyOf(f.NetworkGenerations, a.NetworkGeneration) {
		return false
	}
	return f.UD == nil || f.UD.Eval(e.UserDefined)
}

// MatchVersion is Match's condition on the version alone: an app_version and app_build that
// Versions, if any, holds.
func (f *EventFilter) MatchVersion(name, code string) bool {
	return len(f.Versions) == 0 || hasVersion(f.Versions, name, code)
}

func hasVersion(vs []AppVersion, name, code string) bool {
	for _, v := range vs {
		if v.Name == name && v.Code == code {
			return true
		}
	}
	return false
}

func anyOf(list []string, v string) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// IssueQuery selects issue events: those of EventFilter with one of Classes (all three when
// empty), of one group when GroupID is set, and, when Severities is set, exceptions with one of
// Severities (IssueDisplay.Severity) and ANRs whatever it holds: a severity narrows exceptions
// only, as in the reference dashboard's vocabulary (IssueKinds), so an ANR is selected by its
// class alone.
type IssueQuery struct {
	EventFilter
	Classes    []IssueClass
	GroupID    string
	Severities []string
}

// MatchIssue is IssueQuery as Go code, as EventFilter.Match.
func (q *IssueQuery) MatchIssue(e *Event) bool {
	c := ClassOf(e.Type, &e.Facts)
	if c == 0 || (q.GroupID != "" && e.Facts.GroupID != q.GroupID) {
		return false
	}
	if len(q.Classes) > 0 {
		ok := false
		for _, x := range q.Classes {
			ok = ok || x == c
		}
		if !ok {
			return false
		}
	}
	if c != ClassANR && len(q.Severities) > 0 && !anyOf(q.Severities, e.Facts.Issue.Severity) {
		return false
	}
	return q.Match(e)
}

// ByClass gives the classes that select exactly the events q's Classes and Severities select,
// when its severities can be said by class alone, so that the app actor's class cells answer
// it: a crash's severity is always fatal and a handled exception's never is (IsFatal,
// severityName), so crashes stay exactly when fatal is one of the severities, handled
// exceptions go when fatal is the only one, and ANRs always stay. ok is false when a severity
// other than fatal narrows the handled class, and when q selects no class at all (an empty
// list would select every class).
func (q *IssueQuery) ByClass() (classes []IssueClass, ok bool) {
	if len(q.Severities) == 0 {
		return q.Classes, true
	}
	fatal, other := false, false
	for _, s := range q.Severities {
		fatal, other = fatal || s == "fatal", other || s != "fatal"
	}
	from := q.Classes
	if len(from) == 0 {
		from = AllIssueClasses
	}
	for _, c := range from {
		switch {
		case c == ClassANR, c == ClassCrash && fatal:
			classes = append(classes, c)
		case c == ClassHandled && other:
			return nil, false
		}
	}
	return classes, len(classes) > 0
}

// The values of the dashboards' `type` and `severity` lists (IssueKinds).
var (
	IssueTypes      = []string{"error", "anr", "crash", "handled"}
	IssueSeverities = []string{"fatal", "unhandled", "handled"}
)

// IssueKinds maps the `type` and `severity` lists of errorGroups (the reference dashboard's
// vocabulary, and svc's older class names) to an IssueQuery's Classes and Severities; it is
// the one place that decides what they mean:
//   - type error: exceptions, crashes and handled ones (ClassCrash, ClassHandled); anr: ANRs;
//     crash and handled: those classes alone (svc's names, kept for existing clients);
//   - severity fatal, unhandled, handled: exceptions whose severity (IssueDisplay.Severity, the
//     legacy handled flag read as fatal or handled) is one of them — fatal is exactly a crash;
//     a severity never removes an ANR that the types select;
//   - no type: every class when no severity is sent, else exceptions only (ANRs have no
//     severity to match).
//
// err names the first value outside the vocabulary.
func IssueKinds(types, severities []string) (classes []IssueClass, sev []string, err error) {
	seen := [4]bool{}
	add := func(c IssueClass) {
		if !seen[c] {
			seen[c] = true
			classes = append(classes, c)
		}
	}
	for _, t := range types {
		switch t {
		case "error":
			add(ClassCrash)
			add(ClassHandled)
		case "anr":
			add(ClassANR)
		case "crash":
			add(ClassCrash)
		case "handled":
			add(ClassHandled)
		default:
			return nil, nil, fmt.Errorf("type %q is not one of %s", t, strings.Join(IssueTypes, ", "))
		}
	}
	for _, s := range severities {
		if !slices.Contains(IssueSeverities, s) {
			return nil, nil, fmt.Errorf("severity %q is not one of %s", s, strings.Join(IssueSeverities, ", "))
		}
	}
	switch {
	case len(classes) > 0:
	case len(severities) > 0:
		classes = []IssueClass{ClassCrash, ClassHandled}
	default:
		classes = append([]IssueClass(nil), AllIssueClasses...)
	}
	return classes, severities, nil
}

// IssueCell is the aggregate of a group's events of one class and one version in one time
// bucket: how many, when the first was seen, and the latest of them (by timestamp, then event
// id) with its display.
// Group lists and plots are sums of cells; the app actor keeps day cells live and a store
// computes cells for any filter, so both answers come from the same merge (MergeGroups).
type IssueCell struct {
	GroupID string
	Class   IssueClass
	Version AppVersion
	// Bucket is the start (Unix ns, Cells.By.Start) of the cell's bucket; 0 when the query
	// asked for one bucket over the whole window.
	Bucket    int64
	Count     uint64
	FirstTime int64 // the earliest event's timestamp (first seen)
	LastTime  int64
	LastID    uuid.UUID
	Last      IssueDisplay
}

// Later says whether (t, id) is after the cell's latest event: the order that picks the
// display of a group.
func (c *IssueCell) Later(t int64, id uuid.UUID) bool {
	return t > c.LastTime || t == c.LastTime && uuidLess(c.LastID, id)
}

func uuidLess(a, b uuid.UUID) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Cells are the shape in which cells are asked for: bucketed by plot buckets (a time group in
// a time zone), or one bucket for the whole window.
type Cells struct {
	Bucketed bool
	By       Buckets
}

// EventKey is a position in the instance order (timestamp descending, then id descending).
type EventKey struct {
	Timestamp int64
	ID        uuid.UUID
}

// Before says whether (t, id) comes after k in the instance order (is older).
func (k *EventKey) Before(t int64, id uuid.UUID) bool {
	return t < k.Timestamp || t == k.Timestamp && uuidLess(id, k.ID)
}

// EventPage asks for up to Limit events in the instance order after Key (older than it), or,
// Backward, the Limit events just before Key (newer than it), still returned newest first.
// Without Key the page starts at the newest event (Backward then is meaningless).
type EventPage struct {
	Key      *EventKey
	Limit    int
	Backward bool
}

// SessionBucket counts the sessions of one version in one bucket for the overview plots:
// sessions with an event (spans excluded) matching the filter, and of those the sessions with
// a fatal crash and with an ANR among those events.
type SessionBucket struct {
	Version                    AppVersion
	Bucket                     int64 // Buckets.Start in Unix ns
	Sessions, Crashed, WithANR uint64
}

// FilterValues are the distinct attribute values of an app's events: the body of GET
// /apps/{id}/filters.
type FilterValues struct {
	// Versions newest first: by the time the version was first seen, latest first (then name
	// and code descending).
	Versions            []AppVersion
	OSVersions          []OSVersion
	DeviceNames         []string
	DeviceManufacturers []string
	Locales             []string
	NetworkProviders    []string
	NetworkTypes        []string
	NetworkGenerations  []string
	// UDKeys are the user-defined attribute keys with their types, sorted by key then type.
	UDKeys []UDKey
}

// OSVersion is an (os_name, os_version) pair of the filters.
type OSVersion struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// UDKey is a user-defined attribute key and its type name.
type UDKey struct {
	Key  string `json:"key"`
	Type string `json:"type"`
}

// WalkEvent is what journeys need of one event: screen events and issue events (crashes and
// ANRs; handled exceptions never appear in journeys).
type WalkEvent struct {
	Timestamp int64
	Version   AppVersion
	Screen    string // set for a screen event
	GroupID   string // set for an issue event
	Class     IssueClass
	Title     string // the issue's title (IssueDisplay.Title)
}

// WalkEventOf is the WalkEvent of an event, and whether it is one: a screen event, or a crash
// or ANR. Its strings alias the event's.
func WalkEventOf(e *Event) (WalkEvent, bool) {
	v := AppVersion{Name: e.Attribute.AppVersion, Code: e.Attribute.AppBuild}
	if e.Facts.Screen != "" {
		return WalkEvent{Timestamp: e.Timestamp, Version: v, Screen: e.Facts.Screen}, true
	}
	switch c := ClassOf(e.Type, &e.Facts); c {
	case ClassCrash, ClassANR:
		return WalkEvent{Timestamp: e.Timestamp, Version: v, GroupID: e.Facts.GroupID, Class: c, Title: e.Facts.Issue.Title()}, true
	}
	return WalkEvent{}, false
}

// WalkQuery selects the sessions a journey is built from: every session of the app with a walk
// event (a screen event, or a crash or ANR with a group) in [From, To) — a handled exception
// alone selects none — or, with GroupID set, only those with an issue event of that group and
// class in it. Their walk events are read whole, at any time, because a move
// inside the window starts from the screen shown before it.
type WalkQuery struct {
	App      uuid.UUID
	From, To int64
	GroupID  string
	Class    IssueClass
}
