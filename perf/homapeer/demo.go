package homapeer

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// DemoRun is one `demo` run's figures.
type DemoRun struct {
	Name        string  `json:"name"`
	Args        string  `json:"args"`
	RPCsPerSec  float64 `json:"rpcs_per_sec"`
	Gbps        float64 `json:"gbps"` // requests + responses
	NsPerPkt    float64 `json:"ns_per_packet_event"`
	PacketEvent uint64  `json:"packet_events"`
}

var (
	demoRateRe   = regexp.MustCompile(`RPCs in [0-9.]+ s: ([0-9.]+) RPCs/s, ([0-9.]+) Gbps`)
	demoEventsRe = regexp.MustCompile(`packet events: ([0-9]+) .*: ([0-9.]+) ns each`)
)

// RunDemo runs self with args, its output to logPath, and reads its
// figures.
func RunDemo(self, logPath string, args []string) (DemoRun, error) {
	run := DemoRun{Args: fmt.Sprint(args)}
	out, err := exec.Command(self, args...).CombinedOutput()
	if werr := os.WriteFile(logPath, out, 0o644); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return run, fmt.Errorf("%v: %w; its output ends: %s", args, err, perf.Tail(logPath, 5))
	}
	return ParseDemo(run, out)
}

// ParseDemo reads the demo's rate and packet-event lines.
func ParseDemo(run DemoRun, out []byte) (DemoRun, error) {
	m, e := demoRateRe.FindSubmatch(out), demoEventsRe.FindSubmatch(out)
	if m == nil || e == nil {
		return run, fmt.Errorf("the demo's output has no rate or packet-event line: %q", lastLines(out, 5))
	}
	run.RPCsPerSec, _ = strconv.ParseFloat(string(m[1]), 64)
	run.Gbps, _ = strconv.ParseFloat(string(m[2]), 64)
	run.PacketEvent, _ = strconv.ParseUint(string(e[1]), 10, 64)
	run.NsPerPkt, _ = strconv.ParseFloat(string(e[2]), 64)
	return run, nil
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte(" | ")))
}
