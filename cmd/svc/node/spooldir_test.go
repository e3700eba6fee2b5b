package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-dev/svc/sinks/spool"
)

// TestSpoolDir: the spool's directory follows --spool-dir, and a start that would leave the
// last spool's acknowledged batches unreplayed is refused with where they are.
func TestSpoolDir(t *testing.T) {
	// withBatch leaves dir holding one acknowledged batch, as a node stopped before its store
	// took it does.
	withBatch := func(t *testing.T, dir string) {
		t.Helper()
		sp, _, err := spool.Open(dir, spool.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := sp.Append(&spool.Record{Body: []byte(`{"events":[]}`)}); err != nil {
			t.Fatal(err)
		}
		if err := sp.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T, data, other string)
		flag    func(data, other string) string
		want    func(data, other string) string // the directory, "" when refused
		refusal func(data, other string) string // what the error names
		last    func(data, other string) string // spool.path after, "" = none
	}{
		{
			name:    "default on a new data dir",
			prepare: func(*testing.T, string, string) {},
			flag:    func(string, string) string { return "" },
			want:    func(data, _ string) string { return filepath.Join(data, "spool") },
			last:    func(string, string) string { return "" },
		},
		{
			name:    "a directory of its own on a new data dir",
			prepare: func(*testing.T, string, string) {},
			flag:    func(_, other string) string { return other },
			want:    func(_, other string) string { return other },
			last:    func(_, other string) string { return other },
		},
		{
			name:    "moving away from the default spool with a batch left",
			prepare: func(t *testing.T, data, _ string) { withBatch(t, filepath.Join(data, "spool")) },
			flag:    func(_, other string) string { return other },
			refusal: func(data, _ string) string { return "--spool-dir " + filepath.Join(data, "spool") },
		},
		{
			name: "back to the default with a batch left in the other",
			prepare: func(t *testing.T, data, other string) {
				if _, err := spoolDir(data, other); err != nil {
					t.Fatal(err)
				}
				withBatch(t, other)
			},
			flag:    func(string, string) string { return "" },
			refusal: func(_, other string) string { return "--spool-dir " + other },
		},
		{
			name: "back to the default once the other is empty",
			prepare: func(t *testing.T, data, other string) {
				if _, err := spoolDir(data, other); err != nil {
					t.Fatal(err)
				}
			},
			flag: func(string, string) string { return "" },
			want: func(data, _ string) string { return filepath.Join(data, "spool") },
			last: func(data, _ string) string { return filepath.Join(data, "spool") },
		},
		{
			name:    "the same directory again keeps its batches",
			prepare: func(t *testing.T, data, _ string) { withBatch(t, filepath.Join(data, "spool")) },
			flag:    func(data, _ string) string { return filepath.Join(data, "spool") },
			want:    func(data, _ string) string { return filepath.Join(data, "spool") },
			last:    func(string, string) string { return "" },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, other := t.TempDir(), filepath.Join(t.TempDir(), "spool-disk")
			c.prepare(t, data, other)
			got, err := spoolDir(data, c.flag(data, other))
			if c.refusal != nil {
				if err == nil || !strings.Contains(err.Error(), c.refusal(data, other)) {
					t.Fatalf("spoolDir = %q, %v; want a refusal naming %q", got, err, c.refusal(data, other))
				}
				return
			}
			if err != nil || got != c.want(data, other) {
				t.Fatalf("spoolDir = %q, %v; want %q", got, err, c.want(data, other))
			}
			b, err := os.ReadFile(filepath.Join(data, spoolPathFile))
			if last := c.last(data, other); last == "" {
				if err == nil {
					t.Fatalf("%s written: %q", spoolPathFile, b)
				}
			} else if strings.TrimSpace(string(b)) != last {
				t.Fatalf("%s = %q (%v), want %q", spoolPathFile, b, err, last)
			}
		})
	}
}
