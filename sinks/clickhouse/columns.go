package clickhouse

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// Column-wise batches: one typed slice per column, filled row by row from the model and
// appended to the insert batch whole (docs/architecture.md, "Dependency traps": 107k rows/s against 45k row by row). The same
// structs with one row serve as scan targets for point reads, so the column lists of inserts
// and selects cannot drift apart.

// col is one column: its name, the typed slice for inserts and a pointer to its first element
// for scans. derived columns are computed on write and not read back.
type col struct {
	name    string
	values  any
	ptr     any
	derived bool
}

func names(cols []col, withDerived bool) string {
	var b strings.Builder
	for _, c := range cols {
		if c.derived && !withDerived {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.name)
	}
	return b.String()
}

func scanPtrs(cols []col) []any {
	out := make([]any, 0, len(cols))
	for _, c := range cols {
		if !c.derived {
			out = append(out, c.ptr)
		}
	}
	return out
}

type attrCols struct {
	installationID, appVersion, appBuild, appUniqueID, platform, sdkVersion, threadName,
	userID, deviceName, deviceModel, deviceManufacturer, deviceType, deviceLocale, osName,
	osVersion, networkType, networkProvider, networkGeneration, deviceCPUArch []string
	foldable, physical, lowPower, thermal, osPageSize []uint8
	densityDPI, widthPx, heightPx                     []uint16
	density                                           []float32
	sessionStart                                      []int64
	extra                                             []json.RawMessage // aliases Attributes.Extra: no copy per row
}

func newAttrCols(n int) attrCols {
	var c attrCols
	c.reset(n)
	return c
}

// reset gives every column n rows, reusing the slices that hold that many; set must then fill
// each row before the columns are read.
func (c *attrCols) reset(n int) {
	for _, s := range c.strs() {
		*s = fit(*s, n)
	}
	c.foldable, c.physical, c.lowPower = fit(c.foldable, n), fit(c.physical, n), fit(c.lowPower, n)
	c.thermal, c.osPageSize = fit(c.thermal, n), fit(c.osPageSize, n)
	c.densityDPI, c.widthPx, c.heightPx = fit(c.densityDPI, n), fit(c.widthPx, n), fit(c.heightPx, n)
	c.density, c.sessionStart, c.extra = fit(c.density, n), fit(c.sessionStart, n), fit(c.extra, n)
}

// release zeroes what refers to the rows' memory (strings, Extra), so that kept columns do not
// keep written rows alive.
func (c *attrCols) release() {
	for _, s := range c.strs() {
		clear(*s)
	}
	clear(c.extra)
}

// strs lists the columns of strings.
func (c *attrCols) strs() [19]*[]string {
	return [...]*[]string{&c.installationID, &c.appVersion, &c.appBuild, &c.appUniqueID,
		&c.platform, &c.sdkVersion, &c.threadName, &c.userID, &c.deviceName, &c.deviceModel,
		&c.deviceManufacturer, &c.deviceType, &c.deviceLocale, &c.osName, &c.osVersion,
		&c.networkType, &c.networkProvider, &c.networkGeneration, &c.deviceCPUArch}
}

// fit returns s with length n: s itself when its capacity allows, else a new slice. The caller
// overwrites the elements it reads.
func fit[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// countSmall is small, the writes in a row that used under a quarter of a column set's rows,
// after one of n rows on a set of capacity rows.
func countSmall(small, n, rows int) int {
	if n*4 < rows {
		return small + 1
	}
	return 0
}

// capBytes is what the slices in v take by their capacity: v is a slice, or a []col, whose
// columns' values are slices (the windows of a flat slice count as their headers only).
func capBytes(v any) int64 {
	if cols, ok := v.([]col); ok {
		var b int64
		for _, c := range cols {
			b += capBytes(c.values)
		}
		return b
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Array { // [k][]T: the arrays' slices
		var b int64
		for i := range rv.Len() {
			b += capBytes(rv.Index(i).Interface())
		}
		return b
	}
	return int64(rv.Cap()) * int64(rv.Type().Elem().Size())
}

// releaseWindows zeroes rows' windows and the flat slice behind them.
func releaseWindows[T any](rows [][]T, flat []T) {
	clear(rows)
	clear(flat)
}

func (c *attrCols) cols() []col {
	return []col{
		{name: "installation_id", values: c.installationID, ptr: &c.installationID[0]},
		{name: "app_version", values: c.appVersion, ptr: &c.appVersion[0]},
		{name: "app_build", values: c.appBuild, ptr: &c.appBuild[0]},
		{name: "app_unique_id", values: c.appUniqueID, ptr: &c.appUniqueID[0]},
		{name: "platform", values: c.platform, ptr: &c.platform[0]},
		{name: "sdk_version", values: c.sdkVersion, ptr: &c.sdkVersion[0]},
		{name: "thread_name", values: c.threadName, ptr: &c.threadName[0]},
		{name: "user_id", values: c.userID, ptr: &c.userID[0]},
		{name: "device_name", values: c.deviceName, ptr: &c.deviceName[0]},
		{name: "device_model", values: c.deviceModel, ptr: &c.deviceModel[0]},
		{name: "device_manufacturer", values: c.deviceManufacturer, ptr: &c.deviceManufacturer[0]},
		{name: "device_type", values: c.deviceType, ptr: &c.deviceType[0]},
		{name: "device_is_foldable", values: c.foldable, ptr: &c.foldable[0]},
		{name: "device_is_physical", values: c.physical, ptr: &c.physical[0]},
		{name: "device_density_dpi", values: c.densityDPI, ptr: &c.densityDPI[0]},
		{name: "device_width_px", values: c.widthPx, ptr: &c.widthPx[0]},
		{name: "device_height_px", values: c.heightPx, ptr: &c.heightPx[0]},
		{name: "device_density", values: c.density, ptr: &c.density[0]},
		{name: "device_locale", values: c.deviceLocale, ptr: &c.deviceLocale[0]},
		{name: "device_low_power_mode", values: c.lowPower, ptr: &c.lowPower[0]},
		{name: "device_thermal_throttling_enabled", values: c.thermal, ptr: &c.thermal[0]},
		{name: "os_name", values: c.osName, ptr: &c.osName[0]},
		{name: "os_version", values: c.osVersion, ptr: &c.osVersion[0]},
		{name: "os_page_size", values: c.osPageSize, ptr: &c.osPageSize[0]},
		{name: "network_type", values: c.networkType, ptr: &c.networkType[0]},
		{name: "network_provider", values: c.networkProvider, ptr: &c.networkProvider[0]},
		{name: "network_generation", values: c.networkGeneration, ptr: &c.networkGeneration[0]},
		{name: "device_cpu_arch", values: c.deviceCPUArch, ptr: &c.deviceCPUArch[0]},
		{name: "session_start_time", values: c.sessionStart, ptr: &c.sessionStart[0]},
		{name: "attribute_extra", values: c.extra, ptr: &c.extra[0]},
	}
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func (c *attrCols) set(i int, a *model.Attributes) {
	c.installationID[i], c.appVersion[i], c.appBuild[i] = a.InstallationID, a.AppVersion, a.AppBuild
	c.appUniqueID[i], c.platform[i], c.sdkVersion[i] = a.AppUniqueID, a.Platform, a.SDKVersion
	c.threadName[i], c.userID[i], c.deviceName[i] = a.ThreadName, a.UserID, a.DeviceName
	c.deviceModel[i], c.deviceManufacturer[i], c.deviceType[i] = a.DeviceModel, a.DeviceManufacturer, a.DeviceType
	c.deviceLocale[i], c.osName[i], c.osVersion[i] = a.DeviceLocale, a.OSName, a.OSVersion
	c.networkType[i], c.networkProvider[i] = a.NetworkType, a.NetworkProvider
	c.networkGeneration[i], c.deviceCPUArch[i] = a.NetworkGeneration, a.DeviceCPUArch
	c.foldable[i], c.physical[i] = b2u(a.DeviceIsFoldable), b2u(a.DeviceIsPhysical)
	c.lowPower[i], c.thermal[i] = b2u(a.DeviceLowPowerMode), b2u(a.DeviceThermalThrottlingEnabled)
	c.osPageSize[i] = a.OSPageSize
	c.densityDPI[i], c.widthPx[i], c.heightPx[i] = a.DeviceDensityDPI, a.DeviceWidthPx, a.DeviceHeightPx
	c.density[i], c.sessionStart[i] = a.DeviceDensity, a.SessionStartTime
	c.extra[i] = a.Extra
}

func (c *attrCols) get(i int) model.Attributes {
	a := model.Attributes{
		InstallationID: c.installationID[i], AppVersion: c.appVersion[i], AppBuild: c.appBuild[i],
		AppUniqueID: c.appUniqueID[i], Platform: c.platform[i], SDKVersion: c.sdkVersion[i],
		ThreadName: c.threadName[i], UserID: c.userID[i], DeviceName: c.deviceName[i],
		DeviceModel: c.deviceModel[i], DeviceManufacturer: c.deviceManufacturer[i],
		DeviceType: c.deviceType[i], DeviceIsFoldable: c.foldable[i] != 0,
		DeviceIsPhysical: c.physical[i] != 0, DeviceDensityDPI: c.densityDPI[i],
		DeviceWidthPx: c.widthPx[i], DeviceHeightPx: c.heightPx[i], DeviceDensity: c.density[i],
		DeviceLocale: c.deviceLocale[i], DeviceLowPowerMode: c.lowPower[i] != 0,
		DeviceThermalThrottlingEnabled: c.thermal[i] != 0, OSName: c.osName[i],
		OSVersion: c.osVersion[i], OSPageSize: c.osPageSize[i], NetworkType: c.networkType[i],
		NetworkProvider: c.networkProvider[i], NetworkGeneration: c.networkGeneration[i],
		DeviceCPUArch: c.deviceCPUArch[i], SessionStartTime: c.sessionStart[i],
	}
	if len(c.extra[i]) > 0 { // '' is a row without Extra, or one written before the column existed
		a.Extra = bytes.Clone(c.extra[i]) // the driver's scan may alias its own buffer
	}
	return a
}

// udCols holds user-defined attributes as three parallel arrays per row. On writes the rows'
// arrays are windows into one flat backing slice per column: three allocations per batch, none
// when the columns are reused.
type udCols struct {
	keys, values [][]string
	types        [][]uint8
	flatK, flatV []string // behind the rows' windows
	flatT        []uint8
}

func newUDCols(n, total int) udCols {
	var c udCols
	c.reset(n, total)
	return c
}

// reset gives the columns n rows and total attributes in all; see attrCols.reset.
func (c *udCols) reset(n, total int) {
	c.keys, c.values, c.types = fit(c.keys, n), fit(c.values, n), fit(c.types, n)
	c.flatK, c.flatV, c.flatT = fit(c.flatK, total), fit(c.flatV, total), fit(c.flatT, total)
	if n > 0 {
		c.keys[0], c.values[0], c.types[0] = c.flatK, c.flatV, c.flatT // the remainder, until set
	}
}

// flatBytes is what the flat slices behind the windows take.
func (c *udCols) flatBytes() int64 {
	return capBytes(c.flatK) + capBytes(c.flatV) + capBytes(c.flatT)
}

// release zeroes the rows' strings; see attrCols.release.
func (c *udCols) release() {
	releaseWindows(c.keys, c.flatK)
	releaseWindows(c.values, c.flatV)
	clear(c.types)
}

func (c *udCols) cols() []col {
	return []col{
		{name: "ud_keys", values: c.keys, ptr: &c.keys[0]},
		{name: "ud_types", values: c.types, ptr: &c.types[0]},
		{name: "ud_values", values: c.values, ptr: &c.values[0]},
	}
}

// set fills row i from ud, taking its arrays from the front of the flat remainder kept in row i.
func (c *udCols) set(i int, ud []model.UDAttr) {
	restK, restV, restT := c.keys[i], c.values[i], c.types[i]
	n := len(ud)
	k, v, t := restK[:n:n], restV[:n:n], restT[:n:n]
	for j := range ud {
		k[j], v[j], t[j] = ud[j].Key, ud[j].Value, uint8(ud[j].Type)
	}
	c.keys[i], c.values[i], c.types[i] = k, v, t
	if i+1 < len(c.keys) {
		c.keys[i+1], c.values[i+1], c.types[i+1] = restK[n:], restV[n:], restT[n:]
	}
}

func (c *udCols) get(i int) []model.UDAttr {
	k, v, t := c.keys[i], c.values[i], c.types[i]
	if len(k) == 0 || len(v) != len(k) || len(t) != len(k) {
		return nil
	}
	out := make([]model.UDAttr, len(k))
	for j := range out {
		out[j] = model.UDAttr{Key: k[j], Type: model.UDType(t[j]), Value: v[j]}
	}
	return out
}

// dateTime is the partition time of a Unix-nanosecond instant, clamped to DateTime's range.
func dateTime(ns int64) int64 {
	s := ns / 1e9
	if ns < 0 && ns%1e9 != 0 {
		s-- // floor, not truncate
	}
	return min(max(s, 0), math.MaxUint32)
}

type eventCols struct {
	appID, id, session                                           []uuid.UUID
	typ                                                          []string
	payload                                                      []json.RawMessage // aliases the events' payloads: no copy per row
	ts, time                                                     []int64
	userTriggered                                                []uint8
	attrs                                                        attrCols
	ud                                                           udCols
	attIDs                                                       [][]uuid.UUID
	attNames, attTypes, attExts, attTimes, attBlobKeys, attPaths [][]string
	attSizes                                                     [][]int64
	// The derived facts (migration 00003).
	groupID, screen, launchKind []string
	fatal, foreground           []uint8
	launchMs                    []float64
	// The issue display facts (migration 00004).
	issueType, issueMessage, issueMethod, issueFile, severity []string
	issueLine                                                 []int32
	// The request facts of http events (migration 00005).
	httpDomain, httpPath, httpMethod []string
	httpStatus                       []uint16
	httpLatency, httpElapsed         []int64
	// behind the attachment columns' windows
	attIDFlat   []uuid.UUID
	attSizeFlat []int64
	attStrFlat  [6][]string // in attStrs' order
	small       int         // writes in a row that used under a quarter of the rows (keepCols)
}

func newEventCols(n, udTotal, attTotal int) *eventCols {
	return new(eventCols).reset(n, udTotal, attTotal)
}

// reset gives the columns n rows, udTotal user-defined attributes and attTotal attachments in
// all, reusing the slices that hold that many, and returns c; see attrCols.reset.
func (c *eventCols) reset(n, udTotal, attTotal int) *eventCols {
	c.small = countSmall(c.small, n, cap(c.id))
	c.appID, c.id, c.session = fit(c.appID, n), fit(c.id, n), fit(c.session, n)
	c.payload, c.ts, c.time = fit(c.payload, n), fit(c.ts, n), fit(c.time, n)
	c.userTriggered = fit(c.userTriggered, n)
	for _, s := range c.strs() {
		*s = fit(*s, n)
	}
	c.fatal, c.foreground, c.launchMs = fit(c.fatal, n), fit(c.foreground, n), fit(c.launchMs, n)
	c.issueLine, c.httpStatus = fit(c.issueLine, n), fit(c.httpStatus, n)
	c.httpLatency, c.httpElapsed = fit(c.httpLatency, n), fit(c.httpElapsed, n)
	c.attrs.reset(n)
	c.ud.reset(n, udTotal)
	c.attIDs, c.attSizes = fit(c.attIDs, n), fit(c.attSizes, n)
	c.attIDFlat, c.attSizeFlat = fit(c.attIDFlat, attTotal), fit(c.attSizeFlat, attTotal)
	for k, a := range c.attStrs() {
		*a = fit(*a, n)
		c.attStrFlat[k] = fit(c.attStrFlat[k], attTotal)
	}
	if n > 0 { // each row's window is taken from the front of the remainder row 0 holds
		c.attIDs[0], c.attSizes[0] = c.attIDFlat, c.attSizeFlat
		for k, a := range c.attStrs() {
			(*a)[0] = c.attStrFlat[k]
		}
	}
	return c
}

// fill resets c to the rows of events and sets each; it returns c.
func (c *eventCols) fill(events []model.Event) *eventCols {
	var ud, att int
	for i := range events {
		ud += len(events[i].UserDefined)
		att += len(events[i].Attachments)
	}
	c.reset(len(events), ud, att)
	for i := range events {
		c.set(i, &events[i])
	}
	return c
}

// held is what c's slices take (their capacity) and its writes in a row that used under a
// quarter of its rows, for keepCols.
func (c *eventCols) held() (int64, int) {
	b := capBytes(c.cols()) + capBytes(c.attStrFlat) + capBytes(c.attIDFlat) + capBytes(c.attSizeFlat) + c.ud.flatBytes()
	return b, c.small
}

// release zeroes what refers to the written events' memory; see attrCols.release.
func (c *eventCols) release() {
	clear(c.payload)
	for _, s := range c.strs() {
		clear(*s)
	}
	c.attrs.release()
	c.ud.release()
	for k, a := range c.attStrs() {
		releaseWindows(*a, c.attStrFlat[k])
	}
	clear(c.attIDs) // windows into the set's own slices, cleared so that nothing is left
	clear(c.attSizes)
}

// strs lists the one-string-per-row columns.
func (c *eventCols) strs() [12]*[]string {
	return [...]*[]string{&c.typ, &c.groupID, &c.screen, &c.launchKind, &c.issueType,
		&c.issueMessage, &c.issueMethod, &c.issueFile, &c.severity, &c.httpDomain, &c.httpPath,
		&c.httpMethod}
}

func (c *eventCols) cols() []col {
	cols := []col{
		{name: "app_id", values: c.appID, ptr: &c.appID[0]},
		{name: "id", values: c.id, ptr: &c.id[0]},
		{name: "session_id", values: c.session, ptr: &c.session[0]},
		{name: "type", values: c.typ, ptr: &c.typ[0]},
		{name: "timestamp", values: c.ts, ptr: &c.ts[0]},
		{name: "time", values: c.time, derived: true},
		{name: "user_triggered", values: c.userTriggered, ptr: &c.userTriggered[0]},
	}
	cols = append(cols, c.attrs.cols()...)
	cols = append(cols, c.ud.cols()...)
	return append(cols,
		col{name: "attachment_ids", values: c.attIDs, ptr: &c.attIDs[0]},
		col{name: "attachment_names", values: c.attNames, ptr: &c.attNames[0]},
		col{name: "attachment_types", values: c.attTypes, ptr: &c.attTypes[0]},
		col{name: "attachment_extensions", values: c.attExts, ptr: &c.attExts[0]},
		col{name: "attachment_timestamps", values: c.attTimes, ptr: &c.attTimes[0]},
		col{name: "attachment_blob_keys", values: c.attBlobKeys, ptr: &c.attBlobKeys[0]},
		col{name: "attachment_sizes", values: c.attSizes, ptr: &c.attSizes[0]},
		col{name: "attachment_paths", values: c.attPaths, ptr: &c.attPaths[0]},
		col{name: "payload", values: c.payload, ptr: &c.payload[0]},
		col{name: "group_id", values: c.groupID, ptr: &c.groupID[0]},
		col{name: "fatal", values: c.fatal, ptr: &c.fatal[0]},
		col{name: "foreground", values: c.foreground, ptr: &c.foreground[0]},
		col{name: "screen", values: c.screen, ptr: &c.screen[0]},
		col{name: "launch_kind", values: c.launchKind, ptr: &c.launchKind[0]},
		col{name: "launch_ms", values: c.launchMs, ptr: &c.launchMs[0]},
		col{name: "issue_type", values: c.issueType, ptr: &c.issueType[0]},
		col{name: "issue_message", values: c.issueMessage, ptr: &c.issueMessage[0]},
		col{name: "issue_method", values: c.issueMethod, ptr: &c.issueMethod[0]},
		col{name: "issue_file", values: c.issueFile, ptr: &c.issueFile[0]},
		col{name: "issue_line", values: c.issueLine, ptr: &c.issueLine[0]},
		col{name: "severity", values: c.severity, ptr: &c.severity[0]},
		col{name: "http_domain", values: c.httpDomain, ptr: &c.httpDomain[0]},
		col{name: "http_path", values: c.httpPath, ptr: &c.httpPath[0]},
		col{name: "http_method", values: c.httpMethod, ptr: &c.httpMethod[0]},
		col{name: "http_status", values: c.httpStatus, ptr: &c.httpStatus[0]},
		col{name: "http_latency_ms", values: c.httpLatency, ptr: &c.httpLatency[0]},
		col{name: "http_elapsed_ms", values: c.httpElapsed, ptr: &c.httpElapsed[0]},
	)
}

func (c *eventCols) set(i int, e *model.Event) {
	c.appID[i], c.id[i], c.session[i] = e.AppID, e.ID, e.SessionID
	c.typ[i], c.payload[i] = e.Type, e.Payload
	c.ts[i], c.time[i], c.userTriggered[i] = e.Timestamp, dateTime(e.Timestamp), b2u(e.UserTriggered)
	c.attrs.set(i, &e.Attribute)
	c.ud.set(i, e.UserDefined)
	f := &e.Facts
	c.groupID[i], c.screen[i], c.launchKind[i] = f.GroupID, f.Screen, f.LaunchKind
	c.fatal[i], c.foreground[i], c.launchMs[i] = b2u(f.Fatal), b2u(f.Foreground), f.LaunchMs
	d := &f.Issue
	c.issueType[i], c.issueMessage[i], c.issueMethod[i] = d.Type, d.Message, d.MethodName
	c.issueFile[i], c.issueLine[i], c.severity[i] = d.FileName, d.LineNumber, d.Severity
	h := &f.HTTP
	c.httpDomain[i], c.httpPath[i], c.httpMethod[i] = h.Domain, h.Path, h.Method
	c.httpStatus[i], c.httpLatency[i], c.httpElapsed[i] = h.Status, h.LatencyMs, h.ElapsedMs
	// Attachments: windows into flat slices, as for user-defined attributes.
	n := len(e.Attachments)
	ids, sizes := c.attIDs[i], c.attSizes[i]
	strs := c.attStrs()
	var rest [len(strs)][]string
	for k, s := range strs {
		rest[k] = (*s)[i]
		(*s)[i] = rest[k][:n:n]
	}
	c.attIDs[i], c.attSizes[i] = ids[:n:n], sizes[:n:n]
	for j := range e.Attachments {
		a := &e.Attachments[j]
		c.attIDs[i][j], c.attSizes[i][j] = a.ID, a.Size
		c.attNames[i][j], c.attTypes[i][j], c.attExts[i][j] = a.Name, a.Type, a.Extension
		c.attTimes[i][j], c.attBlobKeys[i][j], c.attPaths[i][j] = a.Timestamp, a.BlobKey, a.Path
	}
	if i+1 < len(c.id) {
		c.attIDs[i+1], c.attSizes[i+1] = ids[n:], sizes[n:]
		for k, s := range strs {
			(*s)[i+1] = rest[k][n:]
		}
	}
}

// attStrs lists the attachment columns of strings.
func (c *eventCols) attStrs() [6]*[][]string {
	return [...]*[][]string{&c.attNames, &c.attTypes, &c.attExts, &c.attTimes, &c.attBlobKeys, &c.attPaths}
}

func (c *eventCols) get(i int) model.Event {
	e := model.Event{
		ID: c.id[i], AppID: c.appID[i], SessionID: c.session[i], Type: c.typ[i],
		Timestamp: c.ts[i], UserTriggered: c.userTriggered[i] != 0,
		Attribute: c.attrs.get(i), UserDefined: c.ud.get(i),
		Facts: model.EventFacts{GroupID: c.groupID[i], Fatal: c.fatal[i] != 0,
			Foreground: c.foreground[i] != 0, Screen: c.screen[i], LaunchKind: c.launchKind[i],
			LaunchMs: c.launchMs[i], Issue: model.IssueDisplay{Type: c.issueType[i],
				Message: c.issueMessage[i], MethodName: c.issueMethod[i], FileName: c.issueFile[i],
				LineNumber: c.issueLine[i], Severity: c.severity[i]},
			HTTP: model.HTTPFacts{Domain: c.httpDomain[i], Path: c.httpPath[i], Method: c.httpMethod[i],
				Status: c.httpStatus[i], LatencyMs: c.httpLatency[i], ElapsedMs: c.httpElapsed[i]}},
	}
	if len(c.payload[i]) > 0 {
		// The driver's scan may alias its own buffer: copy.
		e.Payload = bytes.Clone(c.payload[i])
	}
	if n := len(c.attIDs[i]); n > 0 {
		e.Attachments = make([]model.Attachment, n)
		for j := range e.Attachments {
			e.Attachments[j] = model.Attachment{ID: c.attIDs[i][j], Name: at(c.attNames[i], j),
				Type: at(c.attTypes[i], j), Extension: at(c.attExts[i], j),
				Timestamp: at(c.attTimes[i], j), BlobKey: at(c.attBlobKeys[i], j),
				Size: model.SizeUnknown, Path: at(c.attPaths[i], j)}
			if j < len(c.attSizes[i]) {
				e.Attachments[j].Size = c.attSizes[i][j]
			}
		}
	}
	return e
}

// at tolerates parallel arrays of unequal length (a row written by hand, or before migration
// 00002 added sizes and paths): missing is empty.
func at(s []string, j int) string {
	if j < len(s) {
		return s[j]
	}
	return ""
}

type spanCols struct {
	appID, session                  []uuid.UUID
	spanID, traceID, parentID, name []string
	status                          []uint8
	start, end, time                []int64
	duration                        []uint64
	cpNames                         [][]string
	cpTimes                         [][]int64
	attrs                           attrCols
	ud                              udCols
	cpNameFlat                      []string // behind the checkpoint columns' windows
	cpTimeFlat                      []int64
	small                           int // as in eventCols
}

func newSpanCols(n, udTotal, cpTotal int) *spanCols {
	return new(spanCols).reset(n, udTotal, cpTotal)
}

// reset gives the columns n rows, udTotal user-defined attributes and cpTotal checkpoints in
// all and returns c; see eventCols.reset.
func (c *spanCols) reset(n, udTotal, cpTotal int) *spanCols {
	c.small = countSmall(c.small, n, cap(c.spanID))
	c.appID, c.session = fit(c.appID, n), fit(c.session, n)
	c.spanID, c.traceID, c.parentID, c.name = fit(c.spanID, n), fit(c.traceID, n), fit(c.parentID, n), fit(c.name, n)
	c.status, c.start, c.end = fit(c.status, n), fit(c.start, n), fit(c.end, n)
	c.time, c.duration = fit(c.time, n), fit(c.duration, n)
	c.cpNames, c.cpTimes = fit(c.cpNames, n), fit(c.cpTimes, n)
	c.cpNameFlat, c.cpTimeFlat = fit(c.cpNameFlat, cpTotal), fit(c.cpTimeFlat, cpTotal)
	if n > 0 {
		c.cpNames[0], c.cpTimes[0] = c.cpNameFlat, c.cpTimeFlat
	}
	c.attrs.reset(n)
	c.ud.reset(n, udTotal)
	return c
}

// fill is eventCols.fill for spans.
func (c *spanCols) fill(spans []model.Span) *spanCols {
	var ud, cp int
	for i := range spans {
		ud += len(spans[i].UserDefined)
		cp += len(spans[i].Checkpoints)
	}
	c.reset(len(spans), ud, cp)
	for i := range spans {
		c.set(i, &spans[i])
	}
	return c
}

// held is eventCols.held for spans.
func (c *spanCols) held() (int64, int) {
	return capBytes(c.cols()) + capBytes(c.cpNameFlat) + capBytes(c.cpTimeFlat) + c.ud.flatBytes(), c.small
}

// release zeroes what refers to the written spans' memory; see attrCols.release.
func (c *spanCols) release() {
	clear(c.spanID)
	clear(c.traceID)
	clear(c.parentID)
	clear(c.name)
	releaseWindows(c.cpNames, c.cpNameFlat)
	clear(c.cpTimes)
	c.attrs.release()
	c.ud.release()
}

func (c *spanCols) cols() []col {
	cols := []col{
		{name: "app_id", values: c.appID, ptr: &c.appID[0]},
		{name: "span_id", values: c.spanID, ptr: &c.spanID[0]},
		{name: "trace_id", values: c.traceID, ptr: &c.traceID[0]},
		{name: "parent_id", values: c.parentID, ptr: &c.parentID[0]},
		{name: "session_id", values: c.session, ptr: &c.session[0]},
		{name: "name", values: c.name, ptr: &c.name[0]},
		{name: "status", values: c.status, ptr: &c.status[0]},
		{name: "start_time", values: c.start, ptr: &c.start[0]},
		{name: "end_time", values: c.end, ptr: &c.end[0]},
		{name: "time", values: c.time, derived: true},
		{name: "duration", values: c.duration, ptr: &c.duration[0]},
		{name: "checkpoint_names", values: c.cpNames, ptr: &c.cpNames[0]},
		{name: "checkpoint_times", values: c.cpTimes, ptr: &c.cpTimes[0]},
	}
	cols = append(cols, c.attrs.cols()...)
	return append(cols, c.ud.cols()...)
}

func (c *spanCols) set(i int, s *model.Span) {
	c.appID[i], c.session[i] = s.AppID, s.SessionID
	c.spanID[i], c.traceID[i], c.parentID[i], c.name[i] = s.SpanID, s.TraceID, s.ParentID, s.Name
	c.status[i], c.start[i], c.end[i] = s.Status, s.StartTime, s.EndTime
	c.time[i], c.duration[i] = dateTime(s.StartTime), s.Duration
	n := len(s.Checkpoints)
	restN, restT := c.cpNames[i], c.cpTimes[i]
	c.cpNames[i], c.cpTimes[i] = restN[:n:n], restT[:n:n]
	for j := range s.Checkpoints {
		c.cpNames[i][j], c.cpTimes[i][j] = s.Checkpoints[j].Name, s.Checkpoints[j].Timestamp
	}
	if i+1 < len(c.spanID) {
		c.cpNames[i+1], c.cpTimes[i+1] = restN[n:], restT[n:]
	}
	c.attrs.set(i, &s.Attributes)
	c.ud.set(i, s.UserDefined)
}

func (c *spanCols) get(i int) model.Span {
	s := model.Span{
		AppID: c.appID[i], SpanID: c.spanID[i], TraceID: c.traceID[i], ParentID: c.parentID[i],
		SessionID: c.session[i], Name: c.name[i], Status: c.status[i], StartTime: c.start[i],
		EndTime: c.end[i], Duration: c.duration[i], Attributes: c.attrs.get(i), UserDefined: c.ud.get(i),
	}
	if n := len(c.cpNames[i]); n > 0 {
		s.Checkpoints = make([]model.Checkpoint, n)
		for j := range s.Checkpoints {
			s.Checkpoints[j].Name = c.cpNames[i][j]
			if j < len(c.cpTimes[i]) {
				s.Checkpoints[j].Timestamp = c.cpTimes[i][j]
			}
		}
	}
	return s
}
