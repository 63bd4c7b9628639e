package ealargs

import (
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
