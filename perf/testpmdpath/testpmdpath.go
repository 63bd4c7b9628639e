// Package testpmdpath is the testpmd-path scenario: rtt and throughput
// with the daemon's two hosts joined through dpdk-testpmd (io forwarding
// between two memif ports) instead of directly, so that a third-party
// DPDK forwarder sits in the path. It runs those two scenarios as the
// table has them, with perf.Options.Testpmd set (the forwarder itself is
// started with the daemon: homapeer.StartHomaDaemon), and reports them under
// its own name.
package testpmdpath

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// Title heads the scenario's report sections.
const Title = "testpmd-path: Homa through dpdk-testpmd (io forwarding between memif ports)"

// Through are the scenarios it runs through dpdk-testpmd, in order.
var Through = []string{"rtt", "throughput"}

func init() {
	perf.Register(perf.Scenario{
		Name:  "testpmd-path",
		Order: 100,
		Use:   "[--smoke] [--out DIR] [--no-veth]",
		Short: "rtt and throughput with dpdk-testpmd forwarding between the two Homa hosts",
		Long: `testpmd-path runs rtt and throughput with the daemon's two hosts joined through
dpdk-testpmd (io forwarding between two memif ports) instead of directly, so that a
third-party DPDK forwarder sits in the path (Homa on memif alone: homa-memif); kernel
TCP is measured beside it as in rtt and throughput. Results go to DIR/testpmd-path/.`,
		Title: Title,
		All:   run,
	})
}

// run runs each of Through into o.Dir/testpmd-path with Homa through
// dpdk-testpmd; the first section carries every plot.
func run(o perf.Options, _ map[string]any) (perf.Outcome, error) {
	sub := filepath.Join(o.Dir, "testpmd-path")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return perf.Outcome{}, err
	}
	o.Dir, o.Testpmd = sub, "dpdk-testpmd"
	var out perf.Outcome
	var imgs []string
	for _, name := range Through {
		s := perf.Lookup(name)
		if s == nil || s.All == nil {
			return perf.Outcome{}, fmt.Errorf("testpmd-path: no scenario %s in the table", name)
		}
		r, err := s.All(o, nil)
		if err != nil {
			return perf.Outcome{}, fmt.Errorf("%s through testpmd: %w", name, err)
		}
		for _, sec := range r.Sections {
			for _, i := range sec.Images {
				imgs = append(imgs, filepath.Join("testpmd-path", i))
			}
			sec.Name, sec.Title, sec.Images = "testpmd-path", Title+": "+name, nil
			out.Sections = append(out.Sections, sec)
		}
		if out.Files != "" {
			out.Files += ", "
		}
		out.Files += "testpmd-path/" + r.Files
	}
	out.Sections[0].Images = imgs
	return out, nil
}
