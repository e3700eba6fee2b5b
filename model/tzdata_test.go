package model

// The zone tests use the time zone database Go embeds when the machine has none in
// /usr/share/zoneinfo, so they pass there too.
import _ "time/tzdata"
