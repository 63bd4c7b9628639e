package hub

import (
	"errors"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// workers.max_sessions_per_uid 1 (the test's uid, root included): a
// second worker of the uid is refused, with the reason, and counted; the
// first is undisturbed.
func TestHub_sessionsPerUIDCapped(t *testing.T) {
	a, _, sockA, _, calls := workerHostsCalls(t, Config{MaxSessionsPerUID: 1})
	w := attachRaw(t, sockA)
	if _, err := shm.Dial(sockA); !errors.Is(err, shm.ErrSessionLimit) {
		t.Fatalf("second worker of the uid: %v, want ErrSessionLimit", err)
	}
	bindRaw(t, w, 5) // the first still works
	var wc Counters
	calls.do(func() { wc = a.hub.counts() })
	if wc.SessionLimitRefusals != 1 || wc.CredentialRefusals != 0 || wc.ActiveSessions != 1 {
		t.Errorf("session_limit_refusals %d, credential_refusals %d, sessions %d; want 1, 0, 1",
			wc.SessionLimitRefusals, wc.CredentialRefusals, wc.ActiveSessions)
	}
}
