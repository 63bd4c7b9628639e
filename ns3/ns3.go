// Package ns3 runs the simulated cluster's DCTCP and TCP side on ns-3: it
// writes a run's messages as a trace, runs this folder's program on it
// (src/tcpcluster.cc, built as build/homa-ns3-tcp by `make -C ns3`, which the
// set-up runs), and reads back when each message was handed to its
// connection and when its receiver had all of it. perf cluster measures
// those times as it measures the engine's (perf/cluster/analysis.go).
package ns3

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
	"github.com/homa-dpdk/homa-dpdk/internal/child"
)

// Program is the built program's path below the repository's root.
const Program = "ns3/build/homa-ns3-tcp"

// Fabric is the network both sides simulate: Racks racks of HostsPerRack
// hosts on links of LinkBps, each top-of-rack switch on one link of
// UplinkBps to each of Cores core switches; per link PropNs of
// propagation, per switch SwitchNs, at the sender HostNs of software and
// NIC time per packet, at the receiver RecvNs.
type Fabric struct {
	Racks, HostsPerRack, Cores       int
	LinkBps, UplinkBps               float64
	PropNs, SwitchNs, HostNs, RecvNs int64
	MTU                              int
}

// Output is one ns-3 run: its settings and counters as the program
// printed them, and per message (the trace's order) when it was handed to
// its connection and when it was delivered, trace ns, -1 where it was not.
type Output struct {
	Settings    [][2]string
	Drops       int64
	Marks       int64
	Retransmits int64
	WallSeconds float64
	Start, Done []int64
}

// Setting is the value the program printed for key, or "".
func (o *Output) Setting(key string) string {
	for _, kv := range o.Settings {
		if kv[0] == key {
			return kv[1]
		}
	}
	return ""
}

// WriteTrace writes msgs on f as the program reads them.
func WriteTrace(w io.Writer, f Fabric, msgs []workload.Msg) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintf(bw, "# homa-dpdk cluster trace 1\n# racks %d\n# hosts_per_rack %d\n# cores %d\n# link_bps %.0f\n# uplink_bps %.0f\n"+
		"# prop_ns %d\n# switch_ns %d\n# host_ns %d\n# recv_ns %d\n# mtu %d\nid,at_ns,src,dst,size,after\n",
		f.Racks, f.HostsPerRack, f.Cores, f.LinkBps, f.UplinkBps, f.PropNs, f.SwitchNs, f.HostNs, f.RecvNs, f.MTU)
	for i, m := range msgs {
		if m.After >= int32(i) {
			return fmt.Errorf("message %d waits for a later one (%d)", i, m.After)
		}
		fmt.Fprintf(bw, "%d,%d,%d,%d,%d,%d\n", i, m.At, m.Src, m.Dst, m.Size, m.After)
	}
	return bw.Flush()
}

// ReadOutput reads the program's output for a trace of n messages.
func ReadOutput(r io.Reader, n int) (*Output, error) {
	o := &Output{Start: make([]int64, n), Done: make([]int64, n)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	line, rows, header := 0, 0, false
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "":
		case strings.HasPrefix(l, "#"):
			k, v, _ := strings.Cut(strings.TrimSpace(l[1:]), " ")
			v = strings.TrimSpace(v)
			o.Settings = append(o.Settings, [2]string{k, v})
			var err error
			switch k {
			case "drops":
				o.Drops, err = strconv.ParseInt(v, 10, 64)
			case "marks":
				o.Marks, err = strconv.ParseInt(v, 10, 64)
			case "retransmits":
				o.Retransmits, err = strconv.ParseInt(v, 10, 64)
			case "wall_s":
				o.WallSeconds, err = strconv.ParseFloat(v, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("ns-3 output line %d: %q: %v", line, l, err)
			}
		case !header:
			if l != "id,start_ns,done_ns" {
				return nil, fmt.Errorf("ns-3 output line %d: %q, want the header id,start_ns,done_ns", line, l)
			}
			header = true
		default:
			f := strings.Split(l, ",")
			if len(f) != 3 {
				return nil, fmt.Errorf("ns-3 output line %d: %q: want id,start_ns,done_ns", line, l)
			}
			id, err1 := strconv.Atoi(f[0])
			start, err2 := strconv.ParseInt(f[1], 10, 64)
			done, err3 := strconv.ParseInt(f[2], 10, 64)
			if err := errors.Join(err1, err2, err3); err != nil || id != rows || id >= n {
				return nil, fmt.Errorf("ns-3 output line %d: %q: want message %d of %d", line, l, rows, n)
			}
			if done >= 0 && done < start {
				return nil, fmt.Errorf("ns-3 output line %d: message %d delivered before it was sent", line, id)
			}
			o.Start[id], o.Done[id] = start, done
			rows++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if rows != n {
		return nil, fmt.Errorf("ns-3 output: %d messages, want %d", rows, n)
	}
	return o, nil
}

// Find returns the program beside the repository's homa-dpdk (self is
// its path), or as HOMA_NS3 names it, or an error that says how to build
// it.
func Find(self string) (string, error) {
	var tried []string
	if p := os.Getenv("HOMA_NS3"); p != "" {
		tried = append(tried, p+" (HOMA_NS3)")
		if isExec(p) {
			return p, nil
		}
	}
	if self != "" {
		p := filepath.Join(filepath.Dir(self), Program)
		tried = append(tried, p)
		if isExec(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("the ns-3 program is not built (looked for %s): run `make -C ns3` in the repository (it needs Debian's libns3-dev and libgsl-dev; the set-up, scripts/setup.sh, installs them and builds it), or set HOMA_NS3 to it", strings.Join(tried, ", "))
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Run writes msgs as dir/NAME.trace, runs the program bin on it with
// transport (dctcp or tcp) and args, its output in dir/NAME.out and its
// standard error in dir/NAME.log, and reads the output.
func Run(bin, dir, name string, f Fabric, msgs []workload.Msg, transport string, args ...string) (*Output, error) {
	trace := filepath.Join(dir, name+".trace")
	tf, err := os.Create(trace)
	if err != nil {
		return nil, err
	}
	err = WriteTrace(tf, f, msgs)
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, name+".out")
	logPath := filepath.Join(dir, name+".log")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"--trace", trace, "--out", out, "--transport", transport}, args...)...)
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	err = child.Run(cmd, syscall.SIGTERM) // a run of minutes ends with the harness
	os.WriteFile(logPath, stderr.Bytes(), 0o644)
	if err != nil {
		tail := stderr.String()
		if len(tail) > 1500 {
			tail = tail[len(tail)-1500:]
		}
		return nil, fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(tail))
	}
	of, err := os.Open(out)
	if err != nil {
		return nil, err
	}
	defer of.Close()
	o, err := ReadOutput(of, len(msgs))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	return o, nil
}
