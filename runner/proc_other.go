//go:build !unix

package runner

import (
	"os"
	"syscall"
)

// procAttr: without process groups, the command is signalled alone.
func procAttr() *syscall.SysProcAttr { return nil }

// signalGroup ends p: there is no gentler signal to send here.
func signalGroup(p *os.Process, _ syscall.Signal) error { return p.Kill() }
