package slowdown

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf/tcppeer"
)

// topology is the scenario's network: a switch namespace with a bridge, a
// server namespace and client namespaces, each host with eth0 on the
// bridge; the bottleneck is on the switch's port towards the server.
type topology struct {
	prefix  string
	sw      string
	server  string
	clients []string
	bottle  string // the switch's veth towards the server
	made    []string
	log     func(string, ...any)
}

// hostIP is host i's address: the server is 0.
func hostIP(i int) string { return "10.77.0." + strconv.Itoa(i+1) }

// newTopology builds the topology; on error what was made is removed.
func newTopology(prefix string, clients int, rateBps float64) (n *topology, err error) {
	n = &topology{prefix: prefix, sw: prefix + "sw"}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	if err = n.addNS(n.sw); err != nil {
		return nil, err
	}
	if err = tcppeer.Sh("ip", "-n", n.sw, "link", "add", "br0", "type", "bridge"); err != nil {
		return nil, err
	}
	if err = tcppeer.Sh("ip", "-n", n.sw, "link", "set", "br0", "up"); err != nil {
		return nil, err
	}
	for i := 0; i <= clients; i++ {
		ns := prefix + "h" + strconv.Itoa(i)
		if err = n.addNS(ns); err != nil {
			return nil, err
		}
		peer := prefix + "p" + strconv.Itoa(i)
		for _, c := range [][]string{
			{"ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", peer, "netns", n.sw},
			{"ip", "-n", n.sw, "link", "set", peer, "master", "br0", "up"},
			{"ip", "-n", ns, "link", "set", "eth0", "up"},
			{"ip", "-n", ns, "link", "set", "lo", "up"},
		} {
			if err = tcppeer.Sh(c...); err != nil {
				return nil, err
			}
		}
		// MTU-sized frames for both transports: no segmentation offloads.
		tcppeer.Sh("ip", "netns", "exec", ns, "ethtool", "-K", "eth0", "tso", "off", "gso", "off", "gro", "off", "tx-checksumming", "off")
		tcppeer.Sh("ip", "netns", "exec", n.sw, "ethtool", "-K", peer, "tso", "off", "gso", "off", "gro", "off")
		if i == 0 {
			n.server, n.bottle = ns, peer
		} else {
			n.clients = append(n.clients, ns)
		}
	}
	return n, n.bottleneck(rateBps)
}

func (n *topology) addNS(ns string) error {
	exec.Command("ip", "netns", "del", ns).Run() // a leftover of a killed run
	if err := tcppeer.Sh("ip", "netns", "add", ns); err != nil {
		return err
	}
	n.made = append(n.made, ns)
	return nil
}

// bottleneck installs the rate limit with 8 strict-priority bands,
// classified by the top 3 bits of the IPv4 TOS. This kernel has neither
// the prio nor the ets qdisc (only htb, tbf, [bp]fifo, pfifo_fast and the
// u32 classifier), so the bands are htb's own: one class at the rate and
// under it 8 leaf classes with htb prio 0..7, each guaranteed almost
// nothing (8 kbit/s) and allowed to borrow up to the rate; htb lends
// spare bandwidth to the lowest prio number first, which makes the
// leaves strict priorities apart from that guarantee. Each leaf queues
// in a bfifo of BandQueue of the rate's bytes (classes).
func (n *topology) bottleneck(rateBps float64) error {
	dev := n.bottle
	tc := func(a ...string) error {
		return tcppeer.Sh(append([]string{"ip", "netns", "exec", n.sw, "tc"}, a...)...)
	}
	// Unclassified (non-IP: ARP) frames go to band 0.
	if err := tc("qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10"); err != nil {
		return err
	}
	if err := n.classes("add", rateBps); err != nil {
		return err
	}
	// Homa priority p (TOS p<<5) goes to band 7-p.
	for p := 0; p < 8; p++ {
		if err := tc("filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
			"match", "ip", "tos", fmt.Sprintf("0x%02x", p<<5), "0xe0", "flowid", fmt.Sprintf("1:%d", 10+7-p)); err != nil {
			return err
		}
	}
	return nil
}

// BandQueue is how long a band's queue lasts at the rate: each band
// holds at most this much of the rate's bytes (at least 16 full frames).
// A switch port's buffer is a time at its rate; a fixed count of
// packets would be seconds at a few Mb/s, longer than any transport's
// retransmission timer.
const BandQueue = 50 * time.Millisecond

// bandLimit is a band's queue limit in bytes at rateBps.
func bandLimit(rateBps float64) int {
	return max(int(rateBps/8*BandQueue.Seconds()), 16*1514)
}

// classes adds ("add") or changes ("change") the bottleneck's classes to
// rateBps, and gives each band its queue (a bfifo of bandLimit). The
// buckets hold one full frame (burst 1600 bytes), so that every packet
// waits its transmission time at the rate, as on a link of that rate.
func (n *topology) classes(verb string, rateBps float64) error {
	dev := n.bottle
	tc := func(a ...string) error {
		return tcppeer.Sh(append([]string{"ip", "netns", "exec", n.sw, "tc"}, a...)...)
	}
	rate := strconv.FormatInt(int64(rateBps), 10) + "bit"
	if err := tc("class", verb, "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", rate, "ceil", rate,
		"burst", "1600", "cburst", "1600", "quantum", "1514"); err != nil {
		return err
	}
	limit := strconv.Itoa(bandLimit(rateBps))
	for b := 0; b < 8; b++ {
		id := fmt.Sprintf("1:%d", 10+b)
		if err := tc("class", verb, "dev", dev, "parent", "1:1", "classid", id, "htb", "rate", "8kbit", "ceil", rate,
			"burst", "1600", "cburst", "1600", "prio", strconv.Itoa(b), "quantum", "1514"); err != nil {
			return err
		}
		if err := tc("qdisc", "replace", "dev", dev, "parent", id, "handle", strconv.Itoa(20+b)+":", "bfifo", "limit", limit); err != nil {
			return err
		}
	}
	return nil
}

// setRate changes the bottleneck's rate (the parent class and every
// band's ceiling) and its bands' queue limits; the counters stay.
func (n *topology) setRate(rateBps float64) error { return n.classes("change", rateBps) }

// Band is the counters of one strict-priority band of the bottleneck.
type Band struct {
	Band          int    `json:"band"` // 0 is served first
	HomaPriority  int    `json:"homa_priority"`
	Bytes         uint64 `json:"bytes"`
	Packets       uint64 `json:"packets"`
	Drops         uint64 `json:"drops"`
	Overlimits    uint64 `json:"overlimits"`
	MaxBacklogObs uint64 `json:"backlog_bytes_at_end"`
}

// classStats matches tc -s class show's counters of one htb class
// (this iproute2 ignores -j for classes).
var classStats = regexp.MustCompile(`(?m)^class htb 1:(\d+) .*\n\s*Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)[^\n]*\n\s*backlog (\d+)b`)

// bands reads the per-band counters of the bottleneck's leaf classes.
func (n *topology) bands() ([]Band, error) {
	out, err := exec.Command("ip", "netns", "exec", n.sw, "tc", "-s", "class", "show", "dev", n.bottle).Output()
	if err != nil {
		return nil, fmt.Errorf("tc -s class show: %v", err)
	}
	return parseBands(string(out))
}

func parseBands(out string) ([]Band, error) {
	var bs []Band
	for _, m := range classStats.FindAllStringSubmatch(out, -1) {
		k, _ := strconv.Atoi(m[1])
		if k < 10 || k > 17 {
			continue
		}
		var v [5]uint64
		for i := range v {
			v[i], _ = strconv.ParseUint(m[2+i], 10, 64)
		}
		bs = append(bs, Band{Band: k - 10, HomaPriority: 17 - k, Bytes: v[0], Packets: v[1], Drops: v[2], Overlimits: v[3], MaxBacklogObs: v[4]})
	}
	if len(bs) != 8 {
		return bs, fmt.Errorf("tc -s class show: %d of 8 bands found:\n%s", len(bs), out)
	}
	slices.SortFunc(bs, func(a, b Band) int { return a.Band - b.Band })
	return bs, nil
}

// bandDelta returns after - before, band by band.
func bandDelta(before, after []Band) []Band {
	out := append([]Band(nil), after...)
	for i := range out {
		for _, b := range before {
			if b.Band == out[i].Band {
				out[i].Bytes -= b.Bytes
				out[i].Packets -= b.Packets
				out[i].Drops -= b.Drops
				out[i].Overlimits -= b.Overlimits
			}
		}
	}
	return out
}

// linuxAddrs gives the hosts their addresses for the kernel stack.
func (n *topology) linuxAddrs() error {
	for i, ns := range append([]string{n.server}, n.clients...) {
		if err := tcppeer.Sh("ip", "-n", ns, "addr", "add", hostIP(i)+"/24", "dev", "eth0"); err != nil {
			return err
		}
	}
	return nil
}

// flushAddrs takes the kernel's addresses away again, for the Homa
// daemons.
func (n *topology) flushAddrs() {
	for _, ns := range append([]string{n.server}, n.clients...) {
		exec.Command("ip", "-n", ns, "addr", "flush", "dev", "eth0").Run()
		exec.Command("ip", "-n", ns, "neigh", "flush", "dev", "eth0").Run()
	}
}

// Close removes every namespace made (their veths go with them).
func (n *topology) Close() {
	for i := len(n.made) - 1; i >= 0; i-- {
		exec.Command("ip", "netns", "del", n.made[i]).Run()
	}
	n.made = nil
}
