//go:build unix && !linux

package runner

import (
	"os"
	"syscall"
)

// procAttr puts a command in a process group of its own, so that it and
// whatever it starts can be signalled together (and a Ctrl-C at the
// runner's terminal reaches only the runner, which decides).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to p's process group.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
