package runner

import (
	"os"
	"syscall"
)

// procAttr puts a command in a process group of its own, so that it and
// whatever it starts can be signalled together (and a Ctrl-C at the
// runner's terminal reaches only the runner, which decides). Pdeathsig ends
// the command if the runner dies without stopping it (kill -9): its lease
// will expire and another runner will take the node, so it must not go on.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to p's process group.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
