package client

import (
	"time"

	"github.com/tether-run/tether/internal/clock"
)

// KeepHooks lets the keeper's tests drive it: clk is its clock (nil keeps
// the wall clock), armed is called each time it starts to wait and onRenew
// after each renewal.
func KeepHooks(clk clock.Clock, armed func(time.Duration), onRenew func(RenewResponse)) KeepOption {
	return func(k *keeper) {
		if clk != nil {
			k.clock = clk
		}
		k.armed, k.onRenew = armed, onRenew
	}
}
