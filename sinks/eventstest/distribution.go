package eventstest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/svc-dev/svc/model"
)

// DistributionReference is sinks.Distribution.IssueDistribution by brute force over the
// reference's rows (Reference.IssueList, so each stored event once), with the keys written out
// here rather than through model.DistKey, so that a mistake in the key rules shows too.
func (r *Reference) IssueDistribution(q *model.IssueQuery) model.Distribution {
	d := model.NewDistribution()
	put := func(m map[string]uint64, key string, present bool) {
		if present {
			m[key]++
		}
	}
	// join writes two columns as the dashboard labels them: both with sep between, or the one
	// present.
	join := func(a, b, sep string) string {
		if a != "" && b != "" {
			return a + sep + b
		}
		return a + b
	}
	for _, e := range r.IssueList(q) {
		a := &e.Attribute
		put(d.AppVersion, fmt.Sprintf("%s (%s)", a.AppVersion, a.AppBuild), a.AppVersion != "" || a.AppBuild != "")
		os := join(a.OSName, a.OSVersion, " ")
		put(d.OSVersion, os, os != "")
		put(d.NetworkType, a.NetworkType, a.NetworkType != "")
		put(d.Locale, a.DeviceLocale, a.DeviceLocale != "")
		dev := join(a.DeviceManufacturer, a.DeviceName, " - ")
		put(d.Device, dev, dev != "")
	}
	return d
}

// testDistribution checks sinks.Distribution on every issue case, and on the detail
// endpoints' query (one group, every class) for each kind of group in the dataset.
func testDistribution(t *testing.T, s AnalyticsStore, d *anaData, w anaWindows) {
	cases := issueCases(t, d, w)
	for kind, group := range d.groups {
		cases = append(cases, issueCase{name: "group " + kind,
			q: model.IssueQuery{EventFilter: model.EventFilter{App: d.A, From: w.full[0], To: w.full[1]}, GroupID: group}})
	}
	var leftOut bool // some event lacks a device or a locale, so leaving out is checked
	for _, e := range d.ref.IssueList(&cases[0].q) {
		leftOut = leftOut || e.Attribute.DeviceLocale == "" || e.Attribute.DeviceManufacturer == "" && e.Attribute.DeviceName == ""
	}
	if !leftOut {
		t.Fatal("dataset: every issue event has a locale and a device")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.IssueDistribution(ctx(t), &c.q)
			if err != nil {
				t.Fatalf("IssueDistribution: %v", err)
			}
			want := d.ref.IssueDistribution(&c.q)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("IssueDistribution:\n got %+v\nwant %+v", got, want)
			}
			if empty := len(want.AppVersion) == 0; empty != c.empty {
				t.Errorf("dataset: case selects nothing: %v, want %v", empty, c.empty)
			}
		})
	}
}
