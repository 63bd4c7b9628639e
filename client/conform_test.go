package client

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/shm/shmtest"
)

// The conformance scenarios of shm/testdata/conformance.txt, which libhoma
// (native/tests/conform.c) runs too.
func TestConformance(t *testing.T) {
	f, err := os.Open("../shm/testdata/conformance.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var name string
	var steps []string
	run := func() {
		if name != "" {
			n, s := name, steps
			t.Run(n, func(t *testing.T) { conformScenario(t, s) })
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if n, ok := strings.CutPrefix(line, "scenario "); ok {
			run()
			name, steps = n, nil
			continue
		}
		steps = append(steps, line)
	}
	run()
	if name == "" {
		t.Fatal("no scenario in conformance.txt")
	}
}

// conformMessage is a message of n bytes: byte i is (i*7 + n) mod 256.
func conformMessage(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + n)
	}
	return b
}

// conformCodes are the scenarios' error names.
var conformCodes = map[string]shm.ErrCode{
	"timeout": shm.ErrCodeTimeout, "unreachable": shm.ErrCodeUnreachable,
	"port-unreachable": shm.ErrCodePortUnreachable, "aborted": shm.ErrCodeAborted,
	"no-rpc": shm.ErrCodeNoRPC, "port-in-use": shm.ErrCodePortInUse, "limit": shm.ErrCodeLimit,
	"no-buffer-space": shm.ErrCodeNoBufferSpace, "peer-restarted": shm.ErrCodePeerRestarted,
	"closed": shm.ErrCodeClosed,
}

// conformOutcome checks a call's outcome against want ("ok", "response
// N", "request N", "error CODE").
func conformOutcome(step, want string, got []byte, err error) error {
	kind, arg, _ := strings.Cut(want, " ")
	switch kind {
	case "ok":
		return err
	case "response", "request":
		if err != nil {
			return err
		}
		n, _ := strconv.Atoi(arg)
		if !bytes.Equal(got, conformMessage(n)) {
			return fmt.Errorf("%d bytes, not the %d sent", len(got), n)
		}
		return nil
	case "error":
		code, ok := conformCodes[arg]
		if !ok {
			return fmt.Errorf("unknown error name %q", arg)
		}
		var ce *CodeError
		if !errors.As(err, &ce) || ce.Code != code {
			return fmt.Errorf("got %v, want %v", err, code)
		}
		return nil
	}
	return fmt.Errorf("unknown outcome %q", want)
}

func conformScenario(t *testing.T, steps []string) {
	// The engine as shmfake runs it by default: 127.0.0.1, releases at
	// the end of each RPC.
	eng, err := shmtest.Start(shmtest.Config{Path: filepath.Join(t.TempDir(), "s"),
		Params: shm.Params{SQEntries: 64, CQEntries: 256, ArenaSize: 4 << 20, PoolPages: 64}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	c := dial(t, eng, Options{})
	rpcs := map[string]uint64{}
	host := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	num := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("not a number: %q", s)
		}
		return n
	}
	for _, step := range steps {
		lhs, want, _ := strings.Cut(step, " -> ")
		f := strings.Fields(lhs)
		var err error
		switch f[0] {
		case "script":
			code := shm.ErrCodeNone
			if f[2] == "error" {
				code = conformCodes[f[3]]
			}
			eng.Script(uint16(num(f[1])), code)
		case "bind":
			err = conformOutcome(step, want, nil, c.Bind(uint16(num(f[1]))))
		case "call", "call-to":
			ip, port, size := host, f[1], f[2]
			if f[0] == "call-to" {
				ip, port, size = netip.MustParseAddr(f[1]), f[2], f[3]
			}
			m, cerr := c.Call(Addr{IP: ip, Port: uint16(num(port))}, conformMessage(num(size)), 10*time.Second)
			var data []byte
			if cerr == nil {
				data = m.Data
			}
			err = conformOutcome(step, want, data, cerr)
			if cerr == nil {
				m.Release()
			}
		case "send":
			id, serr := c.Send(Addr{IP: host, Port: uint16(num(f[1]))}, conformMessage(num(f[2])))
			if serr != nil {
				t.Fatalf("%s: %v", step, serr)
			}
			rpcs[f[4]] = id
		case "wait":
			m, werr := c.Wait(rpcs[f[1]], 10*time.Second)
			var data []byte
			if werr == nil {
				data = m.Data
			}
			err = conformOutcome(step, want, data, werr)
			if werr == nil {
				m.Release()
			}
		case "serve":
			m, rerr := c.Receive(10 * time.Second)
			if rerr != nil || !m.Request {
				t.Fatalf("%s: %v (%+v)", step, rerr, m)
			}
			err = conformOutcome(step, want, m.Data, nil)
			if rerr := c.Reply(m, m.Data); rerr != nil {
				t.Fatalf("%s: reply: %v", step, rerr)
			}
			m.Release()
		case "idle":
			if _, werr := c.Receive(time.Millisecond); werr != ErrWaitTimeout {
				t.Fatalf("%s: %v, want nothing", step, werr)
			}
		case "engine":
			conformEngine(t, eng, f[1], num(f[2]))
		default:
			t.Fatalf("unknown step %q", step)
		}
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
}

// conformEngine waits (5 s at most) for the engine's account of the
// worker, session 0, to show n of what.
func conformEngine(t *testing.T, eng *shmtest.Engine, what string, n int) {
	t.Helper()
	var got int
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		info, _ := eng.Session(0)
		switch what {
		case "pages-held":
			got = info.PagesHeld
		case "rpcs":
			got = info.RPCs
		case "bad-submissions":
			got = int(info.BadSubmissions)
		default:
			t.Fatalf("unknown engine figure %q", what)
		}
		if got == n || time.Now().After(end) {
			break
		}
	}
	if got != n {
		t.Fatalf("engine %s %d, want %d", what, got, n)
	}
}
