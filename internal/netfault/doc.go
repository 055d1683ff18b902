// Package netfault builds a small network of Linux network namespaces for a
// test and splits it: a hub namespace holding a bridge, and one namespace per
// host, joined to the bridge by a veth pair and given an address of its own
// on 10.77.0.0/24. A test starts each process in its host's namespace
// (Host.Command), reaches them from the hub (Net.DialContext), and cuts a
// host off from others with iptables drops inside the host's namespace, in
// one direction or both (Host.Cut), healing by deleting the same rules.
//
// The namespaces need root and the ip and iptables programs; New skips the
// test, saying why (internal/testskip), where either is missing.
//
// Invariants:
//   - Every namespace a Net makes is named "tether-<pid>-<n>-..." and
//     deleted when its test ends, whether it passed or not; the veths and
//     iptables rules live inside those namespaces and go with them. Nothing
//     is added to the namespace the test runs in.
//   - New deletes namespaces of that naming whose process is gone (a test
//     binary killed before its cleanup ran), and only those.
//   - A cut's heal deletes exactly the rules that cut added.
package netfault
