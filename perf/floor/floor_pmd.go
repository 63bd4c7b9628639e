package floor

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/internal/child"
	"github.com/homa-dpdk/homa-dpdk/perf"
)

// floorPMD is a dpdk-testpmd of the floor scenario, run interactively (-i)
// on one memif port and driven by commands on its standard input:
// "show port stats 0" for its counters, "stop" for its forwarding
// statistics, "quit". Its output goes to its log and, line by line, to
// await. testpmd writes its answers with printf, which buffers them in a
// pipe: it runs under stdbuf -oL, so that each line arrives as written.
type floorPMD struct {
	cmd   *exec.Cmd
	done  <-chan error // cmd's end (child.Start)
	stdin io.WriteCloser
	lines chan string // its output, closed when it ends
	log   *os.File
}

// startFloorPMD starts program with args under stdbuf, its output in
// logPath.
func startFloorPMD(program string, args []string, logPath string) (*floorPMD, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &floorPMD{log: log, lines: make(chan string, 4096)}
	p.cmd = exec.Command("stdbuf", append([]string{"-oL", "-eL", program}, args...)...)
	p.cmd.Stderr = log
	// Pipes of our own rather than the command's: its end is waited for
	// as soon as it exits, and the reader below still reads to the end.
	out, outW, err := os.Pipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	in, inW, err := os.Pipe()
	if err != nil {
		log.Close()
		out.Close()
		outW.Close()
		return nil, err
	}
	p.cmd.Stdin, p.cmd.Stdout, p.stdin = in, outW, inW
	// A harness that dies takes testpmd with it.
	p.done, err = child.Start(p.cmd, syscall.SIGTERM)
	in.Close()
	outW.Close()
	if err != nil {
		log.Close()
		out.Close()
		inW.Close()
		return nil, fmt.Errorf("start %s under stdbuf: %w", program, err)
	}
	go func() {
		defer close(p.lines)
		defer out.Close()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			p.lines <- sc.Text()
		}
	}()
	return p, nil
}

// Pid is the process id (stdbuf execs testpmd: the same process).
func (p *floorPMD) Pid() int { return p.cmd.Process.Pid }

// await reads output lines until match holds for one (included), for at
// most timeout.
func (p *floorPMD) await(match func(string) bool, timeout time.Duration) ([]string, error) {
	var got []string
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return got, fmt.Errorf("testpmd exited (log: %s): %s", p.log.Name(), perf.Tail(p.log.Name(), 600))
			}
			got = append(got, l)
			if match(l) {
				return got, nil
			}
		case <-deadline:
			return got, fmt.Errorf("testpmd did not answer within %v (log: %s)", timeout, p.log.Name())
		}
	}
}

// do sends a command line and awaits the line that ends its answer.
func (p *floorPMD) do(command string, match func(string) bool, timeout time.Duration) ([]string, error) {
	if _, err := io.WriteString(p.stdin, command+"\n"); err != nil {
		return nil, fmt.Errorf("testpmd %q: %w", command, err)
	}
	lines, err := p.await(match, timeout)
	if err != nil {
		return lines, fmt.Errorf("testpmd %q: %w", command, err)
	}
	return lines, nil
}

// portCounters are a port's totals as "show port stats" prints them.
type portCounters struct {
	RxPackets, RxBytes, TxPackets, TxBytes uint64
}

// counters asks for port 0's totals.
func (p *floorPMD) counters() (portCounters, error) {
	lines, err := p.do("show port stats 0", func(l string) bool { return strings.Contains(l, "TX-packets:") }, 10*time.Second)
	if err != nil {
		return portCounters{}, err
	}
	return parsePortCounters(lines), nil
}

// parsePortCounters reads the RX-packets, RX-bytes, TX-packets and
// TX-bytes fields of a "show port stats" answer (the last of each).
func parsePortCounters(lines []string) portCounters {
	var c portCounters
	fields := map[string]*uint64{"RX-packets:": &c.RxPackets, "RX-bytes:": &c.RxBytes, "TX-packets:": &c.TxPackets, "TX-bytes:": &c.TxBytes}
	for _, l := range lines {
		f := strings.Fields(l)
		for i := 0; i+1 < len(f); i++ {
			if dst, ok := fields[f[i]]; ok {
				if v, err := strconv.ParseUint(f[i+1], 10, 64); err == nil {
					*dst = v
				}
			}
		}
	}
	return c
}

// cyclesLine is testpmd's forwarding cost line with --record-core-cycles.
var cyclesLine = regexp.MustCompile(`CPU cycles/packet=([0-9.]+).* at ([0-9]+) MHz`)

// fwdStats is what testpmd says of its forwarding when it stops: its busy
// cycles per packet over the whole run and its TSC rate (zeros when it
// printed none: it forwarded nothing), and its packets sent and dropped
// (those the TX queue refused), all ports together.
type fwdStats struct {
	Cycles, MHz          float64
	TxPackets, TxDropped uint64
}

// stopForwarding stops the forwarding lcore and returns its statistics.
func (p *floorPMD) stopForwarding() (fwdStats, error) {
	lines, err := p.do("stop", func(l string) bool { return strings.Contains(l, "Done.") }, 15*time.Second)
	if err != nil {
		return fwdStats{}, err
	}
	return parseFwdStats(lines), nil
}

// parseFwdStats reads the cycles line and the last TX-packets/TX-dropped
// line (the accumulated one) of testpmd's stop.
func parseFwdStats(lines []string) fwdStats {
	var st fwdStats
	for _, l := range lines {
		if m := cyclesLine.FindStringSubmatch(l); m != nil {
			st.Cycles, _ = strconv.ParseFloat(m[1], 64)
			st.MHz, _ = strconv.ParseFloat(m[2], 64)
		}
		f := strings.Fields(l)
		for i := 0; i+3 < len(f); i++ {
			if f[i] == "TX-packets:" && f[i+2] == "TX-dropped:" {
				st.TxPackets, _ = strconv.ParseUint(f[i+1], 10, 64)
				st.TxDropped, _ = strconv.ParseUint(f[i+3], 10, 64)
			}
		}
	}
	return st
}

// quit ends testpmd (it closes its port) and waits for it, killing it
// after 15 s.
func (p *floorPMD) quit() error {
	defer p.log.Close()
	io.WriteString(p.stdin, "quit\n")
	p.stdin.Close()
	done := make(chan error, 1)
	go func() {
		for range p.lines { // the reader ends at EOF
		}
		done <- <-p.done
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-done
		return fmt.Errorf("testpmd did not quit within 15 s (log: %s)", p.log.Name())
	}
}

// kill ends testpmd at once (after a failure).
func (p *floorPMD) kill() {
	p.cmd.Process.Kill()
	p.stdin.Close()
	for range p.lines {
	}
	<-p.done
	p.log.Close()
}
