package pmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
)

// testpmdArgs are dpdk-testpmd's arguments for dev, matched to our
// forwarder's set-up.
func (cfg *Config) testpmdArgs(dev, sock string) []string {
	args := dpdk.VirtualDeviceArgs(fmt.Sprintf("0,%d", cfg.FwdLcore), cfg.Mem, 1024, fmt.Sprintf("homatp%d", os.Getpid()))
	args = append(args, "--main-lcore", "0")
	names, vargs := vdevArgs(dev, sock)
	for i := range 2 {
		v := names[i]
		if vargs[i] != "" {
			v += "," + vargs[i]
		}
		args = append(args, "--vdev", v)
	}
	args = append(args, "--",
		"--forward-mode=io", fmt.Sprintf("--burst=%d", cfg.Burst), "--nb-cores=1",
		"--rxq=1", "--txq=1", fmt.Sprintf("--rxd=%d", descriptors), fmt.Sprintf("--txd=%d", descriptors),
		fmt.Sprintf("--total-num-mbufs=%d", poolSize), fmt.Sprintf("--mbcache=%d", poolCache),
		fmt.Sprintf("--mbuf-size=%d", dataRoom),
		"--stats-period=1", "--no-mlockall")
	if dev == "ring" {
		args = append(args, "--tx-first")
	}
	return args
}

// runTestpmd runs dpdk-testpmd once on dev and returns its forwarding rate
// in Mpps and, for memif, the packets the peer could not send.
func (cfg *Config) runTestpmd(dev string) (float64, uint64, error) {
	sock, cleanup, err := memifSocket(dev)
	if err != nil {
		return 0, 0, err
	}
	defer cleanup()
	cmd := exec.Command(cfg.Testpmd, cfg.testpmdArgs(dev, sock)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, fmt.Errorf("start %s: %w (is the dpdk-dev package installed?)", cfg.Testpmd, err)
	}
	periods := make(chan float64, 1024)
	go parseTestpmdStats(stdout, periods)

	// testpmd takes seconds to start; its first statistics period (all
	// zero) marks the start of forwarding. For memif, the peer joins then.
	var tx []float64
	first, ok := <-periods
	if !ok {
		err := cmd.Wait()
		return 0, 0, fmt.Errorf("testpmd exited before forwarding (%v); stderr: %s", err, lastLines(stderr.String(), 5))
	}
	tx = append(tx, first)
	var peer *memifPeer
	start := time.Now()
	if dev == "memif" {
		if err = homapeer.WaitForPath(sock, 10*time.Second); err == nil {
			peer, err = startMemifPeer(cfg, sock)
		}
		if err != nil {
			homapeer.StopTestpmd(cmd)
			return 0, 0, fmt.Errorf("testpmd memif: %w; stderr: %s", err, lastLines(stderr.String(), 5))
		}
		start = time.Now()
		time.Sleep(cfg.Warmup + cfg.Measure + 500*time.Millisecond)
	}
	// Periods after the first: skip the warm-up seconds, keep the measured ones.
	skip := int(cfg.Warmup / time.Second)
	n := int(cfg.Measure / time.Second)
	timeout := time.After(cfg.Warmup + cfg.Measure + 30*time.Second)
	for peer == nil && len(tx) < 1+skip+n {
		select {
		case v, ok := <-periods:
			if !ok {
				return 0, 0, fmt.Errorf("testpmd stopped after %d stats periods, want %d; stderr: %s", len(tx), 1+skip+n, lastLines(stderr.String(), 5))
			}
			tx = append(tx, v)
		case <-timeout:
			homapeer.StopTestpmd(cmd)
			return 0, 0, fmt.Errorf("testpmd printed %d stats periods in time, want %d", len(tx), 1+skip+n)
		}
	}
	// The peer stops polling, then testpmd (the memif server) stops, then
	// the peer leaves.
	if peer != nil {
		if qerr := peer.quiesce(); qerr != nil {
			homapeer.StopTestpmd(cmd)
			peer.stop()
			return 0, 0, qerr
		}
	}
	err = homapeer.StopTestpmd(cmd)
	if peer != nil {
		rate, refused := peer.rate(start.Add(cfg.Warmup), start.Add(cfg.Warmup+cfg.Measure))
		if perr := peer.stop(); perr != nil {
			return 0, 0, perr
		}
		return rate, refused, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("testpmd: %w; stderr: %s", err, lastLines(stderr.String(), 5))
	}
	return perf.Median(tx[1+skip:1+skip+n]) / 1e6, 0, nil
}

// parseTestpmdStats reads testpmd's periodic statistics and sends, per
// period, the sum over ports of Tx-pps; it closes out at the end.
func parseTestpmdStats(r io.Reader, out chan<- float64) {
	defer close(out)
	cur, inPeriod := 0.0, false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "Port statistics ===="):
			if inPeriod {
				out <- cur
			}
			cur, inPeriod = 0, true
		case inPeriod && strings.Contains(line, "Tx-pps:"):
			f := strings.Fields(line)
			for i, w := range f {
				if w == "Tx-pps:" && i+1 < len(f) {
					v, _ := strconv.ParseFloat(f[i+1], 64)
					cur += v
				}
			}
		}
	}
	if inPeriod {
		out <- cur
	}
}

// lastLines are the last n lines of s on one line, " | " between them.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
