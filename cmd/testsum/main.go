// Command testsum runs `go test -json …`, prints its output as plain `go test -v` would (so
// every ok/FAIL package line and PASS/FAIL stays), and ends with one summary line counting
// packages, `make test: 41 passed, 0 failed`. It exits with the command's exit status. make test
// runs it under testenv:
//
//	go run ./cmd/testenv -- ./bin/testsum -- go test -json -v ./...
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testsum", flag.ContinueOnError)
	fs.SetOutput(stderr)
	label := fs.String("label", "make test", "what the summary line starts with")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: testsum [-label TEXT] -- go test -json [flags] [packages]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testsum:", err)
		return 1
	}
	// A Ctrl-C reaches go test from the terminal itself; a SIGTERM (testenv's, on its own
	// interrupt) is passed on. Either way the summary still comes once go test has ended.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testsum:", err)
		return 1
	}
	done := make(chan struct{})
	forwarded := make(chan struct{})
	go func() { // ends when the command has
		defer close(forwarded)
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGTERM {
					_ = cmd.Process.Signal(s)
				}
			case <-done:
				return
			}
		}
	}()

	var s summary
	r := bufio.NewReaderSize(out, 1<<16)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			o, e := s.feed(line)
			io.WriteString(stdout, o)
			io.WriteString(stderr, e)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintln(stderr, "testsum: reading go test's output:", err)
			}
			break
		}
	}
	waitErr := cmd.Wait()
	close(done)
	<-forwarded
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(waitErr, &exit):
		code = exit.ExitCode()
		if code < 0 { // ended by a signal
			code = 1
		}
	case waitErr != nil:
		fmt.Fprintln(stderr, "testsum:", waitErr)
		code = 1
	}
	io.WriteString(stdout, s.closing(*label, code))
	return code
}
