package hub

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
)

// pythonWithNumpy returns a python3 that has numpy (the system's, as
// scripts/test.sh uses, or the first on PATH), or skips the test saying
// why (HOMA_REQUIRE_PYTHON=1 makes that a failure).
func pythonWithNumpy(t *testing.T) string {
	t.Helper()
	why := "python3 is missing"
	for _, name := range []string{"/usr/bin/python3", "python3"} {
		py, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		out, err := exec.Command(py, "-c", "import numpy").CombinedOutput()
		if err == nil {
			return py
		}
		why = py + " has no numpy: " + strings.TrimSpace(string(out))
	}
	if os.Getenv("HOMA_REQUIRE_PYTHON") == "1" {
		t.Fatal(why)
	}
	t.Skip(why + " (HOMA_REQUIRE_PYTHON=1 fails instead)")
	return ""
}

// Python servers (python/tests/closing_server.py, over libhoma), as a new
// user writes one: each answers 3 calls with 256 KB numpy arrays and leaves
// its `with Client(...)` block at once, 1,000 in sequence (HOMA_CLOSING_ROUNDS
// sets how many), odd ones with reply_async. A Go client calls each: 0 of
// 3,000 replies lost, no client error. Before linger.go the third reply was
// lost 2 times in 2 (RPCError: peer restarted). About 10 s here for 1,000.
func TestHub_closingPythonServersLoseNoReply(t *testing.T) {
	py := pythonWithNumpy(t)
	rounds := 1000
	if s := os.Getenv("HOMA_CLOSING_ROUNDS"); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			t.Fatalf("HOMA_CLOSING_ROUNDS=%q", s)
		}
	}
	script, err := filepath.Abs("../python/tests/closing_server.py")
	if err != nil {
		t.Fatal(err)
	}
	_, b, sockA, sockB, calls := workerHostsCalls(t, Config{MaxOutstanding: 64})
	c, err := client.Dial(sockA, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := exec.Command(py, script, "--socket", sockB, "--port", "100", "--rounds", strconv.Itoa(rounds))
	srv.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	srv.Stderr = os.Stderr
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	lines := bufio.NewScanner(out)
	lost, start := 0, time.Now()
	var firstErrs []string
	for r := range rounds {
		var port uint16
		if !lines.Scan() {
			t.Fatalf("round %d: the Python server ended: %v", r, lines.Err())
		}
		if _, err := fmt.Sscanf(lines.Text(), "closing_server: bound %d", &port); err != nil || port != uint16(100+r) {
			t.Fatalf("round %d: the Python server said %q", r, lines.Text())
		}
		whole, errs := callRound(t, c, client.Addr{IP: netip.AddrFrom4(b.ip), Port: port}, r)
		lost += lingerCalls - whole
		for _, e := range errs {
			if len(firstErrs) < 5 {
				firstErrs = append(firstErrs, fmt.Sprintf("round %d: %v", r, e))
			}
		}
	}
	if !lines.Scan() || lines.Text() != "closing_server: done" {
		t.Errorf("the Python server did not finish: %q %v", lines.Text(), lines.Err())
	}
	var cnt Counters
	calls.do(func() { cnt = b.hub.counts() })
	t.Logf("%d Python servers in %v; replies taken after the close %d, lingered %d, abandoned %d",
		rounds, time.Since(start).Round(time.Millisecond), cnt.RepliesAfterClose, cnt.LingeredReplies, cnt.AbandonedReplies)
	if lost != 0 {
		t.Fatalf("%d of %d replies lost (%d Python servers); first errors: %s", lost, rounds*lingerCalls, rounds, strings.Join(firstErrs, "; "))
	}
}
