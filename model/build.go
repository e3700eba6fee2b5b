package model

import (
	"time"

	"github.com/google/uuid"
)

// Build is what PUT /builds records of one build of an app: its size, by version and type.
// Putting the same (version name, version code, build type) again replaces the size.
type Build struct {
	AppID       uuid.UUID
	VersionName string
	VersionCode string
	BuildType   string // aab, apk or ipa
	Size        int64  // bytes
	UpdatedAt   time.Time
}

// Mapping is a symbol or mapping file of a build, uploaded to the blob store at BlobKey.
type Mapping struct {
	ID          uuid.UUID
	AppID       uuid.UUID
	VersionName string
	VersionCode string
	BuildType   string
	Type        string // dsym, proguard, elf_debug (or jsbundle, which real build tools send)
	Filename    string // a bare file name
	BlobKey     string
	CreatedAt   time.Time
}

// BuildTypes are the accepted build_type values; MappingTypes the accepted mapping types.
var (
	BuildTypes   = map[string]bool{"aab": true, "apk": true, "ipa": true}
	MappingTypes = map[string]bool{"dsym": true, "proguard": true, "elf_debug": true, "jsbundle": true}
)
