package model

import (
	"encoding/json"
	"testing"
)

func TestDistKey(t *testing.T) {
	cases := []struct {
		attr          DistAttr
		first, second string
		want          string
		ok            bool
	}{
		{DistAppVersion, "1.2", "120", "1.2 (120)", true},
		{DistOSVersion, "android", "33", "android 33", true},
		{DistOSVersion, "ios", "", "ios", true},
		{DistOSVersion, "", "17.5", "17.5", true},
		{DistOSVersion, "", "", "", false},
		{DistNetworkType, "wifi", "", "wifi", true},
		{DistLocale, "en-US", "", "en-US", true},
		{DistLocale, "", "", "", false},
		{DistDevice, "Google", "sunfish", "Google - sunfish", true},
		{DistDevice, "Google", "", "Google", true},
		{DistDevice, "", "sunfish", "sunfish", true},
		{DistDevice, "", "", "", false},
	}
	for _, c := range cases {
		got, ok := DistKey(c.attr, c.first, c.second)
		if got != c.want || ok != c.ok {
			t.Errorf("DistKey(%d, %q, %q) = %q, %v; want %q, %v", c.attr, c.first, c.second, got, ok, c.want, c.ok)
		}
	}
}

func TestDistributionAddEvent(t *testing.T) {
	cases := []struct {
		name  string
		attrs []Attributes
		want  string
	}{
		{"none", nil, `{"app_version":{},"os_version":{},"country":{},"network_type":{},"locale":{},"device":{}}`},
		{"one full", []Attributes{{AppVersion: "1.2", AppBuild: "120", OSName: "android", OSVersion: "33", NetworkType: "wifi",
			DeviceLocale: "en-US", DeviceManufacturer: "Google", DeviceName: "sunfish"}},
			`{"app_version":{"1.2 (120)":1},"os_version":{"android 33":1},"country":{},"network_type":{"wifi":1},"locale":{"en-US":1},"device":{"Google - sunfish":1}}`},
		{"empty columns left out, equal keys add up", []Attributes{
			{AppVersion: "1.2", AppBuild: "120", OSName: "ios", OSVersion: "17.5"},
			{AppVersion: "1.2", AppBuild: "120", OSName: "ios", OSVersion: "17.5", NetworkType: "cellular"},
			{AppVersion: "1.3", AppBuild: "130", DeviceName: "a52q"}},
			`{"app_version":{"1.2 (120)":2,"1.3 (130)":1},"os_version":{"ios 17.5":2},"country":{},"network_type":{"cellular":1},"locale":{},"device":{"a52q":1}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDistribution()
			for i := range c.attrs {
				d.AddEvent(&c.attrs[i])
			}
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Errorf("got  %s\nwant %s", b, c.want)
			}
		})
	}
}
