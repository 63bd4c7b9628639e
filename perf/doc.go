// Package perf is the core of homa-dpdk's performance harness: scenarios
// that measure the project side by side with a peer in the same run, on
// the same machine, and report ratios (these machines are noisy; absolute
// figures from different runs do not compare). Each writes JSON that
// carries its method and its known distortions, and PNG plots
// (gonum/plot), under a results directory.
//
// Every scenario is a package under perf/ that describes itself in one
// Scenario value (name, help, flags, run, report section, goal rows) and
// registers it in this package's table (table.go); perf/scenarios links
// them all into a program. The command line makes `perf NAME` of each,
// `perf all` (all.go) runs those that have an All in order and writes
// report.md and all.json, and the goals table takes each one's rows.
// This package imports none of them, and none imports another: what
// several need is here or in a library beside them (perf/homapeer, how
// the harness runs Homa and dpdk-testpmd; perf/tcppeer, kernel TCP;
// perf/procstat, what it reads from /proc; perf/plots, the charts) or
// below the engine (engine/workload, the W1-W5 sizes, which the engine's
// own tests offer too).
//
// Here: the table and perf all; the report every scenario fills (Report:
// its text, its section of report.md, its JSON, plots and page) and its
// tables (report.go); the flags the commands share and the kinds several
// bind, with the smoke size under the flags given (flags.go); the results
// directory and JSON, the progress line, the links and series' names
// (scenario.go), measuring round trips, the goal rows' type and the goals
// section, the streams' sizes and runs, and the child processes.
//
// The scenarios: pmd (our forwarding loop against dpdk-testpmd), worker-rtt
// (what the shared-memory path adds), rtt, throughput, rate, cost, floor,
// starts, slowdown (the Homa papers' experiment through a tc bottleneck),
// testpmd-path (rtt and throughput through dpdk-testpmd), scale (1 to N
// shards a host), cluster (144 hosts in simulation) and collectives (the
// PyTorch backend against gloo).
//
// This package is pure Go: it starts DPDK programs (the daemon,
// dpdk-testpmd) but never brings DPDK up in its own process; only
// perf/pmd, perf/workerrtt and perf/collectives do.
package perf
