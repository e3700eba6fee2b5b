package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-dev/svc/sinks/spool"
)

// TestSpoolDir: the spool's directory follows --spool-dir; a start that would leave the last
// spool's acknowledged batches unreplayed is refused with where they are; a move carries the
// sequence numbers on, and the new directory is remembered once a spool is open there.
func TestSpoolDir(t *testing.T) {
	// use opens the spool where spoolDir says, as startSpool does, appends a record when
	// batch is set (leaving it unacknowledged, as a node stopped before its store took it)
	// and closes it; it returns the record's sequence number.
	use := func(t *testing.T, data, flag string, batch bool) uint64 {
		t.Helper()
		dir, minSeq, err := spoolDir(data, flag)
		if err != nil {
			t.Fatal(err)
		}
		sp, _, err := spool.Open(dir, spool.Options{MinSeq: minSeq})
		if err != nil {
			t.Fatal(err)
		}
		if minSeq > 0 {
			if err := rememberSpoolDir(data, dir); err != nil {
				t.Fatal(err)
			}
		}
		r := &spool.Record{Body: []byte(`{"events":[]}`)}
		if err := sp.Append(r); err != nil {
			t.Fatal(err)
		}
		if !batch {
			sp.Ack(r.Seq, len(r.Body))
		}
		if err := sp.Close(); err != nil {
			t.Fatal(err)
		}
		return r.Seq
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T, data, other string)
		flag    func(data, other string) string
		want    func(data, other string) string // the directory, "" when refused
		refusal func(data, other string) string // what the error names
		minSeq  uint64                          // 0: the directory did not move
	}{
		{
			name:    "default on a new data dir",
			prepare: func(*testing.T, string, string) {},
			flag:    func(string, string) string { return "" },
			want:    func(data, _ string) string { return filepath.Join(data, "spool") },
		},
		{
			name:    "a directory of its own on a new data dir",
			prepare: func(*testing.T, string, string) {},
			flag:    func(_, other string) string { return other },
			want:    func(_, other string) string { return other },
			minSeq:  1,
		},
		{
			name:    "moving away from the default spool with a batch left",
			prepare: func(t *testing.T, data, _ string) { use(t, data, "", true) },
			flag:    func(_, other string) string { return other },
			refusal: func(data, _ string) string { return "--spool-dir " + filepath.Join(data, "spool") },
		},
		{
			name: "moving away from an emptied spool carries its numbers on",
			prepare: func(t *testing.T, data, _ string) {
				for range 3 {
					use(t, data, "", false)
				}
			},
			flag:   func(_, other string) string { return other },
			want:   func(_, other string) string { return other },
			minSeq: 4,
		},
		{
			name: "back to the default with a batch left in the other",
			prepare: func(t *testing.T, data, other string) {
				use(t, data, other, true)
			},
			flag:    func(string, string) string { return "" },
			refusal: func(_, other string) string { return "--spool-dir " + other },
		},
		{
			name: "back to the default once the other is empty",
			prepare: func(t *testing.T, data, other string) {
				use(t, data, other, false)
				use(t, data, other, false)
			},
			flag:   func(string, string) string { return "" },
			want:   func(data, _ string) string { return filepath.Join(data, "spool") },
			minSeq: 3,
		},
		{
			name:    "the same directory again keeps its batches",
			prepare: func(t *testing.T, data, _ string) { use(t, data, "", true) },
			flag:    func(data, _ string) string { return filepath.Join(data, "spool") },
			want:    func(data, _ string) string { return filepath.Join(data, "spool") },
		},
		{
			name: "the same directory through a symlink",
			prepare: func(t *testing.T, data, other string) {
				use(t, data, other, true)
				if err := os.Symlink(other, filepath.Join(data, "link")); err != nil {
					t.Fatal(err)
				}
			},
			flag: func(data, _ string) string { return filepath.Join(data, "link") },
			want: func(data, _ string) string { return filepath.Join(data, "link") },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, other := t.TempDir(), filepath.Join(t.TempDir(), "spool-disk")
			c.prepare(t, data, other)
			got, minSeq, err := spoolDir(data, c.flag(data, other))
			if c.refusal != nil {
				if err == nil || !strings.Contains(err.Error(), c.refusal(data, other)) {
					t.Fatalf("spoolDir = %q, %v; want a refusal naming %q", got, err, c.refusal(data, other))
				}
				return
			}
			if err != nil || got != c.want(data, other) || minSeq != c.minSeq {
				t.Fatalf("spoolDir = %q, min seq %d, %v; want %q, %d", got, minSeq, err, c.want(data, other), c.minSeq)
			}
		})
	}
	// After a move, the numbers go on in the new directory, and it is the one remembered.
	data, other := t.TempDir(), filepath.Join(t.TempDir(), "spool-disk")
	first := use(t, data, "", false)
	if seq := use(t, data, other, false); seq <= first {
		t.Fatalf("first record in the new spool numbered %d, after %d in the old one", seq, first)
	}
	if b, err := os.ReadFile(filepath.Join(data, spoolPathFile)); err != nil || strings.TrimSpace(string(b)) != other {
		t.Fatalf("%s = %q, %v; want %q", spoolPathFile, b, err, other)
	}
}
