package model

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// APIKeyPrefix starts every app API key, so a leaked key is recognisable in logs and scanners.
const APIKeyPrefix = "svc_"

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewAPIKey returns a fresh random app API key: the prefix and 160 random bits.
func NewAPIKey() string {
	var b [20]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return APIKeyPrefix + strings.ToLower(keyEncoding.EncodeToString(b[:]))
}
