package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/model/corpus"
)

// A Template is one fixture body parsed once, with the byte positions of every value a replay
// must change. Replaying splices fresh values into the original bytes (see Rewriter) instead
// of decoding and re-encoding JSON, so the generator stays cheap next to the server it loads.
type Template struct {
	Name          string
	Events, Spans int // items in the body
	raw           []byte
	subs          []subst // in body order (tokens come in order), so items can slice them
	items         []item  // events then spans, in body order within each array
	slots         []kind  // id slots: one fresh value per distinct original id per replay
	maxTime       int64   // latest event timestamp or span time: what "now" replaces
}

// kind is what a substituted value is; it decides how a fresh value is made.
type kind uint8

const (
	kUUID  kind = iota // event, session and attachment ids: 36-character UUID v4
	kSpan              // span_id and parent_id: 16 lowercase hex
	kTrace             // trace_id: 32 lowercase hex
	kTime              // timestamps: shifted, printed with the original fractional digits
)

var kindLen = [...]int{kUUID: 36, kSpan: 16, kTrace: 32}

// subst is one string value to replace: raw[start:end] is its text without the quotes.
type subst struct {
	start, end int32
	kind       kind
	digits     int8  // kTime: fractional digits of the original
	slot       int32 // ids: index into Template.slots
	ns         int64 // kTime: original instant, Unix nanoseconds
}

// item is one event or span object: raw[start:end], with subs[first:last] inside it.
type item struct {
	start, end  int32
	first, last int32
	event       bool
}

// frame is one open JSON container while a fixture is scanned.
type frame struct {
	obj     bool
	wantKey bool
	key     string // object: the member whose value comes next
}

// ParseTemplate scans body once and records where its ids and timestamps are. It refuses a
// body whose values would need JSON escapes (ids and timestamps never do in SDK output), so
// every splice is a plain byte copy.
func ParseTemplate(name string, body []byte) (*Template, error) {
	t := &Template{Name: name, raw: body}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var (
		st      []frame
		slotOf  = map[string]int32{}
		itemIdx = -1
		anchor  bool
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		off := int32(dec.InputOffset())
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if len(st) == 2 && d == '{' && st[0].obj && !st[1].obj && (st[0].key == "events" || st[0].key == "spans") {
					itemIdx = len(t.items)
					t.items = append(t.items, item{start: off - 1, first: int32(len(t.subs)), event: st[0].key == "events"})
				}
				st = append(st, frame{obj: d == '{', wantKey: d == '{'})
			case '}', ']':
				st = st[:len(st)-1]
				if len(st) == 2 && d == '}' && itemIdx >= 0 {
					it := &t.items[itemIdx]
					it.end, it.last = off, int32(len(t.subs))
					if body[it.start] != '{' || body[it.end-1] != '}' {
						return nil, fmt.Errorf("%s: cannot find the bounds of item %d", name, itemIdx)
					}
					itemIdx = -1
				}
				valueDone(st)
			}
			continue
		}
		if n := len(st); n > 0 && st[n-1].obj && st[n-1].wantKey {
			st[n-1].key, st[n-1].wantKey = tok.(string), false
			continue
		}
		if s, ok := tok.(string); ok {
			if k, ok := classify(st); ok {
				// session_start_time follows the shift but does not set the anchor.
				itemTime := len(st) == 3 || len(st) == 5
				if err := t.add(k, s, off, slotOf, itemTime, &anchor); err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
			}
		}
		valueDone(st)
	}
	for _, it := range t.items {
		if it.event {
			t.Events++
		} else {
			t.Spans++
		}
	}
	if t.Events+t.Spans == 0 {
		return nil, fmt.Errorf("%s: no events and no spans", name)
	}
	return t, nil
}

// valueDone moves the innermost container past one value.
func valueDone(st []frame) {
	if n := len(st); n > 0 && st[n-1].obj {
		st[n-1].wantKey = true
	}
}

// classify says whether the string value about to be read (its path is the stack st) is an id
// or a timestamp a replay changes. Paths: events[].{id,session_id,timestamp},
// events[].attachments[].id, events[].attribute.session_start_time,
// spans[].{trace_id,span_id,parent_id,session_id,start_time,end_time},
// spans[].checkpoints[].timestamp, spans[].attributes.session_start_time.
func classify(st []frame) (kind, bool) {
	if len(st) < 3 || !st[0].obj || st[1].obj || !st[2].obj {
		return 0, false
	}
	events := st[0].key == "events"
	if !events && st[0].key != "spans" {
		return 0, false
	}
	member := st[2].key
	switch len(st) {
	case 3:
		switch {
		case member == "id" && events, member == "session_id":
			return kUUID, true
		case member == "timestamp" && events, (member == "start_time" || member == "end_time") && !events:
			return kTime, true
		case (member == "span_id" || member == "parent_id") && !events:
			return kSpan, true
		case member == "trace_id" && !events:
			return kTrace, true
		}
	case 4:
		if st[3].obj && st[3].key == "session_start_time" && (member == "attribute" && events || member == "attributes" && !events) {
			return kTime, true
		}
	case 5:
		if st[3].obj || !st[4].obj {
			return 0, false
		}
		if events && member == "attachments" && st[4].key == "id" {
			return kUUID, true
		}
		if !events && member == "checkpoints" && st[4].key == "timestamp" {
			return kTime, true
		}
	}
	return 0, false
}

// add records the value s that ends (closing quote included) at offset end.
func (t *Template) add(k kind, s string, end int32, slotOf map[string]int32, itemTime bool, anchor *bool) error {
	start := end - 1 - int32(len(s))
	if start < 1 || t.raw[start-1] != '"' || t.raw[end-1] != '"' || string(t.raw[start:end-1]) != s {
		return fmt.Errorf("value %q is escaped in the body; cannot splice it", s)
	}
	sub := subst{start: start, end: end - 1, kind: k}
	switch k {
	case kTime:
		ns, err := model.ParseTimestamp(s)
		if err != nil {
			return fmt.Errorf("timestamp %q: %w", s, err)
		}
		sub.ns, sub.digits = ns, fracDigits(s)
		if itemTime && (!*anchor || ns > t.maxTime) {
			*anchor, t.maxTime = true, ns
		}
	default:
		v := strings.ToLower(s)
		switch {
		case k == kUUID:
			if _, err := uuid.Parse(v); err != nil {
				return nil // not an id this tool can renew; the server will judge it
			}
		case len(v) != kindLen[k] || !isHex(v):
			return nil // e.g. parent_id "" (a root span)
		}
		key := string(rune('0'+k)) + v
		slot, ok := slotOf[key]
		if !ok {
			slot = int32(len(t.slots))
			slotOf[key] = slot
			t.slots = append(t.slots, k)
		}
		sub.slot = slot
	}
	t.subs = append(t.subs, sub)
	return nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// fracDigits counts the fractional-second digits of an RFC 3339 timestamp.
func fracDigits(s string) int8 {
	if len(s) < 20 || s[19] != '.' {
		return 0
	}
	n := int8(0)
	for i := 20; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n++
	}
	return n
}

// Items is the number of events plus spans.
func (t *Template) Items() int { return t.Events + t.Spans }

// Size is the length of the original body; replays differ only by timestamp digits.
func (t *Template) Size() int { return len(t.raw) }

// Body is the original body as recorded. The caller must not change it.
func (t *Template) Body() []byte { return t.raw }

// LoadTemplates parses every batch_*.json in dir whose name matches match (nil: all), checks
// each with model.DecodeBatch (and, for multipart, each item with the multipart rules) so a
// broken fixture fails here and not as a flood of 400s, and returns them sorted by name.
func LoadTemplates(dir string, match *regexp.Regexp, multipart bool) ([]*Template, error) {
	names, err := filepath.Glob(filepath.Join(dir, "batch_*.json"))
	if err != nil {
		return nil, fmt.Errorf("list fixtures: %w", err)
	}
	sort.Strings(names)
	var out []*Template
	for _, p := range names {
		base := filepath.Base(p)
		if match != nil && !match.MatchString(base) {
			continue
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read fixture: %w", err)
		}
		if _, err := model.DecodeBatch(body, uuid.Nil, false); err != nil {
			return nil, fmt.Errorf("%s is not a valid batch: %w", base, err)
		}
		t, err := ParseTemplate(base, body)
		if err != nil {
			return nil, err
		}
		if multipart {
			if err := t.checkParts(); err != nil {
				return nil, err
			}
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no batch_*.json files in %s match", dir)
	}
	return out, nil
}

// checkParts decodes every item as a multipart part would be.
func (t *Template) checkParts() error {
	var b model.Batch
	for i, it := range t.items {
		part := t.raw[it.start:it.end]
		var err error
		if it.event {
			err = b.AddEventPart(part, uuid.Nil)
		} else {
			err = b.AddSpanPart(part, uuid.Nil)
		}
		if err != nil {
			return fmt.Errorf("%s item %d breaks the multipart rules: %w", t.Name, i, err)
		}
	}
	return b.Validate()
}

// FixturesDir finds testdata/sdk of the repository holding the working directory.
func FixturesDir() (string, error) {
	dir, err := corpus.Dir()
	if err != nil {
		return "", fmt.Errorf("%w; give the folder explicitly", err)
	}
	return dir, nil
}
