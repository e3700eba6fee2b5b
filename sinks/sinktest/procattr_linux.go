package sinktest

import "syscall"

// serverAttrs makes the kernel kill a test server when the test process that started it dies,
// so a test binary killed by its timeout leaves no server holding a port.
func serverAttrs() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
