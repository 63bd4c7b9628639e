package perf

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"
)

// Scenario-wide settings shared by rtt and throughput.

// HomaLinks are the links rtt and throughput measure Homa on, one after
// the other, each with a daemon of its own (`demo --workers DIR --link
// LINK`) and a series of its own (homaSeries): memif, a net_memif pair,
// which copies every byte into and out of its shared rings; and ring, a
// net_ring pair, whose mbufs change hands with no copy in the link (the
// analogue of a NIC's DMA), possible only because both hosts are in the
// daemon's one process.
var HomaLinks = []string{"memif", "ring"}

// HomaLinkMTU is the IP MTU of each link's ports (`demo --mtu`): jumbo
// frames on the ring, as a datacenter NIC for ML traffic runs them;
// memif at 1500, the frames the floor scenario compares it with (it also
// runs Homa on memif at 9000: net_memif takes jumbo frames when its
// buffers hold a whole frame, host.MemifDevargs). Kernel
// TCP's peers keep their own: 65,536 on loopback and 1500 on the veth
// pair, both with 64 KB segments (GSO/GRO).
var HomaLinkMTU = map[string]int{"memif": 1500, "ring": 9000}

// HomaSeries is the name of Homa's series on link: homa-memif, homa-ring.
func HomaSeries(link string) string { return "homa-" + link }

// HomaMTUSeries is the name of Homa's series on link with its ports at an
// MTU other than 1500: homa-memif-mtu9000.
func HomaMTUSeries(link string, mtu int) string { return HomaSeries(link) + "-mtu" + strconv.Itoa(mtu) }

// IsHoma says whether a series or run is one of Homa's (homaSeries).
func IsHoma(transport string) bool { return strings.HasPrefix(transport, "homa-") }

// LinksFor are the links a scenario measures Homa on: links (nil:
// HomaLinks), or memif alone when the hosts are joined through
// dpdk-testpmd, which forwards between memif ports.
func LinksFor(links []string, testpmd string) []string {
	switch {
	case testpmd != "":
		return []string{"memif"}
	case links == nil:
		return HomaLinks
	}
	return links
}

// LoopStats is what the daemon's polling loop says when it stops: its
// passes and the longest gap between two passes (a garbage-collector or
// scheduler stall of the loop shows up here).
type LoopStats struct {
	Loop        string  `json:"loop"`
	Passes      int64   `json:"passes"`
	MaxGapUs    float64 `json:"max_gap_us"`
	MaxGapFound bool    `json:"reported"` // false: the daemon did not print its loop line
}

func Tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// OnPinnedThread runs f on a goroutine locked to a thread pinned to cpu,
// inside network namespace netns when it is not "". The thread is never
// unlocked, so it exits with the goroutine instead of going back to the
// runtime pinned (or in another namespace).
func OnPinnedThread(cpu int, netns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if netns != "" {
			if err := enterNetns(netns); err != nil {
				errc <- err
				return
			}
		}
		if cpu >= 0 {
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errc <- fmt.Errorf("pin a thread to CPU %d: %w", cpu, err)
				return
			}
		}
		errc <- f()
	}()
	return <-errc
}

func enterNetns(name string) error {
	fd, err := unix.Open("/var/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", name, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter network namespace %s: %w", name, err)
	}
	return nil
}

// CPUSelf is this process's user+system CPU time (getrusage).
func CPUSelf() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Measure times rt warmup times unrecorded (for at most maxTime/4 after
// the first minWarmup), then up to count times (at least min(count,
// minRecorded), at most for maxTime) into a histogram. The time limits are
// checked after every round trip: a 64 MB one takes tens of milliseconds,
// so a size's point takes at most about 1.25 maxTime plus minWarmup +
// minRecorded of its round trips.
func Measure(rt func() error, warmup, count int, maxTime time.Duration, prog *Progress) (*hdrhistogram.Histogram, error) {
	w0 := time.Now()
	for i := range warmup {
		if err := rt(); err != nil {
			return nil, fmt.Errorf("warm-up round trip %d: %w", i, err)
		}
		if i+1 >= MinWarmup && time.Since(w0) > maxTime/4 {
			break
		}
	}
	h := hdrhistogram.New(1, 60_000_000_000, 3)
	start := time.Now()
	for i := range count {
		t0 := time.Now()
		if err := rt(); err != nil {
			return nil, fmt.Errorf("round trip %d: %w", i, err)
		}
		t1 := time.Now()
		h.RecordValue(t1.Sub(t0).Nanoseconds())
		el := t1.Sub(start)
		over := el > maxTime
		if i%64 == 0 || over {
			prog.Set(max(float64(i)/float64(count), float64(el)/float64(maxTime)))
		}
		if over && i+1 >= MinRecorded {
			break
		}
	}
	return h, nil
}

// The fewest round trips measure makes of a size before its time limits
// stop it: warm-up (the first waits for ARP, the first of a size touches
// its arena and pool pages), and recorded.
const MinWarmup, MinRecorded = 3, 10

// LinkSteps are the progress steps of a scenario that measures sizes
// message sizes with Homa on each of links (through testpmd: memif alone, and a step
// to start testpmd), then kernel TCP on loopback and, with veth, on a
// veth pair (a step to make it): a daemon's start per link and a step per
// size and transport.
func LinkSteps(links []string, testpmd string, veth bool, sizes int) int {
	n := len(LinksFor(links, testpmd))*(1+sizes) + sizes
	if veth {
		n += 1 + sizes
	}
	if testpmd != "" {
		n++
	}
	return n
}
