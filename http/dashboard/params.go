package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Limits of the analytics queries.
const (
	defaultLimit = 10   // items per page when limit is absent
	maxLimit     = 1000 // largest |limit|
)

// The attribute filter lists of the dashboard API, by query parameter.
var listParams = []struct {
	name string
	get  func(f *model.EventFilter) *[]string
}{
	{"countries", func(f *model.EventFilter) *[]string { return &f.Countries }},
	{"device_names", func(f *model.EventFilter) *[]string { return &f.DeviceNames }},
	{"device_manufacturers", func(f *model.EventFilter) *[]string { return &f.DeviceManufacturers }},
	{"locales", func(f *model.EventFilter) *[]string { return &f.Locales }},
	{"network_providers", func(f *model.EventFilter) *[]string { return &f.NetworkProviders }},
	{"network_types", func(f *model.EventFilter) *[]string { return &f.NetworkTypes }},
	{"network_generations", func(f *model.EventFilter) *[]string { return &f.NetworkGenerations }},
}

// params reads an analytics request's query, with the filters of its filter_short_code under
// it: a parameter in the query wins over the same filter in the code.
type params struct {
	q     url.Values
	short map[string]json.RawMessage
}

// badParam is a 400 answer; err is its cause when a parser gave one.
type badParam struct {
	msg string
	err error
}

func (e *badParam) Error() string { return e.msg }

func (e *badParam) Unwrap() error { return e.err }

func bad(format string, a ...any) error { return &badParam{msg: fmt.Sprintf(format, a...)} }

// badErr is a 400 answer saying err.
func badErr(err error) error { return &badParam{msg: err.Error(), err: err} }

// readParams parses the query and loads the short filter it names.
func (a *API) readParams(r *http.Request) (*params, error) {
	p := &params{q: r.URL.Query()}
	code := p.q.Get("filter_short_code")
	if code == "" {
		return p, nil
	}
	sf, err := a.Meta.ShortFilter(r.Context(), appOf(r.Context()).ID, code)
	if errors.Is(err, sinks.ErrNotFound) {
		return nil, bad("filter_short_code %q is not a filter of this app; create it with POST /apps/{id}/shortFilters", code)
	}
	if err != nil {
		return nil, fmt.Errorf("read short filter: %w", err)
	}
	if err := json.Unmarshal(sf.Filters, &p.short); err != nil {
		return nil, fmt.Errorf("short filter %s: %w", code, err)
	}
	return p, nil
}

// str is a single-valued parameter ("" when absent).
func (p *params) str(name string) (string, error) {
	if v, ok := p.q[name]; ok {
		return v[0], nil
	}
	raw, ok := p.short[name]
	if !ok {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", bad("filter_short_code: %s must be a string", name)
	}
	return s, nil
}

// list is a comma-separated list parameter; a short filter may hold it as a string array too.
// Empty items ("a,,b") are refused: the spec has no whitespace or empty values around commas.
func (p *params) list(name string) ([]string, error) {
	var text string
	if v, ok := p.q[name]; ok {
		text = v[0]
	} else if raw, ok := p.short[name]; ok {
		var arr []string
		if err := json.Unmarshal(raw, &arr); err == nil {
			return arr, nil
		}
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, bad("filter_short_code: %s must be a list of strings", name)
		}
	}
	if text == "" {
		return nil, nil
	}
	items := strings.Split(text, ",")
	for _, it := range items {
		if it == "" {
			return nil, bad("%s has an empty item: send values separated by single commas", name)
		}
	}
	return items, nil
}

// window reads from and to: both or neither, RFC 3339 with any fraction of a second, from
// before to. Without them the window is the last 7 UTC calendar days, today included:
// [00:00 six days ago, 00:00 tomorrow), so that default windows are whole days.
func (p *params) window(now time.Time) (from, to int64, err error) {
	fs, err := p.str("from")
	if err != nil {
		return 0, 0, err
	}
	ts, err := p.str("to")
	if err != nil {
		return 0, 0, err
	}
	if fs == "" && ts == "" {
		today := model.BucketStart(now, model.PlotDays)
		return today.AddDate(0, 0, -6).UnixNano(), today.AddDate(0, 0, 1).UnixNano(), nil
	}
	if fs == "" || ts == "" {
		return 0, 0, bad("send from and to together (ISO 8601 timestamps), or neither for the last 7 days")
	}
	f, err := parseTime("from", fs)
	if err != nil {
		return 0, 0, err
	}
	t, err := parseTime("to", ts)
	if err != nil {
		return 0, 0, err
	}
	if !f.Before(t) {
		return 0, 0, bad("from (%s) must be before to (%s)", fs, ts)
	}
	return f.UnixNano(), t.UnixNano(), nil
}

func parseTime(name, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, bad("%s %q is not an ISO 8601 timestamp like 2024-05-01T10:00:00.000Z", name, s)
	}
	return t, nil
}

// versions reads versions and version_codes: both or neither, as many items each.
func (p *params) versions() ([]model.AppVersion, error) {
	names, err := p.list("versions")
	if err != nil {
		return nil, err
	}
	codes, err := p.list("version_codes")
	if err != nil {
		return nil, err
	}
	if len(names) != len(codes) {
		if len(names) == 0 || len(codes) == 0 {
			return nil, bad("send versions and version_codes together")
		}
		return nil, bad("versions has %d items and version_codes %d: they must pair up", len(names), len(codes))
	}
	out := make([]model.AppVersion, len(names))
	for i := range names {
		out[i] = model.AppVersion{Name: names[i], Code: codes[i]}
	}
	return out, nil
}

// filter reads the event filter of an analytics request: window, versions, and, with lists,
// the seven attribute lists and ud_expression.
func (p *params) filter(app model.App, now time.Time, lists bool) (model.EventFilter, error) {
	f := model.EventFilter{App: app.ID}
	var err error
	if f.From, f.To, err = p.window(now); err != nil {
		return f, err
	}
	if f.Versions, err = p.versions(); err != nil {
		return f, err
	}
	if !lists {
		return f, nil
	}
	for _, lp := range listParams {
		if *lp.get(&f), err = p.list(lp.name); err != nil {
			return f, err
		}
	}
	ud, err := p.str("ud_expression")
	if err != nil {
		return f, err
	}
	if ud != "" {
		x, err := model.ParseUDExpr(ud)
		if err != nil {
			return f, bad("ud_expression: %v", err)
		}
		f.UD = x
	}
	return f, nil
}

// limit reads limit: an integer, not 0, at most maxLimit either way; defaultLimit when absent.
func (p *params) limit() (int, error) {
	s := p.q.Get("limit")
	if s == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n == 0 || n > maxLimit || n < -maxLimit {
		return 0, bad("limit %q must be a non-zero integer between -%d and %d", s, maxLimit, maxLimit)
	}
	return n, nil
}

// buckets reads plot_time_group and timezone (model.ParseBuckets): the width of plot buckets
// and the IANA time zone whose wall clock they follow, UTC when timezone is empty. An unknown
// group or zone is a 400 saying which.
func (p *params) buckets() (model.Buckets, error) {
	b, err := model.ParseBuckets(p.q.Get("plot_time_group"), p.q.Get("timezone"))
	if err != nil {
		return b, badErr(err)
	}
	return b, nil
}

// flag reads a 0/1 parameter.
func (p *params) flag(name string, def bool) (bool, error) {
	switch p.q.Get(name) {
	case "":
		return def, nil
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return false, bad("%s must be 0 or 1", name)
}

// maxFreeText is the longest free_text searched for, in bytes.
const maxFreeText = 1024

// freeText reads free_text, without surrounding spaces, at most maxFreeText bytes.
func (p *params) freeText() (string, error) {
	text, err := p.str("free_text")
	if err != nil {
		return "", err
	}
	if text = strings.TrimSpace(text); len(text) > maxFreeText {
		return "", bad("free_text is %d bytes long; at most %d are searched for", len(text), maxFreeText)
	}
	return text, nil
}

// offsetPage reads the limit (1 to maxLimit, default defaultLimit) and offset (0 to
// maxOffset) of the lists paged by offset: spans, sessions, bug reports, alerts. A store is
// asked for limit+1 items, and offsetMeta says from them whether there is more.
func offsetPage(p *params) (limit, offset int, err error) {
	limit = defaultLimit
	if s := p.q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			return 0, 0, bad("limit %q must be an integer from 1 to %d", s, maxLimit)
		}
		limit = n
	}
	if s := p.q.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > maxOffset {
			return 0, 0, bad("offset %q must be an integer from 0 to %d", s, maxOffset)
		}
		offset = n
	}
	return limit, offset, nil
}

// offsetMeta is the meta of an offset page for which a store returned fetched items when asked
// for limit+1.
func offsetMeta(fetched, limit, offset int) pageMeta {
	return pageMeta{Next: fetched > limit, Previous: offset > 0}
}

// maxOffset is the largest offset of the lists paged by offset.
const maxOffset = 1_000_000_000
