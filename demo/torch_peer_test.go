package demo

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A fake rank 0 (python/tests/torch_fake_peer.py: its own creator for
// "homa", its entry in the job's store, parts in the backend's framing sent
// through sessions of its own) against the real backend as rank 1:
//
//   - dup: two 256-byte messages of three parts each, the first part twice,
//     one to a receive posted already and one before its receive, then one
//     in five parts out of order, one twice: each arrives whole, the three
//     copies counted in dropped_duplicate. Before, a copy counted as a
//     missing part: the first receive finished with 32 of its 64 elements
//     never written;
//   - overlap: parts [0, 128) and [64, 192) of a 256-byte message fail the
//     receive naming rank 0 (before: it finished with a hole);
//   - lengths: two parts of one message claiming 32 and 16 bytes, before a
//     16-byte receive into a view of a 32-byte tensor, fail it naming rank
//     0 (before: the receive succeeded and wrote past the view's end);
//   - badentry: rank 0's entry has a port that is not a number: rank 1's
//     set-up fails naming rank 0, and none of rank 1's output holds rank
//     0's key (before: "bad address of rank 0: <the whole entry>").
func TestTorch_fakePeer(t *testing.T) {
	py, root := needTorch(t)
	script := filepath.Join(root, "python/tests/torch_fake_peer.py")
	for i, mode := range []string{"dup", "overlap", "lengths", "badentry"} {
		t.Run(mode, func(t *testing.T) {
			dir, _ := serveTorchHosts(t)
			logs, errs := runPair(t, py, []string{script, mode}, dir, 29520+i+os.Getpid()%300*4, "rank 0: fake: published")
			t.Logf("rank 1: %s", lastLine(logs[1]))
			if errs[1] != nil || !strings.Contains(logs[1], "rank 1: "+mode+" passed") {
				t.Fatalf("rank 1: %v\n%s\nrank 0 (the fake): %v\n%s", errs[1], logs[1], errs[0], logs[0])
			}
			if mode == "badentry" && strings.Contains(logs[1], "5ec7e75ec7e75ec7") {
				t.Fatalf("rank 1's output holds rank 0's key:\n%s", logs[1])
			}
		})
	}
}

// A job set up wrong fails in its set-up, every rank with an error that
// says what is wrong, instead of waiting in init_process_group for torch's
// timeout (30 minutes by default; python/tests/torch_rendezvous.py):
//
//   - rank 1 looks for the daemon's sockets in a directory that does not
//     exist and fails before it publishes its entry: rank 0 fails naming
//     rank 1 once HOMA_DPDK_TORCH_RENDEZVOUS_S (3 here) has passed. Before,
//     rank 0 waited, silent, until the test killed it 60 s later;
//   - rank 1 is started with WORLD_SIZE 3, rank 0 with 2: each fails naming
//     both sizes. Before, both failed after 16 s with "a message to rank 1
//     failed (timeout): is that rank gone?" and "Connection reset by peer".
func TestTorch_rendezvousFailsNamingRanks(t *testing.T) {
	py, root := needTorch(t)
	t.Setenv("HOMA_DPDK_TORCH_RENDEZVOUS_S", "3")
	script := filepath.Join(root, "python/tests/torch_rendezvous.py")
	for i, tc := range []struct {
		name string
		args []string
		want [2]string
	}{
		{"silent", []string{"--bad-dir", "1"}, [2]string{
			"rank 0: init_process_group failed after", "rank 1: init_process_group failed after"}},
		{"world size", []string{"--world-size", "1=3"}, [2]string{
			"rank 1 was started with a world size of 3, this rank with 2",
			"rank 0 was started with a world size of 2, this rank with 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := serveTorchHosts(t)
			logs, errs := runPair(t, py, append([]string{script}, tc.args...), dir, 29530+i+os.Getpid()%300*4,
				"init_process_group failed")
			for r := range 2 {
				t.Logf("rank %d: %s", r, lastLine(logs[r]))
			}
			if e, ok := errs[1].(*exec.ExitError); !ok || e.ExitCode() != 3 || !strings.Contains(logs[1], tc.want[1]) {
				t.Fatalf("rank 1: %v, want exit status 3 and %q\n%s", errs[1], tc.want[1], logs[1])
			}
			if !strings.Contains(logs[0], tc.want[0]) {
				t.Fatalf("rank 0: %v, want %q\n%s", errs[0], tc.want[0], logs[0])
			}
			if tc.name == "silent" && !strings.Contains(logs[0], "rank 1 has not published its address") {
				t.Fatalf("rank 0 does not name rank 1:\n%s", logs[0])
			}
		})
	}
}

// runPair runs args as ranks 0 and 1 of a job on the demo's hosts (sockets
// in dir, the store on 127.0.0.1:port) and returns their output and exit
// errors. Once rank 1 has exited, rank 0 (which serves the store, and may
// stay) is killed as soon as its output holds done0, unless it has exited;
// it is given 60 s for that, and each rank is killed at 90 s.
func runPair(t *testing.T, py string, args []string, dir string, port int, done0 string) (logs [2]string, errs [2]error) {
	t.Helper()
	var outs [2]lockedBuilder
	cmds := startRanks(t, py, args, dir, port, []io.Writer{&outs[0], &outs[1]})
	defer killAfter(cmds, 90*time.Second).Stop()
	exited := make(chan error, 1)
	go func() { exited <- cmds[0].Wait() }()
	errs[1] = cmds[1].Wait()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case errs[0] = <-exited:
			return [2]string{outs[0].String(), outs[1].String()}, errs
		case <-time.After(50 * time.Millisecond):
		}
		if strings.Contains(outs[0].String(), done0) || time.Now().After(deadline) {
			break
		}
	}
	cmds[0].Process.Kill()
	errs[0] = <-exited
	return [2]string{outs[0].String(), outs[1].String()}, errs
}
