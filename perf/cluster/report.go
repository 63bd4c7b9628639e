package cluster

import (
	"fmt"
	"io"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// Summary writes one run's headline figures.
func Summary(r *Result, w io.Writer) {
	short, large := "-", "-"
	if r.Short != nil {
		short = fmt.Sprintf("%.2f (n=%d)", r.Short.P99, r.Short.Count)
	}
	if r.Largest != nil {
		large = fmt.Sprintf("%.2f (%d-%d B, n=%d)", r.Largest.P99, r.Largest.MinSize, r.Largest.MaxSize, r.Largest.Count)
	}
	fmt.Fprintf(w, "  P99 slowdown <=1 KB %s, largest bucket %s; peak switch queue %d B; offered %.2f, delivered %.2f Gb/s per host; %.1f ms simulated in %.1f s (%.0f frames/s)\n",
		short, large, r.Queues.Max(), r.OfferedGbps, r.DeliveredGbps, float64(r.SimNs)/1e6, r.WallSeconds, r.FramesPerSec)
}

// Table is the runs' headline table.
func Table(results []*Result) perf.Table {
	t := perf.Table{Header: []string{"workload", "load", "variant", "P99 <=1KB", "P50 <=1KB", "P99 largest", "peak queue B", "offered Gb/s", "delivered Gb/s", "sim ms", "wall s"}}
	for _, r := range results {
		s99, s50, l99 := "-", "-", "-"
		if r.Short != nil {
			s99, s50 = fmt.Sprintf("%.2f", r.Short.P99), fmt.Sprintf("%.2f", r.Short.P50)
		}
		if r.Largest != nil {
			l99 = fmt.Sprintf("%.2f", r.Largest.P99)
		}
		t.Rows = append(t.Rows, []string{r.Workload, fmt.Sprintf("%.0f%%", 100*r.Load), string(r.Variant), s99, s50, l99,
			fmt.Sprint(r.Queues.Max()), fmt.Sprintf("%.2f", r.OfferedGbps), fmt.Sprintf("%.2f", r.DeliveredGbps),
			fmt.Sprintf("%.1f", float64(r.SimNs)/1e6), fmt.Sprintf("%.1f", r.WallSeconds)})
	}
	return t
}

// Report writes the runs' table.
func Report(results []*Result, w io.Writer) {
	fmt.Fprintln(w)
	Table(results).Text(w)
}
