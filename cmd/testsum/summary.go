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

	// running holds the last output lines of each test (and each package's own output, under
	// Test "") still running; failures keeps them for the tests and packages that failed, so
	// the closing text repeats why at the end, where a CI log's tail shows it.
	running  map[testKey][]string
	failures []failure
}

// testKey names one test of one package; Test is "" for the package's own output.
type testKey struct{ Package, Test string }

// failure is a failed test's (or a failed package's own) last output lines.
type failure struct {
	testKey
	lines []string
}

const (
	recapLines    = 40 // output lines kept per test
	recapFailures = 12 // failures repeated in the closing text
)

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
			s.keep(testKey{e.Package, e.Test}, *e.Output)
			return *e.Output, ""
		}
	case "build-output":
		if e.Output != nil {
			return "", *e.Output
		}
	case "pass", "fail", "skip":
		if e.Package == "" {
			return "", ""
		}
		s.settle(testKey{e.Package, e.Test}, e.Action == "fail")
		if e.Test != "" {
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

// keep adds one output line to what is kept of a running test, dropping the oldest beyond
// recapLines.
func (s *summary) keep(k testKey, line string) {
	if s.running == nil {
		s.running = make(map[testKey][]string)
	}
	lines := s.running[k]
	if len(lines) == recapLines {
		copy(lines, lines[1:])
		lines = lines[:recapLines-1]
	}
	s.running[k] = append(lines, line)
}

// settle ends a test or a package. A failed test's lines are kept for the recap; a failed
// package's own lines too (a timeout or a panic outside a test is the package's own output,
// with no test named), and a parent test's unless a subtest's failure already explains it.
func (s *summary) settle(k testKey, failed bool) {
	lines, ok := s.running[k]
	delete(s.running, k)
	if k.Test == "" {
		for t := range s.running { // whatever was still running when the package ended
			if t.Package == k.Package {
				delete(s.running, t)
			}
		}
	}
	if !failed || !ok || len(s.failures) >= recapFailures {
		return
	}
	if k.Test == "" {
		lines = packageNews(k.Package, lines)
		if len(lines) == 0 {
			return
		}
	}
	for _, f := range s.failures { // a subtest said it already
		if k.Test != "" && f.Package == k.Package && strings.HasPrefix(f.Test, k.Test+"/") {
			return
		}
	}
	s.failures = append(s.failures, failure{k, lines})
}

// packageNews drops from a package's own output the lines every failed package prints
// ("FAIL" and "FAIL <package> <time>"), which say nothing the summary does not.
func packageNews(pkg string, lines []string) []string {
	var kept []string
	for _, l := range lines {
		if l == "FAIL\n" || strings.HasPrefix(l, "FAIL\t"+pkg+"\t") {
			continue
		}
		kept = append(kept, l)
	}
	return kept
}

// closing is what follows the stream once the command ended with exit code: go test's own
// closing FAIL (which -json leaves out) when a package failed, notes, and the summary line
// `<label>: N passed, M failed`, counting packages, always last.
func (s *summary) closing(label string, exit int) string {
	var b strings.Builder
	if len(s.failed) > 0 {
		b.WriteString("FAIL\n")
	}
	for _, f := range s.failures {
		name := f.Package
		if f.Test != "" {
			name += " " + f.Test
		}
		fmt.Fprintf(&b, "%s: failed %s; its last %d output lines:\n", label, name, len(f.lines))
		for _, l := range f.lines {
			b.WriteString("    | ")
			b.WriteString(strings.TrimRight(l, "\n"))
			b.WriteString("\n")
		}
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
