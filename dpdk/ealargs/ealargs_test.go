package ealargs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVirtualDevices_hugepagesOrNot(t *testing.T) {
	huge := Memory{HugeDir: "/dev/hugepages", FreePages: 512}
	if got := strings.Join(VirtualDevices("0,1", huge, 512, "p1"), " "); got != "-l 0,1 --no-pci --log-level lib.eal:error --in-memory --huge-dir /dev/hugepages" {
		t.Errorf("hugepages: %s", got)
	}
	none := Memory{Reason: "no hugetlbfs is mounted"}
	if got := strings.Join(VirtualDevices("0", none, 256, "p2"), " "); got != "-l 0 --no-pci --log-level lib.eal:error --file-prefix p2 --no-huge -m 256" {
		t.Errorf("no hugepages: %s", got)
	}
}

// Free pages that another process has reserved are not usable: with 200
// free and 150 of them reserved, 50 are left, too few for hugepages.
func TestProbeMemory_reservedPagesAreNotFree(t *testing.T) {
	dir := t.TempDir()
	for name, v := range map[string]string{"free_hugepages": "200\n", "resv_hugepages": "150\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := hugeSys
	hugeSys = dir
	t.Cleanup(func() { hugeSys = old })
	m := ProbeMemory()
	if m.FreePages != 50 || m.UseHugepages() {
		t.Fatalf("200 free, 150 reserved: %+v", m)
	}
	if m.HugeDir != "" && !strings.Contains(m.Reason, "150 of them reserved") {
		t.Fatalf("reason %q does not say the pages are reserved", m.Reason)
	}
}
