package shm

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// A region is resident in both processes from the attach on: every page
// of the daemon's mapping and of the worker's is in its page tables
// before either touches the arena or the pool, so neither the polling
// loop nor the worker takes a page fault on a first touch (the warm-up
// penalty that perf starts measured: a fault per fresh pool page).
func TestControl_regionResidentInBothProcesses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the credential check is tested as root")
	}
	path := filepath.Join(t.TempDir(), "workers.sock")
	var sess atomic.Pointer[Session]
	p := Params{SQEntries: 64, CQEntries: 64, ArenaSize: 1 << 20, PoolPages: 32} // 3 MB
	srv, err := Listen(ServerConfig{Path: path, Params: p, OnAttach: func(s *Session) error { sess.Store(s); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s := sess.Load()
	for _, m := range []struct {
		who    string
		region []byte
	}{{"daemon", s.Region}, {"worker", a.Region}} {
		if n, all := presentPages(t, m.region); n != all {
			t.Errorf("the %s's mapping (hugetlb %v): %d of %d pages present", m.who, s.Hugetlb, n, all)
		}
	}
}
