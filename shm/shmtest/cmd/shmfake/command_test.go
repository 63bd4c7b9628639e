package main

import (
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/shm/shmtest"
)

// Each command's answer, as the JSON line a test reads.
func TestCommand_answers(t *testing.T) {
	e, err := shmtest.Start(shmtest.Config{Path: filepath.Join(t.TempDir(), "s"),
		Params: shm.Params{SQEntries: 16, CQEntries: 16, ArenaSize: 1 << 16, PoolPages: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, err := shm.Dial(e.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	slot := hex.EncodeToString(make([]byte, shm.EntrySize))
	for _, tc := range []struct{ cmd, want string }{
		{"pause", `{}`},
		{"resume", `{}`},
		{"refuse on", `{}`},
		{"refuse off", `{}`},
		{"script 7 echo", `{}`},
		{"script 8 24", `{}`},
		{"script 8 x", `{"error":"script: want echo or an error code, not \"x\""}`},
		{"max-rpcs 3", `{}`},
		{"sessions", `{"attached":1,"doorbell_wakeups":0}`},
		{"hold -1 2", `{"page":0}`},
		{"hold 0 9", `{"error":"hold: no live session, or no run of free pages"}`},
		{"inject 0 " + slot, `{}`},
		{"inject 0 00", `{"error":"inject: want 64 bytes in hex"}`},
		{"inject 1 " + slot, `{"error":"no such live session"}`},
		{"session 5", `{"error":"no such session"}`},
		{"kill 1", `{"error":"no such live session"}`},
		{"bogus 1", `{"error":"unknown command [\"bogus\" \"1\"]"}`},
		{"", `{"error":"empty command"}`},
	} {
		answer, err := command(e, strings.Fields(tc.cmd))
		if err != nil {
			answer = map[string]string{"error": err.Error()}
		}
		b, _ := json.Marshal(answer)
		if string(b) != tc.want {
			t.Errorf("%q: got %s, want %s", tc.cmd, b, tc.want)
		}
	}
	answer, err := command(e, []string{"session", "-1"})
	if err != nil {
		t.Fatal(err)
	}
	s := answer.(sessionJSON)
	if s.Index != 0 || !s.Live || s.PagesHeld != 2 || s.Layout.PoolPages != 4 || s.Layout.RegionSize != a.Layout.RegionSize {
		t.Errorf("session: %+v", s)
	}
	if _, err := command(e, []string{"kill", "0"}); err != nil {
		t.Errorf("kill: %v", err)
	}
}

// -host-info: the host the headers say, from -ip, -ip6, -link-mbps and
// -mtu; those three alone, or a bad -ip6, are refused.
func TestHostInfoOf_flags(t *testing.T) {
	ip := netip.MustParseAddr("10.0.0.1")
	if h, err := hostInfoOf(false, ip, "", 0, 0); err != nil || h != (shm.HostInfo{}) {
		t.Errorf("without -host-info: %+v, %v", h, err)
	}
	want := shm.HostInfo{IPv4: [4]byte{10, 0, 0, 1}, IPv6: [16]byte{0xfd, 15: 1}, LinkMbps: 100000, MTU: 9000}
	if h, err := hostInfoOf(true, ip, "fd00::1", 100000, 9000); err != nil || h != want {
		t.Errorf("-host-info: %+v, %v; want %+v", h, err, want)
	}
	for _, bad := range []struct {
		say  bool
		ip6  string
		mbps uint
	}{{false, "fd00::1", 0}, {false, "", 10}, {true, "10.0.0.2", 0}, {true, "::ffff:10.0.0.2", 0}, {true, "x", 0}, {true, "", 1 << 32}} {
		if _, err := hostInfoOf(bad.say, ip, bad.ip6, bad.mbps, 0); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
