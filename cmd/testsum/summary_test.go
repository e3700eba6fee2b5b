package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// replayStream feeds a recorded stream line by line and returns what would be printed.
func replayStream(t *testing.T, stream string) (*summary, string, string) {
	t.Helper()
	var s summary
	var out, errb strings.Builder
	r := bufio.NewReader(strings.NewReader(stream))
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			o, e := s.feed(line)
			out.WriteString(o)
			errb.WriteString(e)
		}
		if err != nil {
			break
		}
	}
	return &s, out.String(), errb.String()
}

func TestSummary(t *testing.T) {
	mixed, err := os.ReadFile(filepath.Join("testdata", "mixed.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		stream     string
		exit       int
		wantOut    []string // in this order, each a whole line
		wantErr    string
		notOut     []string
		wantClosed string // the closing text
	}{
		{
			name:   "pass, no test files, test failure, build failure",
			stream: string(mixed), exit: 1,
			wantOut: []string{"=== RUN   TestA", "    a_test.go:1: hi", "--- PASS: TestA (0.00s)", "PASS", "ok  \texample.com/m/a\t0.081s",
				"?   \texample.com/m/b\t[no test files]", "FAIL\texample.com/m/d [build failed]", "    --- FAIL: TestC/sub (0.00s)", "FAIL",
				"FAIL\texample.com/m/c\t0.408s"},
			wantErr: "# example.com/m/d [example.com/m/d.test]\nd/d_test.go:1:56: declared and not used: x\n",
			wantClosed: "FAIL\n" +
				"make test: failed example.com/m/d; its last 1 output lines:\n    | FAIL\texample.com/m/d [build failed]\n" +
				"make test: failed example.com/m/c TestC/sub; its last 3 output lines:\n" +
				"    | === RUN   TestC/sub\n    |     c_test.go:1: boom\n    |     --- FAIL: TestC/sub (0.00s)\n" +
				"make test: the count below is of packages (1 more have no test files)\n" +
				"make test: failed: example.com/m/c example.com/m/d\nmake test: 1 passed, 2 failed\n",
		},
		{
			name: "all pass",
			stream: `{"Action":"start","Package":"p/x"}
{"Action":"output","Package":"p/x","Output":"ok  \tp/x\t0.1s\n"}
{"Action":"pass","Package":"p/x","Elapsed":0.1}
{"Action":"output","Package":"p/y","Test":"TestY","Output":"--- SKIP: TestY (0.00s)\n"}
{"Action":"skip","Package":"p/y","Test":"TestY"}
{"Action":"pass","Package":"p/y","Elapsed":0.1}
`,
			wantOut:    []string{"ok  \tp/x\t0.1s", "--- SKIP: TestY (0.00s)"},
			wantClosed: "make test: the count below is of packages (0 more have no test files)\nmake test: 2 passed, 0 failed\n",
		},
		{
			name:   "plain lines pass through; a failing exit without a failed package is said",
			stream: "go: downloading x v1\n{not json\n{\"Action\":\"pass\",\"Package\":\"p/x\"}\n", exit: 2,
			wantOut: []string{"go: downloading x v1", "{not json"},
			notOut:  []string{"FAIL"},
			wantClosed: "make test: the count below is of packages (0 more have no test files)\n" +
				"make test: go test ended with exit status 2 without a failed package (interrupted, or a build or flag error)\n" +
				"make test: 1 passed, 0 failed\n",
		},
		{
			name: "a timeout is the package's own output; only the last lines of a long test are kept",
			stream: `{"Action":"run","Package":"p/t","Test":"TestLong"}
` + strings.Repeat(`{"Action":"output","Package":"p/t","Test":"TestLong","Output":"    x_test.go:9: step\n"}
`, recapLines+5) + `{"Action":"output","Package":"p/t","Test":"TestLong","Output":"    x_test.go:9: last\n"}
{"Action":"output","Package":"p/t","Test":"TestLong","Output":"--- FAIL: TestLong (1.00s)\n"}
{"Action":"fail","Package":"p/t","Test":"TestLong"}
{"Action":"run","Package":"p/t","Test":"TestHang"}
{"Action":"output","Package":"p/t","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"p/t","Output":"\trunning tests:\n"}
{"Action":"output","Package":"p/t","Output":"FAIL\tp/t\t1.2s\n"}
{"Action":"fail","Package":"p/t"}
{"Action":"output","Package":"p/u","Output":"panic: test timed out after 1s\n"}
{"Action":"fail","Package":"p/u"}
`, exit: 1,
			wantClosed: "FAIL\n" +
				"make test: failed p/t TestLong; its last 40 output lines:\n" +
				strings.Repeat("    |     x_test.go:9: step\n", recapLines-2) +
				"    |     x_test.go:9: last\n    | --- FAIL: TestLong (1.00s)\n" +
				"make test: failed p/t; its last 2 output lines:\n    | panic: test timed out after 1s\n    | \trunning tests:\n" +
				"make test: failed p/u; its last 1 output lines:\n    | panic: test timed out after 1s\n" +
				"make test: the count below is of packages (0 more have no test files)\n" +
				"make test: failed: p/t p/u\nmake test: 0 passed, 2 failed\n",
		},
		{
			name:   "not -json",
			stream: "ok  \tp/x\t0.1s\n", exit: 0,
			wantOut: []string{"ok  \tp/x\t0.1s"},
			wantClosed: "make test: the count below is of packages (0 more have no test files)\n" +
				"make test: no go test -json events in the output (is -json given?); exit status 0\nmake test: 0 passed, 0 failed\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out, errOut := replayStream(t, tt.stream)
			lines := strings.Split(out, "\n")
			i := 0
			for _, w := range tt.wantOut {
				for i < len(lines) && lines[i] != w {
					i++
				}
				if i == len(lines) {
					t.Errorf("line %q missing or out of order in:\n%s", w, out)
					break
				}
			}
			for _, n := range tt.notOut {
				if strings.Contains(out, n) {
					t.Errorf("output holds %q:\n%s", n, out)
				}
			}
			if errOut != tt.wantErr {
				t.Errorf("stderr %q, want %q", errOut, tt.wantErr)
			}
			if got := s.closing("make test", tt.exit); got != tt.wantClosed {
				t.Errorf("closing\n%s\nwant\n%s", got, tt.wantClosed)
			}
		})
	}
}

// TestRunKeepsExitStatus runs real commands: their exit status comes back and the summary
// line is the last one.
func TestRunKeepsExitStatus(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, tt := range []struct {
		script string
		code   int
		last   string
	}{
		{`echo '{"Action":"pass","Package":"p/x"}'`, 0, "make test: 1 passed, 0 failed"},
		{`echo '{"Action":"fail","Package":"p/x"}'; exit 3`, 3, "make test: 0 passed, 1 failed"},
	} {
		var out, errb bytes.Buffer
		code := run([]string{"--", sh, "-c", tt.script}, &out, &errb)
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		if code != tt.code || lines[len(lines)-1] != tt.last {
			t.Errorf("%s: exit %d, last line %q; want %d, %q\n%s%s", tt.script, code, lines[len(lines)-1], tt.code, tt.last, &out, &errb)
		}
	}
	if code := run([]string{"--", filepath.Join(t.TempDir(), "nope")}, &bytes.Buffer{}, &bytes.Buffer{}); code != 1 {
		t.Errorf("a command that cannot start: exit %d, want 1", code)
	}
}
