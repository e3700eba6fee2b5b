package model

import (
	"bytes"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Bug reports: events of type bug_report (a description and attachments such as screenshots)
// that a user of the app sent from the device. A report's id is its event id. Everything a
// report carries is stored with its event, except its status, which changes after the fact
// and lives in the metadata store (sinks.BugReportStatuses). Queries select reports with a
// BugReportQuery, whose Match is the Go definition every event store agrees with.

// BugReportType is the event type of bug reports.
const BugReportType = "bug_report"

// BugReportStatus is whether a bug report is being dealt with: open (the status of every new
// report) or closed.
type BugReportStatus uint8

// The statuses, as the API writes them.
const (
	BugReportOpen   BugReportStatus = 0
	BugReportClosed BugReportStatus = 1
)

// Valid says whether s is one of the two statuses.
func (s BugReportStatus) Valid() bool { return s == BugReportOpen || s == BugReportClosed }

// ParseBugReportStatus reads a status as the API's parameters write it: "0" or "1".
func ParseBugReportStatus(s string) (BugReportStatus, bool) {
	switch s {
	case "0":
		return BugReportOpen, true
	case "1":
		return BugReportClosed, true
	}
	return 0, false
}

// BugReportState is the part of a bug report that changes after it was sent: its status, and
// when that was last set. The metadata store keeps one per report whose status was ever set;
// a report without one is open and was last updated when it was reported.
type BugReportState struct {
	AppID     uuid.UUID
	ID        uuid.UUID // the report's event id
	Status    BugReportStatus
	UpdatedAt time.Time
}

// BugReportQuery selects the bug reports of one app for the bug report pages: GET
// /apps/{id}/bugReports and /bugReports/plots/instances.
type BugReportQuery struct {
	// EventFilter's fields apply to the report's event as on every other endpoint: the window
	// bounds its timestamp, [From, To); versions, attribute lists, Countries and UD as
	// EventFilter.Match.
	EventFilter
	// OSVersions: the event's (os_name, os_version) is one of them.
	OSVersions []OSVersion
	// Statuses: the report's status is one of them; empty (or both) is any.
	Statuses []BugReportStatus
	// Closed holds the ids of the app's closed reports, as the metadata store has them; every
	// other report is open. Only read when Statuses selects one status (StatusFilter).
	Closed map[uuid.UUID]struct{}
	// FreeText, when not empty, keeps the reports it matches (MatchFreeText).
	FreeText string
}

// StatusFilter returns the one status the query keeps, and false when it keeps both (no
// Statuses, or both of them).
func (q *BugReportQuery) StatusFilter() (BugReportStatus, bool) {
	open, closed := slices.Contains(q.Statuses, BugReportOpen), slices.Contains(q.Statuses, BugReportClosed)
	if open == closed {
		return 0, false
	}
	if closed {
		return BugReportClosed, true
	}
	return BugReportOpen, true
}

// StatusOf is the status of the report with id as the query sees it: closed when Closed
// holds it.
func (q *BugReportQuery) StatusOf(id uuid.UUID) BugReportStatus {
	if _, ok := q.Closed[id]; ok {
		return BugReportClosed
	}
	return BugReportOpen
}

// Match says whether e is a bug report of the query's app that the query selects.
func (q *BugReportQuery) Match(e *Event) bool {
	if e.Type != BugReportType || e.AppID != q.App {
		return false
	}
	if st, ok := q.StatusFilter(); ok && q.StatusOf(e.ID) != st {
		return false
	}
	a := &e.Attribute
	if len(q.OSVersions) > 0 && !slices.Contains(q.OSVersions, OSVersion{Name: a.OSName, Version: a.OSVersion}) {
		return false
	}
	if !q.EventFilter.Match(e) {
		return false
	}
	return q.FreeText == "" || MatchFreeText(e, q.FreeText) != 0
}

// The parts of a report free text can match (MatchFreeText).
const (
	FreeTextUserID = 1 << iota
	FreeTextReportID
	FreeTextSessionID
	FreeTextDescription
)

// MatchFreeText says which parts of the bug report e the free text matches (0 for none, or
// for an empty text): the user id when it equals the text, the report's id or session id when
// it is the text (a UUID, in either case), the description when it contains the text. Case is
// ignored for ASCII letters only (A–Z equal a–z; É and é differ), as ud_expression's string
// operators do, so that every store compares alike.
func MatchFreeText(e *Event, text string) int {
	if text == "" {
		return 0
	}
	low := lowerASCII(text)
	m := 0
	if e.Attribute.UserID != "" && lowerASCII(e.Attribute.UserID) == low {
		m |= FreeTextUserID
	}
	if e.ID.String() == low {
		m |= FreeTextReportID
	}
	if e.SessionID.String() == low {
		m |= FreeTextSessionID
	}
	if strings.Contains(lowerASCII(BugReportDescription(e.Payload)), low) {
		m |= FreeTextDescription
	}
	return m
}

// snippetContext is how many bytes of the description MatchedFreeText shows on each side of
// the match, at most.
const snippetContext = 40

// MatchedFreeText says what of the bug report e the free text matched, as the report list
// shows it: "User Id: …", "Bug Report Id: …", "Session Id: …" and "Description: …" (the
// description around the first match, cut at snippetContext bytes each side with "…"), each
// that matched, in that order, joined by spaces; "" when nothing matched.
func MatchedFreeText(e *Event, text string) string {
	m := MatchFreeText(e, text)
	var parts []string
	if m&FreeTextUserID != 0 {
		parts = append(parts, "User Id: "+e.Attribute.UserID)
	}
	if m&FreeTextReportID != 0 {
		parts = append(parts, "Bug Report Id: "+e.ID.String())
	}
	if m&FreeTextSessionID != 0 {
		parts = append(parts, "Session Id: "+e.SessionID.String())
	}
	if m&FreeTextDescription != 0 {
		d := BugReportDescription(e.Payload)
		i := strings.Index(lowerASCII(d), lowerASCII(text))
		lo, hi := max(0, i-snippetContext), min(len(d), i+len(text)+snippetContext)
		for lo > 0 && !utf8.RuneStart(d[lo]) {
			lo--
		}
		for hi < len(d) && !utf8.RuneStart(d[hi]) {
			hi++
		}
		s := d[lo:hi]
		if lo > 0 {
			s = "…" + s
		}
		if hi < len(d) {
			s += "…"
		}
		parts = append(parts, "Description: "+s)
	}
	return strings.Join(parts, " ")
}

// lowerASCII lowers A–Z only.
func lowerASCII(s string) string {
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

// descriptionKey is what BugReportDescription looks for in a payload.
var descriptionKey = []byte(`"description":`)

// BugReportDescription is the description of a bug report from its payload (the compact JSON
// object of its bug_report member, as stored): the string value of the first member named
// description, decoded. "" when there is none or its value is not a string.
//
// "First" is in the text of the payload, at any depth: the definition is that of ClickHouse's
// visitParamExtractString, so that the ClickHouse store can compute it in SQL on every row.
// In compact JSON the bytes "description": only occur as a member name (inside a string the
// quotes are escaped), and SDKs send one member, description, so for every real report this
// is the description member. Escapes decode as JSON says, except for UTF-16 surrogates that do
// not pair up, which no SDK writes (JSON encoders write valid UTF-16 or raw UTF-8); they
// decode as ClickHouse 18.16 does (decodeLikeClickHouse).
func BugReportDescription(payload []byte) string {
	return payloadMember(payload, descriptionKey)
}

// decodeLikeClickHouse decodes the JSON string content that starts raw (after the opening
// quote) up to its closing quote, as ClickHouse 18.16's visitParamExtractString does (checked
// against it by the event store conformance suite):
//   - the escapes \" \\ \/ \b \f \n \r \t and \uXXXX as JSON says; a high surrogate followed by
//     \u and a low surrogate is one code point;
//   - a lone low surrogate becomes its three-byte encoding (which is not valid UTF-8);
//   - a high surrogate followed by anything else is dropped; when a backslash follows it, the
//     backslash is dropped too and the next byte is read as an ordinary character (so a quote
//     there ends the string) — and when that is \u, both escapes are dropped;
//   - ok is false when the content ends before a closing quote or holds another escape.
func decodeLikeClickHouse(raw []byte) (string, bool) {
	var out []byte
	for i := 0; i < len(raw); {
		c := raw[i]
		switch c {
		case '"':
			return string(out), true
		case '\\':
		default:
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			out = append(out, raw[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			u, ok := hex4Of(raw[i+2:])
			if !ok {
				return "", false
			}
			i += 6
			if u < 0xD800 || u > 0xDBFF {
				out = appendCodeUnit(out, u)
				continue
			}
			// A high surrogate: only a \u escape of a low one completes it.
			if i >= len(raw) || raw[i] != '\\' {
				continue
			}
			i++ // the backslash is consumed whatever follows
			if i >= len(raw) || raw[i] != 'u' {
				continue
			}
			u2, ok := hex4Of(raw[i+1:])
			if !ok {
				return "", false
			}
			i += 5
			if u2 >= 0xDC00 && u2 <= 0xDFFF {
				out = utf8.AppendRune(out, rune((u-0xD800)<<10+(u2-0xDC00)+0x10000))
			}
			continue
		default:
			return "", false
		}
		i += 2
	}
	return "", false
}

// hex4Of reads four hex digits.
func hex4Of(b []byte) (int, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v := 0
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// appendCodeUnit appends a UTF-16 code unit below 0x10000 in UTF-8's layout, surrogates
// included (utf8.AppendRune would write U+FFFD for them).
func appendCodeUnit(b []byte, u int) []byte {
	switch {
	case u < 0x80:
		return append(b, byte(u))
	case u < 0x800:
		return append(b, byte(0xC0|u>>6), byte(0x80|u&0x3F))
	}
	return append(b, byte(0xE0|u>>12), byte(0x80|(u>>6)&0x3F), byte(0x80|u&0x3F))
}

// CompareBugReports orders reports newest first: timestamp descending, then id descending
// (byte order). It is the order of the bug report list.
func CompareBugReports(a, b *Event) int {
	switch {
	case a.Timestamp > b.Timestamp:
		return -1
	case a.Timestamp < b.Timestamp:
		return 1
	}
	return -bytes.Compare(a.ID[:], b.ID[:])
}

// BugReportCount is how many bug reports of one version fall in one plot bucket: a point of
// /bugReports/plots/instances.
type BugReportCount struct {
	Version AppVersion
	Bucket  int64 // Buckets.Start of the reports' timestamps, Unix ns
	Count   uint64
}

// CompareBugReportCounts orders counts by bucket, then version name and code.
func CompareBugReportCounts(a, b *BugReportCount) int {
	switch {
	case a.Bucket < b.Bucket:
		return -1
	case a.Bucket > b.Bucket:
		return 1
	}
	if c := strings.Compare(a.Version.Name, b.Version.Name); c != 0 {
		return c
	}
	return strings.Compare(a.Version.Code, b.Version.Code)
}
