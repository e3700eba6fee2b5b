package sinks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/svc-dev/svc/model"
)

// The rules every MetaStore backend applies to what it is asked to store, in one place so the
// backends accept exactly the same values: what Postgres cannot hold (NUL, invalid UTF-8) is
// refused by the embedded store too. Each returns an error wrapping ErrInvalid.

// CheckText refuses what a Postgres text column cannot hold (NUL, invalid UTF-8), so both
// backends accept the same strings and a string always comes back as it was written.
func CheckText(what, s string) error {
	if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		return fmt.Errorf("%s %q must be UTF-8 without NUL: %w", what, s, ErrInvalid)
	}
	return nil
}

// CheckBuildFields checks the identity of a build: a known build type and storable versions.
func CheckBuildFields(versionName, versionCode, buildType string) error {
	if !model.BuildTypes[buildType] {
		return fmt.Errorf("build type %q is not aab, apk or ipa: %w", buildType, ErrInvalid)
	}
	if err := CheckText("version name", versionName); err != nil {
		return err
	}
	return CheckText("version code", versionCode)
}

// CheckMapping checks a mapping record: its build fields, type, file name and blob key.
func CheckMapping(m model.Mapping) error {
	if err := CheckBuildFields(m.VersionName, m.VersionCode, m.BuildType); err != nil {
		return err
	}
	if !model.MappingTypes[m.Type] {
		return fmt.Errorf("mapping type %q is not dsym, proguard, elf_debug or jsbundle: %w", m.Type, ErrInvalid)
	}
	if err := CheckText("mapping file name", m.Filename); err != nil {
		return err
	}
	if err := CheckBlobKey(m.BlobKey); err != nil {
		return fmt.Errorf("mapping %s: %w", m.ID, err)
	}
	return nil
}

// CheckSDKConfig validates c and stores its nil lists as empty ones, so reads return [] for them.
func CheckSDKConfig(c *model.SDKConfig) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("SDK config: %w: %w", ErrInvalid, err)
	}
	if err := CheckText("screenshot mask level", c.ScreenshotMaskLevel); err != nil {
		return err
	}
	for _, l := range [][]string{c.HTTPDisableEventForURLs, c.HTTPTrackRequestForURLs, c.HTTPTrackResponseForURLs, c.HTTPBlockedHeaders} {
		for _, s := range l {
			if err := CheckText("SDK config entry", s); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckInvite checks an invite: a known role and a storable email.
func CheckInvite(inv model.Invite) error {
	if err := CheckRole(inv.Role); err != nil {
		return err
	}
	if inv.Email == "" {
		return fmt.Errorf("invite %s has no email: %w", inv.ID, ErrInvalid)
	}
	return CheckText("invite email", inv.Email)
}

// CheckThresholds checks threshold preferences: percentages in 0..100, caution at most good,
// a minimum count that is not negative.
func CheckThresholds(p model.ThresholdPrefs) error {
	switch {
	case !percent(p.ErrorGoodThreshold) || !percent(p.ErrorCautionThreshold):
		return fmt.Errorf("thresholds good %v and caution %v must be in 0..100: %w", p.ErrorGoodThreshold, p.ErrorCautionThreshold, ErrInvalid)
	case p.ErrorCautionThreshold > p.ErrorGoodThreshold:
		return fmt.Errorf("caution threshold %v is above good threshold %v: %w", p.ErrorCautionThreshold, p.ErrorGoodThreshold, ErrInvalid)
	case p.ErrorSpikeMinCountThreshold < 0:
		return fmt.Errorf("spike minimum count %d is negative: %w", p.ErrorSpikeMinCountThreshold, ErrInvalid)
	case !percent(p.ErrorSpikeMinRateThreshold):
		return fmt.Errorf("spike minimum rate %v must be in 0..100: %w", p.ErrorSpikeMinRateThreshold, ErrInvalid)
	}
	return nil
}

// ValidShortFilterCode reports whether code is 32 lowercase hex digits, the form of an MD5 sum.
func ValidShortFilterCode(code string) bool {
	if len(code) != 32 {
		return false
	}
	for i := 0; i < len(code); i++ {
		if c := code[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// CheckShortFilter refuses a code that is not an MD5 sum in hex and filters that are not one
// JSON object in UTF-8 (what Postgres's json type accepts).
func CheckShortFilter(f model.ShortFilter) error {
	if !ValidShortFilterCode(f.Code) {
		return fmt.Errorf("short filter code %q is not 32 lowercase hex digits: %w", f.Code, ErrInvalid)
	}
	trimmed := bytes.TrimLeft(f.Filters, " \t\r\n")
	if !utf8.Valid(f.Filters) || !json.Valid(f.Filters) || len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("filters of short filter %s are not a JSON object: %w", f.Code, ErrInvalid)
	}
	return nil
}

// CheckWebhook refuses a URL that is not absolute http(s) with a host.
func CheckWebhook(raw string) error {
	if err := CheckText("webhook URL", raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("webhook URL: %w: %w", ErrInvalid, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("webhook URL %q is not an absolute http(s) URL: %w", raw, ErrInvalid)
	}
	return nil
}

// CheckRole refuses anything but the four roles.
func CheckRole(r model.Role) error {
	if !r.Valid() {
		return fmt.Errorf("role %q is not owner, admin, developer or viewer: %w", r, ErrInvalid)
	}
	return nil
}

// CheckNewKey checks an API key about to be stored for app: non-empty, not revoked, of that app.
func CheckNewKey(k model.APIKey, app uuid.UUID) error {
	switch {
	case k.Key == "":
		return fmt.Errorf("empty API key: %w", ErrInvalid)
	case k.Revoked:
		return fmt.Errorf("a new API key must not be revoked: %w", ErrInvalid)
	case k.AppID != app:
		return fmt.Errorf("API key of app %s given for app %s: %w", k.AppID, app, ErrInvalid)
	}
	return nil
}

// percent reports whether v is in 0..100 (false for NaN).
func percent(v float64) bool { return v >= 0 && v <= 100 }
