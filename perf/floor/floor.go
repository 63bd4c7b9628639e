package floor

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/ealargs"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
	"github.com/homa-dpdk/homa-dpdk/perf/procstat"
)

// The floor scenario: what the memif link itself costs, with nothing but
// memif's copies in it. One dpdk-testpmd, txonly on a memif server port,
// sends frames of one size as fast as the ring takes them; a second,
// rxonly on the client port of the same socket, receives and frees them.
// Each frame's bytes are copied twice, into memif's ring by the sender and
// out of it into an mbuf by the receiver: the two copies Homa's memif link
// adds to the ring link's, with no protocol, no worker and no application
// around them. Its Gbps and CPU per GB are the floor homa-memif cannot go
// below on this machine; the ratios say how close Homa comes to it.

// FrameSize is one frame size of the floor scenario: the frames an IP MTU
// makes (MTU + the 14-byte Ethernet header), and memif's buffer size for
// them (one buffer a frame, as the daemon's memif ports have).
type FrameSize struct {
	MTU   int `json:"mtu"`
	Frame int `json:"frame_bytes"`
	Bsize int `json:"memif_bsize"`
}

// Frames are the default frame sizes: MTU 1500 (1514-byte frames,
// bsize 2048) and MTU 9000 (9014-byte frames, bsize 9216), both measured in
// every trial.
var Frames = []FrameSize{{MTU: 1500, Frame: 1514, Bsize: 2048}, {MTU: 9000, Frame: 9014, Bsize: 9216}}

// Config configures the floor scenario.
type Config struct {
	Testpmd string      // the dpdk-testpmd program
	Frames  []FrameSize // measured in turn in each trial
	Trials  int         // rounds over Frames
	Warmup  time.Duration
	Measure time.Duration // measuring window per frame size and trial
	// SenderCPU and ReceiverCPU are the forwarding cores of the two
	// testpmds (each one's main lcore is the other CPU).
	SenderCPU, ReceiverCPU int
	Burst                  int
	// HomaMTUs are the MTUs to measure Homa's homa-memif throughput at in
	// this scenario (demo --workers --link memif --mtu M), with Sizes;
	// perf all measures 1500 in throughput and passes those runs in
	// Compare.
	HomaMTUs []int
	Sizes    []perf.StreamSize
	HomaTime time.Duration // measuring time per Homa size
	// Compare are Homa runs measured elsewhere in the same run (perf all's
	// throughput): their homa-memif runs get ratios to the floor too.
	Compare  []perf.StreamRun
	Self     string // this program, for the Homa daemon
	Mem      ealargs.Memory
	OutDir   string
	Progress *perf.Progress
	Out      io.Writer
	Smoke    bool
}

// ConfigFor is the default configuration, or the --smoke one (one
// trial, a second per frame size; Homa 1 MB for a second). homa says at
// which MTUs to measure Homa here.
func ConfigFor(smoke bool, homa []int) Config {
	sizes, homaTime := perf.StreamSizesFor(smoke)
	c := Config{Testpmd: "dpdk-testpmd", Frames: Frames, Trials: 3, Warmup: 2 * time.Second, Measure: 5 * time.Second,
		SenderCPU: 1, ReceiverCPU: 0, Burst: 32, HomaMTUs: homa, Sizes: sizes, HomaTime: homaTime,
		Mem: ealargs.ProbeMemory(), Out: os.Stdout, Smoke: smoke}
	if smoke {
		c.Trials, c.Warmup, c.Measure = 1, time.Second, time.Second
	}
	return c
}

// Steps is the number of progress steps of RunFloor.
func Steps(cfg Config) int {
	return cfg.Trials*len(cfg.Frames) + len(cfg.HomaMTUs)*(1+len(cfg.Sizes))
}

// floorMethod is how cfg measures.
func floorMethod(cfg Config) string {
	return fmt.Sprintf(`The floor: two dpdk-testpmd processes joined by one net_memif link, nothing else. The sender is a memif `+
		`server port in txonly mode (its forwarding core on CPU %d): it builds frames of one size (a 42-byte UDP/IPv4 `+
		`header, the rest left as the mbuf holds it) and transmits bursts of %d as fast as the ring takes them, copying each `+
		`frame into memif's shared buffers. The receiver is the client port of the same socket in rxonly mode (its `+
		`forwarding core on CPU %d): it copies each frame out into an mbuf and frees it. So every byte is copied twice, `+
		`as on Homa's memif link, in the direction Homa's requests go there (server to client). Each frame size is the `+
		`frames of an IP MTU, with memif's bsize holding one frame (as the daemon's memif ports have: host.MemifBufferSize); `+
		`both sizes are measured in every trial, %d trial(s), each a fresh pair of processes, %v of warm-up, then %v measured. `+
		`Gbps: the receiver's RX-bytes (whole frames) over the window, by "show port stats" at its ends; CPU seconds per GB: `+
		`both processes' utime+stime (/proc/PID/stat) over the window per GB of frames, busy polling included, as Homa's `+
		`figure counts its polling core and workers' thread; busy ns per frame: testpmd's own cycles per packet `+
		`(--record-core-cycles, the whole run, at its TSC rate). The receiver counts only the bursts that received, so its `+
		`figure is the cost of one copy out of the ring (with the mbuf's allocation and free); the sender counts every `+
		`burst, also those the full ring refused (the receiver sets the pace: the share refused is given), so its figure `+
		`is a bound, not the copy's cost. The copies' s/GB are twice the receiver's ns per frame over the frame's bytes: `+
		`both copies at the receiver's cost of one. The figures are the medians over trials. To set Homa beside `+
		`it, the floor is also given in Homa payload: the frame Gbps times the share of a full DATA frame that is message `+
		`bytes at that MTU (1424 of 1514 bytes at 1500, 8924 of 9014 at 9000), and its CPU per GB of that payload. `+
		`Ratios: each homa-memif throughput run (message Gbps, CPU s per GB of messages) over the floor at its MTU.`,
		cfg.SenderCPU, cfg.Burst, cfg.ReceiverCPU, cfg.Trials, cfg.Warmup, cfg.Measure)
}

const floorDistortions = `Both testpmds poll busily, so the pair burns two CPUs whatever the rate, as Homa's daemon loop ` +
	`and workers' thread do: the CPU per GB figures compare like with like, and they are the inverse of Gbps more than a ` +
	`cost of the copies; the receiver's busy ns per frame are that cost for one copy. On 2 vCPUs the main lcores' threads (asleep but for ` +
	`commands) and EAL's interrupt threads share the CPUs with the pollers. txonly does not write the payload (it ` +
	`sends what the mbuf holds), so the sender's copy reads memory no one wrote this time, and the receiver's frames ` +
	`are freed unread: Homa's receiver reads and copies what it receives, so the floor is a bound, not a target. ` +
	`Runs vary by about ±30 % between invocations; only ratios within one run mean anything.`

// Measure runs the floor scenario: the testpmd pairs, then Homa at
// cfg.HomaMTUs, then the ratios of every homa-memif run (those and
// cfg.Compare) to the floor at its MTU.
func Measure(cfg Config) (*Result, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Trials < 1 || len(cfg.Frames) == 0 {
		return nil, fmt.Errorf("floor: want at least one trial and one frame size")
	}
	res := &Result{Method: floorMethod(cfg), Distortions: floorDistortions, Smoke: cfg.Smoke}
	dir, err := os.MkdirTemp("", "homa-perf-floor")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for trial := 1; trial <= cfg.Trials; trial++ {
		for _, f := range cfg.Frames {
			cfg.Progress.Step(fmt.Sprintf("testpmd memif %d-byte frames, trial %d", f.Frame, trial))
			r, err := runFloorPair(cfg, f, trial, dir)
			if err != nil {
				return nil, fmt.Errorf("floor %d-byte frames, trial %d: %w", f.Frame, trial, err)
			}
			fmt.Fprintf(cfg.Out, "  floor MTU %d (%d-byte frames) trial %d: %.2f Gbps of frames, %.3f CPU s/GB, busy ns/frame: receiver %.0f, sender %.0f (%.0f%% of its frames refused by the full ring)\n",
				f.MTU, f.Frame, trial, r.Gbps, r.CPUPerGB, r.ReceiverNsPerFrame, r.SenderNsPerFrame, 100*r.RefusedShare())
			res.Runs = append(res.Runs, r)
		}
	}
	res.Floors = floorFigures(cfg.Frames, res.Runs)
	for _, mtu := range cfg.HomaMTUs {
		tc := homapeer.StreamConfig{Self: cfg.Self, Sizes: cfg.Sizes, Duration: cfg.HomaTime, WorkerCPU: 0, OutDir: cfg.OutDir,
			Progress: cfg.Progress, Smoke: cfg.Smoke, MTU: mtu, Name: "floor-mtu" + strconv.Itoa(mtu)}
		runs, loops, err := homapeer.HomaStream(tc, "memif", dir)
		res.Loops = append(res.Loops, loops...)
		if err != nil {
			return nil, fmt.Errorf("homa-memif at MTU %d: %w", mtu, err)
		}
		res.Homa = append(res.Homa, runs...)
	}
	res.Ratios = Ratios(res.Floors, append(append([]perf.StreamRun(nil), cfg.Compare...), res.Homa...))
	return res, nil
}

// floorArgs are the EAL and testpmd arguments of one side of the pair:
// the sender (memif server, txonly, forwarding on SenderCPU) or the
// receiver (memif client, rxonly, on ReceiverCPU), each with its main
// lcore on the other's CPU.
func floorArgs(cfg Config, f FrameSize, sender bool, sock string) []string {
	fwd, main, role, prefix := cfg.ReceiverCPU, cfg.SenderCPU, "client", "homafloorrx"
	if sender {
		fwd, main, role, prefix = cfg.SenderCPU, cfg.ReceiverCPU, "server", "homafloortx"
	}
	args := ealargs.VirtualDevices(fmt.Sprintf("%d,%d", min(main, fwd), max(main, fwd)), cfg.Mem, 512, fmt.Sprintf("%s%d", prefix, os.Getpid()))
	args = append(args, "--main-lcore", strconv.Itoa(main),
		"--vdev", fmt.Sprintf("net_memif0,role=%s,id=0,socket=%s,socket-abstract=no,bsize=%d", role, sock, f.Bsize), "--")
	// testpmd's mbuf size is the data room with DPDK's 128 bytes of
	// headroom; it must come before --txpkts, which is checked against it.
	mbuf := max(2176, (f.Frame+128+127)/128*128)
	args = append(args, "-i", "--auto-start", "--port-topology=loop", "--nb-cores=1", "--rxq=1", "--txq=1",
		fmt.Sprintf("--burst=%d", cfg.Burst), "--total-num-mbufs=8192", fmt.Sprintf("--mbuf-size=%d", mbuf),
		"--no-mlockall", "--disable-link-check", "--record-core-cycles")
	if sender {
		return append(args, "--forward-mode=txonly", fmt.Sprintf("--txpkts=%d", f.Frame))
	}
	return append(args, "--forward-mode=rxonly")
}

// runFloorPair measures one frame size with a fresh pair of testpmds.
func runFloorPair(cfg Config, f FrameSize, trial int, dir string) (Run, error) {
	run := Run{FrameSize: f, Trial: trial}
	sock := filepath.Join(dir, fmt.Sprintf("floor-%d-%d.sock", f.Frame, trial))
	logName := func(side string) string {
		return filepath.Join(cfg.OutDir, fmt.Sprintf("floor-%d-%d-%s.log", f.Frame, trial, side))
	}
	tx, err := startFloorPMD(cfg.Testpmd, floorArgs(cfg, f, true, sock), logName("sender"))
	if err != nil {
		return run, err
	}
	if err := homapeer.WaitForPath(sock, 30*time.Second); err != nil {
		tx.kill()
		return run, fmt.Errorf("the sender's memif socket: %w; its log: %s", err, perf.Tail(tx.log.Name(), 800))
	}
	rx, err := startFloorPMD(cfg.Testpmd, floorArgs(cfg, f, false, sock), logName("receiver"))
	if err != nil {
		tx.kill()
		return run, err
	}
	err = measureFloor(cfg, &run, tx, rx)
	// Both stop polling before either leaves (memif tears its rings down
	// under a poller whose peer leaves); then the server leaves first,
	// the client last (docs/decisions.md#dpdk-facts-behind-the-code: a server whose client left first crashed).
	var st [2]fwdStats
	for i, p := range []*floorPMD{tx, rx} {
		s, serr := p.stopForwarding()
		st[i] = s
		if err == nil {
			err = serr
		}
	}
	for _, p := range []*floorPMD{tx, rx} {
		if qerr := p.quit(); err == nil && qerr != nil {
			err = fmt.Errorf("quit: %w", qerr)
		}
	}
	if st[0].MHz > 0 {
		run.SenderNsPerFrame = st[0].Cycles / st[0].MHz * 1e3
	}
	if st[1].MHz > 0 {
		run.ReceiverNsPerFrame = st[1].Cycles / st[1].MHz * 1e3
	}
	run.SenderSent, run.SenderRefused = st[0].TxPackets, st[0].TxDropped
	return run, err
}

// measureFloor waits for frames to arrive, lets cfg.Warmup pass, and
// measures the receiver's bytes and both processes' CPU over cfg.Measure.
func measureFloor(cfg Config, run *Run, tx, rx *floorPMD) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := rx.counters()
		if err != nil {
			return err
		}
		if c.RxPackets > 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no frame arrived within 20 s of the receiver's start (logs: %s, %s)", tx.log.Name(), rx.log.Name())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(cfg.Warmup)
	type point struct {
		t      time.Time
		c      portCounters
		tx, rx time.Duration
	}
	take := func() (point, error) {
		var p point
		var err error
		p.t = time.Now()
		if p.c, err = rx.counters(); err != nil {
			return p, err
		}
		if p.tx, err = procstat.CPU(tx.Pid()); err != nil {
			return p, err
		}
		p.rx, err = procstat.CPU(rx.Pid())
		return p, err
	}
	a, err := take()
	if err != nil {
		return err
	}
	time.Sleep(cfg.Measure)
	b, err := take()
	if err != nil {
		return err
	}
	run.Seconds = b.t.Sub(a.t).Seconds()
	run.Frames = b.c.RxPackets - a.c.RxPackets
	bytes := float64(b.c.RxBytes - a.c.RxBytes)
	run.Gbps = bytes * 8 / run.Seconds / 1e9
	run.Mpps = float64(run.Frames) / run.Seconds / 1e6
	run.SenderCPU, run.ReceiverCPU = (b.tx - a.tx).Seconds(), (b.rx - a.rx).Seconds()
	if bytes > 0 {
		run.CPUPerGB = (run.SenderCPU + run.ReceiverCPU) / (bytes / 1e9)
	}
	return nil
}
