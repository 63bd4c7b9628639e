package cluster

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The smoke size: every message delivered exactly once with its length
// to its host, every response back, no RPC failed; and the same seed
// gives the same results. The network loses nothing, so nothing is
// retransmitted (issue 31): a RESEND for bytes still queued at the
// sender or behind higher-priority traffic is waiting, not loss.
func TestRun_smokeConservedAndDeterministic(t *testing.T) {
	cfg := SmokeConfig()
	if testing.Short() {
		cfg.Messages = 500
	}
	a, err := Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d hosts, %s at %.0f%%: %d messages in %.2f ms simulated, %.1f s wall (%.0f frames/s); short P99 %.2f; %d errors %v",
		a.Hosts, a.Workload, 100*a.Load, a.Delivered, float64(a.SimNs)/1e6, a.WallSeconds, a.FramesPerSec, a.Short.P99, a.Errors, a.ErrorLines)
	if a.Errors != 0 || a.Delivered != cfg.Messages || a.Responses != cfg.Messages || a.Drops != 0 || a.Offered != cfg.Messages {
		t.Fatalf("delivered %d, responses %d of %d; %d errors %v; %d drops", a.Delivered, a.Responses, cfg.Messages, a.Errors, a.ErrorLines, a.Drops)
	}
	if a.Resent != 0 || a.ResentBytes != 0 {
		t.Errorf("lossless run retransmitted %d DATA packets (%d B); %d RESENDs answered BUSY (%d with DATA still queued)",
			a.Resent, a.ResentBytes, a.ResendsBusy, a.ResendsQueued)
	}
	b, err := Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.WallSeconds, b.WallSeconds, a.FramesPerSec, b.FramesPerSec = 0, 0, 0, 0
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("two runs of one seed differ:\n%s\n%s", ja, jb)
	}
}

// BenchmarkRun_W4at80 is the smoke cluster at W4 80%: frames per second
// of wall time is what bounds a 144-host run (reported as frames/s).
func BenchmarkRun_W4at80(b *testing.B) {
	cfg := SmokeConfig()
	for b.Loop() {
		r, err := Run(cfg, nil)
		if err != nil || r.Errors != 0 {
			b.Fatal(err, r.ErrorLines)
		}
		b.ReportMetric(r.FramesPerSec, "frames/s")
	}
}

// W5's multi-megabyte messages keep lower-priority granted packets in a
// ToR's queue behind higher-priority DATA for longer than two RESEND
// intervals: a lossless run still retransmits nothing (it resent 17 DATA
// packets while only the first two RESENDs were held: 24 in this one).
func TestRun_smokeW5RetransmitsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s")
	}
	cfg := SmokeConfig()
	cfg.Workload, cfg.Messages = "W5", 2000
	r, err := Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || r.Delivered != cfg.Messages {
		t.Fatalf("delivered %d of %d; %d errors %v", r.Delivered, cfg.Messages, r.Errors, r.ErrorLines)
	}
	if r.Resent != 0 {
		t.Errorf("lossless W5 run retransmitted %d DATA packets (%d B); %d RESENDs answered BUSY", r.Resent, r.ResentBytes, r.ResendsBusy)
	}
}

// runAll with two jobs returns what one job does, in the order asked,
// and cluster.json holds them in that order; a run that fails is named
// and fails the matrix.
func TestRunAll_jobsKeepOrderAndResults(t *testing.T) {
	var runs []Config
	for _, w := range []string{"W1", "W3", "W2"} {
		c := SmokeConfig()
		c.Workload, c.Messages = w, 300
		runs = append(runs, c)
	}
	one, err := runAll(runs, 1, io.Discard, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	two, err := runAll(runs, 2, io.Discard, dir)
	if err != nil {
		t.Fatal(err)
	}
	var saved Results
	b, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err == nil {
		err = json.Unmarshal(b, &saved)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != len(runs) || len(two) != len(runs) || len(saved) != len(runs) {
		t.Fatalf("%d, %d and %d results (cluster.json) of %d runs", len(one), len(two), len(saved), len(runs))
	}
	for i, c := range runs {
		if two[i].Workload != c.Workload || saved[i].Workload != c.Workload || one[i].Short.P99 != two[i].Short.P99 || one[i].Delivered != two[i].Delivered {
			t.Errorf("run %d (%s): one job %s P99 %.3f (%d delivered), two jobs %s P99 %.3f (%d), cluster.json %s", i, c.Workload,
				one[i].Workload, one[i].Short.P99, one[i].Delivered, two[i].Workload, two[i].Short.P99, two[i].Delivered, saved[i].Workload)
		}
	}
	bad := runs[0]
	bad.Variant = DCTCP // no ns-3 program given
	if _, err := runAll([]Config{runs[1], bad, runs[2]}, 2, io.Discard, t.TempDir()); err == nil || !strings.Contains(err.Error(), "W1 80% dctcp") {
		t.Fatalf("a failed run: err %v, want one naming W1 80%% dctcp", err)
	}
}

// A --smoke run offers the first 3,000 messages or 20 ms of arrivals,
// whichever is less: all of W1's 3,000, a few hundred of W5's (3,000 of
// them are gigabytes, most of an hour on ns-3); the AI mix its own size.
func TestSmokeRun_capsBytesNotJustMessages(t *testing.T) {
	for _, tc := range []struct {
		w           string
		least, most int
	}{{"W1", 3000, 3000}, {"W5", 10, 1000}} {
		c := SmokeConfig()
		c.Workload = tc.w
		msgs, err := arrivals(c.SmokeRun())
		if err != nil {
			t.Fatal(err)
		}
		if n, end := len(msgs), msgs[len(msgs)-1].At; n < tc.least || n > tc.most || end > 20_000_000 {
			t.Errorf("%s smoke: %d messages over %d ns, want %d..%d within 20 ms", tc.w, n, end, tc.least, tc.most)
		}
	}
	ai := SmokeConfig()
	ai.Workload = "AI"
	if r := ai.SmokeRun(); r.Messages != 0 || r.Duration != 5_000_000 || r.AI.Chunk != 64<<10 {
		t.Errorf("AI smoke: %d messages, %d ns, %d B chunks; want SmokeAI's 5 ms of 64 KiB chunks", r.Messages, r.Duration, r.AI.Chunk)
	}
}
