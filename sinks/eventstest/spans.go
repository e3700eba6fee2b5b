package eventstest

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// SpanStore is an event store that answers the span queries: both event stores are.
type SpanStore interface {
	sinks.EventStore
	sinks.Spans
}

// SpansReference is the brute-force answer of sinks.Spans over a set of spans, by the model's
// Go definitions. Backends' own tests may use it on data of their own.
type SpansReference struct {
	spans []model.Span // one per (app, span id): the last written
}

// NewSpansReference keeps the last of the spans written with each (app, span id), as a store
// does.
func NewSpansReference(written []model.Span) *SpansReference {
	type key struct {
		app uuid.UUID
		id  string
	}
	return &SpansReference{spans: lastBy(written, func(s *model.Span) key { return key{s.AppID, s.SpanID} })}
}

// RootSpanNames is sinks.Spans.RootSpanNames.
func (r *SpansReference) RootSpanNames(app uuid.UUID, limit int) []string {
	latest := map[string]int64{}
	for i := range r.spans {
		s := &r.spans[i]
		if s.AppID != app || s.ParentID != "" {
			continue
		}
		if t, ok := latest[s.Name]; !ok || s.StartTime > t {
			latest[s.Name] = s.StartTime
		}
	}
	names := make([]string, 0, len(latest))
	for n := range latest {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(latest[b], latest[a]), cmp.Compare(a, b)) })
	return names[:min(len(names), limit)]
}

func (r *SpansReference) selected(q *model.SpanQuery) []model.Span {
	var out []model.Span
	for i := range r.spans {
		if q.Match(&r.spans[i]) {
			out = append(out, r.spans[i])
		}
	}
	slices.SortFunc(out, func(a, b model.Span) int { return model.CompareSpansNewest(&a, &b) })
	return out
}

// RootSpans is sinks.Spans.RootSpans.
func (r *SpansReference) RootSpans(q *model.SpanQuery, limit, offset int) []model.Span {
	all := r.selected(q)
	if offset >= len(all) {
		return nil
	}
	return all[offset:min(len(all), offset+limit)]
}

// RootSpanDurations is sinks.Spans.RootSpanDurations, sorted by sortDurations.
func (r *SpansReference) RootSpanDurations(q *model.SpanQuery, by model.Buckets) []model.SpanDurations {
	type key struct {
		v model.AppVersion
		b int64
	}
	cells := map[key][]uint64{}
	for _, s := range r.selected(q) {
		k := key{model.AppVersion{Name: s.Attributes.AppVersion, Code: s.Attributes.AppBuild}, model.SpanBucket(&s, by)}
		cells[k] = append(cells[k], s.Duration)
	}
	out := []model.SpanDurations{}
	for k, ds := range cells {
		out = append(out, model.SpanDurationsOf(k.v, k.b, ds))
	}
	sortDurations(out)
	return out
}

// Trace is sinks.Spans.Trace; nil for none (the store's ErrNotFound).
func (r *SpansReference) Trace(app uuid.UUID, traceID string) []model.Span {
	var out []model.Span
	for _, s := range r.spans {
		if s.AppID == app && s.TraceID == traceID {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b model.Span) int { return model.CompareSpansNewest(&a, &b) })
	return out
}

func sortDurations(ds []model.SpanDurations) {
	slices.SortFunc(ds, func(a, b model.SpanDurations) int {
		return cmp.Or(cmp.Compare(a.Bucket, b.Bucket), cmp.Compare(a.Version.Name, b.Version.Name), cmp.Compare(a.Version.Code, b.Version.Code))
	})
}

// spanData is the dataset of RunSpans: what is written (replays included) and the apps.
type spanData struct {
	A, B, C uuid.UUID
	Z       uuid.UUID      // root spans of every name at each of zoneEdges
	written [][]model.Span // one WriteSpans call each
	ref     *SpansReference
	lo, hi  int64 // app A's span start times, min and max
	traces  []string
}

var (
	spanNames    = []string{"checkout", "feed.load", "launch ✓"}
	spanVersions = []model.AppVersion{{Name: "1.0", Code: "10"}, {Name: "1.1", Code: "11"}, {Name: "2.0-β", Code: "20"}}
	spanOSes     = []model.OSVersion{{Name: "android", Version: "33"}, {Name: "android", Version: "34"}, {Name: "ios", Version: "17.2"}}
)

// spanDay is the first UTC day of the dataset, plus odd nanoseconds.
var spanDay = time.Date(2025, 5, 30, 0, 0, 0, 0, time.UTC).UnixNano() + 123_457

// buildSpanData makes app A's spans at random (fixed seed): traces of a root and children, the
// children sometimes named as roots are, ties in start time, every attribute of the filters
// varied, durations with repeats; some spans are written twice. App B shares A's names and a trace id; app C is hand-written
// (testSpansHand).
func buildSpanData() *spanData {
	d := &spanData{A: uuid.New(), B: uuid.New(), C: uuid.New(), Z: uuid.New()}
	r := rand.New(rand.NewPCG(13, 7))
	var spans []model.Span
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	start := spanDay
	for tr := 0; tr < 120; tr++ {
		trace := fmt.Sprintf("%032x", r.Uint64())
		d.traces = append(d.traces, trace)
		// Every fifth trace starts at the same time as the one before: ties.
		if tr%5 != 0 {
			start += int64(r.IntN(3*3600)) * int64(time.Second) / 2
		}
		v := spanVersions[r.IntN(len(spanVersions))]
		os := spanOSes[r.IntN(len(spanOSes))]
		a := model.Attributes{
			InstallationID: "inst-" + strconv.Itoa(r.IntN(4)), AppVersion: v.Name, AppBuild: v.Code,
			OSName: os.Name, OSVersion: os.Version,
			DeviceName:         pick([]string{"sunfish", "iPhone15,2"}),
			DeviceManufacturer: pick([]string{"Google", "Apple"}),
			DeviceModel:        "m", DeviceLocale: pick([]string{"en-US", "fr-FR"}),
			NetworkType: pick([]string{"wifi", "cellular", "no_network"}), NetworkProvider: pick([]string{"", "Orange"}),
			NetworkGeneration: pick([]string{"", "4g", "5g"}), ThreadName: "main",
		}
		var ud []model.UDAttr
		if r.IntN(4) != 0 {
			ud = []model.UDAttr{
				{Key: "n", Type: model.UDInt64, Value: strconv.Itoa(r.IntN(10))},
				{Key: "tier", Type: model.UDString, Value: pick([]string{"gold", "silver"})},
			}
		}
		session := uuid.New()
		root := model.Span{
			AppID: d.A, SpanID: fmt.Sprintf("%016x", r.Uint64()), TraceID: trace, SessionID: session,
			Name: spanNames[r.IntN(len(spanNames))], Status: uint8(r.IntN(3)), StartTime: start,
			Duration: uint64(1 + r.IntN(40)*25), Attributes: a, UserDefined: ud,
		}
		root.EndTime = root.StartTime + int64(root.Duration)*int64(time.Millisecond)
		if r.IntN(3) == 0 {
			root.Checkpoints = []model.Checkpoint{{Name: "first", Timestamp: start + 5}, {Name: "ü", Timestamp: start + 9}}
		}
		spans = append(spans, root)
		for c := r.IntN(4); c > 0; c-- {
			child := root
			child.SpanID = fmt.Sprintf("%016x", r.Uint64())
			child.ParentID = root.SpanID
			child.Checkpoints = nil
			child.StartTime = root.StartTime + int64(r.IntN(3)) // sometimes the root's time
			if r.IntN(2) == 0 {
				child.Name = spanNames[r.IntN(len(spanNames))] // a child named as roots are
			} else {
				child.Name = "child-" + strconv.Itoa(c)
			}
			spans = append(spans, child)
		}
	}
	d.lo, d.hi = spans[0].StartTime, start
	// App B: the same names, and a trace id of A's.
	for i := range 6 {
		s := spans[i]
		s.AppID, s.SpanID = d.B, fmt.Sprintf("b%015x", i)
		s.StartTime += int64(time.Hour) * 24 * 30
		spans = append(spans, s)
	}
	// Replays: a few spans again, as the spool replays them (the same values).
	replay := everyNth(spans, 17)
	hand := handSpans(d.C)
	var zone []model.Span
	for i, ts := range zoneEdges {
		for j, n := range spanNames {
			v := spanVersions[(i+j)%len(spanVersions)]
			zone = append(zone, model.Span{AppID: d.Z, SpanID: fmt.Sprintf("e%015x", i*len(spanNames)+j),
				TraceID: fmt.Sprintf("e%031x", i*len(spanNames)+j), Name: n, Status: 1, StartTime: ts,
				EndTime: ts + int64(i+1)*int64(time.Millisecond), Duration: uint64(i + 1),
				Attributes: model.Attributes{AppVersion: v.Name, AppBuild: v.Code, OSName: "android", OSVersion: "34"}})
		}
	}
	d.written = [][]model.Span{spans, replay, hand, zone}
	d.ref = NewSpansReference(concat(d.written))
	return d
}

// RunSpans checks the sinks.Spans contract. open must return a fresh, empty store; the suite
// writes one dataset into it and closes it at the end. Each answer is compared with
// SpansReference; app C's answers are also written out by hand (testSpansHand). Call it inside
// t.Run("<backend>", …).
func RunSpans(t *testing.T, open func(t *testing.T) SpanStore) {
	d := buildSpanData()
	s := openWritten(t, open, nil, d.written)
	c := ctx(t)
	t.Run("HandWritten", func(t *testing.T) { testSpansHand(t, s, d) })
	t.Run("RootSpanNames", func(t *testing.T) {
		for _, app := range []uuid.UUID{d.A, d.B, d.C, uuid.New()} {
			for _, limit := range []int{1, 2, 3, 100} {
				got, err := s.RootSpanNames(c, app, limit)
				if err != nil {
					t.Fatalf("RootSpanNames: %v", err)
				}
				if want := d.ref.RootSpanNames(app, limit); !slices.Equal(got, want) {
					t.Errorf("RootSpanNames(%s, %d) = %q, want %q", app, limit, got, want)
				}
			}
		}
	})
	queries := spanQueries(t, d)
	t.Run("RootSpans", func(t *testing.T) {
		for _, q := range queries {
			all := d.ref.RootSpans(&q.q, 1<<30, 0)
			if !q.empty && len(all) == 0 {
				t.Fatalf("%s: selects nothing; the dataset must make it select some", q.name)
			}
			for _, p := range [][2]int{{1000, 0}, {1, 0}, {5, 0}, {5, 5}, {3, len(all) - 2}, {10, len(all)}} {
				if p[1] < 0 {
					continue
				}
				got, err := s.RootSpans(c, &q.q, p[0], p[1])
				if err != nil {
					t.Fatalf("%s: RootSpans: %v", q.name, err)
				}
				want := d.ref.RootSpans(&q.q, p[0], p[1])
				if len(got) != len(want) {
					t.Errorf("%s limit %d offset %d: %d spans, want %d", q.name, p[0], p[1], len(got), len(want))
					continue
				}
				for i := range want {
					if df := diff(got[i], want[i]); df != "" {
						t.Errorf("%s limit %d offset %d, span %d:\n%s", q.name, p[0], p[1], i, df)
						break
					}
				}
			}
		}
	})
	t.Run("RootSpanDurations", func(t *testing.T) {
		for _, q := range queries {
			for _, by := range plotBuckets(t) {
				got, err := s.RootSpanDurations(c, &q.q, by)
				if err != nil {
					t.Fatalf("%s: RootSpanDurations: %v", q.name, err)
				}
				sortDurations(got)
				want := d.ref.RootSpanDurations(&q.q, by)
				if len(got) == 0 && len(want) == 0 {
					continue
				}
				if df := diff(got, want); df != "" {
					t.Errorf("%s by %s:\n%s", q.name, by, df)
				}
			}
		}
	})
	t.Run("Trace", func(t *testing.T) {
		for _, tr := range d.traces {
			for _, app := range []uuid.UUID{d.A, d.B} {
				want := d.ref.Trace(app, tr)
				got, err := s.Trace(c, app, tr)
				if len(want) == 0 {
					if !errors.Is(err, sinks.ErrNotFound) {
						t.Errorf("Trace(%s, %s) = %d spans, %v; want ErrNotFound", app, tr, len(got), err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("Trace: %v", err)
				}
				if df := diff(got, want); df != "" {
					t.Errorf("Trace(%s, %s):\n%s", app, tr, df)
				}
			}
		}
		if _, err := s.Trace(c, d.A, "ffffffffffffffffffffffffffffffff"); !errors.Is(err, sinks.ErrNotFound) {
			t.Errorf("unknown trace: %v, want ErrNotFound", err)
		}
	})
}

type spanQueryCase struct {
	name  string
	q     model.SpanQuery
	empty bool // selects nothing by design
}

// spanQueries are the filter cases of app A: each filter alone, some together, and windows
// whose bounds are span start times.
func spanQueries(t *testing.T, d *spanData) []spanQueryCase {
	full := model.EventFilter{App: d.A, From: d.lo, To: d.hi + 1}
	mid := model.EventFilter{App: d.A, From: d.lo + (d.hi-d.lo)/4, To: d.lo + (d.hi-d.lo)*3/4}
	// Bound the middle window by start times of root spans: one on From (in), one on To (out).
	var starts []int64
	for _, s := range d.ref.spans {
		if s.AppID == d.A && s.ParentID == "" && s.Name == spanNames[0] {
			starts = append(starts, s.StartTime)
		}
	}
	slices.Sort(starts)
	exact := model.EventFilter{App: d.A, From: starts[len(starts)/4], To: starts[len(starts)*3/4]}
	var out []spanQueryCase
	add := func(name string, f model.EventFilter, edit func(q *model.SpanQuery), empty bool) {
		for _, n := range spanNames {
			q := model.SpanQuery{EventFilter: f, Name: n}
			if edit != nil {
				edit(&q)
			}
			out = append(out, spanQueryCase{name: name + "/" + n, q: q, empty: empty})
		}
	}
	add("full", full, nil, false)
	add("zone-edges", model.EventFilter{App: d.Z, From: zoneEdges[0], To: zoneEdges[len(zoneEdges)-1] + 1}, nil, false)
	add("mid", mid, nil, false)
	add("exact-bounds", exact, nil, false)
	add("empty-window", model.EventFilter{App: d.A, From: starts[3], To: starts[3]}, nil, true)
	add("versions", full, func(q *model.SpanQuery) { q.Versions = spanVersions[:2] }, false)
	add("version-cross", full, func(q *model.SpanQuery) {
		q.Versions = []model.AppVersion{{Name: "1.0", Code: "11"}} // name of one, code of another
	}, true)
	add("os", full, func(q *model.SpanQuery) { q.OSVersions = spanOSes[1:] }, false)
	add("os-name-only-match", full, func(q *model.SpanQuery) { q.OSVersions = []model.OSVersion{{Name: "ios", Version: "33"}} }, true)
	add("status-error", full, func(q *model.SpanQuery) { q.Statuses = []uint8{2} }, false)
	add("status-unset-ok", full, func(q *model.SpanQuery) { q.Statuses = []uint8{0, 1} }, false)
	add("device-names", full, func(q *model.SpanQuery) { q.DeviceNames = []string{"sunfish"} }, false)
	add("manufacturers", full, func(q *model.SpanQuery) { q.DeviceManufacturers = []string{"Apple"} }, false)
	add("locales", full, func(q *model.SpanQuery) { q.Locales = []string{"fr-FR"} }, false)
	add("network-types", full, func(q *model.SpanQuery) { q.NetworkTypes = []string{"wifi", "no_network"} }, false)
	add("network-providers", full, func(q *model.SpanQuery) { q.NetworkProviders = []string{"Orange"} }, false)
	add("network-generations", full, func(q *model.SpanQuery) { q.NetworkGenerations = []string{"", "5g"} }, false)
	add("countries", full, func(q *model.SpanQuery) { q.Countries = []string{"FR"} }, true)
	add("ud-string", full, func(q *model.SpanQuery) { q.UD = mustUD(t, udCmp("tier", "string", "eq", `"gold"`)) }, false)
	add("ud-int-or", full, func(q *model.SpanQuery) {
		q.UD = mustUD(t, `{"or":[`+udCmp("n", "int64", "gte", `"7"`)+`,`+udCmp("tier", "string", "startsWith", `"sil"`)+`]}`)
	}, false)
	add("all-together", mid, func(q *model.SpanQuery) {
		q.Versions = spanVersions[1:]
		q.Statuses = []uint8{1, 2}
		q.NetworkTypes = []string{"wifi", "cellular"}
		q.UD = mustUD(t, udCmp("n", "int64", "lt", `"8"`))
	}, true) // may select nothing for some names; RootSpans below checks the others
	add("other-app-name", model.EventFilter{App: d.B, From: d.lo, To: d.hi + int64(time.Hour)*24*60}, nil, true)
	out = append(out, spanQueryCase{name: "child-name", q: model.SpanQuery{EventFilter: full, Name: "child-1"}, empty: true})
	return out
}

// handSpans is app C: a trace of a root and two children, and ten roots of one name whose
// durations are 10, 20, …, 100 ms in one day and version, with a tie in start time.
func handSpans(app uuid.UUID) []model.Span {
	at := time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	a := model.Attributes{AppVersion: "3.0", AppBuild: "300", OSName: "ios", OSVersion: "18.0", NetworkType: "wifi"}
	var out []model.Span
	for i := range 10 {
		out = append(out, model.Span{AppID: app, SpanID: fmt.Sprintf("c%015d", i), TraceID: fmt.Sprintf("%032d", i+1),
			Name: "render", Status: uint8(i % 3), StartTime: at + int64(i)*int64(time.Minute),
			EndTime:  at + int64(i)*int64(time.Minute) + int64(10*(10-i))*int64(time.Millisecond),
			Duration: uint64(10 * (10 - i)), Attributes: a})
	}
	out[9].StartTime = out[8].StartTime // tie: c…09 sorts before c…08, newest first
	out[9].EndTime = out[9].StartTime + int64(10*time.Millisecond)
	trace := "00000000000000000000000000000abc"
	out = append(out,
		model.Span{AppID: app, SpanID: "r000000000000000", TraceID: trace, Name: "login", Status: 1, StartTime: at - 100,
			EndTime: at + 1000, Duration: 1, Attributes: a, Checkpoints: []model.Checkpoint{{Name: "tap", Timestamp: at}}},
		model.Span{AppID: app, SpanID: "r000000000000001", TraceID: trace, ParentID: "r000000000000000", Name: "render",
			StartTime: at - 50, EndTime: at, Attributes: a},
		model.Span{AppID: app, SpanID: "r000000000000002", TraceID: trace, ParentID: "r000000000000001", Name: "http",
			StartTime: at - 50, EndTime: at, Attributes: a,
			UserDefined: []model.UDAttr{{Key: "k", Type: model.UDString, Value: "v"}}},
	)
	return out
}

// testSpansHand checks app C's answers, written out by hand.
func testSpansHand(t *testing.T, s SpanStore, d *spanData) {
	c := ctx(t)
	names, err := s.RootSpanNames(c, d.C, 10)
	if err != nil {
		t.Fatal(err)
	}
	// render's latest root starts at 10:08, login's at 09:59:59.9999999; "http" is a child.
	if want := []string{"render", "login"}; !slices.Equal(names, want) {
		t.Errorf("RootSpanNames = %q, want %q", names, want)
	}
	day := time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC).UnixNano()
	q := model.SpanQuery{EventFilter: model.EventFilter{App: d.C, From: day, To: day + 24*int64(time.Hour)}, Name: "render"}
	page, err := s.RootSpans(c, &q, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sp := range page {
		ids = append(ids, sp.SpanID)
	}
	if want := []string{"c000000000000008", "c000000000000007", "c000000000000006", "c000000000000005"}; !slices.Equal(ids, want) {
		t.Errorf("RootSpans(limit 4, offset 1) = %q, want %q", ids, want)
	}
	q.Statuses = []uint8{2}
	page, err = s.RootSpans(c, &q, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids = ids[:0]
	for _, sp := range page {
		ids = append(ids, sp.SpanID)
	}
	if want := []string{"c000000000000008", "c000000000000005", "c000000000000002"}; !slices.Equal(ids, want) {
		t.Errorf("RootSpans(status 2) = %q, want %q", ids, want)
	}
	q.Statuses = nil
	// Durations 10…100: p50 is index 5 of 10 (60), p90 index 9 (100), p95 index ⌊9.5⌋ = 9,
	// p99 index 9.
	ds, err := s.RootSpanDurations(c, &q, model.Buckets{Group: model.PlotDays})
	if err != nil {
		t.Fatal(err)
	}
	want := []model.SpanDurations{{Version: model.AppVersion{Name: "3.0", Code: "300"}, Bucket: day, Count: 10, P50: 60, P90: 100, P95: 100, P99: 100}}
	if df := diff(ds, want); df != "" {
		t.Errorf("RootSpanDurations by day:\n%s", df)
	}
	// By hour: 10:00–10:09 is one hour; the window's From cuts the first minute off.
	q.From = day + 10*int64(time.Hour) + 1
	ds, err = s.RootSpanDurations(c, &q, model.Buckets{Group: model.PlotHours})
	if err != nil {
		t.Fatal(err)
	}
	// Durations 10…90 (nine): p50 index 4 (50), p90 index ⌊8.1⌋ = 8 (90), p95 8, p99 8.
	want = []model.SpanDurations{{Version: model.AppVersion{Name: "3.0", Code: "300"}, Bucket: day + 10*int64(time.Hour), Count: 9, P50: 50, P90: 90, P95: 90, P99: 90}}
	if df := diff(ds, want); df != "" {
		t.Errorf("RootSpanDurations by hour from 10:00 + 1ns:\n%s", df)
	}
	tr, err := s.Trace(c, d.C, "00000000000000000000000000000abc")
	if err != nil {
		t.Fatal(err)
	}
	ids = ids[:0]
	for _, sp := range tr {
		ids = append(ids, sp.SpanID+"<"+sp.ParentID)
	}
	if want := []string{"r000000000000002<r000000000000001", "r000000000000001<r000000000000000", "r000000000000000<"}; !slices.Equal(ids, want) {
		t.Errorf("Trace = %q, want %q", ids, want)
	}
	if len(tr) == 3 && (len(tr[2].Checkpoints) != 1 || len(tr[0].UserDefined) != 1) {
		t.Errorf("Trace lost checkpoints or attributes: %+v", tr)
	}
}
