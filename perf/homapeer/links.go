package homapeer

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/ealargs"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/tcppeer"
)

// TestpmdPathNote is what the scenario adds to the method and distortions
// of rtt and throughput.
const TestpmdPathNote = `Homa's two hosts are joined through dpdk-testpmd: testpmd in io mode ` +
	`forwards between two net_memif server ports, one per host (the hosts are memif clients: ` +
	"`demo --workers --memif-peers`" + `), its forwarding core on CPU 0 and its main lcore on CPU 1. ` +
	`Distortion on a 2-CPU machine: testpmd's busy forwarding core shares CPU 0 with the workers' ` +
	`spinning thread and the daemon's loop has CPU 1, so three busy pollers time-share two CPUs; ` +
	`the figures measure that sharing as much as the path. Homa is measured on memif only (testpmd ` +
	`forwards between memif ports): the series homa-memif, through testpmd.`

// fwdProcess is a running dpdk-testpmd between two memif server sockets.
type fwdProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   *os.File
	Socks [2]string
}

// startForwarder starts program (dpdk-testpmd) with memif servers in dir
// and waits until both sockets exist.
func startForwarder(program, dir, logPath string) (*fwdProcess, error) {
	f := &fwdProcess{Socks: [2]string{filepath.Join(dir, "fwd0.sock"), filepath.Join(dir, "fwd1.sock")}}
	args := ealargs.VirtualDevices("0,1", ealargs.ProbeMemory(), 512, fmt.Sprintf("homafwd%d", os.Getpid()))
	args = append(args, "--main-lcore", "1")
	for i, s := range f.Socks {
		args = append(args, "--vdev", fmt.Sprintf("net_memif%d,role=server,id=0,socket=%s,socket-abstract=no", i, s))
	}
	args = append(args, "--", "--forward-mode=io", "--nb-cores=1", "--no-mlockall")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	f.log = log
	f.cmd = exec.Command(program, args...)
	f.cmd.Stdout, f.cmd.Stderr = log, log
	// Without -i testpmd forwards until its standard input ends.
	if f.stdin, err = f.cmd.StdinPipe(); err != nil {
		log.Close()
		return nil, err
	}
	if err := f.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", program, err)
	}
	for _, s := range f.Socks {
		if err := WaitForPath(s, 30*time.Second); err != nil {
			f.stop()
			return nil, fmt.Errorf("testpmd's memif socket: %w; its log: %s\n%s", err, logPath, perf.Tail(logPath, 1500))
		}
	}
	return f, nil
}

// stop ends testpmd (after the daemon, its memif clients, has left).
func (f *fwdProcess) stop() error {
	defer f.log.Close()
	f.stdin.Close()
	return StopTestpmd(f.cmd)
}

// daemonArgs are the daemon's extra arguments to join its hosts through f.
func (f *fwdProcess) daemonArgs() []string {
	return []string{"--memif-peers", f.Socks[0] + "," + f.Socks[1]}
}

// LinkArgs are the daemon's arguments for its hosts on link with their
// ports at mtu (0: the link's, HomaLinkMTU).
func LinkArgs(link string, mtu int) []string {
	return []string{"--link", link, "--mtu", strconv.Itoa(cmp.Or(mtu, perf.HomaLinkMTU[link]))}
}

// StartHomaDaemon starts the daemon for the scenario name with its hosts
// on link (demo --link), serving workers in dir/link (its log:
// outDir/name-link-daemon.log), or joined through dpdk-testpmd when
// testpmd names the program (link is then memif: homaLinks); its ports
// at mtu (0: the link's, HomaLinkMTU). While the daemon runs, the
// harness's threads stay off its loop CPU (harnessOffCPU). done gives
// them their CPUs back and stops the forwarder: call it after the
// daemon has stopped. more are more arguments for the daemon.
func StartHomaDaemon(self, testpmd, link, dir, outDir, name string, prog *perf.Progress, mtu int, more ...string) (d *Daemon, logPath string, done func(), err error) {
	return startHomaDaemon(self, testpmd, link, dir, outDir, name, prog, mtu, nil, more...)
}

// startHomaDaemon is StartHomaDaemon with env ("HOMA_KEY=value") added to
// the daemon's environment (StartDaemonEnv).
func startHomaDaemon(self, testpmd, link, dir, outDir, name string, prog *perf.Progress, mtu int, env []string, more ...string) (d *Daemon, logPath string, done func(), err error) {
	done = func() {}
	extra := LinkArgs(link, mtu)
	if testpmd != "" {
		prog.Step("start dpdk-testpmd")
		fwd, err := startForwarder(testpmd, dir, filepath.Join(outDir, name+"-testpmd.log"))
		if err != nil {
			return nil, "", nil, err
		}
		done = func() { fwd.stop() }
		extra = append(fwd.daemonArgs(), "--mtu", strconv.Itoa(cmp.Or(mtu, perf.HomaLinkMTU[link])))
	}
	extra = append(extra, more...)
	prog.Step("start the daemon on " + link)
	logPath = filepath.Join(outDir, name+"-"+link+"-daemon.log")
	if d, err = StartDaemonEnv(self, filepath.Join(dir, link), logPath, env, extra...); err != nil {
		done()
		return nil, "", nil, err
	}
	d.Link = link
	// The harness keeps off the daemon's loop CPU while the daemon runs.
	restore, stopFwd := HarnessOffCPU(DaemonLoopCPU), done
	done = func() { restore(); stopFwd() }
	return d, logPath, done, nil
}

// Transports measures Homa on each of links (perf.LinksFor: through
// testpmd, memif alone), homa getting a directory for the run's daemons'
// sockets, then kernel TCP on each of tcppeer's paths (loopback, and with
// veth a veth pair, made and removed here). It returns why there was no
// veth path ("" when there was one).
func Transports(links []string, testpmd string, veth bool, prog *perf.Progress, homa func(link, dir string) error,
	tcp func(tcppeer.Path) error) (vethSkip string, err error) {
	dir, err := os.MkdirTemp("", "homa-perf")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for _, link := range perf.LinksFor(links, testpmd) {
		if err := homa(link, dir); err != nil {
			return "", err
		}
	}
	paths, vethSkip, remove := tcppeer.Paths(veth, prog)
	defer remove()
	for _, p := range paths {
		if err := tcp(p); err != nil {
			return vethSkip, fmt.Errorf("%s: %w", p.Name, err)
		}
	}
	return vethSkip, nil
}
