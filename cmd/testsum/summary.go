package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, plus the build events).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     *string
	ImportPath string // build-output and build-fail
}

// summary follows a `go test -json` stream: it turns each line back into the text plain
// `go test -v` prints and counts the packages that passed, failed or had no test files.
type summary struct {
	passed, failed, noTests []string
	events                  int // JSON events seen, to tell a stream that was not -json
}

// feed takes one line of the stream and returns what to print of it on stdout and on stderr
// (build output goes to stderr, as plain go test prints it). A line that is not a test event
// is printed as it came.
func (s *summary) feed(line []byte) (stdout, stderr string) {
	trimmed := bytes.TrimSpace(line)
	var e event
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &e) != nil || e.Action == "" {
		return string(line), ""
	}
	s.events++
	switch e.Action {
	case "output":
		if e.Output != nil {
			return *e.Output, ""
		}
	case "build-output":
		if e.Output != nil {
			return "", *e.Output
		}
	case "pass", "fail", "skip":
		if e.Test != "" || e.Package == "" {
			return "", ""
		}
		switch e.Action {
		case "pass":
			s.passed = append(s.passed, e.Package)
		case "fail":
			s.failed = append(s.failed, e.Package)
		default:
			s.noTests = append(s.noTests, e.Package)
		}
	}
	return "", ""
}

// closing is what follows the stream once the command ended with exit code: go test's own
// closing FAIL (which -json leaves out) when a package failed, notes, and the summary line
// `<label>: N passed, M failed`, counting packages, always last.
func (s *summary) closing(label string, exit int) string {
	var b strings.Builder
	if len(s.failed) > 0 {
		b.WriteString("FAIL\n")
	}
	fmt.Fprintf(&b, "%s: the count below is of packages (%d more have no test files)\n", label, len(s.noTests))
	if len(s.failed) > 0 {
		failed := append([]string(nil), s.failed...)
		sort.Strings(failed)
		fmt.Fprintf(&b, "%s: failed: %s\n", label, strings.Join(failed, " "))
	}
	switch {
	case s.events == 0:
		fmt.Fprintf(&b, "%s: no go test -json events in the output (is -json given?); exit status %d\n", label, exit)
	case exit != 0 && len(s.failed) == 0:
		fmt.Fprintf(&b, "%s: go test ended with exit status %d without a failed package (interrupted, or a build or flag error)\n", label, exit)
	}
	fmt.Fprintf(&b, "%s: %d passed, %d failed\n", label, len(s.passed), len(s.failed))
	return b.String()
}
