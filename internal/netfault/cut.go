package netfault

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

// Direction is which of a host's packets a cut drops.
type Direction int

const (
	// Both drops what the host sends to the peers and what it receives
	// from them.
	Both Direction = iota
	// In drops only what the host receives from the peers: it still sends.
	In
	// Out drops only what the host sends to the peers: it still receives.
	Out
)

func (d Direction) String() string {
	switch d {
	case In:
		return "in"
	case Out:
		return "out"
	default:
		return "both ways"
	}
}

// Cut drops the host's traffic with peers in direction d, by iptables rules
// in the host's namespace, until heal is called (at most once matters;
// later calls do nothing). The other hosts, and the hub, are unaffected.
func (h *Host) Cut(d Direction, peers ...*Host) (heal func()) {
	h.n.t.Helper()
	var rules [][]string
	for _, p := range peers {
		if d == Both || d == In {
			rules = append(rules, []string{"INPUT", "-s", p.IP, "-j", "DROP"})
		}
		if d == Both || d == Out {
			rules = append(rules, []string{"OUTPUT", "-d", p.IP, "-j", "DROP"})
		}
	}
	for _, r := range rules {
		if err := h.iptables("-A", r); err != nil {
			h.n.t.Fatal(err)
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, r := range rules {
				if err := h.iptables("-D", r); err != nil {
					h.n.t.Error(err)
				}
			}
		})
	}
}

// iptables applies op (-A or -D) to rule in the host's namespace; -w waits
// for the xtables lock, which every namespace shares.
func (h *Host) iptables(op string, rule []string) error {
	args := append([]string{"netns", "exec", h.NS, "iptables", "-w", op}, rule...)
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %s %s in %s: %v: %s", op, strings.Join(rule, " "), h.Name, err, out)
	}
	return nil
}
