package model

import (
	"encoding/json"
	"strings"
	"testing"
)

// unescape decodes string content as encoding/json does, escapes anywhere in it, and appends
// to what dst holds.
func TestUnescape(t *testing.T) {
	tests := []struct{ name, raw string }{
		{"empty", ``},
		{"no escape", `sh.measure.sample.CheckoutActivity`},
		{"escape first", `\nat line 1`},
		{"escape last", `at line 1\n`},
		{"escapes side by side", `\\\"\/\b\f\n\r\t`},
		{"a stack trace", `java.lang.IllegalStateException\n\tat sh.measure.A.b(A.kt:12)\n\tat sh.measure.C.d(C.kt:3)`},
		{"unicode escape", `caf\u00e9 \u20ac`},
		{"surrogate pair", `\ud83d\ude00 smile`},
		{"lone high surrogate", `a\ud83db`},
		{"lone low surrogate", `a\ude00b`},
		{"high surrogate then an escape", `\ud83d\n`},
		{"not ASCII as it is", `größe 名前`},
		{"long plain run", strings.Repeat("x", 1000) + `\t` + strings.Repeat("y", 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want string
			if err := json.Unmarshal([]byte(`"`+tt.raw+`"`), &want); err != nil {
				t.Fatalf("encoding/json: %v", err)
			}
			if got := string(unescape(nil, []byte(tt.raw))); got != want {
				t.Errorf("unescape(%q) = %q, want %q", tt.raw, got, want)
			}
			if got := string(unescape([]byte("kept:"), []byte(tt.raw))); got != "kept:"+want {
				t.Errorf("unescape after a prefix = %q, want %q", got, "kept:"+want)
			}
		})
	}
}
