package model

import (
	"errors"
	"strconv"

	"github.com/google/uuid"
)

// ErrInvalid matches (errors.Is) every *ValidationError: the request breaks the ingestion
// contract and the answer is 400. SDKs drop a batch for good on 400, so nothing else may use it.
var ErrInvalid = errors.New("invalid ingest payload")

// ValidationError says which item of a request breaks which rule, precisely enough for a person
// to fix the payload. Malformed JSON is reported the same way, with the byte offset in Rule.
type ValidationError struct {
	Item  string // "event", "span", or "" for the request as a whole
	Index int    // position of the item in its array (or among the multipart parts of its kind)
	Field string // JSON path inside the item, e.g. "attribute.app_version", "exception.exceptions[0].frames"
	Rule  string // what is wrong, e.g. "is required"
}

// Error reads like "event 3: attribute.app_version: is required".
func (e *ValidationError) Error() string {
	n := len(e.Item) + len(e.Field) + len(e.Rule) + 24
	b := make([]byte, 0, n)
	if e.Item != "" {
		b = append(b, e.Item...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e.Index), 10)
		b = append(b, ": "...)
	}
	if e.Field != "" {
		b = append(b, e.Field...)
		b = append(b, ": "...)
	}
	b = append(b, e.Rule...)
	return string(b)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// fieldErr builds a ValidationError for a field; the item is filled in by the caller.
func fieldErr(field, rule string) *ValidationError {
	return &ValidationError{Field: field, Rule: rule}
}

// underField prefixes the Field of a *ValidationError with a path element: "attribute" + "app_version"
// gives "attribute.app_version", "frames" + "[3].in_app" gives "frames[3].in_app".
func underField(err error, p string) error {
	var ve *ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	switch {
	case ve.Field == "":
		ve.Field = p
	case ve.Field[0] == '[':
		ve.Field = p + ve.Field
	default:
		ve.Field = p + "." + ve.Field
	}
	return err
}

// underIndex prefixes the Field with an array index: "[3]".
func underIndex(err error, i int) error {
	return underField(err, "["+strconv.Itoa(i)+"]")
}

// atItem sets the Item and Index of a *ValidationError.
func atItem(err error, kind string, index int) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		ve.Item, ve.Index = kind, index
	}
	return err
}

// Batch is one PUT /events request after decoding: what the JSON body or the multipart parts
// held, in request order.
type Batch struct {
	Events []Event
	Spans  []Span
	// Inline holds the decoded bytes of legacy attachments that carried their content inline
	// (`bytes`, base64 in the wire), so the server can store them without an upload URL.
	Inline []InlineBlob
}

// InlineBlob is the content of an attachment that a legacy SDK sent inside the event.
type InlineBlob struct {
	EventID      uuid.UUID
	AttachmentID uuid.UUID
	Bytes        []byte
}

// Validate checks the rules that need the whole request (acceptance rules 1, 2 and 6 of the
// spec): at least one event or span, no duplicate event ids or span ids, and a session_start
// event no later than any other event of its session within the request. DecodeBatch calls it;
// a multipart handler calls it after collecting all parts. A session_start that ties with
// another event of its session is first by time: real Android SDKs stamp session_start and the
// first cpu_usage in the same millisecond, and such a batch must be accepted.
func (b *Batch) Validate() error {
	if len(b.Events) == 0 && len(b.Spans) == 0 {
		return &ValidationError{Field: "events, spans", Rule: "at least one event or span is required"}
	}
	if len(b.Events) > 1 {
		seen := make(map[uuid.UUID]int, len(b.Events))
		hasStart := false
		for i := range b.Events {
			e := &b.Events[i]
			if j, dup := seen[e.ID]; dup {
				return &ValidationError{Item: "event", Index: i, Field: "id",
					Rule: "duplicates the id of event " + strconv.Itoa(j) + " (" + e.ID.String() + ")"}
			}
			seen[e.ID] = i
			hasStart = hasStart || e.Type == "session_start"
		}
		if hasStart {
			if err := b.checkSessionStart(); err != nil {
				return err
			}
		}
	}
	if len(b.Spans) > 1 {
		seen := make(map[string]int, len(b.Spans))
		for i := range b.Spans {
			s := &b.Spans[i]
			if j, dup := seen[s.SpanID]; dup {
				return &ValidationError{Item: "span", Index: i, Field: "span_id",
					Rule: "duplicates the span_id of span " + strconv.Itoa(j) + " (" + s.SpanID + ")"}
			}
			seen[s.SpanID] = i
		}
	}
	return nil
}

// checkSessionStart enforces acceptance rule 6 within the request: for each session, no event is
// strictly earlier than that session's session_start event.
func (b *Batch) checkSessionStart() error {
	type first struct {
		ts    int64
		index int
	}
	earliest := make(map[uuid.UUID]first)
	for i := range b.Events {
		e := &b.Events[i]
		if f, ok := earliest[e.SessionID]; !ok || e.Timestamp < f.ts {
			earliest[e.SessionID] = first{e.Timestamp, i}
		}
	}
	for i := range b.Events {
		e := &b.Events[i]
		if e.Type != "session_start" {
			continue
		}
		if f := earliest[e.SessionID]; f.ts < e.Timestamp {
			o := &b.Events[f.index]
			return &ValidationError{Item: "event", Index: i, Field: "timestamp",
				Rule: "session_start must be the first event by time in its session, but event " +
					strconv.Itoa(f.index) + " (" + o.Type + ") of session " + e.SessionID.String() + " is earlier"}
		}
	}
	return nil
}

// TimeWindow bounds the times an accepted batch may carry, in Unix nanoseconds: [Oldest, Newest].
// OldestWhy and NewestWhy say in words what each bound is, for the 400's rule.
type TimeWindow struct {
	Oldest, Newest       int64
	OldestWhy, NewestWhy string
}

// CheckTimes refuses the first event timestamp or span start or end time outside w. Times far in
// the future would never age out under retention and stretch every plot; times before the
// retention window would be deleted by the next retention run.
func (b *Batch) CheckTimes(w TimeWindow) error {
	check := func(item string, i int, field string, t int64) error {
		switch {
		case t < w.Oldest:
			return &ValidationError{Item: item, Index: i, Field: field, Rule: FormatNanos(t) + " is " + w.OldestWhy}
		case t > w.Newest:
			return &ValidationError{Item: item, Index: i, Field: field, Rule: FormatNanos(t) + " is " + w.NewestWhy}
		}
		return nil
	}
	for i := range b.Events {
		if err := check("event", i, "timestamp", b.Events[i].Timestamp); err != nil {
			return err
		}
	}
	for i := range b.Spans {
		if err := check("span", i, "start_time", b.Spans[i].StartTime); err != nil {
			return err
		}
		if err := check("span", i, "end_time", b.Spans[i].EndTime); err != nil {
			return err
		}
	}
	return nil
}
