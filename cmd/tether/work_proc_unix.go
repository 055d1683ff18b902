//go:build unix && !linux

package main

import (
	"os"
	"syscall"
)

// workProcAttr puts a command in a process group of its own, so that it and
// whatever it starts can be signalled together (and a Ctrl-C at the
// runner's terminal reaches only the runner, which decides).
func workProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// workSignalGroup sends sig to p's process group.
func workSignalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
