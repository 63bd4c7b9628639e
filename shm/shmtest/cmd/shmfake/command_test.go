package main

import (
	"encoding/hex"
	"encoding/json"
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
