//go:build !linux

package sinktest

import "syscall"

// serverAttrs is nil outside Linux, which has no parent-death signal: a test process that is
// killed leaves its servers running; one that ends stops them (their cleanups).
func serverAttrs() *syscall.SysProcAttr { return nil }
