package model

// Distribution is how an issue group's events spread over six attributes: the body of
// errorGroups/{id}/plots/distribution, each map from an attribute's text to its count of
// events. Every map is non-nil, so an attribute without events is {} and never null (the
// reference dashboard reads all six). Events carry no country (svc does not geolocate), so
// Country stays empty.
type Distribution struct {
	AppVersion  map[string]uint64 `json:"app_version"`
	OSVersion   map[string]uint64 `json:"os_version"`
	Country     map[string]uint64 `json:"country"`
	NetworkType map[string]uint64 `json:"network_type"`
	Locale      map[string]uint64 `json:"locale"`
	Device      map[string]uint64 `json:"device"`
}

// NewDistribution is a Distribution with six empty maps.
func NewDistribution() Distribution {
	return Distribution{AppVersion: map[string]uint64{}, OSVersion: map[string]uint64{}, Country: map[string]uint64{},
		NetworkType: map[string]uint64{}, Locale: map[string]uint64{}, Device: map[string]uint64{}}
}

// DistAttr names what Distribution.Add counts: one attribute of the distribution, read from
// one or two stored attribute columns.
type DistAttr uint8

// The counted attributes, with the columns they read (first, second).
const (
	DistAppVersion  DistAttr = iota + 1 // app_version, app_build
	DistOSVersion                       // os_name, os_version
	DistNetworkType                     // network_type
	DistLocale                          // device_locale
	DistDevice                          // device_manufacturer, device_name
)

// DistAttrs lists every counted attribute, for stores that count them one by one.
var DistAttrs = []DistAttr{DistAppVersion, DistOSVersion, DistNetworkType, DistLocale, DistDevice}

// Parts are the stored columns attr reads of a (second is "" for one-column attributes).
func (attr DistAttr) Parts(a *Attributes) (first, second string) {
	switch attr {
	case DistAppVersion:
		return a.AppVersion, a.AppBuild
	case DistOSVersion:
		return a.OSName, a.OSVersion
	case DistNetworkType:
		return a.NetworkType, ""
	case DistLocale:
		return a.DeviceLocale, ""
	case DistDevice:
		return a.DeviceManufacturer, a.DeviceName
	}
	return "", ""
}

// DistKey is the text under which an event with the columns first and second is counted for
// attr, as the reference dashboard labels them; ok is false when the event is left out of
// attr because both are empty (a bar without a name says nothing):
//   - app_version "1.2 (120)" (SeriesID; both columns are required at ingest);
//   - os_version "android 33": the OS name (stored lowercase) and the version, separated by a
//     space;
//   - device "Google - Pixel 7": manufacturer and device name separated by " - ";
//   - network_type and locale: the value.
//
// In os_version and device a missing part is left out with its separator ("android").
func DistKey(attr DistAttr, first, second string) (key string, ok bool) {
	if first == "" && second == "" {
		return "", false
	}
	switch attr {
	case DistAppVersion:
		return SeriesID(first, second), true
	case DistOSVersion:
		return joinPresent(first, second, " "), true
	case DistDevice:
		return joinPresent(first, second, " - "), true
	}
	return first, true
}

func joinPresent(a, b, sep string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + sep + b
}

// Add counts n events whose columns for attr are first and second (DistKey says under which
// key, or that they are left out). Counts of equal keys add up, so a store may count by
// stored values and leave the keys to Add.
func (d *Distribution) Add(attr DistAttr, first, second string, n uint64) {
	key, ok := DistKey(attr, first, second)
	if !ok || n == 0 {
		return
	}
	var m map[string]uint64
	switch attr {
	case DistAppVersion:
		m = d.AppVersion
	case DistOSVersion:
		m = d.OSVersion
	case DistNetworkType:
		m = d.NetworkType
	case DistLocale:
		m = d.Locale
	case DistDevice:
		m = d.Device
	default:
		return
	}
	m[key] += n
}

// AddEvent counts one event under each attribute of a.
func (d *Distribution) AddEvent(a *Attributes) {
	for _, attr := range DistAttrs {
		first, second := attr.Parts(a)
		d.Add(attr, first, second, 1)
	}
}
