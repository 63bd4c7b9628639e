// Command shmfake runs the fake engine of package shmtest as a process,
// for the tests of worker libraries in other languages (python/tests):
// the real control socket and rings of shm, on a loopback host. It is a
// test peer, not the daemon.
//
//	shmfake -socket /tmp/fake.sock [-ip 127.0.0.1] [-echo 7] [-control] [-idle 20us] [-doorbell]
//	        [-host-info [-ip6 fd00::1] [-link-mbps 100000] [-mtu 9000]]
//
// With -host-info the regions' headers say the host (FeatureHostInfo):
// -ip's address, -ip6's, the link's speed and the MTU; without it they
// say nothing, as an older daemon's.
// It prints "shmfake: ready on PATH" once it listens. It ends on SIGINT or
// SIGTERM, or, with -control, at the end of its standard input, which
// then carries commands, one a line, each answered by one JSON line on
// standard output ({"error": "..."} when it failed):
//
//	pause | resume               stop and restart the engine's loop     → {}
//	refuse on|off                refuse attaches                        → {}
//	kill N                       end session N from the daemon's side   → {}
//	inject N HEX                 push a raw 64-byte completion to N     → {}
//	hold N PAGES                 hand N a run of pool pages             → {"page": P}
//	script PORT echo|CODE        the engine answers PORT itself         → {}
//	max-rpcs N                   outstanding client RPCs per session    → {}
//	session N                    what the engine knows of session N     → {"index": ..., "layout": {...}, ...}
//	sessions                     sessions attached now, and the idle    → {"attached": N, "doorbell_wakeups": M}
//	                             sleeps a doorbell ended (-doorbell)
//
// Sessions are numbered from 0 in the order they attached; -1 is the last.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/shm/shmtest"
)

// ports is a repeatable flag of port numbers.
type ports []uint16

func (p *ports) String() string { return fmt.Sprint(*p) }

func (p *ports) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return err
	}
	*p = append(*p, uint16(v))
	return nil
}

func main() {
	var echo ports
	path := flag.String("socket", "", "control socket (required)")
	ipArg := flag.String("ip", "127.0.0.1", "the one host's address: every worker's")
	sq := flag.Uint64("sq", 256, "submission ring entries")
	cq := flag.Uint64("cq", 1024, "completion ring entries")
	arena := flag.Uint64("arena", 4<<20, "transmit arena bytes per worker")
	pool := flag.Uint64("pool-pages", 128, "receive pool pages (64 KB) per worker")
	regionMax := flag.Uint("region-max-message", 0, "the regions' largest message, in their headers (0: 1,000,000 or what they hold)")
	maxMsg := flag.Uint("max-message", 0, "longest message a submission may name, if below the region's (0: the region's)")
	ringStart := flag.Uint64("ring-start", 0, "where both rings' indices begin")
	release := flag.String("release", "end", "when arena ranges are released: end, separate or flag")
	abortEnds := flag.Bool("abort-ends-server", false, "an abort ends the RPC at its server too (its reply is refused)")
	maxRPCs := flag.Int("max-rpcs", 0, "outstanding client RPCs per session (0: no limit)")
	idle := flag.Duration("idle", 20*time.Microsecond, "sleep of an idle pass (negative: never sleep)")
	doorbell := flag.Bool("doorbell", false, "offer a doorbell that ends idle sleeps (FeatureDoorbell)")
	hostInfo := flag.Bool("host-info", false, "the headers say the host (FeatureHostInfo): -ip, -ip6, -link-mbps, -mtu")
	ip6Arg := flag.String("ip6", "", "with -host-info: the host's IPv6 address in the headers (\"\": none)")
	linkMbps := flag.Uint("link-mbps", 0, "with -host-info: the link's speed in the headers, Mbit/s (0: unknown)")
	mtu := flag.Uint("mtu", 0, "with -host-info: the MTU in the headers (0: unknown)")
	control := flag.Bool("control", false, "read commands on stdin; exit at its end")
	verbose := flag.Bool("v", false, "log malformed submissions to stderr")
	flag.Var(&echo, "echo", "a port the engine echoes itself (repeatable)")
	flag.Parse()
	ip, err := netip.ParseAddr(*ipArg)
	if err != nil || !ip.Is4() || *path == "" {
		fmt.Fprintln(os.Stderr, "shmfake: need -socket and an IPv4 -ip")
		os.Exit(2)
	}
	host, err := hostInfoOf(*hostInfo, ip, *ip6Arg, *linkMbps, *mtu)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shmfake:", err)
		os.Exit(2)
	}
	rel, err := shmtest.ParseRelease(*release)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shmfake:", err)
		os.Exit(2)
	}
	cfg := shmtest.Config{Path: *path, Host: ip.As4(), MaxMessage: uint32(*maxMsg), RingStart: *ringStart,
		Params: shm.Params{SQEntries: *sq, CQEntries: *cq, ArenaSize: *arena, PoolPages: *pool,
			MaxMessage: uint32(*regionMax)},
		Release: rel, AbortEndsServer: *abortEnds, IdleSleep: *idle, Doorbell: *doorbell, HostInfo: host}
	if *verbose {
		cfg.Logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, "shmfake: "+f+"\n", a...) }
	}
	e, err := shmtest.Start(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shmfake:", err)
		os.Exit(1)
	}
	for _, p := range echo {
		e.Script(p, shm.ErrCodeNone)
	}
	e.SetMaxRPCs(*maxRPCs)
	fmt.Println("shmfake: ready on", *path)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	if *control {
		go func() {
			serve(e, bufio.NewScanner(os.Stdin), os.Stdout)
			stop <- syscall.SIGTERM
		}()
	}
	<-stop
	e.Close()
}

// hostInfoOf is what -host-info puts in the headers: ip, ip6 (IPv6, ""
// for none), the link's speed and the MTU; the zero HostInfo without it.
func hostInfoOf(say bool, ip netip.Addr, ip6 string, linkMbps, mtu uint) (shm.HostInfo, error) {
	if !say {
		if ip6 != "" || linkMbps != 0 || mtu != 0 {
			return shm.HostInfo{}, fmt.Errorf("-ip6, -link-mbps and -mtu go with -host-info")
		}
		return shm.HostInfo{}, nil
	}
	if linkMbps > math.MaxUint32 || mtu > math.MaxUint32 {
		return shm.HostInfo{}, fmt.Errorf("-link-mbps %d or -mtu %d above 2^32-1", linkMbps, mtu)
	}
	h := shm.HostInfo{IPv4: ip.As4(), LinkMbps: uint32(linkMbps), MTU: uint32(mtu)}
	if ip6 != "" {
		a, err := netip.ParseAddr(ip6)
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return shm.HostInfo{}, fmt.Errorf("-ip6 %q: want an IPv6 address", ip6)
		}
		h.IPv6 = a.As16()
	}
	return h, nil
}

// serve answers the commands of in until its end.
func serve(e *shmtest.Engine, in *bufio.Scanner, out *os.File) {
	in.Buffer(make([]byte, 4096), 1<<20)
	enc := json.NewEncoder(out)
	for in.Scan() {
		answer, err := command(e, strings.Fields(in.Text()))
		if err != nil {
			answer = map[string]string{"error": err.Error()}
		}
		enc.Encode(answer)
	}
}
