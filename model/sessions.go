package model

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Sessions: what the session list and its plot read of events (issue #12). A SessionQuery
// selects sessions by their events in a window; SessionAcc folds one session's events into the
// SessionSummary the list shows; SessionPlotOf counts summaries per version and bucket. These
// are the Go definitions every store agrees with (sinks.Sessions, checked by eventstest).
//
// Only the events of the window [From, To) count, whatever lies outside it: a session running
// across a bound shows the part inside. Of those events, the ones that match the filters
// (MatchEvent: the window, versions, OS, device and network lists, ud_expression; never
// session_start) select the session, and every other condition — the session kinds and the
// free text — must hold on one of them, so a filter means what it means on every other
// endpoint: `versions=2.0&type=anr` is a session with an ANR of version 2.0. What the list
// shows of a selected session (its first and last event, device, user) is read from all its
// events in the window, the unmatched included.

// SessionQuery selects the sessions of GET /apps/{id}/sessions and its plot.
type SessionQuery struct {
	// EventFilter's fields apply to each event as EventFilter.Match does: the window bounds its
	// timestamp, [From, To); versions, the device, locale and network lists, Countries (a
	// non-empty list matches nothing) and UD.
	EventFilter
	// OSVersions: the event's (os_name, os_version) is one of them.
	OSVersions []OSVersion

	// The session kinds of the list's `type`, `severity`, `bug_report`, `user_interaction`,
	// `foreground` and `background` parameters. When any is set, a session is selected when it
	// is of at least one of the kinds set (they are alternatives, as the dashboard's session
	// type menu offers them); when none is, kinds do not matter.
	//
	// Issue: a matching event that is an issue (ClassOf) of one of Classes (every class when
	// empty) and, when Severities is set and the issue is an exception, of one of Severities —
	// IssueQuery.MatchIssue's rule, the one errorGroups applies (severities narrow exceptions
	// only; an ANR of Classes is kept whatever they are). IssueKinds reads both parameters.
	Issue      bool
	Classes    []IssueClass
	Severities []string
	// BugReport: a matching bug_report event.
	BugReport bool
	// UserInteraction: a matching gesture (gesture_click, gesture_long_click, gesture_scroll).
	UserInteraction bool
	// Foreground: a matching event that shows the app in the foreground (ForegroundEvidence).
	// Background: no matching event does.
	Foreground, Background bool

	// FreeText, when not empty, selects sessions with a matching event that MatchText finds it
	// in (ASCII letters compared without case).
	FreeText string
}

// MatchEvent says whether e is an event that selects its session: an event of the query's app
// other than session_start, in the window, with the query's filters.
func (q *SessionQuery) MatchEvent(e *Event) bool {
	if e.AppID != q.App || e.Type == "session_start" {
		return false
	}
	a := &e.Attribute
	if len(q.OSVersions) > 0 && !slices.Contains(q.OSVersions, OSVersion{Name: a.OSName, Version: a.OSVersion}) {
		return false
	}
	return q.EventFilter.Match(e)
}

// HasKinds says whether any session kind is asked for.
func (q *SessionQuery) HasKinds() bool {
	return q.Issue || q.BugReport || q.UserInteraction || q.Foreground || q.Background
}

// SessionKinds are the kinds an event shows its session to be of, as bits.
type SessionKinds uint8

// The kinds of SessionKinds.
const (
	KindIssue SessionKinds = 1 << iota
	KindBugReport
	KindInteraction
	KindForeground
)

// KindsOf are the kinds the event e shows (KindIssue by the query's Classes and Severities).
func (q *SessionQuery) KindsOf(e *Event) SessionKinds {
	var k SessionKinds
	if c := ClassOf(e.Type, &e.Facts); c != 0 && (len(q.Classes) == 0 || slices.Contains(q.Classes, c)) &&
		(c == ClassANR || len(q.Severities) == 0 || slices.Contains(q.Severities, e.Facts.Issue.Severity)) {
		k |= KindIssue
	}
	switch e.Type {
	case "bug_report":
		k |= KindBugReport
	case "gesture_click", "gesture_long_click", "gesture_scroll":
		k |= KindInteraction
	}
	if ForegroundEvidence(e) {
		k |= KindForeground
	}
	return k
}

// KindsMatch says whether a session whose matching events show the kinds k is of one of the
// kinds asked for (true when none is asked for).
func (q *SessionQuery) KindsMatch(k SessionKinds) bool {
	if !q.HasKinds() {
		return true
	}
	return q.Issue && k&KindIssue != 0 || q.BugReport && k&KindBugReport != 0 ||
		q.UserInteraction && k&KindInteraction != 0 || q.Foreground && k&KindForeground != 0 ||
		q.Background && k&KindForeground == 0
}

// ForegroundTypes are the event types that only happen while the app is in the foreground: the
// user touched it, a screen or view went through its lifecycle, or it launched.
var ForegroundTypes = []string{"gesture_click", "gesture_long_click", "gesture_scroll", "screen_view",
	"lifecycle_activity", "lifecycle_fragment", "lifecycle_view_controller", "lifecycle_swift_ui",
	"cold_launch", "warm_launch", "hot_launch"}

// ForegroundEvidence says whether e shows the app in the foreground: an event of
// ForegroundTypes, a lifecycle_app event of type foreground, or an exception or anr that says
// it happened in the foreground (EventFacts.Foreground).
func ForegroundEvidence(e *Event) bool {
	switch e.Type {
	case "lifecycle_app":
		return PayloadString(e.Payload, "type") == "foreground"
	case "exception", "anr":
		return e.Facts.Foreground
	}
	return slices.Contains(ForegroundTypes, e.Type)
}

// PayloadString is the string member key of a payload as ClickHouse's
// visitParamExtractString(payload, key) reads it, so that both event stores read payloads
// alike with no extra column: the first `"key":` anywhere in the payload (a member of a nested
// object too), its string decoded as BugReportDescription decodes one; "" when there is none,
// or its value is not a string. On the flat payloads it is used on (PayloadTypes and
// lifecycle_app) this is the top-level member.
func PayloadString(payload []byte, key string) string {
	needle := make([]byte, 0, len(key)+3)
	return payloadMember(payload, append(append(append(needle, '"'), key...), '"', ':'))
}

// payloadMember is the decoded string after the first needle (`"key":`) in payload; "" when
// there is none or no string follows it.
func payloadMember(payload, needle []byte) string {
	i := bytes.Index(payload, needle)
	if i < 0 {
		return ""
	}
	rest := payload[i+len(needle):]
	if len(rest) == 0 || rest[0] != '"' {
		return ""
	}
	v, ok := decodeLikeClickHouse(rest[1:])
	if !ok {
		return ""
	}
	return v
}

// TextSource says where a free-text field's value comes from.
type TextSource uint8

// The sources of TextField.
const (
	TextSessionID    TextSource = iota + 1 // the session id, canonical lowercase text
	TextUserID                             // attribute user_id
	TextType                               // the event type
	TextIssueType                          // EventFacts.Issue.Type (GroupOf's type)
	TextIssueMessage                       // EventFacts.Issue.Message
	TextIssueMethod                        // EventFacts.Issue.MethodName
	TextIssueFile                          // EventFacts.Issue.FileName
	TextPayload                            // the payload's string member Key (PayloadString)
)

// TextField is one place free_text looks in.
type TextField struct {
	Label  string     // how matched_free_text names it
	Types  []string   // the event types it applies to; nil: every event
	Source TextSource //
	Key    string     // the payload member of TextPayload
	// Exact: the value must equal the text; else contain it. ASCII letters are compared
	// without case either way.
	Exact bool
}

var (
	sessionLifecycleTypes = []string{"lifecycle_activity", "lifecycle_fragment", "lifecycle_view_controller", "lifecycle_swift_ui"}
	sessionGestureTypes   = []string{"gesture_click", "gesture_long_click", "gesture_scroll"}
)

// SessionTextFields are the places free_text looks in, in the order an event's first match is
// taken from: the ids (exactly), the event type, an exception's or ANR's type, message, method
// and file (those the group lists show), a custom event's name, a log line, a lifecycle
// event's class, a gesture's target view and its id.
var SessionTextFields = []TextField{
	{Label: "Session Id", Source: TextSessionID, Exact: true},
	{Label: "User Id", Source: TextUserID, Exact: true},
	{Label: "Type", Source: TextType},
	{Label: "Exception Type", Types: []string{"exception"}, Source: TextIssueType},
	{Label: "Exception Message", Types: []string{"exception"}, Source: TextIssueMessage},
	{Label: "Exception Method", Types: []string{"exception"}, Source: TextIssueMethod},
	{Label: "Exception File", Types: []string{"exception"}, Source: TextIssueFile},
	{Label: "ANR Type", Types: []string{"anr"}, Source: TextIssueType},
	{Label: "ANR Message", Types: []string{"anr"}, Source: TextIssueMessage},
	{Label: "ANR Method", Types: []string{"anr"}, Source: TextIssueMethod},
	{Label: "ANR File", Types: []string{"anr"}, Source: TextIssueFile},
	{Label: "Custom Event", Types: []string{"custom"}, Source: TextPayload, Key: "name"},
	{Label: "Log", Types: []string{"string"}, Source: TextPayload, Key: "string"},
	{Label: "Log", Types: []string{"log"}, Source: TextPayload, Key: "body"},
	{Label: "Class Name", Types: sessionLifecycleTypes, Source: TextPayload, Key: "class_name"},
	{Label: "Target", Types: sessionGestureTypes, Source: TextPayload, Key: "target"},
	{Label: "Target Id", Types: sessionGestureTypes, Source: TextPayload, Key: "target_id"},
}

// PayloadTypes are the event types whose payload free text reads (a store that skips payloads
// must read them for these).
var PayloadTypes = func() []string {
	var out []string
	for _, f := range SessionTextFields {
		if f.Source == TextPayload {
			out = append(out, f.Types...)
		}
	}
	return out
}()

// Value is the field's value in e ("" when it does not apply to e's type).
func (f *TextField) Value(e *Event) string {
	if f.Types != nil && !slices.Contains(f.Types, e.Type) {
		return ""
	}
	switch f.Source {
	case TextSessionID:
		return e.SessionID.String()
	case TextUserID:
		return e.Attribute.UserID
	case TextType:
		return e.Type
	case TextIssueType:
		return e.Facts.Issue.Type
	case TextIssueMessage:
		return e.Facts.Issue.Message
	case TextIssueMethod:
		return e.Facts.Issue.MethodName
	case TextIssueFile:
		return e.Facts.Issue.FileName
	case TextPayload:
		return PayloadString(e.Payload, f.Key)
	}
	return ""
}

// TextMatch is where free text was found: the field's label and an excerpt of its value
// (Excerpt), which is what the list shows of it.
type TextMatch struct {
	Label string
	// Value is the whole value when it has at most ExcerptBytes bytes more than the text, else
	// that many bytes of it from ExcerptLead bytes before the first place the text occurs (from
	// its start when that is nearer); it may begin or end inside a character.
	Value string
	// Before and After say whether the value goes on before and after the excerpt.
	Before, After bool
}

// The excerpt of a matched value (TextMatch.Value), in bytes.
const (
	ExcerptBytes = 400
	ExcerptLead  = 160
)

// Excerpt cuts a value in which text (not empty) was found, as TextMatch.Value says.
func Excerpt(label, value, text string) TextMatch {
	size := ExcerptBytes + len(text)
	if len(value) <= size {
		return TextMatch{Label: label, Value: value}
	}
	lo := max(0, strings.Index(FoldASCII(value), FoldASCII(text))-ExcerptLead)
	hi := min(len(value), lo+size)
	return TextMatch{Label: label, Value: value[lo:hi], Before: lo > 0, After: hi < len(value)}
}

// MatchText finds text (not empty) in e: the first of SessionTextFields that holds it, with
// the Excerpt of its value.
func MatchText(e *Event, text string) (TextMatch, bool) {
	needle := FoldASCII(text)
	for i := range SessionTextFields {
		f := &SessionTextFields[i]
		if f.Types != nil && !slices.Contains(f.Types, e.Type) {
			continue
		}
		v := f.Value(e)
		if f.Exact && FoldASCII(v) == needle || !f.Exact && strings.Contains(FoldASCII(v), needle) {
			return Excerpt(f.Label, v, text), true
		}
	}
	return TextMatch{}, false
}

// FoldASCII lowers the ASCII letters of s and leaves every other byte as it is (ClickHouse's
// lower()); s itself when it has no upper-case ASCII letter.
func FoldASCII(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for j := i; j < len(b); j++ {
		if c := b[j]; c >= 'A' && c <= 'Z' {
			b[j] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// Snippet sizes of matched_free_text, in characters: at most snippetRunes of a value, from
// snippetBefore before the match.
const (
	snippetRunes  = 100
	snippetBefore = 40
)

// Text is the matched_free_text of a match of text: "Label: value", where a value of more than
// 100 characters is cut to the 100 from 40 before the first place text occurs, an ellipsis (…)
// marking each end where the value goes on.
func (m TextMatch) Text(text string) string {
	v := m.Value
	if m.Before { // the excerpt may begin inside a character
		for len(v) > 0 && !utf8.RuneStart(v[0]) {
			v = v[1:]
		}
	}
	if m.After { // or end inside one
		for i := len(v) - 1; i >= 0 && i >= len(v)-utf8.UTFMax; i-- {
			if utf8.RuneStart(v[i]) {
				if !utf8.FullRuneInString(v[i:]) {
					v = v[:i]
				}
				break
			}
		}
	}
	if !m.Before && !m.After && utf8.RuneCountInString(v) <= snippetRunes {
		return m.Label + ": " + v
	}
	at := max(0, strings.Index(FoldASCII(v), FoldASCII(text)))
	start := runeOffset(v, max(0, utf8.RuneCountInString(v[:at])-snippetBefore))
	end := start + runeOffset(v[start:], snippetRunes)
	s := v[start:end]
	if start > 0 || m.Before {
		s = "…" + s
	}
	if end < len(v) || m.After {
		s += "…"
	}
	return m.Label + ": " + s
}

// runeOffset is the byte offset of the n-th character of s (len(s) when it has fewer).
func runeOffset(s string, n int) int {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// SessionDevice is what the session list shows of a session's app version, OS and device:
// those of its first event in the window.
type SessionDevice struct {
	AppVersion, AppBuild, OSName, OSVersion     string
	DeviceName, DeviceModel, DeviceManufacturer string
}

// Version is the device's app version.
func (d *SessionDevice) Version() AppVersion { return AppVersion{Name: d.AppVersion, Code: d.AppBuild} }

// SessionSummary is one selected session as the list shows it, from its events in the window.
type SessionSummary struct {
	SessionID uuid.UUID
	// First and Last are the timestamps (Unix ns) of its first and last events in the window,
	// session_start and resource samples included.
	First, Last int64
	// Device is that of its first event (by timestamp, then event id).
	Device SessionDevice
	// UserID is the user id of its first event (same order) that has one; "" for none.
	UserID string
	// Match is the free text's first match (MatchText): in the first matching event (same
	// order) that holds it, the first field of SessionTextFields. Zero without FreeText.
	Match TextMatch
}

// SessionAcc folds the events of one session into its SessionSummary and says whether the
// query selects it. Events may come in any order and more than once (a stored row is one
// event); Add keeps copies of the strings it keeps, so events may alias buffers reused later.
type SessionAcc struct {
	any         bool // an event in the window
	first, last int64
	firstID     uuid.UUID
	device      SessionDevice
	hasUser     bool
	userT       int64
	userID      uuid.UUID
	user        string
	matched     bool // a matching event (MatchEvent)
	kinds       SessionKinds
	hasText     bool
	textT       int64
	textID      uuid.UUID
	text        TextMatch
}

// keyBefore says whether (t, id) comes before (t0, id0) by timestamp, then id bytes.
func keyBefore(t int64, id uuid.UUID, t0 int64, id0 uuid.UUID) bool {
	return t < t0 || t == t0 && uuidLess(id, id0)
}

// Add counts e, an event of the session, when it lies in q's window; others are ignored.
func (a *SessionAcc) Add(q *SessionQuery, e *Event) {
	if e.AppID != q.App || e.Timestamp < q.From || e.Timestamp >= q.To {
		return
	}
	if !a.any || keyBefore(e.Timestamp, e.ID, a.first, a.firstID) {
		at := &e.Attribute
		a.first, a.firstID = e.Timestamp, e.ID
		a.device = SessionDevice{AppVersion: strings.Clone(at.AppVersion), AppBuild: strings.Clone(at.AppBuild),
			OSName: strings.Clone(at.OSName), OSVersion: strings.Clone(at.OSVersion),
			DeviceName: strings.Clone(at.DeviceName), DeviceModel: strings.Clone(at.DeviceModel),
			DeviceManufacturer: strings.Clone(at.DeviceManufacturer)}
	}
	if !a.any || e.Timestamp > a.last {
		a.last = e.Timestamp
	}
	a.any = true
	if u := e.Attribute.UserID; u != "" && (!a.hasUser || keyBefore(e.Timestamp, e.ID, a.userT, a.userID)) {
		a.hasUser, a.userT, a.userID, a.user = true, e.Timestamp, e.ID, strings.Clone(u)
	}
	if !q.MatchEvent(e) {
		return
	}
	a.matched = true
	a.kinds |= q.KindsOf(e)
	if q.FreeText != "" && (!a.hasText || keyBefore(e.Timestamp, e.ID, a.textT, a.textID)) {
		if m, ok := MatchText(e, q.FreeText); ok {
			a.hasText, a.textT, a.textID = true, e.Timestamp, e.ID
			m.Value = strings.Clone(m.Value)
			a.text = m
		}
	}
}

// Selected says whether q selects the session: it has a matching event, is of one of the kinds
// asked for, and holds the free text when one is given.
func (a *SessionAcc) Selected(q *SessionQuery) bool {
	return a.matched && q.KindsMatch(a.kinds) && (q.FreeText == "" || a.hasText)
}

// Summary is the session's summary.
func (a *SessionAcc) Summary(session uuid.UUID) SessionSummary {
	return SessionSummary{SessionID: session, First: a.first, Last: a.last, Device: a.device, UserID: a.user, Match: a.text}
}

// CompareSessionsNewest orders sessions newest first: First descending, then session id
// descending (byte order), the order of the session list.
func CompareSessionsNewest(a, b *SessionSummary) int {
	if c := cmp.Compare(b.First, a.First); c != 0 {
		return c
	}
	switch {
	case uuidLess(b.SessionID, a.SessionID):
		return -1
	case uuidLess(a.SessionID, b.SessionID):
		return 1
	}
	return 0
}

// SessionPlotCell counts the selected sessions of one app version in one plot bucket.
type SessionPlotCell struct {
	Version AppVersion // the summary's Device version
	Bucket  int64      // Buckets.Start of the summary's First, Unix ns
	Count   uint64
}

// SessionPlotOf counts sessions per version and bucket of their first event: the plot is the
// histogram of the list. Sorted by bucket, then version name and code.
func SessionPlotOf(sessions []SessionSummary, b Buckets) []SessionPlotCell {
	type key struct {
		v      AppVersion
		bucket int64
	}
	counts := map[key]uint64{}
	for i := range sessions {
		s := &sessions[i]
		counts[key{s.Device.Version(), b.Start(time.Unix(0, s.First)).UnixNano()}]++
	}
	out := make([]SessionPlotCell, 0, len(counts))
	for k, n := range counts {
		out = append(out, SessionPlotCell{Version: k.v, Bucket: k.bucket, Count: n})
	}
	SortSessionPlot(out)
	return out
}

// SortSessionPlot sorts cells by bucket, then version name and code: the order stores return
// them in.
func SortSessionPlot(cells []SessionPlotCell) {
	slices.SortFunc(cells, func(a, b SessionPlotCell) int {
		return cmp.Or(cmp.Compare(a.Bucket, b.Bucket), strings.Compare(a.Version.Name, b.Version.Name),
			strings.Compare(a.Version.Code, b.Version.Code))
	})
}
