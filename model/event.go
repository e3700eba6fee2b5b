// Package model holds svc's wire and domain types and the pure computations over them.
// Nothing in it does I/O.
package model

import "github.com/google/uuid"

// Event is one SDK event as svc keeps it. The fields every kind shares are typed; the member
// named by Type is kept as compact JSON in Payload so that no field an SDK sent is lost, whatever
// its kind or SDK version.
type Event struct {
	ID            uuid.UUID
	AppID         uuid.UUID
	SessionID     uuid.UUID
	Type          string
	Timestamp     int64 // Unix nanoseconds, full precision of the wire value
	UserTriggered bool
	Attribute     Attributes
	UserDefined   []UDAttr // sorted by key
	Attachments   []Attachment
	Payload       []byte // compact JSON object of the kind member; nil when the kind has none
	// Facts are derived from the event once at ingest (DeriveFacts) and stored with it, so that
	// analytics aggregate over them instead of parsing payloads.
	Facts EventFacts
}

// Span is one SDK span as svc keeps it.
type Span struct {
	AppID       uuid.UUID
	SpanID      string // 16 lowercase hex characters
	TraceID     string // 32 lowercase hex characters
	ParentID    string // empty for a root span
	SessionID   uuid.UUID
	Name        string
	Status      uint8  // 0 unset, 1 ok, 2 error: what SDKs send
	StartTime   int64  // Unix nanoseconds
	EndTime     int64  // Unix nanoseconds
	Duration    uint64 // milliseconds, from the device's monotonic clock
	Checkpoints []Checkpoint
	Attributes  Attributes
	UserDefined []UDAttr // sorted by key
}

// Checkpoint is a named instant inside a span.
type Checkpoint struct {
	Name      string
	Timestamp int64 // Unix nanoseconds
}

// Attributes describe the device, app and network an event or span came from. Optional members
// that were absent are zero values.
type Attributes struct {
	InstallationID                 string
	AppVersion                     string
	AppBuild                       string
	AppUniqueID                    string
	Platform                       string
	SDKVersion                     string // service_sdk_version (or measure_sdk_version)
	ThreadName                     string
	UserID                         string
	DeviceName                     string
	DeviceModel                    string
	DeviceManufacturer             string
	DeviceType                     string
	DeviceIsFoldable               bool
	DeviceIsPhysical               bool
	DeviceDensityDPI               uint16
	DeviceWidthPx                  uint16
	DeviceHeightPx                 uint16
	DeviceDensity                  float32
	DeviceLocale                   string
	DeviceLowPowerMode             bool
	DeviceThermalThrottlingEnabled bool
	OSName                         string
	OSVersion                      string
	OSPageSize                     uint8
	NetworkType                    string
	NetworkProvider                string
	NetworkGeneration              string
	DeviceCPUArch                  string
	SessionStartTime               int64 // Unix nanoseconds; 0 when absent
	// Extra is a compact JSON object of the attribute members that have no field above, as the
	// SDK sent them (real SDKs send patch_id and patch_version), so that nothing is lost before
	// the model grows a field; nil when there were none. Never an empty object.
	Extra []byte
}

// UDType is the type of a user-defined attribute value.
type UDType uint8

// The user-defined attribute types of the dashboard contract.
const (
	UDString UDType = iota + 1
	UDInt64
	UDFloat64
	UDBool
)

// String returns the name the dashboard API uses for the type.
func (t UDType) String() string {
	switch t {
	case UDString:
		return "string"
	case UDInt64:
		return "int64"
	case UDFloat64:
		return "float64"
	case UDBool:
		return "bool"
	}
	return "unknown"
}

// ParseUDType is the inverse of UDType.String; ok is false for an unknown name.
func ParseUDType(s string) (t UDType, ok bool) {
	switch s {
	case "string":
		return UDString, true
	case "int64":
		return UDInt64, true
	case "float64":
		return UDFloat64, true
	case "bool":
		return UDBool, true
	}
	return 0, false
}

// UDAttr is one user-defined attribute. Value is the canonical text of the value: the string
// itself, a base-10 integer, a float formatted with strconv 'g' -1, or "true"/"false".
type UDAttr struct {
	Key   string
	Type  UDType
	Value string
}

// Attachment is a file an event refers to. BlobKey names it in the blob store once svc has
// assigned a place for it.
type Attachment struct {
	ID        uuid.UUID
	Name      string
	Type      string
	Extension string
	Timestamp string // as sent; multipart SDKs send it
	BlobKey   string
	// Size is the file's size in bytes as the SDK reported it, or SizeUnknown (-1) when it sent
	// none: 0 is a real, empty file. Informational; the blob store knows the true size.
	Size int64
	Path string // where the file was on the device, as sent; empty when absent
}

// SizeUnknown is Attachment.Size when the SDK did not send a size.
const SizeUnknown = -1
