//go:build !unix

package main

import (
	"os"
	"syscall"
)

// workProcAttr: without process groups, the command is signalled alone.
func workProcAttr() *syscall.SysProcAttr { return nil }

// workSignalGroup ends p: there is no gentler signal to send here.
func workSignalGroup(p *os.Process, _ syscall.Signal) error { return p.Kill() }
