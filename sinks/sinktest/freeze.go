package sinktest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Freeze stops the server and every process it started (PostgreSQL's postmaster and backends)
// with SIGSTOP, as a hung machine or a stalled disk would: connections stay open and new ones
// complete the TCP handshake, but nothing answers until Thaw. Freezing twice is harmless.
func (s *Server) Freeze() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return fmt.Errorf("freeze %s: not running", s.Name)
	}
	if s.frozen != nil {
		return nil
	}
	// Parents first, so that no new child starts after its parent's children were listed.
	pids := descendants(s.cmd.Process.Pid)
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("freeze %s: SIGSTOP %d: %w", s.Name, pid, err)
		}
	}
	// A child forked just before its parent stopped is caught by a second pass.
	seen := map[int]bool{}
	for _, pid := range pids {
		seen[pid] = true
	}
	for _, pid := range descendants(s.cmd.Process.Pid) {
		if !seen[pid] {
			_ = syscall.Kill(pid, syscall.SIGSTOP)
			pids = append(pids, pid)
		}
	}
	s.frozen = pids
	return nil
}

// Thaw resumes the processes Freeze stopped (SIGCONT), children first.
func (s *Server) Thaw() error {
	pids := s.frozen
	s.frozen = nil
	var first error
	for i := len(pids) - 1; i >= 0; i-- {
		if err := syscall.Kill(pids[i], syscall.SIGCONT); err != nil && err != syscall.ESRCH && first == nil {
			first = fmt.Errorf("thaw %s: SIGCONT %d: %w", s.Name, pids[i], err)
		}
	}
	return first
}

// descendants lists root and every process below it, parents before their children, from
// /proc.
func descendants(root int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		rest := string(b)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}
