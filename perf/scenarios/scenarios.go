// Package scenarios puts every scenario of the harness in perf's table:
// a program or test that imports it (for its side effect) gets them all.
// A new scenario is a package under perf/ that registers itself
// (perf.Register) and a line here.
package scenarios

import (
	_ "github.com/homa-dpdk/homa-dpdk/perf/cluster"
	_ "github.com/homa-dpdk/homa-dpdk/perf/collectives"
	_ "github.com/homa-dpdk/homa-dpdk/perf/cost"
	_ "github.com/homa-dpdk/homa-dpdk/perf/floor"
	_ "github.com/homa-dpdk/homa-dpdk/perf/ncclring"
	_ "github.com/homa-dpdk/homa-dpdk/perf/pmd"
	_ "github.com/homa-dpdk/homa-dpdk/perf/rate"
	_ "github.com/homa-dpdk/homa-dpdk/perf/rtt"
	_ "github.com/homa-dpdk/homa-dpdk/perf/scale"
	_ "github.com/homa-dpdk/homa-dpdk/perf/slowdown"
	_ "github.com/homa-dpdk/homa-dpdk/perf/starts"
	_ "github.com/homa-dpdk/homa-dpdk/perf/testpmdpath"
	_ "github.com/homa-dpdk/homa-dpdk/perf/throughput"
	_ "github.com/homa-dpdk/homa-dpdk/perf/workerrtt"
)
