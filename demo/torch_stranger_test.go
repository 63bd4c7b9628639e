package demo

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A stranger on a rank's host (another worker session of the same daemon,
// at the address the other rank knows as that rank's) sends rank 1 crafted
// messages in the torch backend's framing: a part past its message's end,
// one claiming 2^62 bytes, 2 MiB of parts for receives never posted (with
// HOMA_DPDK_TORCH_MAX_UNEXPECTED at 1 MiB), a short one, a bad magic, and
// forgeries of rank 0's next point-to-point message and of the next 60
// collectives, without rank 0's key and then with it from another client
// port: 109 messages (python/tests/torch_stranger.py). Each is answered,
// dropped and counted in dropped_stranger; rank 1 then receives rank 0's
// own tensor and 20 all_reduces give the right sums. Before, the first
// such message failed rank 1's whole process group.
func TestTorch_strangerOnARanksHostIsDropped(t *testing.T) {
	py, root := needTorch(t)
	dir, _ := serveTorchHosts(t)
	t.Setenv("HOMA_DPDK_TORCH_MAX_UNEXPECTED", "1048576")
	const n = 2
	logs := make([]strings.Builder, n)
	outs := make([]io.Writer, n)
	for r := range outs {
		outs[r] = &logs[r]
	}
	cmds := startRanks(t, py, []string{filepath.Join(root, "python/tests/torch_stranger.py")}, dir, 29540+os.Getpid()%300*4, outs)
	timer := killAfter(cmds, 90*time.Second)
	defer timer.Stop()
	errs := make([]error, n)
	for r, c := range cmds {
		errs[r] = c.Wait()
	}
	for r := range n {
		t.Logf("rank %d: %s", r, strings.TrimSpace(lastLine(logs[r].String())))
	}
	if errs[0] != nil || !strings.Contains(logs[0].String(), "rank 0: stranger: 109 of 109 answered") {
		t.Fatalf("rank 0 (and its stranger): %v\n%s", errs[0], logs[0].String())
	}
	if errs[1] != nil || !strings.Contains(logs[1].String(), "rank 1: 21 checks passed; dropped_stranger 109 of 109 stranger messages") {
		t.Fatalf("rank 1: %v\n%s", errs[1], logs[1].String())
	}
}
