//go:build unix

package cli

import "syscall"

// workSignals are the signals --inbox-signal may name.
var workSignals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "WINCH": syscall.SIGWINCH,
}
