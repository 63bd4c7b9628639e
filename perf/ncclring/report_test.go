package ncclring

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseBench_linesInOrder(t *testing.T) {
	in := `{"ranks": 2, "mode": "plugin", "bytes": 8, "iters": 5, "msgs": 2, "time_us": 20.5, "algbw_gbps": 0.0004, "busbw_gbps": 0.0004, "cpu_s_per_gb": 100}
{"ranks": 2, "mode": "plugin", "bytes": 16, "iters": 5, "msgs": 2, "time_us": 21, "algbw_gbps": 0.0008, "busbw_gbps": 0.0008, "cpu_s_per_gb": 50}
`
	pts, err := ParseBench(strings.NewReader(in), 2, "plugin")
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || pts[0].Bytes != 8 || pts[0].Msgs != 2 || pts[0].TimeUs != 20.5 || pts[1].CPUPerGB != 50 {
		t.Errorf("%+v", pts)
	}
	for name, bad := range map[string]string{
		"mode":  strings.Replace(in, `"plugin"`, `"libhoma"`, 1),
		"ranks": strings.Replace(in, `"ranks": 2`, `"ranks": 4`, 1),
		"order": strings.Replace(in, `"bytes": 16`, `"bytes": 8`, 1),
		"empty": "",
		"junk":  "rank 0: oops\n",
	} {
		if _, err := ParseBench(strings.NewReader(bad), 2, "plugin"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The report has nccl-tests' columns for each series, the ratios, the
// goal rows, and a note for each goal missed.
func TestMarkdown_tablesGoalsAndMisses(t *testing.T) {
	r := &Result{CPUs: 2, Jobs: []Job{twoRankJob()}}
	r.Goals = Goals(r)
	md := page(t, r)
	for _, want := range []string{
		"**2 ranks, NCCL ring through the plugin (nccl-tests' columns)",
		"**2 ranks, the same ring over libhoma directly (nccl-tests' columns)",
		"**2 ranks, gloo's all_reduce (nccl-tests' columns)",
		"| size | count | type | redop | time (us) | algbw (GB/s) | busbw (GB/s) | CPU s/GB | iters |",
		"| 67108864 | 16777216 | float | sum | 50000.0 | 1.342 | 1.342 | 3.00 | 5 |",
		"**2 ranks: the ratios the goals read**",
		"| 64 KiB | 0.60 | 1.67 | 1.00 | 2.00 | 0.93 |",
		"(2 of 15 met)",
		"CPU µs per message per rank (12.00, want <= 5.00): NCCL's proxy thread",
		"The ring over libhoma directly, whose waits sleep after spinning, took 0.0 µs per message.",
		"Missed: NCCL ring through the plugin, 64 MiB, 2 ranks: busbw over gloo's (0.80, want >= 1.00)",
		"share 2 CPUs",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
	if strings.Contains(md, "Missed: NCCL ring through the plugin, 4 MiB, 2 ranks: busbw") {
		t.Error("a met goal noted as missed")
	}
}

// page is the run's nccl.md, as its report writes it.
func page(t *testing.T, r *Result) string {
	dir := t.TempDir()
	if _, err := r.Report().WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "nccl.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
