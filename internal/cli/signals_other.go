//go:build !unix

package cli

import "syscall"

// workSignals are the signals --inbox-signal may name: none here.
var workSignals = map[string]syscall.Signal{}
